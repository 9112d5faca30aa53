//! Dot-path globs: which fields of a JSON value a rule names.
//!
//! A dot path names a field by the keys and array indices that lead to it, joined by dots:
//! `messages.0.content`. A glob is a dot path that may hold patterns, with these rules (globset's,
//! with the dot as the separator):
//!
//! - `*` matches any run of characters within one key or index, never across two: `a.*` matches
//!   `a.b`, not `a.b.c`; `x-*` matches `x-request`.
//! - `**` as a whole segment matches any number of segments, zero included: `**.ts` matches `ts` and
//!   `x.y.ts`, `a.**` matches everything under `a` (not `a` itself), `a.**.b` matches `a.b` and `a.x.y.b`.
//!   A `**` that shares its segment with other characters is a `*`: `a**` matches `abc`, not `a.b`.
//! - `?` matches one character, `[ab]` and `[!ab]` one character of (or not of) a class, and `{x,y}`
//!   either alternative.
//! - `\` makes the next character literal: `\.` is a dot inside a key (`a\.b` matches the one key
//!   `a.b`), `\*` a star.
//! - An array index is a segment written in decimal (`choices.0.text`). A `/` in a key is an
//!   ordinary character.
//!
//! A glob that is empty or has an empty segment (two dots, or a leading or trailing dot) is an error.

use std::fmt::Write as _;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::error::{ErrorKind, Result};

/// The stand-in for a `/` in a key or glob: globset separates on `/`, dot paths on `.`.
const SLASH: char = '\u{2215}';
const SLASH_STR: &str = "\u{2215}";

/// One step of a dot path: an object key or an array index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'a> {
    /// An object's key.
    Key(&'a str),
    /// An array's index.
    Index(usize),
}

/// A set of dot-path globs, compiled once; see the [module docs](self) for the rules.
#[derive(Debug, Clone)]
pub struct DotGlobs {
    set: GlobSet,
    /// The last segment of every glob, when each glob's last segment is a plain name: a path can only
    /// match when its own last segment is one of these. `None` when some glob ends in a pattern.
    tails: Option<Vec<String>>,
    globs: Vec<String>,
}

impl DotGlobs {
    /// Compiles `globs`. An error names the first malformed glob and what is wrong with it.
    pub fn new<I, S>(globs: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let globs: Vec<String> = globs.into_iter().map(|g| g.as_ref().to_owned()).collect();
        let mut set = GlobSetBuilder::new();
        for glob in &globs {
            set.add(compile(glob)?);
        }
        let set = set.build().map_err(|e| ErrorKind::Glob {
            glob: globs.join(","),
            reason: e.kind().to_string(),
        })?;
        let tails = globs.iter().map(|glob| plain_tail(glob)).collect();
        Ok(Self { set, tails, globs })
    }

    /// The globs as given.
    pub fn globs(&self) -> &[String] {
        &self.globs
    }

    /// Whether no glob is set (then nothing matches).
    pub fn is_empty(&self) -> bool {
        self.globs.is_empty()
    }

    /// Whether some glob matches `path`.
    pub fn is_match(&self, path: &[Segment<'_>]) -> bool {
        self.is_match_with(path, &mut String::new())
    }

    /// [`is_match`](Self::is_match) that builds the path's text in `scratch`, for a caller that checks
    /// many paths and would rather not allocate for each.
    pub fn is_match_with(&self, path: &[Segment<'_>], scratch: &mut String) -> bool {
        if self.globs.is_empty() || !self.may_match(path.last()) {
            return false;
        }
        scratch.clear();
        for (i, seg) in path.iter().enumerate() {
            if i > 0 {
                scratch.push('/');
            }
            match seg {
                Segment::Key(k) if k.contains('/') => scratch.push_str(&k.replace('/', SLASH_STR)),
                Segment::Key(k) => scratch.push_str(k),
                Segment::Index(n) => {
                    let _ = write!(scratch, "{n}");
                }
            }
        }
        self.set.is_match(scratch.as_str())
    }

    /// Whether a path whose last segment is `last` may match; `false` settles it without globset.
    fn may_match(&self, last: Option<&Segment<'_>>) -> bool {
        let Some(tails) = &self.tails else {
            return true;
        };
        match last {
            Some(Segment::Key(k)) => tails.iter().any(|t| t == k),
            Some(Segment::Index(n)) => tails.iter().any(|t| t.parse() == Ok(*n)),
            None => false,
        }
    }
}

/// One glob, checked for empty segments and compiled as globset reads it.
fn compile(glob: &str) -> Result<globset::Glob> {
    let refuse = |reason: &str| ErrorKind::Glob {
        glob: glob.to_owned(),
        reason: reason.to_owned(),
    };
    let slashed = to_slashes(glob);
    if glob.is_empty() {
        return Err(refuse("it is empty").into());
    }
    if slashed.split('/').any(str::is_empty) {
        return Err(
            refuse("it has an empty segment (two dots, or a leading or trailing dot)").into(),
        );
    }
    GlobBuilder::new(&slashed)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| refuse(&e.kind().to_string()).into())
}

/// `**.quotedAt` → `**/quotedAt`: an unescaped dot becomes globset's separator, `\.` a literal dot and
/// a `/` the stand-in a key's `/` becomes.
fn to_slashes(glob: &str) -> String {
    let mut out = String::with_capacity(glob.len());
    let mut chars = glob.chars();
    while let Some(c) = chars.next() {
        match c {
            '.' => out.push('/'),
            '/' => out.push(SLASH),
            '\\' => match chars.next() {
                Some('.') => out.push('.'),
                Some('/') => out.push(SLASH),
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

/// The glob's last segment when it is a plain name (no pattern, and no escape anywhere: `a\.b` ends in
/// the key `a.b`).
fn plain_tail(glob: &str) -> Option<String> {
    if glob.contains('\\') {
        return None;
    }
    let tail = glob.rsplit('.').next().unwrap_or(glob);
    let plain = !tail.is_empty() && !tail.contains(['*', '?', '[', ']', '{', '}', '\\']);
    plain.then(|| tail.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path<'a>(keys: &[&'a str]) -> Vec<Segment<'a>> {
        keys.iter()
            .map(|k| match k.parse() {
                Ok(n) => Segment::Index(n),
                Err(_) => Segment::Key(k),
            })
            .collect()
    }

    fn matches(glob: &str, keys: &[&str]) -> bool {
        DotGlobs::new([glob]).unwrap().is_match(&path(keys))
    }

    #[test]
    fn the_rules_of_the_module_doc() {
        let table: &[(&str, &[&str], bool)] = &[
            ("a.b", &["a", "b"], true),
            ("a.b", &["a", "c"], false),
            ("a.*", &["a", "b"], true),
            ("a.*", &["a", "b", "c"], false),
            ("x-*", &["x-request"], true),
            ("**.ts", &["x", "y", "ts"], true),
            ("**.ts", &["ts"], true),
            ("a.**", &["a", "b", "c"], true),
            ("a.**.b", &["a", "b"], true),
            ("a.**.b", &["a", "x", "y", "b"], true),
            ("a**", &["abc"], true),
            ("a**", &["a", "b"], false),
            ("choices.0.text", &["choices", "0", "text"], true),
            ("choices.*.text", &["choices", "12", "text"], true),
            ("a.1", &["a", "10"], false),
            ("a/b", &["a/b"], true),
            ("a/b", &["a", "b"], false),
            ("a\\.b", &["a.b"], true),
            ("a\\.b", &["a", "b"], false),
            ("a.b", &["a.b"], false),
        ];
        for (glob, keys, want) in table {
            assert_eq!(matches(glob, keys), *want, "{glob} vs {keys:?}");
        }
    }

    /// Where the cassette normaliser's former matcher and globset disagreed; globset's answer holds.
    #[test]
    fn where_the_former_normaliser_rules_differed() {
        // (glob, path, the former normaliser's answer, the answer now)
        let table: &[(&str, &[&str], bool, bool)] = &[
            ("a.**", &["a"], true, false),
            ("a?c", &["abc"], false, true),
            ("a.[bc]", &["a", "b"], false, true),
            ("a.[!bc]", &["a", "d"], false, true),
            ("{a,b}.c", &["b", "c"], false, true),
            ("a\\*", &["a*"], false, true),
            ("a\\.b", &["a.b"], false, true),
        ];
        for (glob, keys, before, now) in table {
            assert_ne!(before, now, "{glob} vs {keys:?} is not a difference");
            assert_eq!(matches(glob, keys), *now, "{glob} vs {keys:?}");
        }
    }

    #[test]
    fn malformed_globs_are_refused_with_the_reason() {
        let table = [
            ("", "it is empty"),
            ("a..b", "empty segment"),
            (".a", "empty segment"),
            ("a.", "empty segment"),
            ("a.[b", "unclosed character class"),
        ];
        for (glob, reason) in table {
            let error = DotGlobs::new([glob]).unwrap_err();
            let ErrorKind::Glob {
                glob: named,
                reason: got,
            } = error.kind()
            else {
                panic!("{glob}: {error}");
            };
            assert_eq!(named, glob);
            assert!(got.contains(reason), "{glob}: {got}");
        }
    }

    #[test]
    fn no_globs_match_nothing() {
        let globs = DotGlobs::new(Vec::<String>::new()).unwrap();
        assert!(globs.is_empty());
        assert!(!globs.is_match(&path(&["a"])));
    }
}

//! Dot paths and their globs: which fields of a JSON value a rule names.
//!
//! A dot path names a field by the keys and array indices that lead to it, joined by dots:
//! `messages.0.content`. An item of a list whose items have an identity (see [`identity`]) is named
//! by it in brackets, right after the list's key: `tools[echo].inputSchema`,
//! `resources[test://static/resource/1]` (a `]` or `\` in the name is written `\]`, `\\`). A glob is
//! a dot path that may hold patterns, with these rules (globset's, with the dot as the separator):
//!
//! - `*` matches any run of characters within one key, index or item, never across two: `a.*`
//!   matches `a.b`, not `a.b.c`; `x-*` matches `x-request`; `tools.*` matches `tools[echo]`.
//! - `**` as a whole segment matches any number of segments, zero included: `**.ts` matches `ts` and
//!   `x.y.ts`, `a.**` matches everything under `a` (not `a` itself), `a.**.b` matches `a.b` and `a.x.y.b`.
//!   A `**` that shares its segment with other characters is a `*`: `a**` matches `abc`, not `a.b`.
//! - `?` matches one character, `[ab]` and `[!ab]` one character of (or not of) a class, and `{x,y}`
//!   either alternative.
//! - `\` makes the next character literal: `\.` is a dot inside a key (`a\.b` matches the one key
//!   `a.b`), `\*` a star.
//! - An array index is a segment written in decimal (`choices.0.text`). A `/` in a key is an
//!   ordinary character.
//! - Brackets right after a key (or after `*`, `**` or an index) name a list item: `tools[echo]`
//!   matches the item named `echo`, `tools[*].description` every item's description, `tools[get-*]`
//!   the items whose names start with `get-`. Inside them only `*` and `?` are patterns (a `*` may
//!   span a `/` or a dot of a URI) and `\` escapes; every other character is itself. Brackets that
//!   start a segment are a class, as above (`a.[bc]`).
//! - A list item is also matched by its position, as before lists had names: `tools.0` and
//!   `tools.*` match `tools[echo]` when `echo` is the list's first item (in the recorded list, or in
//!   the new one when only there).
//!
//! A glob that is empty, has an empty segment (two dots, or a leading or trailing dot), or brackets
//! that do not close or are followed by anything but a dot is an error.

use std::fmt::Write as _;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::Value;

use crate::error::{ErrorKind, Result};

/// The stand-in for a `/` in a key or glob: globset separates on `/`, dot paths on `.`.
const SLASH: char = '\u{2215}';

/// A key's or glob's literal `\` as globset reads it. On Unix a `\` in a path is an ordinary
/// character; elsewhere globset reads it as a separator, so a stand-in takes its place in both the
/// path and the glob.
const BACKSLASH_IN_PATH: char = if cfg!(unix) { '\\' } else { '\u{2216}' };
const BACKSLASH_IN_GLOB: &str = if cfg!(unix) { "\\\\" } else { "\u{2216}" };

/// One step of a dot path: an object key, an array index, or a list item named by its identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'a> {
    /// An object's key.
    Key(&'a str),
    /// An array's index.
    Index(usize),
    /// An item of a list whose items have an identity ([`identity`]), written `[id]`.
    Item {
        /// The value of the item's identity field: `echo` for a tool named `echo`.
        id: &'a str,
        /// The item's position in its list: in the recorded list, or in the new one when only there.
        index: usize,
    },
}

/// The fields that name a list's items, in the order they are tried: a resource has both a `uri`
/// and a `name`, and its `uri` is what names it.
pub const IDENTITY_FIELDS: [&str; 4] = ["uri", "uriTemplate", "name", "id"];

/// The field that names every item of `lists` (a list as recorded and as replayed, say): the first
/// of [`IDENTITY_FIELDS`] that every item of every list holds as a string, each value once per
/// list. `None` when no field does, or when the lists are empty: then their items are told apart by
/// position.
///
/// ```
/// use calltape_recorder::glob::identity;
/// use serde_json::json;
///
/// let old = json!([{"name": "add"}, {"name": "echo"}]);
/// let new = json!([{"name": "echo"}, {"name": "get-sum"}]);
/// let lists = [old.as_array().unwrap().as_slice(), new.as_array().unwrap().as_slice()];
/// assert_eq!(identity(&lists), Some("name"));
/// let texts = json!([{"type": "text", "text": "a"}]);
/// assert_eq!(identity(&[texts.as_array().unwrap().as_slice()]), None);
/// ```
pub fn identity(lists: &[&[Value]]) -> Option<&'static str> {
    if lists.iter().all(|l| l.is_empty()) {
        return None;
    }
    let mut seen = std::collections::HashSet::new();
    IDENTITY_FIELDS.into_iter().find(|field| {
        lists.iter().all(|list| {
            seen.clear();
            list.iter().all(|item| {
                item.get(field)
                    .and_then(Value::as_str)
                    .is_some_and(|id| seen.insert(id))
            })
        })
    })
}

/// Appends `path` to `out` in the notation of the [module docs](self): keys and indices joined by
/// dots, a list item as `[id]` right after its list.
pub fn write_path(out: &mut String, path: &[Segment<'_>]) {
    for (i, seg) in path.iter().enumerate() {
        match seg {
            Segment::Key(k) => {
                if i > 0 {
                    out.push('.');
                }
                out.push_str(k);
            }
            Segment::Index(n) => {
                if i > 0 {
                    out.push('.');
                }
                let _ = write!(out, "{n}");
            }
            Segment::Item { id, .. } => {
                out.push('[');
                for c in id.chars() {
                    if matches!(c, ']' | '\\') {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push(']');
            }
        }
    }
}

/// `path` in the notation of the [module docs](self).
pub fn path_text(path: &[Segment<'_>]) -> String {
    let mut out = String::with_capacity(32);
    write_path(&mut out, path);
    out
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
        write_slashed(scratch, path, false);
        if self.set.is_match(scratch.as_str()) {
            return true;
        }
        // A list item is matched by its position too, as globs written before lists had names did.
        if path.iter().any(|s| matches!(s, Segment::Item { .. })) {
            write_slashed(scratch, path, true);
            return self.set.is_match(scratch.as_str());
        }
        false
    }

    /// Whether a path whose last segment is `last` may match; `false` settles it without globset.
    fn may_match(&self, last: Option<&Segment<'_>>) -> bool {
        let Some(tails) = &self.tails else {
            return true;
        };
        match last {
            Some(Segment::Key(k)) => tails.iter().any(|t| t == k),
            Some(Segment::Index(n) | Segment::Item { index: n, .. }) => {
                tails.iter().any(|t| t.parse() == Ok(*n))
            }
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
    if glob.is_empty() {
        return Err(refuse("it is empty").into());
    }
    let slashed = to_slashes(glob).map_err(&refuse)?;
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

/// The path as globset reads it, in `out`: segments separated by `/`, a key's own `/` as the
/// stand-in, an item as `[id]`, or (`positional`) an item as its index.
fn write_slashed(out: &mut String, path: &[Segment<'_>], positional: bool) {
    out.clear();
    for (i, seg) in path.iter().enumerate() {
        if i > 0 {
            out.push('/');
        }
        match seg {
            Segment::Key(k) => push_slashed(out, k),
            Segment::Index(n) => {
                let _ = write!(out, "{n}");
            }
            Segment::Item { index, .. } if positional => {
                let _ = write!(out, "{index}");
            }
            Segment::Item { id, .. } => {
                out.push('[');
                push_slashed(out, id);
                out.push(']');
            }
        }
    }
}

fn push_slashed(out: &mut String, text: &str) {
    if text.contains('/') || (!cfg!(unix) && text.contains('\\')) {
        for c in text.chars() {
            match c {
                '/' => out.push(SLASH),
                '\\' => out.push(BACKSLASH_IN_PATH),
                c => out.push(c),
            }
        }
    } else {
        out.push_str(text);
    }
}

/// `**.quotedAt` → `**/quotedAt`: an unescaped dot becomes globset's separator, `\.` a literal dot and
/// a `/` the stand-in a key's `/` becomes; `tools[echo]` → `tools/\[echo\]`, an item segment of its
/// own. The error says what is wrong with the brackets.
fn to_slashes(glob: &str) -> std::result::Result<String, &'static str> {
    let mut out = String::with_capacity(glob.len() + 8);
    let mut chars = glob.chars().peekable();
    // Whether the segment being written has a character yet: brackets there name an item.
    let mut in_segment = false;
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                out.push('/');
                in_segment = false;
                continue;
            }
            '/' => out.push(SLASH),
            '\\' => match chars.next() {
                Some('.') => out.push('.'),
                Some('/') => out.push(SLASH),
                Some('\\') => out.push_str(BACKSLASH_IN_GLOB),
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            },
            '[' if in_segment => {
                out.push_str("/\\[");
                item_pattern(&mut out, &mut chars)?;
                out.push_str("\\]");
                match chars.peek() {
                    None | Some('.') => {}
                    Some(_) => return Err("a list item in brackets must end its segment"),
                }
            }
            c => out.push(c),
        }
        in_segment = true;
    }
    Ok(out)
}

/// The inside of an item's brackets, up to the closing one: `*` and `?` stay patterns, `\` escapes,
/// every other character is literal.
fn item_pattern(
    out: &mut String,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
) -> std::result::Result<(), &'static str> {
    loop {
        let literal = match chars.next() {
            None => return Err("a list item's brackets do not close"),
            Some(']') => return Ok(()),
            Some(c @ ('*' | '?')) => {
                out.push(c);
                continue;
            }
            Some('\\') => chars.next().ok_or("a list item's brackets do not close")?,
            Some(c) => c,
        };
        match literal {
            '/' => out.push(SLASH),
            '\\' => out.push_str(BACKSLASH_IN_GLOB),
            '[' | ']' | '{' | '}' | '*' | '?' => {
                out.push('\\');
                out.push(literal);
            }
            c => out.push(c),
        }
    }
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
    use serde_json::json;

    /// `"[echo@0]"` is the item `echo` at index 0, a number an index, anything else a key.
    fn path<'a>(keys: &[&'a str]) -> Vec<Segment<'a>> {
        keys.iter()
            .map(|k| {
                if let Some(item) = k.strip_prefix('[').and_then(|k| k.strip_suffix(']')) {
                    let (id, index) = item.rsplit_once('@').unwrap();
                    return Segment::Item {
                        id,
                        index: index.parse().unwrap(),
                    };
                }
                match k.parse() {
                    Ok(n) => Segment::Index(n),
                    Err(_) => Segment::Key(k),
                }
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
            // List items by their names, and by their positions as before.
            ("tools[echo]", &["tools", "[echo@0]"], true),
            ("tools[echo]", &["tools", "[add@1]"], false),
            ("tools[echo]", &["tools", "echo"], false),
            (
                "tools[*].description",
                &["tools", "[add@1]", "description"],
                true,
            ),
            (
                "tools.*.description",
                &["tools", "[add@1]", "description"],
                true,
            ),
            ("tools[get-*]", &["tools", "[get-sum@3]"], true),
            ("tools[get-*]", &["tools", "[echo@0]"], false),
            ("tools.1", &["tools", "[add@1]"], true),
            ("tools.0", &["tools", "[add@1]"], false),
            ("tools.1.name", &["tools", "[add@1]", "name"], true),
            (
                "**[echo].inputSchema",
                &["x", "tools", "[echo@0]", "inputSchema"],
                true,
            ),
            ("*[echo]", &["tools", "[echo@0]"], true),
            (
                "resources[test://static/resource/1].text",
                &["resources", "[test://static/resource/1@0]", "text"],
                true,
            ),
            (
                "resources[test://*]",
                &["resources", "[test://a/b.txt@4]"],
                true,
            ),
            ("resources[test://?]", &["resources", "[test://a@0]"], true),
            ("x[a\\]b]", &["x", "[a]b@0]"], true),
            ("x[a{b}]", &["x", "[a{b}@0]"], true),
            ("x[a.b]", &["x", "[a.b@0]"], true),
            ("x[a.b]", &["x", "[a@0]", "b"], false),
            ("a.[bc]", &["a", "[b@0]"], false),
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
            ("tools[echo", "brackets do not close"),
            ("tools[echo\\]", "brackets do not close"),
            ("tools[echo]x", "must end its segment"),
            ("tools[a][b]", "must end its segment"),
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
    fn paths_are_written_with_items_in_brackets() {
        let table: &[(&[&str], &str)] = &[
            (
                &["tools", "[echo@0]", "inputSchema"],
                "tools[echo].inputSchema",
            ),
            (&["a", "0", "b"], "a.0.b"),
            (&["[x@2]", "y"], "[x].y"),
            (&["x", "[a]b\\c@0]"], "x[a\\]b\\\\c]"),
            (&[], ""),
        ];
        for (keys, want) in table {
            assert_eq!(path_text(&path(keys)), *want, "{keys:?}");
        }
        // What is written is a glob that matches the path it was written from.
        // (An item at the very start is written as one, but brackets there are a class.)
        for (keys, _) in [&table[0], &table[1], &table[3]] {
            let path = path(keys);
            let glob = path_text(&path);
            assert!(matches(&glob, keys), "{glob}");
        }
    }

    #[test]
    fn a_list_is_named_by_the_first_field_unique_in_every_list() {
        let table: &[(Value, Value, Option<&str>)] = &[
            (
                json!([{"name": "a"}, {"name": "b"}]),
                json!([{"name": "b"}]),
                Some("name"),
            ),
            (
                json!([{"uri": "x://1", "name": "R"}, {"uri": "x://2", "name": "R"}]),
                json!([]),
                Some("uri"),
            ),
            (
                json!([{"uriTemplate": "x://{id}", "name": "T"}]),
                json!([{"uriTemplate": "y://{id}", "name": "T"}]),
                Some("uriTemplate"),
            ),
            (
                json!([{"id": "o1"}, {"id": "o2"}]),
                json!([{"id": "o2"}, {"id": "o1"}]),
                Some("id"),
            ),
            // Not unique, not on every item, not a string, not an object, nothing at all.
            (json!([{"name": "a"}, {"name": "a"}]), json!([]), None),
            (json!([{"name": "a"}, {"type": "text"}]), json!([]), None),
            (json!([{"name": "a"}]), json!([{"title": "a"}]), None),
            (json!([{"id": 1}, {"id": 2}]), json!([]), None),
            (json!(["a", "b"]), json!([]), None),
            (json!([]), json!([]), None),
            (
                json!([{"type": "text", "text": "a"}]),
                json!([{"type": "text", "text": "b"}]),
                None,
            ),
        ];
        for (a, b, want) in table {
            let lists = [
                a.as_array().unwrap().as_slice(),
                b.as_array().unwrap().as_slice(),
            ];
            assert_eq!(identity(&lists), *want, "{a} {b}");
        }
    }

    #[test]
    fn no_globs_match_nothing() {
        let globs = DotGlobs::new(Vec::<String>::new()).unwrap();
        assert!(globs.is_empty());
        assert!(!globs.is_match(&path(&["a"])));
    }
}

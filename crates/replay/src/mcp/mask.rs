//! Values that vary per run, by rule: masks (regular expressions whose matches count as equal) and
//! rules that hold for some calls only.
//!
//! A [`Mask`] replaces each match in a string by [`MASKED`], in a copy of the recorded outcome and of
//! the replayed one alike, before they are compared: a `created: …` date inside a tool's text then
//! compares equal whatever the date, and every other word of that text is still compared. The
//! outcomes a replay keeps (for `--update`) and the recording are never masked.
//!
//! A [`CallRules`] holds ignore globs and masks for the calls whose name (a tool's or a prompt's) or
//! URI (a resource's) matches a glob, on top of the ones that hold for every call.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use calltape_recorder::mcp::Outcome;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;
use serde_json::Value;

use crate::error::{Error, ErrorKind};
use crate::mcp::compare::{Comparer, Comparison, json_in_text};

/// What a mask puts in place of each match, in the recorded and the replayed string alike.
pub const MASKED: &str = "[MASKED]";

/// The named masks: a name given as a mask stands for its regular expression.
///
/// - `timestamp`: a date with a time of day, as RFC 3339 and ISO 8601 write it (`2026-12-01T10:15:30Z`,
///   with or without fractions of a second and a zone, `T` or a space between date and time), as HTTP
///   writes it (RFC 7231's IMF-fixdate, `Tue, 01 Dec 2026 10:15:30 GMT`, and the zone offsets of
///   RFC 5322, `+0000`), as JavaScript's `Date.prototype.toString()` writes it, which a Node server
///   prints when it puts a `Date` in a text (`Tue Dec 01 2026 10:15:30 GMT+0000 (Coordinated
///   Universal Time)`, the zone's name in any language), and as C's `asctime` writes it (`Tue Dec  1
///   10:15:30 2026`). A date alone (`2026-12-01`) is not masked: it rarely varies per run.
/// - `uuid`: a UUID in its hyphenated hex form, either case.
pub const PRESETS: [(&str, &str); 2] = [("timestamp", TIMESTAMP), ("uuid", UUID)];

/// Weekday and month names as the formats above write them.
macro_rules! day {
    () => {
        "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
    };
}
macro_rules! month {
    () => {
        "(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    };
}

/// The `timestamp` preset. ASCII classes and word boundaries keep it on the regex crate's fastest
/// engine, and nothing in these formats is outside ASCII but a zone's name, which `[^()]` takes.
const TIMESTAMP: &str = concat!(
    // RFC 3339 / ISO 8601: date, `T` or space, time; seconds, fractions and zone optional.
    r"(?-u:\b)[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?",
    r"(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?",
    // HTTP's IMF-fixdate and RFC 5322's date-time.
    r"|(?-u:\b)",
    day!(),
    r", [0-9]{1,2} ",
    month!(),
    r" [0-9]{4} [0-9]{2}:[0-9]{2}(?::[0-9]{2})? (?:GMT|UTC|UT|[+-][0-9]{4})",
    // JavaScript's Date.prototype.toString().
    r"|(?-u:\b)",
    day!(),
    " ",
    month!(),
    r" [0-9]{2} -?[0-9]{4,6} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT[+-][0-9]{4}(?: \([^()]*\))?",
    // C's asctime, also an HTTP date of old.
    r"|(?-u:\b)",
    day!(),
    " ",
    month!(),
    r" [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4}",
);

/// The `uuid` preset.
const UUID: &str =
    r"(?-u:\b)[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?-u:\b)";

/// The regular expression a mask stands for: a preset's, or the text itself.
fn pattern(mask: &str) -> &str {
    PRESETS
        .iter()
        .find(|(name, _)| *name == mask)
        .map_or(mask, |(_, regex)| regex)
}

/// Regular expressions whose matches are replaced by [`MASKED`] before a comparison.
///
/// Each mask is a preset's name ([`PRESETS`]: `timestamp`, `uuid`) or a regular expression in the
/// syntax of the `regex` crate, which matches in time linear in the text whatever the expression.
/// All of them are compiled into one, so a string is scanned once however many there are. A match
/// of no character replaces nothing.
///
/// ```
/// use calltape_replay::mcp::Mask;
///
/// let mask = Mask::new(["timestamp", r"req-[0-9]+"])?;
/// assert_eq!(
///     mask.mask_text("created: Tue Dec 01 2026 10:15:30 GMT+0000 (Coordinated Universal Time)\nsize: 6"),
///     "created: [MASKED]\nsize: 6"
/// );
/// assert_eq!(mask.mask_text("req-42 at 2026-12-01T10:15:30.5Z"), "[MASKED] at [MASKED]");
/// assert!(Mask::new(["[a-"]).is_err());
/// # Ok::<(), calltape_replay::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct Mask {
    /// The masks as given: a preset's name or a regular expression.
    masks: Vec<String>,
    /// All of them as one alternation; `None` when there is none.
    regex: Option<Regex>,
}

impl fmt::Debug for Mask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Mask").field(&self.masks).finish()
    }
}

impl Mask {
    /// Compiles `masks`, each a preset's name or a regular expression. Fails, naming the first that
    /// does not compile.
    pub fn new<I, S>(masks: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let masks: Vec<String> = masks.into_iter().map(Into::into).collect();
        if masks.is_empty() {
            return Ok(Self::default());
        }
        // Each alone first, so that an error names the mask that has it.
        for mask in &masks {
            Regex::new(pattern(mask)).map_err(|e| ErrorKind::Mask {
                mask: mask.clone(),
                reason: e.to_string(),
            })?;
        }
        let all = masks
            .iter()
            .map(|m| format!("(?:{})", pattern(m)))
            .collect::<Vec<_>>()
            .join("|");
        let regex = Regex::new(&all).map_err(|e| ErrorKind::Mask {
            mask: masks.join(", "),
            reason: e.to_string(),
        })?;
        Ok(Self {
            masks,
            regex: Some(regex),
        })
    }

    /// The masks as given.
    pub fn masks(&self) -> impl Iterator<Item = &str> {
        self.masks.iter().map(String::as_str)
    }

    /// Whether there is no mask.
    pub fn is_empty(&self) -> bool {
        self.regex.is_none()
    }

    /// `text` with each match replaced by [`MASKED`].
    pub fn mask_text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let Some(regex) = &self.regex else {
            return Cow::Borrowed(text);
        };
        let mut out = String::new();
        let mut last = 0;
        for m in regex.find_iter(text).filter(|m| !m.is_empty()) {
            out.push_str(&text[last..m.start()]);
            out.push_str(MASKED);
            last = m.end();
        }
        if last == 0 {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }

    /// Masks every string in `value`, at any depth. A string that holds a JSON object or array is
    /// masked as JSON, string by string, as the comparison reads it, and written back only when
    /// something in it was masked. Returns whether anything was.
    pub fn mask_value(&self, value: &mut Value) -> bool {
        if self.is_empty() {
            return false;
        }
        match value {
            Value::String(text) => {
                if let Some(mut inner) = json_in_text(text) {
                    if !self.mask_value(&mut inner) {
                        return false;
                    }
                    *text = inner.to_string();
                    return true;
                }
                match self.mask_text(text) {
                    Cow::Borrowed(_) => false,
                    Cow::Owned(masked) => {
                        *text = masked;
                        true
                    }
                }
            }
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |any, item| self.mask_value(item) | any),
            Value::Object(members) => members
                .values_mut()
                .fold(false, |any, member| self.mask_value(member) | any),
            _ => false,
        }
    }

    /// Masks an answer's strings, or an error's message.
    pub fn mask_outcome(&self, outcome: &mut Outcome) {
        match outcome {
            Outcome::Answer(value) => {
                self.mask_value(value);
            }
            Outcome::Error(error) => {
                if let Some(message) = &mut error.message
                    && let Cow::Owned(masked) = self.mask_text(message)
                {
                    *message = masked;
                }
            }
        }
    }
}

/// Ignore globs and masks for the calls whose name or URI matches `name`, as given to
/// [`CallRules::builder`].
///
/// `name` is a glob on a tool's or a prompt's name, or a resource's URI, as the recording holds it:
/// `*` is any text (`/` included), `?` one character, `[ab]` one of a set, `{a,b}` either.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallRule {
    /// The glob on the call's name or URI.
    pub name: String,
    /// Dot-path globs skipped in these calls' answers, as [`ComparerBuilder::ignore`] takes them.
    ///
    /// [`ComparerBuilder::ignore`]: crate::mcp::ComparerBuilder::ignore
    pub ignore: Vec<String>,
    /// Masks applied to these calls' outcomes, as [`Mask::new`] takes them.
    pub mask: Vec<String>,
}

impl CallRule {
    /// A rule for the calls matching `name`, with nothing ignored or masked yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ignore: Vec::new(),
            mask: Vec::new(),
        }
    }

    /// Also skips these dot-path globs.
    pub fn ignore<I, S>(mut self, globs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.ignore.extend(globs.into_iter().map(Into::into));
        self
    }

    /// Also applies these masks.
    pub fn mask<I, S>(mut self, masks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.mask.extend(masks.into_iter().map(Into::into));
        self
    }
}

/// A [`CallRule`] compiled: its mask, and its ignore globs checked.
#[derive(Debug, Clone)]
struct Compiled {
    ignore: Vec<String>,
    mask: Mask,
}

/// Rules that hold for some calls only, by the call's name or URI. Every rule whose glob matches a
/// call applies to it, on top of the rules for every call.
///
/// ```
/// use calltape_replay::mcp::{CallRule, CallRules};
///
/// let rules = CallRules::builder()
///     .rule(CallRule::new("get_file_info").mask(["timestamp"]))
///     .rule(CallRule::new("file:///tmp/*").ignore(["contents.*.text"]))
///     .build()?;
/// assert_eq!(rules.len(), 2);
/// # Ok::<(), calltape_replay::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct CallRules {
    rules: Vec<CallRule>,
    compiled: Vec<Compiled>,
    names: GlobSet,
}

/// Builds [`CallRules`].
#[derive(Debug, Clone, Default)]
pub struct CallRulesBuilder {
    rules: Vec<CallRule>,
}

impl CallRulesBuilder {
    /// Adds `rule`.
    pub fn rule(mut self, rule: CallRule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Compiles every rule's name glob, masks and ignore globs. Fails naming the first that does not
    /// compile.
    pub fn build(self) -> Result<CallRules, Error> {
        let mut names = GlobSetBuilder::new();
        let mut compiled = Vec::with_capacity(self.rules.len());
        for rule in &self.rules {
            // `\` escapes on every platform (globset's default only on Unix), so a rule means the same
            // everywhere.
            let glob = GlobBuilder::new(&rule.name)
                .backslash_escape(true)
                .build()
                .map_err(|e| ErrorKind::CallName {
                    glob: rule.name.clone(),
                    reason: e.kind().to_string(),
                })?;
            names.add(glob);
            // Checked now, so that a replay never meets a glob that does not compile.
            Comparer::builder().ignore(&rule.ignore).build()?;
            compiled.push(Compiled {
                ignore: rule.ignore.clone(),
                mask: Mask::new(rule.mask.iter().map(String::as_str))?,
            });
        }
        let names = names.build().map_err(|e| ErrorKind::CallName {
            glob: self
                .rules
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            reason: e.to_string(),
        })?;
        Ok(CallRules {
            rules: self.rules,
            compiled,
            names,
        })
    }
}

impl CallRules {
    /// No rule.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts building rules.
    pub fn builder() -> CallRulesBuilder {
        CallRulesBuilder::default()
    }

    /// The rules, as given.
    pub fn rules(&self) -> &[CallRule] {
        &self.rules
    }

    /// How many rules there are.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

/// The comparison of one replay: the rules for every call and for some, with a comparer built once
/// for each set of call rules that matched together.
pub(crate) struct Scopes<'o> {
    comparer: &'o Comparer,
    mask: &'o Mask,
    rules: &'o CallRules,
    /// Comparers with scoped ignore globs, by the indexes of the rules that matched.
    comparers: HashMap<Vec<usize>, Comparer>,
}

impl<'o> Scopes<'o> {
    pub(crate) fn new(comparer: &'o Comparer, mask: &'o Mask, rules: &'o CallRules) -> Self {
        Self {
            comparer,
            mask,
            rules,
            comparers: HashMap::new(),
        }
    }

    /// Compares a call of `method` named `name` by the rules that hold for it: copies of both
    /// outcomes masked by every mask that applies, then the comparer with every ignore glob that
    /// applies.
    pub(crate) fn compare(
        &mut self,
        method: &str,
        name: &str,
        recorded: &Outcome,
        replayed: &Outcome,
    ) -> Comparison {
        let matched = if self.rules.is_empty() {
            Vec::new()
        } else {
            self.rules.names.matches(name)
        };
        let masks: Vec<&Mask> = std::iter::once(self.mask)
            .chain(matched.iter().map(|&i| &self.rules.compiled[i].mask))
            .filter(|m| !m.is_empty())
            .collect();
        let scoped: Vec<usize> = matched
            .into_iter()
            .filter(|&i| !self.rules.compiled[i].ignore.is_empty())
            .collect();
        let comparer = if scoped.is_empty() {
            self.comparer
        } else {
            let (base, rules) = (self.comparer, self.rules);
            self.comparers.entry(scoped).or_insert_with_key(|scoped| {
                let globs: Vec<&str> = scoped
                    .iter()
                    .flat_map(|&i| rules.compiled[i].ignore.iter().map(String::as_str))
                    .collect();
                // Every glob compiled when its rule was built, so this cannot fail; were it to,
                // the call is compared with the rules for every call.
                base.and_ignore(&globs).unwrap_or_else(|_| base.clone())
            })
        };
        if masks.is_empty() {
            return comparer.compare_call(method, recorded, replayed);
        }
        let (mut recorded, mut replayed) = (recorded.clone(), replayed.clone());
        for mask in masks {
            mask.mask_outcome(&mut recorded);
            mask.mask_outcome(&mut replayed);
        }
        comparer.compare_call(method, &recorded, &replayed)
    }
}

#[cfg(test)]
mod tests;

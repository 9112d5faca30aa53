//! Literal secret values a program knows (a key it was given, a value a request held under a
//! credential name, a value it filled in itself), hidden wherever they appear: in text, in the
//! strings and the object keys of JSON values, and in a stream of log lines.
//!
//! The text rules find credentials by their form or by the name they stand under; a value a
//! program knows can be anything (`tok_test_4eC39HqLy`, `hunter2-x`), so it is looked for as it is.
//! It is also looked for as JSON, HTML and XML write it, so that a value holding a quote or an `&`
//! is found in a JSON line or a report as well.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use serde_json::{Map, Value};

use crate::{REDACTED, keys, step};

/// Literal secret values, each under a name that reports may show (never the value): hidden by
/// [`hide_in_text`](KnownSecrets::hide_in_text) and [`hide_in_value`](KnownSecrets::hide_in_value),
/// looked for by [`find`](KnownSecrets::find) and by the final [`Gate`](crate::Gate).
///
/// A handle: clones share the values, and a value added through one clone is known to every
/// other, so a set given to a log writer at start-up hides a value a command learns later.
/// Printing it (`Debug`) shows the names only.
///
/// Each value is hidden as written and as JSON, HTML and XML escape it. A longer value is hidden
/// before a shorter one, so a value that contains another is hidden whole. Hiding and finding take
/// time linear in the text for each value.
///
/// ```
/// use calltape_redact::KnownSecrets;
/// use serde_json::json;
///
/// let known = KnownSecrets::new();
/// known.add("cardToken", "tok_test_4eC39HqLy");
/// assert_eq!(known.hide_in_text("card tok_test_4eC39HqLy ok"), "card [REDACTED] ok");
///
/// // Object keys too: a key that holds a value becomes a placeholder, numbered when the object
/// // holds another.
/// let mut answer = json!({"cards": {"tok_test_4eC39HqLy": "stored", "[REDACTED]": 1}});
/// known.hide_in_value(&mut answer);
/// assert_eq!(answer, json!({"cards": {"[REDACTED:2]": "stored", "[REDACTED]": 1}}));
///
/// assert_eq!(known.find(b"{\"x\":\"tok_test_4eC39HqLy\"}"), Some(("cardToken".to_owned(), 6)));
/// ```
#[derive(Clone, Default)]
pub struct KnownSecrets {
    values: Arc<RwLock<Vec<Known>>>,
}

/// One value: its name, and the forms it is looked for in (as written first, then each escaped
/// form that differs from it).
struct Known {
    name: String,
    forms: Vec<String>,
}

impl Known {
    fn value(&self) -> &str {
        &self.forms[0]
    }
}

impl fmt::Debug for KnownSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("KnownSecrets").field(&self.names()).finish()
    }
}

impl KnownSecrets {
    /// No value.
    pub fn new() -> KnownSecrets {
        KnownSecrets::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, Vec<Known>> {
        self.values.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `value`, under `name`, for every clone of this set. Whether it was added: an empty
    /// value, `[REDACTED]` itself and a value already known are not. The value is taken as it is
    /// (not trimmed) and whatever its length: what is secret is the caller's to say, and a short
    /// value hides ordinary words wherever it is looked for.
    pub fn add(&self, name: &str, value: &str) -> bool {
        if value.is_empty() || value == REDACTED {
            return false;
        }
        let mut values = self.values.write().unwrap_or_else(PoisonError::into_inner);
        if values.iter().any(|k| k.value() == value) {
            return false;
        }
        let at = values.partition_point(|k| k.value().len() >= value.len());
        values.insert(
            at,
            Known {
                name: name.to_owned(),
                forms: forms(value),
            },
        );
        true
    }

    /// Adds every value of `other` under its name (a set shared with another part of a program).
    pub fn extend(&self, other: &KnownSecrets) {
        if Arc::ptr_eq(&self.values, &other.values) {
            return;
        }
        let theirs: Vec<(String, String)> = other
            .read()
            .iter()
            .map(|k| (k.name.clone(), k.value().to_owned()))
            .collect();
        for (name, value) in theirs {
            self.add(&name, &value);
        }
    }

    /// Whether no value is known.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// How many values are known.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// The names the values were added under, longest value first.
    pub fn names(&self) -> Vec<String> {
        self.read().iter().map(|k| k.name.clone()).collect()
    }

    /// Whether `text` holds a known value, in any of its forms.
    pub fn occurs_in(&self, text: &str) -> bool {
        self.find(text.as_bytes()).is_some()
    }

    /// The name of the first known value (longest first) that `data` holds, in any of its forms,
    /// and the byte offset where it is; `None` when it holds none.
    pub fn find(&self, data: &[u8]) -> Option<(String, usize)> {
        self.find_from(data, 0)
    }

    /// [`find`](Self::find) among the values at least `min` bytes long.
    pub(crate) fn find_from(&self, data: &[u8], min: usize) -> Option<(String, usize)> {
        let values = self.read();
        for known in values.iter().take_while(|k| k.value().len() >= min) {
            for form in &known.forms {
                step!(data.len());
                if let Some(at) = memchr::memmem::find(data, form.as_bytes()) {
                    return Some((known.name.clone(), at));
                }
            }
        }
        None
    }

    /// `text` with every known value, in any of its forms, replaced by `[REDACTED]`; borrowed when
    /// it holds none.
    pub fn hide_in_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let values = self.read();
        let mut out = Cow::Borrowed(text);
        for known in values.iter() {
            for form in &known.forms {
                step!(out.len());
                if memchr::memmem::find(out.as_bytes(), form.as_bytes()).is_some() {
                    out = Cow::Owned(out.replace(form.as_str(), REDACTED));
                }
            }
        }
        out
    }

    /// [`hide_in_text`](Self::hide_in_text) over bytes that may not be text.
    pub(crate) fn hide_in_bytes<'a>(&self, data: &'a [u8]) -> Cow<'a, [u8]> {
        let values = self.read();
        let mut out = Cow::Borrowed(data);
        for known in values.iter() {
            for form in &known.forms {
                step!(out.len());
                let finder = memchr::memmem::Finder::new(form.as_bytes());
                if finder.find(&out).is_none() {
                    continue;
                }
                let mut replaced = Vec::with_capacity(out.len());
                let mut last = 0;
                for at in finder.find_iter(&out) {
                    replaced.extend_from_slice(&out[last..at]);
                    replaced.extend_from_slice(REDACTED.as_bytes());
                    last = at + form.len();
                }
                replaced.extend_from_slice(&out[last..]);
                out = Cow::Owned(replaced);
            }
        }
        out
    }

    /// Hides every known value in a JSON value, at any depth: in each string as
    /// [`hide_in_text`](Self::hide_in_text) does, and in object keys: a key that holds a known value
    /// is replaced by `"[REDACTED]"`, a second such key of the same object by `"[REDACTED:2]"`, then
    /// `"[REDACTED:3]"` and on, skipping a placeholder the object already holds, so that no member
    /// is lost or merged and the JSON stays valid. Numbers, booleans and `null` stay as they are.
    pub fn hide_in_value(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        // An explicit stack: a value nested thousands of levels deep is walked as any other.
        let mut stack = vec![value];
        while let Some(value) = stack.pop() {
            step!(1);
            match value {
                Value::String(text) => {
                    if let Cow::Owned(hidden) = self.hide_in_text(text) {
                        *text = hidden;
                    }
                }
                Value::Array(items) => stack.extend(items.iter_mut()),
                Value::Object(map) => {
                    rename_keys(map, |key| self.occurs_in(key));
                    stack.extend(map.values_mut());
                }
                _ => {}
            }
        }
    }
}

/// The forms `value` is looked for in: as written, then as JSON escapes it (inside a string), as
/// HTML and XML escape it, and as HTML escapes its JSON form (a JSON value shown in a page), each
/// once.
fn forms(value: &str) -> Vec<String> {
    let mut forms = vec![value.to_owned()];
    let json = serde_json::to_string(value)
        .map(|quoted| quoted[1..quoted.len() - 1].to_owned())
        .unwrap_or_else(|_| value.to_owned());
    for form in [
        markup_escaped(value, "&#39;"),
        markup_escaped(value, "&apos;"),
        markup_escaped(&json, "&#39;"),
        json,
    ] {
        if !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

/// `text` as HTML (`apostrophe` `&#39;`) or XML (`&apos;`) text and attributes escape it.
fn markup_escaped(text: &str, apostrophe: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str(apostrophe),
            c => out.push(c),
        }
    }
    out
}

/// Replaces each key of `map` that `hidden` accepts with a placeholder: `[REDACTED]`, then
/// `[REDACTED:2]`, `[REDACTED:3]`, …, skipping those the map holds as keys it keeps. The members
/// keep their values. Linear in the number of members.
pub(crate) fn rename_keys(map: &mut Map<String, Value>, hidden: impl Fn(&str) -> bool) {
    let renamed: Vec<bool> = map.keys().map(|key| hidden(key)).collect();
    if !renamed.contains(&true) {
        return;
    }
    // Numbered as the text rules number the keys they replace (`keys::number`), around the
    // placeholders the map already holds.
    let held: Vec<usize> = map
        .keys()
        .zip(&renamed)
        .filter(|(_, renamed)| !**renamed)
        .filter_map(|(key, _)| keys::placeholder_number(key))
        .collect();
    let replaced: Vec<&str> = map
        .keys()
        .zip(&renamed)
        .filter(|(_, renamed)| **renamed)
        .map(|(key, _)| key.as_str())
        .collect();
    let mut numbers = keys::number(&replaced, &held).into_iter();
    let members = std::mem::take(map);
    for ((key, value), renamed) in members.into_iter().zip(renamed) {
        // One number for each renamed key, in order.
        let key = match renamed.then(|| numbers.next()).flatten() {
            Some(n) => keys::placeholder(n),
            None => key,
        };
        map.insert(key, value);
    }
}

/// A writer's last stage: hides known values in what passes, holding back only what a value may
/// still be cut in (the rest of a line, or the last bytes of a long one).
pub(crate) struct Hider {
    known: KnownSecrets,
    held: Vec<u8>,
}

/// Bytes of a line held for the values that may run over its end, past which it is hidden and
/// written but for the bytes a value may still be cut in.
const HOLD: usize = 64 * 1024;

impl Hider {
    pub(crate) fn new(known: KnownSecrets) -> Hider {
        Hider {
            known,
            held: Vec::new(),
        }
    }

    /// Takes `data` and writes to `out` what no known value can run over any more: every line
    /// ended, and of a line longer than the hold, all but the bytes the longest form may still
    /// be cut in.
    pub(crate) fn write(&mut self, data: &[u8], out: &mut impl Write) -> io::Result<()> {
        if self.held.is_empty() && self.known.is_empty() {
            return out.write_all(data);
        }
        self.held.extend_from_slice(data);
        let (longest, multiline) = {
            let values = self.known.read();
            let longest = values
                .iter()
                .flat_map(|k| k.forms.iter())
                .map(String::len)
                .max()
                .unwrap_or(0);
            let multiline = values.iter().any(|k| k.value().contains('\n'));
            (longest, multiline)
        };
        let keep = longest.saturating_sub(1);
        let ended = !multiline && memchr::memchr(b'\n', data).is_some();
        if !ended && self.held.len() <= HOLD + keep {
            return Ok(());
        }
        // Hidden over everything held, so that a value is whole when it is looked for; what
        // stays held is the end of the hidden bytes, where a value may still be cut.
        let hidden = self.known.hide_in_bytes(&self.held).into_owned();
        let lines_end = if multiline {
            0
        } else {
            memchr::memrchr(b'\n', &hidden).map_or(0, |at| at + 1)
        };
        let cut = if hidden.len() > HOLD + keep {
            lines_end.max(hidden.len() - keep)
        } else {
            lines_end
        };
        self.held = hidden[cut..].to_vec();
        out.write_all(&hidden[..cut])
    }

    /// Writes everything held, hidden.
    pub(crate) fn flush(&mut self, out: &mut impl Write) -> io::Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let hidden = self.known.hide_in_bytes(&self.held).into_owned();
        self.held.clear();
        out.write_all(&hidden)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_are_hidden_in_every_form_longest_first() {
        let known = KnownSecrets::new();
        assert!(known.add("short", "abcdef"));
        assert!(known.add("long", "abcdef-longer"));
        assert!(known.add("quoted", "pa\"ss&w'rd"));
        assert!(!known.add("again", "abcdef"));
        assert!(!known.add("empty", ""));
        assert!(!known.add("placeholder", REDACTED));
        // (text, hidden)
        let table = [
            (
                "you sent abcdef-longer and abcdef",
                "you sent [REDACTED] and [REDACTED]",
            ),
            (r#"{"p":"pa\"ss&w'rd"}"#, r#"{"p":"[REDACTED]"}"#),
            ("<td>pa&quot;ss&amp;w&#39;rd</td>", "<td>[REDACTED]</td>"),
            ("<s>pa&quot;ss&amp;w&apos;rd</s>", "<s>[REDACTED]</s>"),
            ("<td>pa\\&quot;ss&amp;w&#39;rd</td>", "<td>[REDACTED]</td>"),
            ("nothing here", "nothing here"),
        ];
        for (text, hidden) in table {
            assert_eq!(known.hide_in_text(text), hidden, "{text}");
        }
        assert!(matches!(known.hide_in_text("clean"), Cow::Borrowed(_)));
        assert_eq!(known.find(b"..abcdef-longer"), Some(("long".to_owned(), 2)));
        assert_eq!(known.find(b"nothing"), None);
        assert_eq!(
            format!("{known:?}"),
            r#"KnownSecrets(["long", "quoted", "short"])"#
        );
    }

    #[test]
    fn keys_that_hold_a_value_become_numbered_placeholders() {
        let known = KnownSecrets::new();
        known.add("card", "tok_test_4eC39HqLy");
        known.add("other", "sekrit-value-2");
        // (value, hidden)
        let table = [
            (
                json!({"cards": {"tok_test_4eC39HqLy": "stored"}}),
                json!({"cards": {"[REDACTED]": "stored"}}),
            ),
            (
                // Numbered in the object's order (its keys', without serde_json's preserve_order).
                json!({"tok_test_4eC39HqLy": 1, "card sekrit-value-2": 2, "n": 3}),
                json!({"[REDACTED]": 2, "[REDACTED:2]": 1, "n": 3}),
            ),
            (
                json!({"[REDACTED]": 0, "[REDACTED:3]": 0, "tok_test_4eC39HqLy": 1, "x sekrit-value-2": 2}),
                json!({"[REDACTED]": 0, "[REDACTED:3]": 0, "[REDACTED:2]": 1, "[REDACTED:4]": 2}),
            ),
            (
                json!([{"tok_test_4eC39HqLy": null, "ok": true, "s": ""}]),
                json!([{"[REDACTED]": null, "ok": true, "s": ""}]),
            ),
            (json!({"plain": "text"}), json!({"plain": "text"})),
        ];
        for (mut value, hidden) in table {
            known.hide_in_value(&mut value);
            assert_eq!(value, hidden);
            // Hiding again changes nothing.
            let again = value.clone();
            known.hide_in_value(&mut value);
            assert_eq!(value, again);
        }
    }

    #[test]
    fn a_clone_shares_the_values_added_later() {
        let known = KnownSecrets::new();
        let clone = known.clone();
        known.add("late", "added-after-the-clone");
        assert_eq!(
            clone.hide_in_text("x added-after-the-clone"),
            "x [REDACTED]"
        );
        let other = KnownSecrets::new();
        other.extend(&known);
        other.extend(&other.clone());
        assert_eq!(other.names(), ["late"]);
    }

    #[test]
    fn the_hider_holds_only_what_a_value_may_still_be_cut_in() {
        let known = KnownSecrets::new();
        known.add("k", "abcdefgh");
        let mut out = Vec::new();
        let mut hider = Hider::new(known.clone());
        for chunk in ["one abcd", "efgh two\nthree ab", "cdefgh\n", "tail abc"] {
            hider.write(chunk.as_bytes(), &mut out).unwrap();
        }
        assert_eq!(
            String::from_utf8_lossy(&out),
            "one [REDACTED] two\nthree [REDACTED]\n"
        );
        hider.flush(&mut out).unwrap();
        assert!(out.ends_with(b"tail abc"));
        // A line longer than the hold: written but for the last bytes, the value whole wherever
        // the writes cut it.
        let mut out = Vec::new();
        let mut long = "x".repeat(HOLD + 100);
        long.push_str("abcdefgh");
        long.push_str(&"y".repeat(HOLD));
        for chunk in long.as_bytes().chunks(4093) {
            hider.write(chunk, &mut out).unwrap();
        }
        assert!(out.len() > HOLD);
        hider.flush(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("abcdefgh") && text.contains("x[REDACTED]y"));
    }

    #[test]
    fn hiding_is_linear_for_each_value() {
        let known = KnownSecrets::new();
        known.add("a", "aaaaaaaaab");
        known.add("b", "bbbbbbbbba");
        let small = "a".repeat(10_000);
        let large = "a".repeat(40_000);
        let steps = |text: &str| crate::steps_of(|| drop(known.hide_in_text(text)));
        assert!(steps(&large) <= 9 * steps(&small) / 2);
        // Nested far deeper than a recursive walk could go.
        let mut value = (0..100_000).fold(json!("x aaaaaaaaab"), |v, _| Value::Array(vec![v]));
        known.hide_in_value(&mut value);
        let mut inner = &value;
        while let Value::Array(items) = inner {
            inner = &items[0];
        }
        assert_eq!(inner, "x [REDACTED]");
        crate::redactor::drop_iteratively(value);
    }
}

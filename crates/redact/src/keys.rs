//! Object keys that hold a secret: the placeholders that replace them, and
//! how the replaced keys of one object are numbered.
//!
//! A key goes through the text rules as a string value does. A key they
//! change is replaced whole (a key that is partly secret keeps none of its
//! text: its words would say what the secret was for, and half a key is no
//! better a name than none). The first replaced key of an object becomes
//! `[REDACTED]`, the next ones `[REDACTED:2]`, `[REDACTED:3]`, …, skipping a
//! number whose placeholder the object already holds as a key, so the
//! object keeps one member per member and stays valid JSON. Keys that were
//! the same text get the same placeholder: they were one member to every
//! reader of the JSON already.
//!
//! "First" is in the order the object's members come: the text's order for
//! JSON text, the map's for a `serde_json::Value` (serde_json's default map
//! is sorted by key, so a value parsed from text may number the replaced
//! keys of one object in another order than its text does).

use std::collections::HashMap;

use crate::json::{self, looks_like_json};
use crate::name_cache::{NAME, SECRET};
use crate::redactor::Inner;
use crate::span::{self, Span};
use crate::{REDACTED, step};

/// Whether `key` is a placeholder the redactor writes for a key: `[REDACTED]`
/// or `[REDACTED:N]` with `N` a number from 2 on, written without leading
/// zeros.
///
/// ```
/// use calltape_redact::is_redacted_placeholder;
/// assert!(is_redacted_placeholder("[REDACTED]"));
/// assert!(is_redacted_placeholder("[REDACTED:2]"));
/// assert!(!is_redacted_placeholder("[REDACTED:1]"));
/// assert!(!is_redacted_placeholder("[REDACTED:02]"));
/// assert!(!is_redacted_placeholder("apiKey"));
/// ```
pub fn is_redacted_placeholder(key: &str) -> bool {
    key == REDACTED || numbered(key).is_some()
}

/// The number `N` of a placeholder `[REDACTED:N]` (canonical, `N >= 2`).
fn numbered(key: &str) -> Option<&str> {
    let digits = key.strip_prefix("[REDACTED:")?.strip_suffix(']')?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|c| c.is_ascii_digit())
        && !digits.starts_with('0')
        && digits != "1";
    canonical.then_some(digits)
}

/// The number of the placeholder `key`: 1 for `[REDACTED]`, `N` for
/// `[REDACTED:N]`; `None` for another key, or a number too large to matter.
pub(crate) fn placeholder_number(key: &str) -> Option<usize> {
    if key == REDACTED {
        return Some(1);
    }
    numbered(key)?.parse().ok()
}

/// The placeholder with number `n`.
pub(crate) fn placeholder(n: usize) -> String {
    if n <= 1 {
        REDACTED.to_owned()
    } else {
        format!("[REDACTED:{n}]")
    }
}

/// Numbers the replaced keys of one object: `replaced` in the order of the
/// members, `held` the numbers of the placeholders its other keys already
/// are. Equal keys get one number. Linear in the number of keys.
pub(crate) fn number(replaced: &[&str], held: &[usize]) -> Vec<usize> {
    // No number past this one is ever needed: each held number and each
    // replaced key takes at most one.
    let mut taken = vec![false; replaced.len() + held.len() + 2];
    for &n in held {
        if let Some(slot) = taken.get_mut(n) {
            *slot = true;
        }
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut next = 1;
    let mut numbers = Vec::with_capacity(replaced.len());
    for &key in replaced {
        step!(key.len() + 1);
        let n = *seen.entry(key).or_insert_with(|| {
            while taken.get(next) == Some(&true) {
                next += 1;
            }
            if let Some(slot) = taken.get_mut(next) {
                *slot = true;
            }
            next
        });
        numbers.push(n);
    }
    numbers
}

/// The facts in `missing` about the object key `key` (decoded): whether
/// it is a credential name ([`NAME`]), whether the text rules change it
/// ([`SECRET`]). Out of line: a text repeats its keys, whose facts the
/// name cache keeps.
#[inline(never)]
pub(crate) fn key_facts(
    inner: &Inner,
    key: &str,
    missing: u8,
    embed: u8,
    out: &mut Vec<Span>,
) -> u8 {
    let mut facts = 0;
    if missing & NAME != 0 && inner.is_redacted_name(key) {
        facts |= NAME;
    }
    if missing & SECRET != 0 && key_changes(inner, key, embed, out) {
        facts |= SECRET;
    }
    facts
}

/// Whether the text rules change the object key `key` (decoded), as
/// they would read it as a string value `embed` levels deep.
fn key_changes(inner: &Inner, key: &str, embed: u8, out: &mut Vec<Span>) -> bool {
    if !inner.text_rules && !looks_like_json(key) {
        return false;
    }
    // The span list serves as scratch space: the key's spans are
    // dropped again.
    let mark = out.len();
    json::scan_any(inner, key, embed + 1, false, out);
    let changed = out.len() > mark && span::apply(key, &out[mark..]) != key;
    out.truncate(mark);
    changed
}

enum Entry {
    /// A replaced key: its span in the span list, and its text.
    Replaced { slot: usize, key: Box<str> },
    /// A key that is a placeholder already, with this number.
    Held(usize),
}

/// The JSON text scan's record of the replaced keys of the objects still
/// open: a key's span is pushed as `"[REDACTED]"` when the key is read, and
/// renumbered when its object closes, once every key of the object is known.
#[derive(Default)]
pub(crate) struct Keys {
    /// Entries with the depth of their object, innermost object last.
    open: Vec<(usize, Entry)>,
}

impl Keys {
    /// A key of the object `depth` deep was replaced; its span is `slot`.
    pub(crate) fn replaced(&mut self, depth: usize, slot: usize, key: &str) {
        self.open.push((
            depth,
            Entry::Replaced {
                slot,
                key: key.into(),
            },
        ));
    }

    /// A key of the object `depth` deep is the placeholder numbered `n`.
    pub(crate) fn held(&mut self, depth: usize, n: usize) {
        self.open.push((depth, Entry::Held(n)));
    }

    /// Whether a key of an open object was replaced or is a placeholder.
    #[inline(always)]
    pub(crate) fn is_active(&self) -> bool {
        !self.open.is_empty()
    }

    /// The object `depth` deep closes: numbers its replaced keys.
    pub(crate) fn close(&mut self, depth: usize, out: &mut [Span]) {
        if self.open.last().is_none_or(|(d, _)| *d < depth) {
            return;
        }
        let mut from = self.open.len();
        while from > 0 && self.open[from - 1].0 >= depth {
            from -= 1;
        }
        let entries = &self.open[from..];
        step!(entries.len() + 1);
        let replaced = entries
            .iter()
            .filter(|(_, e)| matches!(e, Entry::Replaced { .. }))
            .count();
        // One replaced key and no placeholder beside it: `"[REDACTED]"`, as
        // pushed.
        if replaced < entries.len() || replaced > 1 {
            let mut keys = Vec::with_capacity(replaced);
            let mut slots = Vec::with_capacity(replaced);
            let mut held = Vec::new();
            for (_, entry) in entries {
                match entry {
                    Entry::Replaced { slot, key } => {
                        keys.push(&**key);
                        slots.push(*slot);
                    }
                    Entry::Held(n) => held.push(*n),
                }
            }
            for (slot, n) in slots.into_iter().zip(number(&keys, &held)) {
                if n > 1
                    && let Some(span) = out.get_mut(slot)
                {
                    span.rewrite = Some(format!("\"{}\"", placeholder(n)).into_boxed_str());
                }
            }
        }
        self.open.truncate(from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_from_one_skipping_held_numbers() {
        assert_eq!(number(&["a", "b", "a", "c"], &[2]), [1, 3, 1, 4]);
        assert_eq!(number(&["x"], &[1]), [2]);
        assert_eq!(number(&["x", "y"], &[usize::MAX, 0]), [1, 2]);
    }

    #[test]
    fn placeholder_numbers_are_read_back() {
        for n in [1, 2, 9, 10, 12345] {
            assert_eq!(placeholder_number(&placeholder(n)), Some(n));
            assert!(is_redacted_placeholder(&placeholder(n)));
        }
        for key in [
            "[REDACTED:1]",
            "[REDACTED:0]",
            "[REDACTED:]",
            "[REDACTED:2x]",
            "[redacted]",
        ] {
            assert_eq!(placeholder_number(key), None, "{key}");
            assert!(!is_redacted_placeholder(key), "{key}");
        }
        assert!(is_redacted_placeholder(
            "[REDACTED:99999999999999999999999]"
        ));
        assert_eq!(
            placeholder_number("[REDACTED:99999999999999999999999]"),
            None
        );
    }
}

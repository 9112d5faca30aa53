//! What the final gate refused: the one shape every writer of the crate (and of the crates above it)
//! reports a refused line in.
//!
//! Every line a recording, a cassette, a report or a log holds passes calltape-redact's
//! [`Gate`] last, after whatever redacted it. A line the gate stops is not written; the writer drops
//! what it belonged to (a call, an interaction, a report) and reports a [`Refusal`] that names it and
//! what was found (the rule, or the name of a known value), never the value.

use std::fmt;

use calltape_redact::{Gate, GateHit};

/// Something a writer did not store because the final gate stopped a line of it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusal {
    /// What was refused: a call, an interaction, a report.
    pub item: String,
    /// What the gate found: a token's rule or a known value's name.
    pub hit: GateHit,
}

impl Refusal {
    /// A refusal of `item`, which held `hit`.
    pub fn new(item: impl Into<String>, hit: GateHit) -> Self {
        Self {
            item: item.into(),
            hit,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} was not written: it held {}; keep that credential out of it or redact it, and \
             record again",
            self.item, self.hit
        )
    }
}

/// Lets `lines` through `gate`: `Ok` when none holds what the gate stops, else the refusal of
/// `item` (a thunk, so that naming the item costs nothing when nothing is refused).
pub fn admit<'a>(
    gate: &Gate,
    lines: impl IntoIterator<Item = &'a [u8]>,
    item: impl FnOnce() -> String,
) -> Result<(), Refusal> {
    for line in lines {
        if let Some(hit) = gate.check(line) {
            return Err(Refusal::new(safe_label(gate, item()), hit));
        }
    }
    Ok(())
}

/// `label` as it may be said: a label that itself holds what the gate stops (a tool named like a
/// token) is said without it, and one that holds control characters (a tool or session named to
/// retitle the terminal) has them escaped, as every recorded string said on a terminal has.
pub(crate) fn safe_label(gate: &Gate, label: String) -> String {
    match gate.check(label.as_bytes()) {
        None => crate::terminal::escape_controls(&label, crate::terminal::LineBreaks::Escape)
            .into_owned(),
        Some(hit) => format!("an item whose name held {hit}"),
    }
}

#[cfg(test)]
mod tests {
    use calltape_redact::KnownSecrets;

    use super::*;

    #[test]
    fn a_refusal_names_the_item_and_the_rule_never_the_value() {
        let known = KnownSecrets::new();
        known.add("CARD", "tok_test_4eC39HqLy");
        let gate = Gate::new().watch(&known);
        let lines: [&[u8]; 2] = [b"{\"ok\":1}", b"{\"tok_test_4eC39HqLy\":1}"];
        let refusal = admit(&gate, lines, || "call 2".to_owned()).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "call 2 was not written: it held the value of CARD; keep that credential out of it \
             or redact it, and record again"
        );
        let refusal = admit(&gate, lines, || "call tok_test_4eC39HqLy".to_owned()).unwrap_err();
        assert!(!refusal.to_string().contains("tok_test"), "{refusal}");
        assert!(admit(&gate, [&b"{}"[..]], || unreachable!()).is_ok());
        // A label that would drive a terminal is said escaped.
        let refusal = admit(&gate, lines, || "call quote\x1b]0;owned\x07".to_owned()).unwrap_err();
        assert!(
            refusal
                .to_string()
                .starts_with("call quote\\u{1b}]0;owned\\u{7} was not written"),
            "{refusal}"
        );
    }
}

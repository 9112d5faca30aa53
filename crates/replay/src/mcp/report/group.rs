//! Calls that changed the same way: found once, for the text and HTML reports to show once.
//!
//! Calls of one method and name, with one status, whose differences are at the same paths form a
//! group; within it, the calls whose values are the same too form a variant. A group of one variant
//! changed alike (`price: 12 → 15 in 10,000 calls`); a group of many is shown once with each
//! variant's values, so that 10,000 calls that each changed their own way cost a line each, not a
//! whole call's row.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;

use crate::mcp::compare::{Difference, Status};
use crate::mcp::report::CallReport;

/// The calls that share their method, name, status and the paths of every difference with another
/// call, in groups of two or more. A call with notes (a substitution, an unfilled field) is never
/// grouped: what it was sent is its own.
pub(super) struct Groups {
    /// For each call, the group it belongs to.
    of: Vec<Option<usize>>,
    groups: Vec<Group>,
}

/// Calls whose differences are at the same paths.
pub(super) struct Group {
    /// The calls (positions in the report), in recording order.
    pub(super) calls: Vec<usize>,
    /// The calls whose values are the same too, each in recording order, the variants in the order
    /// of their first call.
    pub(super) variants: Vec<Vec<usize>>,
}

impl Groups {
    pub(super) fn find(calls: &[CallReport]) -> Self {
        let mut by_shape: HashMap<String, usize> = HashMap::new();
        let mut by_values: HashMap<String, usize> = HashMap::new();
        let mut groups: Vec<Group> = Vec::new();
        let mut of = vec![None; calls.len()];
        for (i, call) in calls.iter().enumerate() {
            if call.status == Status::Same || call.has_notes() || call.differences.is_empty() {
                continue;
            }
            let next = groups.len();
            let group = *by_shape.entry(shape(call)).or_insert(next);
            if group == next {
                groups.push(Group {
                    calls: Vec::new(),
                    variants: Vec::new(),
                });
            }
            let next = groups[group].variants.len();
            // The values' key holds the shape: a variant is of one group.
            let variant = *by_values.entry(values(call)).or_insert(next);
            if variant == next {
                groups[group].variants.push(Vec::new());
            }
            groups[group].calls.push(i);
            groups[group].variants[variant].push(i);
            of[i] = Some(group);
        }
        // A group of one is a call of its own.
        for group in &groups {
            if group.calls.len() == 1 {
                of[group.calls[0]] = None;
            }
        }
        Self { of, groups }
    }

    /// The group call `i` belongs to, when it belongs to one.
    pub(super) fn of(&self, i: usize) -> Option<&Group> {
        self.of.get(i).copied().flatten().map(|g| &self.groups[g])
    }
}

impl Group {
    /// Whether every call of the group changed alike, values and all.
    pub(super) fn alike(&self) -> bool {
        self.variants.len() == 1
    }

    /// What the group's calls hold at difference `d` (a position in each call's differences) on
    /// each side, recorded then replayed: the one value they share there, or how many values.
    pub(super) fn sides<'r>(&self, calls: &'r [CallReport], d: usize) -> [Side<'r>; 2] {
        let side = |pick: fn(&Difference) -> &Option<Value>| {
            let mut seen = HashSet::new();
            for variant in &self.variants {
                let value = pick(&calls[variant[0]].differences[d]);
                seen.insert(value.as_ref().map(Value::to_string));
            }
            match seen.len() {
                1 => Side::One(pick(&calls[self.variants[0][0]].differences[d]).as_ref()),
                n => Side::Many(n),
            }
        };
        [side(|d| &d.recorded), side(|d| &d.replayed)]
    }
}

/// What the calls of a group hold at one path, on one side.
pub(super) enum Side<'r> {
    /// The same value in every call (`None`: absent in every call).
    One(Option<&'r Value>),
    /// This many values.
    Many(usize),
}

/// What calls that changed at the same paths share, as one text: method, name, status, and each
/// difference's path and whether it is a whole list item that came or went.
fn shape(call: &CallReport) -> String {
    let mut key = String::with_capacity(128);
    key.push_str(&call.method);
    key.push('\0');
    key.push_str(&call.name);
    key.push('\0');
    key.push_str(call.status.as_str());
    for d in &call.differences {
        key.push('\0');
        key.push_str(&d.path);
        key.push('\0');
        key.push_str(d.item_change().unwrap_or_default());
    }
    key
}

/// What calls that changed the same way share, as one text: their shape, and each difference's
/// values.
fn values(call: &CallReport) -> String {
    let mut key = shape(call);
    for d in &call.differences {
        for value in [&d.recorded, &d.replayed] {
            key.push('\0');
            if let Some(value) = value {
                let _ = write!(key, "{value}");
            }
        }
    }
    key
}

/// `n` with a comma between thousands: `10,000`.
pub(super) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The calls' numbers (from 1) as runs: `1–3, 7, 9–12`.
pub(super) fn runs(calls: &[usize], number: impl Fn(usize) -> usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < calls.len() {
        let start = number(calls[i]);
        let mut end = start;
        while i + 1 < calls.len() && number(calls[i + 1]) == end + 1 {
            end += 1;
            i += 1;
        }
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(&thousands(start));
        if end > start {
            out.push('–');
            out.push_str(&thousands(end));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_with_thousands_and_runs() {
        let table = [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (10_000, "10,000"),
            (1_234_567, "1,234,567"),
        ];
        for (n, want) in table {
            assert_eq!(thousands(n), want);
        }
        assert_eq!(
            runs(&[0, 1, 2, 6, 8, 9, 9999], |i| i + 1),
            "1–3, 7, 9–10, 10,000"
        );
        assert_eq!(runs(&[], |i| i + 1), "");
    }
}

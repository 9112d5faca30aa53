//! Calls that changed the same way: found once, for the text and HTML reports to show once.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::mcp::compare::Status;
use crate::mcp::report::CallReport;

/// The calls that share their method, name, status and every difference with another call, in
/// groups of two or more. A call with notes (a substitution, an unfilled field) is never grouped:
/// what it was sent is its own.
pub(super) struct Groups {
    /// For each call, the group it belongs to.
    of: Vec<Option<usize>>,
    /// Each group's calls (positions in the report), in recording order.
    members: Vec<Vec<usize>>,
}

impl Groups {
    pub(super) fn find(calls: &[CallReport]) -> Self {
        let mut by_key: HashMap<String, usize> = HashMap::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut of = vec![None; calls.len()];
        for (i, call) in calls.iter().enumerate() {
            if call.status == Status::Same || call.has_notes() || call.differences.is_empty() {
                continue;
            }
            let next = members.len();
            let group = *by_key.entry(key(call)).or_insert(next);
            if group == next {
                members.push(Vec::new());
            }
            members[group].push(i);
            of[i] = Some(group);
        }
        // A group of one is a call of its own.
        for (group, calls) in members.iter().enumerate() {
            if calls.len() == 1 {
                of[calls[0]] = None;
            }
            debug_assert!(
                calls
                    .iter()
                    .all(|&c| of[c].is_none() || of[c] == Some(group))
            );
        }
        Self { of, members }
    }

    /// The calls of the group call `i` belongs to, when it belongs to one.
    pub(super) fn of(&self, i: usize) -> Option<&[usize]> {
        self.of
            .get(i)
            .copied()
            .flatten()
            .map(|g| self.members[g].as_slice())
    }
}

/// What calls that changed the same way share, as one text: method, name, status, and each
/// difference's path and values.
fn key(call: &CallReport) -> String {
    let mut key = String::with_capacity(128);
    key.push_str(&call.method);
    key.push('\0');
    key.push_str(&call.name);
    key.push('\0');
    key.push_str(call.status.as_str());
    for d in &call.differences {
        key.push('\0');
        key.push_str(&d.path);
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

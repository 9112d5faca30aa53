//! The text report: for people, readable without colour.

use std::fmt::Write as _;

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::mcp::compare::{Difference, Status};
use crate::mcp::report::ReplayReport;

/// Strings longer than this (or holding a newline) are shown as a word or line diff.
const LONG_TEXT: usize = 60;

/// Each call that differs or was sent with followed ids, with its differences and notes, then the
/// summary line; ANSI colours only when `color`.
pub(super) fn render(report: &ReplayReport, color: bool) -> String {
    let paint = Paint(color);
    let mut out = String::with_capacity(4096);
    for call in report
        .calls
        .iter()
        // A same call is listed when it was sent with followed ids, or the server asked the client
        // otherwise than recorded: what happened is not the recording. One that was sent as
        // recorded (an unfilled field among them) has nothing to say.
        .filter(|c| c.status != Status::Same || !c.substitutions.is_empty() || !c.asks.is_empty())
    {
        paint.status(&mut out, call.status);
        out.push(' ');
        out.push_str(&call.method);
        out.push(' ');
        paint.bold(&mut out, &call.name);
        let _ = writeln!(
            out,
            "  (call {}, line {}, session {})",
            call.index, call.line, call.session
        );
        for d in &call.differences {
            write_difference(&mut out, d, paint);
        }
        for note in call.notes() {
            out.push_str("    ");
            out.push_str(&note);
            out.push('\n');
        }
    }
    if !out.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "{}", report.summary());
    out
}

pub(super) fn show_path(path: &str) -> &str {
    if path.is_empty() { "(answer)" } else { path }
}

pub(super) fn show_value(value: Option<&Value>) -> String {
    match value {
        None => "(absent)".into(),
        Some(v) => v.to_string(),
    }
}

pub(super) fn truncate(text: &str, max: usize) -> String {
    let (head, cut) = clip(text, max);
    if cut {
        format!("{head}…")
    } else {
        head.to_owned()
    }
}

/// `text` cut to at most `max` bytes on a character boundary, and whether it was cut.
fn clip(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// `value` as JSON (or `(absent)`), cut to 300 bytes, painted with `paint`; `scratch` is reused.
fn paint_value(
    out: &mut String,
    scratch: &mut String,
    value: Option<&Value>,
    paint: impl Fn(&mut String, &[&str]),
) {
    scratch.clear();
    match value {
        None => scratch.push_str("(absent)"),
        Some(Value::Number(n)) => {
            let _ = write!(scratch, "{n}");
        }
        Some(v) => {
            let _ = write!(scratch, "{v}");
        }
    }
    let (head, cut) = clip(scratch, 300);
    paint(out, &[head, if cut { "…" } else { "" }]);
}

pub(super) fn write_difference(out: &mut String, d: &Difference, paint: Paint) {
    if let (Some(Value::String(r)), Some(Value::String(p))) = (&d.recorded, &d.replayed)
        && (r.len() > LONG_TEXT || p.len() > LONG_TEXT || r.contains('\n') || p.contains('\n'))
    {
        out.push_str("    ");
        out.push_str(show_path(&d.path));
        out.push_str(":\n");
        if r.contains('\n') || p.contains('\n') {
            let diff = TextDiff::from_lines(r.as_str(), p.as_str());
            for change in diff.iter_all_changes() {
                let line = change.value().trim_end_matches('\n');
                match change.tag() {
                    ChangeTag::Equal => {
                        out.push_str("        ");
                        out.push_str(line);
                    }
                    ChangeTag::Delete => {
                        out.push_str("      ");
                        paint.removed(out, &["- ", line]);
                    }
                    ChangeTag::Insert => {
                        out.push_str("      ");
                        paint.added(out, &["+ ", line]);
                    }
                }
                out.push('\n');
            }
        } else {
            let diff = TextDiff::from_words(r.as_str(), p.as_str());
            out.push_str("      ");
            for change in diff.iter_all_changes() {
                let word = change.value();
                match change.tag() {
                    ChangeTag::Equal => out.push_str(word),
                    ChangeTag::Delete => paint.removed(out, &["[-", word, "-]"]),
                    ChangeTag::Insert => paint.added(out, &["{+", word, "+}"]),
                }
            }
            out.push('\n');
        }
        return;
    }
    let mut scratch = String::new();
    out.push_str("    ");
    out.push_str(show_path(&d.path));
    out.push_str(": ");
    paint_value(out, &mut scratch, d.recorded.as_ref(), |o, p| {
        paint.removed(o, p)
    });
    out.push_str(" → ");
    paint_value(out, &mut scratch, d.replayed.as_ref(), |o, p| {
        paint.added(o, p)
    });
    out.push('\n');
}

/// ANSI colour when wanted; plain text otherwise. Each method appends its pieces to `out`.
#[derive(Clone, Copy)]
pub(super) struct Paint(pub(super) bool);

impl Paint {
    fn wrap(self, out: &mut String, code: &str, pieces: &[&str]) {
        if self.0 {
            out.push_str("\x1b[");
            out.push_str(code);
            out.push('m');
        }
        for piece in pieces {
            out.push_str(piece);
        }
        if self.0 {
            out.push_str("\x1b[0m");
        }
    }

    /// The status, padded to the widest one so the methods line up.
    fn status(self, out: &mut String, status: Status) {
        let code = match status {
            Status::Same => "32",
            Status::Changed => "33",
            Status::NewError => "31",
            Status::GoneError => "36",
        };
        let text = status.as_str();
        let pad = &"          "[..10usize.saturating_sub(text.len())];
        self.wrap(out, code, &[text, pad]);
    }

    fn bold(self, out: &mut String, text: &str) {
        self.wrap(out, "1", &[text]);
    }

    fn removed(self, out: &mut String, pieces: &[&str]) {
        self.wrap(out, "31", pieces);
    }

    fn added(self, out: &mut String, pieces: &[&str]) {
        self.wrap(out, "32", pieces);
    }
}

//! The text report: for people, readable without colour. Every recorded string in it (a name, a
//! session id, a path, a value, a line of a diff, a note, an answer's summary) has its control
//! characters escaped, so that what a server or a client sent cannot drive the terminal the report
//! is read in.

use std::borrow::Cow;
use std::fmt::Write as _;

use calltape_recorder::terminal::{LineBreaks, escape_controls};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::mcp::compare::{Difference, Status, json_in_text};
use crate::mcp::report::group::{Group, Groups, Side, runs, thousands};
use crate::mcp::report::{CallReport, ReplayReport, TextOptions};

/// Strings longer than this (or holding a newline) are shown as a word or line diff.
pub(super) const LONG_TEXT: usize = 60;

/// Two texts more alike than this (similar's ratio, 0 to 1) show as a diff; less alike, whole.
const ALIKE: f32 = 0.5;

/// The most of an answer's summary a line shows.
const SUMMARY: usize = 160;

/// The ways a group of calls changed that the text report shows; JSON and HTML hold every one.
const EXAMPLES: usize = 3;

/// Each call that differs (once per group of calls that changed the same way) or was sent with
/// followed ids, with its differences and notes, then the summary lines; ANSI colours only when
/// `options.color`.
pub(super) fn render(report: &ReplayReport, options: TextOptions) -> String {
    let paint = Paint(options.color);
    let groups = Groups::find(&report.calls);
    let mut out = String::with_capacity(4096);
    let mut followed = 0;
    for (i, call) in report.calls.iter().enumerate() {
        if call.status == Status::Same {
            if call.only_followed() && !options.verbose {
                followed += 1;
                continue;
            }
            // A same call is listed when it was sent with followed ids, or the server asked the
            // client otherwise than recorded: what happened is not the recording. One sent as
            // recorded (an unfilled field among them) has nothing to say.
            if call.substitutions.is_empty() && call.asks.is_empty() {
                continue;
            }
        }
        match groups.of(i) {
            Some(group) if group.calls[0] == i => write_group(&mut out, report, group, paint),
            Some(_) => {}
            None => write_call(&mut out, call, paint),
        }
    }
    if followed > 0 {
        paint.status(&mut out, Status::Same);
        let _ = writeln!(
            out,
            " {} call{} sent with followed ids (-v lists {})",
            thousands(followed),
            if followed == 1 { "" } else { "s" },
            if followed == 1 { "it" } else { "them" }
        );
    }
    if !out.is_empty() {
        out.push('\n');
    }
    // Each change is listed with its list above; here, how many, each counted once.
    let surface = report.surface();
    if !surface.is_empty() {
        let _ = writeln!(out, "{surface}");
    }
    let _ = writeln!(out, "{}", report.summary());
    for line in &report.summary_lines {
        out.push_str(&shown(line));
        out.push('\n');
    }
    out
}

/// One call: its line, each difference, the other side's answer of an error that came or went, and
/// its notes.
fn write_call(out: &mut String, call: &CallReport, paint: Paint) {
    write_head(out, call, paint);
    let _ = writeln!(
        out,
        "  (call {}, line {}, session {})",
        call.index,
        call.line,
        shown(&call.session)
    );
    for d in &call.differences {
        write_difference(out, d, paint, "");
    }
    write_answer(out, call, "");
    for note in call.notes() {
        out.push_str("    ");
        out.push_str(&shown(&note));
        out.push('\n');
    }
}

/// Calls that changed at the same paths, once: the first call's line with the count, and each
/// difference with the number of calls it was found in; when they changed in more than one way,
/// each path's values (the one every call shares on a side, or how many), then the first few ways.
fn write_group(out: &mut String, report: &ReplayReport, group: &Group, paint: Paint) {
    let first = &report.calls[group.calls[0]];
    let n = thousands(group.calls.len());
    write_head(out, first, paint);
    let _ = writeln!(
        out,
        "  ({n} calls, the first: call {}, line {}, session {})",
        first.index,
        first.line,
        shown(&first.session)
    );
    let suffix = format!(" in {n} calls of {}", shown(first.label()));
    if group.alike() {
        for d in &first.differences {
            write_difference(out, d, paint, &suffix);
        }
    } else {
        write_ways(out, report, group, paint, &suffix);
    }
    // The answers may differ from call to call: the first call's stands for them.
    write_answer(out, first, &format!(" (call {})", first.index));
}

/// The values of calls that changed at the same paths in more than one way: each path with what
/// the calls hold there, then a line per way for the first [`EXAMPLES`] ways, with the values of
/// the paths where they vary (long texts as a diff, or whole, on lines of their own).
fn write_ways(out: &mut String, report: &ReplayReport, group: &Group, paint: Paint, suffix: &str) {
    let first = &report.calls[group.calls[0]];
    let mut scratch = String::new();
    // The paths whose values vary from way to way: the only ones each way's line shows.
    let mut varying = Vec::new();
    for (i, d) in first.differences.iter().enumerate() {
        let [recorded, replayed] = group.sides(&report.calls, i);
        if matches!(recorded, Side::Many(_)) || matches!(replayed, Side::Many(_)) {
            varying.push(i);
        }
        if d.item_change().is_some() {
            write_difference(out, d, paint, suffix);
            continue;
        }
        out.push_str("    ");
        out.push_str(&shown(show_path(&d.path)));
        out.push_str(": ");
        for (side, arrow) in [(recorded, ""), (replayed, " → ")] {
            out.push_str(arrow);
            match side {
                Side::One(value) => paint_value(out, &mut scratch, value, |o, p| match arrow {
                    "" => paint.removed(o, p),
                    _ => paint.added(o, p),
                }),
                Side::Many(n) => {
                    let _ = write!(out, "({} values)", thousands(n));
                }
            }
        }
        out.push_str(suffix);
        out.push('\n');
    }
    for variant in group.variants.iter().take(EXAMPLES) {
        let calls = runs(variant, |i| report.calls[i].index);
        let _ = write!(
            out,
            "      call{} {}:",
            if variant.len() == 1 { "" } else { "s" },
            truncate(&calls, LONG_TEXT)
        );
        let call = &report.calls[variant[0]];
        // Long texts read as a diff, or whole, on lines of their own under the calls.
        let long = varying.iter().any(|&i| {
            let d = &call.differences[i];
            matches!((&d.recorded, &d.replayed), (Some(Value::String(r)), Some(Value::String(p)))
                if !matches!(texts(r, p), Texts::Inline))
        });
        if long {
            out.push('\n');
            let mut lines = String::new();
            for &i in &varying {
                write_difference(&mut lines, &call.differences[i], paint, "");
            }
            for line in lines.lines() {
                let _ = writeln!(out, "    {line}");
            }
            continue;
        }
        for (n, d) in varying.iter().map(|&i| &call.differences[i]).enumerate() {
            out.push_str(if n == 0 { " " } else { ", " });
            if varying.len() > 1 {
                out.push_str(&shown(show_path(&d.path)));
                out.push_str(": ");
            }
            paint_values(out, &mut scratch, d, paint);
        }
        out.push('\n');
    }
    let more = group.variants.len().saturating_sub(EXAMPLES);
    if more > 0 {
        let _ = writeln!(
            out,
            "      and {} more way{} (the JSON and HTML reports show every call's values)",
            thousands(more),
            if more == 1 { "" } else { "s" }
        );
    }
}

fn write_head(out: &mut String, call: &CallReport, paint: Paint) {
    paint.status(out, call.status);
    out.push(' ');
    out.push_str(&shown(&call.method));
    // A list has no name of its own.
    if !call.name.is_empty() {
        out.push(' ');
        paint.bold(out, &shown(&call.name));
    }
}

/// For an error that came or went, what the other side answered, in short; `which` after the label.
pub(super) fn write_answer(out: &mut String, call: &CallReport, which: &str) {
    let label = match call.status {
        Status::NewError => "answered when recorded",
        Status::GoneError => "answers now",
        _ => return,
    };
    if let Some(answer) = &call.answer {
        let _ = writeln!(
            out,
            "    {label}{which}: {}",
            shown(&answer_summary(answer))
        );
    }
}

/// An answer in one short line: its texts (`content`, `contents`, a prompt's messages) joined, each
/// quoted or, when it holds JSON, as that JSON; else the answer's JSON; cut to [`SUMMARY`] bytes.
pub(super) fn answer_summary(answer: &Value) -> String {
    let mut texts = Vec::new();
    collect_texts(answer, &mut texts, SUMMARY);
    let line = if texts.is_empty() {
        answer.to_string()
    } else {
        texts
            .iter()
            .map(|t| json_in_text(t).unwrap_or_else(|| Value::String((*t).to_owned())))
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    truncate(&line, SUMMARY)
}

/// The strings at `text` keys of `value`, depth first, until they hold `budget` bytes.
fn collect_texts<'v>(value: &'v Value, texts: &mut Vec<&'v str>, budget: usize) {
    if texts.iter().map(|t| t.len()).sum::<usize>() >= budget {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::String(text)) = map.get("text") {
                texts.push(text);
            }
            for (key, v) in map {
                if key != "text" {
                    collect_texts(v, texts, budget);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_texts(v, texts, budget)),
        _ => {}
    }
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
    let shown = shown(scratch);
    let (head, cut) = clip(&shown, 300);
    paint(out, &[head, if cut { "…" } else { "" }]);
}

/// Both values of `d`, `recorded → replayed`, each as [`paint_value`] shows it.
fn paint_values(out: &mut String, scratch: &mut String, d: &Difference, paint: Paint) {
    paint_value(out, scratch, d.recorded.as_ref(), |o, p| {
        paint.removed(o, p)
    });
    out.push_str(" → ");
    paint_value(out, scratch, d.replayed.as_ref(), |o, p| paint.added(o, p));
}

/// How two strings of a difference are shown.
pub(super) enum Texts<'a> {
    /// Short, on one line: `"a" → "b"`.
    Inline,
    /// A diff of their lines (`lines`: either holds a newline) or words, when they share enough.
    Diff {
        diff: TextDiff<'a, 'a, 'a, str>,
        lines: bool,
    },
    /// Whole, one after the other: they share too little for a diff to read.
    Whole,
}

/// How the difference between `recorded` and `replayed` reads best.
pub(super) fn texts<'a>(recorded: &'a str, replayed: &'a str) -> Texts<'a> {
    let lines = recorded.contains('\n') || replayed.contains('\n');
    if !lines && recorded.len() <= LONG_TEXT && replayed.len() <= LONG_TEXT {
        return Texts::Inline;
    }
    let diff = if lines {
        TextDiff::from_lines(recorded, replayed)
    } else {
        TextDiff::from_words(recorded, replayed)
    };
    if diff.ratio() < ALIKE {
        Texts::Whole
    } else {
        Texts::Diff { diff, lines }
    }
}

/// One difference, indented, `suffix` after its path's line (`in 3 calls of quote`): an item
/// removed or added, two values on one line, or two long texts as a diff or whole.
pub(super) fn write_difference(out: &mut String, d: &Difference, paint: Paint, suffix: &str) {
    out.push_str("    ");
    out.push_str(&shown(show_path(&d.path)));
    if let Some(change) = d.item_change() {
        out.push_str(": ");
        match change {
            "removed" => paint.removed(out, &[change]),
            _ => paint.added(out, &[change]),
        }
        out.push_str(suffix);
        out.push('\n');
        return;
    }
    if let (Some(Value::String(r)), Some(Value::String(p))) = (&d.recorded, &d.replayed) {
        match texts(r, p) {
            Texts::Inline => {}
            Texts::Whole => {
                let _ = writeln!(out, "{}:", paren(suffix));
                for (text, sign) in [(r, "- "), (p, "+ ")] {
                    let lines: Vec<&str> = if text.is_empty() {
                        vec![""]
                    } else {
                        text.lines().collect()
                    };
                    for line in lines {
                        let line = shown(line);
                        let line = line.as_ref();
                        out.push_str("      ");
                        match sign {
                            "- " => paint.removed(out, &[sign, line]),
                            _ => paint.added(out, &[sign, line]),
                        }
                        out.push('\n');
                    }
                }
                return;
            }
            Texts::Diff { diff, lines } => {
                let _ = writeln!(out, "{}:", paren(suffix));
                write_text_diff(out, &diff, lines, paint);
                return;
            }
        }
    }
    out.push_str(": ");
    paint_values(out, &mut String::new(), d, paint);
    out.push_str(suffix);
    out.push('\n');
}

/// A recorded string on its line of the report, its control characters escaped.
fn shown(text: &str) -> Cow<'_, str> {
    escape_controls(text, LineBreaks::Escape)
}

/// ` (in 3 calls of quote)` for a suffix, nothing for none.
fn paren(suffix: &str) -> String {
    if suffix.is_empty() {
        String::new()
    } else {
        format!(" ({})", suffix.trim_start())
    }
}

fn write_text_diff<'a>(
    out: &mut String,
    diff: &TextDiff<'a, 'a, 'a, str>,
    lines: bool,
    paint: Paint,
) {
    if lines {
        for change in diff.iter_all_changes() {
            let line = shown(change.value().trim_end_matches('\n'));
            let line = line.as_ref();
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
        return;
    }
    out.push_str("      ");
    for change in diff.iter_all_changes() {
        let word = shown(change.value());
        let word = word.as_ref();
        match change.tag() {
            ChangeTag::Equal => out.push_str(word),
            ChangeTag::Delete => paint.removed(out, &["[-", word, "-]"]),
            ChangeTag::Insert => paint.added(out, &["{+", word, "+}"]),
        }
    }
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

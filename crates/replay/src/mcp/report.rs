//! The replay report: text (readable without colour), JSON and JUnit.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::mcp::compare::{Difference, Status};

/// The version of the JSON report's schema.
pub const REPORT_VERSION: u64 = 1;

/// Strings longer than this (or holding a newline) are shown as a word or line diff.
const LONG_TEXT: usize = 60;

/// One replayed call in a report.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallReport {
    /// The call's position in the recording, from 1.
    pub index: usize,
    /// Its line in the recording.
    pub line: usize,
    /// The recorded session it belongs to.
    pub session: String,
    /// The JSON-RPC method.
    pub method: String,
    /// The tool or prompt name, or the resource URI.
    pub name: String,
    /// The verdict.
    pub status: Status,
    /// Where the answers differ (redacted values only).
    pub differences: Vec<Difference>,
}

impl CallReport {
    /// A report line for one call.
    pub fn new(
        index: usize,
        line: usize,
        session: impl Into<String>,
        method: impl Into<String>,
        name: impl Into<String>,
        status: Status,
        differences: Vec<Difference>,
    ) -> Self {
        Self {
            index,
            line,
            session: session.into(),
            method: method.into(),
            name: name.into(),
            status,
            differences,
        }
    }
}

/// How many calls ended with each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// Calls answered as recorded.
    pub same: usize,
    /// Calls answered differently.
    pub changed: usize,
    /// Calls that error now and did not.
    pub new_error: usize,
    /// Calls that errored and answer now.
    pub gone_error: usize,
}

impl Summary {
    /// Every call counted.
    pub fn calls(&self) -> usize {
        self.same + self.changed + self.new_error + self.gone_error
    }

    fn count(&self, status: Status) -> usize {
        match status {
            Status::Same => self.same,
            Status::Changed => self.changed,
            Status::NewError => self.new_error,
            Status::GoneError => self.gone_error,
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.calls();
        write!(
            f,
            "{n} call{}, {} same, {} changed, {} new-error, {} gone-error",
            if n == 1 { "" } else { "s" },
            self.same,
            self.changed,
            self.new_error,
            self.gone_error
        )
    }
}

/// A report's output format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// For people: the calls that differ, then one summary line.
    #[default]
    Text,
    /// The JSON schema of version [`REPORT_VERSION`].
    Json,
    /// JUnit XML: one testcase per call, a failure per difference.
    Junit,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            "junit" => Ok(Self::Junit),
            other => Err(format!(
                "unknown report format {other:?}; use text, json or junit"
            )),
        }
    }
}

/// The outcome of replaying a recording: one [`CallReport`] per call, in recording order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReplayReport {
    /// The recording replayed.
    pub file: PathBuf,
    /// The calls, in recording order.
    pub calls: Vec<CallReport>,
}

impl ReplayReport {
    /// A report on `file` holding `calls`.
    pub fn new(file: impl Into<PathBuf>, calls: Vec<CallReport>) -> Self {
        Self {
            file: file.into(),
            calls,
        }
    }

    /// The counts per status.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for call in &self.calls {
            match call.status {
                Status::Same => s.same += 1,
                Status::Changed => s.changed += 1,
                Status::NewError => s.new_error += 1,
                Status::GoneError => s.gone_error += 1,
            }
        }
        s
    }

    /// Whether any call differs.
    pub fn has_differences(&self) -> bool {
        self.calls.iter().any(|c| c.status != Status::Same)
    }

    /// The report in `format`; `color` applies to text only.
    pub fn render(&self, format: Format, color: bool) -> String {
        match format {
            Format::Text => self.to_text(color),
            Format::Json => {
                // Serialised straight from the report, without building a `Value` tree first.
                let differences: usize = self.calls.iter().map(|c| c.differences.len()).sum();
                let mut bytes = Vec::with_capacity(256 + self.calls.len() * 160 + differences * 96);
                let mut serializer =
                    serde_json::Serializer::with_formatter(&mut bytes, LinesFormatter::default());
                let _ = JsonReport(self).serialize(&mut serializer);
                bytes.push(b'\n');
                String::from_utf8(bytes).unwrap_or_default()
            }
            Format::Junit => self.to_junit(),
        }
    }

    /// The text report: each call that differs with its differences, then the summary line. ANSI
    /// colours only when `color`; the text reads the same without them.
    pub fn to_text(&self, color: bool) -> String {
        let paint = Paint(color);
        let mut out = String::with_capacity(4096);
        for call in self.calls.iter().filter(|c| c.status != Status::Same) {
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
        }
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(out, "{}", self.summary());
        out
    }

    /// The JSON report: `{"version":1,"file":…,"calls":N,"summary":{…},"results":[…]}`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(JsonReport(self)).unwrap_or(Value::Null)
    }

    /// The JUnit XML report: one testcase per call, one failure per difference.
    pub fn to_junit(&self) -> String {
        let failing = self
            .calls
            .iter()
            .filter(|c| c.status != Status::Same)
            .count();
        let file = xml(&self.file.display().to_string());
        let mut out = String::with_capacity(256 + self.calls.len() * 160);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites name=\"calltape replay\" tests=\"{}\" failures=\"{failing}\" errors=\"0\">",
            self.calls.len()
        );
        let _ = writeln!(
            out,
            "  <testsuite name=\"{file}\" tests=\"{}\" failures=\"{failing}\" errors=\"0\" skipped=\"0\">",
            self.calls.len()
        );
        let mut body = String::new();
        for c in &self.calls {
            out.push_str("    <testcase classname=\"");
            push_xml(&mut out, &c.method);
            let _ = write!(out, "\" name=\"#{} ", c.index);
            push_xml(&mut out, &c.name);
            let _ = write!(out, " (line {}, session ", c.line);
            push_xml(&mut out, &c.session);
            let _ = write!(out, ")\" file=\"{file}\" line=\"{}\">", c.line);
            if c.status == Status::Same {
                out.push_str("</testcase>\n");
                continue;
            }
            out.push('\n');
            for d in &c.differences {
                let message = format!(
                    "{}: {}: {} → {}",
                    c.status,
                    show_path(&d.path),
                    show_value(d.recorded.as_ref()),
                    show_value(d.replayed.as_ref())
                );
                body.clear();
                write_difference(&mut body, d, Paint(false));
                let _ = write!(out, "      <failure type=\"{}\" message=\"", c.status);
                push_xml(&mut out, &truncate(&message, 500));
                out.push_str("\">");
                push_xml(&mut out, body.trim_end());
                out.push_str("</failure>\n");
            }
            out.push_str("    </testcase>\n");
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

fn show_path(path: &str) -> &str {
    if path.is_empty() { "(answer)" } else { path }
}

fn show_value(value: Option<&Value>) -> String {
    match value {
        None => "(absent)".into(),
        Some(v) => v.to_string(),
    }
}

fn truncate(text: &str, max: usize) -> String {
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

fn write_difference(out: &mut String, d: &Difference, paint: Paint) {
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
struct Paint(bool);

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

/// Pretty JSON down to the list of results, then one result per line: a report of 10,000 calls stays
/// readable, greppable and small.
#[derive(Default)]
struct LinesFormatter {
    depth: usize,
    /// Whether the container being written holds anything yet.
    has_value: bool,
}

impl LinesFormatter {
    /// Containers opened at this depth or deeper are written compactly.
    const FLAT: usize = 2;

    fn newline<W: ?Sized + std::io::Write>(&self, writer: &mut W) -> std::io::Result<()> {
        writer.write_all(b"\n")?;
        for _ in 0..self.depth {
            writer.write_all(b"  ")?;
        }
        Ok(())
    }

    fn open<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        bracket: &[u8],
    ) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    fn close<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        bracket: &[u8],
    ) -> std::io::Result<()> {
        self.depth -= 1;
        if self.depth < Self::FLAT && self.has_value {
            self.newline(writer)?;
        }
        self.has_value = true;
        writer.write_all(bracket)
    }

    fn item<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.has_value = true;
        if !first {
            writer.write_all(b",")?;
        }
        if self.depth <= Self::FLAT {
            self.newline(writer)?;
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for LinesFormatter {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.open(writer, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.close(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(writer, first)
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.open(writer, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.close(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(writer, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(if self.depth <= Self::FLAT {
            b": "
        } else {
            b":"
        })
    }
}

/// The JSON report's shape, serialised from the report as it stands.
struct JsonReport<'a>(&'a ReplayReport);

impl Serialize for JsonReport<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let report = self.0;
        let summary = report.summary();
        let mut map = serializer.serialize_map(Some(5))?;
        map.serialize_entry("version", &REPORT_VERSION)?;
        map.serialize_entry("file", &report.file.display().to_string())?;
        map.serialize_entry("calls", &report.calls.len())?;
        map.serialize_entry("summary", &JsonSummary(summary))?;
        map.serialize_entry("results", &JsonResults(&report.calls))?;
        map.end()
    }
}

struct JsonSummary(Summary);

impl Serialize for JsonSummary {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(Status::ALL.len()))?;
        for status in Status::ALL {
            map.serialize_entry(status.as_str(), &self.0.count(status))?;
        }
        map.end()
    }
}

struct JsonResults<'a>(&'a [CallReport]);

impl Serialize for JsonResults<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(JsonCall))
    }
}

struct JsonCall<'a>(&'a CallReport);

impl Serialize for JsonCall<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut map = serializer.serialize_map(Some(7))?;
        map.serialize_entry("index", &c.index)?;
        map.serialize_entry("line", &c.line)?;
        map.serialize_entry("session", &c.session)?;
        map.serialize_entry("method", &c.method)?;
        map.serialize_entry("name", &c.name)?;
        map.serialize_entry("status", c.status.as_str())?;
        map.serialize_entry("differences", &JsonDifferences(&c.differences))?;
        map.end()
    }
}

struct JsonDifferences<'a>(&'a [Difference]);

impl Serialize for JsonDifferences<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(JsonDifference))
    }
}

struct JsonDifference<'a>(&'a Difference);

impl Serialize for JsonDifference<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let d = self.0;
        let fields = 1 + usize::from(d.recorded.is_some()) + usize::from(d.replayed.is_some());
        let mut map = serializer.serialize_map(Some(fields))?;
        map.serialize_entry("path", &d.path)?;
        if let Some(r) = &d.recorded {
            map.serialize_entry("recorded", r)?;
        }
        if let Some(p) = &d.replayed {
            map.serialize_entry("replayed", p)?;
        }
        map.end()
    }
}

/// Escapes text for XML, dropping the control characters XML 1.0 cannot hold.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_xml(&mut out, text);
    out
}

/// Appends `text` to `out`, escaped for XML: runs of plain text are copied whole.
fn push_xml(out: &mut String, text: &str) {
    let mut plain = 0;
    for (at, c) in text.char_indices() {
        let escaped = match c {
            '&' => "&amp;",
            '<' => "&lt;",
            '>' => "&gt;",
            '"' => "&quot;",
            '\'' => "&apos;",
            '\t' | '\n' | '\r' => continue,
            c if (c as u32) < 0x20 => "\u{FFFD}",
            _ => continue,
        };
        out.push_str(&text[plain..at]);
        out.push_str(escaped);
        plain = at + c.len_utf8();
    }
    out.push_str(&text[plain..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn diff(path: &str, recorded: Option<Value>, replayed: Option<Value>) -> Difference {
        Difference {
            path: path.into(),
            recorded,
            replayed,
        }
    }

    fn sample() -> ReplayReport {
        ReplayReport::new(
            "calls.jsonl",
            vec![
                CallReport::new(
                    1,
                    1,
                    "3f9a1c2e",
                    "tools/call",
                    "quote",
                    Status::Changed,
                    vec![diff(
                        "structuredContent.price",
                        Some(json!(12)),
                        Some(json!(15)),
                    )],
                ),
                CallReport::new(
                    2,
                    2,
                    "3f9a1c2e",
                    "tools/call",
                    "pay",
                    Status::NewError,
                    vec![diff(
                        "error",
                        None,
                        Some(json!({"code": "card_declined", "message": "card <declined>"})),
                    )],
                ),
                CallReport::new(
                    3,
                    3,
                    "3f9a1c2e",
                    "tools/call",
                    "refund",
                    Status::GoneError,
                    vec![diff(
                        "error",
                        Some(json!({"code": "tool_error", "message": "no"})),
                        None,
                    )],
                ),
                CallReport::new(
                    4,
                    5,
                    "77aa0b1c",
                    "resources/read",
                    "demo://rates",
                    Status::Same,
                    vec![],
                ),
            ],
        )
    }

    #[test]
    fn text_report_lists_differing_calls_and_a_summary() {
        let text = sample().to_text(false);
        let want = r#"changed    tools/call quote  (call 1, line 1, session 3f9a1c2e)
    structuredContent.price: 12 → 15
new-error  tools/call pay  (call 2, line 2, session 3f9a1c2e)
    error: (absent) → {"code":"card_declined","message":"card <declined>"}
gone-error tools/call refund  (call 3, line 3, session 3f9a1c2e)
    error: {"code":"tool_error","message":"no"} → (absent)

4 calls, 1 same, 1 changed, 1 new-error, 1 gone-error
"#;
        assert_eq!(text, want);
        let colored = sample().to_text(true);
        assert!(colored.contains("\x1b[33mchanged   \x1b[0m"), "{colored}");
        let same = ReplayReport::new("c", vec![]).to_text(false);
        assert_eq!(
            same,
            "0 calls, 0 same, 0 changed, 0 new-error, 0 gone-error\n"
        );
    }

    #[test]
    fn long_texts_show_as_word_and_line_diffs() {
        let r = "The quick brown fox jumps over the lazy dog and keeps running far away";
        let p = "The quick red fox jumps over the lazy dog and keeps running far away";
        let report = ReplayReport::new(
            "c",
            vec![CallReport::new(
                1,
                1,
                "s",
                "prompts/get",
                "p",
                Status::Changed,
                vec![
                    diff("messages.0.content.text", Some(json!(r)), Some(json!(p))),
                    diff(
                        "contents.0.text",
                        Some(json!("a\nb\nc")),
                        Some(json!("a\nB\nc")),
                    ),
                ],
            )],
        );
        let text = report.to_text(false);
        assert!(
            text.contains(
                "    messages.0.content.text:\n      The quick [-brown-]{+red+} fox jumps"
            ),
            "{text}"
        );
        assert!(
            text.contains("    contents.0.text:\n        a\n      - b\n      + B\n        c\n"),
            "{text}"
        );
    }

    #[test]
    fn json_report_follows_the_schema() {
        let value = sample().to_json();
        assert_eq!(value["version"], 1);
        assert_eq!(value["file"], "calls.jsonl");
        assert_eq!(value["calls"], 4);
        assert_eq!(
            value["summary"],
            json!({"same": 1, "changed": 1, "new-error": 1, "gone-error": 1})
        );
        assert_eq!(
            value["results"][0],
            json!({"index": 1, "line": 1, "session": "3f9a1c2e", "method": "tools/call", "name": "quote",
                   "status": "changed", "differences": [{"path": "structuredContent.price", "recorded": 12, "replayed": 15}]})
        );
        assert_eq!(
            value["results"][1]["differences"][0],
            json!({"path": "error", "replayed": {"code": "card_declined", "message": "card <declined>"}})
        );
        assert_eq!(value["results"][3]["differences"], json!([]));
        let rendered = sample().render(Format::Json, false);
        assert!(rendered.ends_with("}\n"), "{rendered}");
        assert_eq!(serde_json::from_str::<Value>(&rendered).unwrap(), value);
    }

    #[test]
    fn junit_has_a_testcase_per_call_and_a_failure_per_difference() {
        let xml = sample().to_junit();
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"calltape replay\" tests=\"4\" failures=\"3\" errors=\"0\">"));
        assert_eq!(xml.matches("<testcase ").count(), 4);
        assert_eq!(xml.matches("<failure ").count(), 3);
        assert!(xml.contains(r#"<failure type="changed" message="changed: structuredContent.price: 12 → 15">    structuredContent.price: 12 → 15</failure>"#), "{xml}");
        assert!(xml.contains("card &lt;declined&gt;"));
        assert!(xml.contains(r##"<testcase classname="resources/read" name="#4 demo://rates (line 5, session 77aa0b1c)" file="calls.jsonl" line="5"></testcase>"##), "{xml}");
    }

    #[test]
    fn xml_escapes_markup_and_drops_control_characters() {
        assert_eq!(
            xml("a<b>&\"c\" 'd'\u{1}\té"),
            "a&lt;b&gt;&amp;&quot;c&quot; &apos;d&apos;\u{FFFD}\té"
        );
        assert_eq!(xml("plain"), "plain");
    }

    #[test]
    fn formats_parse() {
        assert_eq!("junit".parse::<Format>(), Ok(Format::Junit));
        assert_eq!(
            "xml".parse::<Format>(),
            Err("unknown report format \"xml\"; use text, json or junit".to_owned())
        );
    }
}

//! The replay report: text (readable without colour), JSON and JUnit.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;

use serde_json::{Map, Value, json};
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
                let mut text = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
                text.push('\n');
                text
            }
            Format::Junit => self.to_junit(),
        }
    }

    /// The text report: each call that differs with its differences, then the summary line. ANSI
    /// colours only when `color`; the text reads the same without them.
    pub fn to_text(&self, color: bool) -> String {
        let paint = Paint(color);
        let mut out = String::new();
        for call in self.calls.iter().filter(|c| c.status != Status::Same) {
            let status = format!("{:<10}", call.status.as_str());
            let _ = writeln!(
                out,
                "{} {} {}  (call {}, line {}, session {})",
                paint.status(call.status, &status),
                call.method,
                paint.bold(&call.name),
                call.index,
                call.line,
                call.session
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
        let summary = self.summary();
        let mut counts = Map::new();
        for status in Status::ALL {
            counts.insert(status.as_str().into(), json!(summary.count(status)));
        }
        let results: Vec<Value> = self
            .calls
            .iter()
            .map(|c| {
                let differences: Vec<Value> = c
                    .differences
                    .iter()
                    .map(|d| {
                        let mut m = Map::new();
                        m.insert("path".into(), Value::String(d.path.clone()));
                        if let Some(r) = &d.recorded {
                            m.insert("recorded".into(), r.clone());
                        }
                        if let Some(p) = &d.replayed {
                            m.insert("replayed".into(), p.clone());
                        }
                        Value::Object(m)
                    })
                    .collect();
                json!({
                    "index": c.index,
                    "line": c.line,
                    "session": c.session,
                    "method": c.method,
                    "name": c.name,
                    "status": c.status.as_str(),
                    "differences": differences,
                })
            })
            .collect();
        json!({
            "version": REPORT_VERSION,
            "file": self.file.display().to_string(),
            "calls": self.calls.len(),
            "summary": counts,
            "results": results,
        })
    }

    /// The JUnit XML report: one testcase per call, one failure per difference.
    pub fn to_junit(&self) -> String {
        let failing = self
            .calls
            .iter()
            .filter(|c| c.status != Status::Same)
            .count();
        let file = xml(&self.file.display().to_string());
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
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
        for c in &self.calls {
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" file=\"{file}\" line=\"{}\">",
                xml(&c.method),
                xml(&format!(
                    "#{} {} (line {}, session {})",
                    c.index, c.name, c.line, c.session
                )),
                c.line
            );
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
                let mut body = String::new();
                write_difference(&mut body, d, Paint(false));
                let _ = writeln!(
                    out,
                    "      <failure type=\"{}\" message=\"{}\">{}</failure>",
                    c.status,
                    xml(&truncate(&message, 500)),
                    xml(body.trim_end())
                );
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
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn write_difference(out: &mut String, d: &Difference, paint: Paint) {
    if let (Some(Value::String(r)), Some(Value::String(p))) = (&d.recorded, &d.replayed)
        && (r.len() > LONG_TEXT || p.len() > LONG_TEXT || r.contains('\n') || p.contains('\n'))
    {
        let _ = writeln!(out, "    {}:", show_path(&d.path));
        if r.contains('\n') || p.contains('\n') {
            let diff = TextDiff::from_lines(r.as_str(), p.as_str());
            for change in diff.iter_all_changes() {
                let line = change.value().trim_end_matches('\n');
                let _ = match change.tag() {
                    ChangeTag::Equal => writeln!(out, "        {line}"),
                    ChangeTag::Delete => {
                        writeln!(out, "      {}", paint.removed(&format!("- {line}")))
                    }
                    ChangeTag::Insert => {
                        writeln!(out, "      {}", paint.added(&format!("+ {line}")))
                    }
                };
            }
        } else {
            let diff = TextDiff::from_words(r.as_str(), p.as_str());
            out.push_str("      ");
            for change in diff.iter_all_changes() {
                let word = change.value();
                match change.tag() {
                    ChangeTag::Equal => out.push_str(word),
                    ChangeTag::Delete => out.push_str(&paint.removed(&format!("[-{word}-]"))),
                    ChangeTag::Insert => out.push_str(&paint.added(&format!("{{+{word}+}}"))),
                }
            }
            out.push('\n');
        }
        return;
    }
    let _ = writeln!(
        out,
        "    {}: {} → {}",
        show_path(&d.path),
        paint.removed(&truncate(&show_value(d.recorded.as_ref()), 300)),
        paint.added(&truncate(&show_value(d.replayed.as_ref()), 300))
    );
}

/// ANSI colour when wanted; plain text otherwise.
#[derive(Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn status(self, status: Status, text: &str) -> String {
        let code = match status {
            Status::Same => "32",
            Status::Changed => "33",
            Status::NewError => "31",
            Status::GoneError => "36",
        };
        self.wrap(code, text)
    }

    fn bold(self, text: &str) -> String {
        self.wrap("1", text)
    }

    fn removed(self, text: &str) -> String {
        self.wrap("31", text)
    }

    fn added(self, text: &str) -> String {
        self.wrap("32", text)
    }
}

/// Escapes text for XML, dropping the control characters XML 1.0 cannot hold.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn formats_parse() {
        assert_eq!("junit".parse::<Format>(), Ok(Format::Junit));
        assert_eq!(
            "xml".parse::<Format>(),
            Err("unknown report format \"xml\"; use text, json or junit".to_owned())
        );
    }
}

//! The replay report: one [`CallReport`] per call, rendered as text (readable without colour), JSON,
//! JUnit or a self-contained HTML page, each format in a module of its own.
//!
//! Every format names a difference by the same path (`tools[echo].description`), says `removed` or
//! `added` for a whole list item, shows the other side's answer beside an error that came or went,
//! and lists each call's notes. Text and HTML show calls that changed at the same paths once, as a
//! group (`price: 12 → 15 in 10,000 calls of quote`, or `price: 12 → (10,000 values)` with the first
//! few ways in text and every call's values in HTML); JSON and JUnit keep one entry per call.
//!
//! Most of this file is its tests: they render the same reports in every format, side by side.

mod group;
mod html;
mod json;
mod junit;
mod text;

use std::path::PathBuf;
use std::str::FromStr;

use serde_json::Value;

use crate::ReportContext;
use crate::mcp::asks::AskNote;
use crate::mcp::compare::{Difference, Status};
use crate::mcp::follow::Substitution;
use crate::mcp::surface::SurfaceChange;

/// The version of the JSON report's schema.
pub const REPORT_VERSION: u64 = 1;

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
    /// The strings of the input sent with another value than recorded, because an earlier call
    /// created them anew.
    pub substitutions: Vec<Substitution>,
    /// The fields whose recorded `"[REDACTED]"` no fill gave a value for, so it was sent as recorded.
    pub unfilled: Vec<String>,
    /// Other notes on the call, one line each, after the substitutions and unfilled fields.
    pub remarks: Vec<String>,
    /// The answer of the side that did not fail: the recorded answer of a new-error, the replayed
    /// answer of a gone-error.
    pub answer: Option<Value>,
    /// For a list (`tools/list` and its kin), each change of the server's surface, classified.
    pub surface: Vec<SurfaceChange>,
    /// What is worth saying about the server's requests to the client during the call (a request
    /// nothing recorded answered is a difference `asks.N` instead).
    pub asks: Vec<AskNote>,
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
            substitutions: Vec::new(),
            unfilled: Vec::new(),
            remarks: Vec::new(),
            answer: None,
            surface: Vec::new(),
            asks: Vec::new(),
        }
    }

    /// With the answer of the side that did not fail (see [`answer`](Self::answer)).
    pub fn with_answer(mut self, answer: Option<Value>) -> Self {
        self.answer = answer;
        self
    }

    /// With one more note, a line of its own.
    pub fn with_remark(mut self, remark: impl Into<String>) -> Self {
        self.remarks.push(remark.into());
        self
    }

    /// With these substitutions made in the call's input.
    pub fn with_substitutions(mut self, substitutions: Vec<Substitution>) -> Self {
        self.substitutions = substitutions;
        self
    }

    /// With these fields left unfilled in the call's input.
    pub fn with_unfilled(mut self, unfilled: Vec<String>) -> Self {
        self.unfilled = unfilled;
        self
    }

    /// With these surface changes found in the call's list.
    pub fn with_surface(mut self, surface: Vec<SurfaceChange>) -> Self {
        self.surface = surface;
        self
    }

    /// With these notes on what the server asked the client.
    pub fn with_asks(mut self, asks: Vec<AskNote>) -> Self {
        self.asks = asks;
        self
    }

    /// Whether the call carries notes: substitutions, unfilled fields, surface changes, notes on
    /// the asks or remarks.
    pub fn has_notes(&self) -> bool {
        !self.substitutions.is_empty()
            || !self.unfilled.is_empty()
            || !self.surface.is_empty()
            || !self.asks.is_empty()
            || !self.remarks.is_empty()
    }

    /// The notes as reports write them, one per line: each substitution, then `unfilled: NAME, …`,
    /// then each surface change (`breaking: tools[add] removed`), then each note on the asks, then
    /// each remark.
    pub fn notes(&self) -> impl Iterator<Item = String> + '_ {
        let unfilled =
            (!self.unfilled.is_empty()).then(|| format!("unfilled: {}", self.unfilled.join(", ")));
        self.substitutions
            .iter()
            .map(ToString::to_string)
            .chain(unfilled)
            .chain(self.surface.iter().map(ToString::to_string))
            .chain(self.asks.iter().map(ToString::to_string))
            .chain(self.remarks.iter().cloned())
    }

    /// Whether the call's only notes are substitutions, on a call that is the same: the text
    /// report counts such calls on one line rather than listing each.
    fn only_followed(&self) -> bool {
        self.status == Status::Same
            && !self.substitutions.is_empty()
            && self.unfilled.is_empty()
            && self.surface.is_empty()
            && self.asks.is_empty()
            && self.remarks.is_empty()
    }

    /// The tool or prompt name, or the URI; the method for a call without one (a list).
    fn label(&self) -> &str {
        if self.name.is_empty() {
            &self.method
        } else {
            &self.name
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
    /// JUnit XML: one testcase per call, a failure per call that differs.
    Junit,
    /// One self-contained HTML page: counts, a row per call, the differences side by side.
    Html,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            "junit" => Ok(Self::Junit),
            "html" => Ok(Self::Html),
            other => Err(format!(
                "unknown report format {other:?}; use text, json, junit or html"
            )),
        }
    }
}

/// How the text report is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TextOptions {
    /// ANSI colours; the text reads the same without them.
    pub color: bool,
    /// Lists each same call sent with followed ids, rather than counting them on one line.
    pub verbose: bool,
}

impl TextOptions {
    /// Plain text, same calls sent with followed ids counted on one line.
    pub fn new() -> Self {
        Self::default()
    }

    /// With ANSI colours or without.
    pub fn color(mut self, color: bool) -> Self {
        self.color = color;
        self
    }

    /// Listing each same call sent with followed ids, or counting them.
    pub fn verbose(mut self, verbose: bool) -> Self {
        self.verbose = verbose;
        self
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
    /// Lines that sum up the run beside the counts per status, in order: after the counts in text,
    /// under them in HTML, `summaryLines` in JSON.
    pub summary_lines: Vec<String>,
}

impl ReplayReport {
    /// A report on `file` holding `calls`.
    pub fn new(file: impl Into<PathBuf>, calls: Vec<CallReport>) -> Self {
        Self {
            file: file.into(),
            calls,
            summary_lines: Vec::new(),
        }
    }

    /// With one more summary line (see [`summary_lines`](Self::summary_lines)).
    pub fn with_summary_line(mut self, line: impl Into<String>) -> Self {
        self.summary_lines.push(line.into());
        self
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

    /// The report in `format`; `color` applies to text only. An HTML page made here knows only what
    /// the report holds: [`to_html`](Self::to_html) adds the server, date and options.
    pub fn render(&self, format: Format, color: bool) -> String {
        match format {
            Format::Text => self.to_text_with(TextOptions::new().color(color)),
            Format::Json => json::render(self),
            Format::Junit => self.to_junit(),
            Format::Html => self.to_html(&ReportContext::default()),
        }
    }

    /// The text report: each call that differs, with its differences and notes (substitutions,
    /// unfilled fields), calls that changed the same way once as a group, the count of same calls
    /// sent with followed ids, then the summary lines. ANSI colours only when `color`; the text
    /// reads the same without them.
    pub fn to_text(&self, color: bool) -> String {
        self.to_text_with(TextOptions::new().color(color))
    }

    /// [`to_text`](Self::to_text) with `options`: with [`verbose`](TextOptions::verbose), each same
    /// call sent with followed ids is listed with its substitutions.
    pub fn to_text_with(&self, options: TextOptions) -> String {
        text::render(self, options)
    }

    /// The JSON report: `{"version":1,"file":…,"calls":N,"summary":{…},"results":[…]}`.
    pub fn to_json(&self) -> Value {
        json::to_value(self)
    }

    /// The JUnit XML report: one testcase per call, one failure per call that differs, naming every
    /// path that does.
    pub fn to_junit(&self) -> String {
        junit::render(self)
    }

    /// The HTML report: one self-contained page (inline style, no fetch of any kind, readable with
    /// JavaScript off) with the counts, a row per call (or per group of calls that changed at the
    /// same paths), and each differing call expanded with the recorded and replayed values side by
    /// side. Every value is HTML-escaped; `context` adds what
    /// the report does not hold (server, date, ignore globs, filled field names).
    pub fn to_html(&self, context: &ReportContext) -> String {
        html::render(self, context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn diff(path: &str, recorded: Option<Value>, replayed: Option<Value>) -> Difference {
        Difference::new(path, recorded, replayed)
    }

    /// Call `i` of session `session`, a quote whose price went from 12 to 15.
    pub(super) fn quote(i: usize, session: &str) -> CallReport {
        CallReport::new(
            i,
            i,
            session,
            "tools/call",
            "quote",
            Status::Changed,
            vec![diff(
                "structuredContent.price",
                Some(json!(12)),
                Some(json!(15)),
            )],
        )
    }

    fn sample() -> ReplayReport {
        ReplayReport::new(
            "calls.jsonl",
            vec![
                quote(1, "3f9a1c2e"),
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
    fn junit_has_a_testcase_per_call_and_a_failure_per_call_naming_every_path() {
        let mut report = sample();
        report.calls[0].differences.push(Difference {
            item: true,
            ..diff("tools[add]", Some(json!({"name": "add"})), None)
        });
        let xml = report.to_junit();
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"calltape replay\" tests=\"4\" failures=\"3\" errors=\"0\">"));
        assert_eq!(xml.matches("<testcase ").count(), 4);
        assert_eq!(xml.matches("<failure ").count(), 3);
        assert!(xml.contains("<failure type=\"changed\" message=\"changed: structuredContent.price, tools[add] removed\">    structuredContent.price: 12 → 15\n    tools[add]: removed</failure>"), "{xml}");
        assert!(xml.contains("card &lt;declined&gt;"));
        assert!(xml.contains(r##"<testcase classname="resources/read" name="#4 demo://rates (line 5, session 77aa0b1c)" file="calls.jsonl" line="5"></testcase>"##), "{xml}");
    }

    #[test]
    fn substitutions_and_unfilled_fields_are_noted_in_every_format() {
        let substitution = Substitution {
            path: "input.paymentId".into(),
            recorded: "pay_1001".into(),
            replayed: "pay_2002".into(),
            from_call: 1,
            from_path: "structuredContent.paymentId".into(),
        };
        let report = ReplayReport::new(
            "calls.jsonl",
            vec![
                CallReport::new(
                    1,
                    1,
                    "s",
                    "tools/call",
                    "pay",
                    Status::NewError,
                    vec![diff("error", None, Some(json!({"code": "tool_error"})))],
                )
                .with_unfilled(vec!["cardToken".into()]),
                CallReport::new(2, 2, "s", "tools/call", "refund", Status::Same, vec![])
                    .with_substitutions(vec![substitution]),
                CallReport::new(3, 3, "s", "tools/call", "ping", Status::Same, vec![])
                    .with_unfilled(vec!["apiKey".into()]),
            ],
        );
        let note =
            "input.paymentId: pay_1001 → pay_2002 (from call 1, structuredContent.paymentId)";
        let head = "new-error  tools/call pay  (call 1, line 1, session s)\n    error: (absent) → {\"code\":\"tool_error\"}\n    unfilled: cardToken\n";
        let tail = "\n3 calls, 2 same, 0 changed, 1 new-error, 0 gone-error\n";
        // A same call whose only note is a substitution is counted; -v lists it.
        assert_eq!(
            report.to_text(false),
            format!("{head}same       1 call sent with followed ids (-v lists it)\n{tail}")
        );
        assert_eq!(
            report.to_text_with(TextOptions::new().verbose(true)),
            format!(
                "{head}same       tools/call refund  (call 2, line 2, session s)\n    {note}\n{tail}"
            )
        );
        let value = report.to_json();
        assert_eq!(value["results"][0]["unfilled"], json!(["cardToken"]));
        assert_eq!(
            value["results"][1]["substitutions"],
            json!([{"path": "input.paymentId", "recorded": "pay_1001", "replayed": "pay_2002",
                    "fromCall": 1, "fromPath": "structuredContent.paymentId", "note": note}])
        );
        assert_eq!(value["results"][2]["unfilled"], json!(["apiKey"]));
        assert!(value["results"][1].get("unfilled").is_none());
        let xml = report.to_junit();
        assert!(xml.contains("\n    unfilled: cardToken</failure>\n      <system-out>unfilled: cardToken</system-out>"), "{xml}");
        assert!(
            xml.contains(&format!("<system-out>{note}</system-out>")),
            "{xml}"
        );
        assert!(
            xml.contains("<system-out>unfilled: apiKey</system-out>"),
            "{xml}"
        );
        assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
    }

    /// Ten calls of `quote` that changed alike, one that changed otherwise, a tool list that lost
    /// and gained tools, an error gone and one come, with the other side's answer.
    pub(super) fn drift() -> ReplayReport {
        let mut calls: Vec<CallReport> = (1..=10).map(|i| quote(i, "s")).collect();
        calls[4].differences[0].replayed = Some(json!(16));
        let item = |path: &str, recorded: Option<Value>, replayed: Option<Value>| Difference {
            item: true,
            ..diff(path, recorded, replayed)
        };
        calls.push(CallReport::new(
            11,
            11,
            "s",
            "tools/list",
            "",
            Status::Changed,
            vec![
                item("tools[add]", Some(json!({"name": "add"})), None),
                item("tools[get-sum]", None, Some(json!({"name": "get-sum"}))),
                diff(
                    "tools[echo].description",
                    Some(json!("Echoes back the input")),
                    Some(json!("Echoes back the input string")),
                ),
                diff(
                    "tools[zip].description",
                    Some(json!(
                        "Compresses the files it is given into one zip archive in memory"
                    )),
                    Some(json!(
                        "Returns a resource reference that can be used by MCP clients today"
                    )),
                ),
            ],
        ));
        let sum = json!({"content": [{"type": "text", "text": "The sum of 2 and 40 is 42."}]});
        calls.push(
            CallReport::new(
                12,
                12,
                "s",
                "tools/call",
                "get-sum",
                Status::GoneError,
                vec![diff(
                    "error",
                    Some(json!({"code": -32603, "message": "Unknown tool: get-sum"})),
                    None,
                )],
            )
            .with_answer(Some(sum.clone())),
        );
        calls.push(
            CallReport::new(
                13,
                13,
                "s",
                "tools/call",
                "add",
                Status::NewError,
                vec![diff(
                    "error",
                    None,
                    Some(json!({"code": "tool_error", "message": "Tool add not found"})),
                )],
            )
            .with_answer(Some(sum)),
        );
        ReplayReport::new("calls.jsonl", calls)
            .with_summary_line("surface: 1 breaking, 1 compatible")
    }

    #[test]
    fn text_groups_calls_that_changed_alike_and_shows_both_sides() {
        let text = drift().to_text(false);
        let want = r#"changed    tools/call quote  (10 calls, the first: call 1, line 1, session s)
    structuredContent.price: 12 → (2 values) in 10 calls of quote
      calls 1–4, 6–10: 12 → 15
      call 5: 12 → 16
changed    tools/list  (call 11, line 11, session s)
    tools[add]: removed
    tools[get-sum]: added
    tools[echo].description: "Echoes back the input" → "Echoes back the input string"
    tools[zip].description:
      - Compresses the files it is given into one zip archive in memory
      + Returns a resource reference that can be used by MCP clients today
gone-error tools/call get-sum  (call 12, line 12, session s)
    error: {"code":-32603,"message":"Unknown tool: get-sum"} → (absent)
    answers now: "The sum of 2 and 40 is 42."
new-error  tools/call add  (call 13, line 13, session s)
    error: (absent) → {"code":"tool_error","message":"Tool add not found"}
    answered when recorded: "The sum of 2 and 40 is 42."

13 calls, 0 same, 11 changed, 1 new-error, 1 gone-error
surface: 1 breaking, 1 compatible
"#;
        assert_eq!(text, want);
    }

    #[test]
    fn text_shows_the_first_ways_of_calls_changed_at_the_same_paths_and_counts_the_rest() {
        let calls = (1..=5)
            .map(|i| {
                CallReport::new(
                    i,
                    i,
                    "s",
                    "tools/call",
                    "quote",
                    Status::Changed,
                    vec![
                        diff(
                            "structuredContent.price",
                            Some(json!(12)),
                            Some(json!(100 + i)),
                        ),
                        diff("structuredContent.currency", Some(json!("USD")), None),
                    ],
                )
            })
            .collect();
        assert_eq!(
            ReplayReport::new("c", calls).to_text(false),
            r#"changed    tools/call quote  (5 calls, the first: call 1, line 1, session s)
    structuredContent.price: 12 → (5 values) in 5 calls of quote
    structuredContent.currency: "USD" → (absent) in 5 calls of quote
      call 1: 12 → 101
      call 2: 12 → 102
      call 3: 12 → 103
      and 2 more ways (the JSON and HTML reports show every call's values)

5 calls, 0 same, 5 changed, 0 new-error, 0 gone-error
"#
        );
        // Long texts, as a diff under the calls.
        let calls = (1..=2)
            .map(|i| {
                let text = |year: usize| format!("size: {i}\nmodified: {year}\nisFile: true");
                CallReport::new(
                    i,
                    i,
                    "s",
                    "tools/call",
                    "get_file_info",
                    Status::Changed,
                    vec![diff(
                        "content.0.text",
                        Some(json!(text(2001))),
                        Some(json!(text(2004))),
                    )],
                )
            })
            .collect();
        let text = ReplayReport::new("c", calls).to_text(false);
        assert!(
            text.contains(
                "    content.0.text: (2 values) → (2 values) in 2 calls of get_file_info
      call 1:
        content.0.text:
            size: 1
          - modified: 2001
          + modified: 2004
            isFile: true
      call 2:
"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_group_of_errors_shows_its_first_calls_answer_and_a_call_with_notes_stands_alone() {
        let pay = |i: usize, id: &str| {
            CallReport::new(
                i,
                i,
                "s",
                "tools/call",
                "pay",
                Status::NewError,
                vec![diff("error", None, Some(json!({"code": "card_declined"})))],
            )
            .with_answer(Some(json!({"structuredContent": {"paymentId": id}})))
        };
        let report = ReplayReport::new(
            "c",
            vec![
                pay(1, "pay_1"),
                pay(2, "pay_2"),
                pay(3, "pay_3").with_unfilled(vec!["cardToken".into()]),
            ],
        );
        assert_eq!(
            report.to_text(false),
            r#"new-error  tools/call pay  (2 calls, the first: call 1, line 1, session s)
    error: (absent) → {"code":"card_declined"} in 2 calls of pay
    answered when recorded (call 1): {"structuredContent":{"paymentId":"pay_1"}}
new-error  tools/call pay  (call 3, line 3, session s)
    error: (absent) → {"code":"card_declined"}
    answered when recorded: {"structuredContent":{"paymentId":"pay_3"}}
    unfilled: cardToken

3 calls, 0 same, 0 changed, 3 new-error, 0 gone-error
"#
        );
        let page = report.to_html(&ReportContext::new());
        assert!(
            page.contains("<span class=\"lbl\">answered (call 1)</span>"),
            "{page}"
        );
        assert!(
            page.contains("<p class=\"members\">calls 1–2</p>"),
            "{page}"
        );
    }

    #[test]
    fn json_says_which_items_came_or_went_and_holds_the_other_answer_in_full() {
        let value = drift().to_json();
        assert_eq!(
            value["summaryLines"],
            json!(["surface: 1 breaking, 1 compatible"])
        );
        assert_eq!(
            value["results"].as_array().unwrap().len(),
            13,
            "one result per call"
        );
        assert_eq!(
            value["results"][10]["differences"][0],
            json!({"path": "tools[add]", "change": "removed", "recorded": {"name": "add"}})
        );
        assert_eq!(
            value["results"][10]["differences"][1],
            json!({"path": "tools[get-sum]", "change": "added", "replayed": {"name": "get-sum"}})
        );
        assert!(
            value["results"][10]["differences"][2]
                .get("change")
                .is_none()
        );
        let sum = json!({"content": [{"type": "text", "text": "The sum of 2 and 40 is 42."}]});
        assert_eq!(value["results"][11]["replayedAnswer"], sum);
        assert_eq!(value["results"][12]["recordedAnswer"], sum);
        assert!(value["results"][0].get("recordedAnswer").is_none());
        let lines = sample().to_json();
        assert!(lines.get("summaryLines").is_none(), "{lines}");
    }

    #[test]
    fn notes_on_what_the_server_asked_show_in_every_format() {
        use crate::mcp::asks::AskNoteKind;
        let differs = AskNote {
            ask: 1,
            method: "elicitation/create".into(),
            kind: AskNoteKind::Differs(vec![diff(
                "params.message",
                Some(json!("which day?")),
                Some(json!("which date?")),
            )]),
        };
        let unasked = AskNote {
            ask: 2,
            method: "roots/list".into(),
            kind: AskNoteKind::NotAsked,
        };
        let report = ReplayReport::new(
            "calls.jsonl",
            vec![
                CallReport::new(1, 1, "s", "tools/call", "book", Status::Same, vec![])
                    .with_asks(vec![differs, unasked]),
                CallReport::new(2, 2, "s", "tools/call", "quiet", Status::Same, vec![]),
            ],
        );
        let notes = [
            r#"ask 1 elicitation/create: answered as recorded, though the request differs: params.message: "which day?" → "which date?""#,
            "ask 2 roots/list: recorded, and the server did not ask it",
        ];
        assert_eq!(
            report.to_text(false),
            format!(
                "same       tools/call book  (call 1, line 1, session s)\n    {}\n    {}\n\n\
                 2 calls, 2 same, 0 changed, 0 new-error, 0 gone-error\n",
                notes[0], notes[1]
            )
        );
        let value = report.to_json();
        assert_eq!(
            value["results"][0]["asks"],
            json!([
                {"ask": 1, "method": "elicitation/create", "kind": "differs", "note": notes[0],
                 "differences": [{"path": "params.message", "recorded": "which day?", "replayed": "which date?"}]},
                {"ask": 2, "method": "roots/list", "kind": "not-asked", "note": notes[1]},
            ])
        );
        assert!(value["results"][1].get("asks").is_none());
        let xml = report.to_junit();
        let escaped = notes[0].replace('"', "&quot;");
        assert!(
            xml.contains(&format!(
                "<system-out>{escaped}\n    {}</system-out>",
                notes[1]
            )),
            "{xml}"
        );
        let html = report.to_html(&ReportContext::default());
        assert!(
            html.contains(&format!("<li>{escaped}</li><li>{}</li>", notes[1])),
            "{html}"
        );
    }

    #[test]
    fn formats_parse() {
        assert_eq!("junit".parse::<Format>(), Ok(Format::Junit));
        assert_eq!("html".parse::<Format>(), Ok(Format::Html));
        assert_eq!(
            "xml".parse::<Format>(),
            Err("unknown report format \"xml\"; use text, json, junit or html".to_owned())
        );
    }
}

//! The JSON report, serialised straight from the report without building a `Value` tree first.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::mcp::asks::{AskNote, AskNoteKind};
use crate::mcp::compare::{Difference, Status};
use crate::mcp::follow::Substitution;
use crate::mcp::report::{CallReport, REPORT_VERSION, ReplayReport, Summary};

/// The report as JSON text, one result per line, ending with a newline.
pub(super) fn render(report: &ReplayReport) -> String {
    let differences: usize = report.calls.iter().map(|c| c.differences.len()).sum();
    let mut bytes = Vec::with_capacity(256 + report.calls.len() * 160 + differences * 96);
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut bytes, LinesFormatter::default());
    let _ = JsonReport(report).serialize(&mut serializer);
    bytes.push(b'\n');
    String::from_utf8(bytes).unwrap_or_default()
}

/// The report as a JSON value.
pub(super) fn to_value(report: &ReplayReport) -> Value {
    serde_json::to_value(JsonReport(report)).unwrap_or(Value::Null)
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
        let lines = !report.summary_lines.is_empty();
        let mut map = serializer.serialize_map(Some(6 + usize::from(lines)))?;
        map.serialize_entry("version", &REPORT_VERSION)?;
        map.serialize_entry("file", &report.file.display().to_string())?;
        map.serialize_entry("calls", &report.calls.len())?;
        map.serialize_entry("summary", &JsonSummary(summary))?;
        let surface = report.surface();
        map.serialize_entry(
            "surface",
            &serde_json::json!({"breaking": surface.breaking, "compatible": surface.compatible}),
        )?;
        if lines {
            map.serialize_entry("summaryLines", &report.summary_lines)?;
        }
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
        let fields = 7
            + usize::from(!c.substitutions.is_empty())
            + usize::from(!c.unfilled.is_empty())
            + usize::from(!c.remarks.is_empty())
            + usize::from(c.answer.is_some())
            + usize::from(!c.surface.is_empty())
            + usize::from(!c.asks.is_empty());
        let mut map = serializer.serialize_map(Some(fields))?;
        map.serialize_entry("index", &c.index)?;
        map.serialize_entry("line", &c.line)?;
        map.serialize_entry("session", &c.session)?;
        map.serialize_entry("method", &c.method)?;
        map.serialize_entry("name", &c.name)?;
        map.serialize_entry("status", c.status.as_str())?;
        map.serialize_entry("differences", &JsonDifferences(&c.differences))?;
        // The other side of an error that came or went, in full.
        if let Some(answer) = &c.answer {
            let key = match c.status {
                Status::NewError => "recordedAnswer",
                _ => "replayedAnswer",
            };
            map.serialize_entry(key, answer)?;
        }
        // Present only when there are some, so a report without notes reads as it always did.
        if !c.substitutions.is_empty() {
            map.serialize_entry("substitutions", &JsonSubstitutions(&c.substitutions))?;
        }
        if !c.unfilled.is_empty() {
            map.serialize_entry("unfilled", &c.unfilled)?;
        }
        if !c.asks.is_empty() {
            map.serialize_entry("asks", &JsonAsks(&c.asks))?;
        }
        if !c.surface.is_empty() {
            let surface: Vec<Value> = c
                .surface
                .iter()
                .map(|s| serde_json::json!({"severity": s.severity.as_str(), "path": s.path, "change": s.change}))
                .collect();
            map.serialize_entry("surface", &surface)?;
        }
        if !c.remarks.is_empty() {
            map.serialize_entry("remarks", &c.remarks)?;
        }
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
        let change = d.item_change();
        let fields = 1
            + usize::from(d.recorded.is_some())
            + usize::from(d.replayed.is_some())
            + usize::from(change.is_some());
        let mut map = serializer.serialize_map(Some(fields))?;
        map.serialize_entry("path", &d.path)?;
        // A whole list item only one side holds: `removed` or `added`.
        if let Some(change) = change {
            map.serialize_entry("change", change)?;
        }
        if let Some(r) = &d.recorded {
            map.serialize_entry("recorded", r)?;
        }
        if let Some(p) = &d.replayed {
            map.serialize_entry("replayed", p)?;
        }
        map.end()
    }
}

/// Each note on the server's requests to the client: `{"ask", "method", "kind": "differs" |
/// "not-asked", "differences" (for `differs`), "note"}`.
struct JsonAsks<'a>(&'a [AskNote]);

impl Serialize for JsonAsks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|note| {
            let mut map = serde_json::Map::new();
            map.insert("ask".into(), Value::from(note.ask));
            map.insert("method".into(), Value::String(note.method.clone()));
            let kind = match &note.kind {
                AskNoteKind::Differs(differences) => {
                    let differences = serde_json::to_value(JsonDifferences(differences));
                    map.insert("differences".into(), differences.unwrap_or(Value::Null));
                    "differs"
                }
                AskNoteKind::NotAsked => "not-asked",
            };
            map.insert("kind".into(), Value::String(kind.into()));
            map.insert("note".into(), Value::String(note.to_string()));
            map
        }))
    }
}

struct JsonSubstitutions<'a>(&'a [Substitution]);

impl Serialize for JsonSubstitutions<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|s| {
            let mut map = serde_json::Map::new();
            map.insert("path".into(), Value::String(s.path.clone()));
            map.insert("recorded".into(), Value::String(s.recorded.clone()));
            map.insert("replayed".into(), Value::String(s.replayed.clone()));
            map.insert("fromCall".into(), Value::from(s.from_call));
            map.insert("fromPath".into(), Value::String(s.from_path.clone()));
            map.insert("note".into(), Value::String(s.to_string()));
            map
        }))
    }
}

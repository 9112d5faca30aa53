//! Telling the crate's two file formats apart, and summarising a file of either.
//!
//! [`sniff`] reads the first line of a file and says whether it is an MCP call recording, an HTTP
//! cassette, or neither (and why), and needs no feature, nor does [`find_cassettes`], which finds
//! the cassettes under a folder by it; `recording_summary` (feature `mcp`) and
//! `cassette_summary` (feature `http`) are the texts `calltape show` prints for each.

#[cfg(any(feature = "mcp", feature = "http"))]
use std::collections::BTreeMap;
#[cfg(any(feature = "mcp", feature = "http"))]
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
#[cfg(feature = "http")]
use crate::http::{Body, Cassette, Content, FORMAT_VERSION, StreamEnd};
#[cfg(feature = "mcp")]
use crate::mcp::{Outcome, Recording};

/// The most bytes of a first line [`sniff`] reads: a call record holds a whole answer, so its line
/// may be long, but a line longer than this is no file calltape wrote.
const MAX_FIRST_LINE: u64 = 64 << 20;

/// What a file holds, judged by its first line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// An MCP call recording: its first line is a call record (`v`, `at`, `method`, …).
    Recording,
    /// An HTTP cassette: its first line is a cassette's `meta` line.
    Cassette,
    /// Neither of calltape's formats.
    Neither {
        /// Why not, as a clause that follows the file's name ("it is empty").
        reason: String,
    },
}

/// Reads the first line of the file at `path` and says which of calltape's formats it is.
///
/// Fails only when the file cannot be read; a file of any other content is [`FileKind::Neither`],
/// with the reason. The rest of the file is not checked: reading it as a call recording or a
/// cassette does that.
pub fn sniff(path: impl AsRef<Path>) -> Result<FileKind> {
    let path = path.as_ref();
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot read", e))?;
    let mut first = Vec::new();
    BufReader::new(file)
        .take(MAX_FIRST_LINE)
        .read_until(b'\n', &mut first)
        .map_err(|e| Error::io(path, "cannot read", e))?;
    if first.len() as u64 == MAX_FIRST_LINE && !first.ends_with(b"\n") {
        return Ok(FileKind::Neither {
            reason: "its first line is longer than 64 MiB".to_owned(),
        });
    }
    Ok(sniff_line(&first))
}

/// Whether the file at `path` is an HTTP cassette: its first line [`sniff`]s as a cassette's meta
/// line. A file that cannot be read is not.
pub fn is_cassette(path: impl AsRef<Path>) -> bool {
    matches!(sniff(path), Ok(FileKind::Cassette))
}

/// The HTTP cassettes under `dir`, in path order: every `*.jsonl` file whose first line
/// [`sniff`]s as a cassette, in `dir` and the folders below it. A cassette's sidecar folder
/// (`<cassette>.blobs`) is not entered, nor a symbolic link to a folder (so a link cannot make the
/// walk loop); a folder that cannot be read is passed over.
pub fn find_cassettes(dir: impl AsRef<Path>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(dir.as_ref(), &mut found, &|kind| {
        *kind == FileKind::Cassette
    });
    found.into_iter().map(|(path, _)| path).collect()
}

/// The call recordings and HTTP cassettes under `dir`, in path order, each with its kind: every
/// `*.jsonl` file whose first line [`sniff`]s as one, found as [`find_cassettes`] finds cassettes.
pub fn find_files(dir: impl AsRef<Path>) -> Vec<(PathBuf, FileKind)> {
    let mut found = Vec::new();
    walk(dir.as_ref(), &mut found, &|kind| {
        matches!(kind, FileKind::Cassette | FileKind::Recording)
    });
    found
}

fn walk(dir: &Path, found: &mut Vec<(PathBuf, FileKind)>, wanted: &dyn Fn(&FileKind) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|entry| entry.path());
    for entry in entries {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            if !path.to_string_lossy().ends_with(".blobs") {
                walk(&path, found, wanted);
            }
        } else if path.extension().is_some_and(|e| e == "jsonl")
            && let Ok(kind) = sniff(&path)
            && wanted(&kind)
        {
            found.push((path, kind));
        }
    }
}

/// [`sniff`] of a first line as read, its newline included when it has one.
fn sniff_line(first: &[u8]) -> FileKind {
    let neither = |reason: &str| FileKind::Neither {
        reason: reason.to_owned(),
    };
    if first.is_empty() {
        return neither("it is empty");
    }
    let ended = first.ends_with(b"\n");
    let Ok(text) = std::str::from_utf8(first) else {
        return neither("its first line is not UTF-8 text");
    };
    if text.trim().is_empty() {
        return neither("its first line is blank");
    }
    let line = match serde_json::from_str::<Map<String, Value>>(text) {
        Ok(line) => line,
        Err(e) if e.is_eof() && !ended => {
            return neither("its first line is cut short (incomplete JSON without a newline)");
        }
        Err(e) if e.is_data() => return neither("its first line is JSON but not an object"),
        Err(_) => return neither("its first line is not JSON"),
    };
    let text_field = |name: &str| line.get(name).and_then(Value::as_str);
    match text_field("t") {
        Some("meta") if line.contains_key("normalizer") => FileKind::Cassette,
        Some("meta") => neither("its first line is a meta line without a normalizer fingerprint"),
        Some(_) => neither(
            "its first line is a cassette line, but not the meta line a cassette starts with",
        ),
        None if line.contains_key("v")
            && text_field("at").is_some()
            && text_field("method").is_some() =>
        {
            FileKind::Recording
        }
        // A call written by hand with no answer yet: a method, and no version, answer or error.
        None if text_field("method").is_some()
            && !["v", "answer", "error"]
                .iter()
                .any(|k| line.contains_key(*k)) =>
        {
            FileKind::Recording
        }
        None => neither(
            "its first line is a JSON object, but neither a call record (with `v`, `at` and \
             `method`, or a call written by hand with `method`) nor a cassette's meta line",
        ),
    }
}

#[cfg(feature = "mcp")]
#[derive(Default)]
struct Tally {
    calls: usize,
    errors: BTreeMap<String, usize>,
    total_ms: f64,
}

/// A recorded string (or a path) on one line of a summary: redacted by the text rules (a file an
/// older calltape wrote, or one edited by hand, may hold what today's rules would have replaced:
/// a token as an error code, say), then its control characters escaped.
#[cfg(any(feature = "mcp", feature = "http"))]
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    static REDACTOR: std::sync::OnceLock<calltape_redact::Redactor> = std::sync::OnceLock::new();
    fn escape(text: &str) -> Cow<'_, str> {
        crate::terminal::escape_controls(text, crate::terminal::LineBreaks::Escape)
    }
    match REDACTOR
        .get_or_init(calltape_redact::Redactor::new)
        .redact_text(text)
    {
        Cow::Borrowed(same) => escape(same),
        Cow::Owned(redacted) => Cow::Owned(escape(&redacted).into_owned()),
    }
}

/// The summary of a call recording: its calls per method and name (with their errors and average
/// duration), its sessions with their clients and servers, and its time span. Every recorded
/// string in it is redacted by the text rules and has its control characters escaped
/// ([`escape_controls`]).
///
/// [`escape_controls`]: crate::terminal::escape_controls
#[cfg(feature = "mcp")]
pub fn recording_summary(recording: &Recording) -> String {
    let mut out = String::new();
    let calls = &recording.calls;
    let sessions = recording.sessions();
    let _ = writeln!(
        out,
        "{}: {} call{} in {} session{}",
        shown(&recording.path.display().to_string()),
        calls.len(),
        plural(calls.len()),
        sessions.len(),
        plural(sessions.len())
    );
    if let Some(first) = recording.unanswered.first() {
        let n = recording.unanswered.len();
        let _ = writeln!(
            out,
            "{n} call{} written by hand with no answer yet, from line {}: `calltape replay --update` \
             against the server fills {} in",
            plural(n),
            first.line,
            if n == 1 { "it" } else { "them" }
        );
    }
    if calls.is_empty() {
        return out;
    }
    let first = calls
        .iter()
        .map(|c| c.record.at.as_str())
        .min()
        .unwrap_or("");
    let last = calls
        .iter()
        .map(|c| c.record.at.as_str())
        .max()
        .unwrap_or("");
    let _ = writeln!(out, "time span: {} … {}", shown(first), shown(last));

    let mut per_call: BTreeMap<(&str, &str), Tally> = BTreeMap::new();
    let mut errors = 0usize;
    for call in calls {
        let r = &call.record;
        let tally = per_call.entry((&r.method, &r.name)).or_default();
        tally.calls += 1;
        tally.total_ms += r.duration_ms;
        if let Outcome::Error(e) = &r.outcome {
            errors += 1;
            *tally
                .errors
                .entry(shown(&e.code.to_string()).into_owned())
                .or_default() += 1;
        }
    }
    let _ = writeln!(out, "\ncalls:");
    let labels: Vec<String> = per_call
        .keys()
        .map(|(method, name)| format!("{} {}", shown(method), shown(name)))
        .collect();
    let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    for (label, tally) in labels.iter().zip(per_call.values()) {
        let _ = write!(
            out,
            "  {label:<width$}  {:>4} call{}  avg {:.1} ms",
            tally.calls,
            plural(tally.calls),
            tally.total_ms / tally.calls as f64
        );
        if !tally.errors.is_empty() {
            let list: Vec<String> = tally
                .errors
                .iter()
                .map(|(code, n)| format!("{code} ×{n}"))
                .collect();
            let _ = write!(out, "  errors: {}", list.join(", "));
        }
        out.push('\n');
    }

    let _ = writeln!(out, "\nsessions:");
    for (session, indexes) in &sessions {
        let record = &calls[indexes[0]].record;
        let client = record
            .client
            .as_ref()
            .map(|c| {
                let field =
                    |k: &str| shown(c.get(k).and_then(|v| v.as_str()).unwrap_or("?")).into_owned();
                format!("{} {}", field("name"), field("version"))
            })
            .unwrap_or_else(|| "unknown client".to_owned());
        let mut line = format!(
            "  {}  {client}  {} call{}",
            shown(session),
            indexes.len(),
            plural(indexes.len())
        );
        if let Some(version) = &record.protocol_version {
            let _ = write!(line, "  protocol {}", shown(version));
        }
        if let Some(server) = &record.server {
            let name = server.get("name").and_then(|v| v.as_str()).unwrap_or("?");
            let version = server
                .get("version")
                .and_then(|v| v.as_str())
                .unwrap_or("?");
            let _ = write!(line, "  server {} {}", shown(name), shown(version));
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(
        out,
        "\nerrors: {errors} of {} call{}",
        calls.len(),
        plural(calls.len())
    );
    out
}

#[cfg(feature = "mcp")]
fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The summary of an HTTP cassette read from `path`: its fingerprints, then one line per interaction
/// (key, method, upstream, path, model, status and what answered), then the models asked. Every
/// recorded string in it is redacted by the text rules and has its control characters escaped
/// ([`escape_controls`]).
///
/// [`escape_controls`]: crate::terminal::escape_controls
#[cfg(feature = "http")]
pub fn cassette_summary(path: &Path, cassette: &Cassette) -> String {
    let mut out = String::new();
    let mut models: BTreeMap<&str, usize> = BTreeMap::new();
    let _ = writeln!(out, "{}", shown(&path.display().to_string()));
    let _ = writeln!(
        out,
        "  format v{FORMAT_VERSION}, normaliser {}, redaction {}, {} interactions",
        shown(&cassette.meta.normalizer),
        shown(&cassette.meta.redaction),
        cassette.interactions.len()
    );
    for i in &cassette.interactions {
        let r = &i.request;
        let model = match &r.body {
            Body::Json(v) => v.get("model").and_then(Value::as_str),
            _ => None,
        };
        if let Some(m) = model {
            *models.entry(m).or_default() += 1;
        }
        let _ = writeln!(
            out,
            "  {} #{} {} {} {}{} -> {} {}",
            shown(&r.key),
            r.seq,
            shown(&r.method),
            shown(&r.upstream),
            shown(&r.path),
            model
                .map(|m| format!(" [{}]", shown(m)))
                .unwrap_or_default(),
            i.response.status,
            answer(&i.response.content)
        );
    }
    if !models.is_empty() {
        let list: Vec<String> = models
            .iter()
            .map(|(m, n)| format!("{} ×{n}", shown(m)))
            .collect();
        let _ = writeln!(out, "  models: {}", list.join(", "));
    }
    out
}

/// What answered an interaction: a body's size, or a stream's format, events, size and ending.
#[cfg(feature = "http")]
fn answer(content: &Content) -> String {
    match content {
        Content::Body(b) => format!(
            "{} bytes{}",
            body_size(b),
            if matches!(b, Body::Binary(_)) {
                " (blob)"
            } else {
                ""
            }
        ),
        Content::Stream(s) => {
            let bytes: usize = s.events.iter().map(|e| e.to_bytes(s.format).len()).sum();
            let end = match s.end {
                StreamEnd::Clean => "clean".to_owned(),
                StreamEnd::Truncated => "truncated".to_owned(),
                StreamEnd::Reset { after_bytes } => format!("reset after {after_bytes} bytes"),
            };
            format!(
                "{} stream, {} events, {bytes} bytes, ended {end}",
                s.format.as_str(),
                s.events.len()
            )
        }
    }
}

#[cfg(feature = "http")]
fn body_size(b: &Body) -> usize {
    match b {
        Body::Empty => 0,
        Body::Json(v) => v.to_string().len(),
        Body::Text(t) => t.len(),
        Body::Binary(b) => b.data.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"3f9a1c2e","method":"tools/call","name":"quote","input":{},"answer":{"content":[]},"durationMs":12.4}"#;
    const META: &str = r#"{"normalizer":"ab12","redaction":"cd34","t":"meta","v":1}"#;

    #[cfg(feature = "mcp")]
    #[test]
    fn a_summary_counts_the_calls_written_by_hand_apart() {
        let text = format!("{RECORD}\n{{\"method\":\"tools/list\"}}\n");
        let recording = Recording::parse("c.jsonl", text.as_bytes()).unwrap();
        let summary = recording_summary(&recording);
        assert!(
            summary.starts_with(
                "c.jsonl: 1 call in 1 session\n1 call written by hand with no answer yet, from \
                 line 2: `calltape replay --update` against the server fills it in\n"
            ),
            "{summary}"
        );
    }

    #[test]
    fn sniff_tells_the_formats_apart_by_the_first_line() {
        // (file content, what sniff says: "recording", "cassette" or the start of the reason)
        let long_record = format!("{RECORD}\n{}", "x".repeat(10_000));
        let two_records = format!("{RECORD}\n{RECORD}\n");
        let cut_tail = format!("{RECORD}\n{{oops");
        let cassette = format!("{META}\n{{\"t\":\"req\"}}\n");
        let table: &[(&[u8], &str)] = &[
            (b"", "it is empty"),
            (b"\n{}", "its first line is blank"),
            (b"   \n", "its first line is blank"),
            (b"\xff\xfe garbage\n", "its first line is not UTF-8"),
            (b"garbage\n", "its first line is not JSON"),
            (b"PK\x03\x04 a zip", "its first line is not JSON"),
            (b"[1,2,3]\n", "its first line is JSON but not an object"),
            (br#""text""#, "its first line is JSON but not an object"),
            (
                br#"{"v":1,"at":"2026-11-29T20:46"#,
                "its first line is cut short",
            ),
            (br#"{"t":"meta","normal"#, "its first line is cut short"),
            (b"{\"v\":1,\"at\":\"2026\n", "its first line is not JSON"),
            (
                br#"{"hello":"world"}"#,
                "its first line is a JSON object, but neither",
            ),
            (
                br#"{"v":1,"at":"2026-11-29T20:46:45.123Z"}"#,
                "its first line is a JSON object",
            ),
            (
                br#"{"t":"meta","v":1}"#,
                "its first line is a meta line without",
            ),
            (
                br#"{"t":"req","v":1}"#,
                "its first line is a cassette line, but not",
            ),
            (RECORD.as_bytes(), "recording"),
            (
                br#"{"method":"tools/call","name":"echo","input":{}}"#,
                "recording",
            ),
            (
                br#"{"method":"tools/call","answer":{}}"#,
                "its first line is a JSON object, but neither",
            ),
            (long_record.as_bytes(), "recording"),
            (two_records.as_bytes(), "recording"),
            (cut_tail.as_bytes(), "recording"),
            (META.as_bytes(), "cassette"),
            (cassette.as_bytes(), "cassette"),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file.jsonl");
        for (content, want) in table {
            std::fs::write(&path, content).unwrap();
            let got = match sniff(&path).unwrap() {
                FileKind::Recording => "recording".to_owned(),
                FileKind::Cassette => "cassette".to_owned(),
                FileKind::Neither { reason } => reason,
            };
            assert!(
                got.starts_with(want),
                "{:?}: {got:?}, want {want:?}",
                String::from_utf8_lossy(content)
            );
        }
    }

    #[test]
    fn find_cassettes_walks_folders_in_order_and_keeps_only_cassettes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // (path under the root, content, whether it is found)
        let files: &[(&str, &str, bool)] = &[
            ("b.jsonl", META, true),
            ("a.jsonl", META, true),
            ("calls.jsonl", RECORD, false),
            ("meta.json", META, false),
            ("empty.jsonl", "", false),
            ("sub/deeper/c.jsonl", META, true),
            ("a.jsonl.blobs/copy.jsonl", META, false),
        ];
        for (path, content, _) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, content).unwrap();
        }
        // A link back to the root is not followed, so the walk ends.
        #[cfg(unix)]
        std::os::unix::fs::symlink(root, root.join("sub/loop")).unwrap();
        let mut want: Vec<PathBuf> = files
            .iter()
            .filter(|(_, _, found)| *found)
            .map(|(path, _, _)| root.join(path))
            .collect();
        want.sort();
        assert_eq!(find_cassettes(root), want);
        assert!(find_cassettes(root.join("missing")).is_empty());
    }

    #[test]
    fn sniff_of_a_missing_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing.jsonl");
        let error = sniff(&path).unwrap_err();
        assert!(error.is_not_found(), "{error}");
        assert!(error.to_string().contains("missing.jsonl"), "{error}");
    }
}

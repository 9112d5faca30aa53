//! Scanning files already on disk for what should never have been stored (for pre-commit hooks and
//! CI): call recordings and cassettes alike, named one by one or found under folders.
//!
//! Each file is told apart by its first line ([`sniff`]). A call recording
//! is scanned line by line: calltape-redact's final [`Gate`] over the whole line (provider tokens and
//! JWTs in values, object keys, names and client or server info alike, and the known secret values
//! given), then each record's input, answer and error, which redacting again must leave as they are.
//! A cassette is scanned by [`http::scan_file`](crate::http::scan_file), its sidecar blobs
//! included. A finding names the file, the line, where in the line and what was found, never the
//! value.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use calltape_redact::{Gate, KnownSecrets, Redactor};
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::inspect::{FileKind, find_files, sniff};
use crate::terminal::{LineBreaks, escape_controls};

/// Something a scan found that should not be in a committed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The 1-based line number.
    pub line: usize,
    /// Where in the line: a JSON path such as `body.json.api_key`, or a byte offset.
    pub location: String,
    /// What was found, never the secret itself.
    pub what: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {} at {}: {}", self.line, self.location, self.what)
    }
}

/// A [`Finding`] in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFinding {
    /// The file.
    pub path: PathBuf,
    /// What was found, and where.
    pub finding: Finding,
}

/// `FILE:LINE: WHERE: WHAT`, the line `calltape scan` prints; the path and the location, which may
/// quote a recorded key, have their control characters escaped.
impl fmt::Display for FileFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display().to_string();
        write!(
            f,
            "{}:{}: {}: {}",
            escape_controls(&path, LineBreaks::Escape),
            self.finding.line,
            escape_controls(&self.finding.location, LineBreaks::Escape),
            escape_controls(&self.finding.what, LineBreaks::Escape)
        )
    }
}

/// What [`scan`] found.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct ScanReport {
    /// The files scanned, in the order given (a folder's in path order).
    pub files: Vec<PathBuf>,
    /// What was found, file by file, line by line.
    pub findings: Vec<FileFinding>,
    /// The inputs that could not be scanned: a file that cannot be read, a file named on its own
    /// that is neither a call recording nor a cassette, a cassette this build cannot read.
    pub failures: Vec<Error>,
}

impl ScanReport {
    /// Whether every input was read and nothing was found.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty() && self.failures.is_empty()
    }

    /// The scan in one line: how many findings in how many files, and what to do about them, or
    /// that the files are clean. Inputs that could not be scanned are in
    /// [`failures`](Self::failures), each with its own message.
    pub fn summary(&self) -> String {
        let files = self.files.len();
        match self.findings.len() {
            0 => format!("{files} file(s) clean"),
            found => format!(
                "{found} possible credential(s) in {files} file(s) checked; redact them or record again"
            ),
        }
    }
}

/// Scans each of `paths`: a file as what its first line says it is, a folder for the call
/// recordings and cassettes under it (`*.jsonl`, sidecar folders not entered). `known` holds the
/// secret values looked for besides the token formats (the environment's keys, say); each is named
/// by the name it was added under.
pub fn scan(paths: &[PathBuf], known: &KnownSecrets) -> ScanReport {
    let scanner = Scanner::new(known);
    let mut report = ScanReport::default();
    for path in paths {
        if path.is_dir() {
            for (file, kind) in find_files(path) {
                scanner.scan_file(&file, &kind, &mut report);
            }
            continue;
        }
        match sniff(path) {
            Ok(kind) => scanner.scan_file(path, &kind, &mut report),
            Err(e) => report.failures.push(e),
        }
    }
    report
}

/// The values of this process's environment variables whose names say they hold a credential
/// (`*_API_KEY`, `*_TOKEN`, `*_SECRET`, `*_KEY`, `*_PASSWORD`), each named by its variable, as the
/// cassette scrubber learns them: what a scan looks for besides the token formats.
#[cfg(feature = "http")]
pub fn secrets_from_env() -> KnownSecrets {
    let known = KnownSecrets::new();
    let scrubber = crate::http::Scrubber::builder()
        .known_secrets(known.clone())
        .secrets_from_env(true)
        .build();
    drop(scrubber);
    known
}

struct Scanner {
    gate: Gate,
    redactor: Redactor,
    #[cfg(feature = "http")]
    scrubber: crate::http::Scrubber,
}

impl Scanner {
    fn new(known: &KnownSecrets) -> Self {
        Self {
            gate: Gate::new().watch(known),
            redactor: Redactor::new(),
            #[cfg(feature = "http")]
            scrubber: crate::http::Scrubber::builder()
                .known_secrets(known.clone())
                .build()
                .unwrap_or_default(),
        }
    }

    fn scan_file(&self, path: &Path, kind: &FileKind, report: &mut ScanReport) {
        let findings = match kind {
            FileKind::Recording => self.scan_recording(path),
            #[cfg(feature = "http")]
            FileKind::Cassette => crate::http::scan_file(path, &self.scrubber),
            FileKind::Neither { reason } => Err(ErrorKind::NotScannable {
                path: path.to_owned(),
                reason: reason.clone(),
            }
            .into()),
            #[allow(unreachable_patterns)]
            _ => Err(ErrorKind::NotScannable {
                path: path.to_owned(),
                reason: "this build reads no cassettes".to_owned(),
            }
            .into()),
        };
        match findings {
            Ok(findings) => {
                report.files.push(path.to_owned());
                report
                    .findings
                    .extend(findings.into_iter().map(|finding| FileFinding {
                        path: path.to_owned(),
                        finding,
                    }));
            }
            Err(e) => report.failures.push(e),
        }
    }

    fn scan_recording(&self, path: &Path) -> Result<Vec<Finding>> {
        // A path named on the command line or found under a folder named there.
        let text = fs::read_to_string(path).map_err(|e| Error::io(path, "cannot read", e))?;
        Ok(scan_recording_text(&text, &self.gate, &self.redactor))
    }
}

/// Scans the text of a call recording line by line: what `gate` stops anywhere in a line, then in
/// each record's `input`, `answer` and `error` what `redactor` would still change (a value under a
/// credential name, text that holds a credential), named by its JSON path.
pub fn scan_recording_text(text: &str, gate: &Gate, redactor: &Redactor) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let line_no = idx + 1;
        if let Some(hit) = gate.check(line.as_bytes()) {
            findings.push(Finding {
                line: line_no,
                location: format!("byte {}", hit.at()),
                what: hit.to_string(),
            });
            continue;
        }
        let Ok(Value::Object(record)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        for field in ["input", "answer", "error"] {
            let Some(value) = record.get(field) else {
                continue;
            };
            let redacted = redactor.redacted_value(value);
            let mut path = field.to_owned();
            if first_difference(value, &redacted, &mut path) {
                findings.push(Finding {
                    line: line_no,
                    location: path,
                    what: "a value that redaction would still hide".to_owned(),
                });
            }
        }
    }
    findings
}

/// Whether `a` and `b` differ; if so, `path` is where they first do (a key is not named when the
/// keys themselves differ, since a key may be what is secret).
fn first_difference(a: &Value, b: &Value, path: &mut String) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            if x.len() != y.len() || x.keys().zip(y.keys()).any(|(k, l)| k != l) {
                path.push_str(" (a key)");
                return true;
            }
            for ((k, v), w) in x.iter().zip(y.values()) {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                if first_difference(v, w, path) {
                    return true;
                }
                path.truncate(len);
            }
            false
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                if first_difference(v, w, path) {
                    return true;
                }
                path.truncate(len);
            }
            false
        }
        _ => a != b,
    }
}

/// A JSON path as a finding's location.
#[cfg(feature = "http")]
pub(crate) fn display_path(path: &str) -> String {
    if path.is_empty() {
        "the line".to_owned()
    } else {
        path.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_line_escapes_what_a_terminal_would_act_on() {
        let finding = FileFinding {
            path: PathBuf::from("a\x1b[2J.jsonl"),
            finding: Finding {
                line: 3,
                location: "input.k\ry".into(),
                what: "a github-pat token".into(),
            },
        };
        assert_eq!(
            finding.to_string(),
            "a\\u{1b}[2J.jsonl:3: input.k\\u{d}y: a github-pat token"
        );
    }

    #[test]
    fn the_summary_counts_findings_and_files() {
        let mut report = ScanReport {
            files: vec!["a.jsonl".into(), "b.jsonl".into()],
            ..ScanReport::default()
        };
        assert_eq!(report.summary(), "2 file(s) clean");
        report.findings.push(FileFinding {
            path: "a.jsonl".into(),
            finding: Finding {
                line: 1,
                location: "byte 4".into(),
                what: "a github-pat token".into(),
            },
        });
        assert_eq!(
            report.summary(),
            "1 possible credential(s) in 2 file(s) checked; redact them or record again"
        );
    }

    #[test]
    fn recording_lines_table() {
        let known = KnownSecrets::new();
        known.add("MY_API_KEY", "literal-secret-1");
        let gate = Gate::new().watch(&known);
        let ghp = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
        let head = r#"{"v":1,"at":"2026-01-01T00:00:00.000Z","session":"s","method":"tools/call","name":"t""#;
        // (the rest of a record line, the finding's location and what, when there is one)
        let table: Vec<(String, Option<(&str, &str)>)> = vec![
            (r#","input":{"a":1},"answer":{"ok":"[REDACTED]"},"durationMs":1}"#.into(), None),
            (
                format!(r#","input":{{}},"answer":{{"cards":{{"{ghp}":"stored"}}}},"durationMs":1}}"#),
                Some(("byte", "a github-pat token")),
            ),
            (
                format!(r#","client":{{"name":"c","{ghp}":true}},"input":{{}},"answer":{{}},"durationMs":1}}"#),
                Some(("byte", "a github-pat token")),
            ),
            (
                r#","input":{"note":"literal-secret-1"},"answer":{},"durationMs":1}"#.into(),
                Some(("byte", "the value of MY_API_KEY")),
            ),
            (
                r#","input":{"password":"hunter2"},"answer":{},"durationMs":1}"#.into(),
                Some(("input.password", "a value that redaction would still hide")),
            ),
            (
                r#","input":{},"error":{"code":"x","message":"Authorization: Bearer abcdef123456"},"durationMs":1}"#.into(),
                Some(("error.message", "a value that redaction would still hide")),
            ),
        ];
        for (rest, expected) in table {
            let line = format!("{head}{rest}");
            let found = scan_recording_text(&line, &gate, &Redactor::new());
            match expected {
                None => assert!(found.is_empty(), "{line}: {found:?}"),
                Some((location, what)) => {
                    assert_eq!(found.len(), 1, "{line}: {found:?}");
                    assert!(found[0].location.starts_with(location), "{found:?}");
                    assert_eq!(found[0].what, what);
                    assert!(!found[0].to_string().contains("literal-secret-1"));
                    assert!(!found[0].to_string().contains(ghp));
                }
            }
        }
    }
}

//! The strict reader: every bad line is named with its number and what is wrong with it.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind};
use crate::mcp::asks::Ask;
use crate::mcp::format::CallRecord;
use crate::mcp::unanswered::UnansweredCall;

/// The most bad lines an [`ErrorKind::InvalidRecording`] names; the rest are only counted.
pub const MAX_PROBLEMS: usize = 20;

/// A call recording read into memory: the calls in file order, each with its line number.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Recording {
    /// The file it was read from.
    pub path: PathBuf,
    /// The calls, in the order of the file.
    pub calls: Vec<RecordedCall>,
    /// The calls written by hand with no answer yet (`method`, `name`, `input`), in the order of the
    /// file; a replay against the real server fills them in.
    pub unanswered: Vec<UnansweredCall>,
}

/// One call of a [`Recording`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecordedCall {
    /// Its line in the file, from 1.
    pub line: usize,
    /// The call.
    pub record: CallRecord,
}

impl RecordedCall {
    /// `record`, as read at `line`.
    pub fn new(line: usize, record: CallRecord) -> Self {
        Self { line, record }
    }
}

/// One bad line of a recording.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LineProblem {
    /// The line number, from 1.
    pub line: usize,
    /// What is wrong with it, naming the field at fault when there is one.
    pub message: String,
}

impl fmt::Display for LineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl Recording {
    /// Reads and checks the recording at `path`.
    ///
    /// Fails with [`ErrorKind::InvalidRecording`] naming up to [`MAX_PROBLEMS`] bad lines (unknown
    /// fields, wrong types, lines that are not JSON, a tail cut short by a crash), or with
    /// [`ErrorKind::Io`] when the file cannot be read.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, "cannot read", e))?;
        Self::parse(path, &bytes)
    }

    /// Checks `bytes` as a recording; `path` names it in messages.
    ///
    /// A line with no format version and neither an answer nor an error is a call written by hand
    /// with no answer yet ([`UnansweredCall`]), held only `method`, `name` and `input`.
    pub fn parse(path: impl Into<PathBuf>, bytes: &[u8]) -> Result<Self, Error> {
        let path = path.into();
        let mut calls = Vec::new();
        let mut unanswered = Vec::new();
        let mut problems = Vec::new();
        let mut total = 0usize;
        let mut report = |line: usize, message: String| {
            total += 1;
            if problems.len() < MAX_PROBLEMS {
                problems.push(LineProblem { line, message });
            }
        };
        let mut rest = bytes;
        let mut number = 0usize;
        while !rest.is_empty() {
            number += 1;
            let (mut line, complete) = match memchr(b'\n', rest) {
                Some(at) => {
                    let line = &rest[..at];
                    rest = &rest[at + 1..];
                    (line, true)
                }
                None => (std::mem::take(&mut rest), false),
            };
            if let Some(stripped) = line.strip_suffix(b"\r") {
                line = stripped;
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let value: serde_json::Value = match serde_json::from_slice(line) {
                Ok(value) => value,
                Err(e) if !complete && e.is_eof() => {
                    report(
                        number,
                        format!(
                            "the last line is cut short ({} bytes, no newline), as a crash mid-write \
                             leaves it; delete it, every line before it is fine",
                            line.len()
                        ),
                    );
                    continue;
                }
                Err(e) => {
                    report(number, json_problem(&e));
                    continue;
                }
            };
            let value = match value {
                serde_json::Value::Object(map) if UnansweredCall::is_one(&map) => {
                    match UnansweredCall::from_map(number, map) {
                        Ok(call) => unanswered.push(call),
                        Err(problem) => report(number, problem.to_string()),
                    }
                    continue;
                }
                value => value,
            };
            match CallRecord::from_value(value) {
                Ok(mut record) => {
                    if !record.asks.is_empty() {
                        Ask::keep_answer_texts(&mut record.asks, line);
                    }
                    calls.push(RecordedCall {
                        line: number,
                        record,
                    });
                }
                Err(problem) => report(number, problem.to_string()),
            }
        }
        if total > 0 {
            return Err(ErrorKind::InvalidRecording {
                path,
                problems,
                total,
            }
            .into());
        }
        Ok(Self {
            path,
            calls,
            unanswered,
        })
    }

    /// The session ids in the order their first call appears, each with the indexes of its calls.
    pub fn sessions(&self) -> Vec<(String, Vec<usize>)> {
        let mut order: Vec<(String, Vec<usize>)> = Vec::new();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (index, call) in self.calls.iter().enumerate() {
            let session = call.record.session.as_str();
            match seen.get(session) {
                Some(&at) => order[at].1.push(index),
                None => {
                    seen.insert(session, order.len());
                    order.push((session.to_owned(), vec![index]));
                }
            }
        }
        order
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// A JSON syntax error worded without serde_json's " at line 1 column N" suffix, the column in front.
fn json_problem(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let text = match text.rfind(" at line ") {
        Some(at) => &text[..at],
        None => text.as_str(),
    };
    format!("not JSON at column {}: {text}", e.column())
}

/// The message of [`ErrorKind::InvalidRecording`]: a summary, then one `FILE:LINE: why` per bad line.
pub(crate) fn describe_problems(path: &Path, problems: &[LineProblem], total: usize) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "{} is not a valid call recording: {total} bad line{}",
        path.display(),
        if total == 1 { "" } else { "s" }
    );
    for problem in problems {
        let _ = write!(
            out,
            "\n{}:{}: {}",
            path.display(),
            problem.line,
            problem.message
        );
    }
    if total > problems.len() {
        let _ = write!(out, "\n… and {} more", total - problems.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"aaaaaaaa","method":"tools/call","name":"quote","input":{},"answer":{"content":[]},"durationMs":1}"#;

    #[test]
    fn every_bad_line_is_named() {
        let text = format!(
            "{GOOD}\n\n{{not json\n{}\n[1]\r\n{GOOD}\n{{\"v\":1,\"at\"",
            GOOD.replace("\"input\"", "\"inptu\"")
        );
        let error = Recording::parse("calls.jsonl", text.as_bytes()).unwrap_err();
        let message = error.to_string();
        let want = "calls.jsonl is not a valid call recording: 4 bad lines
calls.jsonl:3: not JSON at column 2: key must be a string
calls.jsonl:4: field `inptu`: unknown field; a call record has only v, at, session, client, capabilities, server, protocolVersion, method, name, input, asks, answer, error, durationMs
calls.jsonl:5: expected a JSON object, found an array
calls.jsonl:7: the last line is cut short (11 bytes, no newline), as a crash mid-write leaves it; delete it, every line before it is fine";
        assert_eq!(message, want);
        let ErrorKind::InvalidRecording {
            problems, total, ..
        } = error.kind()
        else {
            panic!("{error:?}")
        };
        assert_eq!((problems.len(), *total), (4, 4));
    }

    #[test]
    fn at_most_twenty_problems_are_kept() {
        let text = "x\n".repeat(25);
        let error = Recording::parse("c.jsonl", text.as_bytes()).unwrap_err();
        let ErrorKind::InvalidRecording {
            problems, total, ..
        } = error.kind()
        else {
            panic!("{error:?}")
        };
        assert_eq!((problems.len(), *total), (MAX_PROBLEMS, 25));
        assert!(error.to_string().ends_with("… and 5 more"));
    }

    #[test]
    fn sessions_keep_first_appearance_order() {
        let other = GOOD.replace("aaaaaaaa", "bbbbbbbb");
        let text = format!("{other}\n{GOOD}\n{other}\n{GOOD}");
        let recording = Recording::parse("c.jsonl", text.as_bytes()).unwrap();
        assert_eq!(recording.calls.len(), 4);
        assert_eq!(recording.calls[3].line, 4);
        assert_eq!(
            recording.sessions(),
            vec![
                ("bbbbbbbb".to_owned(), vec![0, 2]),
                ("aaaaaaaa".to_owned(), vec![1, 3])
            ]
        );
    }

    #[test]
    fn calls_written_by_hand_are_read_beside_full_records_and_a_bad_one_is_named() {
        let hand = r#"{"method":"tools/call","name":"echo","input":{"message":"hi"}}"#;
        let text =
            format!("{hand}\n{GOOD}\n{{\"method\":\"resources/read\",\"name\":\"demo://a\"}}\n");
        let recording = Recording::parse("c.jsonl", text.as_bytes()).unwrap();
        assert_eq!(recording.calls.len(), 1);
        assert_eq!(recording.calls[0].line, 2);
        let lines: Vec<(usize, &str)> = recording
            .unanswered
            .iter()
            .map(|c| (c.line, c.name.as_str()))
            .collect();
        assert_eq!(lines, [(1, "echo"), (3, "demo://a")]);

        let bad =
            format!("{GOOD}\n{{\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\"}}}}\n");
        let message = Recording::parse("c.jsonl", bad.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with(
                "c.jsonl is not a valid call recording: 1 bad line\nc.jsonl:2: field `params`: "
            ),
            "{message}"
        );
    }

    #[test]
    fn a_missing_file_is_an_io_error() {
        let error = Recording::read("/nonexistent/calls.jsonl").unwrap_err();
        assert!(error.is_not_found(), "{error}");
    }
}

//! Which recorded call answers a request: method, name and input, `[REDACTED]` matching anything at
//! its place, the order of keys never mattering, repeated calls answered in recorded order.

use std::fmt::{self, Write as _};

use calltape_recorder::mcp::{CallRecord, Outcome, RecordedCall};
use calltape_redact::{REDACTED, Redactor};
use serde_json::Value;

use crate::mcp::compare::matches_pattern;
use crate::mcp::{Comparer, Difference, Status};

/// The most differences a miss's message names; the rest are counted.
const SHOWN_DIFFERENCES: usize = 3;

/// A request the recording holds no answer for, or a client's answer to a server request that differs
/// from the recorded one.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Miss {
    /// The method asked, such as `tools/call`.
    pub method: String,
    /// The tool or prompt name, or the resource URI, as the recording would hold it.
    pub name: String,
    /// The input asked, redacted.
    pub input: Option<Value>,
    /// What was missed.
    pub kind: MissKind,
    /// The recorded call closest to the request, when the recording holds one of its method.
    pub closest: Option<Closest>,
}

/// What a [`Miss`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MissKind {
    /// No recorded call matches the request.
    NotRecorded,
    /// The call matched, but the client answered the server's request `method` (the call's
    /// `asks.N`) unlike the recorded client: [`Miss::closest`] is the call, with the differences of
    /// that answer.
    AskAnswer {
        /// The server request's method, such as `sampling/createMessage`.
        method: String,
        /// Its place among the call's asks, from 0.
        index: usize,
    },
    /// In [`Mode::Verify`](crate::Mode::Verify): the server answered the call, a list or
    /// `initialize` unlike the recording ([`Miss::closest`] is the recorded line, with the
    /// differences of the server's answer; for `initialize`, of its `serverInfo`).
    Drift,
    /// The recording holds the call with no answer yet, written by hand ([`Miss::closest`] is that
    /// line): a replay of the recording with update against the real server fills it in.
    Unanswered,
}

/// The recorded call closest to a missed request, and how the request differs from it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Closest {
    /// Its line in the recording, from 1.
    pub line: usize,
    /// Its name.
    pub name: String,
    /// Where the request differs from it: `name` for the name, else a dot path into the input
    /// (empty for the whole input); `recorded` is the recording's value, `replayed` the request's.
    pub differences: Vec<Difference>,
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let call = shown_call(&self.method, &self.name);
        match &self.kind {
            MissKind::NotRecorded => {
                let input = match &self.input {
                    Some(input) => format!(" with input {input}"),
                    None => String::new(),
                };
                write!(f, "no recorded answer for {call}{input}")?;
                match &self.closest {
                    Some(closest) => write!(
                        f,
                        "; closest recorded call: {} (line {}), {}",
                        shown_call(&self.method, &closest.name),
                        closest.line,
                        shown_differences(&closest.differences, "asked")
                    ),
                    None => write!(f, "; the recording holds no {} call", self.method),
                }
            }
            MissKind::AskAnswer { method, index } => {
                write!(
                    f,
                    "the client answered the server's {method} (asks.{index}) during {call} unlike the recorded client"
                )?;
                self.write_recorded_line(f)
            }
            MissKind::Unanswered => {
                write!(f, "no recorded answer for {call}")?;
                if let Some(closest) = &self.closest {
                    write!(f, ": line {} holds it with no answer yet", closest.line)?;
                }
                f.write_str(
                    "; `calltape replay --update FILE -- SERVER…` fills in the answers of the \
                     calls written by hand",
                )
            }
            MissKind::Drift => {
                write!(f, "the server answered {call} unlike the recording")?;
                self.write_recorded_line(f)
            }
        }
    }
}

impl Miss {
    /// ` (line N), differing at …`: the recorded call an answer was compared with, and how the
    /// answer differs from it.
    fn write_recorded_line(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.closest {
            Some(closest) => write!(
                f,
                " (line {}), {}",
                closest.line,
                shown_differences(&closest.differences, "answered")
            ),
            None => Ok(()),
        }
    }
}

/// `tools/call get-sum`, or the method alone for a call without a name.
fn shown_call(method: &str, name: &str) -> String {
    if name.is_empty() {
        method.to_owned()
    } else {
        format!("{method} {name}")
    }
}

/// `differing at a: recorded 40, asked 41; …`.
fn shown_differences(differences: &[Difference], side: &str) -> String {
    let shown = |value: &Option<Value>| match value {
        Some(value) => value.to_string(),
        None => "absent".to_owned(),
    };
    let mut out = String::from("differing at ");
    for (at, d) in differences.iter().take(SHOWN_DIFFERENCES).enumerate() {
        if at > 0 {
            out.push_str("; ");
        }
        let path = if d.path.is_empty() {
            "the whole input"
        } else {
            d.path.as_str()
        };
        let _ = write!(
            out,
            "{path}: recorded {}, {side} {}",
            shown(&d.recorded),
            shown(&d.replayed)
        );
    }
    if differences.len() > SHOWN_DIFFERENCES {
        let _ = write!(out, "; and {} more", differences.len() - SHOWN_DIFFERENCES);
    }
    out
}

/// The recorded calls a mock answers from, each with how often it was answered.
#[derive(Debug)]
pub(crate) struct Calls {
    calls: Vec<RecordedCall>,
    answered: Vec<usize>,
    comparer: Comparer,
    redactor: Redactor,
}

impl Calls {
    pub(crate) fn new(calls: Vec<RecordedCall>, redactor: Redactor) -> Self {
        Self {
            answered: vec![0; calls.len()],
            calls,
            comparer: Comparer::new(),
            redactor,
        }
    }

    pub(crate) fn get(&self, index: usize) -> &RecordedCall {
        &self.calls[index]
    }

    pub(crate) fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The index of the recorded call that answers `method` on `name` with `input`: of the calls that
    /// match, in file order, the first not answered yet, else the last one. A [`Miss`] naming the
    /// closest call of the method when none matches.
    pub(crate) fn find(
        &mut self,
        method: &str,
        name: &str,
        input: Option<&Value>,
    ) -> Result<usize, Box<Miss>> {
        let input = input.map(|input| self.redactor.redacted_value(input));
        let mut last = None;
        let mut chosen = None;
        for (index, call) in self.calls.iter().enumerate() {
            let record = &call.record;
            if record.method != method
                || !self.name_matches(&record.name, name)
                || !self.input_differences(record, input.as_ref()).is_empty()
            {
                continue;
            }
            last = Some(index);
            if self.answered[index] == 0 {
                chosen = Some(index);
                break;
            }
        }
        match chosen.or(last) {
            Some(index) => {
                self.answered[index] += 1;
                Ok(index)
            }
            None => Err(Box::new(Miss {
                method: method.to_owned(),
                name: name.to_owned(),
                closest: self.closest(method, name, input.as_ref()),
                input,
                kind: MissKind::NotRecorded,
            })),
        }
    }

    /// The recorded call of `method` the request differs least from: a differing name counts more
    /// than any number of input differences, and the first in file order wins a tie.
    fn closest(&self, method: &str, name: &str, input: Option<&Value>) -> Option<Closest> {
        let mut best: Option<(usize, Closest)> = None;
        for call in &self.calls {
            let record = &call.record;
            if record.method != method {
                continue;
            }
            let mut differences = Vec::new();
            let name_differs = !self.name_matches(&record.name, name);
            if name_differs {
                differences.push(Difference::new(
                    "name",
                    Some(Value::String(record.name.clone())),
                    Some(Value::String(name.to_owned())),
                ));
            }
            differences.extend(self.input_differences(record, input));
            let score = usize::from(name_differs) * 1_000_000 + differences.len();
            if best.as_ref().is_none_or(|(s, _)| score < *s) {
                best = Some((
                    score,
                    Closest {
                        line: call.line,
                        name: record.name.clone(),
                        differences,
                    },
                ));
            }
        }
        best.map(|(_, closest)| closest)
    }

    /// A recorded name matches the asked one as written, once redacted, or with each `[REDACTED]` in
    /// it matching any text at its place.
    fn name_matches(&self, recorded: &str, asked: &str) -> bool {
        recorded == asked
            || (recorded.contains(REDACTED)
                && (matches_pattern(recorded, asked)
                    || recorded == self.redactor.redact_text(asked)))
    }

    /// How the asked (redacted) input differs from the recorded one; none when the line holds no
    /// input (older resource reads).
    fn input_differences(&self, record: &CallRecord, input: Option<&Value>) -> Vec<Difference> {
        let Some(recorded) = &record.input else {
            return Vec::new();
        };
        let empty = Value::Object(serde_json::Map::new());
        let asked = input.unwrap_or(&empty);
        let comparison = self.comparer.compare(
            &Outcome::Answer(recorded.clone()),
            &Outcome::Answer(asked.clone()),
        );
        match comparison.status {
            Status::Same => Vec::new(),
            _ => comparison.differences,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use calltape_recorder::mcp::Recording;
    use serde_json::json;

    fn calls(lines: &[(&str, &str, Value, Value)]) -> Calls {
        let text: String = lines
            .iter()
            .map(|(method, name, input, answer)| {
                format!(
                    "{}\n",
                    json!({"v": 1, "at": "2026-11-29T20:46:45.123Z", "session": "aaaaaaaa",
                        "method": method, "name": name, "input": input, "answer": answer,
                        "durationMs": 1})
                )
            })
            .collect();
        let recording = Recording::parse("calls.jsonl", text.as_bytes()).unwrap();
        Calls::new(recording.calls, Redactor::new())
    }

    fn answer(calls: &Calls, index: usize) -> &Value {
        match &calls.get(index).record.outcome {
            Outcome::Answer(answer) => answer,
            Outcome::Error(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn requests_find_their_recorded_call() {
        let mut calls = calls(&[
            (
                "tools/call",
                "echo",
                json!({"message": "hi", "apiKey": "[REDACTED]"}),
                json!(1),
            ),
            (
                "tools/call",
                "get-sum",
                json!({"a": 2, "b": 40, "opts": {"x": 1, "y": [1, 2]}}),
                json!(2),
            ),
            (
                "resources/read",
                "demo://doc?token=[REDACTED]",
                json!({"uri": "demo://doc?token=[REDACTED]"}),
                json!(3),
            ),
            ("prompts/get", "simple", json!({}), json!(4)),
        ]);
        // (method, name, input, the answer found, or the miss's message)
        let cases: Vec<(&str, &str, Value, Result<Value, &str>)> = vec![
            // `[REDACTED]` matches any value at its place, of any type.
            (
                "tools/call",
                "echo",
                json!({"message": "hi", "apiKey": "k-1"}),
                Ok(json!(1)),
            ),
            (
                "tools/call",
                "echo",
                json!({"apiKey": {"n": 7}, "message": "hi"}),
                Ok(json!(1)),
            ),
            // Key order never matters, nested objects included.
            (
                "tools/call",
                "get-sum",
                json!({"opts": {"y": [1, 2], "x": 1}, "b": 40, "a": 2}),
                Ok(json!(2)),
            ),
            // A `[REDACTED]` inside a recorded text matches any text at that place.
            (
                "resources/read",
                "demo://doc?token=abc123",
                json!({"uri": "demo://doc?token=abc123"}),
                Ok(json!(3)),
            ),
            ("prompts/get", "simple", Value::Null, Ok(json!(4))),
            (
                "tools/call",
                "get-sum",
                json!({"a": 2, "b": 41, "opts": {"x": 1, "y": [1, 2]}}),
                Err(
                    r#"no recorded answer for tools/call get-sum with input {"a":2,"b":41,"opts":{"x":1,"y":[1,2]}}; closest recorded call: tools/call get-sum (line 2), differing at b: recorded 40, asked 41"#,
                ),
            ),
            (
                "tools/call",
                "echo",
                json!({"apiKey": "k"}),
                Err(
                    r#"no recorded answer for tools/call echo with input {"apiKey":"[REDACTED]"}; closest recorded call: tools/call echo (line 1), differing at message: recorded "hi", asked absent"#,
                ),
            ),
            (
                "tools/call",
                "get-product",
                json!({"a": 2, "b": 40, "opts": {"x": 1, "y": [1, 2]}}),
                Err(
                    r#"no recorded answer for tools/call get-product with input {"a":2,"b":40,"opts":{"x":1,"y":[1,2]}}; closest recorded call: tools/call get-sum (line 2), differing at name: recorded "get-sum", asked "get-product""#,
                ),
            ),
            (
                "completion/complete",
                "",
                json!({}),
                Err(
                    r#"no recorded answer for completion/complete with input {}; the recording holds no completion/complete call"#,
                ),
            ),
        ];
        for (method, name, input, want) in cases {
            let input = (!input.is_null()).then_some(input);
            let got = calls
                .find(method, name, input.as_ref())
                .map(|index| answer(&calls, index).clone())
                .map_err(|miss| miss.to_string());
            assert_eq!(
                got,
                want.map_err(str::to_owned),
                "{method} {name} {input:?}"
            );
        }
    }

    #[test]
    fn a_repeated_call_gets_its_recorded_answers_in_order_then_the_last_again() {
        let mut calls = calls(&[
            ("tools/call", "next", json!({"q": 1}), json!("first")),
            ("tools/call", "other", json!({}), json!("other")),
            ("tools/call", "next", json!({"q": 1}), json!("second")),
            (
                "tools/call",
                "next",
                json!({"q": 2}),
                json!("another input"),
            ),
        ]);
        let mut got = Vec::new();
        for _ in 0..4 {
            let index = calls
                .find("tools/call", "next", Some(&json!({"q": 1})))
                .unwrap();
            got.push(answer(&calls, index).clone());
        }
        assert_eq!(
            got,
            [
                json!("first"),
                json!("second"),
                json!("second"),
                json!("second")
            ]
        );
    }

    #[test]
    fn a_miss_names_at_most_three_differences_and_counts_the_rest() {
        let mut calls = calls(&[(
            "tools/call",
            "t",
            json!({"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}),
            json!(0),
        )]);
        let miss = calls
            .find(
                "tools/call",
                "t",
                Some(&json!({"a": 2, "b": 2, "c": 2, "d": 2})),
            )
            .unwrap_err();
        assert_eq!(
            miss.to_string(),
            r#"no recorded answer for tools/call t with input {"a":2,"b":2,"c":2,"d":2}; closest recorded call: tools/call t (line 1), differing at a: recorded 1, asked 2; b: recorded 1, asked 2; c: recorded 1, asked 2; and 2 more"#
        );
        assert_eq!(miss.closest.unwrap().differences.len(), 5);
    }
}

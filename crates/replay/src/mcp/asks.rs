//! Answering what the server asks the client during a replayed call, from the recording.
//!
//! A call record keeps each request the server sent the client during the call (sampling,
//! elicitation, roots, …) with the client's answer (calltape-recorder's `asks`). A replay declares
//! the recorded client's capabilities, so the server offers what it offered then, and answers each
//! of the server's requests with a recorded answer:
//!
//! 1. the call's first unused ask of the same method whose params compare equal (as answers do,
//!    `[REDACTED]` matching anything);
//! 2. else the call's first unused ask of the same method: its answer is sent, and the report notes
//!    how the request differed;
//! 3. else an unused ask of the same method and equal params recorded on another call of the
//!    session, the nearest first: which call a request belonged to is a guess when the recording
//!    client had no call or several in flight (a server that asks for the roots once the session
//!    starts, whenever that falls);
//! 4. else nothing answers it: the server gets a JSON-RPC error (-32601, `data.reason`
//!    `not_recorded`), and the call a difference `asks.N` (the request, recorded as absent), which
//!    makes a `same` call `changed`.
//!
//! A recorded ask the server did not make is noted with its call. In 2026-07-28 the requests come
//! as an `input_required` result's `inputRequests`: the call is sent again with the answers as
//! `inputResponses`, at most [`MAX_INPUT_ROUNDS`] times. A round with a request the recording
//! cannot answer (or answered with an error, which a 2026-07-28 client cannot send) is not
//! retried, since the server would ask the same again: the call's outcome is that
//! `input_required` result.
//!
//! What the server asks is redacted, and every filled value hidden, before it is compared or
//! reported; a recorded answer that holds `"[REDACTED]"` at a filled field is sent with the value.

use std::fmt;

use calltape_recorder::mcp::{Ask, CallRecord, Outcome, hide_sent_values};
use calltape_redact::Redactor;
use calltape_stdio_bridge::vocab::PING;
use calltape_stdio_bridge::vocab::{INTERNAL_ERROR, METHOD_NOT_FOUND};
use serde_json::{Map, Value, json};

use crate::mcp::compare::{Comparer, Difference, Status};
use crate::mcp::fill::Fills;
use crate::mcp::replayed_session::Conn;

/// The most rounds of `input_required` a replayed 2026-07-28 call answers, as the SDKs allow.
pub const MAX_INPUT_ROUNDS: u32 = 10;

/// The `data.reason` of the error a request with no recorded answer gets.
pub const NOT_RECORDED: &str = "not_recorded";

/// Something a report says about the server's requests to the client during a call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AskNote {
    /// The ask's place among the call's, from 1: among the requests the server made in the
    /// replay for [`AskNoteKind::Differs`], among the recorded asks for [`AskNoteKind::NotAsked`].
    pub ask: usize,
    /// The request's method.
    pub method: String,
    /// What happened.
    pub kind: AskNoteKind,
}

/// What an [`AskNote`] says.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AskNoteKind {
    /// The server's request differed from the recorded one whose answer it got: where, its paths
    /// starting at `params`.
    Differs(Vec<Difference>),
    /// The recording holds this ask and its answer, and the server did not ask it.
    NotAsked,
}

impl fmt::Display for AskNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            AskNoteKind::Differs(differences) => {
                write!(
                    f,
                    "ask {} {}: answered as recorded, though the request differs: ",
                    self.ask, self.method
                )?;
                for (n, d) in differences.iter().enumerate() {
                    if n > 0 {
                        f.write_str("; ")?;
                    }
                    write!(
                        f,
                        "{}: {} → {}",
                        d.path,
                        short(d.recorded.as_ref()),
                        short(d.replayed.as_ref())
                    )?;
                }
                Ok(())
            }
            AskNoteKind::NotAsked => write!(
                f,
                "ask {} {}: recorded, and the server did not ask it",
                self.ask, self.method
            ),
        }
    }
}

/// A value as a note shows it: JSON, cut to 120 bytes.
fn short(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "(absent)".into();
    };
    let text = value.to_string();
    if text.len() <= 120 {
        return text;
    }
    let mut end = 120;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// What the server asked during one call, as its report takes it.
#[derive(Debug, Clone, Default)]
pub(crate) struct AskReport {
    /// The requests nothing recorded answered, as differences `asks.N`.
    pub(crate) unexpected: Vec<Difference>,
    pub(crate) notes: Vec<AskNote>,
}

impl AskReport {
    /// Adds the unexpected requests to a call's differences: a call the server asked something
    /// unrecorded is not `same`, whatever it answered.
    pub(crate) fn apply(&mut self, status: &mut Status, differences: &mut Vec<Difference>) {
        if self.unexpected.is_empty() {
            return;
        }
        if *status == Status::Same {
            *status = Status::Changed;
        }
        differences.append(&mut self.unexpected);
    }
}

/// The recorded asks of one session's calls, and what the replay did with them.
#[derive(Debug)]
pub(crate) struct Answerer {
    /// Per call of the session, in order: its recorded asks, each with whether it was used.
    calls: Vec<Vec<(Ask, bool)>>,
    reports: Vec<AskReport>,
    /// How many requests the server made during each call.
    made: Vec<usize>,
    /// The call being replayed, by its place in the session.
    current: usize,
    redactor: Redactor,
    fills: Fills,
}

/// How to answer one of the server's requests.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// A `result`, as JSON text in the recorded client's key order.
    Result(String),
    /// A JSON-RPC `error` object.
    Error(Value),
}

impl Answerer {
    /// The asks of a session's `calls`, in order.
    pub(crate) fn new<'a>(
        calls: impl IntoIterator<Item = &'a CallRecord>,
        redactor: &Redactor,
        fills: &Fills,
    ) -> Self {
        let calls: Vec<Vec<(Ask, bool)>> = calls
            .into_iter()
            .map(|c| c.asks.iter().map(|a| (a.clone(), false)).collect())
            .collect();
        let n = calls.len();
        Self {
            calls,
            reports: vec![AskReport::default(); n],
            made: vec![0; n],
            current: 0,
            redactor: redactor.clone(),
            fills: fills.clone(),
        }
    }

    /// The requests from now on are made during the session's call at `position`.
    pub(crate) fn start(&mut self, position: usize) {
        self.current = position.min(self.calls.len().saturating_sub(1));
    }

    /// The answer to the server's request of `method` with `params`.
    pub(crate) fn answer(&mut self, method: &str, params: Option<&Value>) -> Reply {
        let current = self.current;
        let Some(made) = self.made.get_mut(current) else {
            return not_recorded(method);
        };
        let index = *made;
        *made += 1;
        // What the server asked, as a report may show it: no filled value, redacted.
        let mut asked = Outcome::Answer(params.cloned().unwrap_or(Value::Null));
        hide_sent_values(&mut asked, self.fills.values());
        calltape_recorder::mcp::redact_outcome(&self.redactor, &mut asked);
        let Outcome::Answer(asked) = asked else {
            return not_recorded(method);
        };
        let comparer = Comparer::new();
        let differences = |ask: &Ask| {
            let recorded = Outcome::Answer(ask.params.clone().unwrap_or(Value::Null));
            comparer
                .compare(&recorded, &Outcome::Answer(asked.clone()))
                .differences
        };
        let own = &self.calls[current];
        let unused = |(ask, used): &&(Ask, bool)| !*used && ask.method == method;
        let equal = own
            .iter()
            .position(|entry| unused(&entry) && differences(&entry.0).is_empty());
        let found = match equal {
            Some(at) => Some((current, at)),
            None => match own.iter().position(|entry| unused(&entry)) {
                Some(at) => {
                    let mut found = differences(&own[at].0);
                    for d in &mut found {
                        d.path = prefixed("params", &d.path);
                    }
                    self.reports[current].notes.push(AskNote {
                        ask: index + 1,
                        method: method.to_owned(),
                        kind: AskNoteKind::Differs(found),
                    });
                    Some((current, at))
                }
                None => self.elsewhere(|ask| ask.method == method && differences(ask).is_empty()),
            },
        };
        let Some((call, at)) = found else {
            let mut request = Map::new();
            request.insert("method".into(), Value::String(method.to_owned()));
            if params.is_some() {
                request.insert("params".into(), asked);
            }
            self.reports[current].unexpected.push(Difference {
                path: format!("asks.{index}"),
                recorded: None,
                replayed: Some(Value::Object(request)),
                // Shown whole, the request and not only that there was one.
                item: false,
            });
            return not_recorded(method);
        };
        let entry = &mut self.calls[call][at];
        entry.1 = true;
        match &entry.0.answer {
            Outcome::Answer(answer) => {
                let mut filled = answer.clone();
                self.fills.apply(&mut filled);
                // As recorded, key order included, unless a value was filled in.
                match (&filled == answer, entry.0.answer_json()) {
                    (true, Some(text)) => Reply::Result(text),
                    _ => Reply::Result(filled.to_string()),
                }
            }
            Outcome::Error(error) => {
                let code = match error.code {
                    calltape_recorder::mcp::ErrorCode::Number(code) => code,
                    calltape_recorder::mcp::ErrorCode::Text(_) => INTERNAL_ERROR,
                };
                let message = error
                    .message
                    .clone()
                    .unwrap_or_else(|| "the recorded client answered with an error".into());
                Reply::Error(json!({"code": code, "message": message}))
            }
        }
    }

    /// An unused ask `fits` of another call of the session, the nearest call first (a later one
    /// before an earlier one as near).
    fn elsewhere(&self, fits: impl Fn(&Ask) -> bool) -> Option<(usize, usize)> {
        let current = self.current;
        let mut order: Vec<usize> = (0..self.calls.len()).filter(|&c| c != current).collect();
        order.sort_by_key(|&c| (c.abs_diff(current), c < current));
        order.into_iter().find_map(|call| {
            self.calls[call]
                .iter()
                .position(|(ask, used)| !*used && fits(ask))
                .map(|at| (call, at))
        })
    }

    /// Each call's report, in session order, once the session ended: what it was asked that
    /// nothing answered, how requests differed, and the recorded asks nobody asked.
    pub(crate) fn finish(&mut self) -> Vec<AskReport> {
        for (call, asks) in self.calls.iter().enumerate() {
            for (at, (ask, used)) in asks.iter().enumerate() {
                if !used {
                    self.reports[call].notes.push(AskNote {
                        ask: at + 1,
                        method: ask.method.clone(),
                        kind: AskNoteKind::NotAsked,
                    });
                }
            }
        }
        std::mem::take(&mut self.reports)
    }
}

/// `path` under `prefix`, as the comparison's dot paths read.
fn prefixed(prefix: &str, path: &str) -> String {
    if path.is_empty() {
        prefix.to_owned()
    } else {
        format!("{prefix}.{path}")
    }
}

/// The error a request gets that nothing recorded answers.
fn not_recorded(method: &str) -> Reply {
    Reply::Error(json!({
        "code": METHOD_NOT_FOUND,
        "message": format!(
            "calltape replay has no recorded answer for {method} here: the recorded client was not \
             asked it during this call; record the session again to keep its answer"
        ),
        "data": {"reason": NOT_RECORDED, "method": method},
    }))
}

/// The `inputRequests` of an `input_required` result, when `answer` is one (empty when it has
/// none: the call is then sent again with the state alone).
fn input_requests(answer: &Value) -> Option<Map<String, Value>> {
    let result = answer.get("result")?;
    if result.get("resultType")?.as_str()? != "input_required" {
        return None;
    }
    Some(
        result
            .get("inputRequests")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    )
}

impl Conn {
    /// The answer to a request the server sent during a replay, as JSON text: `ping` is answered
    /// at once, any other from the recording.
    pub(super) fn answer_server_request(&mut self, message: &Value) -> String {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let (key, body) = if method == PING {
            ("result", "{}".to_owned())
        } else {
            match self.asks.answer(method, message.get("params")) {
                Reply::Result(result) => ("result", result),
                Reply::Error(error) => ("error", error.to_string()),
            }
        };
        format!(r#"{{"jsonrpc":"2.0","id":{id},"{key}":{body}}}"#)
    }

    /// A 2026-07-28 call's answer once its `input_required` rounds are answered from the
    /// recording: `answer` when it asks for no input.
    pub(super) async fn answer_input_required(
        &mut self,
        request: &Value,
        mut answer: Value,
    ) -> Result<Value, String> {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        for round in 1..=MAX_INPUT_ROUNDS {
            let Some(requests) = input_requests(&answer) else {
                break;
            };
            let mut responses = Map::new();
            let mut all = true;
            for (key, asked) in requests {
                let method = asked.get("method").and_then(Value::as_str).unwrap_or("");
                match self.asks.answer(method, asked.get("params")) {
                    Reply::Result(result) => match serde_json::from_str(&result) {
                        Ok(result) => drop(responses.insert(key, result)),
                        Err(_) => all = false,
                    },
                    Reply::Error(_) => all = false,
                }
            }
            // A 2026-07-28 client cannot answer one request with an error, and a retry without
            // its answer would be asked the same again: the call ends with what asks for input.
            if !all {
                break;
            }
            let state = answer.pointer("/result/requestState").cloned();
            let mut retry = request.clone();
            retry["id"] = json!(format!("calltape-retry-{id}-{round}"));
            if let Some(params) = retry.get_mut("params").and_then(Value::as_object_mut) {
                params.insert("inputResponses".into(), Value::Object(responses));
                match state {
                    Some(state) => params.insert("requestState".into(), state),
                    None => params.remove("requestState"),
                };
            }
            answer = self.request(&retry).await?;
        }
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use calltape_recorder::mcp::{CallError, ErrorCode};

    fn record(asks: Vec<Ask>) -> CallRecord {
        let mut record = CallRecord::new("s", "tools/call", "t", Outcome::Answer(json!({})));
        record.asks = asks;
        record
    }

    fn sampling(text: &str, answer: &str) -> Ask {
        Ask::new(
            "sampling/createMessage",
            Some(json!({"messages": [{"content": {"text": text}}], "maxTokens": 5})),
            Outcome::Answer(json!({"content": {"text": answer}})),
        )
    }

    fn asked(text: &str) -> Value {
        json!({"messages": [{"content": {"text": text}}], "maxTokens": 5})
    }

    fn answered(reply: &Reply) -> String {
        match reply {
            Reply::Result(result) => {
                let result: Value = serde_json::from_str(result).unwrap();
                match result.get("roots") {
                    Some(_) => "roots".into(),
                    None => result["content"]["text"].as_str().unwrap_or("?").into(),
                }
            }
            Reply::Error(error) => error["data"]["reason"].as_str().unwrap_or("error").into(),
        }
    }

    #[test]
    fn requests_are_answered_by_method_and_content_in_order_and_the_rest_is_reported() {
        let roots = Ask::new("roots/list", None, Outcome::Answer(json!({"roots": []})));
        let refused = Ask::new(
            "elicitation/create",
            Some(json!({"message": "which day?"})),
            Outcome::Error(CallError::new(
                ErrorCode::Number(-1),
                Some("user said no".into()),
            )),
        );
        let calls = [
            record(vec![sampling("a", "first"), sampling("b", "second")]),
            record(vec![refused, sampling("c", "third")]),
            record(vec![roots]),
        ];
        let mut answerer = Answerer::new(&calls, &Redactor::new(), &Fills::new());
        // (call, method, params, the answer sent)
        let rows: &[(usize, &str, Option<Value>, &str)] = &[
            // Equal content first, whatever the order.
            (0, "sampling/createMessage", Some(asked("b")), "second"),
            // Else the first of the method left, noted.
            (
                0,
                "sampling/createMessage",
                Some(asked("z [REDACTED]")),
                "first",
            ),
            // None left of the method, nor elsewhere with equal content.
            (0, "sampling/createMessage", Some(asked("a")), NOT_RECORDED),
            // Another call's, with equal content: the roots asked early.
            (1, "roots/list", None, "roots"),
            (
                1,
                "elicitation/create",
                Some(json!({"message": "which day?"})),
                "error",
            ),
            (2, "tools/list", None, NOT_RECORDED),
        ];
        for (call, method, params, want) in rows {
            answerer.start(*call);
            let reply = answerer.answer(method, params.as_ref());
            assert_eq!(
                answered(&reply),
                *want,
                "{method} in call {call}: {reply:?}"
            );
        }
        answerer.start(1);
        assert_eq!(
            answerer.answer("elicitation/create", None),
            Reply::Error(json!({
                "code": -32601,
                "message": "calltape replay has no recorded answer for elicitation/create here: the recorded client was not asked it during this call; record the session again to keep its answer",
                "data": {"reason": "not_recorded", "method": "elicitation/create"},
            }))
        );
        let reports = answerer.finish();
        let notes: Vec<Vec<String>> = reports
            .iter()
            .map(|r| r.notes.iter().map(ToString::to_string).collect())
            .collect();
        assert_eq!(
            notes,
            [
                vec![r#"ask 2 sampling/createMessage: answered as recorded, though the request differs: params.messages.0.content.text: "a" → "z [REDACTED]""#.to_owned()],
                vec!["ask 2 sampling/createMessage: recorded, and the server did not ask it".to_owned()],
                vec![],
            ]
        );
        let unexpected: Vec<(usize, &str)> = reports
            .iter()
            .enumerate()
            .flat_map(|(call, r)| r.unexpected.iter().map(move |d| (call, d.path.as_str())))
            .collect();
        assert_eq!(unexpected, [(0, "asks.2"), (1, "asks.2"), (2, "asks.0")]);
        assert_eq!(
            reports[0].unexpected[0].replayed,
            Some(json!({"method": "sampling/createMessage", "params": asked("a")}))
        );
    }

    #[test]
    fn what_the_server_asks_is_reported_redacted_and_recorded_answers_are_filled() {
        let ask = Ask::new(
            "elicitation/create",
            Some(json!({"message": "token?"})),
            Outcome::Answer(json!({"action": "accept", "content": {"apiKey": "[REDACTED]"}})),
        );
        let fills = Fills::new().value("apiKey", "ak_fill_0123456789");
        let calls = [record(vec![ask])];
        let mut answerer = Answerer::new(&calls, &Redactor::new(), &fills);
        let reply = answerer.answer(
            "elicitation/create",
            Some(
                &json!({"message": "token? Bearer abcdefghijklmnopqrstuvwxyz, ak_fill_0123456789"}),
            ),
        );
        assert_eq!(
            reply,
            Reply::Result(
                json!({"action": "accept", "content": {"apiKey": "ak_fill_0123456789"}})
                    .to_string()
            )
        );
        let unexpected = answerer.answer(
            "sampling/createMessage",
            Some(&json!({"password": "hunter2hunter2"})),
        );
        assert!(matches!(unexpected, Reply::Error(_)));
        let report = answerer.finish().remove(0);
        let text = format!("{:?}", report);
        assert!(
            !text.contains("abcdefghijklmnop")
                && !text.contains("ak_fill")
                && !text.contains("hunter2"),
            "{text}"
        );
        assert_eq!(
            report.unexpected[0].replayed,
            Some(json!({"method": "sampling/createMessage", "params": {"password": "[REDACTED]"}}))
        );
    }

    #[test]
    fn an_unexpected_request_makes_a_same_call_changed() {
        let mut report = AskReport {
            unexpected: vec![Difference {
                path: "asks.0".into(),
                recorded: None,
                replayed: Some(json!({"method": "roots/list"})),
                item: false,
            }],
            notes: vec![],
        };
        let (mut status, mut differences) = (Status::Same, vec![]);
        report.apply(&mut status, &mut differences);
        assert_eq!((status, differences.len()), (Status::Changed, 1));
        let mut status = Status::NewError;
        AskReport::default().apply(&mut status, &mut differences);
        assert_eq!((status, differences.len()), (Status::NewError, 1));
    }
}

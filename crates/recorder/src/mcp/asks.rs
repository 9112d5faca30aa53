//! What the server asks the client during a call: a call record's `asks`, and how the recorder
//! collects them.
//!
//! A tool may ask the client back before it answers: for a completion (`sampling/createMessage`),
//! for the user's input (`elicitation/create`), for the client's folders (`roots/list`). A replay
//! has no client to ask, so the record keeps each such request and the client's answer, in the
//! order the server asked, and replay answers from them.
//!
//! In the handshake era the server sends a request of its own while the call is in flight; its
//! answer comes back from the client under the server's id. Nothing on stdio says which call a
//! request belongs to (the SDKs pass the related request's id to the transport, which only uses
//! it to pick an HTTP stream), so the recorder attributes it:
//!
//! - to the call whose task it names in `_meta["io.modelcontextprotocol/related-task"]`;
//! - else to the one recorded call in flight, or the oldest of several (the call a server that
//!   asks at once, as the reference servers do, answers first; calltape's era bridge hands a
//!   server's request to the oldest request in flight too);
//! - else, with no call in flight (a server that asks for the roots once the session starts), to
//!   the session's next recorded call, which a replay sends first after that moment.
//!
//! In 2026-07-28 the asks are the `inputRequests` of an `input_required` result, and the answers
//! the client's retry's `inputResponses` under the same keys.
//!
//! `ping` is not an ask: a replay answers it itself. Params and answers go through the redactor,
//! and the values the call's input and the client's answers held under credential names are hidden
//! wherever the asks and the answer hold them again.

// A `ping` is answered by the client without asking anyone: never an ask.
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use calltape_redact::Redactor;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use calltape_redact::KnownSecrets;
use calltape_stdio_bridge::vocab::PING;

use crate::known_secrets;
use crate::mcp::format::{
    CallError, FieldProblem, Outcome, expected, problem, take_outcome, type_name,
};
use crate::mcp::json_text::{self, IdKey, IdMap};
use crate::mcp::redaction::redact_outcome;

/// One request the server sent the client during a call, and the client's answer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Ask {
    /// The method, such as `sampling/createMessage`.
    pub method: String,
    /// The request's `params`, redacted; absent when it had none.
    pub params: Option<Value>,
    /// The client's `result` ([`Outcome::Answer`]) or JSON-RPC error ([`Outcome::Error`]), redacted.
    pub answer: Outcome,
    /// The result as the line holds it, with the client's key order, which a `Value` does not
    /// keep: a server that prints what it was given (`JSON.stringify`) prints it in that order.
    answer_text: Option<Box<RawValue>>,
}

/// Two asks are equal when their method, params and answer are, however the answer's keys are
/// ordered.
impl PartialEq for Ask {
    fn eq(&self, other: &Self) -> bool {
        (&self.method, &self.params, &self.answer) == (&other.method, &other.params, &other.answer)
    }
}

/// The fields an ask may hold.
const ASK_FIELDS: &[&str] = &["method", "params", "answer", "error"];

/// The most asks kept for one call: a server that asks more is not recorded past it.
pub const MAX_ASKS: usize = 256;

impl Ask {
    /// An ask of `method` with `params`, answered with `answer`.
    pub fn new(method: impl Into<String>, params: Option<Value>, answer: Outcome) -> Self {
        Self {
            method: method.into(),
            params,
            answer,
            answer_text: None,
        }
    }

    /// The result as JSON text with the keys in the order the client sent them (when the ask was
    /// read from a recording; else as [`answer`](Self::answer) serializes), `None` for an error.
    pub fn answer_json(&self) -> Option<String> {
        match (&self.answer_text, &self.answer) {
            (Some(text), _) => Some(text.get().to_owned()),
            (None, Outcome::Answer(answer)) => serde_json::to_string(answer).ok(),
            (None, Outcome::Error(_)) => None,
        }
    }

    /// Keeps each ask's result text as `line` holds it, key order included (`asks` were read from
    /// the same line).
    pub(crate) fn keep_answer_texts(asks: &mut [Ask], line: &[u8]) {
        #[derive(serde::Deserialize)]
        struct Line<'a> {
            #[serde(borrow)]
            asks: Vec<Answer<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Answer<'a> {
            #[serde(borrow)]
            answer: Option<&'a RawValue>,
        }
        let Ok(line) = serde_json::from_slice::<Line<'_>>(line) else {
            return;
        };
        for (ask, raw) in asks.iter_mut().zip(line.asks) {
            if let (Some(raw), Outcome::Answer(_)) = (raw.answer, &ask.answer) {
                ask.answer_text = Some(raw.to_owned());
            }
        }
    }

    /// A record's `asks`, checked as strictly as the rest of the line.
    pub(crate) fn list_from_value(value: Value) -> Result<Vec<Self>, FieldProblem> {
        let Value::Array(items) = value else {
            return Err(expected("asks", "an array", &value));
        };
        items
            .into_iter()
            .enumerate()
            .map(|(at, item)| {
                Self::from_value(item).map_err(|mut p| {
                    p.field = Some(match p.field {
                        Some(field) => format!("asks.{at}.{field}"),
                        None => format!("asks.{at}"),
                    });
                    p
                })
            })
            .collect()
    }

    /// One ask; a problem names its field within the ask.
    fn from_value(value: Value) -> Result<Self, FieldProblem> {
        let Value::Object(mut map) = value else {
            return Err(FieldProblem {
                field: None,
                message: format!("expected an object, found {}", type_name(&value)),
            });
        };
        if let Some(unknown) = map.keys().find(|k| !ASK_FIELDS.contains(&k.as_str())) {
            return Err(problem(
                unknown,
                format!("unknown field; an ask has only {}", ASK_FIELDS.join(", ")),
            ));
        }
        let method = match map.remove("method") {
            Some(Value::String(method)) => method,
            Some(other) => return Err(expected("method", "a string", &other)),
            None => return Err(problem("method", "missing; every ask has it")),
        };
        let params = map.remove("params");
        let answer = take_outcome(&mut map, "an ask")?;
        Ok(Self::new(method, params, answer))
    }
}

/// An ask is written `method`, `params` when there are some, then `answer` or `error`.
impl Serialize for Ask {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        match (&self.answer, &self.answer_text) {
            (Outcome::Answer(_), Some(text)) => map.serialize_entry("answer", text)?,
            (Outcome::Answer(answer), None) => map.serialize_entry("answer", answer)?,
            (Outcome::Error(error), _) => map.serialize_entry("error", &error.to_value())?,
        }
        map.end()
    }
}

/// The asks of a session's calls while they are in flight, each call known by a token the book
/// hands out in the order calls start.
#[derive(Debug, Default)]
pub(crate) struct AskBook {
    calls: HashMap<u64, CallAsks>,
    /// The server's requests not answered yet, by the server's id: the call and the ask's place.
    open: IdMap<(u64, usize)>,
    /// The token the next call gets: asks made with no call in flight wait under it.
    next: u64,
}

#[derive(Debug, Default)]
struct CallAsks {
    asks: Vec<OpenAsk>,
}

#[derive(Debug)]
struct OpenAsk {
    method: String,
    params: Option<Value>,
    answer: Option<Answered>,
    /// The key of a 2026-07-28 input request, which its response comes back under.
    input: Option<String>,
}

/// A client's answer, redacted: its result as compact JSON text in the client's key order, or its
/// error.
#[derive(Debug)]
enum Answered {
    Result(String),
    Error(CallError),
}

impl AskBook {
    /// The token of a call that starts now.
    pub(crate) fn start_call(&mut self) -> u64 {
        let token = self.next;
        self.next += 1;
        token
    }

    /// Whether a client's answer may be to a server's request.
    pub(crate) fn awaits_answers(&self) -> bool {
        !self.open.is_empty()
    }

    /// The call a server's request belongs to: the one `related` names, else the oldest of the
    /// calls `in_flight`, else the next call to start.
    pub(crate) fn owner(&self, related: Option<u64>, in_flight: impl Iterator<Item = u64>) -> u64 {
        related.or_else(|| in_flight.min()).unwrap_or(self.next)
    }

    /// A handshake-era request from the server (`message`, with its `method` and `id`) for `call`.
    pub(crate) fn asked(&mut self, call: u64, message: &Value, redactor: &Redactor) {
        let (Some(method), Some(id)) = (
            message.get("method").and_then(Value::as_str),
            message.get("id"),
        ) else {
            return;
        };
        if method == PING {
            return;
        }
        let asks = &mut self.calls.entry(call).or_default().asks;
        if asks.len() >= MAX_ASKS {
            return;
        }
        asks.push(OpenAsk::new(method, message.get("params"), None, redactor));
        self.open
            .insert(IdKey::of_value(id), (call, asks.len() - 1));
    }

    /// The client's response (`id`, and its `result` as JSON text or its `error`) to a server's
    /// request; nothing when it answers none of them.
    pub(crate) fn answered(
        &mut self,
        id: &IdKey,
        result: Option<&str>,
        error: Option<&Value>,
        redactor: &Redactor,
        known: &KnownSecrets,
    ) {
        let Some((call, at)) = self.open.remove(id) else {
            return;
        };
        let Some(asks) = self.calls.get_mut(&call) else {
            return;
        };
        match (result, error) {
            (Some(result), _) => asks.answer_text(at, result, redactor, known),
            (None, Some(error)) => {
                let mut error = Outcome::Error(CallError::from_jsonrpc(error));
                redact_outcome(redactor, &mut error);
                if let (Some(ask), Outcome::Error(error)) = (asks.asks.get_mut(at), error) {
                    ask.answer = Some(Answered::Error(error));
                }
            }
            (None, None) => {}
        }
    }

    /// [`answered`](Self::answered) for a response read as a `Value`.
    pub(crate) fn answered_value(
        &mut self,
        response: &Value,
        redactor: &Redactor,
        known: &KnownSecrets,
    ) {
        let Some(id) = response.get("id") else {
            return;
        };
        let result = response
            .get("result")
            .and_then(|r| serde_json::to_string(r).ok());
        let id = IdKey::of_value(id);
        self.answered(
            &id,
            result.as_deref(),
            response.get("error"),
            redactor,
            known,
        );
    }

    /// The `inputRequests` of a 2026-07-28 `input_required` result for `call`.
    pub(crate) fn input_requests(&mut self, call: u64, result: &Value, redactor: &Redactor) {
        let Some(requests) = result.get("inputRequests").and_then(Value::as_object) else {
            return;
        };
        let asks = &mut self.calls.entry(call).or_default().asks;
        for (key, request) in requests {
            if asks.len() >= MAX_ASKS {
                return;
            }
            let method = request.get("method").and_then(Value::as_str).unwrap_or("");
            let params = request.get("params");
            asks.push(OpenAsk::new(method, params, Some(key.clone()), redactor));
        }
    }

    /// The `inputResponses` of the client's retry of `call`: each answers the latest unanswered
    /// input request of its key.
    pub(crate) fn input_responses(
        &mut self,
        call: u64,
        params: &Value,
        redactor: &Redactor,
        known: &KnownSecrets,
    ) {
        let Some(responses) = params.get("inputResponses").and_then(Value::as_object) else {
            return;
        };
        let Some(asks) = self.calls.get_mut(&call) else {
            return;
        };
        for (key, response) in responses {
            let waiting = asks
                .asks
                .iter()
                .rposition(|a| a.answer.is_none() && a.input.as_deref() == Some(key.as_str()));
            if let (Some(at), Ok(text)) = (waiting, serde_json::to_string(response)) {
                asks.answer_text(at, &text, redactor, known);
            }
        }
    }

    /// Takes the asks of a call that ended, as the JSON array its record holds (`None` when none
    /// was answered), every value of `known` hidden in them.
    pub(crate) fn take(&mut self, call: u64, known: &KnownSecrets) -> Option<Box<str>> {
        let asks = self.calls.remove(&call)?;
        self.open.retain(|_, (owner, _)| *owner != call);
        // Written by hand: a result's text keeps the client's key order.
        let mut out = String::from("[");
        for ask in asks.asks {
            let Some(answer) = ask.answer else { continue };
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str("{\"method\":");
            out.push_str(&serde_json::to_string(&ask.method).ok()?);
            if let Some(mut params) = ask.params {
                known.hide_in_value(&mut params);
                out.push_str(",\"params\":");
                out.push_str(&serde_json::to_string(&params).ok()?);
            }
            match answer {
                Answered::Result(text) => {
                    out.push_str(",\"answer\":");
                    out.push_str(&hide_in_json_text(text, known)?);
                }
                Answered::Error(error) => {
                    let mut error = Outcome::Error(error);
                    crate::mcp::redaction::hide_known(&mut error, known);
                    let Outcome::Error(error) = error else {
                        continue;
                    };
                    out.push_str(",\"error\":");
                    out.push_str(&serde_json::to_string(&error.to_value()).ok()?);
                }
            }
            out.push('}');
        }
        if out.len() == 1 {
            return None;
        }
        out.push(']');
        Some(out.into_boxed_str())
    }
}

impl OpenAsk {
    fn new(
        method: &str,
        params: Option<&Value>,
        input: Option<String>,
        redactor: &Redactor,
    ) -> Self {
        let params = params.cloned().map(|mut params| {
            redactor.redact_value(&mut params);
            params
        });
        Self {
            method: method.to_owned(),
            params,
            answer: None,
            input,
        }
    }
}

impl CallAsks {
    /// Keeps the client's result (JSON text) for ask `at`, redacted and compact, remembering what it
    /// held under credential names.
    fn answer_text(&mut self, at: usize, result: &str, redactor: &Redactor, known: &KnownSecrets) {
        let redacted = redactor.redact_json_text(result);
        if let Cow::Owned(_) = redacted
            && let Ok(original) = serde_json::from_str::<Value>(result)
        {
            known_secrets::learn_named(known, &original, &|name| redactor.is_redacted_name(name));
        }
        let text = json_text::compact_redacted(redacted).into_owned();
        // The redactor keeps JSON valid; should it ever not, the answer is written from a `Value`.
        let text = match serde_json::from_str::<serde::de::IgnoredAny>(&text) {
            Ok(_) => text,
            Err(_) => match serde_json::from_str::<Value>(result) {
                Ok(mut value) => {
                    redactor.redact_value(&mut value);
                    value.to_string()
                }
                Err(_) => return,
            },
        };
        if let Some(ask) = self.asks.get_mut(at) {
            ask.answer = Some(Answered::Result(text));
        }
    }
}

/// `known` hidden in a JSON text, which stays JSON (else they are hidden in its `Value`).
fn hide_in_json_text(text: String, known: &KnownSecrets) -> Option<String> {
    if known.is_empty() {
        return Some(text);
    }
    let hidden = known.hide_in_text(&text).into_owned();
    if serde_json::from_str::<serde::de::IgnoredAny>(&hidden).is_ok() {
        return Some(hidden);
    }
    // A secret that spans JSON's own characters: hidden in the value instead.
    let mut value = serde_json::from_str::<Value>(&text).ok()?;
    known.hide_in_value(&mut value);
    serde_json::to_string(&value).ok()
}

/// The capabilities a client declared, redacted, as the record holds them: `None` when it
/// declared none (an empty object included).
pub(crate) fn declared_capabilities(
    capabilities: Option<&Value>,
    redactor: &Redactor,
) -> Option<Arc<RawValue>> {
    let capabilities = capabilities.filter(|c| c.as_object().is_some_and(|c| !c.is_empty()))?;
    let mut capabilities = capabilities.clone();
    redactor.redact_value(&mut capabilities);
    crate::mcp::params::raw_of(&capabilities)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::CallRecord;
    use crate::mcp::format::ErrorCode;
    use serde_json::json;

    /// Feeds `frames` (`true`: from the client) to one session recording `tools/call`, and reads
    /// the calls back, with the lines as the reader's records write them.
    async fn record(frames: &[(bool, Value)]) -> (Vec<CallRecord>, String) {
        let frames: Vec<(bool, String)> = frames.iter().map(|(c, f)| (*c, f.to_string())).collect();
        record_text(&frames).await
    }

    /// [`record`] for frames written as text.
    async fn record_text(frames: &[(bool, String)]) -> (Vec<CallRecord>, String) {
        let frames: Vec<(bool, &str)> = frames.iter().map(|(c, f)| (*c, f.as_str())).collect();
        let (recording, _) =
            crate::mcp::input_required::tests::record(&frames, &["tools/call"]).await;
        let calls: Vec<CallRecord> = recording.calls.into_iter().map(|c| c.record).collect();
        let text = calls.iter().map(|c| c.to_line() + "\n").collect();
        (calls, text)
    }

    fn call(id: u64, name: &str, arguments: Value) -> (bool, Value) {
        (
            true,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}),
        )
    }

    fn answer(from_client: bool, id: Value, result: Value) -> (bool, Value) {
        (
            from_client,
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )
    }

    fn ask(id: u64, method: &str, params: Option<Value>) -> (bool, Value) {
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            request["params"] = params;
        }
        (false, request)
    }

    const API_KEY: &str = "ak_live_abcdefghijklmnop";
    const PASSWORD: &str = "correct-horse-battery";

    #[tokio::test]
    async fn a_call_keeps_what_the_server_asked_and_the_client_answered_in_order_redacted() {
        let frames = [
            (
                true,
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "clientInfo": {"name": "c", "version": "1"},
                    "capabilities": {"sampling": {}, "elicitation": {}, "experimental": {"vault": {"apiKey": API_KEY}}}}}),
            ),
            answer(
                false,
                json!(0),
                json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}),
            ),
            call(1, "summarise", json!({"topic": "tides", "apiKey": API_KEY})),
            ask(
                0,
                "sampling/createMessage",
                Some(
                    json!({"messages": [{"role": "user", "content": {"type": "text", "text": format!("tides, key {API_KEY}")}}], "maxTokens": 5}),
                ),
            ),
            ask(1, "ping", None),
            answer(true, json!(1), json!({})),
            answer(
                true,
                json!(0),
                json!({"role": "assistant", "content": {"type": "text", "text": "high at noon"}, "model": "m"}),
            ),
            ask(
                2,
                "elicitation/create",
                Some(json!({"message": "Authorization: Bearer abcdefghijklmnopqrstuvwxyz"})),
            ),
            answer(
                true,
                json!(2),
                json!({"action": "accept", "content": {"password": PASSWORD}}),
            ),
            ask(3, "roots/list", None),
            (
                true,
                json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "no roots here"}}),
            ),
            answer(
                false,
                json!(1),
                json!({"content": [{"type": "text", "text": format!("high at noon; you typed {PASSWORD}")}]}),
            ),
        ];
        let (calls, text) = record(&frames).await;
        assert!(
            !text.contains(API_KEY) && !text.contains(PASSWORD),
            "{text}"
        );
        assert!(!text.contains("abcdefghijklmnopqrstuvwxyz"), "{text}");
        let [summarise] = calls.as_slice() else {
            panic!("{calls:#?}")
        };
        assert_eq!(
            summarise.capabilities,
            json!({"sampling": {}, "elicitation": {}, "experimental": {"vault": {"apiKey": "[REDACTED]"}}})
                .as_object()
                .cloned()
        );
        let asked: Vec<(&str, Option<&Value>, &Outcome)> = summarise
            .asks
            .iter()
            .map(|a| (a.method.as_str(), a.params.as_ref(), &a.answer))
            .collect();
        assert_eq!(
            asked,
            [
                (
                    "sampling/createMessage",
                    Some(
                        &json!({"messages": [{"role": "user", "content": {"type": "text", "text": "tides, key [REDACTED]"}}], "maxTokens": 5})
                    ),
                    &Outcome::Answer(
                        json!({"role": "assistant", "content": {"type": "text", "text": "high at noon"}, "model": "m"})
                    ),
                ),
                (
                    "elicitation/create",
                    Some(&json!({"message": "Authorization: Bearer [REDACTED]"})),
                    &Outcome::Answer(
                        json!({"action": "accept", "content": {"password": "[REDACTED]"}})
                    ),
                ),
                (
                    "roots/list",
                    None,
                    &Outcome::Error(CallError::new(
                        ErrorCode::Number(-32601),
                        Some("no roots here".into())
                    )),
                ),
            ]
        );
        // What the client typed into the elicitation is hidden in the call's answer too.
        assert_eq!(
            summarise.outcome,
            Outcome::Answer(
                json!({"content": [{"type": "text", "text": "high at noon; you typed [REDACTED]"}]})
            )
        );
        // The line keeps the asks' fields in the order the format documents.
        assert!(
            text.contains(r#""asks":[{"method":"sampling/createMessage","params":{"#),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_result_keeps_the_client_s_key_order_on_the_line_and_when_read_back() {
        let frames = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"name?"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":{"name":"Ada","check":true}, "action":"accept"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
        ];
        let frames: Vec<(bool, String)> = frames
            .iter()
            .enumerate()
            .map(|(n, f)| (n % 2 == 0, (*f).to_owned()))
            .collect();
        let (calls, text) = record_text(&frames).await;
        let kept = r#"{"content":{"name":"Ada","check":true},"action":"accept"}"#;
        assert!(text.contains(&format!(r#""answer":{kept}}}]"#)), "{text}");
        let ask = &calls[0].asks[0];
        assert_eq!(ask.answer_json().as_deref(), Some(kept));
    }

    #[tokio::test]
    async fn a_request_goes_to_the_call_its_task_names_else_the_oldest_in_flight_else_the_next() {
        let roots = |id| ask(id, "roots/list", None);
        let listed = |id| answer(true, json!(id), json!({"roots": []}));
        let done = |id: u64| answer(false, json!(id), json!({"content": []}));
        let frames = [
            // Asked before any call: the next call's.
            roots(10),
            listed(10),
            call(1, "first", json!({})),
            done(1),
            // Two calls in flight: the oldest's.
            call(2, "older", json!({})),
            call(3, "newer", json!({})),
            roots(11),
            listed(11),
            done(3),
            // One in flight: its own, though it started after a task-augmented call.
            (
                true,
                json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "research", "arguments": {}, "task": {}}}),
            ),
            answer(
                false,
                json!(4),
                json!({"task": {"taskId": "t-1", "status": "working"}}),
            ),
            ask(
                12,
                "sampling/createMessage",
                Some(json!({"_meta": {RELATED_TASK: {"taskId": "t-1"}}})),
            ),
            answer(true, json!(12), json!({"model": "m"})),
            roots(13),
            listed(13),
            done(2),
            (
                true,
                json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/result", "params": {"taskId": "t-1"}}),
            ),
            answer(false, json!(5), json!({"content": []})),
        ];
        let (calls, _) = record(&frames).await;
        let asks: Vec<(&str, Vec<&str>)> = calls
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.asks.iter().map(|a| a.method.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            asks,
            [
                ("first", vec!["roots/list"]),
                ("newer", vec![]),
                ("older", vec!["roots/list", "roots/list"]),
                ("research", vec!["sampling/createMessage"]),
            ]
        );
    }

    const RELATED_TASK: &str = crate::mcp::RELATED_TASK_META;

    #[tokio::test]
    async fn a_2026_07_28_call_keeps_its_input_requests_and_the_retries_responses() {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "modern", "version": "2"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "sampling": {}},
        });
        let request = |id: u64, extra: Value| {
            let mut params = json!({"name": "book", "arguments": {"city": "Oslo"}, "_meta": meta});
            for (k, v) in extra.as_object().unwrap() {
                params[k] = v.clone();
            }
            (
                true,
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
            )
        };
        let frames = [
            request(1, json!({})),
            answer(
                false,
                json!(1),
                json!({"resultType": "input_required", "requestState": "s1", "inputRequests": {
                    "day": {"method": "elicitation/create", "params": {"message": "which day?"}},
                    "pitch": {"method": "sampling/createMessage", "params": {"maxTokens": 9}}}}),
            ),
            request(
                2,
                json!({"requestState": "s1", "inputResponses": {
                    "pitch": {"model": "m", "role": "assistant"},
                    "day": {"action": "accept", "content": {"day": "Mon", "password": PASSWORD}}}}),
            ),
            answer(
                false,
                json!(2),
                json!({"resultType": "input_required", "requestState": "s2", "inputRequests": {
                    "day": {"method": "elicitation/create", "params": {"message": "which time?"}}}}),
            ),
            request(
                3,
                json!({"requestState": "s2", "inputResponses": {"day": {"action": "decline"}}}),
            ),
            answer(
                false,
                json!(3),
                json!({"resultType": "complete", "content": [{"type": "text", "text": format!("booked, {PASSWORD}")}]}),
            ),
        ];
        let (calls, text) = record(&frames).await;
        assert!(!text.contains(PASSWORD), "{text}");
        let [book] = calls.as_slice() else {
            panic!("{calls:#?}")
        };
        assert_eq!(
            book.capabilities,
            json!({"elicitation": {"form": {}}, "sampling": {}})
                .as_object()
                .cloned()
        );
        let asks: Vec<Value> = book
            .asks
            .iter()
            .map(|a| serde_json::to_value(a).unwrap())
            .collect();
        assert_eq!(
            asks,
            [
                json!({"method": "elicitation/create", "params": {"message": "which day?"},
                       "answer": {"action": "accept", "content": {"day": "Mon", "password": "[REDACTED]"}}}),
                json!({"method": "sampling/createMessage", "params": {"maxTokens": 9},
                       "answer": {"model": "m", "role": "assistant"}}),
                json!({"method": "elicitation/create", "params": {"message": "which time?"},
                       "answer": {"action": "decline"}}),
            ]
        );
        assert_eq!(
            book.outcome,
            Outcome::Answer(
                json!({"resultType": "complete", "content": [{"type": "text", "text": "booked, [REDACTED]"}]})
            )
        );
    }
}

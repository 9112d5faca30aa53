//! The call record, format version 1: one JSON object per line.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::mcp::asks::Ask;

/// The format version this build writes and reads.
pub const FORMAT_VERSION: u64 = 1;

/// The JSON-RPC code of an internal error. Its message is recorded (redacted) to be shown, and may
/// vary per call (a stack address, a request id), so a replay compares its code only. Recordings
/// made before kept its code alone, and read as they are.
pub use calltape_stdio_bridge::vocab::INTERNAL_ERROR;

/// The fields a call record may hold, in the order they are written.
pub(crate) const FIELDS: &[&str] = &[
    "v",
    "at",
    "session",
    "client",
    "capabilities",
    "server",
    "protocolVersion",
    "method",
    "name",
    "input",
    "asks",
    "answer",
    "error",
    "durationMs",
];

/// One recorded call: what a client asked and the answer (or error) it received.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallRecord {
    /// When the request was forwarded, as an RFC 3339 UTC timestamp with milliseconds.
    pub at: String,
    /// A short id (8 characters) of the client session the call belongs to.
    pub session: String,
    /// The `clientInfo` the client sent in `initialize`, or in 2026-07-28 in the request's `_meta`,
    /// when it sent one.
    pub client: Option<Map<String, Value>>,
    /// The capabilities the client declared (`initialize`'s `capabilities`, or in 2026-07-28 the
    /// request's `_meta`), redacted; absent when it declared none. Replay declares the same.
    pub capabilities: Option<Map<String, Value>>,
    /// The `serverInfo` the server answered `initialize` with, or in 2026-07-28 `server/discover` or
    /// the server-info stamp in a result's `_meta`, when known.
    pub server: Option<Map<String, Value>>,
    /// The negotiated protocol version, or the one the request's `_meta` names, when known.
    pub protocol_version: Option<String>,
    /// The JSON-RPC method, such as `tools/call`.
    pub method: String,
    /// The tool or prompt name, or the (redacted) resource URI.
    pub name: String,
    /// The arguments the client sent, redacted; for a resource read `{"uri": …}`, redacted as
    /// `name` is. Older lines of a resource read have none.
    pub input: Option<Value>,
    /// What the server asked the client during the call (sampling, elicitation, roots, …) and what
    /// the client answered, in order, redacted as inputs are; empty for most calls.
    pub asks: Vec<Ask>,
    /// What the client received.
    pub outcome: Outcome,
    /// Milliseconds from forwarding the request to the answer.
    pub duration_ms: f64,
}

impl CallRecord {
    /// A record of `method` on `name` in `session` with the given outcome; the other fields are empty
    /// and the duration zero.
    pub fn new(
        session: impl Into<String>,
        method: impl Into<String>,
        name: impl Into<String>,
        outcome: Outcome,
    ) -> Self {
        Self {
            at: String::new(),
            session: session.into(),
            client: None,
            capabilities: None,
            server: None,
            protocol_version: None,
            method: method.into(),
            name: name.into(),
            input: None,
            asks: Vec::new(),
            outcome,
            duration_ms: 0.0,
        }
    }

    /// The record as one JSON line, without the newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| unreachable_json())
    }
}

#[cold]
fn unreachable_json() -> String {
    // A record holds only strings, maps and `Value`s, which always serialize.
    String::from("{}")
}

/// What a call ended with: the answer the client received, or an error.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The JSON-RPC `result` the client received.
    Answer(Value),
    /// A JSON-RPC error, or a tool result with `isError: true`.
    Error(CallError),
}

impl Outcome {
    /// The outcome a JSON-RPC response carries: `result` is an answer unless it is a tool result with
    /// `isError: true`; `error` is an error. `None` when the message holds neither.
    pub fn from_response(response: &Value) -> Option<Self> {
        if let Some(result) = response.get("result") {
            if result.get("isError").and_then(Value::as_bool) == Some(true) {
                return Some(Self::Error(CallError::from_tool_result(result)));
            }
            return Some(Self::Answer(result.clone()));
        }
        response
            .get("error")
            .map(|error| Self::Error(CallError::from_jsonrpc(error)))
    }

    /// Like [`from_response`](Self::from_response), taking the result out of `response` instead of
    /// copying it.
    pub(crate) fn take_from_response(response: &mut Value) -> Option<Self> {
        if let Some(result) = response.get_mut("result") {
            return Some(Self::from_result(result.take()));
        }
        response
            .get("error")
            .map(|error| Self::Error(CallError::from_jsonrpc(error)))
    }

    /// The outcome a JSON-RPC `result` stands for: an answer unless it is a tool result with
    /// `isError: true`.
    pub(crate) fn from_result(result: Value) -> Self {
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return Self::Error(CallError::from_tool_result(&result));
        }
        Self::Answer(result)
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Error(_))
    }
}

/// An error as recorded: a code and a message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallError {
    /// The JSON-RPC code, or a tool error's `_meta.code` (`"tool_error"` when it has none).
    pub code: ErrorCode,
    /// The message the client read, without an `MCP error <code>: ` prefix; absent in an internal
    /// error ([`INTERNAL_ERROR`]) of a recording made before such messages were kept.
    pub message: Option<String>,
}

impl CallError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: Option<String>) -> Self {
        Self { code, message }
    }

    /// The error a JSON-RPC `error` object stands for.
    pub fn from_jsonrpc(error: &Value) -> Self {
        let code = error
            .get("code")
            .and_then(Value::as_i64)
            .unwrap_or(INTERNAL_ERROR);
        let text = error.get("message").and_then(Value::as_str).unwrap_or("");
        let message = Some(strip_mcp_prefix(text, code).to_owned());
        Self {
            code: ErrorCode::Number(code),
            message,
        }
    }

    /// The error a tool result with `isError: true` stands for.
    pub fn from_tool_result(result: &Value) -> Self {
        let code = match result.pointer("/_meta/code") {
            Some(Value::String(code)) => ErrorCode::Text(code.clone()),
            _ => ErrorCode::Text("tool_error".to_owned()),
        };
        let mut message = String::new();
        if let Some(items) = result.get("content").and_then(Value::as_array) {
            for item in items {
                if let Some(text) = item.get("text").and_then(Value::as_str) {
                    if !message.is_empty() {
                        message.push('\n');
                    }
                    message.push_str(text);
                }
            }
        }
        Self {
            code,
            message: Some(message),
        }
    }

    /// The error as the JSON object written in a record.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("code".into(), self.code.to_value());
        if let Some(message) = &self.message {
            map.insert("message".into(), Value::String(message.clone()));
        }
        Value::Object(map)
    }
}

/// Removes an `MCP error <code>: ` prefix that some SDKs put before a JSON-RPC error's message.
fn strip_mcp_prefix(text: &str, code: i64) -> &str {
    let Some(rest) = text.strip_prefix("MCP error ") else {
        return text;
    };
    let number = code.to_string();
    rest.strip_prefix(number.as_str())
        .and_then(|r| r.strip_prefix(": "))
        .unwrap_or(text)
}

/// An error code: a JSON-RPC number or a tool error's text code.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A JSON-RPC error code.
    Number(i64),
    /// A tool error's code.
    Text(String),
}

impl ErrorCode {
    /// The code as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => Value::from(*n),
            Self::Text(s) => Value::String(s.clone()),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::Text(s) => f.write_str(s),
        }
    }
}

impl Serialize for CallRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (answer, error) = match &self.outcome {
            Outcome::Answer(answer) => (Some(answer), None),
            Outcome::Error(error) => (None, Some(error.to_value())),
        };
        let asks = (!self.asks.is_empty()).then_some(self.asks.as_slice());
        RecordLine {
            at: &self.at,
            session: &self.session,
            client: self.client.as_ref(),
            capabilities: self.capabilities.as_ref(),
            server: self.server.as_ref(),
            protocol_version: self.protocol_version.as_deref(),
            method: &self.method,
            name: &self.name,
            input: self.input.as_ref(),
            asks: asks.as_ref(),
            answer,
            error: error.as_ref(),
            duration_ms: self.duration_ms,
        }
        .serialize(serializer)
    }
}

/// The fields of one record line, borrowed: the one place the line's layout is written down. `M` is
/// how client and server info are held, `V` how the input and the answer are (a `Value`, or the raw
/// JSON text the recorder took from the traffic), `A` how the asks are (a list of [`Ask`]s, or the
/// recorder's JSON text).
pub(crate) struct RecordLine<'a, M: ?Sized, V: ?Sized, A: ?Sized = V> {
    pub(crate) at: &'a str,
    pub(crate) session: &'a str,
    pub(crate) client: Option<&'a M>,
    pub(crate) capabilities: Option<&'a M>,
    pub(crate) server: Option<&'a M>,
    pub(crate) protocol_version: Option<&'a str>,
    pub(crate) method: &'a str,
    pub(crate) name: &'a str,
    pub(crate) input: Option<&'a V>,
    /// The asks as one JSON array, absent when the call had none.
    pub(crate) asks: Option<&'a A>,
    /// The answer, or else `error`.
    pub(crate) answer: Option<&'a V>,
    pub(crate) error: Option<&'a Value>,
    pub(crate) duration_ms: f64,
}

impl<M: Serialize + ?Sized, V: Serialize + ?Sized, A: Serialize + ?Sized> Serialize
    for RecordLine<'_, M, V, A>
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("v", &FORMAT_VERSION)?;
        map.serialize_entry("at", self.at)?;
        map.serialize_entry("session", self.session)?;
        if let Some(client) = self.client {
            map.serialize_entry("client", client)?;
        }
        if let Some(capabilities) = self.capabilities {
            map.serialize_entry("capabilities", capabilities)?;
        }
        if let Some(server) = self.server {
            map.serialize_entry("server", server)?;
        }
        if let Some(version) = self.protocol_version {
            map.serialize_entry("protocolVersion", version)?;
        }
        map.serialize_entry("method", self.method)?;
        map.serialize_entry("name", self.name)?;
        if let Some(input) = self.input {
            map.serialize_entry("input", input)?;
        }
        if let Some(asks) = self.asks {
            map.serialize_entry("asks", asks)?;
        }
        if let Some(answer) = self.answer {
            map.serialize_entry("answer", answer)?;
        } else if let Some(error) = self.error {
            map.serialize_entry("error", error)?;
        }
        // Rounded to microseconds so lines stay short and stable.
        let ms = (self.duration_ms * 1000.0).round() / 1000.0;
        map.serialize_entry("durationMs", &ms)?;
        map.end()
    }
}

/// Compact JSON text, taken as it is.
pub(crate) trait JsonText {
    fn json_text(&self) -> &str;
}

impl JsonText for RawValue {
    fn json_text(&self) -> &str {
        self.get()
    }
}

/// Text the recorder checked to be compact JSON.
impl JsonText for str {
    fn json_text(&self) -> &str {
        self
    }
}

impl<M: JsonText + ?Sized, V: JsonText + ?Sized, A: JsonText + ?Sized> RecordLine<'_, M, V, A> {
    /// Appends the line to `out`, byte for byte what serializing it (with the raw texts as raw JSON)
    /// writes, without going through a serializer: the recorder writes one of these per call.
    pub(crate) fn write_to(&self, out: &mut Vec<u8>) {
        fn raw<T: JsonText + ?Sized>(out: &mut Vec<u8>, key: &[u8], value: Option<&T>) {
            if let Some(value) = value {
                out.extend_from_slice(key);
                out.extend_from_slice(value.json_text().as_bytes());
            }
        }
        const _: () = assert!(FORMAT_VERSION == 1, "the line below writes version 1");
        out.extend_from_slice(b"{\"v\":1,\"at\":");
        json_string(out, self.at);
        out.extend_from_slice(b",\"session\":");
        json_string(out, self.session);
        raw(out, b",\"client\":", self.client);
        raw(out, b",\"capabilities\":", self.capabilities);
        raw(out, b",\"server\":", self.server);
        if let Some(version) = self.protocol_version {
            out.extend_from_slice(b",\"protocolVersion\":");
            json_string(out, version);
        }
        out.extend_from_slice(b",\"method\":");
        json_string(out, self.method);
        out.extend_from_slice(b",\"name\":");
        json_string(out, self.name);
        raw(out, b",\"input\":", self.input);
        raw(out, b",\"asks\":", self.asks);
        if self.answer.is_some() {
            raw(out, b",\"answer\":", self.answer);
        } else if let Some(error) = self.error {
            out.extend_from_slice(b",\"error\":");
            let _ = serde_json::to_writer(&mut *out, error);
        }
        out.extend_from_slice(b",\"durationMs\":");
        let ms = (self.duration_ms * 1000.0).round() / 1000.0;
        let _ = serde_json::to_writer(&mut *out, &ms);
        out.push(b'}');
    }
}

/// Appends `s` as a JSON string, escaped as `serde_json` escapes it.
fn json_string(out: &mut Vec<u8>, s: &str) {
    if calltape_stdio_bridge::jsonrpc::is_plain(s) {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// Why one line is not a valid call record, naming the field at fault when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldProblem {
    pub(crate) field: Option<String>,
    pub(crate) message: String,
}

impl fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "field `{field}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

pub(crate) fn problem(field: &str, message: impl Into<String>) -> FieldProblem {
    FieldProblem {
        field: Some(field.to_owned()),
        message: message.into(),
    }
}

pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn expected(field: &str, what: &str, found: &Value) -> FieldProblem {
    problem(
        field,
        format!("expected {what}, found {}", type_name(found)),
    )
}

fn take_string(map: &mut Map<String, Value>, field: &str) -> Result<String, FieldProblem> {
    match map.remove(field) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(expected(field, "a string", &other)),
        None => Err(problem(field, "missing; every call record has it")),
    }
}

fn take_object(
    map: &mut Map<String, Value>,
    field: &str,
) -> Result<Option<Map<String, Value>>, FieldProblem> {
    match map.remove(field) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(other) => Err(expected(field, "an object", &other)),
    }
}

impl CallRecord {
    /// Checks a parsed line strictly: unknown fields, missing fields and wrong types are refused.
    pub(crate) fn from_value(value: Value) -> Result<Self, FieldProblem> {
        let mut map = match value {
            Value::Object(map) => map,
            other => {
                return Err(FieldProblem {
                    field: None,
                    message: format!("expected a JSON object, found {}", type_name(&other)),
                });
            }
        };
        if let Some(unknown) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(problem(
                unknown,
                format!(
                    "unknown field; a call record has only {}",
                    FIELDS.join(", ")
                ),
            ));
        }
        match map.remove("v") {
            Some(Value::Number(n)) if n.as_u64() == Some(FORMAT_VERSION) => {}
            Some(Value::Number(n)) => {
                return Err(problem(
                    "v",
                    format!(
                        "format version {n} is not supported; this build reads version {FORMAT_VERSION}"
                    ),
                ));
            }
            Some(other) => return Err(expected("v", "a number", &other)),
            None => return Err(problem("v", "missing; every call record has it")),
        }
        let at = take_string(&mut map, "at")?;
        let session = take_string(&mut map, "session")?;
        if session.is_empty() {
            return Err(problem("session", "is empty"));
        }
        let client = take_object(&mut map, "client")?;
        let capabilities = take_object(&mut map, "capabilities")?;
        let server = take_object(&mut map, "server")?;
        let protocol_version = match map.remove("protocolVersion") {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => return Err(expected("protocolVersion", "a string", &other)),
        };
        let method = take_string(&mut map, "method")?;
        let name = take_string(&mut map, "name")?;
        let input = map.remove("input");
        let asks = match map.remove("asks") {
            None => Vec::new(),
            Some(asks) => Ask::list_from_value(asks)?,
        };
        let outcome = take_outcome(&mut map, "a call record")?;
        let duration_ms = match map.remove("durationMs") {
            Some(Value::Number(n)) => match n.as_f64() {
                Some(ms) if ms >= 0.0 => ms,
                _ => return Err(problem("durationMs", format!("{n} is negative"))),
            },
            Some(other) => return Err(expected("durationMs", "a number", &other)),
            None => return Err(problem("durationMs", "missing; every call record has it")),
        };
        Ok(Self {
            at,
            session,
            client,
            capabilities,
            server,
            protocol_version,
            method,
            name,
            input,
            asks,
            outcome,
            duration_ms,
        })
    }
}

/// The `answer` or the `error` of `what` (a call record, an ask), which holds exactly one of them.
pub(crate) fn take_outcome(
    map: &mut Map<String, Value>,
    what: &str,
) -> Result<Outcome, FieldProblem> {
    match (map.remove("answer"), map.remove("error")) {
        (Some(answer), None) => Ok(Outcome::Answer(answer)),
        (None, Some(error)) => Ok(Outcome::Error(parse_error(error)?)),
        (Some(_), Some(_)) => Err(problem(
            "error",
            format!("present together with `answer`; {what} holds exactly one of them"),
        )),
        (None, None) => Err(problem(
            "answer",
            format!("missing, and so is `error`; {what} holds exactly one of them"),
        )),
    }
}

fn parse_error(value: Value) -> Result<CallError, FieldProblem> {
    let mut map = match value {
        Value::Object(map) => map,
        other => return Err(expected("error", "an object", &other)),
    };
    if let Some(unknown) = map.keys().find(|k| *k != "code" && *k != "message") {
        return Err(problem(
            &format!("error.{unknown}"),
            "unknown field; an error has only code and message",
        ));
    }
    let code = match map.remove("code") {
        Some(Value::Number(n)) => match n.as_i64() {
            Some(code) => ErrorCode::Number(code),
            None => return Err(problem("error.code", format!("{n} is not an integer"))),
        },
        Some(Value::String(s)) => ErrorCode::Text(s),
        Some(other) => return Err(expected("error.code", "a number or a string", &other)),
        None => return Err(problem("error.code", "missing; every error has a code")),
    };
    let message = match map.remove("message") {
        None => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => return Err(expected("error.message", "a string", &other)),
    };
    Ok(CallError { code, message })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_recorder_writes_lines_as_serializing_them_would() {
        let raw = |text: &str| -> Box<RawValue> { RawValue::from_string(text.to_owned()).unwrap() };
        let (client, input, answer) = (
            raw(r#"{"name":"c"}"#),
            raw(r#"{"z":1,"a":[]}"#),
            raw("null"),
        );
        let asks = raw(r#"[{"method":"roots/list","answer":{"roots":[]}}]"#);
        let error = json!({"code": -32002, "message": "tab\there \"quoted\" \u{7f}"});
        for (name, version, with_client, ending, ms) in [
            ("echo", Some("2025-06-18"), true, 0, 0.0),
            ("café \\ \"x\"\n", None, false, 1, 12.3456),
            ("file:///a", Some("v\u{1}"), true, 2, 1234.5),
            // Escapes inside a whole word of eight bytes and in the bytes after the last one.
            (
                "tab\tin the first eight",
                Some("a plain version"),
                false,
                0,
                1.0,
            ),
            ("sixteen plain by\"", None, true, 2, 2.0),
        ] {
            let line = RecordLine::<RawValue, RawValue> {
                at: "2026-11-29T20:46:45.123Z",
                session: "3f9a1c2e",
                client: with_client.then_some(&*client),
                capabilities: (ending == 1).then_some(&*client),
                server: with_client.then_some(&*client),
                protocol_version: version,
                method: "tools/call",
                name,
                input: (ending != 2).then_some(&*input),
                asks: (ending != 1).then_some(&*asks),
                answer: (ending == 0)
                    .then_some(&*input)
                    .or((ending == 2).then_some(&*answer)),
                error: (ending == 1).then_some(&error),
                duration_ms: ms,
            };
            let mut out = Vec::new();
            line.write_to(&mut out);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&line).unwrap()
            );
        }
    }

    fn record_line(extra: &str) -> String {
        format!(
            r#"{{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"3f9a1c2e","method":"tools/call","name":"quote"{extra},"durationMs":12.4}}"#
        )
    }

    #[test]
    fn a_record_round_trips_in_field_order() {
        let mut record = CallRecord::new(
            "3f9a1c2e",
            "tools/call",
            "quote",
            Outcome::Answer(json!({"content": [], "structuredContent": {"price": 12}})),
        );
        record.at = "2026-11-29T20:46:45.123Z".into();
        record.client = Some(
            json!({"name": "claude-code", "version": "1.2.0"})
                .as_object()
                .unwrap()
                .clone(),
        );
        record.input = Some(json!({"symbol": "ACME"}));
        record.duration_ms = 12.4;
        let line = record.to_line();
        assert_eq!(
            line,
            r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"3f9a1c2e","client":{"name":"claude-code","version":"1.2.0"},"method":"tools/call","name":"quote","input":{"symbol":"ACME"},"answer":{"content":[],"structuredContent":{"price":12}},"durationMs":12.4}"#
        );
        let back = CallRecord::from_value(serde_json::from_str(&line).unwrap()).unwrap();
        assert_eq!(back, record);
    }

    #[test]
    fn asks_and_capabilities_round_trip_and_lines_without_them_read_as_before() {
        let line = r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"3f9a1c2e","client":{"name":"c"},"capabilities":{"sampling":{}},"method":"tools/call","name":"summarise","input":{"topic":"tides"},"asks":[{"method":"sampling/createMessage","params":{"maxTokens":5},"answer":{"role":"assistant"}},{"method":"roots/list","error":{"code":-32601,"message":"no roots"}}],"answer":{"content":[]},"durationMs":1.5}"#;
        let record = CallRecord::from_value(serde_json::from_str(line).unwrap()).unwrap();
        assert_eq!(
            record.capabilities,
            json!({"sampling": {}}).as_object().cloned()
        );
        assert_eq!(
            record.asks,
            [
                Ask::new(
                    "sampling/createMessage",
                    Some(json!({"maxTokens": 5})),
                    Outcome::Answer(json!({"role": "assistant"}))
                ),
                Ask::new(
                    "roots/list",
                    None,
                    Outcome::Error(CallError::new(
                        ErrorCode::Number(-32601),
                        Some("no roots".into())
                    ))
                ),
            ]
        );
        assert_eq!(record.to_line(), line);
        let older = record_line(r#","answer":{}"#);
        let record = CallRecord::from_value(serde_json::from_str(&older).unwrap()).unwrap();
        assert_eq!((record.capabilities, record.asks), (None, vec![]));
    }

    #[test]
    fn a_resource_read_line_is_read_with_its_input_or_without_as_older_lines_are() {
        let old = r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"3f9a1c2e","method":"resources/read","name":"demo://terms","answer":{"contents":[]},"durationMs":0.5}"#;
        let record = CallRecord::from_value(serde_json::from_str(old).unwrap()).unwrap();
        assert_eq!(
            (record.name.as_str(), record.input.as_ref()),
            ("demo://terms", None)
        );
        let new = old.replace(
            r#""name":"demo://terms","#,
            r#""name":"demo://terms","input":{"uri":"demo://terms"},"#,
        );
        let record = CallRecord::from_value(serde_json::from_str(&new).unwrap()).unwrap();
        assert_eq!(record.input, Some(json!({"uri": "demo://terms"})));
        assert_eq!(record.to_line(), new);
    }

    #[test]
    fn strict_checks_name_the_field() {
        let cases: &[(&str, &str)] = &[
            (
                r#","answer":{},"anwser":{}"#,
                "field `anwser`: unknown field; a call record has only v, at, session, client, capabilities, server, protocolVersion, method, name, input, asks, answer, error, durationMs",
            ),
            (
                r#","answer":{},"error":{"code":1}"#,
                "field `error`: present together with `answer`; a call record holds exactly one of them",
            ),
            (
                "",
                "field `answer`: missing, and so is `error`; a call record holds exactly one of them",
            ),
            (
                r#","error":{"code":true}"#,
                "field `error.code`: expected a number or a string, found a boolean",
            ),
            (
                r#","error":{"code":1,"data":{}}"#,
                "field `error.data`: unknown field; an error has only code and message",
            ),
            (
                r#","error":{"code":1,"message":2}"#,
                "field `error.message`: expected a string, found a number",
            ),
            (
                r#","answer":{},"client":"x""#,
                "field `client`: expected an object, found a string",
            ),
            (
                r#","answer":{},"protocolVersion":7"#,
                "field `protocolVersion`: expected a string, found a number",
            ),
            (
                r#","answer":{},"capabilities":[]"#,
                "field `capabilities`: expected an object, found an array",
            ),
            (
                r#","answer":{},"asks":{}"#,
                "field `asks`: expected an array, found an object",
            ),
            (
                r#","answer":{},"asks":[1]"#,
                "field `asks.0`: expected an object, found a number",
            ),
            (
                r#","answer":{},"asks":[{"method":"roots/list","answer":{}},{"method":"m","answer":{},"id":3}]"#,
                "field `asks.1.id`: unknown field; an ask has only method, params, answer, error",
            ),
            (
                r#","answer":{},"asks":[{"answer":{}}]"#,
                "field `asks.0.method`: missing; every ask has it",
            ),
            (
                r#","answer":{},"asks":[{"method":"m"}]"#,
                "field `asks.0.answer`: missing, and so is `error`; an ask holds exactly one of them",
            ),
            (
                r#","answer":{},"asks":[{"method":"m","error":{"code":-1,"data":{}}}]"#,
                "field `asks.0.error.data`: unknown field; an error has only code and message",
            ),
        ];
        for (extra, want) in cases {
            let line = record_line(extra);
            let got = CallRecord::from_value(serde_json::from_str(&line).unwrap()).unwrap_err();
            assert_eq!(got.to_string(), *want, "{line}");
        }
        let bad_duration = r#"{"v":1,"at":"x","session":"s","method":"m","name":"n","answer":1,"durationMs":"12"}"#;
        let got = CallRecord::from_value(serde_json::from_str(bad_duration).unwrap()).unwrap_err();
        assert_eq!(
            got.to_string(),
            "field `durationMs`: expected a number, found a string"
        );
        let v2 =
            r#"{"v":2,"at":"x","session":"s","method":"m","name":"n","answer":1,"durationMs":1}"#;
        let got = CallRecord::from_value(serde_json::from_str(v2).unwrap()).unwrap_err();
        assert_eq!(
            got.to_string(),
            "field `v`: format version 2 is not supported; this build reads version 1"
        );
        let got = CallRecord::from_value(json!([1])).unwrap_err();
        assert_eq!(got.to_string(), "expected a JSON object, found an array");
    }

    #[test]
    fn outcomes_follow_the_error_rules() {
        let cases = vec![
            (
                json!({"result": {"content": []}}),
                json!({"answer": {"content": []}}),
            ),
            (
                json!({"result": {"isError": true, "content": [{"type": "text", "text": "card declined"}, {"type": "text", "text": "try again"}]}}),
                json!({"error": {"code": "tool_error", "message": "card declined\ntry again"}}),
            ),
            (
                json!({"result": {"isError": true, "_meta": {"code": "DECLINED"}, "content": [{"type": "text", "text": "no"}]}}),
                json!({"error": {"code": "DECLINED", "message": "no"}}),
            ),
            (
                json!({"result": {"isError": true, "_meta": {"code": 7}, "content": []}}),
                json!({"error": {"code": "tool_error", "message": ""}}),
            ),
            (
                json!({"error": {"code": -32602, "message": "MCP error -32602: Tool nope not found"}}),
                json!({"error": {"code": -32602, "message": "Tool nope not found"}}),
            ),
            (
                json!({"error": {"code": -32602, "message": "MCP error -1: other"}}),
                json!({"error": {"code": -32602, "message": "MCP error -1: other"}}),
            ),
            (
                json!({"error": {"code": -32603, "message": "MCP error -32603: Unknown tool: get-sum"}}),
                json!({"error": {"code": -32603, "message": "Unknown tool: get-sum"}}),
            ),
        ];
        for (response, want) in cases {
            let outcome = Outcome::from_response(&response).unwrap();
            let got = match outcome {
                Outcome::Answer(a) => json!({ "answer": a }),
                Outcome::Error(e) => json!({ "error": e.to_value() }),
            };
            assert_eq!(got, want, "{response}");
        }
        assert_eq!(Outcome::from_response(&json!({"method": "x"})), None);
    }
}

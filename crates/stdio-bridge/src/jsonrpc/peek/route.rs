//! What the Streamable HTTP client routes by, beside the per-frame [`peek`](super::peek): of a frame
//! it sends, the method, id, the 2026-07-28 `_meta` protocol version and the name a request acts on; of
//! a message it receives, the id of a response, whether it is an error, and the `protocolVersion` an
//! `initialize` result names. A frame is read in one pass of the
//! [scanner](crate::jsonrpc::Message::parse); what it does not cover exactly (a repeated or escaped
//! key, bytes that are not UTF-8, `params` that are not an object) is read by `serde_json`, the same
//! way.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Value, value::RawValue};

use crate::jsonrpc::{
    Message, is_null,
    scanner::{Scan, fill},
    string,
};
use crate::vocab::{INITIALIZE, INITIALIZED, PROMPTS_GET, RESOURCES_READ, TOOLS_CALL};

/// The `_meta` key of the protocol version a client of the stateless revision sends.
const META_VERSION: &[u8] = crate::vocab::META_PROTOCOL_VERSION.as_bytes();

/// What a frame sent to a Streamable HTTP server is, as far as the client cares.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct OutgoingPeek {
    /// The method of a request or notification.
    pub(crate) method: Option<String>,
    /// The id of a request (or response); `None` for a notification.
    pub(crate) id: Option<Value>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`, set by clients of the stateless revision.
    pub(crate) meta_version: Option<String>,
    /// `params.name` (tools/call, prompts/get) or `params.uri` (resources/read).
    pub(crate) name: Option<String>,
    /// The frame is a batch (a JSON array).
    pub(crate) batch: bool,
    /// A batch holds at least one request.
    pub(crate) batch_has_request: bool,
}

impl OutgoingPeek {
    /// Reads what routing needs; a frame that cannot be read that far is treated as an opaque request.
    pub(crate) fn peek(frame: &[u8]) -> Self {
        match std::str::from_utf8(frame).ok().and_then(Self::scan) {
            Some(outgoing) => outgoing,
            None => Self::serde_peek(frame),
        }
    }

    /// The scanner's reading; `None` when it does not cover the frame exactly.
    fn scan(text: &str) -> Option<Self> {
        let mut scan = Scan::new(text);
        scan.blanks();
        let outgoing = match scan.peek()? {
            b'{' => Self::of(Message::read(&mut scan)?)?,
            b'[' => {
                let (mut items, mut has_request) = (0, false);
                scan.items(|scan| {
                    if scan.peek()? != b'{' {
                        return None;
                    }
                    let message = Message::read(scan)?;
                    let method = method(message.method)?;
                    has_request |= method.is_some() && message.id.is_some_and(|id| !is_null(id));
                    items += 1;
                    Some(())
                })?;
                Self {
                    batch: true,
                    batch_has_request: items == 0 || has_request,
                    ..Self::default()
                }
            }
            _ => return None,
        };
        scan.finish().then_some(outgoing)
    }

    /// One message as the scanner read it; `None` when a part routing reads is not what
    /// `serde_json` would take it for (a method that is not a string, a `_meta` that is not an
    /// object, a repeated or escaped key in it).
    fn of(message: Message<'_>) -> Option<Self> {
        let method = method(message.method)?;
        let id = message
            .id
            .filter(|id| !is_null(id))
            .and_then(|raw| serde_json::from_str::<Value>(raw).ok());
        let (meta_version, name) = match message.params {
            Some(params) => {
                let meta_version = match params.meta {
                    Some(meta) if !is_null(meta) => member_string(meta, META_VERSION)?,
                    _ => None,
                };
                let name = match method.as_deref() {
                    Some(TOOLS_CALL | PROMPTS_GET) => params.name,
                    Some(RESOURCES_READ) => params.uri,
                    _ => None,
                };
                (meta_version, name.and_then(string).map(Cow::into_owned))
            }
            None => (None, None),
        };
        Some(Self {
            method,
            id,
            meta_version,
            name,
            batch: false,
            batch_has_request: false,
        })
    }

    /// The `serde_json` reading, for what the scanner leaves.
    fn serde_peek(frame: &[u8]) -> Self {
        let first = frame.iter().find(|b| !b.is_ascii_whitespace());
        if first == Some(&b'[') {
            let items: Vec<Peek<'_>> = serde_json::from_slice(frame).unwrap_or_default();
            return Self {
                batch: true,
                batch_has_request: items.is_empty()
                    || items.iter().any(|i| i.method.is_some() && i.id.is_some()),
                ..Self::default()
            };
        }
        let Ok(peek) = serde_json::from_slice::<Peek<'_>>(frame) else {
            return Self::default();
        };
        let id = peek
            .id
            .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
            .filter(|id| !id.is_null());
        let params = peek
            .params
            .filter(|raw| raw.get().starts_with('{'))
            .and_then(|raw| serde_json::from_str::<Params<'_>>(raw.get()).ok());
        let (meta_version, name) = match params {
            Some(params) => {
                let meta_version = params
                    .meta
                    .and_then(|m| m.protocol_version)
                    .and_then(raw_string);
                let name = match peek.method.as_deref() {
                    Some(TOOLS_CALL | PROMPTS_GET) => params.name.and_then(raw_string),
                    Some(RESOURCES_READ) => params.uri.and_then(raw_string),
                    _ => None,
                };
                (meta_version, name)
            }
            None => (None, None),
        };
        Self {
            method: peek.method,
            id,
            meta_version,
            name,
            batch: false,
            batch_has_request: false,
        }
    }

    /// A request (or a batch holding one): it expects an answer.
    pub(crate) fn is_request(&self) -> bool {
        if self.batch {
            return self.batch_has_request;
        }
        // A frame that could not be read is treated as a request, so it is never silently dropped;
        // a response (an id without a method) answers the server and expects nothing back.
        self.method.is_some() == self.id.is_some()
    }

    /// The legacy handshake's opening request.
    pub(crate) fn is_initialize(&self) -> bool {
        self.method.as_deref() == Some(INITIALIZE) && self.meta_version.is_none()
    }

    /// The notification that ends the legacy handshake.
    pub(crate) fn is_initialized_notification(&self) -> bool {
        self.method.as_deref() == Some(INITIALIZED) && self.id.is_none()
    }
}

/// A method as `serde_json` reads it into an `Option<String>`; `None` when it would refuse it (a
/// method that is neither a string nor `null`).
fn method(raw: Option<&str>) -> Option<Option<String>> {
    match raw {
        None => Some(None),
        Some(raw) if is_null(raw) => Some(None),
        Some(raw) => string(raw).map(|method| Some(method.into_owned())),
    }
}

/// The string held by `object`'s member `key` (`None` when absent, `null` or not a string), read with
/// the scanner; `None` outright when the scanner does not cover `object` exactly (it is not an object,
/// repeats `key`, or spells a key with an escape).
fn member_string(object: &str, key: &[u8]) -> Option<Option<String>> {
    let mut found = None;
    Scan::new(object).members(|scan, name| {
        let value = scan.value()?.text;
        if name == key {
            fill(&mut found, value)?;
        }
        Some(())
    })?;
    Some(found.and_then(string).map(Cow::into_owned))
}

fn raw_string(raw: &RawValue) -> Option<String> {
    serde_json::from_str::<String>(raw.get()).ok()
}

#[derive(Deserialize, Default)]
struct Peek<'a> {
    #[serde(default)]
    method: Option<String>,
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(default, borrow)]
    name: Option<&'a RawValue>,
    #[serde(default, borrow)]
    uri: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "_meta")]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(default, borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<&'a RawValue>,
}

/// What a Streamable HTTP server sent, as far as the client cares.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct IncomingPeek {
    /// The id of a response (a message with `result` or `error` and no `method`).
    pub(crate) response_id: Option<Value>,
    /// `result.protocolVersion` of a response.
    pub(crate) protocol_version: Option<String>,
    /// It is a JSON-RPC error response.
    pub(crate) is_error: bool,
}

impl IncomingPeek {
    /// Reads a message from the upstream; `None` when it is not a JSON object or array.
    pub(crate) fn peek(message: &[u8]) -> Option<Self> {
        match std::str::from_utf8(message).ok().and_then(Self::scan) {
            Some(incoming) => Some(incoming),
            None => Self::serde_peek(message),
        }
    }

    /// The scanner's reading; `None` when it does not cover the message exactly.
    fn scan(text: &str) -> Option<Self> {
        let mut scan = Scan::new(text);
        scan.blanks();
        let incoming = match scan.peek()? {
            b'{' => {
                let message = Message::read(&mut scan)?;
                let result = message.result.map(|r| r.text).filter(|r| !is_null(r));
                let is_response = message.method.is_none_or(is_null)
                    && (result.is_some() || message.error.is_some());
                if !is_response {
                    Self::default()
                } else {
                    let protocol_version = match result {
                        Some(result) if may_hold_protocol_version(result) => {
                            member_string(result, b"protocolVersion")?
                        }
                        _ => None,
                    };
                    Self {
                        response_id: message
                            .id
                            .filter(|id| !is_null(id))
                            .and_then(|raw| serde_json::from_str::<Value>(raw).ok()),
                        protocol_version,
                        is_error: message.error.is_some(),
                    }
                }
            }
            b'[' => {
                scan.value()?;
                Self::default()
            }
            _ => return None,
        };
        scan.finish().then_some(incoming)
    }

    /// The `serde_json` reading, for what the scanner leaves.
    fn serde_peek(message: &[u8]) -> Option<Self> {
        let first = message.iter().find(|b| !b.is_ascii_whitespace())?;
        if *first == b'[' {
            serde_json::from_slice::<serde::de::IgnoredAny>(message).ok()?;
            return Some(Self::default());
        }
        if *first != b'{' {
            return None;
        }
        let answer: Answer<'_> = serde_json::from_slice(message).ok()?;
        let is_response = answer.method.is_none() && (answer.result.is_some() || answer.error);
        let response_id = if is_response {
            answer
                .id
                .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
        } else {
            None
        };
        let protocol_version = answer
            .result
            .filter(|raw| raw.get().starts_with('{'))
            .and_then(|raw| serde_json::from_str::<InitResult<'_>>(raw.get()).ok())
            .and_then(|r| r.protocol_version)
            .and_then(raw_string);
        Some(Self {
            response_id,
            protocol_version: if is_response { protocol_version } else { None },
            is_error: is_response && answer.error,
        })
    }
}

#[derive(Deserialize)]
struct Answer<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    error: bool,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

/// Whether a `result` may have a top-level `protocolVersion`: it is an object, and the key is there as
/// written or may be spelled with escapes. Most results are not read a second time.
fn may_hold_protocol_version(result: &str) -> bool {
    result.starts_with('{')
        && (memchr::memmem::find(result.as_bytes(), b"protocolVersion").is_some()
            || memchr::memmem::find(result.as_bytes(), b"\\u").is_some())
}

#[derive(Deserialize)]
struct InitResult<'a> {
    #[serde(default, borrow, rename = "protocolVersion")]
    protocol_version: Option<&'a RawValue>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::agreement::random_messages;
    use serde_json::json;

    /// Reads `frame` both ways, outgoing and incoming, and fails where the scanner reads it
    /// otherwise than `serde_json`; how many of the two readings the scanner covered.
    fn check(frame: &[u8]) -> usize {
        let shown = String::from_utf8_lossy(frame);
        let text = std::str::from_utf8(frame).ok();
        let mut scanned = 0;
        if let Some(outgoing) = text.and_then(OutgoingPeek::scan) {
            assert_eq!(
                outgoing,
                OutgoingPeek::serde_peek(frame),
                "outgoing {shown}"
            );
            scanned += 1;
        }
        if let Some(incoming) = text.and_then(IncomingPeek::scan) {
            assert_eq!(
                Some(incoming),
                IncomingPeek::serde_peek(frame),
                "incoming {shown}"
            );
            scanned += 1;
        }
        scanned
    }

    /// Frames at the edges of what routing reads: the scanner reads each as `serde_json` does, or
    /// leaves it to `serde_json`; the table says which.
    #[test]
    fn edge_frames_are_read_as_serde_json_reads_them() {
        let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        let huge = "x".repeat(4 << 20);
        // (frame, how many of the outgoing and incoming readings the scanner covers)
        let cases: Vec<(Vec<u8>, usize)> = vec![
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","x":1}}}"#.to_vec(),
                2,
            ),
            (br#"{"id":1,"method":"tools/call","params":{"name":"a","_meta":null}}"#.to_vec(), 2),
            (br#"{"id":1,"method":"tools/call","params":{"_meta":["2026-07-28"]}}"#.to_vec(), 1),
            (br#"{"id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}}"#.to_vec(), 2),
            (br#"{"id":1,"method":"a","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}}}"#.to_vec(), 1),
            (br#"{"id":1,"method":"a","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"a"}}}"#.to_vec(), 1),
            (br#"{"id":1,"method":"resources/read","params":{"uri":"file:///caf\u00e9","name":"n"}}"#.to_vec(), 2),
            (br#"{"id":1,"method":"prompts/get","params":{"name":null}}"#.to_vec(), 2),
            (br#"{"id":1,"method":7}"#.to_vec(), 1),
            (br#"{"id":1,"method":null,"result":null}"#.to_vec(), 2),
            (br#"{"id":null,"error":null}"#.to_vec(), 2),
            (br#"{"id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}"#.to_vec(), 2),
            (br#"{"id":1,"result":{"protocol\u0056ersion":"2025-06-18"}}"#.to_vec(), 1),
            (br#"{"id":1,"result":{"protocolVersion":"a","protocolVersion":"b"}}"#.to_vec(), 1),
            (br#"{"id":1,"result":{"x":{"protocolVersion":"a"},"protocolVersion":null}}"#.to_vec(), 2),
            (br#"{"id":1,"result":["protocolVersion"]}"#.to_vec(), 2),
            (br#"{"id":1e400,"result":{}}"#.to_vec(), 2),
            (br#"{"id":1,"id":2,"result":{}}"#.to_vec(), 0),
            (format!(r#"{{"id":1,"result":{{"content":{deep}}}}}"#).into_bytes(), 2),
            (format!(r#"{{"id":1,"result":{{"text":"{huge}"}}}}"#).into_bytes(), 2),
            (format!(r#"{{"id":1,"result":{{"text":"{huge}}}}}"#).into_bytes(), 0),
            (b"{\"id\":1,\"result\":{\"text\":\"\xff\"}}".to_vec(), 0),
            (br#"[{"jsonrpc":"2.0","method":"a"},{"id":1,"method":"b"}]"#.to_vec(), 2),
            (br#"[{"id":null,"method":"b"}]"#.to_vec(), 2),
            (br#"[{"id":1,"method":5}]"#.to_vec(), 1),
            (br#"[["tools/call",1]]"#.to_vec(), 1),
            (b"[]".to_vec(), 2),
            (b"42".to_vec(), 0),
            (b"{not json".to_vec(), 0),
        ];
        for (frame, scanned) in cases {
            let shown = String::from_utf8_lossy(&frame[..frame.len().min(80)]).into_owned();
            assert_eq!(check(&frame), scanned, "{shown}");
            assert_eq!(
                OutgoingPeek::peek(&frame),
                OutgoingPeek::serde_peek(&frame),
                "{shown}"
            );
            assert_eq!(
                IncomingPeek::peek(&frame),
                IncomingPeek::serde_peek(&frame),
                "{shown}"
            );
        }
    }

    /// Random messages, alone and in batches: where the scanner reads one, it reads what
    /// `serde_json` reads.
    #[test]
    fn random_frames_are_read_as_serde_json_reads_them() {
        let mut scanned = 0;
        random_messages(20_000, |text| {
            scanned += check(text.as_bytes()) + check(format!("[{text}]").as_bytes());
        });
        assert!(scanned > 20_000, "too few frames were scanned: {scanned}");
    }

    #[test]
    fn outgoing_frames_are_classified() {
        let init = OutgoingPeek::peek(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#);
        assert!(init.is_initialize() && init.is_request());
        assert_eq!(init.id, Some(json!(0)));

        let note = OutgoingPeek::peek(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(note.is_initialized_notification() && !note.is_request());

        let answer = OutgoingPeek::peek(br#"{"jsonrpc":"2.0","id":"s1","result":{}}"#);
        assert!(!answer.is_request() && answer.method.is_none());

        let call = OutgoingPeek::peek(
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"name":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        assert_eq!(call.meta_version.as_deref(), Some("2026-07-28"));
        assert_eq!(call.name.as_deref(), Some("echo"));
        assert!(!call.is_initialize());

        let read = OutgoingPeek::peek(
            br#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///caf\u00e9","name":"ignored"}}"#,
        );
        assert_eq!(read.name.as_deref(), Some("file:///café"));
        assert_eq!(read.meta_version, None);

        let list = OutgoingPeek::peek(
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"name":"x"}}"#,
        );
        assert_eq!(list.name, None);

        let odd =
            OutgoingPeek::peek(br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[1,2]}"#);
        assert_eq!(odd.name, None);
        assert!(odd.is_request());

        let weird_name =
            OutgoingPeek::peek(br#"{"id":7,"method":"tools/call","params":{"name":42}}"#);
        assert_eq!(weird_name.name, None);

        let batch = OutgoingPeek::peek(
            br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]"#,
        );
        assert!(batch.batch && batch.is_request());
        let note_batch = OutgoingPeek::peek(br#"[{"jsonrpc":"2.0","method":"a"}]"#);
        assert!(note_batch.batch && !note_batch.is_request());

        let garbage = OutgoingPeek::peek(b"{not json");
        assert!(garbage.is_request());
    }

    #[test]
    fn incoming_answers_are_read() {
        let init = IncomingPeek::peek(br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}"#).unwrap();
        assert_eq!(init.response_id, Some(json!(0)));
        assert_eq!(init.protocol_version.as_deref(), Some("2025-06-18"));

        let err =
            IncomingPeek::peek(br#"{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"x"}}"#)
                .unwrap();
        assert!(err.is_error);
        assert_eq!(err.response_id, Some(json!("a")));

        let request = IncomingPeek::peek(
            br#"{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{}}"#,
        )
        .unwrap();
        assert_eq!(request.response_id, None);

        let note =
            IncomingPeek::peek(br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#).unwrap();
        assert_eq!(note.response_id, None);

        assert!(IncomingPeek::peek(b"[]").is_some());
        assert!(IncomingPeek::peek(b"42").is_none());
        assert!(IncomingPeek::peek(b"<html>").is_none());
        assert!(IncomingPeek::peek(b"{\"id\":").is_none());
        assert!(IncomingPeek::peek(b"").is_none());
    }
}

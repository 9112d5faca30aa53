//! The little of a JSON-RPC frame that routing needs: method, id, the 2026-07-28 `_meta` protocol
//! version and the name a request acts on. Everything else is skipped unread.

use serde::Deserialize;
use serde_json::{Value, value::RawValue};

/// What an outgoing frame is, as far as the HTTP upstream cares.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Outgoing {
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

impl Outgoing {
    /// Reads what routing needs; a frame that cannot be read that far is treated as an opaque request.
    pub(crate) fn peek(frame: &[u8]) -> Self {
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
                    Some("tools/call" | "prompts/get") => params.name.and_then(raw_string),
                    Some("resources/read") => params.uri.and_then(raw_string),
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
        self.method.as_deref() == Some("initialize") && self.meta_version.is_none()
    }

    /// The notification that ends the legacy handshake.
    pub(crate) fn is_initialized_notification(&self) -> bool {
        self.method.as_deref() == Some("notifications/initialized") && self.id.is_none()
    }
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

/// What the upstream sent, as far as the HTTP upstream cares.
#[derive(Debug, Default)]
pub(crate) struct Incoming {
    /// The id of a response (a message with `result` or `error` and no `method`).
    pub(crate) response_id: Option<Value>,
    /// `result.protocolVersion` of a response.
    pub(crate) protocol_version: Option<String>,
    /// It is a JSON-RPC error response.
    pub(crate) is_error: bool,
}

impl Incoming {
    /// Reads a message from the upstream; `None` when it is not a JSON object or array.
    pub(crate) fn peek(message: &[u8]) -> Option<Self> {
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

#[derive(Deserialize)]
struct InitResult<'a> {
    #[serde(default, borrow, rename = "protocolVersion")]
    protocol_version: Option<&'a RawValue>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outgoing_frames_are_classified() {
        let init = Outgoing::peek(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#);
        assert!(init.is_initialize() && init.is_request());
        assert_eq!(init.id, Some(json!(0)));

        let note = Outgoing::peek(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(note.is_initialized_notification() && !note.is_request());

        let answer = Outgoing::peek(br#"{"jsonrpc":"2.0","id":"s1","result":{}}"#);
        assert!(!answer.is_request() && answer.method.is_none());

        let call = Outgoing::peek(
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"name":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        assert_eq!(call.meta_version.as_deref(), Some("2026-07-28"));
        assert_eq!(call.name.as_deref(), Some("echo"));
        assert!(!call.is_initialize());

        let read = Outgoing::peek(
            br#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///caf\u00e9","name":"ignored"}}"#,
        );
        assert_eq!(read.name.as_deref(), Some("file:///café"));
        assert_eq!(read.meta_version, None);

        let list = Outgoing::peek(
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"name":"x"}}"#,
        );
        assert_eq!(list.name, None);

        let odd =
            Outgoing::peek(br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[1,2]}"#);
        assert_eq!(odd.name, None);
        assert!(odd.is_request());

        let weird_name = Outgoing::peek(br#"{"id":7,"method":"tools/call","params":{"name":42}}"#);
        assert_eq!(weird_name.name, None);

        let batch = Outgoing::peek(
            br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]"#,
        );
        assert!(batch.batch && batch.is_request());
        let note_batch = Outgoing::peek(br#"[{"jsonrpc":"2.0","method":"a"}]"#);
        assert!(note_batch.batch && !note_batch.is_request());

        let garbage = Outgoing::peek(b"{not json");
        assert!(garbage.is_request());
    }

    #[test]
    fn incoming_answers_are_read() {
        let init = Incoming::peek(br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}"#).unwrap();
        assert_eq!(init.response_id, Some(json!(0)));
        assert_eq!(init.protocol_version.as_deref(), Some("2025-06-18"));

        let err =
            Incoming::peek(br#"{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"x"}}"#)
                .unwrap();
        assert!(err.is_error);
        assert_eq!(err.response_id, Some(json!("a")));

        let request = Incoming::peek(
            br#"{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{}}"#,
        )
        .unwrap();
        assert_eq!(request.response_id, None);

        let note =
            Incoming::peek(br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#).unwrap();
        assert_eq!(note.response_id, None);

        assert!(Incoming::peek(b"[]").is_some());
        assert!(Incoming::peek(b"42").is_none());
        assert!(Incoming::peek(b"<html>").is_none());
        assert!(Incoming::peek(b"{\"id\":").is_none());
        assert!(Incoming::peek(b"").is_none());
    }
}

//! JSON-RPC 2.0 as the bridge, `serve` and `shared` speak it, in one place.
//!
//! - **Reading**: a message as borrowed JSON text, in one pass of a strict scanner that checks it as
//!   `serde_json` would and builds no value ([`Message::parse`], with [`string`], [`is_null`] and
//!   [`Json`] for the spans it hands out); the recorder reads every message it records this way.
//! - **Peeking**: what routing reads from a frame ([`peek`], with the scanner) or from a parsed
//!   message (`id_of`, `method_of`, `request_ids`); and, with `http` or `serve`, the little more the
//!   Streamable HTTP client routes by (`OutgoingPeek`, `IncomingPeek`), with the same scanner.
//! - **Error answers** (within the crate): `error_frame` for a raw id, `error` for a parsed one, both
//!   with `data.reason` (and `data.upstream` where known); the messages of the errors more than one
//!   side sends.
//! - **Handshake replay** (within the crate): the client's `initialize` again under the bridge's id,
//!   then `notifications/initialized`, then the client hears `list_changed` for each list the server
//!   said can change.
//!
//! It needs no feature: the child-process bridge uses it as much as `serve` and `shared` do. What works
//! on parsed messages (`error`, `id_of`, …) is built with `serve`, the only side that parses them.

use crate::vocab::{PROMPTS_LIST_CHANGED, RESOURCES_LIST_CHANGED, TOOLS_LIST_CHANGED};
use bytes::Bytes;
use serde_json::{Value, json};

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod agreement;
pub(crate) mod frame;
mod message;
mod peek;
pub(crate) mod scanner;

pub(crate) use frame::{DEFAULT_MAX_FRAME, Frame, FrameReader, Incoming, InvalidLine};
pub use message::{CallParams, Message};
pub(crate) use peek::check;
#[cfg(feature = "fuzzing")]
pub(crate) use peek::check_peek;
#[cfg(any(feature = "http", feature = "serve"))]
pub(crate) use peek::{IncomingPeek, OutgoingPeek};
pub use peek::{Info, Peek, peek};
pub use scanner::{Json, is_null, is_plain, string};

/// The lists whose `listChanged` capability makes the bridge announce a change after a restart, with
/// the notification it sends for each.
const LISTS: [(&str, &str); 3] = [
    ("tools", TOOLS_LIST_CHANGED),
    ("resources", RESOURCES_LIST_CHANGED),
    ("prompts", PROMPTS_LIST_CHANGED),
];

/// What a request in flight gets when its upstream exits or restarts (code
/// [`UPSTREAM_EXITED`](crate::UPSTREAM_EXITED)).
pub(crate) const EXITED_IN_FLIGHT: &str = "the upstream exited while this request was in flight";

/// What a request gets when the connection dropped after it was sent (code
/// [`UPSTREAM_EXITED`](crate::UPSTREAM_EXITED), `data.reason` `connection_lost`).
pub(crate) const CONNECTION_LOST: &str =
    "the connection to the upstream dropped after this request was sent; its outcome is unknown";

/// What a request gets when the upstream answered it with something that is not MCP (code
/// [`UPSTREAM_PROTOCOL_ERROR`](crate::UPSTREAM_PROTOCOL_ERROR)).
pub(crate) const NOT_MCP: &str = "the upstream answered with something that is not MCP";

/// A JSON-RPC error answer. `id` is raw JSON text; `None` writes `null`.
pub(crate) fn error_frame(id: Option<&str>, code: i64, message: &str, data: Value) -> Frame {
    let error = json!({ "code": code, "message": message, "data": data });
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{}}}"#,
        id.unwrap_or("null"),
        error
    );
    Bytes::from(text)
}

/// An error's `data`: `reason`, and `upstream` (`{ "status": …, "message": … }`) where known.
pub(crate) fn data(reason: &str, upstream: Option<Value>) -> Value {
    let mut data = json!({ "reason": reason });
    if let Some(upstream) = upstream {
        data["upstream"] = upstream;
    }
    data
}

/// The refusal of a request (`id` is raw JSON text) that would take a listen stream, or the
/// subscriptions the bridge keeps for a client, past [`MAX_SUBSCRIPTIONS`](crate::MAX_SUBSCRIPTIONS)
/// resources (code [`TOO_MANY_URIS`](crate::TOO_MANY_URIS)).
#[cfg(feature = "era")]
pub(crate) fn too_many_uris(id: &str) -> Frame {
    let limit = crate::MAX_SUBSCRIPTIONS;
    let message = format!(
        "this would subscribe to more than {limit} resources, the most one listen stream (or one \
         client's subscriptions) may hold; subscribe to fewer"
    );
    error_frame(
        Some(id),
        crate::TOO_MANY_URIS,
        &message,
        limit_data("too_many_uris", limit),
    )
}

/// The `data` of a refusal past a limit: `reason`, and the `limit` it would have gone past.
#[cfg(feature = "era")]
pub(crate) fn limit_data(reason: &str, limit: usize) -> Value {
    json!({ "reason": reason, "limit": limit })
}

/// The method of a parsed message, for requests and notifications.
#[cfg(any(feature = "serve", test))]
pub(crate) fn method_of(message: &Value) -> Option<&str> {
    message.get("method").and_then(Value::as_str)
}

/// The id of a parsed message, when present and not null.
#[cfg(any(feature = "serve", test))]
pub(crate) fn id_of(message: &Value) -> Option<&Value> {
    message.get("id").filter(|id| !id.is_null())
}

/// The ids of the requests in a parsed message or batch (a method and an id), in order.
#[cfg(any(feature = "serve", test))]
pub(crate) fn request_ids(message: &Value) -> Vec<&Value> {
    let items = match message {
        Value::Array(items) => items.as_slice(),
        one => std::slice::from_ref(one),
    };
    items
        .iter()
        .filter(|m| m.get("method").is_some())
        .filter_map(id_of)
        .collect()
}

/// The `list_changed` notifications owed after a restart: one for each list whose `listChanged` the
/// server's `capabilities` set to `true`.
pub(crate) fn list_changed(capabilities: &Value) -> Vec<&'static str> {
    LISTS
        .into_iter()
        .filter(|(list, _)| capabilities[*list]["listChanged"] == Value::Bool(true))
        .map(|(_, method)| method)
        .collect()
}

/// A notification without params.
pub(crate) fn notification(method: &str) -> Frame {
    to_frame(&json!({"jsonrpc": "2.0", "method": method}))
}

/// The `initialize` request of a replayed handshake.
#[cfg(any(feature = "serve", test))]
pub(crate) fn initialize(id: &Value, params: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": crate::vocab::INITIALIZE, "params": params})
}

/// The frame with its `id` replaced by `id` (raw JSON); a frame that is not an object, unchanged.
pub(crate) fn with_id(frame: &Frame, id: &str) -> Frame {
    match serde_json::from_slice::<serde_json::Map<String, Value>>(frame) {
        Ok(mut object) => {
            object.insert(
                "id".to_owned(),
                serde_json::from_str(id).unwrap_or(Value::Null),
            );
            Frame::from(serde_json::to_vec(&object).unwrap_or_default())
        }
        Err(_) => frame.clone(),
    }
}

/// A parsed message as a frame.
pub(crate) fn to_frame(value: &Value) -> Frame {
    // A `Value` always serializes (its keys are strings, its numbers finite).
    serde_json::to_vec(value)
        .map(Bytes::from)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::INITIALIZED;

    #[test]
    fn error_frames_carry_the_id_code_message_and_data() {
        let upstream = Some(json!({"message": "x exited"}));
        // (raw id, code, reason, upstream, the id as parsed)
        type Case<'a> = (Option<&'a str>, i64, &'a str, Option<Value>, Value);
        let cases: &[Case<'_>] = &[
            (None, -32700, "parse_error", None, Value::Null),
            (
                Some("7"),
                -32001,
                "upstream_exited",
                upstream.clone(),
                json!(7),
            ),
            (
                Some(r#""a\"b""#),
                -32002,
                "buffer_full",
                None,
                json!("a\"b"),
            ),
            (
                Some("1.5"),
                -32004,
                "upstream_protocol_error",
                upstream,
                json!(1.5),
            ),
        ];
        for (raw, code, reason, upstream, id) in cases {
            let data = data(reason, upstream.clone());
            let frame = error_frame(*raw, *code, "why", data.clone());
            let value: Value = serde_json::from_slice(&frame).unwrap();
            let parsed = crate::vocab::error_answer_with_data(id, *code, "why", data);
            assert_eq!(value, parsed, "{raw:?}");
            assert_eq!(value["jsonrpc"], "2.0");
            assert_eq!(value["id"], *id);
            assert_eq!(value["error"]["code"], *code);
            assert_eq!(value["error"]["message"], "why");
            assert_eq!(value["error"]["data"]["reason"], *reason);
            assert_eq!(value["error"]["data"].get("upstream"), upstream.as_ref());
        }
    }

    #[test]
    fn ids_and_methods_of_parsed_messages() {
        // (message, id, method, request ids)
        type Case<'a> = (&'a str, Option<Value>, Option<&'a str>, Vec<Value>);
        let cases: &[Case<'_>] = &[
            (
                r#"{"id":1,"method":"ping"}"#,
                Some(json!(1)),
                Some("ping"),
                vec![json!(1)],
            ),
            (r#"{"id":"a","result":{}}"#, Some(json!("a")), None, vec![]),
            (r#"{"id":null,"method":"a"}"#, None, Some("a"), vec![]),
            (
                r#"{"method":"notifications/initialized"}"#,
                None,
                Some(INITIALIZED),
                vec![],
            ),
            (
                r#"{"id":2,"method":5}"#,
                Some(json!(2)),
                None,
                vec![json!(2)],
            ),
            (
                r#"[{"id":1,"method":"a"},{"method":"b"},{"id":2,"result":1},{"id":"c","method":"d"}]"#,
                None,
                None,
                vec![json!(1), json!("c")],
            ),
            ("[]", None, None, vec![]),
            ("42", None, None, vec![]),
        ];
        for (text, id, method, requests) in cases {
            let message: Value = serde_json::from_str(text).unwrap();
            assert_eq!(id_of(&message), id.as_ref(), "{text}");
            assert_eq!(method_of(&message), *method, "{text}");
            let got: Vec<Value> = request_ids(&message).into_iter().cloned().collect();
            assert_eq!(&got, requests, "{text}");
        }
    }

    #[test]
    fn list_changed_for_each_list_kind() {
        // (capabilities, notifications owed)
        let cases: &[(Value, &[&str])] = &[
            (json!({}), &[]),
            (json!(null), &[]),
            (
                json!({"tools": {"listChanged": true}}),
                &["notifications/tools/list_changed"],
            ),
            (
                json!({"resources": {"listChanged": true, "subscribe": true}}),
                &["notifications/resources/list_changed"],
            ),
            (
                json!({"prompts": {"listChanged": true}}),
                &["notifications/prompts/list_changed"],
            ),
            (
                json!({"tools": {"listChanged": false}, "prompts": {"listChanged": "true"}}),
                &[],
            ),
            (
                json!({"prompts": {"listChanged": true}, "tools": {"listChanged": true},
                       "resources": {"listChanged": true}, "logging": {}}),
                &[
                    "notifications/tools/list_changed",
                    "notifications/resources/list_changed",
                    "notifications/prompts/list_changed",
                ],
            ),
        ];
        for (capabilities, owed) in cases {
            let got = list_changed(capabilities);
            assert_eq!(&got, owed, "{capabilities}");
            for method in got {
                let note: Value = serde_json::from_slice(&notification(method)).unwrap();
                assert_eq!(note, json!({"jsonrpc": "2.0", "method": method}));
            }
        }
    }

    #[test]
    fn a_replayed_handshake_carries_the_bridge_id() {
        let initialize_frame = Frame::from_static(
            br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
        );
        // (the client's frame, raw id, the frame's id afterwards: None when left unchanged)
        let cases: &[(&Frame, &str, Option<Value>)] = &[
            (
                &initialize_frame,
                r#""calltape-reinit-1""#,
                Some(json!("calltape-reinit-1")),
            ),
            (&initialize_frame, "42", Some(json!(42))),
            (&initialize_frame, "not json", Some(Value::Null)),
        ];
        for (frame, id, expected) in cases {
            let replayed: Value = serde_json::from_slice(&with_id(frame, id)).unwrap();
            assert_eq!(replayed.get("id"), expected.as_ref(), "{id}");
            assert_eq!(replayed["method"], "initialize");
            assert_eq!(replayed["params"]["protocolVersion"], "2025-06-18");
        }
        let batch = Frame::from_static(br#"[{"id":0,"method":"initialize"}]"#);
        assert_eq!(with_id(&batch, "1"), batch);
        let params = json!({"protocolVersion": "2025-06-18", "capabilities": {}});
        let request = initialize(&json!(9), &params);
        assert_eq!(id_of(&request), Some(&json!(9)));
        assert_eq!(method_of(&request), Some("initialize"));
        assert_eq!(request["params"], params);
        let initialized: Value = serde_json::from_slice(&notification(INITIALIZED)).unwrap();
        assert_eq!(method_of(&initialized), Some(INITIALIZED));
        assert_eq!(id_of(&initialized), None);
    }
}

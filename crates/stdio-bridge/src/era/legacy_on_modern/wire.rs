//! The pieces of 2026-07-28 JSON-RPC the translator reads and writes: `_meta` keys, frames, answers.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::vocab::{
    HANDSHAKE_VERSIONS, INVALID_PARAMS, LEGACY_RESOURCE_NOT_FOUND, META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO, PROMPTS_LIST, RESOURCES_LIST,
    RESOURCES_READ, RESOURCES_TEMPLATES_LIST, TOOLS_LIST, UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::{jsonrpc::Frame, vocab::MODERN_VERSION};

/// The log levels, least severe first.
pub(super) const LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// A frame as a JSON object, or `None` when it is anything else (a batch, not JSON).
pub(super) fn object(frame: &Frame) -> Option<Map<String, Value>> {
    match serde_json::from_slice::<Value>(frame) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

pub(super) fn frame(message: &Value) -> Frame {
    Bytes::from(serde_json::to_vec(message).unwrap_or_default())
}

/// An id as a map key: its JSON text, so `1` and `"1"` differ.
pub(super) fn key(id: &Value) -> String {
    id.to_string()
}

/// Whether a request or notification carries 2026-07-28's `_meta` protocol version.
pub(super) fn is_modern(message: &Map<String, Value>) -> bool {
    message
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .is_some()
}

pub(super) fn answer(id: &Value, result: Value) -> Frame {
    frame(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

pub(super) fn error(id: &Value, code: i64, message: &str) -> Frame {
    frame(&crate::vocab::error_answer(id, code, message))
}

pub(super) fn request(id: &str, method: &str, params: Value) -> Frame {
    frame(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// The `_meta` of a request the translator sends on its own, before any client is known.
pub(super) fn own_meta() -> Value {
    json!({
        META_PROTOCOL_VERSION: MODERN_VERSION,
        META_CLIENT_CAPABILITIES: {},
        META_CLIENT_INFO: crate::era::own_client_info(),
    })
}

/// Whether a log notification at `level` passes a client that asked for `min`.
pub(super) fn level_passes(level: Option<&str>, min: &str) -> bool {
    let rank = |l: &str| LEVELS.iter().position(|x| *x == l);
    match (level.and_then(rank), rank(min)) {
        (Some(level), Some(min)) => level >= min,
        _ => true,
    }
}

/// The methods whose 2026-07-28 results carry the cache fields `cacheScope` and `ttlMs`.
const CACHEABLE: &[&str] = &[
    TOOLS_LIST,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
];

/// A handshake-era result from a 2026-07-28 one: what that era does not have goes, so the client (and
/// a recording) sees what a server of its era would send: `resultType` (always `complete` here), the
/// server-info stamp in `_meta`, and a cacheable method's `cacheScope` and `ttlMs`.
pub(super) fn legacy_result(method: &str, mut result: Value) -> Value {
    let Some(map) = result.as_object_mut() else {
        return result;
    };
    map.remove("resultType");
    if CACHEABLE.contains(&method) {
        map.remove("cacheScope");
        map.remove("ttlMs");
    }
    if let Some(Value::Object(meta)) = map.get_mut("_meta") {
        meta.remove(META_SERVER_INFO);
        if meta.is_empty() {
            map.remove("_meta");
        }
    }
    result
}

/// A handshake-era error from a 2026-07-28 one: a resource that does not exist is -32602 with the URI
/// in `data` now, -32002 before.
pub(super) fn legacy_error(method: &str, mut error: Value) -> Value {
    if method == RESOURCES_READ
        && error.get("code").and_then(Value::as_i64) == Some(INVALID_PARAMS)
        && error
            .get("data")
            .and_then(|d| d.get("uri"))
            .is_some_and(Value::is_string)
        && let Some(map) = error.as_object_mut()
    {
        map.insert("code".into(), LEGACY_RESOURCE_NOT_FOUND.into());
    }
    error
}

/// The version an `initialize` is answered with: the client's when it is of the handshake era (the
/// translation covers each of them), the era's latest otherwise.
pub(super) fn handshake_version(asked: Option<&str>) -> &'static str {
    let latest = HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1];
    asked
        .and_then(|asked| HANDSHAKE_VERSIONS.iter().find(|v| **v == asked))
        .copied()
        .unwrap_or(latest)
}

/// `initialize`'s result from `server/discover`'s: the capabilities as the translation offers them
/// (`logging` and `resources.subscribe` are emulated; list changes come from `subscriptions/listen`).
pub(super) fn initialize_result(discovered: &Value, version: &str) -> Value {
    let mut capabilities = discovered
        .get("capabilities")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    capabilities.insert("logging".into(), json!({}));
    if let Some(Value::Object(resources)) = capabilities.get_mut("resources") {
        resources.insert("subscribe".into(), Value::Bool(true));
    }
    let server_info = discovered
        .get("serverInfo")
        .or_else(|| {
            discovered
                .get("_meta")
                .and_then(|m| m.get(META_SERVER_INFO))
        })
        .cloned()
        .unwrap_or_else(|| json!({"name": "unknown", "version": "0"}));
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": server_info,
    });
    if let Some(instructions) = discovered.get("instructions").filter(|i| i.is_string()) {
        result["instructions"] = instructions.clone();
    }
    result
}

/// Which list changes a server announces, as a `subscriptions/listen` filter's flags.
pub(super) fn list_flags(discovered: &Value) -> Map<String, Value> {
    let mut flags = Map::new();
    for (capability, flag) in [
        ("tools", "toolsListChanged"),
        ("prompts", "promptsListChanged"),
        ("resources", "resourcesListChanged"),
    ] {
        let changes = discovered
            .get("capabilities")
            .and_then(|c| c.get(capability))
            .and_then(|c| c.get("listChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if changes {
            flags.insert(flag.into(), Value::Bool(true));
        }
    }
    flags
}

/// An error answer from a server that speaks only 2026-07-28 and refused the handshake, rewritten to
/// say so and what to do; `None` for any other frame.
pub(in crate::era) fn explain_refused_handshake(frame: &Frame) -> Option<Frame> {
    let mut message = object(frame)?;
    let error = message.get_mut("error")?.as_object_mut()?;
    if error.get("code").and_then(Value::as_i64) != Some(UNSUPPORTED_PROTOCOL_VERSION) {
        return None;
    }
    let supported: Vec<&str> = error
        .get("data")
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if supported.is_empty() || supported.iter().any(|v| HANDSHAKE_VERSIONS.contains(v)) {
        return None;
    }
    let was = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let text = format!(
        "the upstream speaks only {} and refused the handshake ({was}); connect with the protocol set to auto or modern, which translates the handshake for it",
        supported.join(", ")
    );
    error.insert("message".into(), text.into());
    Some(frame_of(message))
}

fn frame_of(message: Map<String, Value>) -> Frame {
    frame(&Value::Object(message))
}

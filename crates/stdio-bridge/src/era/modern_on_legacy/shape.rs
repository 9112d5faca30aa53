//! What a 2026-07-28 client is handed, built from what a legacy upstream said: results with
//! `resultType` and the cache fields, `server/discover` from the kept `initialize` result, the answer
//! to a legacy `initialize` from that same result, and the error codes that differ between the eras.

use serde_json::{Map, Value, json};

use crate::vocab::{
    HANDSHAKE_VERSION, HANDSHAKE_VERSIONS, INVALID_PARAMS, LEGACY_RESOURCE_NOT_FOUND,
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION,
    META_SERVER_INFO, METHOD_NOT_FOUND, MODERN_VERSION, PROMPTS_LIST, REMOVED_IN_MODERN,
    RESOURCES_LIST, RESOURCES_READ, RESOURCES_TEMPLATES_LIST, TOOLS_LIST,
    UNSUPPORTED_PROTOCOL_VERSION, error_answer, error_answer_with_data,
};

/// The results a 2026-07-28 client may cache, which must say for how long and for whom.
const CACHEABLE: [&str; 5] = [
    TOOLS_LIST,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
];

/// The `_meta` object of a request's params, when it has one.
pub(super) fn meta(message: &Value) -> Option<&Map<String, Value>> {
    message.get("params")?.get("_meta")?.as_object()
}

/// The error a 2026-07-28 request gets when the bridge cannot serve it, as a server of that version
/// would refuse it: its `_meta` has no client capabilities or names another version, or its method
/// is one 2026-07-28 removed (which must never reach the session the bridge keeps).
pub(super) fn refusal(message: &Value) -> Option<Value> {
    let id = message.get("id").filter(|id| !id.is_null())?;
    let meta = meta(message)?;
    let method = message["method"].as_str().unwrap_or_default();
    let (code, said, data) = match meta.get(META_PROTOCOL_VERSION)? {
        _ if !meta.contains_key(META_CLIENT_CAPABILITIES) => (
            INVALID_PARAMS,
            format!(
                "params._meta is missing {META_CLIENT_CAPABILITIES}, which a {MODERN_VERSION} request must \
                 carry; send the client's capabilities (an empty object when it has none)"
            ),
            None,
        ),
        Value::String(version)
            if version == MODERN_VERSION && REMOVED_IN_MODERN.contains(&method) =>
        {
            (
                METHOD_NOT_FOUND,
                format!(
                    "method not found: {method} was removed in {MODERN_VERSION}, which needs no \
                 handshake and keeps no session state"
                ),
                None,
            )
        }
        Value::String(version) if version == MODERN_VERSION => return None,
        Value::String(version) => (
            UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "protocol version {version} is not supported here; send {MODERN_VERSION}, or \
                 initialize a session for a version of the handshake era"
            ),
            Some(json!({"supported": [MODERN_VERSION], "requested": version})),
        ),
        _ => (
            INVALID_PARAMS,
            format!("{META_PROTOCOL_VERSION} must be a string such as \"{MODERN_VERSION}\""),
            None,
        ),
    };
    Some(match data {
        Some(data) => error_answer_with_data(id, code, &said, data),
        None => error_answer(id, code, &said),
    })
}

/// The params of the `initialize` the bridge sends for a client of 2026-07-28: its info and
/// capabilities from the request's `_meta`.
pub(super) fn initialize_params(message: &Value) -> Value {
    let meta = meta(message);
    let field = |key: &str, default: Value| {
        meta.and_then(|meta| meta.get(key))
            .filter(|value| value.is_object())
            .cloned()
            .unwrap_or(default)
    };
    json!({
        "protocolVersion": HANDSHAKE_VERSION,
        "capabilities": field(META_CLIENT_CAPABILITIES, json!({})),
        "clientInfo": field(META_CLIENT_INFO, crate::era::own_client_info()),
    })
}

/// The request as a legacy server reads it: the 2026-07-28 `_meta` keys removed (the request's own,
/// such as `progressToken`, kept), and `_meta` itself when nothing is left of it.
pub(super) fn strip(message: &mut Value) {
    let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
        for key in [
            META_PROTOCOL_VERSION,
            META_CLIENT_INFO,
            META_CLIENT_CAPABILITIES,
            META_LOG_LEVEL,
        ] {
            meta.remove(key);
        }
        if meta.is_empty() {
            params.remove("_meta");
        }
    }
}

/// The answer to `server/discover`, from the `initialize` result the session was opened with.
pub(super) fn discover(id: &Value, initialized: &Value) -> Value {
    let mut result = json!({
        "supportedVersions": [MODERN_VERSION],
        "capabilities": initialized.get("capabilities").cloned().unwrap_or_else(|| json!({})),
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
    });
    if let Some(instructions) = initialized.get("instructions").filter(|i| i.is_string()) {
        result["instructions"] = instructions.clone();
    }
    if let Some(info) = initialized.get("serverInfo").filter(|i| i.is_object()) {
        result["_meta"] = json!({ META_SERVER_INFO: info });
    }
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The answer to a legacy client's `initialize` on a session the bridge opened: the kept result, at
/// the version the client asked for when it is a handshake version no newer than the session's.
pub(super) fn initialize_answer(id: &Value, asked: Option<&str>, initialized: &Value) -> Value {
    let mut result = initialized.clone();
    let agreed = initialized.get("protocolVersion").and_then(Value::as_str);
    let rank = |version: &str| HANDSHAKE_VERSIONS.iter().position(|v| *v == version);
    if let (Some(asked), Some(agreed)) = (asked, agreed)
        && let (Some(asked_rank), Some(agreed_rank)) = (rank(asked), rank(agreed))
        && asked_rank <= agreed_rank
    {
        result["protocolVersion"] = Value::from(asked);
    }
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A legacy server's answer to a request of a 2026-07-28 client, made valid for that client: its id,
/// `resultType` on a result, the cache fields on a result it may cache, and the 2026-07-28 code for a
/// resource that does not exist.
pub(super) fn answer(mut message: Value, id: &Value, method: &str, uri: Option<&str>) -> Value {
    message["id"] = id.clone();
    if let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) {
        result
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
        if CACHEABLE.contains(&method) {
            result.entry("ttlMs").or_insert_with(|| Value::from(0));
            result
                .entry("cacheScope")
                .or_insert_with(|| Value::from("private"));
        }
    } else if let Some(error) = message.get_mut("error").and_then(Value::as_object_mut)
        && method == RESOURCES_READ
        && let Some(code @ (LEGACY_RESOURCE_NOT_FOUND | INVALID_PARAMS)) =
            error.get("code").and_then(Value::as_i64)
    {
        // 2026-07-28 says a resource that does not exist with -32602 and the uri in `data`; a
        // legacy server said -32002, or -32602 without the uri.
        if code == LEGACY_RESOURCE_NOT_FOUND {
            error.insert("code".to_owned(), Value::from(INVALID_PARAMS));
        }
        let data = error.entry("data").or_insert_with(|| json!({}));
        if let (Some(data), Some(uri)) = (data.as_object_mut(), uri) {
            data.entry("uri").or_insert_with(|| Value::from(uri));
        }
    }
    message
}

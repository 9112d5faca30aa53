//! What a 2026-07-28 client is handed, built from what a legacy upstream said: results with
//! `resultType` and the cache fields, `server/discover` from the kept `initialize` result, the answer
//! to a legacy `initialize` from that same result, and the error codes that differ between the eras.

use serde_json::{Map, Value, json};

use crate::era::MODERN_VERSION;

/// The `_meta` keys a 2026-07-28 client puts on every request, none of which a legacy server knows.
pub(in crate::era) const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub(super) const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
pub(in crate::era) const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub(super) const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// The `_meta` key of the server's identity on a discover result.
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// The latest version of the handshake era, which the bridge asks for when it initializes a session.
pub(super) const HANDSHAKE_VERSION: &str = "2025-11-25";
/// The versions of the handshake era, oldest first.
const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", HANDSHAKE_VERSION];

/// The legacy error code for a resource that does not exist, and the one 2026-07-28 uses instead.
const LEGACY_RESOURCE_NOT_FOUND: i64 = -32002;
const INVALID_PARAMS: i64 = -32602;
const METHOD_NOT_FOUND: i64 = -32601;
/// The requests of the handshake era that 2026-07-28 removed.
const REMOVED: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];
/// The 2026-07-28 error for a request at a version the server does not serve.
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The results a 2026-07-28 client may cache, which must say for how long and for whom.
const CACHEABLE: [&str; 5] = [
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
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
    let (code, said, data) = match meta.get(VERSION_KEY)? {
        _ if !meta.contains_key(CAPABILITIES_KEY) => (
            INVALID_PARAMS,
            format!(
                "params._meta is missing {CAPABILITIES_KEY}, which a {MODERN_VERSION} request must \
                 carry; send the client's capabilities (an empty object when it has none)"
            ),
            None,
        ),
        Value::String(version) if version == MODERN_VERSION && REMOVED.contains(&method) => (
            METHOD_NOT_FOUND,
            format!(
                "method not found: {method} was removed in {MODERN_VERSION}, which needs no \
                 handshake and keeps no session state"
            ),
            None,
        ),
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
            format!("{VERSION_KEY} must be a string such as \"{MODERN_VERSION}\""),
            None,
        ),
    };
    let mut refusal = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": said}});
    if let Some(data) = data {
        refusal["error"]["data"] = data;
    }
    Some(refusal)
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
        "capabilities": field(CAPABILITIES_KEY, json!({})),
        "clientInfo": field(CLIENT_INFO_KEY, json!({"name": "calltape", "version": env!("CARGO_PKG_VERSION")})),
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
            VERSION_KEY,
            CLIENT_INFO_KEY,
            CAPABILITIES_KEY,
            LOG_LEVEL_KEY,
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
        result["_meta"] = json!({ SERVER_INFO_KEY: info });
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
        && method == "resources/read"
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

/// An error answer from the bridge itself.
pub(super) fn error(id: &Value, code: i64, message: &str, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}})
}

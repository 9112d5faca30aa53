//! The words of MCP that calltape reads and writes, each spelled once: protocol versions, method
//! names, `_meta` keys, JSON-RPC and MCP error codes, and the shape of an error answer.
//!
//! Every crate of the workspace that speaks MCP takes these from here, so that a key or a code the
//! specification changes is changed in one place. The codes the bridge makes for its own failures
//! (-32000…-32019) are beside its error type, at the crate root.
//!
//! ```
//! use calltape_stdio_bridge::vocab::{self, METHOD_NOT_FOUND};
//!
//! let answer = vocab::error_answer(&7.into(), METHOD_NOT_FOUND, "method not found: a/b");
//! assert_eq!(answer["error"]["code"], -32601);
//! assert_eq!(answer["id"], 7);
//! ```

use serde_json::{Value, json};

// Protocol versions.

/// The protocol version of the stateless era: no handshake, no session, the version and the client's
/// identity in every request's `_meta`.
pub const MODERN_VERSION: &str = "2026-07-28";

/// The latest version of the handshake era (`initialize` first, then a session).
pub const HANDSHAKE_VERSION: &str = "2025-11-25";

/// Every protocol version calltape speaks, oldest first; the last is [`MODERN_VERSION`].
pub const PROTOCOL_VERSIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    HANDSHAKE_VERSION,
    MODERN_VERSION,
];

/// The versions of the handshake era, oldest first: [`PROTOCOL_VERSIONS`] without [`MODERN_VERSION`].
pub const HANDSHAKE_VERSIONS: &[&str] = PROTOCOL_VERSIONS.split_at(PROTOCOL_VERSIONS.len() - 1).0;

// Method names.

/// The request that opens a session of the handshake era.
pub const INITIALIZE: &str = "initialize";
/// The notification a client sends once the answer to [`INITIALIZE`] came.
pub const INITIALIZED: &str = "notifications/initialized";
/// A liveness request of the handshake era.
pub const PING: &str = "ping";
/// The request that sets the server's log level (handshake era).
pub const SET_LOG_LEVEL: &str = "logging/setLevel";
/// The request that subscribes to a resource's changes (handshake era).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// The request that ends a subscription to a resource (handshake era).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// The request a 2026-07-28 client asks a server's versions and capabilities with.
pub const SERVER_DISCOVER: &str = "server/discover";
/// The 2026-07-28 request that holds a stream of notifications open.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// The notification that a subscribed resource changed.
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// The request that calls a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// The request that lists the server's tools.
pub const TOOLS_LIST: &str = "tools/list";
/// The request that gets a prompt by name.
pub const PROMPTS_GET: &str = "prompts/get";
/// The request that lists the server's prompts.
pub const PROMPTS_LIST: &str = "prompts/list";
/// The request that reads a resource by URI.
pub const RESOURCES_READ: &str = "resources/read";
/// The request that lists the server's resources.
pub const RESOURCES_LIST: &str = "resources/list";
/// The request that lists the server's resource templates.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// The request that polls a task's status.
pub const TASKS_GET: &str = "tasks/get";
/// The request that fetches a finished task's result.
pub const TASKS_RESULT: &str = "tasks/result";
/// The notification that cancels a request in flight.
pub const CANCELLED: &str = "notifications/cancelled";
/// The notification of a request's progress.
pub const PROGRESS: &str = "notifications/progress";
/// The notification that the server's tools changed.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// The notification that the server's prompts changed.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// The notification that the server's resources changed.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// The 2026-07-28 notification that opens a `subscriptions/listen` stream.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// The requests of the handshake era that 2026-07-28 removed: a 2026-07-28 request for one is
/// answered with [`METHOD_NOT_FOUND`].
pub const REMOVED_IN_MODERN: &[&str] = &[
    INITIALIZE,
    PING,
    SET_LOG_LEVEL,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
];

// Streamable HTTP header names, lowercase as HTTP/2 writes them (HTTP matches them in any case).

/// The header of a handshake-era session's id.
pub const HEADER_SESSION_ID: &str = "mcp-session-id";
/// The header of the protocol version a request is sent in.
pub const HEADER_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The 2026-07-28 header that mirrors a request's method.
pub const HEADER_METHOD: &str = "mcp-method";
/// The 2026-07-28 header that mirrors a request's tool or prompt name, or resource URI.
pub const HEADER_NAME: &str = "mcp-name";
/// The header a client resumes an event stream with, naming the last event it read.
pub const HEADER_LAST_EVENT_ID: &str = "last-event-id";
/// How a mirrored header value that is not plain ASCII starts: `=?base64?`, then the standard base64
/// of its UTF-8 bytes, then [`HEADER_BASE64_END`].
pub const HEADER_BASE64_START: &str = "=?base64?";
/// How a mirrored header value written in base64 ends.
pub const HEADER_BASE64_END: &str = "?=";

// `_meta` keys.

/// The prefix of every `_meta` key the specification defines.
pub const META_PREFIX: &str = "io.modelcontextprotocol/";
/// The `_meta` key of a 2026-07-28 request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of a 2026-07-28 request's client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of a 2026-07-28 request's client name and version.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The `_meta` key of the log level a 2026-07-28 request asks for.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The `_meta` key a 2026-07-28 server stamps its name and version with on a result.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The `_meta` key that ties a notification to the `subscriptions/listen` stream it belongs to.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The `_meta` key that ties a message to the task it belongs to (`{"taskId": …}`).
pub const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

// Error codes.

/// JSON-RPC: the line was not JSON, was JSON but not an object or array, or was longer than the frame
/// limit. The bridge's answer has `data.reason` `parse_error`, `not_object` or `frame_too_large`, and
/// `id` `null`.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the message was JSON but not a request to forward: an empty batch, a batch item that is
/// not an object, or an `id` that is an object, an array or a boolean. The bridge's answer has
/// `data.reason` `invalid_request` and `id` `null`.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the method does not exist (or, in 2026-07-28, no longer does).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: the params are wrong; in 2026-07-28 also a resource that does not exist.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC: the server failed.
pub const INTERNAL_ERROR: i64 = -32603;
/// The handshake era's code for a resource that does not exist; 2026-07-28 says [`INVALID_PARAMS`].
pub const LEGACY_RESOURCE_NOT_FOUND: i64 = -32002;
/// 2026-07-28: a request's `MCP-Protocol-Version`, `Mcp-Method` or `Mcp-Name` header is missing or
/// disagrees with its body (HTTP 400).
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability the client did not declare (HTTP 400).
pub const MISSING_CAPABILITY: i64 = -32021;
/// 2026-07-28: the server does not serve the request's protocol version; `data.supported` names the
/// ones it does (HTTP 400).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

// Answers.

/// A JSON-RPC error answer to `id`: `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}`.
pub fn error_answer(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// [`error_answer`] with the error's `data`.
pub fn error_answer_with_data(id: &Value, code: i64, message: &str, data: Value) -> Value {
    let mut answer = error_answer(id, code, message);
    answer["error"]["data"] = data;
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handshake_versions_are_every_version_but_the_modern_one() {
        assert_eq!(
            HANDSHAKE_VERSIONS,
            ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
        );
        assert_eq!(PROTOCOL_VERSIONS.last(), Some(&MODERN_VERSION));
    }

    #[test]
    fn error_answers_carry_the_id_code_message_and_data() {
        let id = Value::from("a");
        assert_eq!(
            error_answer_with_data(&id, INVALID_PARAMS, "m", json!({"reason": "r"})),
            json!({"jsonrpc": "2.0", "id": "a",
                "error": {"code": -32602, "message": "m", "data": {"reason": "r"}}})
        );
        assert_eq!(
            error_answer(&Value::Null, METHOD_NOT_FOUND, "m"),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32601, "message": "m"}})
        );
    }
}

//! 2026-07-28's HTTP rules for a stateless request: its headers say what its body says, and an error
//! answer has the HTTP status its code calls for.

use http::{HeaderMap, Response, StatusCode};
use serde_json::{Value, json};

use super::{
    ResBody, VERSION_HEADER,
    reply::{header_str, json_response},
};
use crate::jsonrpc::{id_of, method_of};

/// The `_meta` key of a 2026-07-28 request's protocol version.
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// The code of a request whose headers disagree with its body.
const HEADER_MISMATCH: i64 = -32020;
/// The form of an `Mcp-Name` value that is not plain visible ASCII (base64 between these).
const ENCODED_START: &str = "=?base64?";
const ENCODED_END: &str = "?=";

/// The refusal of a 2026-07-28 request (one that names its version in `_meta`) whose
/// `MCP-Protocol-Version`, `Mcp-Method` or `Mcp-Name` header disagrees with its body: HTTP 400 with
/// -32020 and the request's id. An `Mcp-Name` in base64 is not compared.
pub(super) fn header_mismatch(
    headers: &HeaderMap,
    messages: &[Value],
) -> Option<Box<Response<ResBody>>> {
    messages.iter().find_map(|message| {
        let method = method_of(message)?;
        let params = message.get("params")?;
        let version = params.get("_meta")?.get(PROTOCOL_VERSION_META)?;
        let wrong = if header_str(headers, VERSION_HEADER) != version.as_str() {
            "the MCP-Protocol-Version header does not match the request's _meta protocol version"
        } else if header_str(headers, "mcp-method") != Some(method) {
            "the Mcp-Method header does not match the request's method; send the method in it"
        } else if name_differs(headers, method, params) {
            "the Mcp-Name header does not match the request's name or uri"
        } else {
            return None;
        };
        let id = id_of(message).cloned().unwrap_or(Value::Null);
        let answer = json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": HEADER_MISMATCH, "message": wrong}});
        Some(Box::new(json_response(StatusCode::BAD_REQUEST, &answer)))
    })
}

/// Whether a plain `Mcp-Name` header names another tool, prompt or resource than the body does.
fn name_differs(headers: &HeaderMap, method: &str, params: &Value) -> bool {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return false,
    };
    let (Some(body), Some(header)) = (
        params.get(key).and_then(Value::as_str),
        header_str(headers, "mcp-name"),
    ) else {
        return false;
    };
    let encoded = header.starts_with(ENCODED_START) && header.ends_with(ENCODED_END);
    !encoded && header != body
}

/// The HTTP status of a stateless request's error answer, as 2026-07-28 has it: 404 for a method
/// that does not exist, 400 for invalid params, a header mismatch, a missing required capability or
/// an unsupported protocol version; `None` for any other answer (200).
pub(super) fn error_status(answer: &Value) -> Option<StatusCode> {
    match answer.get("error")?.get("code")?.as_i64()? {
        -32601 => Some(StatusCode::NOT_FOUND),
        -32602 | -32020 | -32021 | -32022 => Some(StatusCode::BAD_REQUEST),
        _ => None,
    }
}

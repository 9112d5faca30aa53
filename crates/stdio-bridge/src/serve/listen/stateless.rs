//! 2026-07-28's HTTP rules for a stateless request: its headers say what its body says, and an error
//! answer has the HTTP status its code calls for.

use http::{HeaderMap, Response, StatusCode};
use serde_json::{Value, json};

use super::{
    ResBody, STATELESS_VERSION, SUPPORTED_PROTOCOL_VERSIONS, VERSION_HEADER,
    reply::{header_str, json_response},
};
use crate::jsonrpc::{id_of, method_of};
use crate::vocab::{
    HEADER_BASE64_END, HEADER_BASE64_START, HEADER_METHOD, HEADER_MISMATCH, HEADER_NAME,
    INVALID_PARAMS, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, METHOD_NOT_FOUND,
    MISSING_CAPABILITY, PROMPTS_GET, REMOVED_IN_MODERN, RESOURCES_READ, TOOLS_CALL,
    UNSUPPORTED_PROTOCOL_VERSION, error_answer, error_answer_with_data,
};

/// Whether a POST without `Mcp-Session-Id` whose `MCP-Protocol-Version` header says `version` is a
/// stateless request: any version but those of the handshake era, so that one serve does not speak
/// is refused by 2026-07-28's rules, with the request's id.
pub(super) fn is_stateless(version: &str) -> bool {
    version == STATELESS_VERSION || !SUPPORTED_PROTOCOL_VERSIONS.contains(&version)
}

/// The refusal of a stateless request that breaks 2026-07-28's rules, with the request's id and the
/// HTTP status its code calls for: a version serve does not speak (-32022, naming the supported one
/// and echoing the requested), a request without `_meta` or without its protocol version or client
/// capabilities (-32602), headers that disagree with the body (-32020), a removed method (404,
/// -32601). A notification is held only to the header rules, and only when it names its version.
pub(super) fn refuse(headers: &HeaderMap, messages: &[Value]) -> Option<Box<Response<ResBody>>> {
    let version = header_str(headers, VERSION_HEADER)
        .unwrap_or_default()
        .trim();
    messages.iter().find_map(|message| {
        let method = method_of(message)?;
        let id = id_of(message)?;
        let (status, answer) = if version != STATELESS_VERSION {
            let message = format!(
                "unsupported MCP-Protocol-Version {version:?}; this server speaks {STATELESS_VERSION} without a session"
            );
            let data = json!({"supported": [STATELESS_VERSION], "requested": version});
            let answer = error_answer_with_data(id, UNSUPPORTED_PROTOCOL_VERSION, &message, data);
            (StatusCode::BAD_REQUEST, answer)
        } else if let Some(missing) = missing_meta(message) {
            (StatusCode::BAD_REQUEST, error_answer(id, INVALID_PARAMS, missing))
        } else if REMOVED_IN_MODERN.contains(&method) {
            let message = format!(
                "method not found: {method} was removed in {STATELESS_VERSION}, which needs no handshake and keeps no session state"
            );
            (StatusCode::NOT_FOUND, error_answer(id, METHOD_NOT_FOUND, &message))
        } else {
            return None;
        };
        Some(Box::new(json_response(status, &answer)))
    })
    .or_else(|| header_mismatch(headers, messages))
}

/// What a 2026-07-28 request's `_meta` lacks, as the message of its -32602 error.
fn missing_meta(message: &Value) -> Option<&'static str> {
    let Some(meta) = message.get("params").and_then(|p| p.get("_meta")) else {
        return Some(
            "invalid params: a 2026-07-28 request carries params._meta with its protocolVersion and clientCapabilities",
        );
    };
    if !meta
        .get(META_PROTOCOL_VERSION)
        .is_some_and(Value::is_string)
    {
        return Some(
            "invalid params: params._meta lacks io.modelcontextprotocol/protocolVersion; name the request's version there",
        );
    }
    if !meta
        .get(META_CLIENT_CAPABILITIES)
        .is_some_and(Value::is_object)
    {
        return Some(
            "invalid params: params._meta lacks io.modelcontextprotocol/clientCapabilities; send {} when the client declares none",
        );
    }
    None
}

/// The refusal of a 2026-07-28 request (one that names its version in `_meta`) whose
/// `MCP-Protocol-Version`, `Mcp-Method` or `Mcp-Name` header disagrees with its body, or is missing:
/// HTTP 400 with -32020 and the request's id. An `Mcp-Name` in base64 is not compared; values are
/// compared without the whitespace around them.
fn header_mismatch(headers: &HeaderMap, messages: &[Value]) -> Option<Box<Response<ResBody>>> {
    messages.iter().find_map(|message| {
        let method = method_of(message)?;
        let params = message.get("params")?;
        let version = params.get("_meta")?.get(META_PROTOCOL_VERSION)?;
        let wrong = if trimmed(headers, VERSION_HEADER) != version.as_str() {
            "the MCP-Protocol-Version header does not match the request's _meta protocol version"
        } else if trimmed(headers, HEADER_METHOD) != Some(method) {
            "the Mcp-Method header does not match the request's method; send the method in it"
        } else if name_differs(headers, method, params) {
            "the Mcp-Name header is missing or does not match the request's name or uri; send the name in it"
        } else {
            return None;
        };
        let id = id_of(message).cloned().unwrap_or(Value::Null);
        let answer = error_answer(&id, HEADER_MISMATCH, wrong);
        Some(Box::new(json_response(StatusCode::BAD_REQUEST, &answer)))
    })
}

/// A header's value without the whitespace around it.
fn trimmed<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    header_str(headers, name).map(str::trim)
}

/// Whether the `Mcp-Name` header is missing where the body names a tool, prompt or resource, or
/// names another one (when plain).
fn name_differs(headers: &HeaderMap, method: &str, params: &Value) -> bool {
    let key = match method {
        TOOLS_CALL | PROMPTS_GET => "name",
        RESOURCES_READ => "uri",
        _ => return false,
    };
    let Some(body) = params.get(key).and_then(Value::as_str) else {
        return false;
    };
    let Some(header) = trimmed(headers, HEADER_NAME) else {
        return true;
    };
    let encoded = header.starts_with(HEADER_BASE64_START) && header.ends_with(HEADER_BASE64_END);
    !encoded && header != body
}

/// The HTTP status of a stateless request's error answer, as 2026-07-28 has it: 404 for a method
/// that does not exist, 400 for invalid params, a header mismatch, a missing required capability or
/// an unsupported protocol version; `None` for any other answer (200).
pub(super) fn error_status(answer: &Value) -> Option<StatusCode> {
    match answer.get("error")?.get("code")?.as_i64()? {
        METHOD_NOT_FOUND => Some(StatusCode::NOT_FOUND),
        INVALID_PARAMS | HEADER_MISMATCH | MISSING_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION => {
            Some(StatusCode::BAD_REQUEST)
        }
        _ => None,
    }
}

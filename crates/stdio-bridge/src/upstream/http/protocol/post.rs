//! One POST: its headers (session id, protocol version, the mirrored `Mcp-Method` and `Mcp-Name`),
//! what its status says (a redirect, an expired session, an error answer), a 2xx answer's body, and the
//! error messages that explain an answer that is not MCP.

use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use http::{
    HeaderMap, HeaderValue, Method, StatusCode,
    header::{ACCEPT, CONTENT_TYPE, LOCATION},
};
use tokio::sync::mpsc;

use super::{
    ACCEPT_POST, Core, ERROR_BODY_LIMIT, ERROR_QUOTE_CHARS, Flow, JSON, MAX_MESSAGE, MCP_METHOD,
    MCP_NAME, MCP_PROTOCOL_VERSION, MIRRORED_HEADERS_SINCE, content_type, header_value, send_event,
    stream::{read_post_stream, to_frame},
};
use crate::vocab::{HEADER_BASE64_END, HEADER_BASE64_START};
use crate::{
    jsonrpc::OutgoingPeek,
    upstream::{
        Frame, UpstreamEvent,
        http::transport::{
            BodyStream, HttpRequest, HttpResponse, SendError, Transport, next_chunk,
        },
    },
};

/// POSTs one frame and reports what came back.
pub(super) async fn post<T: Transport>(
    core: &Core<T>,
    frame: Frame,
    info: &OutgoingPeek,
    events: &mpsc::Sender<UpstreamEvent>,
) -> Flow {
    let stateless = info.meta_version.is_some();
    let (headers, sent_session) = post_headers(core, info);
    let request = HttpRequest {
        method: Method::POST,
        headers,
        body: Some(frame.clone()),
    };
    let response = match core.transport.send(request).await {
        Ok(response) => response,
        Err(SendError::NotSent(reason)) => {
            let event = UpstreamEvent::Undelivered {
                frame,
                maybe_delivered: false,
                reason,
            };
            send_event(events, event).await;
            return Flow::Refused;
        }
        Err(SendError::MaybeSent(reason)) => {
            let event = UpstreamEvent::Undelivered {
                frame,
                maybe_delivered: true,
                reason,
            };
            send_event(events, event).await;
            return Flow::Continue;
        }
    };
    let status = response.status;
    let session_rules = !stateless && !info.is_initialize();
    if status.is_redirection() {
        let message = redirect_message(status, &response.headers);
        send_event(events, protocol_error(frame, status, message)).await;
        return Flow::Continue;
    }
    if status == StatusCode::NOT_FOUND && session_rules && sent_session.is_some() {
        tracing::debug!(
            "session expired: the upstream answered {status} to a request with its session id"
        );
        core.forget_session(sent_session.as_ref());
        send_event(events, UpstreamEvent::SessionExpired { frame }).await;
        return Flow::Continue;
    }
    if status.is_success() {
        if info.is_initialize() {
            core.adopt_session_id(&response.headers);
        }
        read_success(core, response, frame, info, events).await;
        return Flow::Continue;
    }
    let body = match read_body(response.body, ERROR_BODY_LIMIT, true).await {
        Ok(body) => body,
        Err(reason) => {
            let message = format!("upstream answered HTTP {status} and then {reason}");
            send_event(events, protocol_error(frame, status, message)).await;
            return Flow::Continue;
        }
    };
    if status == StatusCode::BAD_REQUEST && session_rules && says_session_is_invalid(&body) {
        tracing::debug!(
            "session expired: the upstream answered {status} saying the session id is not valid"
        );
        core.forget_session(sent_session.as_ref());
        send_event(events, UpstreamEvent::SessionExpired { frame }).await;
        return Flow::Continue;
    }
    // A JSON-RPC error answering this very request is an answer, whatever the status.
    if let Some(id) = &info.id
        && let Ok((message, incoming)) = to_frame(body.clone())
        && incoming.is_error
        && incoming.response_id.as_ref() == Some(id)
    {
        send_event(events, UpstreamEvent::Message(message)).await;
        return Flow::Continue;
    }
    let message = error_message(status, &body);
    send_event(events, protocol_error(frame, status, message)).await;
    Flow::Continue
}

/// The headers of a POST: the extra ones, the session's id and protocol version (or the version a
/// stateless request names), and from the 2026-07-28 revision on `Mcp-Method` and `Mcp-Name`; with the
/// session id they carry, to tell later whether the server forgot that very session.
fn post_headers<T: Transport>(
    core: &Core<T>,
    info: &OutgoingPeek,
) -> (HeaderMap, Option<HeaderValue>) {
    let mut headers;
    let mut sent_session = None;
    let mirrored_version;
    if let Some(version) = &info.meta_version {
        // The stateless revision: the request names its own version and no session exists.
        headers = core.extra.clone();
        if let Some(value) = header_value(version) {
            headers.insert(MCP_PROTOCOL_VERSION, value);
        }
        core.session().stateless_version = Some(version.clone());
        mirrored_version = Some(version.clone());
    } else if info.is_initialize() {
        headers = core.extra.clone();
        mirrored_version = None;
    } else {
        let (session_headers, id, version) = core.session_headers();
        headers = session_headers;
        sent_session = id;
        mirrored_version = match version {
            Some(version) => Some(version),
            None => {
                let stateless = core.session().stateless_version.clone();
                if let Some(value) = stateless.as_deref().and_then(header_value) {
                    headers.insert(MCP_PROTOCOL_VERSION, value);
                }
                stateless
            }
        };
    }
    if mirrored_version.is_some_and(|v| v.as_str() >= MIRRORED_HEADERS_SINCE)
        && let Some(method) = &info.method
    {
        headers.insert(MCP_METHOD, encode_mcp_value(method));
        if let Some(name) = &info.name {
            headers.insert(MCP_NAME, encode_mcp_value(name));
        }
    }
    headers.insert(ACCEPT, ACCEPT_POST);
    headers.insert(CONTENT_TYPE, JSON);
    (headers, sent_session)
}

/// Handles a 2xx answer to a POST: nothing (202), one JSON message, or an event stream.
async fn read_success<T: Transport>(
    core: &Core<T>,
    response: HttpResponse,
    frame: Frame,
    info: &OutgoingPeek,
    events: &mpsc::Sender<UpstreamEvent>,
) {
    let status = response.status;
    if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
        return;
    }
    match content_type(&response.headers).as_str() {
        "text/event-stream" => read_post_stream(core, response.body, frame, info, events).await,
        "application/json" => {
            let body = match read_body(response.body, MAX_MESSAGE, false).await {
                Ok(body) => body,
                Err(reason) => {
                    let event = broken(frame, status, reason);
                    send_event(events, event).await;
                    return;
                }
            };
            if body.iter().all(u8::is_ascii_whitespace) {
                if info.is_request() {
                    let message = format!("upstream answered HTTP {status} with an empty body");
                    send_event(events, protocol_error(frame, status, message)).await;
                }
                return;
            }
            match to_frame(body) {
                Ok((message, incoming)) => {
                    if info.is_initialize()
                        && let Some(version) = incoming.protocol_version
                        && let Err(reason) = core.adopt_version(version)
                    {
                        let message = format!("upstream answered HTTP {status} with {reason}");
                        send_event(events, protocol_error(frame, status, message)).await;
                        return;
                    }
                    send_event(events, UpstreamEvent::Message(message)).await;
                }
                Err(reason) => {
                    let message = format!("upstream answered HTTP {status} with {reason}");
                    send_event(events, protocol_error(frame, status, message)).await;
                }
            }
        }
        other => {
            let body = read_body(response.body, ERROR_BODY_LIMIT, true)
                .await
                .unwrap_or_default();
            if !info.is_request() && body.iter().all(u8::is_ascii_whitespace) {
                // Some servers answer a notification with 200 and nothing; that is fine.
                return;
            }
            let shown = if other.is_empty() { "none" } else { other };
            let message = format!(
                "upstream answered HTTP {status} with content type {shown}, not application/json or text/event-stream"
            );
            send_event(events, protocol_error(frame, status, message)).await;
        }
    }
}

/// Reads a whole body, up to `limit` bytes; `truncate` keeps the first `limit` bytes of a longer one
/// instead of failing.
async fn read_body(mut body: BodyStream, limit: usize, truncate: bool) -> Result<Bytes, String> {
    let mut buf = BytesMut::new();
    while let Some(chunk) = next_chunk(&mut body).await {
        let chunk = chunk?;
        if buf.len() + chunk.len() > limit {
            if truncate {
                let room = limit - buf.len();
                buf.extend_from_slice(&chunk[..room]);
                break;
            }
            return Err(format!("sent a body over the {limit}-byte limit"));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// The event for a frame whose answer broke off after it was sent.
pub(super) fn broken(frame: Frame, status: StatusCode, reason: String) -> UpstreamEvent {
    if reason.starts_with("sent a body over") {
        return protocol_error(frame, status, format!("upstream {reason}"));
    }
    UpstreamEvent::Undelivered {
        frame,
        maybe_delivered: true,
        reason: format!("the connection broke while the answer streamed: {reason}"),
    }
}

pub(super) fn protocol_error(frame: Frame, status: StatusCode, message: String) -> UpstreamEvent {
    UpstreamEvent::ProtocolError {
        frame,
        status: Some(status.as_u16()),
        message,
    }
}

fn redirect_message(status: StatusCode, headers: &HeaderMap) -> String {
    let target = headers
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(|location| {
            // The query may carry a token; it is not needed to explain the refusal.
            let cut = location.find(['?', '#']).unwrap_or(location.len());
            format!(" to {}", &location[..cut])
        })
        .unwrap_or_default();
    format!(
        "upstream answered HTTP {status} (a redirect{target}); redirects are refused so that credentials never follow them: use the final address"
    )
}

fn error_message(status: StatusCode, body: &[u8]) -> String {
    if body.iter().all(u8::is_ascii_whitespace) {
        format!("upstream answered HTTP {status}")
    } else {
        format!("upstream answered HTTP {status}: {}", quote(body))
    }
}

/// The start of a body, on one line, for an error message.
pub(super) fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out = String::new();
    for (i, word) in text.split_whitespace().enumerate() {
        if out.len() + word.len() > ERROR_QUOTE_CHARS {
            out.push('…');
            break;
        }
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Whether a 400 answer says the session id is missing, invalid or unknown.
pub(crate) fn says_session_is_invalid(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body).to_ascii_lowercase();
    text.contains("session")
        && [
            "missing",
            "invalid",
            "unknown",
            "no valid",
            "not found",
            "expired",
            "required",
            "terminated",
        ]
        .iter()
        .any(|word| text.contains(word))
}

/// Encodes a value for an MCP header (`Mcp-Method`, `Mcp-Name`): as it is when it is visible ASCII
/// (space allowed inside) without surrounding whitespace and does not look like the encoded form itself,
/// otherwise as `=?base64?<standard base64 of its UTF-8 bytes>?=`.
fn encode_mcp_value(value: &str) -> HeaderValue {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim_matches(' ').len() == value.len()
        && !(value.starts_with(HEADER_BASE64_START) && value.ends_with(HEADER_BASE64_END));
    let text = if plain {
        value.to_owned()
    } else {
        format!(
            "{HEADER_BASE64_START}{}{HEADER_BASE64_END}",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    };
    // Both forms are visible ASCII, which a header value always accepts.
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_values_are_encoded_only_when_needed() {
        let cases: &[(&str, &str)] = &[
            ("tools/call", "tools/call"),
            ("get weather", "get weather"),
            ("file:///tmp/a.txt", "file:///tmp/a.txt"),
            ("café", "=?base64?Y2Fmw6k=?="),
            (" padded", "=?base64?IHBhZGRlZA==?="),
            ("padded ", "=?base64?cGFkZGVkIA==?="),
            ("tab\there", "=?base64?dGFiCWhlcmU=?="),
            ("line\r\nbreak", "=?base64?bGluZQ0KYnJlYWs=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
            ("=?base64?only-start", "=?base64?only-start"),
            ("日本", "=?base64?5pel5pys?="),
            ("", ""),
        ];
        for (input, expected) in cases {
            assert_eq!(encode_mcp_value(input), *expected, "input {input:?}");
        }
    }

    #[test]
    fn session_errors_are_recognised_in_400_bodies() {
        let cases: &[(&str, bool)] = &[
            ("Bad Request: No valid session ID provided", true),
            (
                r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
                true,
            ),
            ("Bad Request: Missing session ID", true),
            ("Invalid or expired session", true),
            ("Session not found", true),
            ("unknown session id abc", true),
            ("Bad Request: invalid JSON", false),
            ("Session", false),
            ("", false),
        ];
        for (body, expected) in cases {
            assert_eq!(
                says_session_is_invalid(body.as_bytes()),
                *expected,
                "{body}"
            );
        }
    }

    #[test]
    fn error_messages_quote_the_start_of_the_body() {
        assert_eq!(
            error_message(
                StatusCode::INTERNAL_SERVER_ERROR,
                b"<html>\n  <h1>oops</h1>\n</html>"
            ),
            "upstream answered HTTP 500 Internal Server Error: <html> <h1>oops</h1> </html>"
        );
        assert_eq!(
            error_message(StatusCode::BAD_GATEWAY, b""),
            "upstream answered HTTP 502 Bad Gateway"
        );
        let long = "word ".repeat(100);
        let message = error_message(StatusCode::BAD_REQUEST, long.as_bytes());
        assert!(message.ends_with('…') && message.len() < 260, "{message}");
    }

    #[test]
    fn redirects_are_explained_without_their_query() {
        let mut headers = HeaderMap::new();
        headers.insert(
            LOCATION,
            HeaderValue::from_static("https://elsewhere.example/mcp?token=abc"),
        );
        assert_eq!(
            redirect_message(StatusCode::TEMPORARY_REDIRECT, &headers),
            "upstream answered HTTP 307 Temporary Redirect (a redirect to https://elsewhere.example/mcp); redirects are refused so that credentials never follow them: use the final address"
        );
    }
}

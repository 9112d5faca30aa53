//! The answers the server builds (plain text, JSON, JSON-RPC errors) and the request headers it reads.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use super::ResBody;

pub(super) fn plain(status: StatusCode, text: &str) -> Response<ResBody> {
    let mut res = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed_unsync());
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

pub(super) fn json_response(status: StatusCode, value: &Value) -> Response<ResBody> {
    // A `Value` always serializes (its keys are strings, its numbers finite).
    let body = serde_json::to_vec(value).unwrap_or_default();
    json_body(status, Bytes::from(body))
}

/// A response whose body is JSON text already.
pub(super) fn json_body(status: StatusCode, body: Bytes) -> Response<ResBody> {
    let mut res = Response::new(Full::new(body).boxed_unsync());
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

pub(super) fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<ResBody> {
    json_response(
        status,
        &crate::vocab::error_answer(&Value::Null, code, message),
    )
}

/// A refusal with `-32600` and `id: null`, for a POST that is not a request to take.
pub(super) fn invalid_request(message: &str) -> Box<Response<ResBody>> {
    Box::new(rpc_error(
        StatusCode::BAD_REQUEST,
        crate::INVALID_REQUEST,
        message,
    ))
}

pub(super) fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    let (kind, _) = wanted.split_once('/').unwrap_or((wanted, ""));
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',').any(|item| {
                let media = item
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                media == wanted || media == "*/*" || media == format!("{kind}/*")
            })
        })
}

pub(super) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_lists() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(accepts(&headers, "application/json"));
        assert!(accepts(&headers, "text/event-stream"));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;q=0.9"),
        );
        assert!(accepts(&headers, "application/json"));
        assert!(!accepts(&headers, "text/event-stream"));
        headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        assert!(accepts(&headers, "text/event-stream"));
        headers.insert(header::ACCEPT, HeaderValue::from_static("text/*"));
        assert!(accepts(&headers, "text/event-stream"));
        assert!(!accepts(&headers, "application/json"));
        assert!(!accepts(&HeaderMap::new(), "application/json"));
    }
}

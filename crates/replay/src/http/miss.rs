//! Answers for requests the cassette cannot serve, shaped like the provider's own errors so SDKs raise
//! a readable exception and do not retry.

use bytes::Bytes;
use calltape_recorder::http::{Normalizer, Request};
use calltape_recorder::terminal::{LineBreaks, escape_controls};
use http::{HeaderValue, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::json;

use super::ProxyBody;
use super::report::{Closest, Miss};
use super::tape::{Tape, diff_text};

/// The reason of a miss on a cassette file that does not exist.
pub(crate) const NO_CASSETTE: &str = "no cassette";

/// Which error shape an upstream's clients expect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Provider {
    OpenAi,
    Anthropic,
}

impl Provider {
    pub(crate) fn guess(name: &str, url: &str) -> Self {
        if name.contains("anthropic") || url.contains("anthropic") || name.contains("claude") {
            Self::Anthropic
        } else {
            Self::OpenAi
        }
    }

    /// The header this provider's API reads a key from, and its value for `key`.
    pub(crate) fn key_header(self, key: &str) -> (String, String) {
        match self {
            Self::Anthropic => ("x-api-key".to_owned(), key.to_owned()),
            Self::OpenAi => ("authorization".to_owned(), format!("Bearer {key}")),
        }
    }
}

/// An error response in the provider's shape, with `x-should-retry: false`.
pub(crate) fn error_response(
    provider: Provider,
    status: StatusCode,
    kind: &str,
    message: &str,
) -> hyper::Response<ProxyBody> {
    let body = match provider {
        Provider::OpenAi => {
            json!({"error": {"message": message, "type": kind, "param": null, "code": kind}})
        }
        Provider::Anthropic => {
            let t = match status.as_u16() {
                404 => "not_found_error",
                400 => "invalid_request_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": t, "message": message}})
        }
    };
    let bytes = Bytes::from(body.to_string());
    let mut resp = hyper::Response::new(
        Full::new(bytes)
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert("x-should-retry", HeaderValue::from_static("false"));
    h.insert("x-calltape", HeaderValue::from_static("miss"));
    resp
}

/// A miss as the report keeps it, the short message for the client, and the full diagnostics for
/// stderr. A miss on a cassette that does not exist says so, with how to record it.
pub(crate) fn describe_miss(
    tape: &mut Tape,
    request: &Request,
    normalizer: &Normalizer,
    why: &str,
    rerecord: &str,
) -> (Miss, String, String) {
    let request_text = indent(&diff_text(normalizer, request), "    ");
    if tape.missing() {
        let head = format!(
            "calltape: no cassette at {} for {} {} {} (key {})",
            tape.path.display(),
            request.method,
            request.upstream,
            request.path,
            request.key,
        );
        let short = format!("{head}; record it with: {rerecord}");
        let long = format!("{head}\n  request:\n{request_text}\n  record it with: {rerecord}");
        return (Miss::new(request, NO_CASSETTE.to_owned()), short, long);
    }
    let ranked = tape.ranked(request, normalizer, false);
    let mut miss = Miss::new(request, why.to_owned());
    for &(i, ratio) in ranked.iter().take(3) {
        let r = &tape.get(i).request;
        miss.closest
            .push(Closest::new(r, ratio, request_diff(normalizer, r, request)));
    }
    let head = format!(
        "calltape: {why} for {} {} {} (key {}) in {}",
        request.method,
        request.upstream,
        request.path,
        request.key,
        tape.path.display()
    );
    let mut short = head.clone();
    let mut long = head;
    long.push_str(&format!("\n  request:\n{request_text}"));
    match miss.closest.first() {
        None => {
            short.push_str("; the cassette holds no recordings");
            long.push_str("\n  the cassette holds no recordings");
        }
        Some(c) => {
            short.push_str(&format!(
                "; closest recording: {} {} {} (key {}, seq {}, {:.0}% similar)",
                c.method,
                c.upstream,
                c.path,
                c.key,
                c.seq,
                c.similarity * 100.0
            ));
        }
    }
    for c in &miss.closest {
        long.push_str(&format!(
            "\n  closest: key {} seq {} ({:.0}% similar)\n{}",
            c.key,
            c.seq,
            c.similarity * 100.0,
            indent(&c.diff, "    ")
        ));
    }
    short.push_str(&format!("; to re-record: {rerecord}"));
    long.push_str(&format!("\n  to re-record: {rerecord}"));
    (miss, shown(&short), shown(&long))
}

/// A line (or lines) for stderr that quotes a request or a recording, its control characters
/// escaped.
pub(crate) fn shown(text: &str) -> String {
    escape_controls(text, LineBreaks::Keep).into_owned()
}

/// A unified diff from a recorded request to a new one, as readable lines.
pub(crate) fn request_diff(
    normalizer: &Normalizer,
    recorded: &Request,
    request: &Request,
) -> String {
    similar::TextDiff::from_lines(
        &diff_text(normalizer, recorded),
        &diff_text(normalizer, request),
    )
    .unified_diff()
    .context_radius(2)
    .header("recorded", "request")
    .to_string()
}

pub(crate) fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|l| format!("{prefix}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

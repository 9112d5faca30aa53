//! The in-memory shape of a cassette.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::volatile::is_volatile_response_header;

/// The cassette format version this crate reads and writes.
pub const FORMAT_VERSION: u64 = 1;

/// A whole cassette: its meta line and its interactions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cassette {
    /// Fingerprints of the configuration that wrote it.
    pub meta: Meta,
    /// The recorded request/response pairs.
    pub interactions: Vec<Interaction>,
}

/// The cassette's first line. It holds no wall-clock time, so re-recording the same traffic leaves it
/// unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// Fingerprint of the request normaliser (ignored body paths and query names) that made the keys.
    pub normalizer: String,
    /// Fingerprint of the redaction configuration.
    pub redaction: String,
}

/// One request and the answer it got.
#[derive(Debug, Clone, PartialEq)]
pub struct Interaction {
    /// The (redacted) request.
    pub request: Request,
    /// The (redacted) response.
    pub response: Response,
}

impl Interaction {
    /// Whether `other` is the same interaction apart from noise: the same request (its sequence
    /// number aside), status, kept headers and body, or the same stream events (each one's data,
    /// name, id and exact bytes) ending the same way. Only what varies per request while the
    /// application sees the same answer may differ: the delays between events, and the
    /// [volatile response headers](super::VOLATILE_RESPONSE_HEADERS) (request ids, rate-limit
    /// counters, the date, processing times), whether present or not.
    ///
    /// A run that records such an interaction again keeps the stored one, delays and request ids
    /// included, so that re-recording the same traffic against a real API never changes a
    /// cassette.
    pub fn same_apart_from_noise(&self, other: &Interaction) -> bool {
        let (a, b) = (&self.request, &other.request);
        let same_request = a.method == b.method
            && a.upstream == b.upstream
            && a.path == b.path
            && a.query == b.query
            && a.headers == b.headers
            && a.body == b.body
            && a.key == b.key;
        let (a, b) = (&self.response, &other.response);
        let same_content = match (&a.content, &b.content) {
            (Content::Body(x), Content::Body(y)) => x == y,
            (Content::Stream(x), Content::Stream(y)) => {
                x.format == y.format
                    && x.end == y.end
                    && x.events.len() == y.events.len()
                    && x.events.iter().zip(&y.events).all(|(e, f)| {
                        (&e.event, &e.id, &e.data, &e.raw) == (&f.event, &f.id, &f.data, &f.raw)
                    })
            }
            _ => false,
        };
        same_request
            && a.status == b.status
            && steady(&a.headers).eq(steady(&b.headers))
            && same_content
    }
}

/// The response headers that count when an interaction is recorded again, in their order.
fn steady(headers: &[(String, String)]) -> impl Iterator<Item = &(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| !is_volatile_response_header(name))
}

/// A recorded request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// HTTP method, upper case.
    pub method: String,
    /// The upstream's name (`openai`, `anthropic`, …).
    pub upstream: String,
    /// The path below the upstream's base URL, starting with `/`.
    pub path: String,
    /// Query parameters, sorted by name then value.
    pub query: Vec<(String, String)>,
    /// The allow-listed request headers, lower-case names.
    pub headers: BTreeMap<String, String>,
    /// The request body.
    pub body: Body,
    /// The match key (see [`Normalizer::key`](crate::http::Normalizer::key)).
    pub key: String,
    /// The position of this request among the interactions with the same key, from 0.
    pub seq: u32,
}

/// A request or response body, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// No body.
    Empty,
    /// A JSON document, stored as JSON.
    Json(Value),
    /// UTF-8 text that is not JSON.
    Text(String),
    /// Binary content, stored in a content-addressed sidecar file.
    Binary(Blob),
}

/// Binary content and its media type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// The media type, e.g. `audio/wav`.
    pub content_type: String,
    /// The bytes.
    pub data: Arc<[u8]>,
}

impl Blob {
    /// A blob of `data` with the given media type.
    pub fn new(content_type: impl Into<String>, data: impl Into<Arc<[u8]>>) -> Self {
        Self {
            content_type: content_type.into(),
            data: data.into(),
        }
    }

    /// The lower-case hex SHA-256 of the bytes.
    pub fn sha256(&self) -> String {
        sha256_hex(&self.data)
    }

    /// The sidecar file name: the SHA-256 with an extension chosen from the media type.
    pub fn file_name(&self) -> String {
        format!("{}.{}", self.sha256(), extension_for(&self.content_type))
    }
}

/// A recorded response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// The kept response headers, lower-case names, in the order received.
    pub headers: Vec<(String, String)>,
    /// A whole body or a stream of events.
    pub content: Content,
}

/// What a response carried.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A whole body.
    Body(Body),
    /// A stream of events.
    Stream(Stream),
}

/// A streamed response: server-sent events or newline-delimited JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    /// How events are framed.
    pub format: StreamFormat,
    /// The events in order.
    pub events: Vec<StreamEvent>,
    /// How the stream ended.
    pub end: StreamEnd,
}

/// How a stream frames its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFormat {
    /// `text/event-stream`: events separated by a blank line.
    Sse,
    /// Newline-delimited JSON: one object per line.
    Ndjson,
}

impl StreamFormat {
    /// The name used in the cassette.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sse => "sse",
            Self::Ndjson => "ndjson",
        }
    }
}

/// One event of a stream.
///
/// Replay writes [`to_bytes`](Self::to_bytes), which gives back exactly the bytes received: the
/// common shapes are rebuilt from the fields, and anything else (comments, `\r\n` line ends, a missing
/// space after the colon) is kept verbatim in `raw`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamEvent {
    /// Milliseconds since the previous event (or since the response head for the first one).
    pub delay_ms: u64,
    /// The SSE `event:` name.
    pub event: Option<String>,
    /// The SSE `id:`.
    pub id: Option<String>,
    /// The data text as received: SSE `data:` lines joined with `\n`, or one NDJSON line.
    pub data: Option<String>,
    /// The exact bytes of the event when the fields do not rebuild them.
    pub raw: Option<String>,
}

impl StreamEvent {
    /// Builds the event from the exact text of one SSE event (including its terminating blank line, or
    /// without it for a stream cut short) or one NDJSON line (including its newline).
    pub fn from_raw(format: StreamFormat, raw: &str, delay_ms: u64) -> Self {
        let mut event = StreamEvent {
            delay_ms,
            ..StreamEvent::default()
        };
        match format {
            StreamFormat::Ndjson => {
                event.data = Some(raw.strip_suffix('\n').unwrap_or(raw).to_owned());
            }
            StreamFormat::Sse => {
                let mut data: Option<String> = None;
                for line in raw.split('\n') {
                    let line = line.strip_suffix('\r').unwrap_or(line);
                    if line.is_empty() || line.starts_with(':') {
                        continue;
                    }
                    let (field, value) = match line.split_once(':') {
                        Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                        None => (line, ""),
                    };
                    match field {
                        "event" => event.event = Some(value.to_owned()),
                        "id" => event.id = Some(value.to_owned()),
                        "data" => match &mut data {
                            Some(d) => {
                                d.push('\n');
                                d.push_str(value);
                            }
                            None => data = Some(value.to_owned()),
                        },
                        _ => {}
                    }
                }
                event.data = data;
            }
        }
        if event.rebuild(format) != raw {
            event.raw = Some(raw.to_owned());
        }
        event
    }

    /// The bytes this event stands for on the wire.
    pub fn to_bytes(&self, format: StreamFormat) -> Vec<u8> {
        match &self.raw {
            Some(raw) => raw.as_bytes().to_vec(),
            None => self.rebuild(format).into_bytes(),
        }
    }

    fn rebuild(&self, format: StreamFormat) -> String {
        let mut out = String::new();
        match format {
            StreamFormat::Ndjson => {
                if let Some(d) = &self.data {
                    out.push_str(d);
                }
                out.push('\n');
            }
            StreamFormat::Sse => {
                if let Some(e) = &self.event {
                    out.push_str("event: ");
                    out.push_str(e);
                    out.push('\n');
                }
                if let Some(id) = &self.id {
                    out.push_str("id: ");
                    out.push_str(id);
                    out.push('\n');
                }
                if let Some(d) = &self.data {
                    for line in d.split('\n') {
                        out.push_str("data: ");
                        out.push_str(line);
                        out.push('\n');
                    }
                }
                out.push('\n');
            }
        }
        out
    }
}

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The upstream closed the body after a complete event.
    Clean,
    /// The upstream closed the body in the middle of an event (its last event has no terminator).
    Truncated,
    /// The upstream connection failed after this many body bytes.
    Reset {
        /// Body bytes received before the failure.
        after_bytes: u64,
    },
}

/// Rounds a delay to the 10 ms bucket that cassettes store, so that re-recording the same traffic does
/// not change the file because of scheduling noise.
pub fn bucket_delay(delay_ms: u64) -> u64 {
    (delay_ms + 5) / 10 * 10
}

/// The file extension for a blob of this media type.
pub(crate) fn extension_for(content_type: &str) -> &'static str {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/ogg" | "audio/opus" => "ogg",
        "audio/webm" | "video/webm" => "webm",
        "audio/flac" | "audio/x-flac" => "flac",
        "audio/aac" => "aac",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "application/pdf" => "pdf",
        _ => "bin",
    }
}

pub(crate) fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_rebuild_their_exact_bytes() {
        let cases = [
            "data: {\"a\":1}\n\n",
            "event: message_start\ndata: {\"type\":\"message_start\"}\n\n",
            "event: ping\ndata: {\"type\": \"ping\"}\n\n",
            "data: [DONE]\n\n",
            "id: 7\nevent: x\ndata: a\ndata: b\n\n",
            ": keep-alive\n\n",
            "data:{\"nospace\":true}\n\n",
            "data: crlf\r\n\r\n",
            "data: cut short",
        ];
        for raw in cases {
            let ev = StreamEvent::from_raw(StreamFormat::Sse, raw, 0);
            assert_eq!(
                String::from_utf8(ev.to_bytes(StreamFormat::Sse)).unwrap(),
                raw
            );
        }
        let plain = StreamEvent::from_raw(StreamFormat::Sse, "event: e\ndata: d\n\n", 0);
        assert_eq!(plain.raw, None);
        assert_eq!(plain.event.as_deref(), Some("e"));
        assert_eq!(plain.data.as_deref(), Some("d"));
    }

    #[test]
    fn interactions_that_differ_only_in_delays_and_volatile_headers_are_the_same() {
        let stream = |delays: [u64; 2], last: &str| Interaction {
            request: Request {
                method: "POST".into(),
                upstream: "openai".into(),
                path: "/v1/chat/completions".into(),
                query: vec![],
                headers: BTreeMap::new(),
                body: Body::Json(serde_json::json!({"stream": true})),
                key: "k".into(),
                seq: 0,
            },
            response: Response {
                status: 200,
                headers: vec![
                    ("content-type".into(), "text/event-stream".into()),
                    ("x-request-id".into(), "req_1".into()),
                    ("x-ratelimit-limit-requests".into(), "10000".into()),
                    ("x-ratelimit-remaining-requests".into(), "9999".into()),
                ],
                content: Content::Stream(Stream {
                    format: StreamFormat::Sse,
                    events: vec![
                        StreamEvent::from_raw(StreamFormat::Sse, "data: 1\n\n", delays[0]),
                        StreamEvent::from_raw(StreamFormat::Sse, last, delays[1]),
                    ],
                    end: StreamEnd::Clean,
                }),
            },
        };
        let recorded = stream([40, 0], "data: 2\n\n");
        let with_headers = |headers: &[(&str, &str)]| {
            let mut again = stream([0, 10], "data: 2\n\n");
            again.request.seq = 3;
            again.response.headers = headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            again
        };
        // (the answer's headers when recorded again, whether it is the stored one)
        let table: &[(&[(&str, &str)], bool)] = &[
            (
                &[
                    ("content-type", "text/event-stream"),
                    ("x-request-id", "req_1"),
                    ("x-ratelimit-limit-requests", "10000"),
                    ("x-ratelimit-remaining-requests", "9999"),
                ],
                true,
            ),
            // Another request id and counter, a date, a processing time: the same answer.
            (
                &[
                    ("date", "Tue, 01 Dec 2026 10:00:00 GMT"),
                    ("content-type", "text/event-stream"),
                    ("x-request-id", "req_2"),
                    ("x-ratelimit-limit-requests", "10000"),
                    ("x-ratelimit-remaining-requests", "9998"),
                    ("openai-processing-ms", "311"),
                ],
                true,
            ),
            // A volatile header gone: still the same.
            (
                &[
                    ("content-type", "text/event-stream"),
                    ("x-ratelimit-limit-requests", "10000"),
                ],
                true,
            ),
            // A limit or the content type changed, a header added or moved: not the same.
            (
                &[
                    ("content-type", "text/event-stream"),
                    ("x-request-id", "req_1"),
                    ("x-ratelimit-limit-requests", "500"),
                    ("x-ratelimit-remaining-requests", "9999"),
                ],
                false,
            ),
            (
                &[
                    ("content-type", "application/json"),
                    ("x-ratelimit-limit-requests", "10000"),
                ],
                false,
            ),
            (
                &[
                    ("content-type", "text/event-stream"),
                    ("x-ratelimit-limit-requests", "10000"),
                    ("x-should-retry", "false"),
                ],
                false,
            ),
            (
                &[
                    ("x-ratelimit-limit-requests", "10000"),
                    ("content-type", "text/event-stream"),
                ],
                false,
            ),
        ];
        for (headers, same) in table {
            let again = with_headers(headers);
            assert_eq!(recorded.same_apart_from_noise(&again), *same, "{headers:?}");
            assert_eq!(again.same_apart_from_noise(&recorded), *same, "{headers:?}");
        }
        let cases = [
            stream([40, 0], "data: 3\n\n"),
            stream([40, 0], "event: x\ndata: 2\n\n"),
            stream([40, 0], "id: 1\ndata: 2\n\n"),
            stream([40, 0], "data:2\n\n"),
        ];
        for other in cases {
            assert!(!recorded.same_apart_from_noise(&other), "{other:?}");
        }
        let mut status = recorded.clone();
        status.response.status = 201;
        let mut body = recorded.clone();
        body.request.body = Body::Json(serde_json::json!({"stream": false}));
        for other in [status, body] {
            assert!(!recorded.same_apart_from_noise(&other), "{other:?}");
        }
    }

    #[test]
    fn delays_round_to_ten_ms_buckets() {
        let table = [(0, 0), (4, 0), (5, 10), (14, 10), (15, 20), (1234, 1230)];
        for (ms, bucket) in table {
            assert_eq!(bucket_delay(ms), bucket, "{ms}");
        }
    }

    #[test]
    fn blob_names_are_content_addressed() {
        let b = Blob::new("audio/wav", b"RIFF".to_vec());
        assert_eq!(b.file_name(), format!("{}.wav", b.sha256()));
        assert_eq!(b.sha256().len(), 64);
        assert_eq!(extension_for("application/octet-stream"), "bin");
    }
}

//! A fake LLM API on loopback: OpenAI chat completions (JSON and SSE), the Responses API stream,
//! Anthropic messages SSE, binary audio, a gzip-encoded answer, and streams that end badly.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::channel::mpsc;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// What the fake saw.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    pub(super) headers: Vec<(String, String)>,
}

pub(super) struct FakeUpstream {
    pub(super) addr: SocketAddr,
    pub(super) connections: Arc<AtomicUsize>,
    pub(super) seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
    conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl FakeUpstream {
    pub(super) async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let counter = Arc::new(AtomicUsize::new(0));
        let conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let (c, s, k) = (connections.clone(), seen.clone(), conns.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                c.fetch_add(1, Ordering::SeqCst);
                let (s, counter) = (s.clone(), counter.clone());
                let handle = tokio::spawn(async move {
                    let svc = service_fn(move |req| {
                        let (s, counter) = (s.clone(), counter.clone());
                        async move { Ok::<_, Infallible>(answer(req, s, counter).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
                k.lock().unwrap().push(handle);
            }
        });
        Self {
            addr,
            connections,
            seen,
            task,
            conns,
        }
    }

    pub(super) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(super) fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        self.task.abort();
        for h in self.conns.lock().unwrap().drain(..) {
            h.abort();
        }
    }
}

fn full(status: u16, content_type: &str, body: impl Into<Bytes>) -> hyper::Response<Body> {
    let mut r = hyper::Response::new(
        Full::new(body.into())
            .map_err(|n| match n {})
            .boxed_unsync(),
    );
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
    let h = r.headers_mut();
    h.insert("content-type", content_type.parse().unwrap());
    h.insert("x-request-id", "req_12345".parse().unwrap());
    h.insert("set-cookie", "__cf_bm=abc; path=/".parse().unwrap());
    h.insert("date", "Sun, 29 Nov 2026 20:00:00 GMT".parse().unwrap());
    h.insert("openai-organization", "org-secret".parse().unwrap());
    h.insert("x-ratelimit-remaining-requests", "99".parse().unwrap());
    r
}

/// A streamed answer: each item is written separately, `pause` apart; `Err` aborts the connection.
fn streamed(
    content_type: &str,
    items: Vec<Result<String, ()>>,
    pause: Duration,
) -> hyper::Response<Body> {
    let (tx, rx) = mpsc::unbounded::<Result<Frame<Bytes>, std::io::Error>>();
    tokio::spawn(async move {
        for item in items {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            let frame = match item {
                Ok(s) => Ok(Frame::data(Bytes::from(s))),
                Err(()) => Err(std::io::Error::other("fake upstream reset")),
            };
            if tx.unbounded_send(frame).is_err() {
                return;
            }
        }
    });
    let mut r = hyper::Response::new(StreamBody::new(rx).boxed_unsync());
    r.headers_mut()
        .insert("content-type", content_type.parse().unwrap());
    r.headers_mut().insert("cf-ray", "8f1-LHR".parse().unwrap());
    r
}

fn user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .or_else(|| body["input"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
    seen: Arc<Mutex<Vec<Seen>>>,
    counter: Arc<AtomicUsize>,
) -> hyper::Response<Body> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.unwrap().to_bytes().to_vec();
    let path = parts.uri.path().to_owned();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let auth = parts
        .headers
        .get("authorization")
        .or_else(|| parts.headers.get("x-api-key"))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    seen.lock().unwrap().push(Seen { headers });
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let text = user_text(&json);
    let n = counter.fetch_add(1, Ordering::SeqCst);
    // Streams go out without pauses, so re-recording them gives the same delays (all in the 0 bucket).
    let fast = Duration::ZERO;
    match path.as_str() {
        "/v1/chat/completions" if json["stream"] == true => {
            let mut items: Vec<Result<String, ()>> = Vec::new();
            for (i, word) in ["Hello", ",", " ", "world", "!"].iter().enumerate() {
                let chunk = json!({
                    "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000,
                    "model": json["model"], "choices": [{"index": 0, "delta": if i == 0 { json!({"role": "assistant", "content": word}) } else { json!({"content": word}) }, "finish_reason": null}]
                });
                items.push(Ok(format!("data: {chunk}\n\n")));
            }
            let last = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": json["model"], "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
            items.push(Ok(format!("data: {last}\n\n")));
            items.push(Ok("data: [DONE]\n\n".to_owned()));
            streamed("text/event-stream; charset=utf-8", items, fast)
        }
        "/v1/chat/completions" => {
            let body = json!({
                "id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1_700_000_000,
                "model": json["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("echo: {text} (auth was {auth})")}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
            });
            full(200, "application/json", body.to_string())
        }
        "/v1/counter" => full(200, "application/json", json!({"n": n}).to_string()),
        "/v1/cards" => {
            // Stores what it is given under the key it is given, as careless servers echo a token.
            let mut cards = serde_json::Map::new();
            cards.insert(text.clone(), json!("stored"));
            full(200, "application/json", json!({"cards": cards}).to_string())
        }
        "/v1/headers" => {
            let mut r = full(200, "application/json", json!({"ok": true}).to_string());
            let h = r.headers_mut();
            for (k, v) in HEADERS_ANSWER {
                h.insert(*k, v.parse().unwrap());
            }
            r
        }
        "/v1/responses" => {
            let events = [
                (
                    "response.created",
                    json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": json["model"], "output": [], "parallel_tool_calls": true, "tool_choice": "auto", "tools": []}}),
                ),
                (
                    "response.output_text.delta",
                    json!({"type": "response.output_text.delta", "sequence_number": 1, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hi", "logprobs": []}),
                ),
                (
                    "response.output_text.delta",
                    json!({"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": " there", "logprobs": []}),
                ),
                (
                    "response.completed",
                    json!({"type": "response.completed", "sequence_number": 3, "response": {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": json["model"], "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": "Hi there", "annotations": []}]}], "parallel_tool_calls": true, "tool_choice": "auto", "tools": []}}),
                ),
            ];
            let items = events
                .iter()
                .map(|(e, d)| Ok(format!("event: {e}\ndata: {d}\n\n")))
                .collect();
            streamed("text/event-stream", items, fast)
        }
        "/v1/messages" => {
            let model = json["model"].clone();
            let mut items: Vec<Result<String, ()>> = vec![
                Ok(format!(
                    "event: message_start\ndata: {}\n\n",
                    json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 3, "output_tokens": 1}}})
                )),
                Ok(format!(
                    "event: content_block_start\ndata: {}\n\n",
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
                )),
                Ok("event: ping\ndata: {\"type\": \"ping\"}\n\n".to_owned()),
                Ok(format!(
                    "event: content_block_delta\ndata: {}\n\n",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("You said {text}")}})
                )),
            ];
            if text.contains("overload") {
                items.push(Ok(format!("event: error\ndata: {}\n\n", json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))));
            } else {
                items.push(Ok(format!(
                    "event: content_block_stop\ndata: {}\n\n",
                    json!({"type": "content_block_stop", "index": 0})
                )));
                items.push(Ok(format!("event: message_delta\ndata: {}\n\n", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 4}}))));
                items.push(Ok(format!(
                    "event: message_stop\ndata: {}\n\n",
                    json!({"type": "message_stop"})
                )));
            }
            streamed("text/event-stream; charset=utf-8", items, fast)
        }
        "/v1/audio/echo" => {
            // A binary answer that carries the caller's credential, as a debug echo would.
            let mut wav = b"RIFF\x24\x00\x00\x00WAVEfmt \x00".to_vec();
            wav.extend_from_slice(auth.as_bytes());
            wav.extend((0..64u32).map(|i| (i % 7) as u8));
            full(200, "audio/wav", wav)
        }
        "/v1/audio/echo-body" => {
            // A binary answer that carries the request's body, credential fields and all.
            let mut wav = b"RIFF\x24\x00\x00\x00WAVEfmt \x00".to_vec();
            wav.extend_from_slice(&body);
            full(200, "audio/wav", wav)
        }
        "/v1/audio/token" => {
            // A binary answer holding a provider token the proxy never saw.
            let mut wav = b"RIFF\x24\x00\x00\x00WAVEfmt \x00".to_vec();
            wav.extend_from_slice(b"ghp_0123456789abcdefghijklmnopqrstuvwxyz\x00");
            full(200, "application/octet-stream", wav)
        }
        "/v1/audio/speech" => {
            let mut wav = b"RIFF\x24\x00\x00\x00WAVEfmt ".to_vec();
            wav.extend((0..2000u32).map(|i| (i % 251) as u8));
            full(200, "audio/wav", wav)
        }
        "/v1/models/gzip" => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(
                json!({"object": "list", "data": [{"id": "m1", "object": "model"}]})
                    .to_string()
                    .as_bytes(),
            )
            .unwrap();
            let mut r = full(200, "application/json", enc.finish().unwrap());
            r.headers_mut()
                .insert("content-encoding", "gzip".parse().unwrap());
            r
        }
        "/v1/models/br" | "/v1/models/deflate" | "/v1/models/deflate-raw" | "/v1/models/zstd" => {
            let encoding = path.rsplit('/').next().unwrap_or("");
            let plain = json!({"object": "list", "data": [{"id": format!("m-{encoding}"), "object": "model"}]})
                .to_string();
            let (name, encoded) = match encoding {
                "br" => ("br", brotli_stored(plain.as_bytes())),
                "zstd" => ("zstd", zstd::encode_all(plain.as_bytes(), 3).unwrap()),
                "deflate" => {
                    let mut z =
                        flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                    z.write_all(plain.as_bytes()).unwrap();
                    ("deflate", z.finish().unwrap())
                }
                _ => {
                    let mut d = flate2::write::DeflateEncoder::new(
                        Vec::new(),
                        flate2::Compression::default(),
                    );
                    d.write_all(plain.as_bytes()).unwrap();
                    ("deflate", d.finish().unwrap())
                }
            };
            let mut r = full(200, "application/json", encoded);
            r.headers_mut()
                .insert("content-encoding", name.parse().unwrap());
            r
        }
        "/v1/stream/br" => {
            // One brotli body, sent in small pieces: the proxy decodes as it goes.
            let encoded = brotli_stored(BR_EVENTS.as_bytes());
            let items = encoded.chunks(7).map(<[u8]>::to_vec).collect();
            let mut r = streamed_bytes("text/event-stream", items);
            r.headers_mut()
                .insert("content-encoding", "br".parse().unwrap());
            r
        }
        "/v1/reset" => streamed(
            "text/event-stream",
            vec![
                Ok("data: one\n\n".into()),
                Ok("data: two\n\n".into()),
                Err(()),
            ],
            Duration::from_millis(5),
        ),
        "/v1/truncated" => streamed(
            "text/event-stream",
            vec![Ok("data: one\n\n".into()), Ok("data: tw".into())],
            Duration::from_millis(5),
        ),
        "/api/generate" => {
            let items = (0..3)
                .map(|i| Ok(format!("{{\"response\":\"t{i}\",\"done\":{}}}\n", i == 2)))
                .collect();
            streamed("application/x-ndjson", items, fast)
        }
        "/v1/slow-stream" => {
            let items = (0..20).map(|i| Ok(format!("data: {i}\n\n"))).collect();
            streamed("text/event-stream", items, Duration::from_millis(5))
        }
        _ => full(
            404,
            "application/json",
            json!({"error": {"message": "no such route"}}).to_string(),
        ),
    }
}

/// The headers `/v1/headers` answers with, besides those every JSON answer has.
pub(super) const HEADERS_ANSWER: &[(&str, &str)] = &[
    ("request-id", "req_anthropic_1"),
    ("anthropic-ratelimit-requests-remaining", "49"),
    ("retry-after", "3"),
    ("x-session-hint", "hint-4f2a9c1e7d"),
    (
        "location",
        "https://files.example/out?sig=locsig-8e7f6a5b4c",
    ),
    (
        "x-download",
        "https://files.example/d/ghp_0123456789abcdefghijklmnopqrstuvwxyz?X-Amz-%53ignature=amzsig-1a2b3c&part=1",
    ),
];

/// The event stream `/v1/stream/br` sends, brotli-encoded.
pub(super) const BR_EVENTS: &str = "event: a\ndata: {\"n\":1}\n\ndata: two\n\ndata: [DONE]\n\n";

/// A streamed answer of raw byte chunks, each a write of its own, no pauses.
fn streamed_bytes(content_type: &str, items: Vec<Vec<u8>>) -> hyper::Response<Body> {
    let (tx, rx) = mpsc::unbounded::<Result<Frame<Bytes>, std::io::Error>>();
    for item in items {
        let _ = tx.unbounded_send(Ok(Frame::data(Bytes::from(item))));
    }
    drop(tx);
    let mut r = hyper::Response::new(StreamBody::new(rx).boxed_unsync());
    r.headers_mut()
        .insert("content-type", content_type.parse().unwrap());
    r
}

/// Brotli made of uncompressed meta-blocks: a valid stream any brotli decoder reads (RFC 7932, 9.2),
/// without needing a compressor.
pub(super) fn brotli_stored(data: &[u8]) -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u64,
        n: u32,
    }
    impl Bits {
        fn put(&mut self, value: u64, bits: u32) {
            self.acc |= value << self.n;
            self.n += bits;
            while self.n >= 8 {
                self.out.push((self.acc & 0xff) as u8);
                self.acc >>= 8;
                self.n -= 8;
            }
        }
        fn align(&mut self) {
            if self.n > 0 {
                self.put(0, 8 - self.n);
            }
        }
    }
    let mut b = Bits {
        out: Vec::new(),
        acc: 0,
        n: 0,
    };
    b.put(0, 1); // WBITS: a 0 bit means a 64 KiB window
    for chunk in data.chunks(65_536) {
        b.put(0, 1); // ISLAST: no
        b.put(0, 2); // MNIBBLES: 4
        b.put(chunk.len() as u64 - 1, 16); // MLEN - 1
        b.put(1, 1); // ISUNCOMPRESSED: yes
        b.align();
        b.out.extend_from_slice(chunk);
    }
    b.put(1, 1); // ISLAST
    b.put(1, 1); // ISLASTEMPTY
    b.align();
    b.out
}

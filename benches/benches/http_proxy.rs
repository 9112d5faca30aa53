//! `calltape http` replay costs, each against its baseline in the same run:
//!
//! - a 10 KB JSON answer replayed through the proxy vs the same answer from a local upstream directly;
//! - a 10,000-event SSE stream replayed in fast mode (events per second) vs the same stream from a local
//!   upstream directly, read by a client that keeps up and by reqwest;
//! - loading a cassette of 10,000 interactions the way the proxy does, vs parsing its lines as untyped
//!   JSON.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use calltape_recorder::http::{
    Body, Cassette, Content, Interaction, Meta, Normalizer, Request, Response, Scrubber, Stream,
    StreamEnd, StreamEvent, StreamFormat,
};
use calltape_replay::http::{Mode, Proxy, ProxyHandle};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use hyper::body::Frame;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

const EVENTS: usize = 10_000;
const INTERACTIONS: usize = 10_000;

fn answer_10kb() -> Value {
    let text: String = "lorem ipsum dolor sit amet ".repeat(370);
    json!({"id": "chatcmpl-bench", "object": "chat.completion", "model": "gpt-4o-mini",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
}

fn request(n: &Normalizer, path: &str, body: Value) -> Request {
    let mut r = Request {
        method: "POST".into(),
        upstream: "openai".into(),
        path: path.into(),
        query: vec![],
        headers: BTreeMap::from([("content-type".into(), "application/json".into())]),
        body: Body::Json(body),
        key: String::new(),
        seq: 0,
    };
    r.key = n.key(&r);
    r
}

fn write_cassette(path: &Path, interactions: Vec<Interaction>) {
    let n = Normalizer::new();
    let s = Scrubber::new();
    let c = Cassette {
        meta: Meta {
            normalizer: n.fingerprint().into(),
            redaction: s.fingerprint(),
        },
        interactions,
    };
    c.save(path, &s).expect("write the bench cassette");
}

fn json_interaction(n: &Normalizer, i: usize, answer: &Value) -> Interaction {
    Interaction {
        request: request(
            n,
            "/v1/chat/completions",
            json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": format!("question {i}")}]}),
        ),
        response: Response {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            content: Content::Body(Body::Json(answer.clone())),
        },
    }
}

/// A local upstream answering every request with the same frames (one write each) and content type.
async fn direct_upstream(content_type: &'static str, frames: Arc<Vec<Bytes>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let frames = Arc::clone(&frames);
            tokio::spawn(async move {
                let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let frames = Arc::clone(&frames);
                    async move {
                        // Read the request to its end, so closing the connection resets nothing.
                        let _ = req.into_body().collect().await;
                        let body = if frames.len() == 1 {
                            Full::new(frames[0].clone()).boxed_unsync()
                        } else {
                            Frames(frames, 0).boxed_unsync()
                        };
                        let mut r = hyper::Response::new(body);
                        r.headers_mut()
                            .insert("content-type", content_type.parse().unwrap());
                        Ok::<_, Infallible>(r)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

/// A body that sends the frames one by one.
struct Frames(Arc<Vec<Bytes>>, usize);

impl hyper::body::Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let i = self.1;
        self.1 += 1;
        std::task::Poll::Ready(self.0.get(i).map(|b| Ok(Frame::data(b.clone()))))
    }
}

/// One request over a fresh connection with a plain HTTP/1.1 client that decodes the chunked body in
/// place; returns the body. It keeps up with any server, so it measures the server.
async fn raw_post(addr: &str, path: &str, body: &[u8]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut wire = Vec::with_capacity(2 << 20);
    s.read_to_end(&mut wire).await.unwrap();
    assert!(wire.starts_with(b"HTTP/1.1 200"));
    let at = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let mut rest = &wire[at..];
    let mut out = Vec::with_capacity(rest.len());
    loop {
        let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap(), 16).unwrap();
        rest = &rest[eol + 2..];
        if size == 0 {
            break;
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
    out
}

async fn replay_proxy(cassette: &Path) -> ProxyHandle {
    Proxy::builder()
        .upstream("openai", "http://127.0.0.1:9")
        .cassette(cassette)
        .mode(Mode::Replay)
        .exhaustion(calltape_replay::http::Exhaustion::Cycle)
        .secrets_from_env(false)
        .start()
        .await
        .unwrap()
}

fn json_replay(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("json.jsonl");
    let n = Normalizer::new();
    let answer = answer_10kb();
    write_cassette(&cassette, vec![json_interaction(&n, 0, &answer)]);
    let body = serde_json::to_vec(
        &json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "question 0"}]}),
    )
    .unwrap();
    let (proxy, direct) = rt.block_on(async {
        let direct = direct_upstream(
            "application/json",
            Arc::new(vec![Bytes::from(serde_json::to_vec(&answer).unwrap())]),
        )
        .await;
        (replay_proxy(&cassette).await, direct)
    });
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(calltape_stdio_bridge::tls_client_config().unwrap())
        .build()
        .unwrap();
    let via_proxy = format!("{}/v1/chat/completions", proxy.base_url("openai"));
    let via_direct = format!("{direct}/v1/chat/completions");
    let mut group = c.benchmark_group("http_proxy_json_10kb");
    group.throughput(Throughput::Elements(1));
    for (name, url) in [
        ("direct_upstream_baseline", &via_direct),
        ("proxy_replay", &via_proxy),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let r = client
                        .post(url.as_str())
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 200);
                    black_box(r.bytes().await.unwrap().len())
                })
            })
        });
    }
    group.finish();
    rt.block_on(async { proxy.shutdown().await.unwrap() });
}

fn sse_replay(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("sse.jsonl");
    let n = Normalizer::new();
    let raw: Vec<String> = (0..EVENTS)
        .map(|i| format!(
            "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token {i} \"}}}}]}}\n\n"
        ))
        .collect();
    let events: Vec<StreamEvent> = raw
        .iter()
        .map(|r| StreamEvent::from_raw(StreamFormat::Sse, r, 0))
        .collect();
    write_cassette(
        &cassette,
        vec![Interaction {
            request: request(
                &n,
                "/v1/chat/completions",
                json!({"model": "gpt-4o-mini", "stream": true}),
            ),
            response: Response {
                status: 200,
                headers: vec![("content-type".into(), "text/event-stream".into())],
                content: Content::Stream(Stream {
                    format: StreamFormat::Sse,
                    events,
                    end: StreamEnd::Clean,
                }),
            },
        }],
    );
    let frames: Arc<Vec<Bytes>> = Arc::new(raw.into_iter().map(Bytes::from).collect());
    let expected: usize = frames.iter().map(Bytes::len).sum();
    let (proxy, direct) = rt.block_on(async {
        let direct = direct_upstream("text/event-stream", Arc::clone(&frames)).await;
        (replay_proxy(&cassette).await, direct)
    });
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(calltape_stdio_bridge::tls_client_config().unwrap())
        .build()
        .unwrap();
    let body = serde_json::to_vec(&json!({"model": "gpt-4o-mini", "stream": true})).unwrap();
    let proxy_addr = proxy.local_addr().to_string();
    let direct_addr = direct.trim_start_matches("http://").to_owned();
    let mut group = c.benchmark_group("http_proxy_sse_10k_events");
    group.sample_size(20);
    group.throughput(Throughput::Elements(EVENTS as u64));
    // A client that keeps up: what the server side delivers.
    for (name, addr, path) in [
        (
            "direct_upstream_baseline",
            &direct_addr,
            "/v1/chat/completions",
        ),
        (
            "proxy_replay_fast",
            &proxy_addr,
            "/openai/v1/chat/completions",
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let got = raw_post(addr, path, &body).await;
                    assert_eq!(got.len(), expected);
                    black_box(got.len())
                })
            })
        });
    }
    // The same through reqwest, whose body hands every chunk from its connection task to the reader
    // task: that hand-off, not the server, sets this pace.
    for (name, url) in [
        (
            "direct_upstream_baseline_reqwest",
            format!("{direct}/v1/chat/completions"),
        ),
        (
            "proxy_replay_fast_reqwest",
            format!("{}/v1/chat/completions", proxy.base_url("openai")),
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let r = client
                        .post(url.as_str())
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .unwrap();
                    let bytes = r.bytes().await.unwrap();
                    assert_eq!(bytes.len(), expected);
                    black_box(bytes.len())
                })
            })
        });
    }
    group.finish();
    rt.block_on(async { proxy.shutdown().await.unwrap() });
}

fn cassette_load(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("big.jsonl");
    let n = Normalizer::new();
    let answer = json!({"id": "chatcmpl-x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "a short answer"}}]});
    write_cassette(
        &cassette,
        (0..INTERACTIONS)
            .map(|i| json_interaction(&n, i, &answer))
            .collect(),
    );
    let size = std::fs::metadata(&cassette).unwrap().len();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("http_cassette_load_10k_interactions");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(size));
    // What a replaying proxy does with a cassette before it serves the first request from it.
    group.bench_function("proxy_cassette_load", |b| {
        b.iter(|| {
            rt.block_on(async {
                let proxy = replay_proxy(&cassette).await;
                let n = proxy.load_cassette(&cassette).unwrap();
                proxy.shutdown().await.unwrap();
                black_box(n)
            })
        })
    });
    // Reading every interaction in full, bodies and all, as `calltape http show` does.
    group.bench_function("cassette_full_read", |b| {
        b.iter(|| black_box(Cassette::load(&cassette).unwrap().interactions.len()))
    });
    // Baseline: parsing the same lines as untyped JSON, no validation.
    group.bench_function("serde_json_lines_baseline", |b| {
        b.iter(|| {
            let text = std::fs::read_to_string(&cassette).unwrap();
            black_box(
                text.lines()
                    .map(|l| serde_json::from_str::<Value>(l).unwrap())
                    .filter(Value::is_object)
                    .count(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, json_replay, sse_replay, cassette_load);
criterion_main!(benches);

//! `calltape http` replay costs, each against its baseline in the same run:
//!
//! - a 10 KB JSON answer replayed through the proxy vs the same answer from a local upstream directly;
//! - a 10,000-event SSE stream replayed in fast mode (events per second);
//! - loading a cassette of 10,000 interactions.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::hint::black_box;
use std::path::Path;

use bytes::Bytes;
use calltape_recorder::{
    Body, Cassette, Content, Interaction, Meta, Normalizer, Request, Response, Scrubber, Stream,
    StreamEnd, StreamEvent, StreamFormat,
};
use calltape_replay::{Mode, Proxy, ProxyHandle};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body_util::Full;
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

/// A local upstream answering every request with the same 10 KB JSON body.
async fn direct_upstream(body: Bytes) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let body = body.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |_req| {
                    let body = body.clone();
                    async move {
                        let mut r = hyper::Response::new(Full::new(body));
                        r.headers_mut()
                            .insert("content-type", "application/json".parse().unwrap());
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

async fn replay_proxy(cassette: &Path) -> ProxyHandle {
    Proxy::builder()
        .upstream("openai", "http://127.0.0.1:9")
        .cassette(cassette)
        .mode(Mode::Replay)
        .exhaustion(calltape_replay::Exhaustion::Cycle)
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
        let direct = direct_upstream(Bytes::from(serde_json::to_vec(&answer).unwrap())).await;
        (replay_proxy(&cassette).await, direct)
    });
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
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
    let events: Vec<StreamEvent> = (0..EVENTS)
        .map(|i| {
            let raw = format!(
                "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token {i} \"}}}}]}}\n\n"
            );
            StreamEvent::from_raw(StreamFormat::Sse, &raw, 0)
        })
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
    let proxy = rt.block_on(replay_proxy(&cassette));
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = format!("{}/v1/chat/completions", proxy.base_url("openai"));
    let body = serde_json::to_vec(&json!({"model": "gpt-4o-mini", "stream": true})).unwrap();
    let mut group = c.benchmark_group("http_proxy_sse_10k_events");
    group.sample_size(20);
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.bench_function("proxy_replay_fast", |b| {
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
                black_box(bytes.len())
            })
        })
    });
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
    let mut group = c.benchmark_group("http_cassette_load_10k_interactions");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(size));
    group.bench_function("cassette_load", |b| {
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

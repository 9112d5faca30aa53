//! Record with the upstream up, replay with it gone: same bytes, no connections, no secrets.

use std::path::{Path, PathBuf};
use std::time::Duration;

use calltape_replay::http::{Exhaustion, Mode, Proxy, ProxyHandle, ReplayTiming};
use serde_json::{Value, json};

use super::fake::FakeUpstream;

pub(super) const KEY: &str = "sk-test-0123456789abcdefghijklmnop";

pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) headers: reqwest::header::HeaderMap,
    pub(super) body: Vec<u8>,
}

pub(super) async fn post(proxy: &ProxyHandle, up: &str, path: &str, body: &Value) -> Answer {
    send(proxy, up, path, body, &[]).await
}

async fn send(
    proxy: &ProxyHandle,
    up: &str,
    path: &str,
    body: &Value,
    extra: &[(&str, &str)],
) -> Answer {
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(calltape_stdio_bridge::tls_client_config().unwrap())
        .build()
        .unwrap();
    let mut req = client
        .post(format!("{}{path}", proxy.base_url(up)))
        .header("authorization", format!("Bearer {KEY}"))
        .header("x-stainless-retry-count", "0")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap());
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp
        .bytes()
        .await
        .map(|b| b.to_vec())
        .unwrap_or_else(|e| format!("<<body error: {e}>>").into_bytes());
    Answer {
        status,
        headers,
        body,
    }
}

pub(super) async fn start(mode: Mode, upstream: &str, cassette: &Path) -> ProxyHandle {
    Proxy::builder()
        .upstream("openai", upstream)
        .upstream("anthropic", upstream)
        .cassette(cassette)
        .mode(mode)
        .start()
        .await
        .unwrap()
}

fn chat(text: &str, stream: bool) -> Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}], "stream": stream})
}

/// A fixed script of requests covering JSON, SSE, named events, binary and gzip.
async fn script(proxy: &ProxyHandle) -> Vec<Answer> {
    vec![
        post(proxy, "openai", "/v1/chat/completions", &chat("hi", false)).await,
        post(proxy, "openai", "/v1/chat/completions", &chat("hi", true)).await,
        post(proxy, "openai", "/v1/responses", &json!({"model": "gpt-4o", "input": "hi", "stream": true})).await,
        post(proxy, "anthropic", "/v1/messages", &json!({"model": "claude", "max_tokens": 10, "stream": true, "messages": [{"role": "user", "content": "hey"}]})).await,
        post(proxy, "anthropic", "/v1/messages", &json!({"model": "claude", "max_tokens": 10, "stream": true, "messages": [{"role": "user", "content": "overload"}]})).await,
        post(proxy, "openai", "/v1/audio/speech", &json!({"model": "tts-1", "input": "hello", "voice": "alloy"})).await,
        post(proxy, "openai", "/v1/models/gzip", &json!({})).await,
    ]
}

pub(super) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

pub(super) fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_then_replay_offline_gives_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("chat.jsonl");
    let fake = FakeUpstream::start().await;
    let url = fake.url();

    let proxy = start(Mode::Record, &url, &cassette).await;
    let recorded = script(&proxy).await;
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.recorded, 7, "{}", report.summary());
    assert!(report.errors.is_empty(), "{}", report.summary());
    for a in &recorded {
        assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    }
    // The SSE answer reached the client byte for byte, and ended with [DONE].
    assert!(String::from_utf8_lossy(&recorded[1].body).ends_with("data: [DONE]\n\n"));
    // The gzip answer was decoded for the client.
    assert_eq!(
        serde_json::from_slice::<Value>(&recorded[6].body).unwrap()["object"],
        "list"
    );

    let text = read(&cassette);
    assert!(
        !text.contains(KEY),
        "the API key reached the cassette:\n{text}"
    );
    assert!(
        text.contains("[REDACTED]"),
        "the echoed key is replaced by the placeholder"
    );
    for header in [
        "set-cookie",
        "\"date\"",
        "openai-organization",
        "cf-ray",
        "authorization",
        "x-stainless",
    ] {
        assert!(!text.contains(header), "{header} reached the cassette");
    }
    // Allow-listed: the request id and the rate-limit counts.
    assert!(text.contains(r#"["x-request-id","req_12345"]"#), "{text}");
    assert!(
        text.contains(r#"["x-ratelimit-remaining-requests","99"]"#),
        "{text}"
    );
    assert!(text.contains(r#""event":"message_start""#));
    assert!(text.contains(r#""data":"[DONE]""#));
    assert_eq!(
        files_in(dir.path()),
        vec!["chat.jsonl", "chat.jsonl.blobs"],
        "no lock or temp files left"
    );
    let blobs = files_in(&dir.path().join("chat.jsonl.blobs"));
    assert_eq!(blobs.len(), 1);
    assert!(blobs[0].ends_with(".wav"));

    // The upstream goes away entirely; replay must not need it.
    let before = fake.connections();
    drop(fake);
    let proxy = start(Mode::Replay, &url, &cassette).await;
    let replayed = script(&proxy).await;
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.replayed, 7, "{}", report.summary());
    assert!(report.misses.is_empty());
    assert!(before > 0);
    for (i, (r, p)) in recorded.iter().zip(&replayed).enumerate() {
        assert_eq!(p.status, r.status, "request {i}");
        if i == 0 {
            // A JSON answer is replayed as canonical JSON: the same document, with the key redacted.
            let rv: Value = serde_json::from_slice(&r.body).unwrap();
            let pv: Value = serde_json::from_slice(&p.body).unwrap();
            assert_eq!(
                pv["choices"][0]["message"]["content"],
                "echo: hi (auth was Bearer [REDACTED])"
            );
            assert_eq!(pv["id"], rv["id"]);
        } else {
            assert_eq!(
                String::from_utf8_lossy(&p.body),
                String::from_utf8_lossy(&r.body),
                "request {i}"
            );
        }
        assert_eq!(
            p.headers.get("content-type"),
            r.headers.get("content-type"),
            "request {i}"
        );
    }
    assert_eq!(replayed[6].headers.get("content-encoding"), None);
    assert_eq!(
        replayed[6]
            .headers
            .get("content-length")
            .unwrap()
            .to_str()
            .unwrap(),
        replayed[6].body.len().to_string()
    );
    // Replay changed nothing on disk.
    assert_eq!(read(&cassette), text);
    assert_eq!(files_in(dir.path()), vec!["chat.jsonl", "chat.jsonl.blobs"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_recording_gives_a_byte_identical_cassette() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeUpstream::start().await;
    let mut runs = Vec::new();
    // The default timing: delays are measured, and a recording made again keeps its stored ones.
    let cassette = dir.path().join("c.jsonl");
    for _ in 0..2 {
        let proxy = Proxy::builder()
            .upstream("openai", fake.url())
            .upstream("anthropic", fake.url())
            .cassette(&cassette)
            .mode(Mode::Record)
            .start()
            .await
            .unwrap();
        // Concurrent requests: the interleaving must not show in the file.
        let (one, two, three) = (
            chat("one", true),
            json!({"model": "claude", "stream": true, "messages": [{"role": "user", "content": "two"}]}),
            json!({"input": "three"}),
        );
        let (a, b, c) = tokio::join!(
            post(&proxy, "openai", "/v1/chat/completions", &one),
            post(&proxy, "anthropic", "/v1/messages", &two),
            post(&proxy, "openai", "/v1/audio/speech", &three),
        );
        assert_eq!((a.status, b.status, c.status), (200, 200, 200));
        proxy.shutdown().await.unwrap();
        let blobs = cassette.with_file_name("c.jsonl.blobs");
        let blob_files: Vec<(String, Vec<u8>)> = files_in(&blobs)
            .into_iter()
            .map(|f| (f.clone(), std::fs::read(blobs.join(&f)).unwrap()))
            .collect();
        runs.push((std::fs::read(&cassette).unwrap(), blob_files));
    }
    assert!(String::from_utf8_lossy(&runs[0].0).contains(r#""t":"ev""#));
    assert_eq!(runs[0].1.len(), 1, "one audio blob");
    assert_eq!(
        String::from_utf8_lossy(&runs[0].0),
        String::from_utf8_lossy(&runs[1].0)
    );
    assert!(runs[0].1 == runs[1].1, "re-recording changed a blob");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_miss_in_replay_is_a_provider_shaped_non_retryable_404() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Record, &fake.url(), &cassette).await;
    post(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("the recorded question", false),
    )
    .await;
    proxy.shutdown().await.unwrap();
    drop(fake);

    let proxy = start(Mode::Replay, "http://127.0.0.1:9", &cassette).await;
    let a = post(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("a different question", false),
    )
    .await;
    assert_eq!(a.status, 404);
    assert_eq!(a.headers.get("x-should-retry").unwrap(), "false");
    let v: Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(v["error"]["type"], "cassette_miss");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("closest recording: POST openai /v1/chat/completions"),
        "{msg}"
    );
    assert!(msg.contains("CALLTAPE_MODE=record"), "{msg}");

    let b = post(
        &proxy,
        "anthropic",
        "/v1/messages",
        &json!({"model": "claude"}),
    )
    .await;
    assert_eq!(b.status, 404);
    let v: Value = serde_json::from_slice(&b.body).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "not_found_error");
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.misses.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_requests_replay_first_in_first_out_with_exhaustion_policies() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Record, &fake.url(), &cassette).await;
    let mut recorded = Vec::new();
    for _ in 0..3 {
        recorded.push(
            post(&proxy, "openai", "/v1/counter", &json!({"q": 1}))
                .await
                .body,
        );
        // Another key in between must not disturb the order.
        post(&proxy, "openai", "/v1/counter", &json!({"q": 2})).await;
    }
    proxy.shutdown().await.unwrap();
    drop(fake);
    let n = |b: &[u8]| {
        serde_json::from_slice::<Value>(b).unwrap()["n"]
            .as_u64()
            .unwrap()
    };

    let proxy = start(Mode::Replay, "http://127.0.0.1:9", &cassette).await;
    for r in &recorded {
        assert_eq!(
            n(&post(&proxy, "openai", "/v1/counter", &json!({"q": 1}))
                .await
                .body),
            n(r)
        );
    }
    let exhausted = post(&proxy, "openai", "/v1/counter", &json!({"q": 1})).await;
    assert_eq!(exhausted.status, 404);
    assert!(
        String::from_utf8_lossy(&exhausted.body)
            .contains("all 3 recordings of this request were already served")
    );
    proxy.shutdown().await.unwrap();

    for (policy, expected) in [
        (Exhaustion::RepeatLast, &recorded[2]),
        (Exhaustion::Cycle, &recorded[0]),
    ] {
        let proxy = Proxy::builder()
            .upstream("openai", "http://127.0.0.1:9")
            .cassette(&cassette)
            .mode(Mode::Replay)
            .exhaustion(policy)
            .start()
            .await
            .unwrap();
        for _ in 0..3 {
            post(&proxy, "openai", "/v1/counter", &json!({"q": 1})).await;
        }
        let fourth = post(&proxy, "openai", "/v1/counter", &json!({"q": 1})).await;
        assert_eq!(n(&fourth.body), n(expected), "{policy:?}");
        proxy.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_mode_replays_hits_and_records_misses() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Auto, &fake.url(), &cassette).await;
    post(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("first", false),
    )
    .await;
    proxy.shutdown().await.unwrap();
    let seen = fake.seen.lock().unwrap().len();
    assert_eq!(seen, 1);

    let proxy = start(Mode::Auto, &fake.url(), &cassette).await;
    let a = post(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("first", false),
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(
        fake.seen.lock().unwrap().len(),
        1,
        "a hit is served from the cassette"
    );
    post(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("second", false),
    )
    .await;
    assert_eq!(fake.seen.lock().unwrap().len(), 2, "a miss is forwarded");
    let report = proxy.shutdown().await.unwrap();
    assert_eq!((report.replayed, report.recorded), (1, 1));
    let text = read(&cassette);
    assert_eq!(
        text.lines().filter(|l| l.contains(r#""t":"req""#)).count(),
        2
    );
}

/// How many requests a cassette holds.
fn requests_in(path: &Path) -> usize {
    read(path)
        .lines()
        .filter(|l| l.contains(r#""t":"req""#))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_append_and_record_treat_the_cassette_differently() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeUpstream::start().await;
    let seed = dir.path().join("seed.jsonl");
    let proxy = start(Mode::Record, &fake.url(), &seed).await;
    post(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("kept", false),
    )
    .await;
    post(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("hello there", false),
    )
    .await;
    proxy.shutdown().await.unwrap();
    let original = read(&seed);
    // The same settings for every mode: cycling on exhaustion, fuzzy matching on.
    let run = |mode: Mode, name: &str| {
        let cassette = dir.path().join(name);
        std::fs::write(&cassette, &original).unwrap();
        let url = fake.url();
        async move {
            let proxy = Proxy::builder()
                .upstream("openai", url)
                .cassette(&cassette)
                .mode(mode)
                .exhaustion(Exhaustion::Cycle)
                .fuzzy(0.5)
                .start()
                .await
                .unwrap();
            let mut bodies = Vec::new();
            // A repeat beyond the one recording, and a near match of the other recording.
            for text in ["kept", "kept", "hello there!"] {
                let a = post(&proxy, "openai", "/v1/chat/completions", &chat(text, false)).await;
                assert_eq!(
                    a.status,
                    200,
                    "{mode}: {}",
                    String::from_utf8_lossy(&a.body)
                );
                bodies.push(serde_json::from_slice::<Value>(&a.body).unwrap());
            }
            let report = proxy.shutdown().await.unwrap();
            (cassette, bodies, report)
        }
    };
    let content = |v: &Value| {
        v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };

    // auto: the cassette answers all three (cycling, then fuzzy); nothing is forwarded or written.
    let before = fake.seen.lock().unwrap().len();
    let (auto, bodies, report) = run(Mode::Auto, "auto.jsonl").await;
    assert_eq!(
        fake.seen.lock().unwrap().len(),
        before,
        "auto forwarded nothing"
    );
    assert_eq!((report.replayed, report.recorded), (3, 0));
    assert_eq!(report.fuzzy_hits.len(), 1);
    assert_eq!(
        bodies[0], bodies[1],
        "the repeat cycled to the same recording"
    );
    assert!(content(&bodies[2]).starts_with("echo: hello there "));
    assert_eq!(read(&auto), original, "auto left the cassette as it was");

    // append: only the exact first request replays; the repeat and the near match are recorded.
    let (append, bodies, report) = run(Mode::Append, "append.jsonl").await;
    assert_eq!(fake.seen.lock().unwrap().len(), before + 2);
    assert_eq!((report.replayed, report.recorded), (1, 2));
    assert!(report.fuzzy_hits.is_empty());
    assert_ne!(
        bodies[0]["id"], bodies[1]["id"],
        "the repeat is a fresh answer"
    );
    assert!(content(&bodies[2]).starts_with("echo: hello there! "));
    assert_eq!(requests_in(&append), 4, "both recordings kept, two added");
    for line in original.lines().skip(1) {
        assert!(read(&append).contains(line), "kept verbatim: {line}");
    }

    // record: everything is forwarded and the cassette holds this run only.
    let (record, _, report) = run(Mode::Record, "record.jsonl").await;
    assert_eq!(fake.seen.lock().unwrap().len(), before + 5);
    assert_eq!((report.replayed, report.recorded), (0, 3));
    assert_eq!(requests_in(&record), 3);
    let untouched = r#""content":"hello there","role""#;
    assert!(original.contains(untouched));
    assert!(
        !read(&record).contains(untouched),
        "the untouched recording is gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_mode_journals_each_interaction_and_replaces_the_cassette_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeUpstream::start().await;
    let cassette = dir.path().join("c.jsonl");
    let proxy = start(Mode::Record, &fake.url(), &cassette).await;
    post(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("old", false),
    )
    .await;
    proxy.shutdown().await.unwrap();
    let previous = read(&cassette);

    let proxy = start(Mode::Record, &fake.url(), &cassette).await;
    post(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("new one", false),
    )
    .await;
    post(
        &proxy,
        "openai",
        "/v1/audio/speech",
        &json!({"input": "new two"}),
    )
    .await;
    // Mid-run: each finished interaction is on disk in the journal; the cassette is still the old one.
    let journal = calltape_recorder::http::journal_path(&cassette);
    let so_far = calltape_recorder::http::Journal::read(&cassette).unwrap();
    assert_eq!(so_far.interactions.len(), 2);
    assert!(read(&journal).contains("new one"));
    assert!(!read(&journal).contains(KEY), "the journal is redacted too");
    assert_eq!(read(&cassette), previous);
    let report = proxy.shutdown().await.unwrap();
    assert!(report.errors.is_empty(), "{}", report.summary());
    // A clean end: the cassette holds this run only, and no journal is left.
    let text = read(&cassette);
    assert!(text.contains("new one") && !text.contains(r#""content":"old""#));
    assert!(!journal.exists());
    assert_eq!(files_in(dir.path()), vec!["c.jsonl", "c.jsonl.blobs"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brotli_deflate_and_zstd_answers_are_stored_decoded_and_replayed_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let routes = [
        ("/v1/models/br", "m-br"),
        ("/v1/models/deflate", "m-deflate"),
        ("/v1/models/deflate-raw", "m-deflate-raw"),
        ("/v1/models/zstd", "m-zstd"),
    ];
    let check = |a: &Answer, what: &str| {
        assert_eq!(
            a.status,
            200,
            "{what}: {}",
            String::from_utf8_lossy(&a.body)
        );
        assert!(
            a.headers.get("content-encoding").is_none(),
            "{what}: still encoded"
        );
    };
    let proxy = start(Mode::Record, &fake.url(), &cassette).await;
    let mut recorded = Vec::new();
    for (path, _) in routes {
        recorded.push(post(&proxy, "openai", path, &json!({})).await);
    }
    let stream = post(&proxy, "openai", "/v1/stream/br", &json!({})).await;
    let report = proxy.shutdown().await.unwrap();
    assert!(report.errors.is_empty(), "{}", report.summary());
    check(&stream, "recorded br stream");
    assert_eq!(stream.body, super::fake::BR_EVENTS.as_bytes());
    for (a, (path, id)) in recorded.iter().zip(routes) {
        check(a, path);
        let v: Value = serde_json::from_slice(&a.body).unwrap();
        assert_eq!(v["data"][0]["id"], id, "{path}");
    }

    // Stored decoded: JSON as JSON, the stream one event per line, no encoding anywhere.
    let text = read(&cassette);
    for (_, id) in routes {
        assert!(
            text.contains(&format!(r#""body":{{"json":{{"data":[{{"id":"{id}""#)),
            "{text}"
        );
    }
    assert!(text.contains(r#""data":"two""#), "{text}");
    assert!(!text.to_ascii_lowercase().contains("content-encoding"));

    // Replayed offline: the decoded bytes with their exact length and no encoding header.
    drop(fake);
    let proxy = start(Mode::Replay, "http://127.0.0.1:9", &cassette).await;
    for (path, id) in routes {
        let a = post(&proxy, "openai", path, &json!({})).await;
        check(&a, path);
        let length: usize = a.headers["content-length"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(length, a.body.len(), "{path}");
        let v: Value = serde_json::from_slice(&a.body).unwrap();
        assert_eq!(v["data"][0]["id"], id, "{path}");
    }
    let replayed = post(&proxy, "openai", "/v1/stream/br", &json!({})).await;
    check(&replayed, "replayed br stream");
    assert_eq!(replayed.body, stream.body);
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.replayed, routes.len() + 1, "{}", report.summary());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_early_does_not_cut_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Record, &fake.url(), &cassette).await;
    {
        let client = reqwest::Client::builder()
            .no_proxy()
            .tls_backend_preconfigured(calltape_stdio_bridge::tls_client_config().unwrap())
            .build()
            .unwrap();
        let mut resp = client
            .post(format!("{}/v1/slow-stream", proxy.base_url("openai")))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&json!({})).unwrap())
            .send()
            .await
            .unwrap();
        let first = resp.chunk().await.unwrap().unwrap();
        assert!(first.starts_with(b"data: 0"));
        // The client hangs up here.
    }
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.recorded, 1);
    let text = read(&cassette);
    assert_eq!(
        text.lines().filter(|l| l.contains(r#""t":"ev""#)).count(),
        20,
        "{text}"
    );
    assert!(text.contains(r#"{"how":"clean","t":"end"}"#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_that_end_badly_are_replayed_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Record, &fake.url(), &cassette).await;
    let reset = post(&proxy, "openai", "/v1/reset", &json!({})).await;
    let truncated = post(&proxy, "openai", "/v1/truncated", &json!({})).await;
    proxy.shutdown().await.unwrap();
    drop(fake);
    let text = read(&cassette);
    assert!(
        text.contains(r#"{"after":22,"how":"reset","t":"end"}"#),
        "{text}"
    );
    assert!(text.contains(r#"{"how":"truncated","t":"end"}"#), "{text}");
    assert!(String::from_utf8_lossy(&reset.body).contains("body error"));
    assert_eq!(truncated.body, b"data: one\n\ndata: tw");

    let proxy = start(Mode::Replay, "http://127.0.0.1:9", &cassette).await;
    let reset2 = post(&proxy, "openai", "/v1/reset", &json!({})).await;
    let truncated2 = post(&proxy, "openai", "/v1/truncated", &json!({})).await;
    proxy.shutdown().await.unwrap();
    assert!(
        String::from_utf8_lossy(&reset2.body).contains("body error"),
        "the replayed stream fails too"
    );
    assert_eq!(truncated2.body, truncated.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_test_cassettes_by_header_and_by_path_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeUpstream::start().await;
    let proxy = Proxy::builder()
        .upstream("openai", fake.url())
        .cassette_dir(dir.path())
        .mode(Mode::Record)
        .start()
        .await
        .unwrap();
    let a = send(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("a", false),
        &[("x-calltape-cassette", "suite/test_a")],
    )
    .await;
    assert_eq!(a.status, 200);
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(calltape_stdio_bridge::tls_client_config().unwrap())
        .build()
        .unwrap();
    let b = client
        .post(format!(
            "{}/_cassette/test_b/openai/v1/chat/completions",
            proxy.url()
        ))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&chat("b", false)).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(b.status(), 200);
    let bad = send(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("c", false),
        &[("x-calltape-cassette", "../escape")],
    )
    .await;
    assert_eq!(bad.status, 400);
    let none = post(&proxy, "openai", "/v1/chat/completions", &chat("d", false)).await;
    assert_eq!(none.status, 400, "no default cassette");
    proxy.shutdown().await.unwrap();
    assert!(read(&dir.path().join("suite/test_a.jsonl")).contains(r#""content":"a""#));
    assert!(read(&dir.path().join("test_b.jsonl")).contains(r#""content":"b""#));
    assert!(!dir.path().parent().unwrap().join("escape.jsonl").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_fields_and_a_changed_normaliser_still_match() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    // Recorded without any ignore rule.
    let proxy = start(Mode::Record, &fake.url(), &cassette).await;
    post(
        &proxy,
        "openai",
        "/v1/counter",
        &json!({"q": 1, "metadata": {"run_id": "r-1"}}),
    )
    .await;
    proxy.shutdown().await.unwrap();
    drop(fake);
    // Replayed with a normaliser that ignores the volatile field: the stored request is re-keyed.
    let proxy = Proxy::builder()
        .upstream("openai", "http://127.0.0.1:9")
        .cassette(&cassette)
        .mode(Mode::Replay)
        .ignore_body("metadata.run_id")
        .start()
        .await
        .unwrap();
    let a = post(
        &proxy,
        "openai",
        "/v1/counter",
        &json!({"metadata": {"run_id": "r-2"}, "q": 1}),
    )
    .await;
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    proxy.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_can_hold_the_key_itself() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let proxy = Proxy::builder()
        .upstream("openai", fake.url())
        .cassette(&cassette)
        .mode(Mode::Record)
        .auth(
            "openai",
            "authorization",
            "Bearer sk-held-by-proxy-0123456789",
        )
        .start()
        .await
        .unwrap();
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(calltape_stdio_bridge::tls_client_config().unwrap())
        .build()
        .unwrap();
    let resp = client
        .post(format!("{}/v1/chat/completions", proxy.base_url("openai")))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&chat("x", false)).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    proxy.shutdown().await.unwrap();
    let seen = fake.seen.lock().unwrap().clone();
    let auth = seen[0]
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .unwrap();
    assert_eq!(auth.1, "Bearer sk-held-by-proxy-0123456789");
    assert!(!read(&cassette).contains("sk-held-by-proxy"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_key_sends_the_key_in_the_header_of_the_upstreams_provider() {
    const HELD: &str = "sk-held-by-proxy-0123456789";
    // (the upstream's name, the header the upstream sees, its value)
    let cases = [
        ("openai", "authorization", format!("Bearer {HELD}")),
        ("anthropic", "x-api-key", HELD.to_owned()),
        ("my-claude", "x-api-key", HELD.to_owned()),
        ("llm", "authorization", format!("Bearer {HELD}")),
    ];
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(calltape_stdio_bridge::tls_client_config().unwrap())
        .build()
        .unwrap();
    for (name, header, value) in cases {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("c.jsonl");
        let fake = FakeUpstream::start().await;
        let proxy = Proxy::builder()
            .upstream(name, fake.url())
            .cassette(&cassette)
            .mode(Mode::Record)
            .auth_key(name, HELD)
            .start()
            .await
            .unwrap();
        let resp = client
            .post(format!("{}/v1/chat/completions", proxy.base_url(name)))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&chat("x", false)).unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{name}");
        proxy.shutdown().await.unwrap();
        let seen = fake.seen.lock().unwrap().clone();
        let keys: Vec<(String, String)> = seen[0]
            .headers
            .iter()
            .filter(|(k, _)| k == "authorization" || k == "x-api-key")
            .cloned()
            .collect();
        assert_eq!(keys, [(header.to_owned(), value)], "{name}");
        assert!(!read(&cassette).contains(HELD), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzzy_hits_are_opt_in_and_refused_in_replay_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Record, &fake.url(), &cassette).await;
    let long = "a fairly long prompt that stays mostly the same between runs";
    post(&proxy, "openai", "/v1/chat/completions", &chat(long, false)).await;
    proxy.shutdown().await.unwrap();
    drop(fake);
    let near = chat(&format!("{long}!"), false);
    for (allow, status) in [(false, 404), (true, 200)] {
        let proxy = Proxy::builder()
            .upstream("openai", "http://127.0.0.1:9")
            .cassette(&cassette)
            .mode(Mode::Replay)
            .fuzzy(0.5)
            .allow_fuzzy(allow)
            .start()
            .await
            .unwrap();
        let a = post(&proxy, "openai", "/v1/chat/completions", &near).await;
        assert_eq!(
            a.status,
            status,
            "allow={allow}: {}",
            String::from_utf8_lossy(&a.body)
        );
        let report = proxy.shutdown().await.unwrap();
        assert_eq!(report.fuzzy_hits.len(), usize::from(allow));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_reports_structural_drift_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Record, &fake.url(), &cassette).await;
    post(&proxy, "openai", "/v1/chat/completions", &chat("x", false)).await;
    post(&proxy, "openai", "/v1/counter", &json!({"q": 9})).await;
    proxy.shutdown().await.unwrap();
    // Make the recording's shape differ from what the upstream sends now.
    let text = read(&cassette).replace(r#"{"n":1}"#, r#"{"n":"one","extra":true}"#);
    std::fs::write(&cassette, &text).unwrap();

    let proxy = start(Mode::Verify, &fake.url(), &cassette).await;
    post(&proxy, "openai", "/v1/chat/completions", &chat("x", false)).await;
    post(&proxy, "openai", "/v1/counter", &json!({"q": 9})).await;
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.forwarded, 2);
    let drift = report.drift.join("\n");
    assert!(
        drift.contains("body.n: type changed from string to number"),
        "{drift}"
    );
    assert!(
        drift.contains("body.extra: missing in the live answer"),
        "{drift}"
    );
    assert_eq!(report.drift.len(), 2, "{drift}");
    assert_eq!(read(&cassette), text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn realtime_and_rechunked_replay_give_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Record, &fake.url(), &cassette).await;
    let original = post(&proxy, "openai", "/v1/chat/completions", &chat("hi", true)).await;
    proxy.shutdown().await.unwrap();
    drop(fake);
    for timing in [
        ReplayTiming::Realtime {
            max_delay: Duration::from_millis(5),
        },
        ReplayTiming::Rechunk { seed: 42 },
    ] {
        let proxy = Proxy::builder()
            .upstream("openai", "http://127.0.0.1:9")
            .cassette(&cassette)
            .mode(Mode::Replay)
            .replay_timing(timing)
            .start()
            .await
            .unwrap();
        let a = post(&proxy, "openai", "/v1/chat/completions", &chat("hi", true)).await;
        assert_eq!(a.body, original.body, "{timing:?}");
        proxy.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_mode_never_connects_and_needs_no_cassette_file_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let cassette: PathBuf = dir.path().join("absent.jsonl");
    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Replay, &fake.url(), &cassette).await;
    let a = post(&proxy, "openai", "/v1/chat/completions", &chat("x", false)).await;
    assert_eq!(a.status, 404);
    // The SDK's error says the cassette is missing and how to record it.
    let v: Value = serde_json::from_slice(&a.body).unwrap();
    let body = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        body.contains(&format!(
            "calltape: no cassette at {} for POST openai /v1/chat/completions",
            cassette.display()
        )),
        "{body}"
    );
    assert!(
        body.contains("; record it with: run the tests again with CALLTAPE_MODE=record"),
        "{body}"
    );
    let report = proxy.shutdown().await.unwrap();
    assert!(report.cassettes[0].missing);
    assert_eq!(report.cassettes[0].misses[0].reason, "no cassette");
    assert_eq!(
        report.failure_text(),
        format!(
            "no cassette at {}: POST openai /v1/chat/completions found nothing to replay\n",
            cassette.display()
        )
    );
    assert_eq!(fake.connections(), 0);
    assert!(!cassette.exists());
    assert!(files_in(dir.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ndjson_streams_round_trip_and_live_mode_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let live = start(Mode::Live, &fake.url(), &cassette).await;
    let a = post(&live, "openai", "/api/generate", &json!({"model": "llama"})).await;
    let report = live.shutdown().await.unwrap();
    assert_eq!((report.forwarded, report.recorded), (1, 0));
    assert!(!cassette.exists(), "live mode writes nothing");

    let rec = start(Mode::Record, &fake.url(), &cassette).await;
    let b = post(&rec, "openai", "/api/generate", &json!({"model": "llama"})).await;
    rec.shutdown().await.unwrap();
    assert_eq!(a.body, b.body);
    let text = read(&cassette);
    assert!(text.contains(r#""stream":"ndjson""#), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains(r#""t":"ev""#)).count(),
        3
    );
    drop(fake);

    let replay = start(Mode::Replay, "http://127.0.0.1:9", &cassette).await;
    let c = post(
        &replay,
        "openai",
        "/api/generate",
        &json!({"model": "llama"}),
    )
    .await;
    replay.shutdown().await.unwrap();
    assert_eq!(c.body, b.body);
    assert_eq!(
        c.headers.get("content-type").unwrap(),
        "application/x-ndjson"
    );
}

//! `GET /_calltape/cassette/NAME`: a test runner asks, after each test, what happened with the
//! test's cassette so far.

use std::path::Path;

use calltape_replay::http::{Mode, Proxy, ProxyHandle};
use serde_json::{Value, json};

use super::fake::FakeUpstream;
use super::flows::{post, start};

fn chat(text: &str) -> Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]})
}

/// The status and body of a request to the proxy's root with `method` at `path`.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(calltape_stdio_bridge::tls_client_config().unwrap())
        .build()
        .unwrap()
}

async fn query(proxy: &ProxyHandle, method: reqwest::Method, path: &str) -> (u16, String) {
    let client = client();
    let resp = client
        .request(method, format!("{}{path}", proxy.url()))
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

async fn cassette(proxy: &ProxyHandle, name: &str) -> Value {
    let (status, body) = query(
        proxy,
        reqwest::Method::GET,
        &format!("/_calltape/cassette/{name}"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cassette_query_tells_each_cassettes_hits_and_failures_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("suite/one.jsonl");
    std::fs::create_dir_all(one.parent().unwrap()).unwrap();
    let fake = FakeUpstream::start().await;
    let recorder = start(Mode::Record, &fake.url(), &one).await;
    post(
        &recorder,
        "openai",
        "/v1/chat/completions",
        &chat("the recorded question"),
    )
    .await;
    recorder.shutdown().await.unwrap();

    let proxy = Proxy::builder()
        .upstream("openai", "http://127.0.0.1:9")
        .cassette_dir(dir.path())
        .mode(Mode::Replay)
        .start()
        .await
        .unwrap();
    let before = cassette(&proxy, "suite/one").await;
    assert_eq!(before["failures"], 0);
    assert_eq!(before["cassette"]["hits"], 0);
    assert_eq!(before["cassette"]["path"], one.display().to_string());

    let hit = post(
        &proxy,
        "_cassette/suite%2Fone/openai",
        "/v1/chat/completions",
        &chat("the recorded question"),
    )
    .await;
    assert_eq!(hit.status, 200);
    let miss = post(
        &proxy,
        "_cassette/suite%2Ftwo/openai",
        "/v1/chat/completions",
        &chat("a new question"),
    )
    .await;
    assert_eq!(miss.status, 404);
    let near = post(
        &proxy,
        "_cassette/suite%2Fone/openai",
        "/v1/chat/completions",
        &chat("the recorded question, reworded"),
    )
    .await;
    assert_eq!(near.status, 404);

    let v = cassette(&proxy, "suite/one").await;
    assert_eq!(v["mode"], "replay");
    assert_eq!(v["cassette"]["hits"], 1);
    assert_eq!(v["failures"], 1);
    let text = v["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "miss in {}: POST openai /v1/chat/completions: no recording\n  closest recording: POST openai /v1/chat/completions",
            one.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("+      \"content\": \"the recorded question, reworded\""),
        "{text}"
    );
    assert_eq!(v["cassette"]["missing"], false);
    // suite/two.jsonl does not exist: its miss says so.
    let two = cassette(&proxy, "suite/two").await;
    assert_eq!(two["failures"], 1);
    assert_eq!(two["cassette"]["missing"], true);
    assert_eq!(two["cassette"]["misses"][0]["reason"], "no cassette");
    assert_eq!(
        two["text"],
        format!(
            "no cassette at {}: POST openai /v1/chat/completions found nothing to replay\n",
            dir.path().join("suite/two.jsonl").display()
        ),
        "{two}"
    );
    let unused = cassette(&proxy, "suite/three.jsonl").await;
    assert_eq!(
        (unused["failures"].as_u64(), unused["text"].as_str()),
        (Some(0), Some(""))
    );
    assert!(!Path::new(&dir.path().join("suite/three.jsonl")).exists());

    let (status, body) = query(
        &proxy,
        reqwest::Method::GET,
        "/_calltape/cassette/suite%2F..%2Fone",
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("is not allowed"), "{body}");
    let (status, body) = query(
        &proxy,
        reqwest::Method::GET,
        "/_calltape/cassette/suite%2Fone",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"hits\":1"), "{body}");
    let escape = post(
        &proxy,
        "_cassette/..%2Fescape/openai",
        "/v1/chat/completions",
        &chat("x"),
    )
    .await;
    assert_eq!(escape.status, 400);
    let (status, _) = query(
        &proxy,
        reqwest::Method::POST,
        "/_calltape/cassette/suite/one",
    )
    .await;
    assert_eq!(status, 405);
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.failures(), 2, "{}", report.summary());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cassette_query_passes_the_front_door_like_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::builder()
        .upstream("openai", "http://127.0.0.1:9")
        .cassette_dir(dir.path())
        .mode(Mode::Replay)
        .auth_key("openai", "sk-test-0123456789abcdefghijklmnop")
        .start()
        .await
        .unwrap();
    let client = client();
    let root = format!("http://{}", proxy.local_addr());
    let bare = client
        .get(format!("{root}/_calltape/cassette/t"))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status().as_u16(), 404);
    let token = proxy.path_token().unwrap().to_owned();
    let with_origin = client
        .get(format!("{root}/{token}/_calltape/cassette/t"))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(with_origin.status().as_u16(), 403);
    let (status, body) = query(&proxy, reqwest::Method::GET, "/_calltape/cassette/t").await;
    assert_eq!(status, 200, "{body}");
    proxy.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cassette_query_counts_the_drift_of_the_last_answer() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.jsonl");
    // A stream, whose drift is counted when it ends: the query right after it already sees it.
    let mut stream = chat("hi");
    stream["stream"] = true.into();
    let fake = FakeUpstream::start().await;
    let recorder = start(Mode::Record, &fake.url(), &file).await;
    post(&recorder, "openai", "/v1/chat/completions", &stream).await;
    recorder.shutdown().await.unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(r#""status":200"#), "{text}");
    std::fs::write(&file, text.replace(r#""status":200"#, r#""status":201"#)).unwrap();

    let proxy = Proxy::builder()
        .upstream("openai", fake.url())
        .cassette_dir(dir.path())
        .mode(Mode::Verify)
        .start()
        .await
        .unwrap();
    // Each answer counts as soon as the client has read it, however quickly the test asks.
    for round in 1..=20 {
        let answer = post(
            &proxy,
            "_cassette/t/openai",
            "/v1/chat/completions",
            &stream,
        )
        .await;
        assert_eq!(answer.status, 200);
        let v = cassette(&proxy, "t").await;
        assert_eq!(v["failures"], round, "{v}");
    }
    let v = cassette(&proxy, "t").await;
    assert_eq!(v["mode"], "verify");
    let text = v["text"].as_str().unwrap();
    assert!(
        text.contains("POST openai /v1/chat/completions: status: recorded 201, live 200"),
        "{text}"
    );
    proxy.shutdown().await.unwrap();
}

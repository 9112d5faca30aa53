//! The run's report per cassette: hits, misses with their closest recordings, fuzzy hits, drift.

use std::path::Path;

use calltape_replay::http::{Mode, Proxy};
use serde_json::{Value, json};

use super::fake::FakeUpstream;
use super::flows::{post, read, start};

fn chat(text: &str) -> Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]})
}

async fn record(cassette: &Path, texts: &[&str]) {
    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Record, &fake.url(), cassette).await;
    for text in texts {
        post(&proxy, "openai", "/v1/chat/completions", &chat(text)).await;
    }
    proxy.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_miss_is_reported_with_its_cassette_and_closest_recording() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one.jsonl"), dir.path().join("two.jsonl"));
    record(&one, &["the recorded question"]).await;
    record(&two, &["another question"]).await;

    let proxy = Proxy::builder()
        .upstream("openai", "http://127.0.0.1:9")
        .cassette(&two)
        .cassette_dir(dir.path())
        .mode(Mode::Replay)
        .start()
        .await
        .unwrap();
    let hit = post(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("another question"),
    )
    .await;
    assert_eq!(hit.status, 200);
    let near = chat("the recorded question, reworded");
    let miss = post(
        &proxy,
        "_cassette/one/openai",
        "/v1/chat/completions",
        &near,
    )
    .await;
    assert_eq!(miss.status, 404);
    let report = proxy.shutdown().await.unwrap();

    assert_eq!(report.mode, Some(Mode::Replay));
    assert_eq!(report.failures(), 1);
    let paths: Vec<&Path> = report.cassettes.iter().map(|c| c.path.as_path()).collect();
    assert_eq!(paths, [one.as_path(), two.as_path()]);
    let (first, second) = (&report.cassettes[0], &report.cassettes[1]);
    assert_eq!((first.hits, second.hits), (0, 1));
    assert!(second.misses.is_empty());
    let m = &first.misses[0];
    assert_eq!(
        (m.method.as_str(), m.upstream.as_str(), m.path.as_str()),
        ("POST", "openai", "/v1/chat/completions")
    );
    assert_eq!(m.reason, "no recording");
    let closest = &m.closest[0];
    assert_eq!(closest.path, "/v1/chat/completions");
    assert!(
        closest
            .diff
            .contains("-      \"content\": \"the recorded question\""),
        "{}",
        closest.diff
    );
    assert!(
        closest
            .diff
            .contains("+      \"content\": \"the recorded question, reworded\""),
        "{}",
        closest.diff
    );
    let text = report.failure_text();
    let cassette = one.display();
    assert!(
        text.starts_with(&format!(
            "miss in {cassette}: POST openai /v1/chat/completions: no recording\n  closest recording: POST openai /v1/chat/completions"
        )),
        "{text}"
    );
    let v = report.to_json();
    assert_eq!(v["cassettes"][0]["misses"][0]["closest"][0]["seq"], 0);
    assert_eq!(v["cassettes"][1]["hits"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_byte_cassette_answers_every_request_with_a_miss_and_auto_fills_it() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("empty.jsonl");
    std::fs::write(&cassette, "").unwrap();
    let proxy = start(Mode::Replay, "http://127.0.0.1:9", &cassette).await;
    let a = post(&proxy, "openai", "/v1/chat/completions", &chat("hi")).await;
    assert_eq!(a.status, 404, "{}", String::from_utf8_lossy(&a.body));
    let v: Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(v["error"]["type"], "cassette_miss");
    let report = proxy.shutdown().await.unwrap();
    assert!(report.errors.is_empty(), "{}", report.summary());
    assert!(report.cassettes[0].misses[0].closest.is_empty());
    assert_eq!(read(&cassette), "");

    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Auto, &fake.url(), &cassette).await;
    let a = post(&proxy, "openai", "/v1/chat/completions", &chat("hi")).await;
    assert_eq!(a.status, 200);
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.recorded, 1, "{}", report.summary());
    assert!(!report.has_failures());
    assert!(read(&cassette).contains(r#""t":"req""#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_fuzzy_hits_and_drift_are_failures_of_their_cassette() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let long = "a fairly long prompt that stays mostly the same between runs";
    record(&cassette, &[long]).await;
    let proxy = Proxy::builder()
        .upstream("openai", "http://127.0.0.1:9")
        .cassette(&cassette)
        .mode(Mode::Replay)
        .fuzzy(0.5)
        .start()
        .await
        .unwrap();
    let near = chat(&format!("{long}!"));
    assert_eq!(
        post(&proxy, "openai", "/v1/chat/completions", &near)
            .await
            .status,
        404
    );
    let report = proxy.shutdown().await.unwrap();
    let c = &report.cassettes[0];
    assert!(c.misses.is_empty());
    assert!(c.fuzzy[0].refused);
    assert_eq!(c.fuzzy[0].matched.seq, 0);
    assert_eq!(report.failures(), 1);
    assert!(
        report
            .to_junit()
            .contains("<failure type=\"fuzzy\" message=\"POST openai /v1/chat/completions: fuzzy match refused in replay mode\">")
    );

    // Verify: the live answer's shape differs from the recording's.
    let text = read(&cassette).replace(r#""usage":{"#, r#""usage":7,"was":{"#);
    std::fs::write(&cassette, &text).unwrap();
    let fake = FakeUpstream::start().await;
    let proxy = start(Mode::Verify, &fake.url(), &cassette).await;
    post(&proxy, "openai", "/v1/chat/completions", &chat(long)).await;
    post(
        &proxy,
        "openai",
        "/v1/chat/completions",
        &chat("never recorded"),
    )
    .await;
    let report = proxy.shutdown().await.unwrap();
    let drift: Vec<&str> = report.cassettes[0]
        .drift
        .iter()
        .map(|d| d.difference.as_str())
        .collect();
    assert_eq!(
        drift,
        [
            "body.was: missing in the live answer",
            "nothing recorded to compare with"
        ],
        "{}",
        report.summary()
    );
    assert_eq!(report.failures(), 2);
    assert_eq!(
        report.to_junit().matches("<failure type=\"drift\"").count(),
        2
    );
}

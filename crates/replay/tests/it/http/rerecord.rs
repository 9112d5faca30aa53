//! Re-recording the same traffic with the default timing, on a loaded machine, leaves the cassette
//! as it was: the network's timing never churns it.

use calltape_replay::http::Mode;
use serde_json::json;

use super::fake::FakeUpstream;
use super::flows::{post, read, start};
use super::load::CpuLoad;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_recording_the_same_traffic_under_load_keeps_the_cassette_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let traffic = || async {
        let proxy = start(Mode::Record, &fake.url(), &cassette).await;
        let chat = json!({"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
        // Events 5 ms apart: on the edge between two 10 ms delay buckets.
        let slow = post(&proxy, "openai", "/v1/slow-stream", &json!({})).await;
        let stream = post(&proxy, "openai", "/v1/chat/completions", &chat).await;
        let audio = post(&proxy, "openai", "/v1/audio/speech", &json!({"input": "x"})).await;
        assert_eq!((slow.status, stream.status, audio.status), (200, 200, 200));
        let report = proxy.shutdown().await.unwrap();
        assert_eq!(report.recorded, 3, "{}", report.summary());
    };
    traffic().await;
    let first = read(&cassette);
    assert!(
        first.contains(r#""d":10"#),
        "delays were measured:\n{first}"
    );
    let _load = CpuLoad::start();
    for run in 1..=3 {
        traffic().await;
        let again = read(&cassette);
        let changed: Vec<(&str, &str)> = first
            .lines()
            .zip(again.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert!(
            again == first,
            "re-record {run} changed the cassette (stored, new): {changed:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_changed_replaces_the_stored_one() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    for expected in [r#"{"json":{"n":0}}"#, r#"{"json":{"n":1}}"#] {
        let proxy = start(Mode::Record, &fake.url(), &cassette).await;
        post(&proxy, "openai", "/v1/counter", &json!({"q": 1})).await;
        proxy.shutdown().await.unwrap();
        let text = read(&cassette);
        assert!(text.contains(expected), "{text}");
        assert_eq!(text.matches(r#""t":"res""#).count(), 1, "{text}");
    }
}

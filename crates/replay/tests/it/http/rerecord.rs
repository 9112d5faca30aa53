//! Re-recording the same traffic leaves the cassette as it was: the network's timing never churns it.

use calltape_replay::http::Mode;
use serde_json::json;

use super::fake::FakeUpstream;
use super::flows::{post, read, start};

/// A stored delay no run measures: the fake's events are 5 ms apart.
const PLANTED_DELAY: &str = r#""d":99990"#;

/// `text` with every stored event delay (`"d":N`) replaced by [`PLANTED_DELAY`], and how many.
fn plant_delays(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut count = 0;
    while let Some(at) = rest.find(r#""d":"#) {
        out.push_str(&rest[..at]);
        rest = &rest[at + 4..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(PLANTED_DELAY);
        rest = &rest[digits..];
        count += 1;
    }
    out.push_str(rest);
    (out, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_recording_the_same_traffic_keeps_the_cassette_and_its_delays_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let traffic = || async {
        let proxy = start(Mode::Record, &fake.url(), &cassette).await;
        let chat = json!({"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
        let slow = post(&proxy, "openai", "/v1/slow-stream", &json!({})).await;
        let stream = post(&proxy, "openai", "/v1/chat/completions", &chat).await;
        let audio = post(&proxy, "openai", "/v1/audio/speech", &json!({"input": "x"})).await;
        assert_eq!((slow.status, stream.status, audio.status), (200, 200, 200));
        let report = proxy.shutdown().await.unwrap();
        assert_eq!(report.recorded, 3, "{}", report.summary());
    };
    traffic().await;
    // Every stored delay becomes one that no re-record measures, so a re-record that stored what it
    // measured would change the file whatever the machine's timing is.
    let (first, planted) = plant_delays(&read(&cassette));
    assert!(planted >= 20, "the streams' delays are stored:\n{first}");
    std::fs::write(&cassette, &first).unwrap();
    for run in 1..=2 {
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

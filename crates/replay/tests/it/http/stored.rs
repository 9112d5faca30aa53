//! What a recorded cassette keeps: allow-listed response headers, redacted paths and query names, and
//! no sidecar blob that holds a credential.

use calltape_replay::http::{Mode, Proxy};
use serde_json::json;

use super::fake::FakeUpstream;
use super::flows::{KEY, files_in, post, read, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cassettes_keep_only_allowed_response_headers_and_no_secret_in_a_path_or_query_name() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let fake = FakeUpstream::start().await;
    let builder = |mode: Mode, url: &str| {
        Proxy::builder()
            .upstream("openai", url)
            .cassette(&cassette)
            .mode(mode)
            .keep_response_header("x-download")
    };
    let ghp = "ghp_9876543210abcdefghijklmnopqrstuvwxyz";
    let repo_path = format!("/v1/repos/{ghp}/x?ke%79=qvalue-5d6e7f&alt=json");
    let proxy = builder(Mode::Record, &fake.url()).start().await.unwrap();
    let headers = post(&proxy, "openai", "/v1/headers", &json!({})).await;
    assert_eq!(headers.status, 200);
    let repo = post(&proxy, "openai", &repo_path, &json!({})).await;
    assert_eq!(repo.status, 404, "the fake has no such route");
    let report = proxy.shutdown().await.unwrap();
    assert!(report.errors.is_empty(), "{}", report.summary());
    let text = read(&cassette);
    for kept in [
        "\"content-type\"",
        "\"x-request-id\"",
        "\"request-id\"",
        "\"x-ratelimit-remaining-requests\"",
        "\"anthropic-ratelimit-requests-remaining\"",
        "\"retry-after\"",
        "\"x-download\"",
    ] {
        assert!(text.contains(kept), "{kept} was not kept:\n{text}");
    }
    for dropped in [
        "x-session-hint",
        "hint-4f2a9c1e7d",
        "location",
        "locsig-8e7f6a5b4c",
        "amzsig-1a2b3c",
        "set-cookie",
        "openai-organization",
        "\"date\"",
        ghp,
        "ghp_0123456789",
        "qvalue-5d6e7f",
    ] {
        assert!(
            !text.contains(dropped),
            "{dropped} reached the cassette:\n{text}"
        );
    }
    assert!(text.contains("/v1/repos/[REDACTED]/x"), "{text}");
    assert!(
        text.contains("https://files.example/d/[REDACTED]?X-Amz-%53ignature=[REDACTED]&part=1"),
        "{text}"
    );

    // Replay serves what was kept, and the redacted path and query still match their request.
    drop(fake);
    let proxy = builder(Mode::Replay, "http://127.0.0.1:9")
        .start()
        .await
        .unwrap();
    let replayed = post(&proxy, "openai", "/v1/headers", &json!({})).await;
    assert_eq!(replayed.status, 200);
    assert_eq!(replayed.headers["content-type"], "application/json");
    assert_eq!(replayed.headers["request-id"], "req_anthropic_1");
    assert_eq!(replayed.headers["retry-after"], "3");
    assert!(replayed.headers.get("x-session-hint").is_none());
    let repo_again = post(&proxy, "openai", &repo_path, &json!({})).await;
    assert_eq!(repo_again.status, 404);
    assert_eq!(repo_again.body, repo.body);
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.replayed, 2, "{}", report.summary());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blob_holding_a_secret_refuses_its_interaction_and_nothing_of_it_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeUpstream::start().await;
    for mode in [Mode::Record, Mode::Auto] {
        let cassette = dir.path().join(format!("{mode}.jsonl"));
        let proxy = start(mode, &fake.url(), &cassette).await;
        // A clean blob first, so the cassette and its blob folder exist.
        let clean = post(&proxy, "openai", "/v1/audio/speech", &json!({"input": "a"})).await;
        let echo = post(&proxy, "openai", "/v1/audio/echo", &json!({"input": "b"})).await;
        let token = post(&proxy, "openai", "/v1/audio/token", &json!({"input": "c"})).await;
        // A value the request's body held under a credential name, redacted there.
        let body_secret = json!({"input": "d", "password": "body-secret-value-77"});
        let echoed = post(&proxy, "openai", "/v1/audio/echo-body", &body_secret).await;
        // The client still gets its answers; only the recording is refused.
        assert_eq!(
            (clean.status, echo.status, token.status, echoed.status),
            (200, 200, 200, 200)
        );
        let report = proxy.shutdown().await.unwrap();
        assert_eq!(report.refused.len(), 3, "{mode}: {}", report.summary());
        let summary = report.summary();
        for needle in [
            "POST openai /v1/audio/echo #0",
            "the value of authorization",
            "POST openai /v1/audio/token #0",
            "a github-pat token",
            "POST openai /v1/audio/echo-body #0",
            "the value of password",
            cassette.to_str().unwrap(),
        ] {
            assert!(summary.contains(needle), "{mode}: {needle}: {summary}");
        }
        assert!(!summary.contains(KEY), "{summary}");
        let text = read(&cassette);
        assert!(text.contains("/v1/audio/speech"), "{mode}: {text}");
        assert!(!text.contains("/v1/audio/echo"), "{mode}: {text}");
        assert!(!text.contains("/v1/audio/token"), "{mode}: {text}");
        assert!(!text.contains("body-secret-value-77"), "{mode}: {text}");
        let blobs_dir = dir.path().join(format!("{mode}.jsonl.blobs"));
        let blobs = files_in(&blobs_dir);
        assert_eq!(blobs.len(), 1, "{mode}: {blobs:?}");
        for blob in blobs {
            let data = std::fs::read(blobs_dir.join(blob)).unwrap();
            assert!(!data.windows(KEY.len()).any(|w| w == KEY.as_bytes()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_key_is_redacted_and_the_final_gate_refuses_an_interaction_that_holds_a_sent_secret()
 {
    const GHP: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
    const SENT: &str = "sekr-value-4242x";
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeUpstream::start().await;
    for mode in [Mode::Record, Mode::Auto] {
        let cassette = dir.path().join(format!("{mode}.jsonl"));
        let proxy = start(mode, &fake.url(), &cassette).await;
        let chat =
            |text: &str| json!({"model": "m", "messages": [{"role": "user", "content": text}]});
        let clean = post(&proxy, "openai", "/v1/chat/completions", &chat("hi")).await;
        // The answer stores the token under it as an object key: redacted as a value would be, and
        // recorded.
        let keyed = post(&proxy, "openai", "/v1/cards", &chat(GHP)).await;
        // A value sent under a credential name, then sent again where no name says so.
        let named = json!({"model": "m", "api_key": SENT, "messages": []});
        let first = post(&proxy, "openai", "/v1/chat/completions", &named).await;
        let again = post(&proxy, "openai", "/v1/counter", &json!({"note": SENT})).await;
        assert_eq!(
            (clean.status, keyed.status, first.status, again.status),
            (200, 200, 200, 200)
        );
        let report = proxy.shutdown().await.unwrap();
        let summary = report.summary();
        assert_eq!(report.refused.len(), 1, "{mode}: {summary}");
        assert_eq!(report.recorded, 3, "{mode}: {summary}");
        for needle in ["POST openai /v1/counter #0", "the value of api_key"] {
            assert!(summary.contains(needle), "{mode}: {needle}: {summary}");
        }
        assert!(
            !summary.contains(GHP) && !summary.contains(SENT),
            "{summary}"
        );
        let text = read(&cassette);
        assert!(
            !text.contains(GHP) && !text.contains(SENT),
            "{mode}: {text}"
        );
        assert!(text.contains("/v1/cards"), "{mode}: {text}");
        assert!(text.contains("[REDACTED]"), "{mode}: {text}");
        assert!(!text.contains("/v1/counter"), "{mode}: {text}");
        assert!(!dir.path().join(format!("{mode}.jsonl.journal")).exists());
    }
}

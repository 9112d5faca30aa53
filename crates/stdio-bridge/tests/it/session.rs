//! Sessions through the bridge to the echo server: forwarding, bad input, crashes, restarts, late
//! starts, the hold buffer, the end of stdin, and the tap.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use calltape_stdio_bridge::{
    BoxFuture, Bridge, ChildUpstream, Direction, Error, Link, TapEvent, Upstream,
};
use serde_json::{Value, json};

use crate::support::{Client, echo_server, text};

fn echo() -> ChildUpstream {
    ChildUpstream::new([echo_server()]).expect("argv")
}

#[tokio::test]
async fn the_four_calls_pass_through_unchanged() {
    let mut client = Client::start(Bridge::builder().upstream(echo()).build().expect("bridge"));
    let init = client.initialize().await;
    assert_eq!(init["result"]["serverInfo"]["name"], "echo-server");
    let tools = client.request(1, "tools/list", json!({})).await;
    assert_eq!(tools["result"]["tools"][0]["name"], "echo");
    let called = client.call(2, "echo", json!({ "text": "hi there" })).await;
    assert_eq!(
        called,
        json!({ "jsonrpc": "2.0", "id": 2, "result": { "content": [{ "type": "text", "text": "hi there" }] } })
    );
    let read = client
        .request(3, "resources/read", json!({ "uri": "file:///a" }))
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], "hello");
    let prompt = client
        .request(4, "prompts/get", json!({ "name": "p" }))
        .await;
    assert_eq!(prompt["result"]["messages"][0]["role"], "user");
    // String ids and batches go through as well.
    client
        .send(json!({ "jsonrpc": "2.0", "id": "s", "method": "ping" }))
        .await;
    assert_eq!(client.answer(&json!("s")).await["result"], json!({}));
    assert!(client.notes.is_empty(), "{:?}", client.notes);
    let (summary, rest) = client.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(summary.connects, 1);
    assert_eq!(summary.reinitializations, 0);
}

#[tokio::test]
async fn bad_lines_get_parse_errors_and_the_session_goes_on() {
    let bridge = Bridge::builder()
        .upstream(echo())
        .max_frame(1000)
        .build()
        .expect("bridge");
    let mut client = Client::start(bridge);
    client.initialize().await;
    let long = format!("{{\"x\":\"{}\"}}\n", "a".repeat(200_000));
    client.send_raw(b"not json\n42\n\r\n   \n").await;
    client.send_raw(long.as_bytes()).await;
    let mut reasons = Vec::new();
    for _ in 0..3 {
        let error = client.recv().await;
        assert_eq!(error["id"], Value::Null);
        assert_eq!(error["error"]["code"], -32700);
        reasons.push(
            error["error"]["data"]["reason"]
                .as_str()
                .expect("reason")
                .to_owned(),
        );
    }
    assert_eq!(reasons, ["parse_error", "not_object", "frame_too_large"]);
    let called = client
        .call(1, "echo", json!({ "text": "still here" }))
        .await;
    assert_eq!(text(&called), "still here");
    client.finish().await;
}

/// Lines that are JSON but not a request the bridge may forward: each gets exactly one `-32600` answer
/// with `id: null`, and nothing reaches the server.
const INVALID_REQUESTS: &[&str] = &[
    "[]",
    "[1]",
    r#"[{"jsonrpc":"2.0","id":5,"method":"ping"},"x"]"#,
    r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
    r#"[{"jsonrpc":"2.0","id":false,"method":"ping"}]"#,
];

#[tokio::test]
async fn invalid_requests_get_one_error_each_and_never_reach_the_server() {
    let mut client = Client::start(Bridge::builder().upstream(echo()).build().expect("bridge"));
    client.initialize().await;
    for (n, line) in INVALID_REQUESTS.iter().enumerate() {
        client.send_raw(format!("{line}\n").as_bytes()).await;
        // A ping after each line: everything the bridge sends before its answer belongs to the line.
        let ping = 100 + n as u64;
        client
            .send(json!({ "jsonrpc": "2.0", "id": ping, "method": "ping" }))
            .await;
        client.answer(&json!(ping)).await;
        let answers = std::mem::take(&mut client.notes);
        assert_eq!(answers.len(), 1, "{line}: {answers:?}");
        assert_eq!(answers[0]["id"], Value::Null, "{line}");
        assert_eq!(answers[0]["error"]["code"], -32600, "{line}");
        assert_eq!(
            answers[0]["error"]["data"]["reason"], "invalid_request",
            "{line}"
        );
    }
    let (_, rest) = client.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
}

#[tokio::test]
async fn a_crash_fails_the_request_in_flight_and_the_next_one_reaches_a_reinitialized_server() {
    let mut client = Client::start(Bridge::builder().upstream(echo()).build().expect("bridge"));
    client.initialize().await;
    let first_pid = text(&client.call(1, "pid", json!({})).await).to_owned();
    let crashed = client.call(2, "crash", json!({})).await;
    assert_eq!(crashed["error"]["code"], -32001, "{crashed}");
    assert_eq!(crashed["error"]["data"]["reason"], "upstream_exited");
    assert!(
        crashed["error"]["data"]["upstream"]["message"]
            .as_str()
            .expect("message")
            .contains("exited with status 3"),
        "{crashed}"
    );
    let second_pid = text(&client.call(3, "pid", json!({})).await).to_owned();
    assert_ne!(first_pid, second_pid);
    // The new process saw the client's initialize and initialized notification, replayed.
    assert_eq!(text(&client.call(4, "inits", json!({})).await), "1 1");
    // Tools declare listChanged, prompts do not, resources say nothing.
    let changed: Vec<&str> = client
        .notes
        .iter()
        .filter_map(|n| n["method"].as_str())
        .collect();
    assert_eq!(changed, ["notifications/tools/list_changed"]);
    let (summary, _) = client.finish().await;
    assert_eq!(summary.connects, 2);
    assert_eq!(summary.reinitializations, 1);
}

#[tokio::test]
async fn a_restart_request_restarts_the_child_and_announces_list_changes() {
    let bridge = Bridge::builder().upstream(echo()).build().expect("bridge");
    let handle = bridge.restart_handle();
    let mut client = Client::start(bridge);
    client.initialize().await;
    let first_pid = text(&client.call(1, "pid", json!({})).await).to_owned();
    handle.restart();
    let note = client.recv().await;
    assert_eq!(note["method"], "notifications/tools/list_changed");
    let second_pid = text(&client.call(2, "pid", json!({})).await).to_owned();
    assert_ne!(first_pid, second_pid);
    assert_eq!(text(&client.call(3, "inits", json!({})).await), "1 1");
    client.finish().await;
}

#[tokio::test]
async fn a_server_that_appears_late_answers_the_held_initialize() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = dir.path().join("server");
    let bridge = Bridge::builder()
        .upstream(ChildUpstream::new([&server]).expect("argv"))
        .build()
        .expect("bridge");
    let mut client = Client::start(bridge);
    let target = echo_server();
    let place = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        std::os::unix::fs::symlink(target, server).expect("symlink");
    });
    let init = client.initialize().await;
    assert_eq!(
        init["result"]["serverInfo"]["name"], "echo-server",
        "{init}"
    );
    place.await.expect("placed");
    assert_eq!(
        text(&client.call(1, "echo", json!({ "text": "late" })).await),
        "late"
    );
    let (summary, _) = client.finish().await;
    assert_eq!(summary.connects, 1);
}

/// Never reachable.
#[derive(Debug)]
struct Down;

impl Upstream for Down {
    fn describe(&self) -> String {
        "nowhere".to_owned()
    }

    fn connect(&self) -> BoxFuture<'_, Result<Link, Error>> {
        Box::pin(async { Err(Error::unreachable("nowhere", "connection refused")) })
    }
}

#[tokio::test]
async fn the_hold_buffer_is_bounded_and_held_requests_expire_at_the_deadline() {
    let bridge = Bridge::builder()
        .upstream(Down)
        .buffer_messages(2)
        .restart_deadline(Duration::from_millis(300))
        .build()
        .expect("bridge");
    let mut client = Client::start(bridge);
    for id in 1..=3 {
        client
            .send(json!({ "jsonrpc": "2.0", "id": id, "method": "ping" }))
            .await;
    }
    client
        .send(json!({ "jsonrpc": "2.0", "method": "notifications/progress" }))
        .await;
    let full = client.recv().await;
    assert_eq!(full["id"], 3, "{full}");
    assert_eq!(full["error"]["code"], -32002);
    assert_eq!(full["error"]["data"]["reason"], "buffer_full");
    let mut expired = [client.recv().await, client.recv().await];
    expired.sort_by_key(|e| e["id"].as_u64());
    for (error, id) in expired.iter().zip([1, 2]) {
        assert_eq!(error["id"], id, "{error}");
        assert_eq!(error["error"]["code"], -32003);
        assert_eq!(error["error"]["data"]["reason"], "restart_deadline");
    }
    // After the deadline the bridge keeps trying; a new request is held again, with its own deadline.
    client
        .send(json!({ "jsonrpc": "2.0", "id": 4, "method": "ping" }))
        .await;
    let (summary, rest) = client.finish().await;
    assert_eq!(summary.connects, 0);
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], 4);
    assert_eq!(rest[0]["error"]["data"]["reason"], "restart_deadline");
}

#[tokio::test]
async fn a_request_held_when_the_client_leaves_says_why_the_upstream_was_unreachable() {
    let mut client = Client::start(Bridge::builder().upstream(Down).build().expect("bridge"));
    client
        .send(json!({ "jsonrpc": "2.0", "id": "last", "method": "ping" }))
        .await;
    let (_, rest) = client.finish().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], "last");
    assert_eq!(rest[0]["error"]["code"], -32000);
    assert_eq!(rest[0]["error"]["data"]["reason"], "upstream_unreachable");
    assert_eq!(
        rest[0]["error"]["data"]["upstream"]["message"],
        "nowhere is unreachable: connection refused"
    );
}

#[tokio::test]
async fn stdin_ending_waits_for_answers_in_flight() {
    let mut client = Client::start(Bridge::builder().upstream(echo()).build().expect("bridge"));
    client.initialize().await;
    client
        .send(json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": { "name": "sleep", "arguments": { "ms": 300 } } }))
        .await;
    let (_, rest) = client.finish().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], 9);
    assert_eq!(text(&rest[0]), "slept");
}

#[tokio::test]
async fn a_shutdown_signal_ends_the_session_like_the_end_of_stdin() {
    let (signal, wait) = tokio::sync::oneshot::channel::<()>();
    // The tap tells when the bridge has taken the request, so the signal comes after it.
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel();
    let bridge = Bridge::builder()
        .upstream(echo())
        .tap(move |event: TapEvent| {
            let _ = seen_tx.send(event);
        })
        .shutdown_on(async move {
            let _ = wait.await;
        })
        .build()
        .expect("bridge");
    let mut client = Client::start(bridge);
    client.initialize().await;
    client
        .send(json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": { "name": "sleep", "arguments": { "ms": 200 } } }))
        .await;
    loop {
        let event = seen_rx.recv().await.expect("the tap saw the request");
        let value: Value = serde_json::from_slice(&event.frame).expect("json");
        if event.direction == Direction::FromClient && value["id"] == 5 {
            break;
        }
    }
    signal.send(()).expect("signal");
    // stdin stays open: the signal alone ends the session, after the answer in flight.
    let (summary, rest) = client.ended().await;
    assert_eq!(summary.connects, 1);
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(text(&rest[0]), "slept");
}

#[tokio::test]
async fn the_tap_sees_both_directions_in_order() {
    let seen: Arc<Mutex<Vec<TapEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let bridge = Bridge::builder()
        .upstream(echo())
        .tap(move |event: TapEvent| sink.lock().expect("lock").push(event))
        .build()
        .expect("bridge");
    let mut client = Client::start(bridge);
    client.initialize().await;
    client.call(1, "echo", json!({ "text": "tapped" })).await;
    client.send_raw(b"nope\n").await;
    client.recv().await;
    let (summary, _) = client.finish().await;
    assert_eq!(summary.tap_dropped, 0);
    let events = seen.lock().expect("lock").clone();
    let summary: Vec<(Direction, String)> = events
        .iter()
        .map(|e| {
            let v: Value = serde_json::from_slice(&e.frame).expect("json");
            let what = v["method"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| v["error"]["data"]["reason"].as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("answer {}", v["id"]));
            (e.direction, what)
        })
        .collect();
    assert_eq!(
        summary,
        [
            (Direction::FromClient, "initialize".to_owned()),
            (Direction::ToClient, "answer 0".to_owned()),
            (
                Direction::FromClient,
                "notifications/initialized".to_owned()
            ),
            (Direction::FromClient, "tools/call".to_owned()),
            (Direction::ToClient, "answer 1".to_owned()),
            (Direction::ToClient, "parse_error".to_owned()),
        ]
    );
    assert!(events.windows(2).all(|w| w[0].at <= w[1].at));
}

#[tokio::test]
async fn run_returns_after_a_slow_tap_has_seen_every_frame() {
    let seen: Arc<Mutex<Vec<TapEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let bridge = Bridge::builder()
        .upstream(echo())
        .tap(move |event: TapEvent| {
            std::thread::sleep(Duration::from_millis(30));
            sink.lock().expect("lock").push(event);
        })
        .build()
        .expect("bridge");
    let mut client = Client::start(bridge);
    client.initialize().await;
    for id in 1..=5 {
        client
            .call(id, "echo", json!({ "text": id.to_string() }))
            .await;
    }
    let (summary, _) = client.finish().await;
    assert_eq!(summary.tap_dropped, 0);
    // initialize, its answer, notifications/initialized, then five calls and their answers.
    let events = seen.lock().expect("lock").clone();
    assert_eq!(events.len(), 13, "the tap had seen {} frames", events.len());
    let last: Value = serde_json::from_slice(&events[12].frame).expect("json");
    assert_eq!(
        (events[12].direction, &last["id"]),
        (Direction::ToClient, &json!(5))
    );
}

#[tokio::test]
async fn a_slow_tap_loses_frames_not_the_session() {
    let bridge = Bridge::builder()
        .upstream(echo())
        .tap_with_capacity(
            |_: TapEvent| std::thread::sleep(Duration::from_millis(200)),
            1,
        )
        .build()
        .expect("bridge");
    let mut client = Client::start(bridge);
    client.initialize().await;
    for id in 1..=20 {
        let answer = client
            .call(id, "echo", json!({ "text": id.to_string() }))
            .await;
        assert_eq!(text(&answer), id.to_string());
    }
    let (summary, _) = client.finish().await;
    assert!(summary.tap_dropped > 0, "{summary:?}");
}

#[test]
fn public_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Bridge>();
    check::<ChildUpstream>();
    check::<Error>();
    check::<calltape_stdio_bridge::RestartHandle>();
    check::<calltape_stdio_bridge::Summary>();
}

//! `ServerBuilder` under hostile input: requests that are not valid JSON-RPC, connections that never send
//! their headers, too many connections or sessions, and GET streams whose client does not read.

use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::serve::{
    ACCEPT_BOTH, JSON, Session, Target, body_text, child, next_message, raw, start,
};
use calltape_stdio_bridge::serve::ServerBuilder;

/// Bodies that are JSON but not a request to forward: one `-32600` answer each, with `id: null`.
const INVALID_BODIES: &[&str] = &[
    "[]",
    "[1]",
    r#"[{"jsonrpc":"2.0","id":5,"method":"ping"},"x"]"#,
    r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
    r#"[{"jsonrpc":"2.0","id":false,"method":"ping"}]"#,
];

#[tokio::test]
async fn invalid_requests_get_one_error_with_a_null_id() {
    let running = start(ServerBuilder::new(child())).await;
    let mut session = Session::new(running.target.clone(), None);
    session.initialize().await;
    let id = session.id.clone().expect("initialized");
    for body in INVALID_BODIES {
        let res = raw(
            &running.target,
            Method::POST,
            "/mcp",
            &[
                ACCEPT_BOTH,
                JSON,
                ("mcp-session-id", &id),
                ("mcp-protocol-version", "2025-06-18"),
            ],
            body.as_bytes(),
        )
        .await;
        let status = res.status();
        let text = body_text(res).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {text}");
        let answer: Value = serde_json::from_str(&text).expect("one JSON answer");
        assert_eq!(answer["id"], Value::Null, "{body}: {text}");
        assert_eq!(answer["error"]["code"], -32600, "{body}: {text}");
    }
    // Nothing of them reached the server: the session goes on with its own ids.
    let echoed = session
        .call_text(json!(9), "echo", json!({"text": "on"}))
        .await;
    assert_eq!(echoed, "on");
    running.stop().await;
}

/// A connection that sent `head` and nothing more; it is read until the server closes it.
async fn half_sent(target: &Target, head: &str) -> tokio::net::TcpStream {
    let Target::Tcp(addr) = target else {
        panic!("a TCP server")
    };
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write");
    stream
}

/// Whether the server closed `stream` within 20 s (a read returns the end or a reset).
pub(crate) async fn closed_by_server(stream: &mut tokio::net::TcpStream) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            // A 408 or another answer before the end is fine.
            Ok(Ok(_)) => {}
        }
    }
}

/// Whether `stream` is still open: nothing to read and no end for a moment.
async fn still_open(stream: &mut tokio::net::TcpStream) -> bool {
    let mut buf = [0u8; 1];
    tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf))
        .await
        .is_err()
}

const HALF: &str = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json";

#[tokio::test]
async fn a_connection_that_does_not_send_its_headers_in_time_is_closed() {
    let running =
        start(ServerBuilder::new(child()).header_read_timeout(Duration::from_millis(300))).await;
    let mut slow = half_sent(&running.target, HALF).await;
    let mut silent = half_sent(&running.target, "").await;
    assert!(closed_by_server(&mut slow).await, "a half-sent request");
    assert!(
        closed_by_server(&mut silent).await,
        "a connection that sent nothing"
    );
    // A real client is served as before.
    let mut session = Session::new(running.target.clone(), None);
    session.initialize().await;
    let echoed = session
        .call_text(json!(1), "echo", json!({"text": "on"}))
        .await;
    assert_eq!(echoed, "on");
    running.stop().await;
}

#[tokio::test]
async fn past_the_connection_cap_the_oldest_connection_waiting_for_headers_goes_first() {
    let running = start(ServerBuilder::new(child()).max_connections(8)).await;
    let mut waiting = Vec::new();
    for _ in 0..8 {
        waiting.push(half_sent(&running.target, HALF).await);
    }
    // A GET stream is busy, not waiting for headers: it is never the one to go.
    let mut session = Session::new(running.target.clone(), None);
    session.initialize().await;
    let mut stream = session.stream().await;
    // A new connection past the cap closes the oldest one still waiting for its headers (the client's
    // connections close after each exchange, so the cap is reached only now and then).
    let echoed = session
        .call_text(json!(1), "echo", json!({"text": "on"}))
        .await;
    assert_eq!(echoed, "on");
    assert!(
        closed_by_server(&mut waiting[0]).await,
        "the oldest went first"
    );
    assert!(
        still_open(&mut waiting[7]).await,
        "the newest is still open"
    );
    let _ = session.call_text(json!(2), "notify", json!({})).await;
    let note = next_message(&mut stream).await;
    assert!(
        note["method"].is_string(),
        "the GET stream is still open: {note}"
    );
    running.stop().await;
}

#[tokio::test]
async fn an_initialize_past_the_session_cap_gets_503_and_says_why() {
    let running = start(ServerBuilder::new(child()).max_sessions(3)).await;
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let mut session = Session::new(running.target.clone(), None);
        session.initialize().await;
        sessions.push(session);
    }
    let extra = Session::new(running.target.clone(), None);
    let reply = extra
        .post(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(reply.headers.get("mcp-session-id").is_none());
    let text = reply.text.clone();
    let answer: Value = serde_json::from_str(&text).expect("a JSON-RPC error");
    assert_eq!(answer["id"], 0, "{text}");
    assert_eq!(answer["error"]["code"], -32005, "{text}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("3 sessions"), "{text}");
    // The sessions it holds go on; once one ends, a new one gets its place.
    let echoed = sessions[0]
        .call_text(json!(1), "echo", json!({"text": "on"}))
        .await;
    assert_eq!(echoed, "on");
    let ended = sessions.pop().expect("a session");
    let id = ended.id.clone().expect("initialized");
    let res = raw(
        &running.target,
        Method::DELETE,
        "/mcp",
        &[("mcp-session-id", &id)],
        b"",
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let mut again = Session::new(running.target.clone(), None);
    again.initialize().await;
    running.stop().await;
}

/// The events of a GET stream read from `stream` until `until` says stop or the server closes it:
/// each event's id and its log message's `logger`.
async fn read_events(
    stream: &mut tokio::net::TcpStream,
    until: impl Fn(&str) -> bool,
) -> (Vec<(u64, String)>, bool) {
    let mut text = String::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut events = Vec::new();
    loop {
        let n = match tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buf)).await {
            Err(_) => return (events, false),
            Ok(Ok(0) | Err(_)) => return (events, true),
            Ok(Ok(n)) => n,
        };
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
        // Each event is one chunk of the body: `id: N`, then its data line.
        while let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            let id = event
                .lines()
                .find_map(|l| l.strip_prefix("id: "))
                .and_then(|v| v.trim().parse::<u64>().ok());
            let data = event.lines().find_map(|l| l.strip_prefix("data: "));
            if let (Some(id), Some(data)) = (id, data) {
                let message: Value = serde_json::from_str(data).expect("a JSON event");
                let logger = message["params"]["logger"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                let stop = until(&logger);
                events.push((id, logger));
                if stop {
                    return (events, false);
                }
            }
        }
    }
}

fn get_stream_request(session: &str, last_event: Option<u64>) -> String {
    let resume = last_event
        .map(|id| format!("Last-Event-ID: {id}\r\n"))
        .unwrap_or_default();
    format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n{resume}\r\n"
    )
}

#[tokio::test]
async fn a_get_stream_whose_client_does_not_read_is_closed_and_resumes_from_what_is_retained() {
    let running = start(ServerBuilder::new(child())).await;
    let mut reader = Session::new(running.target.clone(), None);
    reader.initialize().await;
    let id = reader.id.clone().expect("initialized");
    // The reader's GET stream, which it does not read while the server floods it.
    let mut stream = half_sent(&running.target, &get_stream_request(&id, None)).await;
    let mut caller = Session::new(running.target.clone(), None);
    caller.initialize().await;
    let flooded = caller
        .call_text(json!(1), "flood", json!({"count": 3000, "size": 8192}))
        .await;
    assert_eq!(flooded, "flooded");
    // The server closed the stream once it fell behind: what it wrote before is all there is.
    let (got, closed) = read_events(&mut stream, |_| false).await;
    assert!(closed, "the stream that fell behind was closed");
    assert!(got.len() < 3000, "{} events arrived", got.len());
    let ids: Vec<u64> = got.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
    let last = *ids.last().expect("some events arrived");

    // Resuming after the last event it got: the retained events come, the older ones are dropped.
    let mut resumed = half_sent(&running.target, &get_stream_request(&id, Some(last))).await;
    let (again, closed) = read_events(&mut resumed, |logger| logger == "2999").await;
    assert!(!closed);
    let again: Vec<u64> = again.iter().map(|(id, _)| *id).collect();
    let final_id = *again.last().expect("the retained events");
    assert_eq!(final_id, 3000);
    assert_eq!(again[0], (last + 1).max(final_id - 1023), "{last}");
    assert_eq!(again, (again[0]..=final_id).collect::<Vec<_>>());
    // The server is as responsive as before.
    let echoed = caller
        .call_text(json!(2), "echo", json!({"text": "on"}))
        .await;
    assert_eq!(echoed, "on");
    running.stop().await;
}

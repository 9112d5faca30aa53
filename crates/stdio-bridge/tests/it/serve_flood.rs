//! One client floods `serve`, with its default limits: 5,000 requests in one batch that it never
//! reads the answers of, a listen for 5,000 resources, more listens than a session holds, more
//! stateless requests than the server holds sessions, JSON answers past 16 MiB. Throughout, another
//! session's `ping` is answered. The child (`tests/fixtures/mux_server.rs`) answers on one thread and reads
//! nothing while its stdout is full, as many small servers do.

use std::time::Duration;

use calltape_stdio_bridge::{
    ANSWERS_TOO_LARGE, MAX_LISTENS, MAX_SUBSCRIPTIONS, TOO_MANY_LISTENS, TOO_MANY_SESSIONS,
    TOO_MANY_URIS, serve::ServerBuilder,
};
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{
    serve::{
        ACCEPT_BOTH, JSON, Running, Session, Target, body_text, child, messages_of, raw, start,
    },
    serve_limits::closed_by_server,
};

/// The requests of the flood, and the resources of the big listen.
const FLOOD: usize = 5000;

/// The `_meta` of a 2026-07-28 request.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "flood", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// The headers of a stateless request of `method`.
fn stateless(method: &str) -> Vec<(&str, &str)> {
    vec![
        ACCEPT_BOTH,
        JSON,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ]
}

/// A stateless request (or batch) of `method`, and the response, its body unread.
async fn post_stateless(target: &Target, method: &str, body: &Value) -> hyper::Response<Incoming> {
    let body = serde_json::to_vec(body).unwrap();
    raw(target, Method::POST, "/mcp", &stateless(method), &body).await
}

/// A `subscriptions/listen` for `uris` and tools list changes.
fn listen(id: u64, uris: usize) -> Value {
    let uris: Vec<String> = (0..uris).map(|n| format!("test://flood/{n}")).collect();
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": true, "resourceSubscriptions": uris},
        "_meta": meta()}})
}

/// A POST on a connection of its own whose answers nobody reads, once its head came (the server
/// took every message of it); the connection stays open.
async fn unread_post(
    target: &Target,
    headers: &[(&str, String)],
    body: &[u8],
) -> tokio::net::TcpStream {
    let Target::Tcp(addr) = target else {
        panic!("a TCP server")
    };
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(body).await.expect("write");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = tokio::time::timeout(Duration::from_secs(60), stream.read(&mut byte))
            .await
            .expect("the head of the answer within 60 s")
            .expect("read");
        assert_eq!(read, 1, "the server closed the connection");
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    stream
}

/// `session`'s ping, answered: a minute at most, so that a server that hangs fails the test.
async fn ping(session: &Session, id: u64) {
    let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    let reply = tokio::time::timeout(Duration::from_secs(60), session.post(&ping))
        .await
        .expect("the other session's ping was not answered within 60 s");
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(
        reply.answer(&json!(id))["result"],
        json!({}),
        "{}",
        reply.text
    );
}

/// The messages of an event stream, read until `until` takes one (a minute at most); the stream
/// stays open.
async fn events_until(body: &mut Incoming, mut until: impl FnMut(&Value) -> bool) -> Vec<Value> {
    let mut text = String::new();
    let mut seen = Vec::new();
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(60), body.frame())
            .await
            .expect("the stream went quiet for 60 s");
        let Some(Ok(frame)) = frame else {
            panic!("the stream ended before the message awaited: {seen:?}");
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        text.push_str(&String::from_utf8_lossy(&data));
        while let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            for message in messages_of(&sse(), &event) {
                let done = until(&message);
                seen.push(message);
                if done {
                    return seen;
                }
            }
        }
    }
}

fn sse() -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    headers.insert("content-type", "text/event-stream".parse().unwrap());
    headers
}

#[tokio::test]
async fn a_batch_of_5000_requests_whose_answers_are_never_read_leaves_others_served() {
    let (running, flooder) = with_a_session(ServerBuilder::new(child())).await;
    let mut other = Session::new(running.target.clone(), None);
    other.initialize().await;
    // The flooder reads its GET stream, where what its POST's stream could not take goes.
    let mut stream = flooder.stream().await;
    let batch: Vec<Value> = (0..FLOOD)
        .map(|n| json!({"jsonrpc": "2.0", "id": n, "method": "tools/list"}))
        .collect();
    let session = flooder.id.clone().expect("initialized");
    let headers = [
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-06-18".to_owned()),
    ];
    let mut flood = unread_post(
        &running.target,
        &headers,
        &serde_json::to_vec(&batch).unwrap(),
    )
    .await;
    // The child's answers to the flood fill its stdout while this ping waits its turn.
    ping(&other, 1).await;
    // Nobody reads the flood's answers: past 16 MiB unread its stream is closed, and the answers
    // after that reach the session's GET stream.
    let moved = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(message) = stream.recv().await {
            if message["result"]["tools"].is_array() {
                return message["id"].as_u64();
            }
        }
        None
    })
    .await
    .expect("no answer of the flood reached the GET stream within 60 s");
    assert!(moved.is_some_and(|id| id > 0), "{moved:?}");
    drop(stream);
    assert!(
        closed_by_server(&mut flood).await,
        "the flood's stream is still open"
    );
    // The other session is served in its turn; the flooder's own requests wait behind its batch.
    ping(&other, 2).await;
    running.stop().await;
}

/// A server with default options, and a session of it.
async fn with_a_session(serve: ServerBuilder) -> (Running, Session) {
    let running = start(serve).await;
    let mut session = Session::new(running.target.clone(), None);
    session.initialize().await;
    (running, session)
}

#[tokio::test]
async fn a_listen_for_5000_resources_is_refused_and_others_are_served() {
    let (running, other) = with_a_session(ServerBuilder::new(child())).await;
    let res = tokio::time::timeout(
        Duration::from_secs(60),
        post_stateless(&running.target, "subscriptions/listen", &listen(1, FLOOD)),
    )
    .await
    .expect("no answer to the listen within 60 s");
    let res_headers = res.headers().clone();
    let answers = messages_of(&res_headers, &body_text(res).await);
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["id"], 1, "{answers:?}");
    assert_eq!(answers[0]["error"]["code"], TOO_MANY_URIS, "{answers:?}");
    assert_eq!(
        answers[0]["error"]["data"],
        json!({"reason": "too_many_uris", "limit": MAX_SUBSCRIPTIONS})
    );
    ping(&other, 1).await;

    // As many resources as a listen may name are subscribed to, all at once, and acknowledged.
    let listen = listen(2, MAX_SUBSCRIPTIONS);
    let res = post_stateless(&running.target, "subscriptions/listen", &listen).await;
    assert_eq!(res.status(), StatusCode::OK);
    let seen = events_until(&mut res.into_body(), |m| {
        m["method"] == "notifications/subscriptions/acknowledged"
    })
    .await;
    let ack = seen.last().expect("the acknowledgement");
    let honored = &ack["params"]["notifications"]["resourceSubscriptions"];
    assert_eq!(
        honored.as_array().map(Vec::len),
        Some(MAX_SUBSCRIPTIONS),
        "{ack}"
    );
    ping(&other, 2).await;
    running.stop().await;
}

#[tokio::test]
async fn a_session_holds_at_most_max_listens_open() {
    let running = start(ServerBuilder::new(child())).await;
    let batch: Vec<Value> = (1..=MAX_LISTENS as u64 + 1)
        .map(|id| listen(id, 1))
        .collect();
    let res = post_stateless(
        &running.target,
        "subscriptions/listen",
        &Value::Array(batch),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let last = MAX_LISTENS as u64 + 1;
    // The refusal and an acknowledgement for each listen before it, in whatever order they come.
    let mut awaited = MAX_LISTENS + 1;
    let seen = events_until(&mut res.into_body(), |_| {
        awaited -= 1;
        awaited == 0
    })
    .await;
    let refused = seen.iter().find(|m| m["id"] == last).expect("the refusal");
    assert_eq!(refused["error"]["code"], TOO_MANY_LISTENS, "{refused}");
    assert_eq!(
        refused["error"]["data"],
        json!({"reason": "too_many_listens", "limit": MAX_LISTENS})
    );
    // Every listen before it was taken: each acknowledged on the stream, none refused.
    let acked = seen
        .iter()
        .filter(|m| m["method"] == "notifications/subscriptions/acknowledged")
        .count();
    assert_eq!(acked, MAX_LISTENS, "{seen:?}");
    running.stop().await;
}

#[tokio::test]
async fn stateless_requests_count_as_sessions_while_they_are_answered() {
    let (running, session) = with_a_session(ServerBuilder::new(child()).max_sessions(2)).await;
    let list =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta()}});
    // One at a time, stateless requests take the place left and give it back.
    for _ in 0..3 {
        let res = post_stateless(&running.target, "tools/list", &list).await;
        assert_eq!(res.status(), StatusCode::OK);
    }
    // A listen holds its place while its stream is open: the next request past the limit is refused,
    // with its own id.
    let open = post_stateless(&running.target, "subscriptions/listen", &listen(1, 1)).await;
    let mut stream = open.into_body();
    events_until(&mut stream, |m| {
        m["method"] == "notifications/subscriptions/acknowledged"
    })
    .await;
    let res = post_stateless(&running.target, "tools/list", &list).await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let refused: Value = serde_json::from_str(&body_text(res).await).expect("a JSON-RPC error");
    assert_eq!(refused["id"], 7, "{refused}");
    assert_eq!(refused["error"]["code"], TOO_MANY_SESSIONS, "{refused}");
    assert_eq!(refused["error"]["data"]["reason"], "too_many_sessions");
    let late = Session::new(running.target.clone(), None);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "late", "version": "1"}}});
    assert_eq!(
        late.post(&init).await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    ping(&session, 1).await;
    drop(stream);
    running.stop().await;
}

#[tokio::test]
async fn json_answers_past_16_mib_are_replaced_by_errors_with_their_ids() {
    let (running, session) = with_a_session(ServerBuilder::new(child()).json_response(true)).await;
    // Each answer holds 13 tools of 2 KiB: 1,000 of them are over 26 MB.
    let batch: Vec<Value> = (0..1000)
        .map(|n| json!({"jsonrpc": "2.0", "id": n, "method": "tools/list"}))
        .collect();
    let reply = session.post(&Value::Array(batch)).await;
    assert_eq!(reply.status, StatusCode::OK);
    // The answers that fit, then an error of a few hundred bytes for each one that did not.
    assert!(reply.text.len() < 17 << 20, "{} bytes", reply.text.len());
    assert_eq!(reply.messages.len(), 1000);
    let listed = reply
        .messages
        .iter()
        .filter(|m| m["result"]["tools"].is_array())
        .count();
    let refused: Vec<&Value> = reply
        .messages
        .iter()
        .filter(|m| m["error"]["code"] == ANSWERS_TOO_LARGE)
        .collect();
    assert!(listed > 500, "{listed} answers fit");
    assert_eq!(listed + refused.len(), 1000);
    assert_eq!(
        refused[0]["error"]["data"],
        json!({"reason": "answers_too_large", "limit": 16 << 20})
    );
    let mut ids: Vec<u64> = reply
        .messages
        .iter()
        .map(|m| m["id"].as_u64().expect("an id"))
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..1000).collect::<Vec<_>>());
    running.stop().await;
}

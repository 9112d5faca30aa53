//! The Streamable HTTP and Unix-socket upstreams against a fake server that records what it receives.

#[path = "support/fake_http.rs"]
mod fake_http;

use std::time::Duration;

use calltape_stdio_bridge::{
    ExtraHeaders, HttpUpstream, Link, UnixUpstream, Upstream, UpstreamEvent,
};
use fake_http::{End, FakeServer, Reply, Seen, State};
use http::Method;
use serde_json::{Value, json};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn request(id: u64, method: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}).to_string()
}

fn headers() -> ExtraHeaders {
    let mut headers = ExtraHeaders::new();
    headers
        .push_line("Authorization: Bearer test-token")
        .unwrap();
    headers.push_line("X-Team: tools").unwrap();
    headers
}

fn no_handler(_: &Seen, _: &mut State) -> Option<Reply> {
    None
}

async fn send(link: &Link, frame: &str) {
    link.outgoing
        .send(bytes::Bytes::copy_from_slice(frame.as_bytes()))
        .await
        .unwrap();
}

async fn next(link: &mut Link) -> UpstreamEvent {
    tokio::time::timeout(Duration::from_secs(20), link.events.recv())
        .await
        .expect("no event from the upstream in time")
        .expect("the upstream's event channel closed")
}

async fn next_message(link: &mut Link) -> Value {
    match next(link).await {
        UpstreamEvent::Message(frame) => {
            assert!(
                !frame.contains(&b'\n'),
                "a frame holds a line break: {frame:?}"
            );
            serde_json::from_slice(&frame).unwrap()
        }
        other => panic!("expected a message, got {other:?}"),
    }
}

/// initialize + initialized through `link`, returning the initialize answer.
async fn handshake(link: &mut Link) -> Value {
    send(link, INITIALIZE).await;
    let answer = next_message(link).await;
    send(link, INITIALIZED).await;
    answer
}

fn posts_of(seen: &[Seen], rpc: &str) -> Vec<Seen> {
    seen.iter()
        .filter(|s| s.method == Method::POST && s.rpc() == rpc)
        .cloned()
        .collect()
}

#[tokio::test]
async fn the_session_id_and_version_follow_initialize_on_every_request() {
    let server = FakeServer::tcp(no_handler).await;
    server.with_state(|s| s.gets.push_back(Reply::sse(&[": open\n\n"], End::Hold)));
    let upstream = HttpUpstream::new(&server.url(), headers()).unwrap();
    let mut link = upstream.connect().await.unwrap();

    let answer = handshake(&mut link).await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");
    send(&link, &request(1, "tools/list")).await;
    let listed = next_message(&mut link).await;
    assert_eq!(
        listed,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"method": "tools/list", "params": {}}})
    );
    let get = server.wait_for(1, |s| s.method == Method::GET).await;
    (link.close)().await;
    let delete = server.wait_for(1, |s| s.method == Method::DELETE).await;

    let seen = server.seen();
    let init = &posts_of(&seen, "initialize")[0];
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None);
    for later in [
        &posts_of(&seen, "notifications/initialized")[0],
        &posts_of(&seen, "tools/list")[0],
        &get[0],
        &delete[0],
    ] {
        assert_eq!(
            later.header("mcp-session-id"),
            Some("session-1"),
            "{} {}",
            later.method,
            later.body
        );
        assert_eq!(
            later.header("mcp-protocol-version"),
            Some("2025-06-18"),
            "{}",
            later.method
        );
    }
    for every in &seen {
        assert_eq!(every.path, "/mcp");
        assert_eq!(every.header("authorization"), Some("Bearer test-token"));
        assert_eq!(every.header("x-team"), Some("tools"));
    }
    for post in seen.iter().filter(|s| s.method == Method::POST) {
        assert_eq!(
            post.header("accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(post.header("content-type"), Some("application/json"));
    }
    assert_eq!(get[0].header("accept"), Some("text/event-stream"));
    assert_eq!(get[0].header("last-event-id"), None);
    // The GET stream opens only once the handshake is over.
    let order: Vec<String> = seen
        .iter()
        .map(|s| format!("{} {}", s.method, s.rpc()))
        .collect();
    let initialized_at = order
        .iter()
        .position(|o| o == "POST notifications/initialized")
        .unwrap();
    let get_at = order.iter().position(|o| o.starts_with("GET")).unwrap();
    assert!(initialized_at < get_at, "{order:?}");
}

#[tokio::test]
async fn event_stream_answers_are_parsed_and_put_on_one_line() {
    let server = FakeServer::tcp(|seen, state| {
        if seen.rpc() != "tools/call" {
            return fake_http::standard(seen, state).into();
        }
        Some(Reply::sse(
            &[
                ": keep-alive comment\r\n\r\n",
                "id: e1\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",",
                "\"params\":{\"progress\":1}}\r",
                "\n\r\nretry: 100\nevent: other\ndata: not json, ignored\n\n",
                "id: e2\ndata: {\"jsonrpc\":\"2.0\",\ndata:  \"id\":7,\ndata: \"result\":{\"text\":\"line\\nbreak\"}}\n\n",
            ],
            End::Close,
        ))
    })
    .await;
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    send(&link, &request(7, "tools/call")).await;
    assert_eq!(
        next_message(&mut link).await,
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}})
    );
    assert_eq!(
        next_message(&mut link).await,
        json!({"jsonrpc": "2.0", "id": 7, "result": {"text": "line\nbreak"}})
    );
}

#[tokio::test]
async fn an_initialize_answered_with_an_event_stream_sets_up_the_session() {
    let server = FakeServer::tcp(no_handler).await;
    server.with_state(|s| {
        s.sse = true;
        s.version = "2025-11-25".into();
    });
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    let answer = handshake(&mut link).await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-11-25");
    send(&link, &request(1, "prompts/list")).await;
    assert_eq!(next_message(&mut link).await["id"], 1);
    let post = &posts_of(&server.seen(), "prompts/list")[0];
    assert_eq!(post.header("mcp-session-id"), Some("session-1"));
    assert_eq!(post.header("mcp-protocol-version"), Some("2025-11-25"));
}

#[tokio::test]
async fn the_get_stream_is_resumed_with_the_last_event_id() {
    let server = FakeServer::tcp(no_handler).await;
    server.with_state(|s| {
        s.gets.push_back(Reply::sse(
            &[
                "retry: 10\nid: ev-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
            ],
            End::Break,
        ));
        s.gets.push_back(Reply::sse(
            &["id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}\n\n"],
            End::Hold,
        ));
    });
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    assert_eq!(
        next_message(&mut link).await["method"],
        "notifications/tools/list_changed"
    );
    assert_eq!(
        next_message(&mut link).await["method"],
        "notifications/resources/list_changed"
    );
    let gets = server.wait_for(2, |s| s.method == Method::GET).await;
    assert_eq!(gets[0].header("last-event-id"), None);
    assert_eq!(gets[1].header("last-event-id"), Some("ev-1"));
    assert_eq!(gets[1].header("mcp-session-id"), Some("session-1"));
}

#[tokio::test]
async fn a_404_on_a_request_with_a_session_reports_the_session_expired() {
    let server = FakeServer::tcp(no_handler).await;
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    server
        .wait_for(1, |s| s.rpc() == "notifications/initialized")
        .await;
    // The server restarts and forgets every session.
    server.with_state(|s| s.current = None);
    let call = request(5, "tools/call");
    send(&link, &call).await;
    match next(&mut link).await {
        UpstreamEvent::SessionExpired { frame } => assert_eq!(&frame[..], call.as_bytes()),
        other => panic!("expected SessionExpired, got {other:?}"),
    }
    // The bridge re-initializes: the new initialize carries no session id, later requests the new one.
    handshake(&mut link).await;
    send(&link, &call).await;
    assert_eq!(next_message(&mut link).await["id"], 5);
    let calls = posts_of(&server.seen(), "tools/call");
    assert_eq!(calls[0].header("mcp-session-id"), Some("session-1"));
    assert_eq!(calls[1].header("mcp-session-id"), Some("session-2"));
    let inits = posts_of(&server.seen(), "initialize");
    assert_eq!(inits.len(), 2);
    assert!(inits.iter().all(|i| i.header("mcp-session-id").is_none()));
}

#[tokio::test]
async fn a_session_a_new_initialize_replaces_is_ended_with_a_delete() {
    let server = FakeServer::tcp(no_handler).await;
    let upstream = HttpUpstream::new(&server.url(), headers()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    // The session is reopened on the same link (as the era adapter does for a client of its own).
    handshake(&mut link).await;
    let deletes = server.wait_for(1, |s| s.method == Method::DELETE).await;
    assert_eq!(deletes[0].header("mcp-session-id"), Some("session-1"));
    assert_eq!(
        deletes[0].header("mcp-protocol-version"),
        Some("2025-06-18")
    );
    send(&link, &request(1, "tools/list")).await;
    next_message(&mut link).await;
    let listed = &posts_of(&server.seen(), "tools/list")[0];
    assert_eq!(listed.header("mcp-session-id"), Some("session-2"));
    let deleted: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|s| s.method == Method::DELETE)
        .collect();
    assert_eq!(deleted.len(), 1, "the new session was not ended");
}

#[tokio::test]
async fn a_400_saying_the_session_id_is_invalid_reports_the_session_expired() {
    let server = FakeServer::tcp(|seen, state| {
        if seen.rpc() == "tools/list" && state.sessions == 1 {
            return Some(Reply::Plain {
                status: 400,
                headers: vec![("content-type".into(), "application/json".into())],
                body: r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#.into(),
            });
        }
        None
    })
    .await;
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    send(&link, &request(2, "tools/list")).await;
    assert!(matches!(
        next(&mut link).await,
        UpstreamEvent::SessionExpired { .. }
    ));
    // The id is forgotten: the next request (before re-initializing) goes without one.
    send(
        &link,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#,
    )
    .await;
    let cancelled = server
        .wait_for(1, |s| s.rpc() == "notifications/cancelled")
        .await;
    assert_eq!(cancelled[0].header("mcp-session-id"), None);
}

#[tokio::test]
async fn a_400_about_something_else_is_a_protocol_error_and_json_rpc_errors_pass_through() {
    let server = FakeServer::tcp(|seen, _| match seen.rpc().as_str() {
        "bad/params" => Some(Reply::status(400, "Bad Request: invalid JSON")),
        "rpc/error" => Some(Reply::Plain {
            status: 400,
            headers: vec![("content-type".into(), "application/json".into())],
            body:
                r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}}"#
                    .into(),
        }),
        "html/error" => Some(Reply::Plain {
            status: 502,
            headers: vec![("content-type".into(), "text/html".into())],
            body: "<html>\n<h1>Bad Gateway</h1>\n</html>".into(),
        }),
        "wrong/type" => Some(Reply::Plain {
            status: 200,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: "hello".into(),
        }),
        "bad/json" => Some(Reply::Plain {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: "{\"jsonrpc\":".into(),
        }),
        _ => None,
    })
    .await;
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;

    let cases = [
        (
            3,
            "bad/params",
            400,
            "upstream answered HTTP 400 Bad Request: Bad Request: invalid JSON",
        ),
        (
            5,
            "html/error",
            502,
            "upstream answered HTTP 502 Bad Gateway: <html> <h1>Bad Gateway</h1> </html>",
        ),
        (
            6,
            "wrong/type",
            200,
            "upstream answered HTTP 200 OK with content type text/plain, not application/json or text/event-stream",
        ),
        (
            7,
            "bad/json",
            200,
            "upstream answered HTTP 200 OK with a body that is not JSON-RPC ({\"jsonrpc\":)",
        ),
    ];
    for (id, method, status, message) in cases {
        let frame = request(id, method);
        send(&link, &frame).await;
        match next(&mut link).await {
            UpstreamEvent::ProtocolError {
                frame: f,
                status: s,
                message: m,
            } => {
                assert_eq!(&f[..], frame.as_bytes());
                assert_eq!(s, Some(status));
                assert_eq!(m, message);
            }
            other => panic!("{method}: expected a protocol error, got {other:?}"),
        }
    }
    send(&link, &request(4, "rpc/error")).await;
    assert_eq!(next_message(&mut link).await["error"]["code"], -32601);
}

#[tokio::test]
async fn redirects_are_refused_and_never_followed() {
    let server = FakeServer::tcp(|seen, state| {
        if seen.path == "/mcp" && seen.rpc() == "tools/list" {
            return Some(Reply::Plain {
                status: 307,
                headers: vec![("location".into(), "/elsewhere?token=abc".into())],
                body: String::new(),
            });
        }
        if seen.path != "/mcp" {
            return Some(fake_http::standard(seen, state));
        }
        None
    })
    .await;
    let upstream = HttpUpstream::new(&server.url(), headers()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    send(&link, &request(1, "tools/list")).await;
    match next(&mut link).await {
        UpstreamEvent::ProtocolError {
            status, message, ..
        } => {
            assert_eq!(status, Some(307));
            assert!(message.contains("redirects are refused"), "{message}");
            assert!(
                message.contains("/elsewhere") && !message.contains("token=abc"),
                "{message}"
            );
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    // Prove the link still works, then that nothing ever reached the redirect's target.
    send(&link, &request(2, "tools/list2")).await;
    assert_eq!(next_message(&mut link).await["id"], 2);
    assert!(
        server.seen().iter().all(|s| s.path == "/mcp"),
        "{:#?}",
        server.seen()
    );
}

#[tokio::test]
async fn an_endpoint_that_refuses_connections_is_unreachable_then_closes_the_link() {
    // A port nothing listens on.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let upstream = HttpUpstream::new(&format!("http://{free}/mcp"), ExtraHeaders::new()).unwrap();
    let err = upstream.connect().await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("http://{free}/mcp is unreachable: ")),
        "{err}"
    );

    let server = FakeServer::tcp(no_handler).await;
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    server
        .wait_for(1, |s| s.rpc() == "notifications/initialized")
        .await;
    server.stop();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let call = request(9, "tools/call");
    send(&link, &call).await;
    match next(&mut link).await {
        UpstreamEvent::Undelivered {
            frame,
            maybe_delivered,
            reason,
        } => {
            assert_eq!(&frame[..], call.as_bytes());
            assert!(!maybe_delivered, "{reason}");
        }
        other => panic!("expected Undelivered, got {other:?}"),
    }
    assert!(matches!(
        next(&mut link).await,
        UpstreamEvent::Closed { .. }
    ));
    assert!(upstream.connect().await.is_err());

    // The endpoint comes back on the same port and still knows the session: a new link carries on.
    let back = FakeServer::tcp_on(server.addr.unwrap(), no_handler).await;
    back.with_state(|s| {
        s.sessions = 1;
        s.current = Some("session-1".into());
    });
    let mut link = upstream.connect().await.unwrap();
    send(&link, &call).await;
    assert_eq!(next_message(&mut link).await["id"], 9);
    assert_eq!(
        posts_of(&back.seen(), "tools/call")[0].header("mcp-session-id"),
        Some("session-1")
    );
}

/// An endpoint that goes away while the client sends nothing is noticed by the session's GET stream:
/// the link closes, so the bridge connects again, as it does when a POST finds the endpoint gone.
#[tokio::test]
async fn an_endpoint_that_goes_away_closes_the_link_through_its_get_stream() {
    let server = FakeServer::tcp(no_handler).await;
    server.with_state(|s| s.gets.push_back(Reply::sse(&[], End::Hold)));
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    server.wait_for(1, |s| s.method == Method::GET).await;
    server.stop();
    match next(&mut link).await {
        UpstreamEvent::Closed { reason } => {
            assert!(reason.ends_with("refused the connection"), "{reason}");
        }
        other => panic!("expected Closed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_connection_dropped_after_sending_may_have_delivered() {
    let server = FakeServer::tcp(|seen, _| {
        (seen.rpc() == "tools/call").then(|| {
            Reply::sse(
                &["data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"],
                End::Break,
            )
        })
    })
    .await;
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    let call = request(3, "tools/call");
    send(&link, &call).await;
    assert_eq!(
        next_message(&mut link).await["method"],
        "notifications/progress"
    );
    match next(&mut link).await {
        UpstreamEvent::Undelivered {
            frame,
            maybe_delivered,
            reason,
        } => {
            assert_eq!(&frame[..], call.as_bytes());
            assert!(maybe_delivered, "{reason}");
        }
        other => panic!("expected Undelivered, got {other:?}"),
    }
}

#[tokio::test]
async fn stateless_requests_carry_the_2026_headers_and_no_session() {
    let server = FakeServer::tcp(no_handler).await;
    let upstream = HttpUpstream::new(&server.url(), headers()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let frames = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {}, "_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "café ☕", "_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "file:///tmp/a b.txt", "_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": " padded", "_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": meta}}),
    ];
    for frame in &frames {
        send(&link, &frame.to_string()).await;
        assert_eq!(next_message(&mut link).await["id"], frame["id"]);
    }
    let expected = [
        ("server/discover", None),
        ("tools/call", Some("echo")),
        ("tools/call", Some("=?base64?Y2Fmw6kg4piV?=")),
        ("resources/read", Some("file:///tmp/a b.txt")),
        ("prompts/get", Some("=?base64?IHBhZGRlZA==?=")),
        ("tools/list", None),
    ];
    let seen = server.seen();
    assert_eq!(seen.len(), expected.len());
    for (seen, (method, name)) in seen.iter().zip(expected) {
        assert_eq!(seen.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(seen.header("mcp-method"), Some(method));
        assert_eq!(seen.header("mcp-name"), name, "{}", seen.body);
        assert_eq!(seen.header("mcp-session-id"), None);
        assert_eq!(seen.header("authorization"), Some("Bearer test-token"));
    }
    // A notification without `_meta` from the same client goes with the version its requests named.
    send(
        &link,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#,
    )
    .await;
    let cancelled = server
        .wait_for(1, |s| s.rpc() == "notifications/cancelled")
        .await;
    assert_eq!(
        cancelled[0].header("mcp-protocol-version"),
        Some("2026-07-28")
    );
    assert_eq!(
        cancelled[0].header("mcp-method"),
        Some("notifications/cancelled")
    );
    assert_eq!(cancelled[0].header("mcp-name"), None);
    assert_eq!(cancelled[0].header("mcp-session-id"), None);
    // No session: closing sends no DELETE.
    (link.close)().await;
    assert!(server.seen().iter().all(|s| s.method == Method::POST));
}

#[tokio::test]
async fn legacy_requests_carry_no_mirrored_headers() {
    let server = FakeServer::tcp(no_handler).await;
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    send(
        &link,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
    )
    .await;
    next_message(&mut link).await;
    let call = &posts_of(&server.seen(), "tools/call")[0];
    assert_eq!(call.header("mcp-method"), None);
    assert_eq!(call.header("mcp-name"), None);
}

#[tokio::test]
async fn the_unix_socket_upstream_speaks_the_same_protocol_with_host_localhost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.sock");
    let server = FakeServer::unix(path.clone(), no_handler);
    server.with_state(|s| s.sse = true);
    let upstream = UnixUpstream::new(&path, "/mcp", headers()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    send(&link, &request(1, "resources/list")).await;
    assert_eq!(
        next_message(&mut link).await["result"]["method"],
        "resources/list"
    );
    server.wait_for(1, |s| s.method == Method::GET).await;
    (link.close)().await;
    server.wait_for(1, |s| s.method == Method::DELETE).await;
    for seen in server.seen() {
        assert_eq!(seen.header("host"), Some("localhost"));
        assert_eq!(seen.path, "/mcp");
        assert_eq!(seen.header("authorization"), Some("Bearer test-token"));
        if seen.rpc() != "initialize" {
            assert_eq!(
                seen.header("mcp-session-id"),
                Some("session-1"),
                "{} {}",
                seen.method,
                seen.body
            );
            assert_eq!(seen.header("mcp-protocol-version"), Some("2025-06-18"));
        }
    }

    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    std::fs::remove_file(&path).unwrap();
    let err = upstream.connect().await.unwrap_err();
    assert!(err.to_string().contains("is unreachable"), "{err}");
}

#[test]
fn upstreams_are_send_and_sync() {
    fn check<T: Send + Sync + Clone + std::fmt::Debug>() {}
    check::<HttpUpstream>();
    check::<UnixUpstream>();
    check::<ExtraHeaders>();
}

#[tokio::test]
async fn an_answer_stream_closed_early_is_resumed_with_get_and_the_last_event_id() {
    let server = FakeServer::tcp(|seen, state| {
        if seen.rpc() == "tools/call" {
            // A priming event and a progress notification, then the server closes the stream early.
            return Some(Reply::sse(
                &[
                    "id: p0\nretry: 10\ndata:\n\n",
                    "id: p1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n",
                ],
                End::Close,
            ));
        }
        if seen.method == Method::GET && seen.header("last-event-id") == Some("p1") {
            return Some(Reply::sse(
                &["id: p2\ndata: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{\"done\":true}}\n\n"],
                End::Close,
            ));
        }
        let _ = state;
        None
    })
    .await;
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    send(&link, &request(8, "tools/call")).await;
    assert_eq!(
        next_message(&mut link).await["method"],
        "notifications/progress"
    );
    assert_eq!(
        next_message(&mut link).await,
        json!({"jsonrpc": "2.0", "id": 8, "result": {"done": true}})
    );
    let resumed = server
        .wait_for(1, |s| {
            s.method == Method::GET && s.header("last-event-id") == Some("p1")
        })
        .await;
    assert_eq!(resumed[0].header("mcp-session-id"), Some("session-1"));
    assert_eq!(
        resumed[0].header("mcp-protocol-version"),
        Some("2025-06-18")
    );
    assert_eq!(resumed[0].header("accept"), Some("text/event-stream"));
}

#[tokio::test]
async fn closing_a_link_after_refusal_hands_back_every_queued_frame() {
    let server = FakeServer::tcp(no_handler).await;
    let upstream = HttpUpstream::new(&server.url(), ExtraHeaders::new()).unwrap();
    let mut link = upstream.connect().await.unwrap();
    handshake(&mut link).await;
    server
        .wait_for(1, |s| s.rpc() == "notifications/initialized")
        .await;
    server.stop();
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Notifications are sent in turn, so the ones behind the first are still queued when it is refused;
    // once the link has shut, `outgoing` refuses more.
    let mut accepted = Vec::new();
    for i in 0..5 {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": i}})
            .to_string();
        if link
            .outgoing
            .send(bytes::Bytes::from(note.clone()))
            .await
            .is_ok()
        {
            accepted.push(note);
        }
    }
    let mut handed_back = Vec::new();
    loop {
        match next(&mut link).await {
            UpstreamEvent::Undelivered {
                frame,
                maybe_delivered: false,
                ..
            } => {
                handed_back.push(String::from_utf8(frame.to_vec()).unwrap());
            }
            UpstreamEvent::Closed { reason } => {
                assert!(reason.ends_with("refused the connection"), "{reason}");
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(!accepted.is_empty());
    assert_eq!(handed_back, accepted);
    assert!(
        link.outgoing
            .send(bytes::Bytes::from_static(b"{}"))
            .await
            .is_err()
    );
}

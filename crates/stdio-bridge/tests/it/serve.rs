//! `ServerBuilder`: the Streamable HTTP server side, its loopback hardening and the multiplexer, against a real
//! child process (`tests/fixtures/mux_server.rs`) over real loopback sockets.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use bytes::Bytes;
use calltape_stdio_bridge::{
    ChildUpstream, Direction, ErrorKind, Stderr, TapEvent, UPSTREAM_EXITED, Upstream,
    serve::Endpoint,
    serve::{ServerBuilder, StopReason},
    shared::{IDENTITY_PATH, Nonce, Secret},
};
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::{sync::oneshot, task::JoinHandle};

/// The fixture server the multiplexer tests run (`tests/fixtures/mux_server.rs`), which `cargo test` builds beside the tests.
pub(crate) fn mux_server() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target folder")
        .join("examples")
        .join("mux_server");
    assert!(
        path.exists(),
        "{} is missing: run `cargo test -p calltape-stdio-bridge`",
        path.display()
    );
    path
}

/// Where a test client connects.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl Target {
    pub(crate) fn of(endpoint: &Endpoint) -> Self {
        match endpoint {
            Endpoint::Http(addr) => Self::Tcp(*addr),
            Endpoint::Unix(path) => Self::Unix(path.clone()),
        }
    }

    fn host(&self) -> String {
        match self {
            Self::Tcp(addr) => format!("127.0.0.1:{}", addr.port()),
            Self::Unix(_) => "localhost".into(),
        }
    }
}

/// A raw HTTP/1.1 request over a fresh connection.
pub(crate) async fn raw(
    target: &Target,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> hyper::Response<Incoming> {
    let mut builder = Request::builder().method(method).uri(path);
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        builder = builder.header("host", target.host());
    }
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let req = builder
        .body(Full::new(Bytes::copy_from_slice(body)))
        .expect("request");
    macro_rules! send {
        ($stream:expr) => {{
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new($stream))
                .await
                .expect("handshake");
            tokio::spawn(conn);
            sender.send_request(req).await.expect("response")
        }};
    }
    match target {
        Target::Tcp(addr) => send!(tokio::net::TcpStream::connect(addr).await.expect("connect")),
        Target::Unix(path) => send!(
            tokio::net::UnixStream::connect(path)
                .await
                .expect("connect")
        ),
    }
}

pub(crate) async fn body_text(res: hyper::Response<Incoming>) -> String {
    let bytes = tokio::time::timeout(Duration::from_secs(30), res.into_body().collect())
        .await
        .expect("the body ended within 30 s")
        .expect("body")
        .to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The messages of a JSON or SSE body.
pub(crate) fn messages_of(headers: &HeaderMap, text: &str) -> Vec<Value> {
    let sse = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if !sse {
        if text.trim().is_empty() {
            return Vec::new();
        }
        return match serde_json::from_str::<Value>(text).expect("JSON body") {
            Value::Array(items) => items,
            one => vec![one],
        };
    }
    let mut out = Vec::new();
    for event in text.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect();
        if !data.is_empty() {
            out.push(serde_json::from_str(&data.join("\n")).expect("JSON event"));
        }
    }
    out
}

/// A Streamable HTTP session.
pub(crate) struct Session {
    pub(crate) target: Target,
    pub(crate) token: Option<String>,
    pub(crate) id: Option<String>,
    /// The endpoint's path: `/mcp` unless [`Session::at`] says another.
    pub(crate) path: String,
}

pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) messages: Vec<Value>,
    /// The body as text.
    pub(crate) text: String,
}

impl Reply {
    /// The answer with `id`.
    pub(crate) fn answer(&self, id: &Value) -> &Value {
        self.messages
            .iter()
            .find(|m| m.get("method").is_none() && &m["id"] == id)
            .unwrap_or_else(|| panic!("no answer with id {id} in {:?}", self.messages))
    }
}

impl Session {
    pub(crate) fn new(target: Target, token: Option<String>) -> Self {
        Self {
            target,
            token,
            id: None,
            path: "/mcp".to_owned(),
        }
    }

    /// The session at another endpoint path.
    pub(crate) fn at(mut self, path: &str) -> Self {
        self.path = path.to_owned();
        self
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![
            ("accept", "application/json, text/event-stream".to_owned()),
            ("content-type", "application/json".to_owned()),
        ];
        if let Some(token) = &self.token {
            headers.push(("authorization", format!("Bearer {token}")));
        }
        if let Some(id) = &self.id {
            headers.push(("mcp-session-id", id.clone()));
            headers.push(("mcp-protocol-version", "2025-06-18".into()));
        }
        headers
    }

    pub(crate) async fn post(&self, message: &Value) -> Reply {
        let headers = self.headers();
        let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let body = serde_json::to_vec(message).expect("json");
        let res = raw(&self.target, Method::POST, &self.path, &refs, &body).await;
        let status = res.status();
        let headers = res.headers().clone();
        let text = body_text(res).await;
        let messages = if status.is_success() {
            messages_of(&headers, &text)
        } else {
            Vec::new()
        };
        Reply {
            status,
            headers,
            messages,
            text,
        }
    }

    pub(crate) async fn initialize(&mut self) -> Value {
        let reply = self
            .post(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": true}},
                "clientInfo": {"name": "test", "version": "1"}}}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK);
        let id = reply
            .headers
            .get("mcp-session-id")
            .expect("a session id")
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(id.len(), 64, "a session id of 32 random bytes");
        self.id = Some(id);
        let answer = reply.answer(&json!(0)).clone();
        let done = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(done.status, StatusCode::ACCEPTED);
        answer
    }

    pub(crate) async fn call(&self, id: Value, tool: &str, arguments: Value) -> Reply {
        self.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}))
            .await
    }

    pub(crate) async fn call_text(&self, id: Value, tool: &str, arguments: Value) -> String {
        let reply = self.call(id.clone(), tool, arguments).await;
        assert_eq!(reply.status, StatusCode::OK);
        reply.answer(&id)["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("a text result: {:?}", reply.messages))
            .to_owned()
    }

    /// Opens the GET stream; its messages arrive on the returned channel.
    pub(crate) async fn stream(&self) -> tokio::sync::mpsc::UnboundedReceiver<Value> {
        let mut headers = vec![("accept", "text/event-stream".to_owned())];
        if let Some(token) = &self.token {
            headers.push(("authorization", format!("Bearer {token}")));
        }
        headers.push(("mcp-session-id", self.id.clone().expect("initialized")));
        let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let res = raw(&self.target, Method::GET, &self.path, &refs, b"").await;
        assert_eq!(res.status(), StatusCode::OK);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let mut body = res.into_body();
        tokio::spawn(async move {
            let mut buf = String::new();
            loop {
                // Dropping the receiver closes the connection.
                let frame = tokio::select! {
                    () = tx.closed() => return,
                    frame = body.frame() => frame,
                };
                let Some(Ok(frame)) = frame else { return };
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                buf.push_str(&String::from_utf8_lossy(&data));
                while let Some(end) = buf.find("\n\n") {
                    let event: String = buf.drain(..end + 2).collect();
                    let data: Vec<&str> = event
                        .lines()
                        .filter_map(|l| l.strip_prefix("data: "))
                        .collect();
                    if !data.is_empty()
                        && tx
                            .send(serde_json::from_str(&data.join("\n")).expect("json"))
                            .is_err()
                    {
                        return;
                    }
                }
            }
        });
        rx
    }
}

pub(crate) async fn next_message(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("a message within 20 s")
        .expect("the stream is open")
}

pub(crate) struct Running {
    pub(crate) target: Target,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<StopReason>,
}

impl Running {
    pub(crate) async fn stop(mut self) -> StopReason {
        let _ = self.stop.take().expect("running").send(());
        self.task.await.expect("server task")
    }
}

pub(crate) async fn start(serve: ServerBuilder) -> Running {
    let server = serve
        .listen_tcp("127.0.0.1:0".parse().unwrap())
        .await
        .expect("listen");
    spawn(server)
}

fn spawn(server: calltape_stdio_bridge::serve::Server) -> Running {
    let target = Target::of(server.endpoint());
    let (stop, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        server
            .run_until(async {
                let _ = rx.await;
            })
            .await
            .expect("run")
    });
    Running {
        target,
        stop: Some(stop),
        task,
    }
}

pub(crate) fn child() -> ChildUpstream {
    ChildUpstream::new([mux_server()])
        .expect("child")
        .stderr(Stderr::Null)
}

pub(crate) const ACCEPT_BOTH: (&str, &str) = ("accept", "application/json, text/event-stream");
pub(crate) const JSON: (&str, &str) = ("content-type", "application/json");
const PING: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

#[tokio::test]
async fn a_stopped_server_has_shown_a_slow_tap_every_frame() {
    let seen: std::sync::Arc<std::sync::Mutex<Vec<(Direction, Value)>>> = Default::default();
    let sink = std::sync::Arc::clone(&seen);
    let serve = ServerBuilder::new(child()).tap_sessions(move || {
        let sink = std::sync::Arc::clone(&sink);
        Box::new(move |event: TapEvent| {
            std::thread::sleep(Duration::from_millis(30));
            let message = serde_json::from_slice(&event.frame).expect("json");
            sink.lock().expect("lock").push((event.direction, message));
        })
    });
    let running = start(serve).await;
    let mut s = Session::new(running.target.clone(), None);
    s.initialize().await;
    for id in 1..=5 {
        let text = s
            .call_text(json!(id), "echo", json!({"text": "tapped"}))
            .await;
        assert_eq!(text, "tapped");
    }
    assert_eq!(running.stop().await, StopReason::Shutdown);
    let answered: Vec<Value> = seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|(direction, m)| *direction == Direction::ToClient && m.get("result").is_some())
        .map(|(_, m)| m["id"].clone())
        .collect();
    assert_eq!(answered, [0, 1, 2, 3, 4, 5]);
}

#[tokio::test]
async fn refuses_non_loopback_listen_addresses() {
    for addr in ["0.0.0.0:0", "127.0.0.2:0", "[::1]:0"] {
        let err = ServerBuilder::new(child())
            .listen_tcp(addr.parse().unwrap())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("127.0.0.1 only"), "{addr}: {err}");
    }
}

#[tokio::test]
async fn loopback_hardening_origin_host_and_token() {
    let running = start(ServerBuilder::new(child()).bearer_token("t0ken")).await;
    let t = &running.target;
    let Target::Tcp(addr) = t else { unreachable!() };
    let auth = ("authorization", "Bearer t0ken");

    // Any Origin but serve's own, even a loopback one on another port, and on every path.
    let other_origin = format!("http://127.0.0.1:{}", addr.port().wrapping_add(1));
    let rebound = format!("http://evil.example:{}", addr.port());
    for origin in [
        "http://evil.example",
        "http://127.0.0.1",
        "null",
        &other_origin,
        &rebound,
    ] {
        let res = raw(
            t,
            Method::POST,
            "/mcp",
            &[ACCEPT_BOTH, JSON, auth, ("origin", origin)],
            PING,
        )
        .await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{origin}");
        assert!(res.headers().get("access-control-allow-origin").is_none());
    }
    let res = raw(
        t,
        Method::OPTIONS,
        "/mcp",
        &[("origin", "http://evil.example")],
        b"",
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    // Its own origin (a page only this address and port could have served, and serve serves none)
    // passes the guard; the token is still required.
    let own_origin = format!("http://localhost:{}", addr.port());
    let res = raw(
        t,
        Method::POST,
        "/mcp",
        &[ACCEPT_BOTH, JSON, auth, ("origin", own_origin.as_str())],
        PING,
    )
    .await;
    assert!(
        !matches!(
            res.status(),
            StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED
        ),
        "{}",
        res.status()
    );
    let res = raw(
        t,
        Method::POST,
        "/mcp",
        &[ACCEPT_BOTH, JSON, ("origin", own_origin.as_str())],
        PING,
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);

    // A foreign Host (DNS rebinding), or our name on another port.
    let other_port = format!("127.0.0.1:{}", addr.port().wrapping_add(1));
    for host in [
        "evil.example",
        "evil.example:80",
        other_port.as_str(),
        "localhost.",
        "0.0.0.0",
    ] {
        let res = raw(
            t,
            Method::POST,
            "/mcp",
            &[ACCEPT_BOTH, JSON, auth, ("host", host)],
            PING,
        )
        .await;
        assert_eq!(res.status(), StatusCode::MISDIRECTED_REQUEST, "{host}");
    }
    let own_port = format!("localhost:{}", addr.port());
    let res = raw(
        t,
        Method::POST,
        "/mcp",
        &[ACCEPT_BOTH, JSON, auth, ("host", own_port.as_str())],
        PING,
    )
    .await;
    assert_ne!(res.status(), StatusCode::MISDIRECTED_REQUEST);

    // No token, a wrong one, another scheme: 401.
    for header in [
        None,
        Some("Bearer wrong"),
        Some("Bearer t0ken2"),
        Some("Basic dDBrZW4="),
        Some("t0ken"),
    ] {
        let mut headers = vec![ACCEPT_BOTH, JSON];
        if let Some(h) = header {
            headers.push(("authorization", h));
        }
        let res = raw(t, Method::POST, "/mcp", &headers, PING).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{header:?}");
        assert_eq!(res.headers()["www-authenticate"], "Bearer");
    }
    running.stop().await;
}

#[tokio::test]
async fn transport_rules() {
    let running = start(ServerBuilder::new(child())).await;
    let t = &running.target;
    // 406 when Accept lacks a required type.
    for accept in ["application/json", "text/event-stream", "text/html"] {
        let res = raw(t, Method::POST, "/mcp", &[("accept", accept), JSON], PING).await;
        assert_eq!(res.status(), StatusCode::NOT_ACCEPTABLE, "{accept}");
    }
    let res = raw(
        t,
        Method::GET,
        "/mcp",
        &[("accept", "application/json"), ("mcp-session-id", "x")],
        b"",
    )
    .await;
    assert_eq!(res.status(), StatusCode::NOT_ACCEPTABLE);
    // No session id on a request other than initialize; an unknown one; an unsupported version.
    let res = raw(t, Method::POST, "/mcp", &[ACCEPT_BOTH, JSON], PING).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let res = raw(
        t,
        Method::POST,
        "/mcp",
        &[ACCEPT_BOTH, JSON, ("mcp-session-id", "nope")],
        PING,
    )
    .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let res = raw(
        t,
        Method::POST,
        "/mcp",
        &[ACCEPT_BOTH, JSON, ("mcp-protocol-version", "1999-01-01")],
        PING,
    )
    .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(
        body_text(res)
            .await
            .contains("unsupported MCP-Protocol-Version")
    );
    // Not JSON; another path.
    let res = raw(t, Method::POST, "/mcp", &[ACCEPT_BOTH, JSON], b"{nope").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let res = raw(t, Method::POST, "/other", &[ACCEPT_BOTH, JSON], PING).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    // Without shared keys there is no identity endpoint.
    let res = raw(t, Method::POST, IDENTITY_PATH, &[JSON], b"{}").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);

    // A session: minted id, 202 for a notification, DELETE ends it, then 404.
    let mut s = Session::new(t.clone(), None);
    let init = s.initialize().await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mux-server");
    let reply = s
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}))
        .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    assert!(reply.messages.is_empty());
    let res = raw(
        t,
        Method::DELETE,
        "/mcp",
        &[("mcp-session-id", s.id.as_deref().unwrap())],
        b"",
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let reply = s.call(json!(1), "echo", json!({"text": "x"})).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    running.stop().await;
}

#[tokio::test]
async fn json_answers_when_asked() {
    let running = start(ServerBuilder::new(child()).json_response(true)).await;
    let mut s = Session::new(running.target.clone(), None);
    s.initialize().await;
    let reply = s.call(json!(7), "echo", json!({"text": "plain"})).await;
    assert_eq!(reply.headers["content-type"], "application/json");
    assert_eq!(
        reply.answer(&json!(7))["result"]["content"][0]["text"],
        "plain"
    );
    running.stop().await;
}

#[tokio::test]
async fn identity_endpoint() {
    let secret = Secret::generate().unwrap();
    let keys = secret.keys();
    let running = start(ServerBuilder::new(child()).shared_keys(keys.clone())).await;
    let t = &running.target;
    let Target::Tcp(addr) = t else { unreachable!() };
    let endpoint = format!("http://127.0.0.1:{}", addr.port());

    let nonce = Nonce::generate().unwrap();
    let body = json!({"nonce": nonce.to_hex()}).to_string();
    let res = raw(t, Method::POST, IDENTITY_PATH, &[JSON], body.as_bytes()).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers().get("content-length").is_some());
    let proof: Value = serde_json::from_str(&body_text(res).await).unwrap();
    assert!(keys.verify(&endpoint, &nonce, proof["proof"].as_str().unwrap()));

    for bad in [
        "".to_owned(),
        "{}".into(),
        r#"{"nonce":"abc"}"#.into(),
        json!({"nonce": "zz".repeat(32)}).to_string(),
        json!({"nonce": nonce.to_hex(), "more": 1}).to_string(),
        json!({"nonce": "0".repeat(2000)}).to_string(),
    ] {
        let res = raw(t, Method::POST, IDENTITY_PATH, &[JSON], bad.as_bytes()).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    // A shared server, which only calltape's sessions talk to, refuses its own origin too.
    for origin in ["http://x", endpoint.as_str()] {
        let res = raw(
            t,
            Method::POST,
            IDENTITY_PATH,
            &[JSON, ("origin", origin)],
            body.as_bytes(),
        )
        .await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{origin}");
    }
    let res = raw(
        t,
        Method::POST,
        IDENTITY_PATH,
        &[JSON, ("host", "evil.example")],
        body.as_bytes(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::MISDIRECTED_REQUEST);
    // The MCP endpoint wants the derived token, not the secret.
    let mut s = Session::new(t.clone(), Some(secret.to_hex()));
    let reply = s
        .post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}))
        .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    s.token = Some(keys.token().to_owned());
    s.initialize().await;
    running.stop().await;
}

#[tokio::test]
async fn sessions_share_one_child_with_their_own_ids() {
    let running = start(ServerBuilder::new(child())).await;
    let mut a = Session::new(running.target.clone(), None);
    let mut b = Session::new(running.target.clone(), None);
    let init_a = a.initialize().await;
    let init_b = b.initialize().await;
    assert_eq!(
        init_a["result"], init_b["result"],
        "the second handshake comes from the cache"
    );
    assert_ne!(a.id, b.id);

    // The same request id from both sessions, at the same time: each gets its own answer.
    let (ra, rb) = tokio::join!(
        a.call(json!(1), "slow", json!({"ms": 300})),
        b.call(json!(1), "echo", json!({"text": "from b"}))
    );
    assert_eq!(ra.answer(&json!(1))["result"]["content"][0]["text"], "done");
    assert_eq!(
        rb.answer(&json!(1))["result"]["content"][0]["text"],
        "from b"
    );
    let (ra, rb) = tokio::join!(
        a.call(json!("same"), "echo", json!({"text": "a"})),
        b.call(json!("same"), "echo", json!({"text": "b"}))
    );
    assert_eq!(
        ra.answer(&json!("same"))["result"]["content"][0]["text"],
        "a"
    );
    assert_eq!(
        rb.answer(&json!("same"))["result"]["content"][0]["text"],
        "b"
    );

    // One child, initialized once.
    let pid_a = a.call_text(json!(2), "pid", json!({})).await;
    let pid_b = b.call_text(json!(2), "pid", json!({})).await;
    assert_eq!(pid_a, pid_b);
    assert_eq!(a.call_text(json!(3), "inits", json!({})).await, "1 1");
    running.stop().await;
}

#[tokio::test]
async fn progress_reaches_only_its_session_and_list_changes_reach_all() {
    let running = start(ServerBuilder::new(child())).await;
    let mut a = Session::new(running.target.clone(), None);
    let mut b = Session::new(running.target.clone(), None);
    a.initialize().await;
    b.initialize().await;
    let mut stream_a = a.stream().await;
    let mut stream_b = b.stream().await;

    // Both sessions use the same progress token; each sees only its own progress.
    let call = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "slow", "arguments": {"ms": 200, "steps": 2}, "_meta": {"progressToken": "tok"}}})
    };
    let (call5, call6) = (call(5), call(6));
    let (ra, rb) = tokio::join!(a.post(&call5), b.post(&call6));
    for (reply, id) in [(&ra, 5), (&rb, 6)] {
        let progress: Vec<&Value> = reply
            .messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), 2, "{:?}", reply.messages);
        assert!(
            progress
                .iter()
                .all(|p| p["params"]["progressToken"] == "tok")
        );
        assert_eq!(
            reply.answer(&json!(id))["result"]["content"][0]["text"],
            "done"
        );
        // The answer comes last: the stream ends with it.
        assert_eq!(reply.messages.last().unwrap()["id"], id);
    }

    // A list change and a log message reach both sessions' GET streams.
    assert_eq!(a.call_text(json!(7), "notify", json!({})).await, "ok");
    for rx in [&mut stream_a, &mut stream_b] {
        assert_eq!(
            next_message(rx).await["method"],
            "notifications/tools/list_changed"
        );
        assert_eq!(next_message(rx).await["method"], "notifications/message");
    }

    // Resource updates only reach subscribers; the child is subscribed once and unsubscribed last.
    let sub = |id: i64, method: &str| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"uri": "file:///x"}});
    assert_eq!(
        b.post(&sub(8, "resources/subscribe"))
            .await
            .answer(&json!(8))["result"],
        json!({})
    );
    assert_eq!(
        b.call_text(json!(9), "update", json!({"uri": "file:///x"}))
            .await,
        "ok"
    );
    assert_eq!(
        b.call_text(json!(10), "update", json!({"uri": "file:///other"}))
            .await,
        "ok"
    );
    let update = next_message(&mut stream_b).await;
    assert_eq!(update["method"], "notifications/resources/updated");
    assert_eq!(update["params"]["uri"], "file:///x");
    a.post(&sub(11, "resources/subscribe")).await;
    assert_eq!(a.call_text(json!(12), "subs", json!({})).await, "1");
    b.post(&sub(13, "resources/unsubscribe")).await;
    assert_eq!(a.call_text(json!(14), "subs", json!({})).await, "1");
    a.post(&sub(15, "resources/unsubscribe")).await;
    assert_eq!(a.call_text(json!(16), "subs", json!({})).await, "0");
    // Session a never subscribed to file:///x while it was updated: its stream holds nothing more.
    assert!(
        tokio::time::timeout(Duration::from_millis(200), stream_a.recv())
            .await
            .is_err()
    );
    running.stop().await;
}

#[tokio::test]
async fn server_to_client_requests_go_to_the_asking_session() {
    let running = start(ServerBuilder::new(child())).await;
    let mut a = Session::new(running.target.clone(), None);
    let mut b = Session::new(running.target.clone(), None);
    a.initialize().await;
    b.initialize().await;
    let mut stream_b = b.stream().await;

    // Session a calls `roots`: the child's roots/list request arrives on a's POST stream. Read it as it
    // comes, answer it, and the tool answers with what a said.
    let headers = a.headers();
    let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "roots", "arguments": {}}}))
    .unwrap();
    let res = raw(&a.target, Method::POST, "/mcp", &refs, &body).await;
    assert_eq!(res.status(), StatusCode::OK);
    let mut body = res.into_body();
    let mut text = String::new();
    let mut answered = false;
    while let Some(Ok(frame)) = tokio::time::timeout(Duration::from_secs(20), body.frame())
        .await
        .expect("in time")
    {
        let data = frame.into_data().unwrap_or_default();
        text.push_str(&String::from_utf8_lossy(&data));
        if !answered && text.contains("roots/list") {
            let messages = messages_of(&sse_headers(), &text);
            let ask = messages
                .iter()
                .find(|m| m["method"] == "roots/list")
                .unwrap();
            let reply = a
                .post(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": "file:///a", "name": "a"}]}}))
                .await;
            assert_eq!(reply.status, StatusCode::ACCEPTED);
            answered = true;
        }
    }
    let messages = messages_of(&sse_headers(), &text);
    let answer = messages
        .iter()
        .find(|m| m["id"] == 1)
        .expect("the tool's answer");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("file:///a")
    );
    // Session b saw nothing of it.
    assert!(
        tokio::time::timeout(Duration::from_millis(200), stream_b.recv())
            .await
            .is_err()
    );
    running.stop().await;
}

fn sse_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("content-type", "text/event-stream".parse().unwrap());
    h
}

#[tokio::test]
async fn a_crashed_child_fails_in_flight_calls_and_comes_back() {
    let running = start(ServerBuilder::new(child())).await;
    let mut a = Session::new(running.target.clone(), None);
    let mut b = Session::new(running.target.clone(), None);
    a.initialize().await;
    b.initialize().await;
    let mut stream_a = a.stream().await;
    let pid_before = a.call_text(json!(1), "pid", json!({})).await;

    let crash = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        a.call(json!(99), "crash", json!({})).await
    };
    let (ra, rb, crashed) = tokio::join!(
        a.call(json!(2), "slow", json!({"ms": 10000})),
        b.call(json!(2), "slow", json!({"ms": 10000})),
        crash
    );
    for reply in [&ra, &rb] {
        let error = &reply.answer(&json!(2))["error"];
        assert_eq!(error["code"], UPSTREAM_EXITED, "{error}");
        assert_eq!(error["data"]["reason"], "upstream_exited");
    }
    assert_eq!(crashed.answer(&json!(99))["error"]["code"], UPSTREAM_EXITED);

    // Both sessions go on with a fresh child that was re-initialized from the cached handshake.
    assert_eq!(
        a.call_text(json!(3), "echo", json!({"text": "again a"}))
            .await,
        "again a"
    );
    assert_eq!(
        b.call_text(json!(3), "echo", json!({"text": "again b"}))
            .await,
        "again b"
    );
    assert_ne!(a.call_text(json!(4), "pid", json!({})).await, pid_before);
    assert_eq!(b.call_text(json!(4), "inits", json!({})).await, "1 1");
    // Sessions are told to list tools again.
    assert_eq!(
        next_message(&mut stream_a).await["method"],
        "notifications/tools/list_changed"
    );
    running.stop().await;
}

#[tokio::test]
async fn idle_exit_after_the_last_session() {
    let server = ServerBuilder::new(child())
        .idle_exit(Duration::from_millis(600))
        .listen_tcp("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let target = Target::of(server.endpoint());
    let task = tokio::spawn(server.run_until(std::future::pending()));
    let mut s = Session::new(target.clone(), None);
    s.initialize().await;
    // An open GET stream keeps the server up past the idle period.
    let stream = s.stream().await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(!task.is_finished());
    assert_eq!(
        s.call_text(json!(1), "echo", json!({"text": "still here"}))
            .await,
        "still here"
    );
    drop(stream);
    let reason = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("exits")
        .unwrap()
        .unwrap();
    assert_eq!(reason, StopReason::Idle);
}

#[tokio::test]
async fn unix_socket_owner_only_stale_removed_live_refused() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let path = tmp.path().join("server.sock");
    // A stale socket: bound, then its listener gone.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let server = ServerBuilder::new(child())
        .listen_unix(&path)
        .await
        .expect("a stale socket is replaced");
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    assert_eq!(server.endpoint(), &Endpoint::Unix(path.clone()));
    let running = spawn(server);

    let err = ServerBuilder::new(child())
        .listen_unix(&path)
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::SocketInUse { .. }), "{err}");
    assert!(err.to_string().contains(&path.display().to_string()));

    let mut s = Session::new(running.target.clone(), None);
    s.initialize().await;
    assert_eq!(
        s.call_text(json!(1), "echo", json!({"text": "over unix"}))
            .await,
        "over unix"
    );
    running.stop().await;
    assert!(!path.exists(), "the socket is removed on stop");

    let long = tmp.path().join("d".repeat(120)).join("server.sock");
    let err = ServerBuilder::new(child())
        .listen_unix(&long)
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::SocketPathTooLong { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn cancellations_follow_the_id_mapping() {
    let running = start(ServerBuilder::new(child())).await;
    let mut a = Session::new(running.target.clone(), None);
    a.initialize().await;
    let slow = a.call(json!("c-1"), "slow", json!({"ms": 4000}));
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let reply = a
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c-1"}}))
            .await;
        assert_eq!(reply.status, StatusCode::ACCEPTED);
        // A cancellation of an id this session never sent goes nowhere.
        a.post(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "nope"}}))
            .await;
    };
    let (reply, ()) = tokio::join!(slow, cancel);
    assert_eq!(reply.status, StatusCode::OK);
    let cancels: Value =
        serde_json::from_str(&a.call_text(json!(2), "cancels", json!({})).await).unwrap();
    let cancels = cancels.as_array().unwrap();
    assert_eq!(cancels.len(), 1, "{cancels:?}");
    assert!(
        cancels[0].is_u64(),
        "the child saw its own id for the request, not the session's: {cancels:?}"
    );
    running.stop().await;
}

#[tokio::test]
async fn stateless_requests_only_need_their_ids_remapped() {
    let running = start(ServerBuilder::new(child())).await;
    let mut a = Session::new(running.target.clone(), None);
    a.initialize().await;
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "stateless"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}))
    .unwrap();
    let res = raw(
        &running.target,
        Method::POST,
        "/mcp",
        &[
            ACCEPT_BOTH,
            JSON,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ],
        &body,
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers().get("mcp-session-id").is_none());
    let headers = res.headers().clone();
    let messages = messages_of(&headers, &body_text(res).await);
    let answer = messages
        .iter()
        .find(|m| m["id"] == 1)
        .expect("an answer with the caller's id");
    assert_eq!(answer["result"]["content"][0]["text"], "stateless");
    running.stop().await;
}

#[tokio::test]
async fn requests_held_for_a_child_that_cannot_start_get_an_error() {
    let missing = ChildUpstream::new(["/nonexistent/mcp-server"]).unwrap();
    let running = start(ServerBuilder::new(missing)).await;
    let s = Session::new(running.target.clone(), None);
    let reply = s
        .post(&json!({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let error = &reply.answer(&json!("i"))["error"];
    assert_eq!(
        error["code"],
        calltape_stdio_bridge::UPSTREAM_UNREACHABLE,
        "{error}"
    );
    assert!(
        error["data"]["upstream"]["message"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/mcp-server"),
        "{error}"
    );
    running.stop().await;
}

#[tokio::test]
async fn each_path_key_gets_an_upstream_of_its_own_made_once_and_keeps_its_sessions() {
    let made = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = std::sync::Arc::clone(&made);
    let serve = ServerBuilder::per_path_only("/_t/", move |key: &str| {
        let key = key.to_owned();
        seen.lock().unwrap().push(key.clone());
        async move {
            match key.as_str() {
                "bad" => Err(calltape_stdio_bridge::Error::config(
                    "key \"bad\" is not allowed",
                )),
                _ => Ok(std::sync::Arc::new(child()) as std::sync::Arc<dyn Upstream>),
            }
        }
    });
    let running = start(serve).await;
    let t = &running.target;
    let mut a = Session::new(t.clone(), None).at("/_t/a/mcp");
    let mut again = Session::new(t.clone(), None).at("/_t/a/mcp");
    let mut b = Session::new(t.clone(), None).at("/_t/b%2Fc/mcp");
    a.initialize().await;
    again.initialize().await;
    b.initialize().await;
    let pid_a = a.call_text(json!(1), "pid", json!({})).await;
    assert_eq!(again.call_text(json!(1), "pid", json!({})).await, pid_a);
    assert_ne!(b.call_text(json!(1), "pid", json!({})).await, pid_a);
    assert_eq!(*made.lock().unwrap(), ["a", "b%2Fc"]);

    // A session belongs to its path.
    let mut elsewhere = Session::new(t.clone(), None).at("/_t/b%2Fc/mcp");
    elsewhere.id = a.id.clone();
    let reply = elsewhere.call(json!(2), "pid", json!({})).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.text);

    // A key the factory refuses gets 400 with its message; /mcp and other shapes get 404 naming
    // where MCP is served.
    let refused = raw(t, Method::POST, "/_t/bad/mcp", &[ACCEPT_BOTH, JSON], PING).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert_eq!(body_text(refused).await, "key \"bad\" is not allowed\n");
    for path in ["/mcp", "/_t/a/b/mcp", "/_t//mcp", "/_t/a/other"] {
        let res = raw(t, Method::POST, path, &[ACCEPT_BOTH, JSON], PING).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
        assert!(
            body_text(res)
                .await
                .contains("MCP is served at /_t/NAME/mcp"),
            "{path}"
        );
    }
    running.stop().await;
}

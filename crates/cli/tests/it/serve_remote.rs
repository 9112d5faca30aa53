//! `calltape serve --url`: HTTP clients of the official SDKs (Python 1.x and 2.x, TypeScript) that
//! send their own bearer token, through `serve --url --record`, to the reference "everything" server
//! over Streamable HTTP behind a bearer check. The sessions work, the calls are recorded, each token
//! reaches the server and no file nor calltape's stderr, and clients with different tokens never share
//! a session of the server. On a socket listener, the GET stream passes through and resumes with
//! `Last-Event-ID`.

use std::{
    collections::HashSet,
    ffi::OsString,
    io::{BufRead, BufReader, Read, Write},
    os::unix::net::UnixStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::Value;

use crate::serve::{INITIALIZE, Served, post_request};
use crate::support::{
    HttpPeer, client_output, free_port, http_everything, modern_python, peer_script, peers, python,
    session_id_of,
};

/// A fresh random token, 32 hex digits.
fn token() -> String {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("random bytes");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The everything server behind `bearer_proxy.py`, which accepts `tokens` and logs each forwarded
/// request's token index and session id to `log`.
struct Protected {
    _everything: HttpPeer,
    proxy: HttpPeer,
    log: PathBuf,
}

impl Protected {
    fn start(dir: &Path, tokens: &[&str]) -> Self {
        let everything = http_everything(free_port());
        let port = free_port();
        let log = dir.join("proxy.jsonl");
        let proxy = HttpPeer::start(
            Command::new(python())
                .arg(peer_script("bearer_proxy.py"))
                .arg(port.to_string())
                .arg(everything.url())
                .arg(&log)
                .env("BEARER_TOKENS", tokens.join(","))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            port,
            "the bearer check",
        );
        Self {
            _everything: everything,
            proxy,
            log,
        }
    }

    /// The requests the server was sent: (token index, method, session id).
    fn requests(&self) -> Vec<(u64, String, Option<String>)> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line).unwrap();
                (
                    v["token"].as_u64().unwrap(),
                    v["method"].as_str().unwrap().to_owned(),
                    v["session"].as_str().map(str::to_owned),
                )
            })
            .collect()
    }

    /// The server's session ids that requests with token `index` used.
    fn sessions_of(&self, index: u64) -> HashSet<String> {
        self.requests()
            .into_iter()
            .filter(|(token, _, _)| *token == index)
            .filter_map(|(_, _, session)| session)
            .collect()
    }
}

/// `calltape serve --listen 127.0.0.1:0 --url URL ARGS…`, its stderr in `dir`.
fn serve(dir: &Path, url: &str, args: &[&str]) -> Served {
    let mut all: Vec<OsString> = ["--listen", "127.0.0.1:0", "--url", url]
        .iter()
        .map(OsString::from)
        .collect();
    all.extend(args.iter().map(OsString::from));
    Served::start_args(dir, &all)
}

/// A client peer started against `url` with `token` (none when empty) in its environment.
fn client(kind: &str, url: &str, token: &str) -> Child {
    let mut command = match kind {
        "typescript" => {
            let mut c = Command::new("node");
            c.arg(peer_script("remote_client.cjs"));
            c
        }
        "legacy" => {
            let mut c = Command::new(python());
            c.arg(peer_script("remote_client.py")).arg("legacy");
            c
        }
        _ => {
            let mut c = Command::new(modern_python());
            c.arg(peer_script("remote_client.py")).arg("modern");
            c
        }
    };
    command
        .arg(url)
        .env("CALLTAPE_PEERS", peers())
        .env("CLIENT_TOKEN", token)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the client")
}

/// What a client printed; fails the test when it failed.
fn outcome(child: Child) -> Value {
    client_output(&child.wait_with_output().expect("the client's output"))
}

fn assert_worked(what: &str, out: &Value, echoed: &str) {
    assert_eq!(out["echo"], format!("Echo: {echoed}"), "{what}: {out}");
    let tools = out["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: {out}"));
    assert!(tools.iter().any(|t| t == "echo"), "{what}: {out}");
}

/// Stops `calltape serve` with SIGTERM and waits, so that its recording is complete.
fn stop(served: &mut Served) {
    let _ = Command::new("kill")
        .arg(served.child.id().to_string())
        .status();
    let status = served.child.wait().expect("serve's status");
    assert!(
        status.success(),
        "serve exited {status}: {}",
        served.stderr()
    );
}

/// Every file under `dir` (recording, sidecars, logs, calltape's stderr) whose bytes hold `secret`.
fn files_holding(dir: &Path, secret: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .unwrap()
                .windows(secret.len())
                .any(|w| w == secret.as_bytes())
            {
                found.push(path);
            }
        }
    }
    found
}

/// The echo messages of the recording's `tools/call` records.
fn recorded_echoes(recording: &Path) -> Vec<String> {
    std::fs::read_to_string(recording)
        .expect("the recording")
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["method"] == "tools/call" && record["name"] == "echo")
        .map(|record| record["input"]["message"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn sdk_http_clients_through_serve_url_are_recorded_and_their_tokens_reach_only_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (token(), token());
    let protected = Protected::start(dir.path(), &[&a, &b]);
    let recording = dir.path().join("calls.jsonl");
    let mut served = serve(
        dir.path(),
        &protected.proxy.url(),
        &["--record", recording.to_str().unwrap()],
    );
    let url = format!("http://{}/mcp", served.addr());

    // Two clients with different tokens at once, then the 2026-07-28 client with the first one.
    let python_a = client("legacy", &url, &a);
    let typescript_b = client("typescript", &url, &b);
    assert_worked("python 1.x", &outcome(python_a), "hello from python");
    assert_worked(
        "typescript",
        &outcome(typescript_b),
        "hello from typescript",
    );
    let modern_a = client("modern", &url, &a);
    assert_worked("python 2.x", &outcome(modern_a), "hello from python 2");
    stop(&mut served);

    // Each token reached the server, with its GET stream, and the two never shared a session.
    let requests = protected.requests();
    for index in [0, 1] {
        assert!(
            requests
                .iter()
                .any(|(token, method, session)| *token == index
                    && method == "GET"
                    && session.is_some()),
            "no GET stream with token {index}: {requests:?}"
        );
    }
    let (of_a, of_b) = (protected.sessions_of(0), protected.sessions_of(1));
    assert!(!of_a.is_empty() && !of_b.is_empty(), "{requests:?}");
    assert!(
        of_a.is_disjoint(&of_b),
        "sessions shared across tokens: {requests:?}"
    );

    let mut echoes = recorded_echoes(&recording);
    echoes.sort();
    assert_eq!(
        echoes,
        [
            "hello from python",
            "hello from python 2",
            "hello from typescript"
        ]
    );
    for secret in [&a, &b] {
        assert_eq!(files_holding(dir.path(), secret), Vec::<PathBuf>::new());
    }
}

#[test]
fn serve_url_relays_a_refusal_keeps_sessions_to_their_token_and_uses_its_own_header_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, own) = (token(), token(), token());
    let protected = Protected::start(dir.path(), &[&a, &b, &own]);

    // No token and no header of calltape's own: the server's 401 comes back in the error.
    let plain_dir = dir.path().join("plain");
    std::fs::create_dir(&plain_dir).unwrap();
    let mut plain = serve(&plain_dir, &protected.proxy.url(), &[]);
    let refused: Value = sse_or_json(&plain.exchange(None, INITIALIZE));
    assert_eq!(
        refused["error"]["data"]["upstream"]["status"], 401,
        "{refused}"
    );
    // The refused handshake is not kept: the next one is sent to the server again.
    let again: Value = sse_or_json(&plain.exchange(None, INITIALIZE));
    assert_eq!(again["error"]["data"]["upstream"]["status"], 401, "{again}");

    // A session is bound to its token: the same session id with another token is unknown.
    let with_a = format!("Authorization: Bearer {a}\r\n");
    let with_b = format!("Authorization: Bearer {b}\r\n");
    let started = plain.exchange_with(None, &with_a, INITIALIZE);
    let session = session_id_of(&started).unwrap_or_else(|| panic!("{started}"));
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let other = plain.exchange_with(Some(&session), &with_b, list);
    assert!(other.starts_with("HTTP/1.1 404"), "{other}");
    let none = plain.exchange(Some(&session), list);
    assert!(none.starts_with("HTTP/1.1 404"), "{none}");
    let same = plain.exchange_with(Some(&session), &with_a, list);
    assert!(same.contains("\"echo\""), "{same}");
    stop(&mut plain);
    // The request with the other token never reached the server.
    let requests = protected.requests();
    assert!(
        requests.iter().any(|(token, _, _)| *token == 0)
            && !requests.iter().any(|(token, _, _)| *token == 1),
        "{requests:?}"
    );

    // calltape's own header for a client without one; with --token-file, the client's token is
    // serve's and is not passed on.
    let own_dir = dir.path().join("own");
    std::fs::create_dir(&own_dir).unwrap();
    let header = format!("Authorization: Bearer {own}");
    let token_file = own_dir.join("serve.token");
    let before = protected.requests().len();
    let mut served = serve(
        &own_dir,
        &protected.proxy.url(),
        &[
            "--header",
            &header,
            "--token-file",
            token_file.to_str().unwrap(),
        ],
    );
    let serve_token = std::fs::read_to_string(&token_file).unwrap();
    let url = format!("http://{}/mcp", served.addr());
    assert_worked(
        "python 1.x with serve's token",
        &outcome(client("legacy", &url, serve_token.trim())),
        "hello from python",
    );
    stop(&mut served);
    let after = &protected.requests()[before..];
    assert!(
        !after.is_empty() && after.iter().all(|(token, _, _)| *token == 2),
        "{after:?}"
    );
    let stderr = served.stderr();
    assert!(!stderr.contains(&own), "{stderr}");
    for secret in [&a, &b] {
        assert_eq!(files_holding(dir.path(), secret), Vec::<PathBuf>::new());
    }
}

#[test]
fn serve_url_on_a_socket_carries_the_get_stream_and_resumes_it_with_the_last_event_id() {
    // The remote: a Python SDK server behind another `calltape serve`, over Streamable HTTP in the
    // handshake era. Its `flood` tool sends log messages that reach every session's GET stream.
    let dir = tempfile::tempdir().unwrap();
    let inner_dir = dir.path().join("inner");
    let outer_dir = dir.path().join("outer");
    std::fs::create_dir(&inner_dir).unwrap();
    std::fs::create_dir(&outer_dir).unwrap();
    let inner = Served::start_with(
        &inner_dir,
        &["--listen", "127.0.0.1:0"],
        &[python(), peer_script("shared_server.py")],
    );
    let socket = outer_dir.join("serve.sock");
    let recording = outer_dir.join("calls.jsonl");
    let mut outer = Served::start_args(
        &outer_dir,
        &[
            "--socket".into(),
            socket.clone().into(),
            "--url".into(),
            format!("http://{}/mcp", inner.addr()).into(),
            "--record".into(),
            recording.clone().into(),
            // The handshake era, which has the server's GET stream (the inner serve speaks both).
            "--protocol".into(),
            "legacy".into(),
        ],
    );
    assert_eq!(outer.addr(), format!("unix:{}", socket.display()));

    let started = on_socket(&socket, &post(None, INITIALIZE));
    let session = session_id_of(&started).unwrap_or_else(|| panic!("{started}"));
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let accepted = on_socket(&socket, &post(Some(&session), initialized));
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");

    // The GET stream. serve opens the remote's own GET stream once the handshake is through, which
    // a first message shows has happened.
    let mut stream = get_stream(&socket, &session, None);
    let flood = |count: usize| {
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"flood","arguments":{{"count":{count},"size":16}}}}}}"#
        );
        let answer = on_socket(&socket, &post(Some(&session), &call));
        assert!(answer.contains("flooded"), "{answer}");
    };
    stream
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut first = Vec::new();
    for _ in 0..10 {
        flood(1);
        first = read_events(&mut stream, 1).unwrap_or_default();
        if !first.is_empty() {
            break;
        }
    }
    assert_eq!(first.len(), 1, "no message reached the GET stream");
    stream
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();

    // Three log messages: each comes with an event id.
    flood(3);
    let events = read_events(&mut stream, 3).expect("three events within 30 s");
    assert!(
        events
            .iter()
            .all(|(_, data)| data.contains("notifications/message")),
        "{events:?}"
    );
    drop(stream);

    // Resumed after the first: the other two come again, with their ids.
    let mut resumed = get_stream(&socket, &session, Some(&events[0].0));
    let again = read_events(&mut resumed, 2).expect("two events within 30 s");
    assert_eq!(again, events[1..].to_vec());
    drop(resumed);

    stop(&mut outer);
    let recorded = std::fs::read_to_string(&recording).unwrap();
    assert!(
        recorded.contains("\"flood\"") && recorded.contains("flooded"),
        "{recorded}"
    );
}

/// A POST of `body` to `/mcp` on the socket, in session `session` when given.
fn post(session: Option<&str>, body: &str) -> String {
    post_request("localhost", session, "", body)
}

/// One request on a fresh connection to the socket; the whole response.
fn on_socket(socket: &Path, request: &str) -> String {
    let mut stream = UnixStream::connect(socket).expect("connect to serve's socket");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// The session's GET stream on the socket, resumed after `last_event` when given.
fn get_stream(socket: &Path, session: &str, last_event: Option<&str>) -> BufReader<UnixStream> {
    let mut stream = UnixStream::connect(socket).expect("connect to serve's socket");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let resume = last_event
        .map(|id| format!("Last-Event-ID: {id}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n{resume}\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    reader
}

/// The next `count` SSE events that carry data: (id, data), or `None` when the stream's read timeout
/// passed first. Chunked framing lines are skipped.
fn read_events(reader: &mut BufReader<UnixStream>, count: usize) -> Option<Vec<(String, String)>> {
    let mut events = Vec::new();
    let mut id = None;
    while events.len() < count {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(read) => assert!(read > 0, "the stream ended after {events:?}"),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
            Err(e) => panic!("reading the GET stream: {e}"),
        }
        let line = line.trim_end();
        if let Some(value) = line.strip_prefix("id: ") {
            id = Some(value.to_owned());
        } else if let Some(data) = line.strip_prefix("data: ") {
            let id = id
                .take()
                .unwrap_or_else(|| panic!("an event without an id: {data}"));
            events.push((id, data.to_owned()));
        }
    }
    Some(events)
}

/// The JSON-RPC message of a POST's whole response, a JSON body or the first SSE event.
fn sse_or_json(response: &str) -> Value {
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    let text = body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(body);
    serde_json::from_str(text.trim()).unwrap_or_else(|_| panic!("not JSON: {response}"))
}

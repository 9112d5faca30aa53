//! `calltape serve` and `calltape shared` in both protocol eras: the Python SDK 1.x client (the
//! handshake era) and the SDK 2.x client pinned to 2026-07-28 (stateless) on one endpoint, in front of
//! a child of each kind: legacy only (the SDK 1.x FastMCP, server-everything), 2026-07-28 only (an SDK
//! 2.x server that refuses `initialize`), and both (an SDK 2.x server over stdio, whose first request
//! decides its era).

use std::{
    io::{Read, Write},
    net::TcpStream,
    os::unix::fs::PermissionsExt,
    path::PathBuf,
    process::{Child, Command, Output, Stdio},
    time::Duration,
};

use calltape_stdio_bridge::shared::{ServerRecord, SharedKey, SharedPaths};
use serde_json::Value;

use crate::support::{
    self, KillOnDrop, calltape, everything, first_line, peer_script, served_addr, session_id_of,
};

/// The Python of a client or server era: the SDK 1.x or the SDK 2.x.
fn python(era: Era) -> PathBuf {
    match era {
        Era::Legacy => support::python(),
        Era::Modern => support::modern_python(),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Era {
    Legacy,
    Modern,
}

impl Era {
    fn name(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

/// The kinds of child a server runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// The SDK 1.x FastMCP: the handshake era only.
    FastMcp1,
    /// server-everything (TypeScript SDK): the handshake era only.
    Everything,
    /// The SDK 2.x over stdio: the first request decides the era.
    Dual,
    /// The SDK 2.x serving 2026-07-28 only.
    ModernOnly,
    /// The bridge tests' 2026-07-28 server (the SDK 2.x, refusing `initialize` in a middleware).
    ModernServer,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::FastMcp1,
        Kind::Everything,
        Kind::Dual,
        Kind::ModernOnly,
        Kind::ModernServer,
    ];

    fn command(self) -> Vec<PathBuf> {
        match self {
            Kind::FastMcp1 => vec![python(Era::Legacy), peer_script("shared_server.py")],
            Kind::Everything => vec![everything(), "stdio".into()],
            Kind::Dual => vec![
                python(Era::Modern),
                peer_script("era_server.py"),
                "dual".into(),
            ],
            Kind::ModernOnly => vec![
                python(Era::Modern),
                peer_script("era_server.py"),
                "modern".into(),
            ],
            Kind::ModernServer => vec![
                python(Era::Modern),
                peer_script("modern_server.py"),
                "stdio".into(),
            ],
        }
    }

    /// The `--protocol` a server of this child runs with: the default, auto, for every child, so the
    /// era is found as a user's server finds it.
    fn protocol(self) -> &'static str {
        "auto"
    }

    /// A step that calls the child's echo tool with `text`, and what it answers.
    fn echo(self, text: &str) -> (String, String) {
        match self {
            Kind::Everything => (
                format!(r#"echo={{"message":"{text}"}}"#),
                format!("Echo: {text}"),
            ),
            Kind::ModernServer => (format!(r#"shout={{"text":"{text}"}}"#), text.to_uppercase()),
            _ => (format!(r#"echo={{"text":"{text}"}}"#), text.to_owned()),
        }
    }
}

/// A running `calltape serve` and the URL it printed.
struct Served {
    _process: KillOnDrop,
    url: String,
    addr: String,
}

impl Served {
    fn start(kind: Kind, args: &[&str]) -> Self {
        let protocol = ["--protocol", kind.protocol()];
        let named = args.contains(&"--protocol");
        let mut process = calltape()
            .arg("serve")
            .args(if named { &[][..] } else { &protocol[..] })
            .args(args)
            .arg("--")
            .args(kind.command())
            .env("CALLTAPE_LOG", "debug")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map(KillOnDrop::with_sigterm)
            .unwrap();
        let url = first_line(&mut process);
        let addr = served_addr(&url);
        Self {
            _process: process,
            url,
            addr,
        }
    }

    /// Starts a client of `era` that runs `steps` in one session (legacy) or one request each
    /// (modern); it runs until [`Running::wait`].
    fn client(&self, era: Era, steps: &[String]) -> Running {
        let child = Command::new(python(era))
            .arg(peer_script("era_serve_client.py"))
            .arg(era.name())
            .arg(&self.url)
            .args(steps)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Running { era, child }
    }

    /// Initializes a handshake-era session with a raw POST; its id.
    fn initialize(&self) -> String {
        let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
        let response = self.post(&format!("Host: {}\r\n", self.addr), body);
        session_id_of(&response).unwrap_or_else(|| panic!("no session: {response}"))
    }

    /// The headers of a request in `session`.
    fn session_headers(&self, session: &str) -> String {
        format!(
            "Host: {}\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n",
            self.addr
        )
    }

    /// Opens `session`'s GET stream; its events are read from the returned connection.
    fn open_get(&self, session: &str) -> TcpStream {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        let request = format!(
            "GET /mcp HTTP/1.1\r\n{}Accept: text/event-stream\r\n\r\n",
            self.session_headers(session)
        );
        stream.write_all(request.as_bytes()).unwrap();
        stream
    }

    /// Sends a raw POST whose answer is an event stream, read from the returned connection.
    fn open_post(&self, headers: &str, body: &str) -> TcpStream {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        stream
    }

    /// One raw POST on a fresh connection, with `headers` added; the whole response.
    fn post(&self, headers: &str, body: &str) -> String {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response
    }
}

/// A client process on its way.
struct Running {
    era: Era,
    child: Child,
}

impl Running {
    /// The texts its steps got, or what it said when it failed.
    fn wait(self) -> Result<Vec<String>, String> {
        let output = self.child.wait_with_output().unwrap();
        steps_of(self.era, &output)
    }
}

fn steps_of(era: Era, output: &Output) -> Result<Vec<String>, String> {
    if !output.status.success() {
        return Err(format!(
            "the {} client failed ({}): {}",
            era.name(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let value: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("the {} client printed no JSON: {e}", era.name()))?;
    Ok(value["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s.as_str().expect("a text").to_owned())
        .collect())
}

fn steps(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn era_serve_a_listen_stream_gets_its_own_events_with_its_own_id() {
    // A 2026-07-28 child ties each event of a `subscriptions/listen` stream to the listen request by
    // its id in `_meta`: the id the multiplexer sent, which the client never saw. A listen stream is
    // an SSE stream even on a server that answers other requests with one JSON body.
    for kind in [Kind::Dual, Kind::ModernOnly] {
        for json in [false, true] {
            let mut args = vec![];
            if json {
                args.push("--json-response");
            }
            let served = Served::start(kind, &args);
            let listened = served
                .client(Era::Modern, &steps(&["listen", "pid"]))
                .wait();
            let listened = listened.map(|steps| steps[0].clone());
            assert_eq!(
                listened,
                Ok("tools_list_changed".to_owned()),
                "{kind:?} {args:?}: the change reached the listen stream"
            );
        }
    }
}

#[test]
fn era_serve_a_list_change_of_a_child_of_both_eras_reaches_sessions_of_both_eras() {
    // The SDK 2.x child says its tools changed to a handshake-era session and to listen streams,
    // and drops whichever its connection's era does not carry: whatever era serve talks to it in,
    // each client hears the change as it would from a server of its own era.
    for protocol in ["auto", "legacy"] {
        let served = Served::start(Kind::Dual, &["--protocol", protocol]);
        let legacy = served.client(Era::Legacy, &steps(&["changed"])).wait();
        assert_eq!(
            legacy,
            Ok(steps(&["tools_list_changed"])),
            "--protocol {protocol}: the handshake-era session"
        );
        let modern = served.client(Era::Modern, &steps(&["listen"])).wait();
        assert_eq!(
            modern,
            Ok(steps(&["tools_list_changed"])),
            "--protocol {protocol}: the 2026-07-28 listen stream"
        );
    }
}

#[test]
fn era_serve_a_list_change_one_era_causes_reaches_the_other_eras_streams() {
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"}}"#;
    for protocol in ["auto", "legacy"] {
        for caller in [Era::Legacy, Era::Modern] {
            let served = Served::start(Kind::Dual, &["--protocol", protocol]);
            let what = format!("--protocol {protocol}, {caller:?} caller");
            let session = served.initialize();
            let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
            served.post(&served.session_headers(&session), initialized);
            let mut get = served.open_get(&session);
            let listen = format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}},{meta}}}}}"#
            );
            let stateless = |method: &str, name: &str| {
                format!(
                    "Host: {}
MCP-Protocol-Version: 2026-07-28
Mcp-Method: {method}
{name}",
                    served.addr
                )
            };
            let mut listening = served.open_post(&stateless("subscriptions/listen", ""), &listen);
            let acked = until_event(&mut listening, "notifications/subscriptions/acknowledged");
            assert!(acked.is_some(), "{what}: the listen was not acknowledged");
            let called = match caller {
                Era::Legacy => served.post(
                    &served.session_headers(&session),
                    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"change","arguments":{}}}"#,
                ),
                Era::Modern => served.post(
                    &stateless("tools/call", "Mcp-Name: change
"),
                    &format!(
                        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"change","arguments":{{}},{meta}}}}}"#
                    ),
                ),
            };
            assert!(called.contains("changed"), "{what}: {called}");
            let heard = until_event(&mut get, "notifications/tools/list_changed");
            assert!(
                heard.is_some(),
                "{what}: the handshake-era session heard nothing"
            );
            let heard = until_event(&mut listening, "notifications/tools/list_changed");
            let heard = heard.unwrap_or_else(|| panic!("{what}: the listen stream heard nothing"));
            assert_eq!(
                heard["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7,
                "{what}: {heard}"
            );
        }
    }
}

/// Reads SSE events from `stream` until one whose method is `method` (ten seconds of quiet at most).
fn until_event(stream: &mut TcpStream, method: &str) -> Option<Value> {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    loop {
        for line in text.lines() {
            if let Some(data) = line.strip_prefix("data: ")
                && let Ok(message) = serde_json::from_str::<Value>(data)
                && message["method"] == method
            {
                return Some(message);
            }
        }
        // Only whole lines are kept for the next look.
        let cut = text.rfind('\n').map_or(0, |at| at + 1);
        text.drain(..cut);
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
}

#[test]
fn era_serve_stateless_requests_keep_the_loopback_guards() {
    let served = Served::start(Kind::Dual, &[]);
    let stateless = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n";
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}"#;
    let listen = r#"{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"filter":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let host = format!("Host: {}\r\n", served.addr);
    let port = served.addr.rsplit(':').next().unwrap();
    for body in [body, listen] {
        let origin = served.post(
            &format!("{host}{stateless}Origin: http://evil.example\r\n"),
            body,
        );
        assert!(origin.starts_with("HTTP/1.1 403"), "{origin}");
        let foreign = served.post(&format!("Host: evil.example:{port}\r\n{stateless}"), body);
        assert!(foreign.starts_with("HTTP/1.1 421"), "{foreign}");
        let rebound = served.post(&format!("Host: 127.0.0.2:{port}\r\n{stateless}"), body);
        assert!(rebound.starts_with("HTTP/1.1 421"), "{rebound}");
    }
    // The same request from a loopback host is served, so the refusals above are the guard's.
    let served_ok = served.post(&format!("{host}{stateless}"), body);
    assert!(served_ok.starts_with("HTTP/1.1 200"), "{served_ok}");
    assert!(served_ok.contains(r#""name":"echo""#), "{served_ok}");
}

#[test]
fn era_serve_both_eras_share_one_endpoint_whatever_the_childs_era() {
    for kind in Kind::ALL {
        let served = Served::start(kind, &[]);
        let (legacy_step, legacy_text) = kind.echo("from a legacy client");
        let (modern_step, modern_text) = kind.echo("from a modern client");
        // Both at once, several calls each, so their requests interleave on the one child.
        let legacy = served.client(
            Era::Legacy,
            &[legacy_step.clone(), legacy_step.clone(), legacy_step],
        );
        let modern = served.client(
            Era::Modern,
            &[modern_step.clone(), modern_step.clone(), modern_step],
        );
        let legacy = legacy.wait();
        let modern = modern.wait();
        assert_eq!(
            legacy,
            Ok(vec![legacy_text; 3]),
            "{kind:?}: the legacy client"
        );
        assert_eq!(
            modern,
            Ok(vec![modern_text; 3]),
            "{kind:?}: the modern client"
        );
    }
}

#[test]
fn era_serve_a_legacy_initialize_after_a_stateless_request_still_works() {
    // A child of both eras takes its era from its first request: forwarded as-is, a stateless request
    // made it a 2026-07-28 connection, and the legacy initialize that followed got -32022.
    for kind in [Kind::Dual, Kind::FastMcp1, Kind::ModernOnly] {
        let served = Served::start(kind, &[]);
        let first = served.client(Era::Modern, &steps(&["pid"])).wait();
        let second = served.client(Era::Legacy, &steps(&["pid"])).wait();
        let third = served.client(Era::Modern, &steps(&["pid"])).wait();
        let first = first.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(
            second,
            Ok(first.clone()),
            "{kind:?}: the legacy client, on the same child"
        );
        assert_eq!(third, Ok(first), "{kind:?}: a stateless request after it");
    }
}

#[test]
fn era_serve_a_child_restart_reinitializes_in_both_eras() {
    for kind in [Kind::FastMcp1, Kind::Dual, Kind::ModernOnly] {
        for opener in [Era::Legacy, Era::Modern] {
            let served = Served::start(kind, &[]);
            let pid = |era: Era| -> String {
                let steps = served.client(era, &steps(&["pid"])).wait();
                let steps = steps.unwrap_or_else(|e| panic!("{kind:?}, {opener:?}: {e}"));
                steps[0].clone()
            };
            // Only the opener's era reached the child before it dies.
            let before = pid(opener);
            let killed = Command::new("kill").arg(&before).status().unwrap();
            assert!(killed.success());
            // Each era again, the opener first, on the restarted child.
            let after = pid(opener);
            assert_ne!(after, before, "{kind:?}, {opener:?}: a new child");
            let other = if opener == Era::Legacy {
                Era::Modern
            } else {
                Era::Legacy
            };
            assert_eq!(pid(other), after, "{kind:?}, {opener:?}: the other era");
        }
    }
}

#[test]
fn era_serve_shared_serves_a_client_of_the_era_its_child_lacks() {
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    for (era, kind, key) in [
        (Era::Modern, Kind::FastMcp1, "legacy-child"),
        (Era::Legacy, Kind::ModernOnly, "modern-child"),
    ] {
        let (step, text) = kind.echo("through-shared");
        let output = Command::new(python(era))
            .arg(peer_script("era_serve_client.py"))
            .arg(era.name())
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_calltape"))
            .args(["shared", "--key", key, "--idle-exit", "5s"])
            .args(["--protocol", kind.protocol(), "--"])
            .args(kind.command())
            .env("ERA_STEPS", format!("pid {step}"))
            .env("CALLTAPE_HOME", home.path())
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let got = steps_of(era, &output).unwrap_or_else(|e| panic!("{era:?} on {kind:?}: {e}"));
        assert_eq!(got.len(), 2, "{era:?} on {kind:?}: {got:?}");
        assert_eq!(got[1], text, "{era:?} on {kind:?}");
    }
}

#[test]
fn era_serve_shared_passes_protocol_on_and_a_modern_client_listens_through_it() {
    // The server `shared` starts translates for its child; the session in front of it passes a 2026-07-28
    // client's requests through unchanged, so its listen stream is the child's own.
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    for (kind, protocol) in [(Kind::ModernOnly, "modern"), (Kind::Dual, "auto")] {
        let key = format!("listen-{protocol}");
        let output = Command::new(python(Era::Modern))
            .arg(peer_script("era_serve_client.py"))
            .arg("modern")
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_calltape"))
            .args(["shared", "--key", &key, "--protocol", protocol])
            .args(["--idle-exit", "30s", "--"])
            .args(kind.command())
            .env("ERA_STEPS", "listen")
            .env("CALLTAPE_HOME", home.path())
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let got = steps_of(Era::Modern, &output);
        let paths = SharedPaths::under(home.path(), &SharedKey::new(&key).unwrap());
        let record = ServerRecord::read(&paths.record())
            .unwrap()
            .expect("a record");
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", record.pid)).unwrap();
        let _ = Command::new("kill").arg(record.pid.to_string()).status();
        assert_eq!(got, Ok(steps(&["tools_list_changed"])), "{kind:?}");
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let at = args.iter().position(|a| *a == b"--protocol");
        assert_eq!(
            at.and_then(|at| args.get(at + 1)).copied(),
            Some(protocol.as_bytes()),
            "{kind:?}: the server was started with --protocol {protocol}"
        );
    }
}

#[test]
fn era_serve_a_stateless_request_gets_the_http_status_and_header_checks_of_its_era() {
    let meta = |version: &str| {
        format!(
            r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"{version}","io.modelcontextprotocol/clientCapabilities":{{}}}}"#
        )
    };
    let list = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{}}}}}"#,
        meta("2026-07-28")
    );
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}},{}}}}}"#,
        meta("2026-07-28")
    );
    let other_version = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{}}}}}"#,
        meta("2099-01-01")
    );
    let unknown = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"nope/nothing","params":{{{}}}}}"#,
        meta("2026-07-28")
    );
    let no_capabilities = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    // (the headers after MCP-Protocol-Version: 2026-07-28, the body, the status, the error code)
    let cases: &[(&str, &str, u16, Option<i64>)] = &[
        ("Mcp-Method: tools/list\r\n", &list, 200, None),
        (
            "Mcp-Method: tools/call\r\nMcp-Name: echo\r\n",
            &call,
            200,
            None,
        ),
        ("Mcp-Method: tools/call\r\n", &list, 400, Some(-32020)),
        ("", &list, 400, Some(-32020)),
        (
            "Mcp-Method: tools/call\r\nMcp-Name: pid\r\n",
            &call,
            400,
            Some(-32020),
        ),
        (
            "Mcp-Method: tools/list\r\n",
            &other_version,
            400,
            Some(-32020),
        ),
        ("Mcp-Method: nope/nothing\r\n", &unknown, 404, Some(-32601)),
        (
            "Mcp-Method: tools/list\r\n",
            no_capabilities,
            400,
            Some(-32602),
        ),
    ];
    for args in [&[][..], &["--json-response"][..]] {
        let served = Served::start(Kind::ModernOnly, args);
        let host = format!(
            "Host: {}\r\nMCP-Protocol-Version: 2026-07-28\r\n",
            served.addr
        );
        for (headers, body, status, code) in cases {
            let response = served.post(&format!("{host}{headers}"), body);
            let what = format!("{args:?} {headers:?} {body}: {response}");
            assert!(
                response.starts_with(&format!("HTTP/1.1 {status} ")),
                "{what}"
            );
            let text = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            match code {
                Some(code) => {
                    let answer: Value = serde_json::from_str(text).expect(&what);
                    assert_eq!(answer["error"]["code"], *code, "{what}");
                    assert_eq!(answer["id"], 1, "{what}");
                }
                None => assert!(text.contains(r#""result""#), "{what}"),
            }
        }
    }
}

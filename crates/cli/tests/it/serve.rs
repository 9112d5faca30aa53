//! `calltape serve` under hostile load, with its default limits: connections that never send their
//! headers, more sessions than it holds, and a GET stream whose client does not read. Through all of
//! it, a real client is served and the process stays small.

use std::{
    ffi::OsString,
    io::{Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use crate::support::{
    KillOnDrop, calltape, first_line, peer_script, python, resident_mib, session_id_of,
};

/// A running `calltape serve` and its address.
pub(crate) struct Served {
    pub(crate) child: KillOnDrop,
    addr: String,
    stderr: PathBuf,
}

impl Served {
    /// `calltape serve ARGS… -- python shared_server.py`.
    fn start(dir: &Path, args: &[&str]) -> Self {
        Self::start_with(dir, args, &[python(), peer_script("shared_server.py")])
    }

    /// `calltape serve ARGS… -- SERVER…`, its stderr in `dir`.
    pub(crate) fn start_with(dir: &Path, args: &[&str], server: &[PathBuf]) -> Self {
        let mut all: Vec<OsString> = args.iter().map(OsString::from).collect();
        all.push("--".into());
        all.extend(server.iter().map(OsString::from));
        Self::start_args(dir, &all)
    }

    /// `calltape serve ARGS…`, its stderr in `dir`.
    pub(crate) fn start_args(dir: &Path, args: &[OsString]) -> Self {
        Self::start_configured(dir, args, |_| {})
    }

    /// [`start_args`](Self::start_args), with `configure` given the command first (its environment,
    /// say).
    pub(crate) fn start_configured(
        dir: &Path,
        args: &[OsString],
        configure: impl FnOnce(&mut Command),
    ) -> Self {
        let stderr = dir.join("stderr");
        let mut command = calltape();
        configure(&mut command);
        let mut child = command
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .map(KillOnDrop::with_sigterm)
            .unwrap();
        // `http://ADDR/mcp`, or `unix:PATH` on a socket.
        let url = first_line(&mut child);
        assert!(
            url.starts_with("http://") || url.starts_with("unix:"),
            "a URL on stdout, got {url:?}"
        );
        let addr = url
            .strip_prefix("http://")
            .and_then(|u| u.strip_suffix("/mcp"))
            .unwrap_or(&url)
            .to_owned();
        Self {
            child,
            addr,
            stderr,
        }
    }

    /// The resident memory of the `calltape serve` process, in MiB.
    fn resident_mib(&self) -> u64 {
        resident_mib(self.child.id())
    }

    /// One request on a fresh connection; the whole response.
    pub(crate) fn exchange(&self, session: Option<&str>, body: &str) -> String {
        self.exchange_with(session, "", body)
    }

    /// [`exchange`](Self::exchange) with more header lines, each ending in CRLF.
    pub(crate) fn exchange_with(&self, session: Option<&str>, headers: &str, body: &str) -> String {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let request = post_request(&self.addr, session, headers, body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response
    }

    /// Initializes a session; its id, or the whole response when it was refused.
    fn initialize(&self) -> Result<String, String> {
        let response = self.exchange(None, INITIALIZE);
        let id = session_id_of(&response);
        id.ok_or(response)
    }

    /// Calls `echo` in a session; true when the text came back.
    fn echo(&self, session: &str, text: &str) -> bool {
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
        );
        self.exchange(Some(session), &call).contains(text)
    }

    /// Where it listens: `127.0.0.1:PORT`.
    pub(crate) fn addr(&self) -> &str {
        &self.addr
    }

    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

/// A whole `POST /mcp` of `body` to `host`, in session `session` when given (at 2025-06-18), with
/// more header lines `headers`, each ending in CRLF; the connection closes after the answer.
pub(crate) fn post_request(host: &str, session: Option<&str>, headers: &str, body: &str) -> String {
    let session = session
        .map(|id| format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n"))
        .unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nConnection: close\r\n{session}{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// Whether the server closed `stream` (the end, or a reset) before a read gave up after 60 s.
fn closed_by_server(stream: &mut TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            // A 408 or another answer before the end is fine.
            Ok(_) => {}
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    }
}

#[test]
fn serve_with_default_limits_outlasts_half_sent_requests_and_a_flood_of_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let served = Served::start(tmp.path(), &["--listen", "127.0.0.1:0"]);

    // 300 connections that send half a request and then nothing (past the cap of 256).
    let mut half_sent: Vec<TcpStream> = (0..300)
        .map(|_| {
            let mut stream = TcpStream::connect(&served.addr).unwrap();
            stream
                .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event")
                .unwrap();
            stream
        })
        .collect();
    let session = served.initialize().expect("a real client's session");
    assert!(served.echo(&session, "still served"));

    // More initializes than the 1,024 sessions it holds: the ones past the cap get 503 and say why.
    let mut refused = Vec::new();
    for _ in 0..1100 {
        if let Err(response) = served.initialize() {
            refused.push(response);
        }
    }
    assert_eq!(
        refused.len(),
        1100 - 1023,
        "one session was the real client's"
    );
    assert!(refused[0].starts_with("HTTP/1.1 503"), "{}", refused[0]);
    assert!(refused[0].contains("too_many_sessions"), "{}", refused[0]);
    assert!(served.echo(&session, "served after the flood"));
    let resident = served.resident_mib();
    assert!(resident < 150, "{resident} MiB resident");

    // Every half-sent request is closed: past the cap to make room, or at the 10 s header timeout.
    for (n, stream) in half_sent.iter_mut().enumerate() {
        assert!(closed_by_server(stream), "connection {n} is still open");
    }
    assert!(served.echo(&session, "served at the end"));
    assert!(served.resident_mib() < 150);
    // No --token-file on TCP: one warning says that any local user can connect.
    let stderr = served.stderr();
    assert_eq!(
        stderr.matches("any local user can connect").count(),
        1,
        "{stderr}"
    );
    // Its advice reaches the log whole: nothing in it reads as a credential to the log's redactor.
    assert!(
        stderr.contains("name a file that holds one with --token-file\n"),
        "{stderr}"
    );
}

#[test]
fn serve_with_a_token_file_or_on_a_socket_gives_no_warning_about_local_users() {
    let tmp = tempfile::tempdir().unwrap();
    let token = tmp.path().join("token");
    let socket = tmp.path().join("s.sock");
    for args in [
        vec![
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            token.to_str().unwrap(),
        ],
        vec!["--socket", socket.to_str().unwrap()],
    ] {
        let served = Served::start(tmp.path(), &args);
        // The URL is printed after the warning would be: the log is complete up to here.
        let stderr = served.stderr();
        assert!(!stderr.contains("any local user"), "{args:?}: {stderr}");
    }
}

#[test]
fn serve_closes_a_get_stream_whose_client_does_not_read_and_stays_small() {
    let tmp = tempfile::tempdir().unwrap();
    let served = Served::start(tmp.path(), &["--listen", "127.0.0.1:0"]);
    let reader = served.initialize().expect("a session");
    // The reader opens its GET stream and never reads it.
    let mut stream = TcpStream::connect(&served.addr).unwrap();
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {reader}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n",
        served.addr
    );
    stream.write_all(get.as_bytes()).unwrap();
    // Another session has the server send 200 MiB of log messages, which go to every session.
    let caller = served.initialize().expect("a session");
    let flood = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"flood","arguments":{"count":200,"size":1048576}}}"#;
    let response = served.exchange(Some(&caller), flood);
    assert!(
        response.contains("flooded"),
        "{}",
        &response[..response.len().min(500)]
    );
    let resident = served.resident_mib();
    assert!(resident < 150, "{resident} MiB resident");
    assert!(served.echo(&caller, "still served"));
    // The stream fell behind and was closed: what the server wrote before ends in the end of it.
    assert!(closed_by_server(&mut stream));
}

#[test]
fn serve_records_with_the_redaction_names_and_finishes_the_recording_on_each_signal() {
    for signal in ["TERM", "INT", "HUP"] {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("calls.jsonl");
        let mut served = Served::start(
            tmp.path(),
            &[
                "--listen",
                "127.0.0.1:0",
                "--record",
                file.to_str().unwrap(),
                "--redact",
                "text",
            ],
        );
        let session = served.initialize().expect("a session");
        assert!(served.echo(&session, "hello-there"), "{}", served.stderr());
        let list = r#"{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{}}"#;
        assert!(served.exchange(Some(&session), list).contains("\"echo\""));
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &served.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let status = served.child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "SIG{signal}: {}", served.stderr());
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // The call, then the session's tool list, written as the server stopped.
        assert_eq!(lines.len(), 2, "SIG{signal}: {text}");
        assert_eq!(lines[0]["name"], "echo", "{text}");
        assert_eq!(lines[1]["method"], "tools/list", "{text}");
        // A schema's property under a name redacted is a definition, not a value: it is kept,
        // where the input under that name is redacted.
        assert_eq!(lines[1]["answer"]["tools"][1]["name"], "echo", "{text}");
        assert_eq!(
            lines[1]["answer"]["tools"][1]["inputSchema"]["properties"]["text"],
            serde_json::json!({"title": "Text", "type": "string"}),
            "{text}"
        );
        assert_eq!(lines[0]["input"]["text"], "[REDACTED]", "{text}");
        assert!(!text.contains("hello-there"), "{text}");
    }
}

//! `calltape serve` and `calltape shared` in both protocol eras: the Python SDK 1.x client (the
//! handshake era) and the SDK 2.x client pinned to 2026-07-28 (stateless) on one endpoint, in front of
//! a child of each kind: legacy only (the SDK 1.x FastMCP, server-everything), 2026-07-28 only (an SDK
//! 2.x server that refuses `initialize`), and both (an SDK 2.x server over stdio, whose first request
//! decides its era).

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    path::PathBuf,
    process::{Child, Command, Output, Stdio},
    time::Duration,
};

use serde_json::Value;

use crate::support::{calltape, peers, repo_root};

fn peer(name: &str) -> PathBuf {
    repo_root().join("crates/cli/tests/peers").join(name)
}

/// The Python of a client or server era: the SDK 1.x or the SDK 2.x.
fn python(era: Era) -> PathBuf {
    match era {
        Era::Modern => peers().join("venv2/bin/python"),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Era {
    Modern,
}

impl Era {
    fn name(self) -> &'static str {
        match self {
            Era::Modern => "modern",
        }
    }
}

/// The kinds of child a server runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// The SDK 2.x over stdio: the first request decides the era.
    Dual,
    /// The SDK 2.x serving 2026-07-28 only.
    ModernOnly,
}

impl Kind {
    fn command(self) -> Vec<PathBuf> {
        match self {
            Kind::Dual => vec![python(Era::Modern), peer("era_server.py"), "dual".into()],
            Kind::ModernOnly => vec![python(Era::Modern), peer("era_server.py"), "modern".into()],
        }
    }
}

/// A running `calltape serve` and the URL it printed.
struct Served {
    process: Child,
    url: String,
    addr: String,
}

impl Served {
    fn start(kind: Kind, args: &[&str]) -> Self {
        let mut process = calltape()
            .arg("serve")
            .args(args)
            .arg("--")
            .args(kind.command())
            .env("CALLTAPE_LOG", "debug")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut url = String::new();
        BufReader::new(process.stdout.take().unwrap())
            .read_line(&mut url)
            .unwrap();
        let url = url.trim().to_owned();
        let addr = url
            .strip_prefix("http://")
            .and_then(|u| u.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("a URL on stdout, got {url:?}"))
            .to_owned();
        Self { process, url, addr }
    }

    /// Starts a client of `era` that runs `steps` in one session (legacy) or one request each
    /// (modern); it runs until [`Running::wait`].
    fn client(&self, era: Era, steps: &[String]) -> Running {
        let child = Command::new(python(era))
            .arg(peer("era_serve_client.py"))
            .arg(era.name())
            .arg(&self.url)
            .args(steps)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Running { era, child }
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

impl Drop for Served {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.process.id().to_string())
            .stderr(Stdio::null())
            .status();
        let _ = self.process.wait();
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
    // its id in `_meta`: the id the multiplexer sent, which the client never saw.
    for kind in [Kind::Dual, Kind::ModernOnly] {
        let served = Served::start(kind, &[]);
        let listened = served.client(Era::Modern, &steps(&["listen"])).wait();
        assert_eq!(
            listened,
            Ok(steps(&["tools_list_changed"])),
            "{kind:?}: the change reached the listen stream"
        );
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

//! A stdio MCP peer for the benches that drive a child process: a minimal echo server to run as the
//! child, and the client side that starts a child, initializes it and sends it calls.
//!
//! A bench binary plays several roles, chosen by [`ROLE`] in its environment, so that one executable
//! is the bench, the echo server and whatever sits in between.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The environment variable that picks the role a bench binary plays.
pub const ROLE: &str = "CALLTAPE_BENCH_ROLE";

/// `mcp-server-everything` as `.ci/install-peers` installs it, found through `CALLTAPE_PEERS`;
/// without it, says that `group` is not run (when the command line selects it).
pub fn reference_server(group: &str) -> Option<PathBuf> {
    let server = std::env::var_os("CALLTAPE_PEERS")
        .map(|peers| PathBuf::from(peers).join("node/node_modules/.bin/mcp-server-everything"))
        .filter(|server| server.exists());
    if server.is_none() && crate::paired::selected(group) {
        eprintln!(
            "{group}: not run: set CALLTAPE_PEERS with `eval \"$(.ci/install-peers --env)\"` to \
             bench against mcp-server-everything"
        );
    }
    server
}

/// A minimal stdio MCP server: answers every request with a one-line text result that echoes
/// `arguments.text`, and `initialize` with a fixed handshake. Returns when stdin ends.
pub fn echo_server() {
    let mut input = BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(request) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(id) = request.get("id") else {
            continue;
        };
        let result = if request["method"] == "initialize" {
            serde_json::json!({ "protocolVersion": "2025-06-18", "capabilities": { "tools": {} },
                "serverInfo": { "name": "bench-echo", "version": "1" } })
        } else {
            serde_json::json!({ "content": [{ "type": "text", "text": request["params"]["arguments"]["text"] }] })
        };
        let answer = serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result });
        if writeln!(out, "{answer}").is_err() {
            break;
        }
        // Flush once nothing more is waiting, so pipelined requests share writes.
        if input.buffer().is_empty() && out.flush().is_err() {
            break;
        }
    }
}

/// A child process spoken to over its stdin and stdout, one JSON-RPC message per line.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Peer {
    /// Starts `command` with piped stdio and goes through the MCP handshake with it.
    pub fn start(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the peer");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut peer = Self {
            child,
            stdin: Some(stdin),
            stdout,
            line: String::new(),
        };
        peer.send(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#);
        peer.recv();
        peer.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        peer
    }

    /// This bench binary again, in `role`.
    pub fn own_binary(role: &str) -> Command {
        let mut command = Command::new(std::env::current_exe().expect("own path"));
        command.env(ROLE, role);
        command
    }

    /// Writes one message and its newline.
    pub fn send(&mut self, line: &[u8]) {
        let input = self.stdin.as_mut().expect("stdin open");
        input.write_all(line).expect("write");
        input.write_all(b"\n").expect("write");
    }

    /// Reads one line; its length in bytes.
    pub fn recv(&mut self) -> usize {
        self.line.clear();
        let n = self.stdout.read_line(&mut self.line).expect("read");
        assert!(n > 0, "the peer closed its stdout");
        n
    }

    /// Writes `requests` (whole lines) from another thread while reading `answers` lines; the bytes
    /// read.
    pub fn pipeline(&mut self, requests: &[u8], answers: usize) -> usize {
        let Self {
            stdin,
            stdout,
            line,
            ..
        } = self;
        let stdin = stdin.as_mut().expect("stdin open");
        std::thread::scope(|scope| {
            scope.spawn(|| {
                stdin.write_all(requests).expect("write");
                stdin.flush().expect("flush");
            });
            let mut bytes = 0;
            for _ in 0..answers {
                line.clear();
                bytes += stdout.read_line(line).expect("read");
            }
            bytes
        })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // Closing stdin ends the child (and an echo server behind it).
        self.stdin = None;
        let _ = self.child.wait();
    }
}

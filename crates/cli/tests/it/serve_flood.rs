//! `calltape serve` with its default options while one client floods it: 5,000 requests in one batch
//! whose answers it never reads, and a stateless `subscriptions/listen` for 5,000 resources. Another
//! session's `ping` is answered throughout, in front of a server that reads nothing while its stdout
//! is full (`serial_server.py`), the published server-everything, and the Python SDK 2.x server of
//! both eras (which `--protocol auto` talks to in 2026-07-28).

use std::{
    io::{Read, Write},
    net::TcpStream,
    path::PathBuf,
    process::Stdio,
    time::Duration,
};

use serde_json::{Value, json};

use crate::support::{
    KillOnDrop, calltape, everything, first_line, modern_python, peer_script, python, resident_mib,
    served_addr, session_id_of,
};

/// The requests of the flood, and the resources of the big listen.
const FLOOD: usize = 5000;

/// The children `serve` runs here: (what, its command).
fn children() -> Vec<(&'static str, Vec<PathBuf>)> {
    vec![
        (
            "a server that reads nothing while its stdout is full",
            vec![python(), peer_script("serial_server.py")],
        ),
        ("server-everything", vec![everything(), "stdio".into()]),
        (
            "the Python SDK 2.x server of both eras",
            vec![modern_python(), peer_script("era_server.py"), "dual".into()],
        ),
    ]
}

/// `calltape serve` with its default options, and its address.
struct Served {
    process: KillOnDrop,
    addr: String,
}

impl Served {
    fn start(command: &[PathBuf]) -> Self {
        let mut process = calltape()
            .args(["serve", "--listen", "127.0.0.1:0", "--"])
            .args(command)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map(KillOnDrop::with_sigterm)
            .unwrap();
        let addr = served_addr(&first_line(&mut process));
        Self { process, addr }
    }

    /// Sends a POST with `headers` on a connection of its own, and reads the head of its answer
    /// (so that the server has taken every message of it), leaving the answers unread.
    fn flood(&self, headers: &str, body: &[u8]) -> TcpStream {
        let mut stream = self.send(headers, body);
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            let read = stream
                .read(&mut byte)
                .expect("the head of the flood's answer");
            assert_eq!(read, 1, "the server closed the flood's connection");
            head.push(byte[0]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        stream
    }

    /// Sends a POST with `headers` on a connection of its own, and leaves its answer unread.
    fn send(&self, headers: &str, body: &[u8]) -> TcpStream {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        stream
    }

    /// A POST's whole response; empty when nothing came within a minute (the server hangs).
    fn exchange(&self, headers: &str, body: &[u8]) -> String {
        let mut stream = self.send(headers, body);
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        String::from_utf8_lossy(&response).into_owned()
    }

    /// Initializes a session; its id.
    fn initialize(&self) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "flood", "version": "1"}}});
        let response = self.exchange("", body.to_string().as_bytes());
        let id = session_id_of(&response).unwrap_or_else(|| panic!("no session: {response}"));
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.exchange(&session_headers(&id), done.to_string().as_bytes());
        id
    }

    /// Whether `session`'s ping was answered (within a minute).
    fn ping(&self, session: &str) -> bool {
        let ping = json!({"jsonrpc": "2.0", "id": "still-there", "method": "ping"});
        let response = self.exchange(&session_headers(session), ping.to_string().as_bytes());
        messages(&response)
            .iter()
            .any(|m| m["id"] == "still-there" && m["result"] == json!({}))
    }

    /// The resident memory of the `calltape serve` process, in MiB.
    fn resident_mib(&self) -> u64 {
        resident_mib(self.process.id())
    }
}

fn session_headers(id: &str) -> String {
    format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n")
}

/// The JSON messages of a response, JSON or SSE.
fn messages(response: &str) -> Vec<Value> {
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let mut found: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    if found.is_empty()
        && let Ok(value) = serde_json::from_str::<Value>(body.trim())
    {
        found.push(value);
    }
    found
}

#[test]
fn serve_answers_another_session_while_one_floods_it_with_a_batch_it_never_reads() {
    let batch: Vec<Value> = (0..FLOOD)
        .map(|n| json!({"jsonrpc": "2.0", "id": n, "method": "tools/list"}))
        .collect();
    let batch = serde_json::to_vec(&batch).unwrap();
    for (what, command) in children() {
        let served = Served::start(&command);
        let flooder = served.initialize();
        let other = served.initialize();
        let _flood = served.flood(&session_headers(&flooder), &batch);
        assert!(served.ping(&other), "{what}: the other session's ping hung");
        let resident = served.resident_mib();
        assert!(resident < 150, "{what}: {resident} MiB resident");
    }
}

#[test]
fn serve_refuses_a_listen_for_5000_resources_and_answers_another_session() {
    let uris: Vec<String> = (0..FLOOD).map(|n| format!("test://flood/{n}")).collect();
    let listen = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": uris},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let stateless = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n";
    for (what, command) in children() {
        let served = Served::start(&command);
        let other = served.initialize();
        let response = served.exchange(stateless, listen.to_string().as_bytes());
        let answers = messages(&response);
        let refused = answers
            .iter()
            .find(|m| m["id"] == 1)
            .unwrap_or_else(|| panic!("{what}: no answer to the listen: {response}"));
        assert_eq!(refused["error"]["code"], -32006, "{what}: {refused}");
        assert_eq!(
            refused["error"]["data"]["reason"], "too_many_uris",
            "{what}: {refused}"
        );
        assert!(served.ping(&other), "{what}: the other session's ping hung");
    }
}

//! A test client that drives a bridge over in-memory pipes, and the echo server's path.

pub(crate) mod source;

use std::{path::PathBuf, time::Duration};

use calltape_stdio_bridge::{Bridge, Error, FrameReader, Incoming, Summary};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncWriteExt, DuplexStream},
    task::JoinHandle,
};

/// The fixture MCP server (`tests/fixtures/echo_server.rs`), which `cargo test` builds beside the tests.
pub(crate) fn echo_server() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target folder")
        .join("examples")
        .join("echo_server");
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test -p calltape-stdio-bridge`, which builds the examples",
        path.display()
    );
    path
}

pub(crate) struct Client {
    tx: Option<DuplexStream>,
    rx: FrameReader<DuplexStream>,
    task: JoinHandle<Result<Summary, Error>>,
    /// Notifications and other messages received while waiting for an answer.
    pub(crate) notes: Vec<Value>,
}

impl Client {
    /// A client of a bridge with default settings in front of `upstream`.
    pub(crate) fn over(upstream: impl calltape_stdio_bridge::Upstream) -> Self {
        Self::start(
            Bridge::builder()
                .upstream(upstream)
                .build()
                .expect("bridge"),
        )
    }

    pub(crate) fn start(bridge: Bridge) -> Self {
        let (tx, bridge_in) = tokio::io::duplex(1 << 20);
        let (bridge_out, rx) = tokio::io::duplex(1 << 20);
        let task = tokio::spawn(bridge.run(bridge_in, bridge_out));
        Self {
            tx: Some(tx),
            rx: FrameReader::new(rx),
            task,
            notes: Vec::new(),
        }
    }

    pub(crate) async fn send_raw(&mut self, bytes: &[u8]) {
        let tx = self.tx.as_mut().expect("stdin open");
        tx.write_all(bytes).await.expect("write to the bridge");
    }

    pub(crate) async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("json");
        line.push(b'\n');
        self.send_raw(&line).await;
    }

    /// The next message from the bridge.
    pub(crate) async fn recv(&mut self) -> Value {
        let next = tokio::time::timeout(Duration::from_secs(20), self.rx.next())
            .await
            .expect("the bridge answered within 20 s")
            .expect("read from the bridge");
        match next {
            Some(Incoming::Frame(frame)) => serde_json::from_slice(&frame).expect("json"),
            other => panic!("expected a message from the bridge, got {other:?}"),
        }
    }

    /// The answer with `id`, keeping everything else in `notes`.
    pub(crate) async fn answer(&mut self, id: &Value) -> Value {
        loop {
            let message = self.recv().await;
            if message.get("method").is_none() && message.get("id") == Some(id) {
                return message;
            }
            self.notes.push(message);
        }
    }

    pub(crate) async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        self.answer(&json!(id)).await
    }

    pub(crate) async fn initialize(&mut self) -> Value {
        let answer = self
            .request(
                0,
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": { "name": "test-client", "version": "1.0.0" },
                }),
            )
            .await;
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        answer
    }

    pub(crate) async fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
        .await
    }

    /// Closes stdin and waits for the bridge to finish; returns what is still unread.
    pub(crate) async fn finish(mut self) -> (Summary, Vec<Value>) {
        self.tx = None;
        self.drain().await
    }

    /// Waits for the bridge to finish with stdin still open; returns what is still unread.
    pub(crate) async fn ended(mut self) -> (Summary, Vec<Value>) {
        let _open = self.tx.take();
        self.drain().await
    }

    async fn drain(self) -> (Summary, Vec<Value>) {
        let mut this = self;
        let summary = tokio::time::timeout(Duration::from_secs(10), &mut this.task)
            .await
            .expect("the bridge ended within 10 s")
            .expect("the bridge task")
            .expect("the bridge ran");
        let mut rest = Vec::new();
        while let Some(next) = this.rx.next().await.expect("read") {
            match next {
                Incoming::Frame(frame) => rest.push(serde_json::from_slice(&frame).expect("json")),
                Incoming::Invalid(invalid) => {
                    panic!("the bridge wrote an invalid line: {invalid:?}")
                }
            }
        }
        (summary, rest)
    }
}

/// The text of a tool result.
pub(crate) fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a text tool result: {answer}"))
}

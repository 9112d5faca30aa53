//! 2026-07-28 clients with different capabilities in front of one legacy server (the reference
//! "everything" server, which offers the tools that need elicitation only to a session whose client
//! declared it): each set of capabilities gets a session of its own, through `calltape bridge` to the
//! server over stdio (a process each) and over Streamable HTTP (a session each), and through `calltape
//! serve`'s stateless requests.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    process::{ChildStdin, Stdio},
    sync::mpsc,
    time::Duration,
};

use serde_json::{Value, json};

use crate::support::{
    KillOnDrop, calltape, everything, first_line, free_port, http_everything, served_addr,
};

/// The tool "everything" registers only for a client that declared elicitation.
const ELICITING_TOOL: &str = "trigger-elicitation-request";

/// A 2026-07-28 request from a client that declares `capabilities`.
fn request(id: u64, method: &str, params: Value, capabilities: &Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "sessions-test", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The names in a `tools/list` answer.
fn tool_names(answer: &Value) -> Vec<String> {
    let tools = answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tools/list result, got {answer}"));
    tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// `calltape bridge` with `args` naming the upstream, fed and read line by line.
struct Bridge {
    _process: KillOnDrop,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
}

impl Bridge {
    fn start(args: &[&str]) -> Self {
        let mut child = calltape()
            .arg("bridge")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .env("CALLTAPE_LOG", "info")
            .spawn()
            .map(KillOnDrop::new)
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(message) = serde_json::from_str::<Value>(&line)
                    && tx.send(message).is_err()
                {
                    return;
                }
            }
        });
        Self {
            _process: child,
            stdin,
            lines,
        }
    }

    /// Sends `message` and returns the answer with its id (notifications on the way are skipped).
    fn call(&mut self, message: &Value) -> Value {
        writeln!(self.stdin, "{message}").unwrap();
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no answer to {message}"));
            if line["id"] == message["id"] && line.get("method").is_none() {
                return line;
            }
        }
    }
}

/// What each client saw of the tools, in order: plain, eliciting, plain again.
fn assert_each_client_saw_its_own_session(lists: &[Vec<String>; 3]) {
    let [plain, eliciting, plain_again] = lists;
    assert!(
        !plain.iter().any(|name| name == ELICITING_TOOL),
        "a client without elicitation was offered {ELICITING_TOOL}: {plain:?}"
    );
    assert!(
        eliciting.iter().any(|name| name == ELICITING_TOOL),
        "a client with elicitation, second on the link, was served in the first client's session: \
         {eliciting:?}"
    );
    assert_eq!(plain, plain_again, "the first client stays in its session");
    assert!(plain.iter().any(|name| name == "echo"), "{plain:?}");
}

/// Three clients, plain, eliciting and plain again, list the tools through `bridge`; then each calls a
/// tool in its own session.
fn clients_through(bridge: &mut Bridge) {
    let plain = json!({});
    let eliciting = json!({"elicitation": {}});
    let mut lists = [Vec::new(), Vec::new(), Vec::new()];
    for (n, capabilities) in [&plain, &eliciting, &plain].into_iter().enumerate() {
        let asked = request(n as u64 + 1, "tools/list", json!({}), capabilities);
        lists[n] = tool_names(&bridge.call(&asked));
    }
    assert_each_client_saw_its_own_session(&lists);

    // Each session keeps serving its client: the eliciting one asks its client for input.
    let call = request(
        9,
        "tools/call",
        json!({"name": ELICITING_TOOL, "arguments": {}}),
        &eliciting,
    );
    let answer = bridge.call(&call);
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    let asked: Vec<&Value> = answer["result"]["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("input requests, got {answer}"))
        .values()
        .collect();
    assert_eq!(asked[0]["method"], "elicitation/create", "{answer}");
    let echo = request(
        10,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "still here"}}),
        &plain,
    );
    let answer = bridge.call(&echo);
    assert_eq!(
        answer["result"]["content"][0]["text"], "Echo: still here",
        "{answer}"
    );
}

#[test]
fn era_sessions_a_client_with_other_capabilities_gets_a_process_of_its_own_through_bridge() {
    let everything = everything();
    let mut bridge = Bridge::start(&["--", everything.to_str().unwrap()]);
    clients_through(&mut bridge);
}

#[test]
fn era_sessions_a_client_with_other_capabilities_gets_an_http_session_of_its_own_through_bridge() {
    let server = http_everything(free_port());
    let mut bridge = Bridge::start(&["--url", &server.url()]);
    clients_through(&mut bridge);
}

/// `calltape serve -- everything` and its address.
struct Served {
    _process: KillOnDrop,
    addr: String,
}

impl Served {
    fn start() -> Self {
        let mut process = calltape()
            .args(["serve", "--"])
            .arg(everything())
            .env("CALLTAPE_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map(KillOnDrop::with_sigterm)
            .unwrap();
        let addr = served_addr(&first_line(&mut process));
        Self {
            _process: process,
            addr,
        }
    }

    /// One stateless 2026-07-28 POST; the JSON-RPC answer it got.
    fn post(&self, message: &Value) -> Value {
        let body = message.to_string();
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(90)))
            .unwrap();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n\
             Content-Type: application/json\r\nConnection: close\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: {}\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            message["method"].as_str().unwrap(),
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        let answer = response
            .lines()
            .filter_map(|line| line.strip_prefix("data: ").or(Some(line)))
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|value| value["id"] == message["id"]);
        answer.unwrap_or_else(|| panic!("no answer in {response}"))
    }
}

#[test]
fn era_sessions_stateless_clients_of_serve_get_a_session_of_the_legacy_child_each() {
    let served = Served::start();
    let plain = json!({});
    let eliciting = json!({"elicitation": {}});
    let mut lists = [Vec::new(), Vec::new(), Vec::new()];
    for (n, capabilities) in [&plain, &eliciting, &plain].into_iter().enumerate() {
        let asked = request(n as u64 + 1, "tools/list", json!({}), capabilities);
        lists[n] = tool_names(&served.post(&asked));
    }
    assert_each_client_saw_its_own_session(&lists);
}

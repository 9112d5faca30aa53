//! A 2026-07-28 client (the official Python SDK 2.x) through `calltape bridge` to a legacy server (the
//! reference "everything" server), over stdio and over Streamable HTTP: the bridge opens the server's
//! session itself, answers `server/discover`, and hands the client valid 2026-07-28 results.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use serde_json::{Value, json};

use crate::support::{
    calltape, everything, free_port, http_everything, modern_python, peer_script,
};

/// Runs `modern_client.py SCENARIO` in front of `calltape ARGS…` and returns what it printed.
fn modern_client(scenario: &str, args: &[&str]) -> Value {
    let python = modern_python();
    let script = peer_script("modern_client.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(scenario)
        .arg("--")
        .arg(calltape().get_program())
        .args(args)
        .env_remove("CALLTAPE_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the 2026-07-28 client failed: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the client printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// What the SDK client must have seen through the bridge, whatever the transport.
fn assert_sdk_run(run: &Value) {
    assert_eq!(run["protocol"], "2026-07-28", "{run}");
    assert_eq!(run["supported"], json!(["2026-07-28"]), "{run}");
    assert_eq!(run["server"], "mcp-servers/everything", "{run}");
    let tools = run["tools"].as_array().unwrap();
    for tool in [
        "echo",
        "trigger-elicitation-request",
        "trigger-sampling-request",
        "toggle-subscriber-updates",
    ] {
        assert!(tools.contains(&json!(tool)), "{tool} missing: {run}");
    }
    assert_eq!(run["echo"], json!(["Echo: hello, modern"]), "{run}");
    assert!(
        run["resources"]
            .as_array()
            .unwrap()
            .contains(&json!("demo://resource/static/document/architecture.md")),
        "{run}"
    );
    assert_eq!(
        run["read"],
        json!(["demo://resource/static/document/architecture.md"]),
        "{run}"
    );
    assert!(
        run["prompts"]
            .as_array()
            .unwrap()
            .contains(&json!("simple-prompt")),
        "{run}"
    );
    // The server's elicitation reached the client's callback through `input_required`, and the
    // client's answer reached the server.
    assert_eq!(run["elicited"].as_array().unwrap().len(), 1, "{run}");
    assert!(
        run["elicitation"]
            .to_string()
            .contains("Name: Ada Lovelace"),
        "{run}"
    );
    assert_eq!(
        run["sampled"],
        json!(["Resource trigger-sampling-request context: say something"]),
        "{run}"
    );
    assert!(
        run["sampling"].to_string().contains("a sampled answer"),
        "{run}"
    );
    assert_eq!(run["missing"]["code"], -32602, "{run}");
    assert_eq!(
        run["missing"]["data"]["uri"], "demo://resource/static/document/no-such-file.md",
        "{run}"
    );
    assert_eq!(
        run["honored"],
        json!({"resourceSubscriptions": ["demo://resource/static/document/architecture.md"]}),
        "{run}"
    );
    assert_eq!(
        run["updated"], "demo://resource/static/document/architecture.md",
        "{run}"
    );
    assert_eq!(run["after_listen"], json!(["Echo: still here"]), "{run}");
}

/// What the raw 2026-07-28 lines must have got: every result valid under the SDK's strict wire models.
fn assert_wire_run(run: &Value) {
    assert_eq!(run["failures"], json!([]), "{run}");
    assert_eq!(
        run["checked"],
        json!([
            "server/discover",
            "tools/list",
            "prompts/list",
            "resources/list",
            "resources/templates/list",
            "resources/read",
            "tools/call",
            "prompts/get",
            "tools/call",
            "tools/call"
        ]),
        "{run}"
    );
    assert_eq!(run["missing"]["code"], -32602, "{run}");
    assert_eq!(
        run["missing"]["data"]["uri"], "demo://resource/static/document/no-such-file.md",
        "{run}"
    );
}

#[test]
fn era_legacy_the_sdk_2_client_through_bridge_to_a_stdio_legacy_server() {
    let everything = everything();
    let run = modern_client("sdk", &["bridge", "--", everything.to_str().unwrap()]);
    assert_sdk_run(&run);
}

/// A bridge in front of a bridge, as `serve` or `shared` in front of `calltape bridge --url`: the outer
/// finds the inner speaks 2026-07-28 (its `server/discover` is answered from the legacy session the
/// inner opened for that probe), and the inner opens the session again for the real client, whose
/// capabilities (elicitation, sampling) the server must see to offer the tools that need them.
#[test]
fn era_legacy_the_sdk_2_client_through_two_bridges_to_a_stdio_legacy_server() {
    let everything = everything();
    let calltape = calltape();
    let inner = calltape.get_program().to_str().unwrap();
    let run = modern_client(
        "sdk",
        &[
            "bridge",
            "--",
            inner,
            "bridge",
            "--",
            everything.to_str().unwrap(),
        ],
    );
    assert_sdk_run(&run);
}

#[test]
fn era_legacy_raw_2026_lines_through_bridge_to_a_stdio_legacy_server_get_valid_results() {
    let everything = everything();
    let run = modern_client("wire", &["bridge", "--", everything.to_str().unwrap()]);
    assert_wire_run(&run);
}

#[test]
fn era_legacy_the_sdk_2_client_through_bridge_url_to_a_legacy_http_server() {
    let server = http_everything(free_port());
    let run = modern_client("sdk", &["bridge", "--url", &server.url()]);
    assert_sdk_run(&run);
}

#[test]
fn era_legacy_raw_2026_lines_through_bridge_url_to_a_legacy_http_server_get_valid_results() {
    let server = http_everything(free_port());
    let run = modern_client("wire", &["bridge", "--url", &server.url()]);
    assert_wire_run(&run);
}

/// A 2026-07-28 request as the SDK 2.x client sends it.
fn modern_request(id: u64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "restart-test", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn era_legacy_a_restarted_legacy_http_server_costs_a_2026_client_nothing() {
    let server = http_everything(free_port());
    let port = server.port();
    let mut bridge = calltape()
        .args(["bridge", "--url", &server.url()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = bridge.stdin.take().unwrap();
    let (lines_tx, lines) = mpsc::channel();
    let stdout = BufReader::new(bridge.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut call = |id: u64, message: &str| -> Value {
        let request = modern_request(
            id,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": message}}),
        );
        writeln!(stdin, "{request}").unwrap();
        loop {
            let line = lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no answer to request {id} within a minute"));
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == id && answer.get("method").is_none() {
                return answer;
            }
        }
    };
    let before = call(1, "before");
    assert_eq!(
        before["result"]["content"][0]["text"], "Echo: before",
        "{before}"
    );
    assert_eq!(before["result"]["resultType"], "complete", "{before}");
    // The server restarts and forgets every session; the bridge opens a new one for the client.
    drop(server);
    let _server = http_everything(port);
    let after = call(2, "after");
    assert_eq!(
        after["result"]["content"][0]["text"], "Echo: after",
        "{after}"
    );
    assert_eq!(after["result"]["resultType"], "complete", "{after}");
    drop(stdin);
    let out = bridge.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{log}", out.status);
}

//! A 2026-07-28 client (the official Python SDK 2.x) through `calltape bridge` to a legacy server (the
//! reference "everything" server), over stdio and over Streamable HTTP: the bridge opens the server's
//! session itself, answers `server/discover`, and hands the client valid 2026-07-28 results.

use std::{
    net::{TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::support::{calltape, peers, repo_root};

/// Runs `modern_client.py SCENARIO` in front of `calltape ARGS…` and returns what it printed.
fn modern_client(scenario: &str, args: &[&str]) -> Value {
    let python = peers().join("venv2/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run .ci/install-peers",
        python.display()
    );
    let script = repo_root().join("crates/cli/tests/peers/modern_client.py");
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

fn everything() -> PathBuf {
    peers().join("node/node_modules/.bin/mcp-server-everything")
}

/// The "everything" server in its Streamable HTTP mode on a loopback port; killed when dropped.
struct HttpEverything {
    child: Child,
    url: String,
}

impl HttpEverything {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the everything server never listened on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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

#[test]
fn era_legacy_raw_2026_lines_through_bridge_to_a_stdio_legacy_server_get_valid_results() {
    let everything = everything();
    let run = modern_client("wire", &["bridge", "--", everything.to_str().unwrap()]);
    assert_wire_run(&run);
}

#[test]
fn era_legacy_the_sdk_2_client_through_bridge_url_to_a_legacy_http_server() {
    let server = HttpEverything::start();
    let run = modern_client("sdk", &["bridge", "--url", &server.url]);
    assert_sdk_run(&run);
}

#[test]
fn era_legacy_raw_2026_lines_through_bridge_url_to_a_legacy_http_server_get_valid_results() {
    let server = HttpEverything::start();
    let run = modern_client("wire", &["bridge", "--url", &server.url]);
    assert_wire_run(&run);
}

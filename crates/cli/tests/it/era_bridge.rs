//! A legacy client on a 2026-07-28 server through `calltape bridge`: the Python SDK 1.x as the client,
//! a server of the Python SDK 2.x that speaks only 2026-07-28 (`peers/modern_server.py`), over
//! Streamable HTTP and stdio, with `--protocol auto` and `--protocol modern`.

use std::{
    io::{BufRead, BufReader, Write},
    path::Path,
    process::{Command, Stdio},
};

use serde_json::{Value, json};

use crate::support::{HttpPeer, calltape, free_port, modern_python, peer_script, python};

/// The modern server on a loopback port, stopped when dropped.
fn modern_http() -> HttpPeer {
    let port = free_port();
    HttpPeer::start(
        Command::new(modern_python())
            .arg(peer_script("modern_server.py"))
            .args(["http", &port.to_string()])
            .stdin(Stdio::null()),
        port,
        "the modern server",
    )
}

/// Runs the legacy client against `calltape ARGS...` and returns what it printed.
fn legacy_client(args: &[&str]) -> Value {
    legacy_client_with(args, &[]).0
}

/// [`legacy_client`] with environment variables for the client (and so the bridge and its child);
/// also returns the client's stderr, where the bridge logs.
fn legacy_client_with(args: &[&str], env: &[(&str, &Path)]) -> (Value, String) {
    let output = Command::new(python())
        .arg(peer_script("era_client.py"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v.as_os_str())))
        .env("CALLTAPE_BIN", env!("CARGO_BIN_EXE_calltape"))
        .env_remove("CALLTAPE_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run the legacy client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the legacy client failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let last = stdout.lines().last().unwrap_or_default();
    let out = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (out, stderr.into_owned())
}

fn text(result: &Value, list: &str) -> Value {
    result[list][0]["text"].clone()
}

/// Everything a legacy client does worked, translated.
fn assert_translated(out: &Value) {
    let init = &out["initialize"];
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(init["serverInfo"]["name"], "modern-server");
    assert_eq!(init["instructions"], "A server of the stateless era.");
    assert_eq!(init["capabilities"]["resources"]["subscribe"], true);
    assert!(init["capabilities"]["logging"].is_object(), "{init}");
    assert_eq!(out["tools"], json!(["add", "bump", "greet_asked", "shout"]));
    assert_eq!(text(&out["add"], "content"), "5");
    // What only 2026-07-28 has is gone: the result type, the server-info stamp, the cache fields.
    assert!(out["add"].get("resultType").is_none(), "{}", out["add"]);
    assert!(out["add"].get("_meta").is_none(), "{}", out["add"]);
    assert!(out["note"].get("cacheScope").is_none(), "{}", out["note"]);
    assert_eq!(text(&out["note"], "contents"), "first");
    assert_eq!(
        out["prompt"]["messages"][0]["content"]["text"],
        "Please review: x = 1"
    );
    assert_eq!(out["elicitations"], json!(["What is your name?"]));
    assert_eq!(text(&out["greet"], "content"), "Hello, Ada!");
    assert_eq!(out["updates"][0], "memo://note");
    assert_eq!(text(&out["note_after"], "contents"), "second");
    assert_eq!(text(&out["shout"], "content"), "HI");
    assert_eq!(
        out["logs"],
        json!([{"level": "warning", "data": "warning: hi"}]),
        "only the logs at or above the level set"
    );
    assert_eq!(out["gone"]["code"], -32002, "{}", out["gone"]);
    assert_eq!(out["ping"], json!({}));
}

#[test]
fn a_legacy_client_reaches_a_modern_http_server_through_bridge_url() {
    for protocol in ["auto", "modern"] {
        // A server of its own: the note changes in each run.
        let server = modern_http();
        let out = legacy_client(&["bridge", "--protocol", protocol, "--url", &server.url()]);
        assert_translated(&out);
    }
}

#[test]
fn a_legacy_client_reaches_a_modern_stdio_server_through_bridge() {
    let python = modern_python();
    let script = peer_script("modern_server.py");
    for protocol in ["auto", "modern"] {
        let out = legacy_client(&[
            "bridge",
            "--protocol",
            protocol,
            "--",
            python.to_str().unwrap(),
            script.to_str().unwrap(),
            "stdio",
        ]);
        assert_translated(&out);
    }
}

/// Sends `initialize` through `calltape bridge ARGS...` and returns the answer.
fn raw_initialize(args: &[&str]) -> Value {
    let mut bridge = calltape()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start calltape bridge");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let mut stdin = bridge.stdin.take().unwrap();
    writeln!(stdin, "{initialize}").unwrap();
    let mut line = String::new();
    BufReader::new(bridge.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    let _ = bridge.wait();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

#[test]
fn protocol_legacy_on_a_modern_server_fails_saying_what_to_do() {
    let server = modern_http();
    let python = modern_python();
    let script = peer_script("modern_server.py");
    let stdio = [
        "bridge",
        "--protocol",
        "legacy",
        "--",
        python.to_str().unwrap(),
        script.to_str().unwrap(),
        "stdio",
    ];
    let http = ["bridge", "--protocol", "legacy", "--url", &server.url()];
    for args in [&stdio[..], &http[..]] {
        let answer = raw_initialize(args);
        // The server itself refused the handshake, naming the one version it serves.
        let error = &answer["error"];
        assert_eq!(error["code"], -32022, "{answer}");
        assert_eq!(
            error["data"]["supported"],
            json!(["2026-07-28"]),
            "{answer}"
        );
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("speaks only 2026-07-28"), "{message}");
        assert!(message.contains("auto or modern"), "{message}");
    }
    // With auto, the same initialize is answered by the bridge.
    let answer = raw_initialize(&["bridge", "--url", &server.url()]);
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "modern-server",
        "{answer}"
    );
}

#[test]
fn a_restarted_modern_child_is_initialized_again_by_the_bridge_alone() {
    let watched = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let touch = watched.path().join("server.txt");
    std::fs::write(&touch, "start\n").unwrap();
    let methods = logs.path().join("methods.log");
    let python = modern_python();
    let script = peer_script("modern_server.py");
    let (out, log) = legacy_client_with(
        &[
            "bridge",
            "--watch",
            watched.path().to_str().unwrap(),
            "--",
            python.to_str().unwrap(),
            script.to_str().unwrap(),
            "stdio",
        ],
        &[("ERA_TOUCH", &touch), ("MODERN_SERVER_LOG", &methods)],
    );
    assert_translated(&out);
    assert_eq!(text(&out["add_after_restart"], "content"), "2");
    // A new server: the note is its first one again.
    assert_eq!(text(&out["note_after_restart"], "contents"), "first");
    let methods = std::fs::read_to_string(&methods).unwrap();
    let methods: Vec<&str> = methods.lines().collect();
    assert!(!methods.contains(&"initialize"), "{methods:?}");
    let discovers = methods.iter().filter(|m| **m == "server/discover").count();
    assert_eq!(discovers, 2, "one per start: {methods:?}");
    assert!(methods.contains(&"subscriptions/listen"), "{methods:?}");
    // The era found is said once at info level, though it was found at each start.
    let said: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("speaks 2026-07-28"))
        .collect();
    assert_eq!(said.len(), 1, "{log}");
    assert!(
        said[0].contains("INFO") && said[0].contains("modern_server.py"),
        "{log}"
    );
}

//! `calltape record` (and `calltape bridge --record`) end to end: the official Python MCP SDK as the
//! client, the reference server-everything and a two-version FastMCP server of our own as servers,
//! then `calltape replay` of what was recorded.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::{
    HttpPeer, calltape, client_result, everything, free_port, list_names, peer_script, python,
};

const BIN: &str = env!("CARGO_BIN_EXE_calltape");

/// Secrets replay_client.py puts in its arguments.
const SECRETS: &[&str] = &[
    "rk_live_51HqLyjWDarjtT1zdp7dcXwq",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJyZXBsYXktdGVzdCJ9.c2lnbmF0dXJlLW9mLXRoZS10ZXN0",
    "ak_test_9f8e7d6c5b4a39281706",
];

/// Runs replay_client.py SCENARIO against `command` (a `calltape record …` command line).
pub(crate) fn client(scenario: &str, command: &[&str]) -> Value {
    client_result(
        Command::new(python())
            .arg(peer_script("replay_client.py"))
            .arg(scenario)
            .arg("--")
            .args(command),
    )
}

pub(crate) fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn assert_owner_only_and_secret_free(path: &Path) {
    let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", path.display());
    let text = std::fs::read_to_string(path).unwrap();
    for secret in SECRETS {
        assert!(
            !text.contains(secret),
            "{secret} is in the recording:\n{text}"
        );
    }
}

/// Checks the four server-everything calls: one line each, with the right fields, then the tool
/// list the SDK read to check the tools' results, written when the session ended.
fn assert_everything_recording(path: &Path) {
    assert_owner_only_and_secret_free(path);
    let calls = lines(path);
    let names: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c["method"].as_str().unwrap(), c["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("tools/call", "echo"),
            ("tools/call", "get-sum"),
            (
                "resources/read",
                "demo://resource/static/document/architecture.md"
            ),
            ("prompts/get", "simple-prompt"),
            ("tools/list", ""),
        ]
    );
    let tools = list_names(&calls[4]["answer"], "tools", "name");
    assert!(
        tools.iter().any(|t| t == "echo") && tools.iter().any(|t| t == "get-sum"),
        "{tools:?}"
    );
    assert_eq!(calls[4]["input"], json!({}));
    let session = calls[0]["session"].as_str().unwrap();
    assert_eq!(session.len(), 8);
    for call in &calls {
        assert_eq!(call["v"], 1);
        assert_eq!(call["session"], session);
        assert_eq!(call["client"]["name"], "mcp", "the Python SDK's clientInfo");
        assert!(call["durationMs"].as_f64().unwrap() >= 0.0);
        assert!(call["at"].as_str().unwrap().ends_with('Z'));
        assert!(
            call.get("answer").is_some() && call.get("error").is_none(),
            "{call}"
        );
    }
    assert_eq!(calls[0]["input"]["apiKey"], "[REDACTED]");
    let message = calls[0]["input"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Authorization: Bearer [REDACTED]"),
        "{message}"
    );
    let echoed = calls[0]["answer"]["content"][0]["text"].as_str().unwrap();
    assert!(
        echoed.starts_with("Echo: Authorization: Bearer [REDACTED]"),
        "{echoed}"
    );
    assert_eq!(calls[1]["input"], json!({"a": 2, "b": 40}));
    assert_eq!(
        calls[1]["answer"]["content"][0]["text"],
        "The sum of 2 and 40 is 42."
    );
    assert_eq!(
        calls[2]["input"],
        json!({"uri": "demo://resource/static/document/architecture.md"})
    );
}

pub(crate) fn replay(file: &Path, extra: &[&str], server: &[&str]) -> Output {
    calltape()
        .arg("replay")
        .arg(file)
        .args(extra)
        .arg("--")
        .args(server)
        .output()
        .expect("run calltape replay")
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn python_client_through_record_over_stdio_then_replay_clean() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    let server = everything();
    let server = server.to_str().unwrap();
    let result = client(
        "everything",
        &[BIN, "record", "-o", file.to_str().unwrap(), "--", server],
    );
    assert_eq!(
        result["sum"]["content"][0]["text"],
        "The sum of 2 and 40 is 42."
    );
    assert_everything_recording(&file);

    let out = replay(&file, &[], &[server]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(
        text(&out.stdout),
        "5 calls, 5 same, 0 changed, 0 new-error, 0 gone-error\n"
    );

    // `-o` appends: a second session goes after the first, with its own session id.
    client(
        "everything",
        &[
            BIN,
            "bridge",
            "--record",
            file.to_str().unwrap(),
            "--",
            server,
        ],
    );
    let calls = lines(&file);
    assert_eq!(calls.len(), 10);
    assert_eq!(
        calls[9]["method"], "tools/list",
        "bridge --record records the list too"
    );
    assert_ne!(calls[0]["session"], calls[5]["session"]);
    assert_owner_only_and_secret_free(&file);
    let out = replay(&file, &["--jobs", "2"], &[server]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// server-everything over Streamable HTTP on a free loopback port; killed on drop.
fn http_server() -> HttpPeer {
    let port = free_port();
    HttpPeer::start(
        Command::new(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        port,
        "server-everything",
    )
}

#[test]
fn python_client_through_record_over_streamable_http_then_replay_clean() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    let server = http_server();
    client(
        "everything",
        &[
            BIN,
            "record",
            "-o",
            file.to_str().unwrap(),
            "--url",
            &server.url(),
        ],
    );
    assert_everything_recording(&file);
    let out = calltape()
        .arg("replay")
        .arg(&file)
        .args(["--url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(
        text(&out.stdout),
        "5 calls, 5 same, 0 changed, 0 new-error, 0 gone-error\n"
    );
}

#[test]
fn replay_against_a_changed_server_names_exactly_the_three_calls_then_update_makes_it_clean() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    let python = python();
    let python = python.to_str().unwrap();
    let server = peer_script("replay_server.py");
    let server = server.to_str().unwrap();
    client(
        "demo",
        &[
            BIN,
            "record",
            "-o",
            file.to_str().unwrap(),
            "--",
            python,
            server,
            "1",
        ],
    );
    assert_owner_only_and_secret_free(&file);
    let calls = lines(&file);
    // The five calls, and the tool list the SDK read, the same in both versions.
    assert_eq!(calls.len(), 6);
    assert_eq!(calls[5]["method"], "tools/list");
    assert_eq!(calls[1]["input"]["apiKey"], "[REDACTED]");
    assert_eq!(calls[2]["error"]["code"], "tool_error");

    let v1 = [python, server, "1"];
    let v2 = [python, server, "2"];
    let out = replay(&file, &[], &v1);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );

    let out = replay(&file, &[], &v2);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.contains("changed    tools/call quote  (call 1, line 1,"),
        "{report}"
    );
    assert!(
        report.contains("    content.0.text.price: 12 → 15\n"),
        "{report}"
    );
    assert!(
        report.contains("new-error  tools/call pay  (call 2, line 2,"),
        "{report}"
    );
    assert!(
        report.contains("gone-error tools/call refund  (call 3, line 3,"),
        "{report}"
    );
    assert!(
        report.ends_with("6 calls, 3 same, 1 changed, 1 new-error, 1 gone-error\n"),
        "{report}"
    );

    let out = replay(&file, &["--format", "json"], &v2);
    assert_eq!(out.status.code(), Some(1));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results: Vec<(&str, &str)> = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        results,
        [
            ("quote", "changed"),
            ("pay", "new-error"),
            ("refund", "gone-error"),
            ("demo://terms", "same"),
            ("greeting", "same"),
            ("", "same")
        ]
    );
    assert_eq!(
        json["results"][0]["differences"],
        json!([{"path": "content.0.text.price", "recorded": 12, "replayed": 15}])
    );
    assert_eq!(
        json["results"][1]["differences"][0]["replayed"]["code"],
        "tool_error"
    );

    let out = replay(&file, &["--format", "junit"], &v2);
    assert_eq!(out.status.code(), Some(1));
    let xml = text(&out.stdout);
    assert_eq!(xml.matches("<testcase ").count(), 6);
    assert_eq!(xml.matches("<failure ").count(), 3, "{xml}");
    for status in ["changed", "new-error", "gone-error"] {
        assert_eq!(
            xml.matches(&format!("<failure type=\"{status}\"")).count(),
            1,
            "{xml}"
        );
    }

    let out = replay(&file, &["--update"], &v2);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_owner_only_and_secret_free(&file);
    let out = replay(&file, &[], &v2);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// `calltape record` around the demo server, driven line by line, so the test decides when it ends.
fn recording_session(
    file: &Path,
) -> (
    Child,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
) {
    let mut child = calltape()
        .args(["record", "-o"])
        .arg(file)
        .args(["--", BIN, "demo-server", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "quote", "arguments": {"symbol": "X"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "refund", "arguments": {"paymentId": "p"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}),
    ];
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
        assert!(
            line.contains(&format!("\"id\":{}", request["id"])),
            "{line}"
        );
    }
    (child, stdin, stdout)
}

#[test]
fn answered_calls_and_lists_reach_the_disk_when_the_session_ends_by_eof_sigterm_or_sigint() {
    let dir = tempfile::tempdir().unwrap();
    for how in ["eof", "TERM", "INT"] {
        let file = dir.path().join(format!("{how}.jsonl"));
        let (mut child, stdin, _stdout) = recording_session(&file);
        if how == "eof" {
            drop(stdin);
        } else {
            let status = Command::new("kill")
                .arg(format!("-{how}"))
                .arg(child.id().to_string())
                .status()
                .unwrap();
            assert!(status.success());
        }
        let _ = child.wait().unwrap();
        let calls = lines(&file);
        assert_eq!(calls.len(), 3, "{how}: {calls:?}");
        assert_eq!(calls[1]["error"]["code"], "unknown_payment");
        // The list is written as the session ends, however it ends.
        assert_eq!(calls[2]["method"], "tools/list", "{how}: {calls:?}");
        assert_eq!(calls[2]["answer"]["tools"][0]["name"], "quote", "{how}");
    }
}

#[test]
fn record_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = calltape()
        .args(["record", "--", BIN, "demo-server", "1"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = calltape()
        .args(["record", "-o"])
        .arg(dir.path().join("c.jsonl"))
        .args([
            "--redact",
            "token",
            "--keep",
            "token",
            "--",
            BIN,
            "demo-server",
            "1",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

//! `calltape replay` and `calltape show` end to end, against the built-in demo server.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::support::calltape;

const BIN: &str = env!("CARGO_BIN_EXE_calltape");
const IGNORE: &str = "**.quotedAt,**.quoteId";

/// The card token the tests fill in; demo server v1 refuses `"[REDACTED]"`.
const CARD: &str = "tok_test_4242";

/// A recording of demo server v1: a quote, a paid payment, a refund of it refused, and a resource
/// read.
fn v1_recording(dir: &Path) -> PathBuf {
    let quote =
        json!({"currency": "USD", "price": 12, "quoteId": "q-1", "quotedAt": 1, "symbol": "ACME"});
    let paid = json!({"amount": 12, "currency": "USD", "paymentId": "pay_1001", "status": "paid"});
    let calls = [
        json!({"name": "quote", "input": {"symbol": "ACME"},
               "answer": {"content": [{"type": "text", "text": quote.to_string()}], "structuredContent": quote}}),
        json!({"name": "pay", "input": {"amount": 12, "currency": "USD", "cardToken": "[REDACTED]"},
               "answer": {"content": [{"type": "text", "text": paid.to_string()}], "structuredContent": paid}}),
        json!({"name": "refund", "input": {"paymentId": "pay_1001"},
               "error": {"code": "not_supported", "message": "refunds are not supported by this version"}}),
    ];
    let mut text = String::new();
    for (i, call) in calls.iter().enumerate() {
        let mut line = json!({"v": 1, "at": format!("2026-11-29T20:46:4{i}.123Z"), "session": "3f9a1c2e",
            "client": {"name": "test-client", "version": "1.0"}, "method": "tools/call", "durationMs": 1.5});
        line.as_object_mut()
            .unwrap()
            .extend(call.as_object().unwrap().clone());
        text.push_str(&line.to_string());
        text.push('\n');
    }
    text.push_str(r#"{"v":1,"at":"2026-11-29T20:47:00.000Z","session":"77aa0b1c","method":"resources/read","name":"demo://terms","answer":{"contents":[{"uri":"demo://terms","mimeType":"text/plain","text":"Quotes are valid for 15 minutes. Payments settle the next day."}]},"durationMs":0.5}"#);
    text.push('\n');
    let path = dir.join("calls.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

fn replay(file: &Path, extra: &[&str], version: &str) -> Output {
    calltape()
        .arg("replay")
        .arg(file)
        .args(["--fill", "cardToken=env:DEMO_CARD"])
        .env("DEMO_CARD", CARD)
        .args(extra)
        .args(["--", BIN, "demo-server", version])
        .output()
        .expect("run calltape replay")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn replay_against_the_same_server_is_clean_once_varying_fields_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let file = v1_recording(dir.path());
    let out = replay(&file, &["--ignore", IGNORE, "--jobs", "2"], "1");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    // Demo server v1 makes a new payment id per process: the refund follows it, counted on one
    // line, and -v lists it.
    let text = stdout(&out);
    assert_eq!(
        text,
        "same       1 call sent with followed ids (-v lists it)\n\n\
         4 calls, 4 same, 0 changed, 0 new-error, 0 gone-error\n"
    );
    let out = replay(&file, &["--ignore", IGNORE, "-v"], "1");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "same       tools/call refund  (call 3, line 3, session 3f9a1c2e)\n    \
             input.paymentId: pay_1001 → pay_"
        ),
        "{text}"
    );
    assert!(
        text.ends_with(
            " (from call 2, structuredContent.paymentId)\n\n4 calls, 4 same, 0 changed, 0 new-error, 0 gone-error\n"
        ),
        "{text}"
    );
    assert!(!text.contains(CARD), "{text}");

    let out = replay(&file, &[], "1");
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    for path in [
        "structuredContent.quotedAt",
        "structuredContent.quoteId",
        "content.0.text.quotedAt",
    ] {
        assert!(text.contains(&format!("    {path}: ")), "{text}");
    }
    assert!(
        text.ends_with("4 calls, 3 same, 1 changed, 0 new-error, 0 gone-error\n"),
        "{text}"
    );
    // The ignore globs may also be given one per flag.
    let out = replay(
        &file,
        &[
            "--ignore",
            "**.quotedAt",
            "--ignore",
            "structuredContent.quoteId,content.*.text.quoteId",
        ],
        "1",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn replay_against_a_changed_server_reports_each_call_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let file = v1_recording(dir.path());
    let out = replay(&file, &["--ignore", IGNORE], "2");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let want = r#"changed    tools/call quote  (call 1, line 1, session 3f9a1c2e)
    content.0.text.price: 12 → 15
    structuredContent.price: 12 → 15
new-error  tools/call pay  (call 2, line 2, session 3f9a1c2e)
    error: (absent) → {"code":"card_declined","message":"card declined: the payment provider refused the card"}
    answered when recorded: {"amount":12,"currency":"USD","paymentId":"pay_1001","status":"paid"}
gone-error tools/call refund  (call 3, line 3, session 3f9a1c2e)
    error: {"code":"not_supported","message":"refunds are not supported by this version"} → (absent)
    answers now: {"paymentId":"pay_1001","status":"refunded"}

4 calls, 1 same, 1 changed, 1 new-error, 1 gone-error
"#;
    assert_eq!(stdout(&out), want);

    let json_path = dir.path().join("report.json");
    let out = replay(
        &file,
        &[
            "--ignore",
            IGNORE,
            "--format",
            "json",
            "--output",
            json_path.to_str().unwrap(),
        ],
        "2",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(report["version"], 1);
    assert_eq!(report["calls"], 4);
    assert_eq!(report["file"], file.display().to_string());
    assert_eq!(
        report["summary"],
        json!({"same": 1, "changed": 1, "new-error": 1, "gone-error": 1})
    );
    let statuses: Vec<(&str, &str)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("quote", "changed"),
            ("pay", "new-error"),
            ("refund", "gone-error"),
            ("demo://terms", "same")
        ]
    );
    assert_eq!(
        report["results"][0]["differences"][1],
        json!({"path": "structuredContent.price", "recorded": 12, "replayed": 15})
    );
    assert_eq!(report["results"][3]["session"], "77aa0b1c");
    // Both sides of an error that came or went, in full.
    assert_eq!(
        report["results"][1]["recordedAnswer"]["structuredContent"]["paymentId"],
        "pay_1001"
    );
    assert_eq!(
        report["results"][2]["replayedAnswer"]["structuredContent"]["status"],
        "refunded"
    );

    let out = replay(&file, &["--ignore", IGNORE, "--format", "junit"], "2");
    assert_eq!(out.status.code(), Some(1));
    let xml = stdout(&out);
    assert_eq!(xml.matches("<testcase ").count(), 4);
    // One failure per call, every path in its message.
    assert_eq!(xml.matches("<failure ").count(), 3, "{xml}");
    assert!(xml.contains(r#"<failure type="new-error" message="new-error: error">"#));
    assert!(xml.contains(r#"<failure type="gone-error" message="gone-error: error">"#));
    assert!(
        xml.contains(r#"message="changed: content.0.text.price, structuredContent.price">"#),
        "{xml}"
    );
    assert!(
        xml.contains("    answers now: {&quot;paymentId&quot;"),
        "{xml}"
    );
}

#[test]
fn update_rewrites_the_recording_owner_only_and_then_replays_clean() {
    let dir = tempfile::tempdir().unwrap();
    let file = v1_recording(dir.path());
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::read_to_string(&file).unwrap();
    let out = replay(&file, &["--ignore", IGNORE, "--update"], "2");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("rewritten with the replayed answers"),
        "{}",
        stderr(&out)
    );
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let after = std::fs::read_to_string(&file).unwrap();
    assert_ne!(before, after);
    assert!(after.contains("\"cardToken\":\"[REDACTED]\""));
    let lines: Vec<Value> = after
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = lines.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["quote", "pay", "refund", "demo://terms"]);
    assert_eq!(lines[1]["error"]["code"], "card_declined");
    assert_eq!(
        lines[2]["answer"]["structuredContent"]["status"],
        "refunded"
    );
    let out = replay(&file, &["--ignore", IGNORE], "2");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn an_invalid_recording_exits_2_naming_every_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(v1_recording(dir.path())).unwrap();
    let first = good.lines().next().unwrap();
    let text = format!(
        "{first}\n{{\"v\":1,oops}}\n{}\n{first}\n{{\"v\":1,\"at\":\"2026",
        first.replace("\"input\"", "\"arguments\"")
    );
    let file = dir.path().join("bad.jsonl");
    std::fs::write(&file, text).unwrap();
    for command in ["replay", "show"] {
        let mut cmd = calltape();
        cmd.arg(command).arg(&file);
        if command == "replay" {
            cmd.args(["--", BIN, "demo-server", "1"]);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = stderr(&out);
        let name = file.display();
        assert!(
            err.contains(&format!(
                "{name}:2: not JSON at column 8: key must be a string"
            )),
            "{err}"
        );
        assert!(
            err.contains(&format!("{name}:3: field `arguments`: unknown field")),
            "{err}"
        );
        assert!(
            err.contains(&format!("{name}:5: the last line is cut short")),
            "{err}"
        );
        assert!(!err.contains(&format!("{name}:4:")), "{err}");
    }
}

#[test]
fn a_server_that_cannot_start_or_stops_answering_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let file = v1_recording(dir.path());
    let out = calltape()
        .arg("replay")
        .arg(&file)
        .args(["--", "/nonexistent/server"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot start the server for recorded session 3f9a1c2e"),
        "{}",
        stderr(&out)
    );

    // A server that exits after the handshake: the first call is named. It answers whatever comes
    // first as initialize, so it is said to be of the handshake era rather than asked.
    let script = "read -r line; echo '{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}'; read -r line; read -r line; exit 4";
    let out = calltape()
        .arg("replay")
        .arg(&file)
        .args([
            "--protocol",
            "legacy",
            "--timeout",
            "5s",
            "--",
            "sh",
            "-c",
            script,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("call 1 (tools/call quote, line 1): the server stopped"),
        "{err}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = v1_recording(dir.path());
    let out = replay(&file, &["--ignore", "a.[b"], "1");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--ignore: cannot ignore answer paths: invalid glob \"a.[b\""),
        "{}",
        stderr(&out)
    );
    let out = calltape().arg("replay").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = calltape()
        .arg("replay")
        .arg(dir.path().join("missing.jsonl"))
        .args(["--", BIN, "demo-server", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("missing.jsonl: cannot read"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn show_summarises_calls_sessions_clients_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = v1_recording(dir.path());
    let out = calltape().arg("show").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let want = format!(
        "{}: 4 calls in 2 sessions
time span: 2026-11-29T20:46:40.123Z … 2026-11-29T20:47:00.000Z

calls:
  resources/read demo://terms     1 call  avg 0.5 ms
  tools/call pay                  1 call  avg 1.5 ms
  tools/call quote                1 call  avg 1.5 ms
  tools/call refund               1 call  avg 1.5 ms  errors: not_supported ×1

sessions:
  3f9a1c2e  test-client 1.0  3 calls
  77aa0b1c  unknown client  1 call

errors: 1 of 4 calls
",
        file.display()
    );
    assert_eq!(stdout(&out), want);
}

#[test]
fn show_names_why_a_file_is_neither_a_recording_nor_a_cassette() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("", "it is empty"),
        ("not json\n", "its first line is not JSON"),
        ("{\"v\":1,\"at\":\"2026", "its first line is cut short"),
        (
            "{\"hello\":1}\n",
            "its first line is a JSON object, but neither a call record",
        ),
    ];
    for (text, reason) in cases {
        let file = dir.path().join("other.jsonl");
        std::fs::write(&file, text).unwrap();
        for args in [&["show"][..], &["http", "show"][..]] {
            let out = calltape().args(args).arg(&file).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?} {text:?}");
            let want = format!(
                "calltape: {} is neither an MCP call recording nor an HTTP cassette: {reason}",
                file.display()
            );
            assert!(stderr(&out).contains(&want), "{args:?}: {}", stderr(&out));
            assert_eq!(stdout(&out), "");
        }
    }
}

/// A stdio server that logs every message it receives to the file named by its argument and answers
/// every request with one text.
const LOGGING_SERVER: &str = r#"
import json, sys
log = open(sys.argv[1], "a")
for line in sys.stdin:
    message = json.loads(line)
    log.write(json.dumps(message) + "\n")
    log.flush()
    if "id" not in message or "method" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "log", "version": "1"}}
    else:
        result = {"content": [{"type": "text", "text": "hi"}]}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"#;

#[test]
fn a_stateless_recording_replays_with_the_client_in_meta_or_initialized_on_a_legacy_server() {
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("stateless.jsonl");
    std::fs::write(
        &recording,
        r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"5e5e5e5e","client":{"name":"stateless-client","version":"3"},"protocolVersion":"2026-07-28","method":"tools/call","name":"hello","input":{"who":"ada"},"answer":{"content":[{"type":"text","text":"hi"}]},"durationMs":1}
"#,
    )
    .unwrap();
    let script = dir.path().join("server.py");
    std::fs::write(&script, LOGGING_SERVER).unwrap();
    let client = json!({"name": "stateless-client", "version": "3"});
    // (--protocol, the methods the server receives)
    let rows: [(&str, &[&str]); 2] = [
        ("modern", &["tools/call"]),
        (
            "legacy",
            &["initialize", "notifications/initialized", "tools/call"],
        ),
    ];
    for (protocol, methods) in rows {
        let log = dir.path().join(format!("received-{protocol}.jsonl"));
        let out = calltape()
            .arg("replay")
            .arg(&recording)
            .args(["--protocol", protocol, "--timeout", "10s", "--", "python3"])
            .arg(&script)
            .arg(&log)
            .output()
            .expect("run calltape replay");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{protocol}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        let received: Vec<Value> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let got: Vec<&str> = received
            .iter()
            .map(|m| m["method"].as_str().unwrap())
            .collect();
        assert_eq!(got, methods, "{protocol}: {received:?}");
        let call = received.last().unwrap();
        assert_eq!(call["params"]["name"], "hello");
        assert_eq!(call["params"]["arguments"], json!({"who": "ada"}));
        if protocol == "modern" {
            // A 2026-07-28 server gets the call as recorded, the client in its _meta.
            assert_eq!(
                call["params"]["_meta"],
                json!({
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": client,
                    "io.modelcontextprotocol/clientCapabilities": {},
                })
            );
        } else {
            // A legacy one is initialized with the recorded client first.
            assert_eq!(received[0]["params"]["clientInfo"], client);
        }
    }
}

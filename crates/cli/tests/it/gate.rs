//! Nothing secret reaches a file, a report or a terminal, whatever writes it: a card token a server
//! echoes as an object key or an error code (the official Python SDK as client and server), a
//! token stored where no redaction looks, refused by the final gate in front of every writer (a
//! recording, a rewrite, a cassette, a report, a log; `record`, `bridge` and `serve` alike), and
//! `calltape scan` over both formats.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::http::FakeApi;
use crate::serve::Served;
use crate::support::{KillOnDrop, calltape, first_line, peer_script, python, session_id_of};

const BIN: &str = env!("CARGO_BIN_EXE_calltape");

/// The card token the client pays with; no file, report or stderr line may hold it.
const CARD: &str = "tok_test_4eC39HqLyjWDarjt";

/// A provider token put where no redaction rule looks (an object key, a client's info).
const GHP: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The key server's command line.
fn key_server() -> [PathBuf; 2] {
    [python(), peer_script("key_server.py")]
}

/// Records key_client.py's calls (`store`, `check`, `plain`, with the card token) into `file`
/// through `calltape record`.
fn record_cards(file: &Path) -> Value {
    let out = Command::new(python())
        .arg(peer_script("key_client.py"))
        .args(["--", BIN, "record", "-o"])
        .arg(file)
        .arg("--")
        .args(key_server())
        .env("CARD", CARD)
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .output()
        .expect("run the Python client");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains(CARD), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the client prints JSON")
}

fn replay(file: &Path, extra: &[&str]) -> Output {
    calltape()
        .arg("replay")
        .arg(file)
        .args(["--fill", "cardToken=env:CARD", "--timeout", "20s"])
        .args(extra)
        .arg("--")
        .args(key_server())
        .env("CARD", CARD)
        .output()
        .expect("run calltape replay")
}

#[test]
fn a_card_token_echoed_as_a_key_or_an_error_code_reaches_no_recording_report_or_update() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cards.jsonl");
    let received = record_cards(&file);
    // The server did echo it, as a key and as the code.
    assert_eq!(
        received["stored"]["structuredContent"]["cards"][CARD],
        "stored"
    );
    assert_eq!(received["checked"]["_meta"]["code"], CARD);

    let recorded = read(&file);
    assert!(!recorded.contains(CARD), "{recorded}");
    let lines: Vec<Value> = recorded
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The three calls, then the tool list the client read (recorded by default).
    assert_eq!(lines.len(), 4, "{recorded}");
    assert_eq!(lines[3]["method"], "tools/list", "{recorded}");
    assert_eq!(
        lines[0]["answer"]["structuredContent"]["cards"],
        json!({"[REDACTED]": "stored"})
    );
    assert_eq!(
        lines[1]["error"],
        json!({"code": "[REDACTED]", "message": "card declined"})
    );

    // Filled back in, the token goes to the server and comes back as a key and a code: every
    // call is the same, and no report format holds it, on stdout or in a file.
    for format in ["text", "json", "junit", "html"] {
        let out = replay(&file, &["--format", format]);
        let report = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{format}: {report}{}",
            text(&out.stderr)
        );
        for stream in [&report, &text(&out.stderr)] {
            assert!(!stream.contains(CARD), "{format}: {stream}");
        }
        let path = dir.path().join(format!("report.{format}"));
        let out = replay(
            &file,
            &["--format", format, "--output", path.to_str().unwrap()],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{format}: {}",
            text(&out.stderr)
        );
        let written = read(&path);
        assert!(
            !written.is_empty() && !written.contains(CARD),
            "{format}: {written}"
        );
    }
    let report = read(&dir.path().join("report.text"));
    assert!(
        report.ends_with("4 calls, 4 same, 0 changed, 0 new-error, 0 gone-error\n"),
        "{report}"
    );

    // --update writes the replayed answers back: the token as a key and a code stays hidden.
    let out = replay(&file, &["--update"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let updated = read(&file);
    assert!(!updated.contains(CARD), "{updated}");
    assert!(
        updated.contains(r#""cards":{"[REDACTED]":"stored"}"#),
        "{updated}"
    );
}

/// `calltape ARGS… -- key_server.py` driven line by line by the test as an MCP client whose info
/// holds a provider token as a member's name (where no redaction rule looks), calling every tool of
/// the server; its output once stdin closed.
fn drive_with_token_in_client_info(args: &[&str]) -> Output {
    let mut child = calltape()
        .args(args)
        .arg("--")
        .args(key_server())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let requests = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "t", "version": "1", GHP: true}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "plain", "arguments": {}}}),
    ];
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
        if request.get("id").is_some() {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            assert!(
                line.contains(&format!("\"id\":{}", request["id"])),
                "{line}"
            );
        }
    }
    drop(stdin);
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut stdout, &mut rest);
    child.wait_with_output().unwrap()
}

/// What stderr says of the `plain` call the final gate refused, and of the recording's count.
const REFUSED_PLAIN: [&str; 3] = [
    "the tools/call call plain of session ",
    "was not written: it held a github-pat token",
    "1 call refused",
];

#[test]
fn a_recorded_call_whose_line_holds_a_token_is_refused_counted_and_named_and_nothing_of_it_is_written()
 {
    let dir = tempfile::tempdir().unwrap();
    for command in ["record", "bridge"] {
        let file = dir.path().join(format!("{command}.jsonl"));
        let flag = if command == "record" {
            "-o"
        } else {
            "--record"
        };
        let out = drive_with_token_in_client_info(&[command, flag, file.to_str().unwrap()]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command}: {stderr}");
        for needle in REFUSED_PLAIN {
            assert!(stderr.contains(needle), "{command}: {needle}:\n{stderr}");
        }
        assert!(!stderr.contains(GHP), "{stderr}");
        assert_eq!(read(&file), "", "{command}: nothing of the call is written");
    }
}

#[test]
fn a_call_that_serve_records_whose_line_holds_a_token_is_refused_named_and_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("serve.jsonl");
    let mut served = Served::start_with(
        dir.path(),
        &[
            "--listen",
            "127.0.0.1:0",
            "--record",
            file.to_str().unwrap(),
        ],
        &key_server(),
    );
    // A client whose info holds a provider token as a member's name, where no redaction rule looks.
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1", GHP: true}}});
    let response = served.exchange(None, &initialize.to_string());
    let session = session_id_of(&response).unwrap_or_else(|| panic!("{response}"));
    served.exchange(
        Some(&session),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plain","arguments":{}}}"#;
    let answer = served.exchange(Some(&session), call);
    assert!(answer.contains("nothing secret here"), "{answer}");

    // The server stops on SIGTERM; the recording ends with the call refused, and so does the run.
    let status = Command::new("kill")
        .args(["-TERM", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let status = served.child.wait().unwrap();
    let stderr = served.stderr();
    assert_eq!(status.code(), Some(1), "{stderr}");
    for needle in REFUSED_PLAIN {
        assert!(stderr.contains(needle), "{needle}:\n{stderr}");
    }
    assert!(!stderr.contains(GHP), "{stderr}");
    assert_eq!(read(&file), "", "nothing of the call is written");
}

/// A recording of key_server.py whose line 2 an older calltape stored with a token: in the client's
/// info (line 2, which the server answers as recorded) and in a recorded text (line 3, which it
/// does not).
fn recording_with_tokens(dir: &Path) -> PathBuf {
    let call = |name: &str, client: Value, answer: Value| {
        json!({"v": 1, "at": "2026-11-29T20:46:45.123Z", "session": "aaaaaaaa", "client": client,
               "method": "tools/call", "name": name, "input": {}, "answer": answer, "durationMs": 1})
        .to_string()
    };
    let plain = json!({"content": [{"type": "text", "text": "nothing secret here"}],
                       "structuredContent": {"result": "nothing secret here"}});
    let lines = [
        call("plain", json!({"name": "c", "version": "1"}), plain.clone()),
        call(
            "plain",
            json!({"name": "c", "version": "1", GHP: true}),
            plain,
        ),
        call(
            "plain",
            json!({"name": "c", "version": "1"}),
            json!({"content": [{"type": "text", "text": format!("was {GHP}")}]}),
        ),
    ];
    let path = dir.join("old.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn replay_update_leaves_out_a_call_the_gate_refuses_and_a_report_holding_a_token_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    // A report quotes the recorded text of the call that changed: refused whole, in every format,
    // on stdout or to a file.
    for format in ["text", "json", "junit", "html"] {
        let file = recording_with_tokens(dir.path());
        let path = dir.path().join(format!("report.{format}"));
        for output in [None, Some(&path)] {
            let mut args = vec!["--format", format];
            if let Some(path) = output {
                args.extend(["--output", path.to_str().unwrap()]);
            }
            let out = replay(&file, &args);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{format}: {stderr}");
            assert!(
                stderr.contains(&format!(
                    "the {format} report was not written: it held a github-pat token"
                )),
                "{format}: {stderr}"
            );
            assert_eq!(text(&out.stdout), "", "{format}");
            assert!(!path.exists(), "{format}: no report file");
            assert!(!stderr.contains(GHP), "{stderr}");
        }
    }
    // --update rewrites what it can: the call whose line still holds a token is left out.
    let file = recording_with_tokens(dir.path());
    let out = replay(&file, &["--update"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "call 2 (tools/call plain, line 2) was not written: it held a github-pat token"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains(GHP), "{stderr}");
    let updated = read(&file);
    assert!(!updated.contains(GHP), "{updated}");
    assert_eq!(updated.lines().count(), 2, "{updated}");
}

/// Runs `calltape http --mode record` with a client that posts each of `requests` (path, JSON body)
/// to the fake API through the proxy.
fn http_record(
    fake: &FakeApi,
    cassette: &Path,
    extra: &[&str],
    requests: &[(&str, Value)],
) -> Output {
    let script = format!(
        r#"
import json, os, urllib.request
for path, body in {}:
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + path, data=json.dumps(body).encode(),
        headers={{"content-type": "application/json"}})
    assert urllib.request.urlopen(req).status == 200
"#,
        serde_json::to_string(requests).unwrap()
    );
    calltape()
        .args(["http", "--mode", "record", "--upstream"])
        .arg(format!("openai={}", fake.url()))
        .arg("--cassette")
        .arg(cassette)
        .args(extra)
        .args(["--env", "OPENAI_BASE_URL=openai/v1", "--"])
        .arg(python())
        .args(["-c", &script])
        .env_remove("CALLTAPE_MODE")
        .env_remove("CI")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_cassette_interaction_holding_a_token_key_or_a_sent_secret_is_refused_and_a_report_with_a_token_is_not_written()
 {
    const SENT: &str = "sekr-value-4242x";
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeApi::start(dir.path());
    let cassette = dir.path().join("cards.jsonl");
    let chat = |text: &str| json!({"model": "m", "messages": [{"role": "user", "content": text}]});
    let out = http_record(
        &fake,
        &cassette,
        &[],
        &[
            ("/chat/completions", chat("hi")),
            // The fake answers the prompt as an object key.
            ("/cards", chat(GHP)),
            // A value sent under a credential name, then sent again where no name says so.
            (
                "/chat/completions",
                json!({"model": "m", "api_key": SENT, "messages": []}),
            ),
            ("/chat/completions", chat(SENT)),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The token key is redacted as a value is, so that interaction is stored; the sent value
    // echoed where no name says so is what the gate refuses.
    for needle in [
        "1 refused",
        "POST openai /v1/chat/completions #0",
        "the value of api_key",
    ] {
        assert!(stderr.contains(needle), "{needle}:\n{stderr}");
    }
    assert!(!stderr.contains(GHP) && !stderr.contains(SENT), "{stderr}");
    let stored = read(&cassette);
    assert!(!stored.contains(GHP) && !stored.contains(SENT), "{stored}");
    assert!(stored.contains("/v1/cards"), "{stored}");
    assert!(stored.contains("[REDACTED]"), "{stored}");
    assert!(!dir.path().join("cards.jsonl.journal").exists());

    // A cassette an older calltape stored with a token in a request body: a miss shows that
    // recording's diff, so the report that would quote it is refused whole.
    let old = dir.path().join("old.jsonl");
    let recorded = std::fs::read_to_string(&cassette).unwrap();
    std::fs::write(
        &old,
        recorded.replacen("\"hi\"", &format!("\"hi {GHP}\""), 1),
    )
    .unwrap();
    for format in ["json", "junit", "html"] {
        let report = dir.path().join(format!("report.{format}"));
        let out = calltape()
            .args(["http", "--mode", "replay", "--upstream"])
            .arg(format!("openai={}", fake.url()))
            .arg("--cassette")
            .arg(&old)
            .arg("--report")
            .arg(&report)
            .args([
                "--report-format",
                format,
                "--env",
                "OPENAI_BASE_URL=openai/v1",
                "--",
            ])
            .arg(python())
            .args([
                "-c",
                r#"
import json, os, urllib.request, urllib.error
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hello"}]}).encode(),
    headers={"content-type": "application/json"})
try:
    urllib.request.urlopen(req)
except urllib.error.HTTPError as e:
    assert e.code == 404
"#,
            ])
            .env_remove("CALLTAPE_MODE")
            .env_remove("CI")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{format}: {stderr}");
        assert!(
            stderr.contains("report was not written: it held a github-pat token"),
            "{format}: {stderr}"
        );
        assert!(!report.exists(), "{format}: no report file");
        assert!(!stderr.contains(GHP), "{format}: {stderr}");
    }
}

#[test]
fn scan_reports_a_token_key_in_a_recording_or_a_cassette_by_file_line_and_rule_and_exits_by_what_it_found()
 {
    let dir = tempfile::tempdir().unwrap();
    let clean_recording = dir.path().join("calls.jsonl");
    std::fs::write(
        &clean_recording,
        r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"aaaaaaaa","method":"tools/call","name":"t","input":{"cardToken":"[REDACTED]"},"answer":{"cards":{"[REDACTED]":"stored"}},"durationMs":1}
"#,
    )
    .unwrap();
    let keyed_recording = dir.path().join("nested/keyed.jsonl");
    std::fs::create_dir(dir.path().join("nested")).unwrap();
    std::fs::write(
        &keyed_recording,
        read(&clean_recording)
            + &read(&clean_recording)
                .replace("[REDACTED]\":\"stored", &format!("{GHP}\":\"stored")),
    )
    .unwrap();
    let keyed_cassette = dir.path().join("nested/keyed-cassette.jsonl");
    std::fs::write(
        &keyed_cassette,
        [
            r#"{"normalizer":"n","redaction":"r","t":"meta","v":1}"#.to_owned(),
            r#"{"key":"k","method":"POST","path":"/v1/cards","seq":0,"t":"req","upstream":"openai"}"#
                .to_owned(),
            format!(r#"{{"body":{{"json":{{"cards":{{"{GHP}":"stored"}}}}}},"status":200,"t":"res"}}"#),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    for spelling in [&["scan"][..], &["http", "scan"]] {
        // A folder: both files in it are found and read as what they are.
        let out = calltape().args(spelling).arg(dir.path()).output().unwrap();
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{spelling:?}: {stdout}{}",
            text(&out.stderr)
        );
        let found: Vec<&str> = stdout.lines().collect();
        assert_eq!(
            found,
            [
                format!(
                    "{}:3: byte 27: a github-pat token",
                    keyed_cassette.display()
                ),
                format!(
                    "{}:2: byte 148: a github-pat token",
                    keyed_recording.display()
                ),
            ],
            "{spelling:?}"
        );
        assert!(!stdout.contains(GHP) && !text(&out.stderr).contains(GHP));

        let out = calltape()
            .args(spelling)
            .arg(&clean_recording)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
        assert_eq!(text(&out.stdout), "");

        let missing = dir.path().join("missing.jsonl");
        let neither = dir.path().join("notes.txt");
        std::fs::write(&neither, "just notes\n").unwrap();
        for unreadable in [&missing, &neither] {
            let out = calltape()
                .args(spelling)
                .arg(&clean_recording)
                .arg(unreadable)
                .output()
                .unwrap();
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{stderr}");
            assert!(stderr.contains(unreadable.to_str().unwrap()), "{stderr}");
        }
    }
}

#[test]
fn a_token_a_child_logs_as_an_object_key_is_redacted_in_the_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bridge.log");
    // A child that logs a JSON line holding a token as an object key, then ends. The log's writer
    // redacts keys as values; its final gate (which a redaction miss would meet, and which
    // crates/redact's writer tests stop lines with) finds nothing left to refuse.
    let child = format!("import sys; sys.stderr.write('{{\"{GHP}\": 1}}\\nplain line\\n')");
    let out = calltape()
        .args(["bridge", "--log"])
        .arg(&log)
        .arg("--")
        .arg(python())
        .args(["-c", &child])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let logged = read(&log);
    assert!(!logged.contains(GHP), "{logged}");
    assert!(logged.contains(r#"{"[REDACTED]": 1}"#), "{logged}");
    assert!(logged.contains("plain line"), "{logged}");
    assert!(!logged.contains("refused by the final gate"), "{logged}");
    assert_eq!(out.status.code(), Some(0), "{logged}");
}

#[test]
fn a_filled_value_and_a_header_key_echoed_in_an_upstream_error_body_never_reach_stderr() {
    const HEADER_KEY: &str = "hdr-key-9Xq2Lm77abc";
    let dir = tempfile::tempdir().unwrap();
    let mut server = KillOnDrop::new(
        Command::new(python())
            .arg(peer_script("echo_error_server.py"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let port = first_line(&mut server);
    let file = dir.path().join("calls.jsonl");
    std::fs::write(
        &file,
        r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"aaaaaaaa","method":"tools/call","name":"store","input":{"cardToken":"[REDACTED]"},"answer":{"ok":1},"durationMs":1}
"#,
    )
    .unwrap();
    for verbose in ["-q", "-v"] {
        let out = calltape()
            .arg(verbose)
            .arg("replay")
            .arg(&file)
            .args(["--fill", "cardToken=env:CARD", "--header"])
            .arg(format!("Authorization: Bearer {HEADER_KEY}"))
            .arg("--url")
            .arg(format!("http://127.0.0.1:{port}/mcp"))
            .env("CARD", CARD)
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(
            stderr.contains("the server answered HTTP 500") && stderr.contains("cannot charge"),
            "{stderr}"
        );
        assert!(
            !stderr.contains(CARD) && !stderr.contains(HEADER_KEY),
            "{stderr}"
        );
    }
}

#[test]
fn show_says_no_token_a_recording_an_older_calltape_wrote_still_holds() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("old.jsonl");
    // Stored before keys and text error codes were redacted: a token as an error code, and as a
    // tool's name.
    let lines = [
        json!({"v": 1, "at": "2026-05-01T10:00:00.000Z", "session": "s1", "method": "tools/call",
            "name": "pay", "input": {}, "error": {"code": GHP, "message": "declined"},
            "durationMs": 1.0}),
        json!({"v": 1, "at": "2026-05-01T10:00:01.000Z", "session": "s1", "method": "tools/call",
            "name": GHP, "input": {}, "answer": {"content": []}, "durationMs": 1.0}),
    ];
    let stored: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, stored).unwrap();
    let out = calltape().arg("show").arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!stdout.contains(GHP), "{stdout}");
    assert!(stdout.contains("tools/call pay"), "{stdout}");
    assert!(stdout.contains("[REDACTED] ×1"), "{stdout}");
}

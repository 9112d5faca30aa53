//! Recorded strings that would drive a terminal (`ESC]0;…BEL` retitles the window, `ESC[2J` clears
//! it, a bidi override reorders text) reach no terminal raw: `calltape show`, the replay text
//! report, the HTTP proxy's failures and error messages show them escaped.

use std::collections::BTreeMap;
use std::path::Path;

use calltape_recorder::http::{
    Body, Cassette, Content, Interaction, Meta, Normalizer, Request, Response, Scrubber,
};
use serde_json::json;

use crate::support::calltape;

/// A tool name that retitles the terminal's window.
const TITLE: &str = "quote\x1b]0;owned\x07";
/// A session id that clears the screen.
const CLEAR: &str = "\x1b[2J\x1b[H";
/// A client name that reads backwards from its override on.
const BIDI: &str = "client\u{202e}txt.exe";

/// Fails when `text` holds a character a terminal would act on (a line break and a tab aside).
fn assert_inert(what: &str, text: &str) {
    let raw: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(raw.is_empty(), "{what}: raw {raw:?} in:\n{text}");
}

fn run(args: &[&str], dir: &Path) -> (Option<i32>, String, String) {
    let out = calltape()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A recording of two calls with hostile strings, as a server and a client could have sent them:
/// a tool the demo server does not know, and its `quote` with a long text and a short value.
fn hostile_recording(dir: &Path) -> std::path::PathBuf {
    let unknown = json!({"v": 1, "at": "2026-05-01T10:00:00.000Z", "session": CLEAR,
        "client": {"name": BIDI, "version": "1\r0"}, "method": "tools/call", "name": TITLE,
        "input": {"symbol": "ACME"}, "answer": {"content": []}, "durationMs": 1.0});
    let text = "the price of ACME was 12 USD when this call was recorded \x1b]0;owned\x07 and it may change";
    let quote = json!({"v": 1, "at": "2026-05-01T10:00:01.000Z", "session": CLEAR,
        "method": "tools/call", "name": "quote", "input": {"symbol": "ACME"},
        "answer": {"content": [{"type": "text", "text": text}],
                   "structuredContent": {"symbol": "AC\u{9b}31mME\u{202e}"}}, "durationMs": 1.0});
    let path = dir.join("calls.jsonl");
    std::fs::write(&path, format!("{unknown}\n{quote}\n")).unwrap();
    path
}

#[test]
fn show_escapes_what_a_recording_holds() {
    let dir = tempfile::tempdir().unwrap();
    hostile_recording(dir.path());
    let (code, stdout, stderr) = run(&["show", "calls.jsonl"], dir.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_inert("show", &stdout);
    for shown in [
        "tools/call quote\\u{1b}]0;owned\\u{7}",
        "\\u{1b}[2J\\u{1b}[H",
        "client\\u{202e}txt.exe 1\\u{d}0",
    ] {
        assert!(stdout.contains(shown), "{shown} not in:\n{stdout}");
    }
}

/// Saves a cassette of one interaction whose request holds hostile strings, as `chat.jsonl`.
fn hostile_cassette(dir: &Path) {
    let scrubber = Scrubber::new();
    let normalizer = Normalizer::new();
    let mut request = Request {
        method: "POST".into(),
        upstream: "openai".into(),
        path: "/v1/\x1b]0;owned\x07".into(),
        query: vec![],
        headers: BTreeMap::from([("content-type".into(), "application/json".into())]),
        body: Body::Json(json!({"model": "gpt\u{202e}4"})),
        key: String::new(),
        seq: 0,
    };
    request.key = normalizer.key(&request);
    let mut cassette = Cassette::new(Meta {
        normalizer: normalizer.fingerprint().into(),
        redaction: scrubber.fingerprint(),
    });
    cassette.interactions.push(Interaction {
        request,
        response: Response {
            status: 200,
            headers: vec![],
            content: Content::Body(Body::Json(json!({"id": "c1"}))),
        },
    });
    cassette.save(&dir.join("chat.jsonl"), &scrubber).unwrap();
}

#[test]
fn show_escapes_what_a_cassette_holds() {
    let dir = tempfile::tempdir().unwrap();
    hostile_cassette(dir.path());
    let (code, stdout, stderr) = run(&["show", "chat.jsonl"], dir.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_inert("show", &stdout);
    assert!(
        stdout.contains("POST openai /v1/\\u{1b}]0;owned\\u{7} [gpt\\u{202e}4]"),
        "{stdout}"
    );
}

#[test]
fn the_replay_text_report_escapes_names_sessions_and_values() {
    let dir = tempfile::tempdir().unwrap();
    hostile_recording(dir.path());
    let bin = env!("CARGO_BIN_EXE_calltape");
    // The demo server knows no such tool: the call errors now, and the report lists it.
    let (code, stdout, stderr) = run(
        &["replay", "calls.jsonl", "--", bin, "demo-server", "1"],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_inert("the text report", &stdout);
    assert!(
        stdout.contains("tools/call quote\\u{1b}]0;owned\\u{7}"),
        "{stdout}"
    );
    assert!(stdout.contains("session \\u{1b}[2J\\u{1b}[H"), "{stdout}");
    // A long text's word diff, and a short value.
    assert!(stdout.contains("\\u{1b}]0;owned\\u{7}"), "{stdout}");
    assert!(stdout.contains("\"AC\\u{9b}31mME\\u{202e}\""), "{stdout}");
}

#[test]
fn an_error_that_quotes_a_recorded_string_escapes_it() {
    let dir = tempfile::tempdir().unwrap();
    let line = r#"{"v":1,"at":"2026-05-01T10:00:00.000Z","session":"3f9a1c2e","method":"tools/call","name":"quote","input":{},"answer":{},"durationMs":1.0,"x\u001b]0;owned\u0007":1}"#;
    std::fs::write(dir.path().join("calls.jsonl"), format!("{line}\n")).unwrap();
    let (code, _, stderr) = run(&["show", "calls.jsonl"], dir.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert_inert("the error", &stderr);
    assert!(stderr.contains("x\\u{1b}]0;owned\\u{7}"), "{stderr}");
}

#[test]
fn the_proxys_failures_escape_the_recording_they_show() {
    let dir = tempfile::tempdir().unwrap();
    hostile_cassette(dir.path());
    // A request the cassette does not hold: its miss names the closest recording, hostile path,
    // model and all.
    let client = "import os, urllib.request\n\
        req = urllib.request.Request(os.environ['CALLTAPE_PROXY_URL'] + '/openai/v1/chat', \
        data=b'{\"model\": \"gpt-4\"}', headers={'content-type': 'application/json'})\n\
        try:\n    urllib.request.urlopen(req)\nexcept Exception as e:\n    print(e)\n";
    let (code, _, stderr) = run(
        &[
            "http",
            "--mode",
            "replay",
            "--upstream",
            "openai=http://127.0.0.1:9",
            "--cassette",
            "chat.jsonl",
            "--",
            "python3",
            "-c",
            client,
        ],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("closest recording: POST openai /v1/\\u{1b}]0;owned\\u{7}"),
        "{stderr}"
    );
    assert_inert("the proxy's stderr", &stderr);
}

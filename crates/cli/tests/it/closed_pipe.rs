//! Every command that writes to stdout exits quietly when its reader goes away (`calltape demo |
//! head`), as `rg` does: with its own status, no panic and nothing said about it.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::support::calltape;

/// Runs `command` with stdout into a pipe whose reader reads `lines` lines and then closes it;
/// gives the exit code and stderr.
fn closed_after(mut command: Command, lines: usize) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    let child = command
        .stdout(writer)
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn calltape");
    // The child holds the only write end now.
    drop(command);
    let mut reader = BufReader::new(reader);
    for _ in 0..lines {
        let mut line = String::new();
        reader.read_line(&mut line).expect("read a line");
    }
    drop(reader);
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Fails unless the command ended with `code` and said nothing of the closed pipe.
fn assert_quiet(what: &str, (code, stderr): (Option<i32>, String), want: i32) {
    assert_eq!(code, Some(want), "{what}: {stderr}");
    for word in ["panicked", "Broken pipe", "broken pipe", "stdout"] {
        assert!(
            !stderr.contains(word),
            "{what}: {word:?} in stderr:\n{stderr}"
        );
    }
}

fn cmd(args: &[&str], dir: &Path) -> Command {
    let mut command = calltape();
    command.args(args).current_dir(dir);
    command
}

/// A recording of `n` calls, each to a tool of its own, so `show` lists each: more than a pipe
/// holds.
fn recording(dir: &Path, n: usize) {
    let mut text = String::new();
    for i in 0..n {
        let call = json!({"v": 1, "at": "2026-05-01T10:00:00.000Z", "session": "3f9a1c2e",
            "method": "tools/call", "name": format!("tool_{i:05}"), "input": {},
            "answer": {"content": []}, "durationMs": 1.0});
        text.push_str(&format!("{call}\n"));
    }
    std::fs::write(dir.join("calls.jsonl"), text).unwrap();
}

#[test]
fn the_demo_exits_quietly_when_its_reader_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let demo = demo.to_str().unwrap();
    for lines in [0, 1] {
        let result = closed_after(cmd(&["demo", "--dir", demo], dir.path()), lines);
        assert_quiet(&format!("demo after {lines} lines"), result, 0);
    }
}

#[test]
fn show_and_the_replay_text_report_exit_quietly_with_their_status() {
    let dir = tempfile::tempdir().unwrap();
    recording(dir.path(), 3000);
    let result = closed_after(cmd(&["show", "calls.jsonl"], dir.path()), 1);
    assert_quiet("show", result, 0);
    // The demo server knows none of these tools: every call errors now, and the text report
    // lists them all; the exit says so.
    let bin = env!("CARGO_BIN_EXE_calltape");
    let replay = cmd(
        &["replay", "calls.jsonl", "--", bin, "demo-server", "1"],
        dir.path(),
    );
    assert_quiet("replay", closed_after(replay, 1), 1);
}

#[test]
fn redact_and_the_listings_exit_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let log = "GET /x?access_token=abc123 HTTP/1.1\n".repeat(20_000);
    std::fs::write(dir.path().join("big.log"), log).unwrap();
    assert_quiet(
        "redact",
        closed_after(cmd(&["redact", "big.log"], dir.path()), 1),
        0,
    );
    // Cassettes to list, and a folder of recordings to import.
    let recordings = dir.path().join("recordings");
    std::fs::create_dir(&recordings).unwrap();
    for i in 0..50 {
        let doc = json!([{"request": {"url": format!("https://api.openai.com/v1/x{i}"), "method": "POST"},
            "response": {"status": 200, "body": {"id": i}}}]);
        std::fs::write(recordings.join(format!("r{i:02}.json")), doc.to_string()).unwrap();
    }
    let import = [
        "http",
        "import",
        "--from",
        "mastra",
        "recordings",
        "--out",
        "cassettes",
    ];
    assert_quiet("import", closed_after(cmd(&import, dir.path()), 0), 0);
    assert!(
        dir.path().join("cassettes/r49.jsonl").exists(),
        "the import went on"
    );
    let ls = cmd(&["http", "ls", "cassettes"], dir.path());
    assert_quiet("http ls", closed_after(ls, 0), 0);
    // A scan that finds something exits 1, pipe or no pipe.
    std::fs::write(
        dir.path().join("cassettes/r00.jsonl"),
        std::fs::read_to_string(dir.path().join("cassettes/r00.jsonl"))
            .unwrap()
            .replace(
                "\"id\":0",
                "\"id\":\"ghp_R2d2C3p0R2d2C3p0R2d2C3p0R2d2C3p0R2d2\"",
            ),
    )
    .unwrap();
    let scan = cmd(&["http", "scan", "cassettes"], dir.path());
    let (code, stderr) = closed_after(scan, 0);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn help_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["--help"][..], &["redact", "--help"], &["http", "--help"]] {
        assert_quiet(
            &format!("{args:?}"),
            closed_after(cmd(args, dir.path()), 0),
            0,
        );
    }
}

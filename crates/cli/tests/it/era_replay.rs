//! `calltape record` and `calltape replay` in both protocol eras, with real peers: the Python SDK 1.x
//! client against a server of the handshake era (replay_server.py on the SDK 1.x), and the SDK 2.x
//! client pinned to 2026-07-28 against a 2026-07-28-only server (modern_server.py on the SDK 2.x,
//! the same tools answering alike). Each recording replays against a server of each era, with the
//! default `--protocol auto` throughout.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::{self, calltape, peer_script};

const BIN: &str = env!("CARGO_BIN_EXE_calltape");

/// The secret the clients put in `pay`'s arguments; no recording may hold it.
const API_KEY: &str = "ak_test_9f8e7d6c5b4a39281706";

/// A protocol era, as the peers of the tests speak it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Era {
    /// The handshake era: the SDK 1.x.
    Legacy,
    /// 2026-07-28 only: the SDK 2.x.
    Modern,
}

/// The Python of a client or server era: the SDK 1.x or the SDK 2.x.
fn python(era: Era) -> PathBuf {
    match era {
        Era::Legacy => support::python(),
        Era::Modern => support::modern_python(),
    }
}

/// The command line of the test server of `era`, at `version` (1, or 2 with three calls changed).
fn server(era: Era, version: u8) -> Vec<String> {
    let script = match era {
        Era::Legacy => peer_script("replay_server.py"),
        Era::Modern => peer_script("era_replay/modern_server.py"),
    };
    vec![
        python(era).display().to_string(),
        script.display().to_string(),
        version.to_string(),
    ]
}

/// Records the client of `era` making its five calls through `calltape record` to the server of
/// the same era, and returns the recording's lines.
fn record(era: Era, dir: &Path) -> (PathBuf, Vec<Value>) {
    let path = dir.join(format!("{era:?}.jsonl").to_lowercase());
    let lines = record_scenario(era, "demo", &server(era, 1), &path).1;
    (path, lines)
}

/// Records the client of `era` making the calls of `scenario` through `calltape record -o path` to
/// `server`, and returns what the client printed and the recording's lines.
fn record_scenario(
    era: Era,
    scenario: &str,
    server: &[String],
    path: &Path,
) -> (Value, Vec<Value>) {
    let client = match era {
        Era::Legacy => peer_script("replay_client.py"),
        Era::Modern => peer_script("era_replay/modern_client.py"),
    };
    let (printed, text) = record_client(&python(era), &client, scenario, server, path);
    assert!(!text.contains(API_KEY), "{text}");
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (printed, lines)
}

/// Runs the Python `client` script's `scenario` through `calltape record -o path` to `server`, and
/// returns what the client printed and the recording's text.
pub(crate) fn record_client(
    python: &Path,
    client: &Path,
    scenario: &str,
    server: &[String],
    path: &Path,
) -> (Value, String) {
    let out = Command::new(python)
        .arg(client)
        .arg(scenario)
        .arg("--")
        .args([BIN, "record", "-o"])
        .arg(path)
        .arg("--")
        .args(server)
        .env("NO_COLOR", "1")
        .env_remove("CALLTAPE_LOG")
        .stderr(Stdio::piped())
        .output()
        .expect("run the Python client");
    assert!(
        out.status.success(),
        "{} {scenario} failed: {}\n{}",
        client.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = serde_json::from_slice(&out.stdout).expect("the client prints JSON");
    (printed, std::fs::read_to_string(path).unwrap())
}

/// `calltape replay FILE -- SERVER`, with the default `--protocol auto`: the server's era is found.
fn replay(file: &Path, server: &[String]) -> Output {
    calltape()
        .arg("replay")
        .arg(file)
        .args(["--timeout", "20s", "--"])
        .args(server)
        .output()
        .expect("run calltape replay")
}

/// The keys of a line: its fields, `answer` or `error` among them.
fn keys(line: &Value) -> BTreeSet<&str> {
    line.as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn a_call_is_recorded_once_with_the_same_fields_in_both_eras_and_replays_against_either() {
    let dir = tempfile::tempdir().unwrap();
    let (legacy, legacy_lines) = record(Era::Legacy, dir.path());
    let (modern, modern_lines) = record(Era::Modern, dir.path());
    let calls = |lines: &[Value]| -> Vec<(String, String)> {
        lines
            .iter()
            .map(|l| (l["method"].to_string(), l["name"].to_string()))
            .collect()
    };
    assert_eq!(calls(&legacy_lines), calls(&modern_lines));
    // The five calls, then the tool list each SDK read to check the tools' results: a
    // 2026-07-28 client's list is recorded as a handshake-era one is.
    assert_eq!(legacy_lines.len(), 6);
    assert_eq!(modern_lines[5]["method"], "tools/list");
    for (old, new) in legacy_lines.iter().zip(&modern_lines) {
        // The clients differ in what they declare: the SDK 2.x client answers elicitation, the
        // SDK 1.x client given no callback declares nothing.
        let mut new_keys = keys(new);
        assert!(new_keys.remove("capabilities"), "{new}");
        assert!(new["capabilities"]["elicitation"].is_object(), "{new}");
        assert_eq!(keys(old), new_keys, "{old}\n{new}");
        assert_eq!(old["input"], new["input"]);
        assert_eq!(old["client"]["name"], "mcp", "{old}");
        assert_eq!(new["client"]["name"], "mcp", "{new}");
        assert_eq!(new["protocolVersion"], "2026-07-28", "{new}");
        assert_ne!(old["protocolVersion"], "2026-07-28", "{old}");
        assert_eq!(new["server"]["name"], "replay-test-server", "{new}");
    }

    // (recording, server, server version, the report's last line)
    let same = "6 calls, 6 same, 0 changed, 0 new-error, 0 gone-error";
    let changed = "6 calls, 3 same, 1 changed, 1 new-error, 1 gone-error";
    let rows = [
        (Era::Legacy, Era::Legacy, 1, same),
        (Era::Legacy, Era::Modern, 1, same),
        (Era::Modern, Era::Legacy, 1, same),
        (Era::Modern, Era::Modern, 1, same),
        (Era::Legacy, Era::Legacy, 2, changed),
        (Era::Legacy, Era::Modern, 2, changed),
        (Era::Modern, Era::Legacy, 2, changed),
        (Era::Modern, Era::Modern, 2, changed),
    ];
    for (recorded, served, version, want) in rows {
        let file = match recorded {
            Era::Legacy => &legacy,
            Era::Modern => &modern,
        };
        let out = replay(file, &server(served, version));
        let report = String::from_utf8_lossy(&out.stdout);
        let row = format!("{recorded:?} recording on a {served:?} server v{version}");
        assert!(
            report.trim_end().ends_with(want),
            "{row}:\n{report}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(i32::from(want != same)), "{row}");
        if want == changed {
            for line in [
                "changed    tools/call quote",
                "new-error  tools/call pay",
                "gone-error tools/call refund",
            ] {
                assert!(report.contains(line), "{row}: {line}\n{report}");
            }
        }
    }
}

#[test]
fn a_call_answered_input_required_is_recorded_once_with_its_final_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("asked.jsonl");
    // The peers' 2026-07-28-only server: its `greet_asked` asks the client for a name.
    let server = [
        python(Era::Modern).display().to_string(),
        peer_script("modern_server.py").display().to_string(),
        "stdio".to_owned(),
    ];
    let (printed, lines) = record_scenario(Era::Modern, "asked", &server, &path);
    assert_eq!(printed["asked"], json!(["What is your name?"]));
    let calls: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["method"].as_str().unwrap(), l["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        calls,
        [
            ("tools/call", "greet_asked"),
            ("tools/call", "add"),
            ("tools/list", "")
        ],
        "{lines:#?}"
    );
    // The SDK 2.x read the tool list statelessly: its client and version came in the request's
    // `_meta`, the server's info from its stamp, and the list is one line like a legacy one.
    let list = &lines[2];
    assert_eq!(list["protocolVersion"], "2026-07-28", "{list}");
    assert_eq!(list["client"]["name"], "mcp", "{list}");
    assert_eq!(list["server"]["name"], "modern-server", "{list}");
    assert_eq!(list["input"], json!({}), "{list}");
    assert!(list["capabilities"]["elicitation"].is_object(), "{list}");
    let tools = support::list_names(&list["answer"], "tools", "name");
    assert!(
        tools.iter().any(|t| t == "greet_asked") && tools.iter().any(|t| t == "add"),
        "{list}"
    );
    let greet = &lines[0];
    assert_eq!(greet["input"], json!({}));
    assert_eq!(
        greet["answer"]["content"][0]["text"], "Hello, Ada!",
        "{greet}"
    );
    assert_eq!(greet["answer"]["resultType"], "complete", "{greet}");
    assert_eq!(greet["protocolVersion"], "2026-07-28");
    assert_eq!(greet["server"]["name"], "modern-server");
    // What the server asked through `input_required`, and what the client's retry answered.
    assert_eq!(greet["asks"].as_array().map(Vec::len), Some(1), "{greet}");
    let ask = &greet["asks"][0];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "What is your name?");
    assert_eq!(
        ask["answer"],
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    assert!(greet["capabilities"]["elicitation"].is_object(), "{greet}");

    // Replayed, the server's `input_required` is answered from the recording; without the ask,
    // the call ends with the server still asking, and the request shows in the report.
    let out = replay(&path, &server);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report
            .trim_end()
            .ends_with("3 calls, 3 same, 0 changed, 0 new-error, 0 gone-error"),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = lines;
    lines[0].as_object_mut().unwrap().remove("asks");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    let out = replay(&path, &server);
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    for want in [
        "changed    tools/call greet_asked",
        r#"resultType: "complete" → "input_required""#,
        r#"asks.0: (absent) → {"method":"elicitation/create","params":{"message":"What is your name?""#,
    ] {
        assert!(report.contains(want), "{want}\n{report}");
    }
    assert!(!report.contains("asks.1"), "{report}");
}

#[test]
fn a_client_recorded_through_the_translation_has_the_fields_of_its_era_and_replays_same() {
    let dir = tempfile::tempdir().unwrap();
    let required = [
        "v",
        "at",
        "session",
        "client",
        "protocolVersion",
        "method",
        "name",
        "input",
        "durationMs",
    ];
    // (the client's era, the server's): each client on a server of the other era.
    for (client, served) in [(Era::Legacy, Era::Modern), (Era::Modern, Era::Legacy)] {
        let path = dir.path().join(format!("{client:?}-on-{served:?}.jsonl"));
        let (_, lines) = record_scenario(client, "demo", &server(served, 1), &path);
        // The five calls and the tool list the SDK read.
        assert_eq!(lines.len(), 6, "{client:?} on {served:?}: {lines:#?}");
        for line in &lines {
            let keys = keys(line);
            for key in required {
                assert!(
                    keys.contains(key),
                    "{client:?} on {served:?}: {key} in {line}"
                );
            }
            assert!(keys.contains("answer") ^ keys.contains("error"), "{line}");
            assert_eq!(line["client"]["name"], "mcp", "{line}");
            // The version is the client's: the recording replays as its client spoke.
            let modern = line["protocolVersion"] == "2026-07-28";
            assert_eq!(modern, client == Era::Modern, "{line}");
        }
        let out = replay(&path, &server(served, 1));
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            report
                .trim_end()
                .ends_with("6 calls, 6 same, 0 changed, 0 new-error, 0 gone-error"),
            "{client:?} on {served:?}:\n{report}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

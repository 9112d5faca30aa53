//! Calls that ask the client back: tools of the published server-everything (the newest release and
//! an older one) that ask for sampling, elicitation and the roots during a call, recorded through
//! `calltape record` with the real Python SDK clients answering (the SDK 1.x in the handshake era,
//! the SDK 2.x as a 2026-07-28 client through the bridge's translation), then replayed against the
//! same server with default options: the replay declares the recorded capabilities and answers the
//! server from the recording.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::era_replay::record_client;
use crate::record::text;
use crate::support::{everything, modern_python, peer_script, published_server, python};

/// What asks_client.py's user types and sends; no recording may hold either.
const PASSWORD: &str = "correct-horse-battery-staple";
const TOKEN: &str = "ghp_4bC9dE1fG2hI3jK4lM5nO6pQ7rS8tU9vW0xY";

/// What the clients' sampling callbacks answer.
const SAMPLED: &str = "a sampled answer about tides";

/// One way to record: a client script and its scenario, the server, and the tools that ask.
struct Row {
    python: PathBuf,
    client: &'static str,
    scenario: &'static str,
    server: Vec<String>,
    /// The tool that asks for sampling, and the one that asks for elicitation.
    sampling: &'static str,
    elicitation: &'static str,
    /// Whether the client answers `roots/list` (the SDK 2.x client declares no roots).
    roots: bool,
}

fn rows() -> Vec<Row> {
    let node = |script: PathBuf| {
        vec![
            "node".to_owned(),
            script.display().to_string(),
            "stdio".into(),
        ]
    };
    vec![
        Row {
            python: python(),
            client: "asks_client.py",
            scenario: "everything",
            server: node(everything()),
            sampling: "trigger-sampling-request",
            elicitation: "trigger-elicitation-request",
            roots: true,
        },
        Row {
            python: python(),
            client: "asks_client.py",
            scenario: "everything-old",
            server: node(published_server("everything-old")),
            sampling: "sampleLLM",
            elicitation: "startElicitation",
            roots: true,
        },
        Row {
            python: modern_python(),
            client: "era_replay/modern_client.py",
            scenario: "everything",
            server: node(everything()),
            sampling: "trigger-sampling-request",
            elicitation: "trigger-elicitation-request",
            roots: false,
        },
    ]
}

/// Records `row`'s client through `calltape record -o path` and returns the recording's lines.
fn record(row: &Row, path: &Path) -> Vec<Value> {
    let client = peer_script(row.client);
    let (_, text) = record_client(&row.python, &client, row.scenario, &row.server, path);
    assert!(
        !text.contains(PASSWORD) && !text.contains(TOKEN),
        "a secret is in the recording:\n{text}"
    );
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `calltape replay FILE --timeout 20s [extra…] -- SERVER`.
fn replay(path: &Path, extra: &[&str], server: &[String]) -> Output {
    let args: Vec<&str> = ["--timeout", "20s"]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    crate::record::replay(path, &args, &server)
}

/// The recording's line of the call to `tool`.
fn line<'a>(lines: &'a [Value], tool: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["name"] == tool)
        .unwrap_or_else(|| panic!("no call of {tool}: {lines:#?}"))
}

/// The methods of a line's asks.
fn asked(line: &Value) -> Vec<&str> {
    line["asks"]
        .as_array()
        .map(|asks| asks.iter().map(|a| a["method"].as_str().unwrap()).collect())
        .unwrap_or_default()
}

#[test]
fn a_call_that_asks_the_client_back_replays_same_with_the_recorded_answers() {
    let dir = tempfile::tempdir().unwrap();
    for (n, row) in rows().iter().enumerate() {
        let name = format!("{} {}", row.client, row.scenario);
        let path = dir.path().join(format!("asks-{n}.jsonl"));
        let lines = record(row, &path);
        for l in &lines {
            let capabilities = &l["capabilities"];
            assert!(capabilities["sampling"].is_object(), "{name}: {l}");
            assert!(capabilities["elicitation"].is_object(), "{name}: {l}");
            assert_eq!(capabilities["roots"].is_object(), row.roots, "{name}: {l}");
        }
        let sampling = line(&lines, row.sampling);
        let at = asked(sampling)
            .iter()
            .position(|m| *m == "sampling/createMessage")
            .unwrap_or_else(|| panic!("{name}: {sampling}"));
        let ask = &sampling["asks"][at];
        assert_eq!(ask["answer"]["content"]["text"], SAMPLED, "{name}: {ask}");
        // The server prints what the client answered into the tool's result.
        assert!(
            sampling["answer"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains(SAMPLED),
            "{name}: {sampling}"
        );
        let elicitation = line(&lines, row.elicitation);
        assert_eq!(asked(elicitation), ["elicitation/create"], "{name}");
        assert_eq!(elicitation["asks"][0]["answer"]["action"], "accept");
        // The server asks for the roots once the session starts or when the tool runs: on
        // whichever call was in flight, else the next one.
        let roots: usize = lines
            .iter()
            .map(|l| asked(l).iter().filter(|m| **m == "roots/list").count())
            .sum();
        assert_eq!(roots, usize::from(row.roots), "{name}: {lines:#?}");
        if row.roots {
            let answers: Vec<&Value> = lines
                .iter()
                .flat_map(|l| l["asks"].as_array().into_iter().flatten())
                .filter(|a| a["method"] == "roots/list")
                .map(|a| &a["answer"])
                .collect();
            assert_eq!(
                answers,
                [&json!({"roots": [{"uri": "file:///srv/project", "name": "project"}]})]
            );
        }

        let out = replay(&path, &[], &row.server);
        let report = text(&out.stdout);
        assert!(
            report.trim_end().ends_with(&format!(
                "{0} calls, {0} same, 0 changed, 0 new-error, 0 gone-error",
                lines.len()
            )),
            "{name}:\n{report}\n{}",
            text(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{name}");

        // The tool list's line alone (a session that only listed): it declares the client's
        // capabilities as a call's line does, so the server offers the tools that ask the client
        // back, and nothing is reported removed.
        let list: String = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| l.contains(r#""method":"tools/list""#))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(list.lines().count(), 1, "{name}: {lines:#?}");
        let list_path = dir.path().join(format!("asks-{n}-list.jsonl"));
        std::fs::write(&list_path, list).unwrap();
        let out = replay(&list_path, &[], &row.server);
        let report = text(&out.stdout);
        assert!(!report.contains("tools["), "{name}:\n{report}");
        // The server may ask for the roots as the session starts; alone, the list can be the
        // call in flight then, and the report says so. Nothing else differs.
        let differences: Vec<&str> = report.lines().filter(|l| l.starts_with("    ")).collect();
        assert!(
            differences
                .iter()
                .all(|d| row.roots && d.contains(r#"{"method":"roots/list"}"#)),
            "{name}:\n{report}\n{}",
            text(&out.stderr)
        );
        let same = if differences.is_empty() {
            "1 same, 0 changed"
        } else {
            "0 same, 1 changed"
        };
        assert!(
            report
                .trim_end()
                .ends_with(&format!("1 call, {same}, 0 new-error, 0 gone-error")),
            "{name}:\n{report}"
        );

        // The server gets the recorded answer: edited in the recording, it shows in the result.
        let recorded = std::fs::read_to_string(&path).unwrap();
        let edited = recorded.replace(
            &format!(r#""text":"{SAMPLED}""#),
            r#""text":"an answer edited in the recording""#,
        );
        assert_ne!(edited, recorded);
        let edited_path = dir.path().join(format!("asks-{n}-edited.jsonl"));
        std::fs::write(&edited_path, edited).unwrap();
        let out = replay(&edited_path, &[], &row.server);
        let report = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{name}:\n{report}");
        assert!(
            report.contains(&format!("changed    tools/call {}", row.sampling))
                && report.contains("an answer edited in the recording"),
            "{name}:\n{report}"
        );
    }
}

#[test]
fn a_request_the_recording_cannot_answer_fails_its_call_cleanly_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let row = &rows()[0];
    let path = dir.path().join("asks.jsonl");
    let lines = record(row, &path);
    // A recording made before the tool asked for sampling, and whose elicitation read otherwise.
    // Edited as text, but for the line read as a `Value`, so that the answers keep their key order.
    let recorded = std::fs::read_to_string(&path).unwrap();
    let mut edited = String::new();
    for (text, l) in recorded.lines().zip(&lines) {
        if l["name"] == row.sampling {
            let mut l = l.clone();
            l.as_object_mut().unwrap().remove("asks");
            edited.push_str(&l.to_string());
        } else {
            edited.push_str(&text.replace(
                r#""message":"Please provide inputs for the following fields:""#,
                r#""message":"Tell us who you are:""#,
            ));
        }
        edited.push('\n');
    }
    std::fs::write(&path, edited).unwrap();
    let sampling_line = 1 + lines
        .iter()
        .position(|l| l["name"] == row.sampling)
        .unwrap();

    let out = replay(&path, &[], &row.server);
    let report = text(&out.stdout);
    // The call ends with the server's error, not a time-out: exit 1, a difference, never 3.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{report}\n{}",
        text(&out.stderr)
    );
    assert!(
        report.contains(&format!(
            "new-error  tools/call {}  (call {sampling_line}",
            row.sampling
        )),
        "{report}"
    );
    assert!(
        report.contains(r#"    asks.0: (absent) → {"method":"sampling/createMessage","params":{"#),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "same       tools/call {}",
            row.elicitation
        )) && report.contains(
            r#"ask 1 elicitation/create: answered as recorded, though the request differs: params.message: "Tell us who you are:" → "Please provide inputs for the following fields:""#
        ),
        "{report}"
    );
    // The other calls and the tool list's line, recorded when the session ended, are the same.
    assert!(
        report.trim_end().ends_with(&format!(
            "{} calls, {} same, 0 changed, 1 new-error, 0 gone-error",
            lines.len(),
            lines.len() - 1
        )),
        "{report}"
    );

    let out = replay(&path, &["--format", "json"], &row.server);
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = value["results"].as_array().unwrap();
    let sampled = &results[sampling_line - 1];
    assert_eq!(sampled["status"], "new-error", "{sampled}");
    let unexpected = sampled["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"] == "asks.0")
        .unwrap_or_else(|| panic!("{sampled}"));
    assert_eq!(unexpected["replayed"]["method"], "sampling/createMessage");
    assert!(unexpected.get("recorded").is_none(), "{unexpected}");
    // The server was told why: the error it got says what calltape could not answer.
    let error = sampled["differences"][0]["replayed"]["message"]
        .as_str()
        .unwrap();
    assert!(
        error.contains("calltape replay has no recorded answer for sampling/createMessage"),
        "{error}"
    );
    let elicited = results
        .iter()
        .find(|r| r["name"] == row.elicitation)
        .unwrap();
    assert_eq!(elicited["status"], "same");
    assert_eq!(elicited["asks"][0]["kind"], "differs", "{elicited}");
    assert_eq!(
        elicited["asks"][0]["differences"][0]["path"],
        "params.message"
    );

    let out = replay(&path, &["--format", "junit"], &row.server);
    let junit = text(&out.stdout);
    assert!(
        junit.contains(r#"<failure type="new-error" message="new-error: "#)
            && junit.contains(
                "asks.0: (absent) → {&quot;method&quot;:&quot;sampling/createMessage&quot;"
            ),
        "{junit}"
    );
    assert!(
        junit.contains("<system-out>ask 1 elicitation/create: answered as recorded"),
        "{junit}"
    );

    let out = replay(&path, &["--format", "html"], &row.server);
    let html = text(&out.stdout);
    assert!(html.contains("<code>asks.0</code>"), "{html}");
    assert!(
        html.contains("<li>ask 1 elicitation/create: answered as recorded"),
        "{html}"
    );
}

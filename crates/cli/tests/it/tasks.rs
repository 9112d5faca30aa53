//! Task-augmented calls end to end: the official Python MCP SDK calls server-everything's
//! `simulate-research-query` as a task through `calltape record`, polls it and fetches its result;
//! the recording holds one plain call with that result, and `calltape replay` runs it as a task again,
//! since the tool declares that it runs only as one.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{calltape, everything, peer_script, python};

const BIN: &str = env!("CARGO_BIN_EXE_calltape");

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_task_is_recorded_as_one_call_with_its_result_and_replayed_as_a_task() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    let client = peer_script("replay_client.py");
    let out = Command::new(python())
        .arg(client)
        .args(["tasks", "--", BIN, "record", "-o"])
        .arg(&file)
        .arg("--")
        .arg(everything())
        .stderr(Stdio::piped())
        .output()
        .expect("run the Python client");
    assert!(
        out.status.success(),
        "client failed: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let statuses = seen["statuses"].as_array().unwrap();
    assert_eq!(statuses.last().unwrap(), "completed", "{seen}");
    assert!(statuses.len() > 1, "the client polled: {seen}");

    let recorded = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<Value> = recorded
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["method"].as_str().unwrap(), l["name"].as_str().unwrap()))
        .collect();
    // The calls, then the tool list the SDK read, which says the tool runs only as a task.
    assert_eq!(
        names,
        [
            ("tools/call", "simulate-research-query"),
            ("tools/call", "get-sum"),
            ("tools/list", "")
        ]
    );
    let research = lines[2]["answer"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "simulate-research-query")
        .unwrap();
    assert_eq!(research["execution"]["taskSupport"], "required");
    assert_eq!(lines[0]["input"], serde_json::json!({"topic": "tides"}));
    let report = lines[0]["answer"]["content"][0]["text"].as_str().unwrap();
    assert!(report.starts_with("# Research Report: tides"), "{report}");
    assert_eq!(
        lines[0]["answer"]["content"], seen["result"]["content"],
        "the line holds the result the client fetched"
    );
    assert!(!recorded.contains("related-task"), "{recorded}");
    assert!(!recorded.contains("taskId"), "{recorded}");

    let replay = |timeout: &str| {
        calltape()
            .arg("replay")
            .arg(&file)
            .args(["--timeout", timeout, "--"])
            .arg(everything())
            .output()
            .expect("run calltape replay")
    };
    let out = replay("30s");
    assert_eq!(
        text(&out.stdout),
        "3 calls, 3 same, 0 changed, 0 new-error, 0 gone-error\n",
        "{}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0));

    // The task takes four stages of a second each: within three seconds it cannot end, and a
    // server slow to start on a loaded machine still answers initialize in time.
    let out = replay("3s");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains("call 1 (tools/call simulate-research-query, line 1): its task ")
            && err.contains(" did not end within 3s"),
        "{err}"
    );
}

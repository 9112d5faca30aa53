//! `calltape replay --fill` and following created ids, end to end: the official Python MCP SDK as
//! the client, recording through `calltape record` a FastMCP server of our own that needs a real card
//! token and makes a new payment id in every process, then replaying against a fresh process.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::{calltape, peer_script, python};

const BIN: &str = env!("CARGO_BIN_EXE_calltape");

/// The card token the client pays with; no file, report or log may hold it.
const CARD: &str = "tok_test_4eC39HqLyjWDarjt";

/// Records the `payments` scenario (a pay, then a refund of the new payment) into `file`; returns
/// the id the payment got.
fn record(file: &Path) -> String {
    let out = Command::new(python())
        .arg(peer_script("replay_client.py"))
        .args(["payments", "--", BIN, "record", "-o"])
        .arg(file)
        .arg("--")
        .arg(python())
        .arg(peer_script("pay_server.py"))
        .env("CARD", CARD)
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .output()
        .expect("run the Python client");
    assert!(
        out.status.success(),
        "client failed: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).expect("client output is JSON");
    result["paymentId"].as_str().unwrap().to_owned()
}

fn replay(file: &Path, extra: &[&str]) -> Output {
    replay_in(Path::new("."), file, extra)
}

/// [`replay`] with `cwd` as the working folder, where `calltape.toml` is looked for.
fn replay_in(cwd: &Path, file: &Path, extra: &[&str]) -> Output {
    calltape()
        .current_dir(cwd)
        .arg("replay")
        .arg(file)
        .args(["--timeout", "20s"])
        .args(extra)
        .arg("--")
        .arg(python())
        .arg(peer_script("pay_server.py"))
        .env("CARD", CARD)
        .output()
        .expect("run calltape replay")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Neither stdout nor stderr holds the card token.
fn assert_no_card(out: &Output) {
    for stream in [&out.stdout, &out.stderr] {
        assert!(!text(stream).contains(CARD), "{}", text(stream));
    }
}

#[test]
fn a_filled_token_and_a_followed_payment_id_replay_same_on_a_fresh_server() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    let id = record(&file);
    let recorded = std::fs::read_to_string(&file).unwrap();
    assert!(!recorded.contains(CARD), "{recorded}");
    let lines: Vec<Value> = recorded
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The two calls, then the tool list the SDK read.
    assert_eq!(lines.len(), 3, "{recorded}");
    assert_eq!(lines[2]["method"], "tools/list", "{recorded}");
    assert_eq!(lines[0]["input"]["cardToken"], "[REDACTED]");
    assert_eq!(lines[0]["answer"]["structuredContent"]["paymentId"], id);
    assert_eq!(lines[1]["input"]["paymentId"], id);
    let session = lines[0]["session"].as_str().unwrap();

    // Filled and followed: every call is same, and the refund says what it was sent (with -v; the
    // text report counts such calls otherwise).
    let out = replay(&file, &["--fill", "cardToken=env:CARD", "-v"]);
    assert_no_card(&out);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}{}", text(&out.stderr));
    let head = format!(
        "same       tools/call refund  (call 2, line 2, session {session})\n    input.paymentId: {id} → pay_"
    );
    assert!(report.starts_with(&head), "{report}");
    assert!(
        report
            .contains(" (from call 1, structuredContent.paymentId)\n\n3 calls, 3 same, 0 changed"),
        "{report}"
    );

    let out = replay(&file, &["--fill", "cardToken=env:CARD", "--format", "json"]);
    assert_no_card(&out);
    assert_eq!(out.status.code(), Some(0));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sub = &json["results"][1]["substitutions"][0];
    assert_eq!(sub["path"], "input.paymentId");
    assert_eq!(sub["recorded"], id.as_str());
    assert_eq!(sub["fromCall"], 1);
    assert_eq!(sub["fromPath"], "structuredContent.paymentId");
    let new_id = sub["replayed"].as_str().unwrap();
    assert!(new_id.starts_with("pay_") && new_id != id, "{sub}");
    assert!(json["results"][0].get("unfilled").is_none(), "{json}");

    let out = replay(
        &file,
        &["--fill", "cardToken=env:CARD", "--format", "junit"],
    );
    assert_no_card(&out);
    assert_eq!(out.status.code(), Some(0));
    let xml = text(&out.stdout);
    // Each replay runs a fresh server, so this run's new id is another again.
    let note = format!("<system-out>input.paymentId: {id} → pay_");
    assert!(xml.contains(&note), "{xml}");
    assert!(
        xml.contains(" (from call 1, structuredContent.paymentId)</system-out>"),
        "{xml}"
    );

    // Written to a file, the report holds no token either.
    let report_file = dir.path().join("report.json");
    let out = replay(
        &file,
        &[
            "--fill",
            "cardToken=env:CARD",
            "--format",
            "json",
            "--output",
            report_file.to_str().unwrap(),
        ],
    );
    assert_no_card(&out);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !std::fs::read_to_string(&report_file)
            .unwrap()
            .contains(CARD)
    );

    // --update keeps "[REDACTED]" and holds no token, and the rewritten recording replays same.
    let out = replay(&file, &["--fill", "cardToken=env:CARD", "--update"]);
    assert_no_card(&out);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let updated = std::fs::read_to_string(&file).unwrap();
    assert!(!updated.contains(CARD), "{updated}");
    assert!(
        updated.contains("\"cardToken\":\"[REDACTED]\""),
        "{updated}"
    );
    let out = replay(&file, &["--fill", "cardToken=env:CARD"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn without_a_fill_the_call_is_sent_as_recorded_and_noted_unfilled_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    record(&file);

    let out = replay(&file, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.starts_with("new-error  tools/call pay  (call 1, line 1,"),
        "{report}"
    );
    assert!(report.contains("card token refused"), "{report}");
    assert!(report.contains("\n    unfilled: cardToken\n"), "{report}");
    // No payment was made, so there is no id to follow: the refund fails too.
    assert!(
        report.contains("new-error  tools/call refund  (call 2, line 2,"),
        "{report}"
    );

    let out = replay(&file, &["--format", "json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["results"][0]["unfilled"],
        serde_json::json!(["cardToken"])
    );
    assert!(json["results"][1].get("unfilled").is_none(), "{json}");

    let out = replay(&file, &["--format", "junit"]);
    let xml = text(&out.stdout);
    assert!(
        xml.contains("<system-out>unfilled: cardToken</system-out>"),
        "{xml}"
    );
    assert!(xml.contains("\n    unfilled: cardToken</failure>"), "{xml}");
}

#[test]
fn no_follow_sends_the_recorded_id_and_bad_fills_exit_2_without_echoing_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    record(&file);

    let out = replay(&file, &["--fill", "cardToken=env:CARD", "--no-follow"]);
    assert_no_card(&out);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(
        report.contains("changed    tools/call pay  (call 1, line 1,"),
        "{report}"
    );
    assert!(
        report.contains("new-error  tools/call refund  (call 2, line 2,"),
        "{report}"
    );
    assert!(!report.contains("input.paymentId"), "{report}");

    let key = dir.path().join("card.txt");
    std::fs::write(&key, format!("{CARD}\n")).unwrap();
    let fill = format!("cardToken=file:{}", key.display());
    let out = replay(&file, &["--fill", &fill]);
    assert_no_card(&out);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));

    // The same fills from a calltape.toml, found from a folder below it (a `file:` path is taken
    // from the file's folder); a --fill of the same name replaces the file's, whose variable is
    // then not read. (what [replay] holds, flags, exit code)
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("card.txt"), format!("{CARD}\n")).unwrap();
    let unset = "fill = { cardToken = \"env:CALLTAPE_TEST_UNSET_CARD\" }";
    let rows: [(&str, &[&str], i32); 5] = [
        ("fill = { cardToken = \"file:card.txt\" }", &[], 0),
        ("fill = { cardToken = \"env:CARD\" }", &[], 0),
        (unset, &["--fill", "cardToken=env:CARD"], 0),
        (unset, &[], 2),
        // No fill: the payment is sent with "[REDACTED]" and refused.
        ("mask = [\"uuid\"]", &[], 1),
    ];
    for (replay_table, flags, code) in rows {
        let config = format!("[replay]\n{replay_table}\n");
        std::fs::write(project.join("calltape.toml"), &config).unwrap();
        let out = replay_in(&project.join("src"), &file, flags);
        assert_no_card(&out);
        let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(code), "{config}{flags:?}: {said}");
        if code == 2 {
            assert!(
                said.contains("calltape.toml:2: replay.fill: ")
                    && said.contains("CALLTAPE_TEST_UNSET_CARD is not set"),
                "{said}"
            );
        }
    }

    let cases = [
        (
            format!("cardToken={CARD}"),
            "a fill for `cardToken` is written NAME=env:VAR or NAME=file:PATH",
        ),
        (
            "cardToken=env:CALLTAPE_TEST_UNSET_CARD".to_owned(),
            "the environment variable CALLTAPE_TEST_UNSET_CARD is not set",
        ),
        (
            format!("cardToken=file:{}", dir.path().join("missing").display()),
            "cannot fill `cardToken`: cannot read ",
        ),
    ];
    for (fill, want) in cases {
        let out = replay(&file, &["--fill", &fill]);
        assert_eq!(out.status.code(), Some(2), "{fill}");
        assert!(
            text(&out.stderr).contains(want),
            "{fill}: {}",
            text(&out.stderr)
        );
        assert!(!text(&out.stderr).contains(CARD), "{}", text(&out.stderr));
    }
}

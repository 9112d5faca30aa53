//! `calltape http` in CI: a miss the application swallows still fails the run, and `--report`
//! writes what the run did. The official OpenAI and Anthropic SDKs are the application.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use crate::http::{FakeApi, run_client_with};

fn read_report(path: &Path) -> String {
    let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the report is owner-only");
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_miss_the_application_swallows_fails_the_run_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("ci.jsonl");
    let report = dir.path().join("report.json");
    let fake = FakeApi::start(dir.path());
    let (status, recorded, stderr) =
        run_client_with("record", &[], &fake.url(), &cassette, "basic");
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(recorded["anthropic"], "You said hey");
    drop(fake);
    let offline = "http://127.0.0.1:9";

    // Every request a hit: the run passes, and the report says so.
    let options = ["--report", report.to_str().unwrap()];
    let (status, replayed, stderr) =
        run_client_with("replay", &options, offline, &cassette, "basic");
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(replayed, recorded);
    let v: Value = serde_json::from_str(&read_report(&report)).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["mode"], "replay");
    assert_eq!(v["cassettes"][0]["path"], cassette.display().to_string());
    assert_eq!(v["cassettes"][0]["hits"], 2);
    assert_eq!(v["cassettes"][0]["misses"], serde_json::json!([]));

    // Both SDKs get a 404 and the application swallows it (exits 0): calltape exits 1, after
    // naming each miss with its cassette and the closest recording's diff.
    let (status, missed, stderr) = run_client_with("replay", &options, offline, &cassette, "miss");
    assert_eq!(missed["error"]["status"], 404, "{missed}");
    assert_eq!(missed["anthropic_error"]["status"], 404, "{missed}");
    assert_eq!(status, 1, "{stderr}");
    let c = cassette.display();
    for (request, closest) in [
        (
            "POST openai /v1/chat/completions",
            "POST openai /v1/chat/completions",
        ),
        ("POST anthropic /v1/messages", "POST anthropic /v1/messages"),
    ] {
        let line = format!("miss in {c}: {request}: no recording\n  closest recording: {closest}");
        assert!(stderr.contains(&line), "{line:?} not in:\n{stderr}");
    }
    assert!(
        stderr.contains("+      \"content\": \"a question never recorded\""),
        "the closest recording's diff:\n{stderr}"
    );
    let v: Value = serde_json::from_str(&read_report(&report)).unwrap();
    let misses = v["cassettes"][0]["misses"].as_array().unwrap();
    assert_eq!(misses.len(), 2, "{v:#}");
    assert_eq!(misses[0]["method"], "POST");
    assert_eq!(misses[0]["path"], "/v1/chat/completions");
    assert_eq!(misses[0]["closest"][0]["path"], "/v1/chat/completions");
    assert!(
        misses[0]["closest"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("a question never recorded")
    );

    // JUnit: one testcase for the cassette, a failure per miss.
    let junit = dir.path().join("report.xml");
    let options = [
        "--report",
        junit.to_str().unwrap(),
        "--report-format",
        "junit",
    ];
    let (status, _, stderr) = run_client_with("replay", &options, offline, &cassette, "miss");
    assert_eq!(status, 1, "{stderr}");
    let xml = read_report(&junit);
    assert_eq!(xml.matches("<testcase ").count(), 1, "{xml}");
    assert_eq!(xml.matches("<failure type=\"miss\"").count(), 2, "{xml}");

    // HTML, read in a browser: the cassette's row, its misses and the closest recording's diff.
    let page = dir.path().join("report.html");
    let options = [
        "--report",
        page.to_str().unwrap(),
        "--report-format",
        "html",
    ];
    let (status, _, stderr) = run_client_with("replay", &options, offline, &cassette, "miss");
    assert_eq!(status, 1, "{stderr}");
    read_report(&page);
    let dom = crate::html::dom(&page);
    let row = crate::html::row(&dom, &c.to_string());
    assert!(
        row.contains("<span class=\"status s-miss\">miss</span>"),
        "{row}"
    );
    assert!(
        row.contains("<span>0</span><span>2</span><span>0</span><span>0</span>"),
        "{row}"
    );
    assert_eq!(row.matches("closest recording: <code>").count(), 2, "{row}");
    assert!(
        row.contains("<ins>+      \"content\": \"a question never recorded\""),
        "{row}"
    );
    assert!(dom.contains("<dd>replay</dd>"), "{dom}");

    // --allow-misses keeps the command's own status.
    let (status, _, stderr) =
        run_client_with("replay", &["--allow-misses"], offline, &cassette, "miss");
    assert_eq!(status, 0, "{stderr}");
    assert!(stderr.contains("2 missed"), "{stderr}");
}

#[test]
fn a_zero_byte_cassette_is_empty_and_a_missing_one_says_how_to_record_it() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("empty.jsonl");
    std::fs::write(&cassette, "").unwrap();
    let (status, missed, stderr) =
        run_client_with("replay", &[], "http://127.0.0.1:9", &cassette, "miss");
    assert_eq!(
        missed["error"]["status"], 404,
        "a miss, not a 500:\n{stderr}"
    );
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains("the cassette holds no recordings"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&cassette).unwrap(),
        b"",
        "replay writes nothing"
    );

    // No file at all: each miss says so, and how to record it, to the application and on stderr.
    std::fs::remove_file(&cassette).unwrap();
    let (status, missed, stderr) =
        run_client_with("replay", &[], "http://127.0.0.1:9", &cassette, "miss");
    assert_eq!(status, 1, "{stderr}");
    let c = cassette.display();
    let record = format!(
        "record it with: calltape http --mode record --upstream openai=http://127.0.0.1:9 \
         --upstream anthropic=http://127.0.0.1:9 --cassette {c} -- <your test command> \
         (or set CALLTAPE_MODE=record)"
    );
    let message = missed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "calltape: no cassette at {c} for POST openai /v1/chat/completions"
        )) && message.ends_with(&format!("; {record}")),
        "{message}"
    );
    assert!(stderr.contains(&format!("\n  {record}\n")), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "no cassette at {c}: POST anthropic /v1/messages found nothing to replay"
        )),
        "{stderr}"
    );
    assert!(!cassette.exists(), "replay writes nothing");
}

#[test]
fn the_report_is_never_written_through_a_symbolic_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("elsewhere.txt");
    std::fs::write(&target, "keep me").unwrap();
    let link = dir.path().join("report.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let run = |report: &Path| {
        crate::support::calltape()
            .args([
                "http",
                "--mode",
                "replay",
                "--upstream",
                "openai=http://127.0.0.1:9",
            ])
            .arg("--cassette")
            .arg(dir.path().join("c.jsonl"))
            .arg("--report")
            .arg(report)
            .args(["--", "true"])
            .env_remove("CALLTAPE_MODE")
            .output()
            .unwrap()
    };
    let out = run(&link);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&link.display().to_string()), "{stderr}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");

    // A run with nothing to report still writes an (empty) report.
    let plain = dir.path().join("plain.json");
    let out = run(&plain);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_str(&read_report(&plain)).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"version": 1, "mode": "replay", "cassettes": []})
    );
}

//! A URL's user info (`https://user:token@host`) reaches no report, hint or log: not the proxy's
//! for an upstream given with one, not a replay report's for `--url` with one.

use crate::support::{calltape, free_port, http_everything};

/// The user info's secret, which nothing may show.
pub(crate) const USERINFO_TOKEN: &str = "s3cr3t-userinfo-t0ken";

#[test]
fn an_upstream_urls_user_info_reaches_no_hint_report_or_log_of_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("empty.jsonl");
    let report = dir.path().join("report.html");
    // Nothing listens there, and there is no cassette: each SDK request misses, and the miss's
    // message gives the command that would record it.
    let upstream = format!("http://bob:{USERINFO_TOKEN}@127.0.0.1:9");
    let options = [
        "--report",
        report.to_str().unwrap(),
        "--report-format",
        "html",
    ];
    let (status, _, stderr) =
        crate::http::run_client_with("replay", &options, &upstream, &cassette, "miss");
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains(
            "record it with: calltape http --mode record --upstream openai=http://127.0.0.1:9"
        ),
        "{stderr}"
    );
    let report = std::fs::read_to_string(&report).unwrap();
    assert!(report.contains("openai=http://127.0.0.1:9"), "{report}");
    for text in [&stderr, &report] {
        assert!(!text.contains(USERINFO_TOKEN), "{text}");
    }

    // Recording, the proxy forwards to the upstream, which is unreachable: the error says which
    // upstream, not its URL (here with a token alone as its user info, which reads as no
    // credential to the redactor that stderr passes).
    let upstream = format!("http://{USERINFO_TOKEN}@127.0.0.1:9");
    let (_, _, stderr) = crate::http::run_client_with("record", &[], &upstream, &cassette, "miss");
    assert!(stderr.contains("upstream openai unreachable"), "{stderr}");
    assert!(!stderr.contains(USERINFO_TOKEN), "{stderr}");
}

#[test]
fn a_replay_urls_user_info_reaches_no_report() {
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("calls.jsonl");
    let call = serde_json::json!({"v": 1, "at": "2026-05-01T10:00:00.000Z", "session": "3f9a1c2e",
        "method": "tools/call", "name": "echo", "input": {"message": "hi"},
        "answer": {"content": [{"type": "text", "text": "Echo: hi"}]}, "durationMs": 1.0});
    std::fs::write(&recording, format!("{call}\n")).unwrap();
    let server = http_everything(free_port());
    let url = server
        .url()
        .replacen("://", &format!("://bob:{USERINFO_TOKEN}@"), 1);
    let report = dir.path().join("report.html");
    let run = calltape()
        .arg("replay")
        .arg(&recording)
        .args(["--url", &url, "--format", "html", "--output"])
        .arg(&report)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(matches!(run.status.code(), Some(0 | 1)), "{stderr}");
    let report = std::fs::read_to_string(&report).unwrap();
    assert!(report.contains(&server.url()), "{report}");
    for text in [&report, &stderr.to_string()] {
        assert!(!text.contains(USERINFO_TOKEN), "{text}");
    }
}

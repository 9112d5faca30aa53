//! What a `calltape http` run keeps in its cassette, with the official OpenAI Python SDK as the
//! application: an interaction refused for a credential is dropped and the run goes on recording, and
//! re-recording against an upstream that answers real APIs' headers (new request ids, rate-limit
//! counters, dates) rewrites only the interactions whose answers changed.

use std::path::Path;
use std::process::Stdio;

use crate::http::{FakeApi, run_client_with};
use crate::support::{calltape, python};

const OPENAI_KEY: &str = "sk-proj-tapeTestKey0123456789abcdefghij";

/// A credential of the application's environment that the fake API answers as a number (the
/// completion's `created`): no redaction rule rewrites a number, so the final check refuses the line.
const PIN: &str = "9081726354";

/// The application: one chat completion per argument, each answer printed.
const ASK: &str = r#"
import sys
import openai
client = openai.OpenAI(max_retries=0)
for text in sys.argv[1:]:
    r = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": text}])
    print(r.choices[0].message.content, r.created)
"#;

/// Runs `calltape http --mode MODE` with the application asking `questions`; the exit status,
/// stdout and stderr.
fn run(mode: &str, upstream: &str, cassette: &Path, questions: &[&str]) -> (i32, String, String) {
    let out = calltape()
        .args(["http", "--mode", mode, "--upstream"])
        .arg(format!("openai={upstream}"))
        .arg("--cassette")
        .arg(cassette)
        .args(["--env", "OPENAI_BASE_URL=openai/v1", "--"])
        .arg(python())
        .args(["-c", ASK])
        .args(questions)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("BILLING_PIN_SECRET", PIN)
        .env_remove("CALLTAPE_MODE")
        .env_remove("CI")
        .stdin(Stdio::null())
        .output()
        .expect("run calltape http");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_interaction_refused_for_a_credential_is_dropped_and_the_later_ones_are_saved() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeApi::start(dir.path());
    let questions = ["before", &format!("created {PIN}"), "after", "last"];
    // Each mode that records, from an empty cassette: every request is forwarded and recorded.
    for mode in ["auto", "append", "record"] {
        let cassette = dir.path().join(format!("{mode}.jsonl"));
        let (status, stdout, stderr) = run(mode, &fake.url(), &cassette, &questions);
        // The application got every answer; the run fails for the one refused interaction.
        assert_eq!(status, 1, "{mode}: {stderr}");
        assert!(
            stdout.contains(&format!("echo: created {PIN} {PIN}")),
            "{mode}: {stdout}"
        );
        assert!(
            stderr.contains("3 recorded") && stderr.contains("1 refused"),
            "{mode}: {stderr}"
        );
        assert!(stderr.contains("BILLING_PIN_SECRET"), "{mode}: {stderr}");
        assert!(
            !stderr.contains(PIN),
            "{mode}: the value reached stderr:\n{stderr}"
        );
        let text = std::fs::read_to_string(&cassette)
            .unwrap_or_else(|e| panic!("{mode}: no cassette ({e}):\n{stderr}"));
        for kept in ["echo: before", "echo: after", "echo: last"] {
            assert!(text.contains(kept), "{mode}: {kept} is missing:\n{text}");
        }
        assert!(
            !text.contains("created [REDACTED]"),
            "{mode}: the refused one was stored:\n{text}"
        );
        assert!(!text.contains(PIN), "{mode}: {text}");
        assert!(
            !dir.path().join(format!("{mode}.jsonl.journal")).exists(),
            "{mode}: the journal was left behind"
        );

        // What was saved replays offline.
        let (status, stdout, stderr) = run(
            "replay",
            "http://127.0.0.1:9",
            &cassette,
            &["before", "after", "last"],
        );
        assert_eq!(status, 0, "{mode}: {stderr}");
        assert!(stdout.contains("echo: last"), "{mode}: {stdout}");
    }
}

/// The lines of `new` that are not in `old`, in order.
fn changed_lines<'a>(old: &str, new: &'a str) -> Vec<&'a str> {
    let old: std::collections::HashSet<&str> = old.lines().collect();
    new.lines().filter(|l| !old.contains(l)).collect()
}

#[test]
fn re_recording_a_real_api_keeps_every_line_whose_answer_is_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("real.jsonl");
    // The request ids, dates, processing times and rate-limit headers kept too, beside the
    // request ids and rate-limit counters kept by default.
    let keep = [
        "--keep-header",
        "date",
        "--keep-header",
        "openai-*",
        "--keep-header",
        "x-envoy-upstream-service-time",
        "--keep-header",
        "cf-ray",
        "--keep-header",
        "anthropic-organization-id",
    ];
    for options in [&[][..], &keep[..]] {
        let _ = std::fs::remove_file(&cassette);
        let fake = FakeApi::start(dir.path());
        let (status, _, stderr) =
            run_client_with("record", options, &fake.url(), &cassette, "basic");
        assert_eq!(status, 0, "{options:?}: {stderr}");
        let first = std::fs::read_to_string(&cassette).unwrap();
        // The real APIs' headers are there, with values that differ from one request to the next.
        for header in [
            r#"["x-request-id","req_"#,
            r#"["x-ratelimit-remaining-requests","#,
            r#"["anthropic-ratelimit-tokens-remaining","#,
            r#"["request-id","req_011C"#,
        ] {
            assert!(first.contains(header), "{header}: {first}");
        }
        if !options.is_empty() {
            for header in [
                r#"["date","#,
                r#"["openai-processing-ms","#,
                r#"["cf-ray","#,
            ] {
                assert!(first.contains(header), "{header}: {first}");
            }
        }
        assert!(!first.contains("set-cookie"), "{first}");

        // The same traffic again: the upstream answered new ids and counters, the file is the same.
        let (status, _, stderr) =
            run_client_with("record", options, &fake.url(), &cassette, "basic");
        assert_eq!(status, 0, "{options:?}: {stderr}");
        let again = std::fs::read_to_string(&cassette).unwrap();
        assert!(
            again == first,
            "{options:?}: re-recording changed {:#?}",
            changed_lines(&first, &again)
        );
        drop(fake);

        // An upstream whose chat answer changed: that interaction is rewritten, with the new
        // answer's request id; the stream whose answer is the same keeps its stored lines.
        let changed = FakeApi::start_with(dir.path(), &["--answer", "echo, changed: "]);
        let (status, recorded, stderr) =
            run_client_with("record", options, &changed.url(), &cassette, "basic");
        assert_eq!(status, 0, "{options:?}: {stderr}");
        assert_eq!(recorded["chat"], "echo, changed: hi");
        let rewritten = std::fs::read_to_string(&cassette).unwrap();
        let new_lines = changed_lines(&first, &rewritten);
        assert_eq!(new_lines.len(), 1, "{options:?}: {new_lines:#?}");
        assert!(
            new_lines[0].contains("echo, changed: hi")
                && new_lines[0].contains(r#"["x-request-id","req_"#),
            "{options:?}: {}",
            new_lines[0]
        );
        assert_eq!(
            changed_lines(&rewritten, &first).len(),
            1,
            "{options:?}: only the chat answer's line went"
        );
    }
}

//! What a `calltape http` run keeps in its cassette, with the official OpenAI Python SDK as the
//! application: an interaction refused for a credential is dropped and the run goes on recording,
//! re-recording against an upstream that answers real APIs' headers (new request ids, rate-limit
//! counters, dates) rewrites only the interactions whose answers changed, and a `null`, `false` or
//! `""` under a credential's name is kept as it is, so the SDK's object on replay is the real one.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

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

/// `calltape http [--mode MODE] … -- python -c SCRIPT`, with no mode, key or CI setting of the
/// test's own environment: the caller adds the arguments of SCRIPT and the environment.
fn application(mode: Option<&str>, upstream: &str, cassette: &Path, script: &str) -> Command {
    let mut command = calltape();
    command.arg("http");
    if let Some(mode) = mode {
        command.args(["--mode", mode]);
    }
    command
        .arg("--upstream")
        .arg(format!("openai={upstream}"))
        .arg("--cassette")
        .arg(cassette)
        .args(["--env", "OPENAI_BASE_URL=openai/v1", "--"])
        .arg(python())
        .args(["-c", script])
        .env_remove("CALLTAPE_MODE")
        .env_remove("OPENAI_API_KEY")
        .env_remove("CI")
        .stdin(Stdio::null());
    command
}

/// Runs `calltape http --mode MODE` with the application asking `questions`; the exit status,
/// stdout and stderr.
fn run(mode: &str, upstream: &str, cassette: &Path, questions: &[&str]) -> (i32, String, String) {
    let out = application(Some(mode), upstream, cassette, ASK)
        .args(questions)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("BILLING_PIN_SECRET", PIN)
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

/// The application: two Responses API calls, one whose credential-named fields hold nothing
/// (`prompt_cache_key=None`, an empty `session_token`, `auth: false`), one whose fields hold
/// content; what the SDK's objects read, as JSON. The key is a placeholder when none is set, as
/// in CI.
const CACHE_KEYS: &str = r#"
import json, os, sys
import openai
client = openai.OpenAI(api_key=os.environ.get("OPENAI_API_KEY") or "unset", max_retries=0)
empty = client.responses.create(model="gpt-4o-mini", input="nothing secret", prompt_cache_key=None,
                                metadata={"session_token": ""}, extra_body={"auth": False})
full = client.responses.create(model="gpt-4o-mini", input="a cached question",
                               prompt_cache_key=sys.argv[1], metadata={"session_token": sys.argv[2]})
print(json.dumps({
    "empty": {"cache_key_is_none": empty.prompt_cache_key is None, "cache_key": empty.prompt_cache_key,
              "metadata": empty.metadata, "text": empty.output_text},
    "full": {"cache_key": full.prompt_cache_key, "metadata": full.metadata, "text": full.output_text},
}))
"#;

/// A cache key and a session token with content: redacted under their names.
const CACHE_KEY: &str = "user-4711-cache";
const SESSION_TOKEN: &str = "st-0f9e8d7c6b5a";

/// `calltape http` with CACHE_KEYS as the application, with `key`, or without one as CI runs it
/// (CI=true, which picks replay unless `mode` says otherwise); what it printed, parsed, and the
/// run's output.
fn cache_keys(
    mode: Option<&str>,
    upstream: &str,
    cassette: &Path,
    key: Option<&str>,
) -> (Value, Output) {
    let mut command = application(mode, upstream, cassette, CACHE_KEYS);
    command.args([CACHE_KEY, SESSION_TOKEN]);
    match key {
        Some(key) => command.env("OPENAI_API_KEY", key),
        None => command.env("CI", "true"),
    };
    let out = command.output().expect("run calltape http");
    let printed = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (printed, out)
}

#[test]
fn nothing_under_a_credential_name_keeps_its_type_so_the_replayed_sdk_object_reads_none() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("cache-keys.jsonl");
    let fake = FakeApi::start(dir.path());
    let (recorded, out) = cache_keys(Some("record"), &fake.url(), &cassette, Some(OPENAI_KEY));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The real answer: the SDK read None, "" and the content the upstream echoed.
    assert_eq!(
        recorded,
        json!({
            "empty": {"cache_key_is_none": true, "cache_key": null,
                      "metadata": {"session_token": ""}, "text": "Hi there"},
            "full": {"cache_key": CACHE_KEY, "metadata": {"session_token": SESSION_TOKEN},
                     "text": "Hi there"},
        }),
        "{stderr}"
    );
    drop(fake);

    // The cassette keeps what holds nothing as it was sent and answered, and replaces the content.
    let text = std::fs::read_to_string(&cassette).unwrap();
    for secret in [OPENAI_KEY, CACHE_KEY, SESSION_TOKEN] {
        assert!(!text.contains(secret), "{secret}: {text}");
    }
    // Each request line is followed by its answer's.
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let bodies: Vec<(&Value, &Value)> = lines
        .windows(2)
        .filter(|w| w[0]["t"] == "req" && w[0]["path"] == "/v1/responses" && w[1]["t"] == "res")
        .map(|w| (&w[0]["body"]["json"], &w[1]["body"]["json"]))
        .collect();
    assert_eq!(bodies.len(), 2, "{text}");
    let (request, response) = bodies[0];
    for body in [request, response] {
        // There and null: an SDK reads None from it, as from the real answer.
        assert_eq!(body.get("prompt_cache_key"), Some(&Value::Null), "{text}");
        assert_eq!(body["metadata"], json!({"session_token": ""}), "{text}");
    }
    assert_eq!(request["auth"], json!(false), "{text}");
    let (request, response) = bodies[1];
    for body in [request, response] {
        assert_eq!(body["prompt_cache_key"], "[REDACTED]", "{text}");
        assert_eq!(
            body["metadata"],
            json!({"session_token": "[REDACTED]"}),
            "{text}"
        );
    }

    // Replayed in CI with no key and no upstream: the SDK's object reads None where the real one
    // did, and the placeholder where content was redacted.
    let (replayed, out) = cache_keys(None, "http://127.0.0.1:9", &cassette, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(replayed["empty"], recorded["empty"], "{stderr}");
    assert_eq!(
        replayed["full"],
        json!({"cache_key": "[REDACTED]", "metadata": {"session_token": "[REDACTED]"}, "text": "Hi there"}),
        "{stderr}"
    );
}

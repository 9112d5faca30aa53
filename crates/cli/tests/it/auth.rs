//! Sign-in to an MCP server behind OAuth, through the `calltape` binary: several bridges started at
//! once share one sign-in and one refresh through the token store, so do the sessions of one shared
//! server of a remote (`shared --url`), tokens stay in the store alone, and `calltape auth
//! list`/`logout` show and remove what is stored.
//!
//! The server is `tests/peers/oauth_server.py`: an MCP endpoint and its authorization server, which
//! approves every sign-in at once and counts what it was asked. `tests/peers/auth_opener.py` stands in
//! for the browser: it follows the sign-in URL to calltape's loopback redirect.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    process::{ChildStdin, ChildStdout, Command, Stdio},
    time::Duration,
};

use serde_json::{Value, json};

use calltape_stdio_bridge::shared::{SharedKey, SharedPaths};

use crate::support::{KillOnDrop, calltape, peer_script, python, stop_shared_server, wait_or_kill};

/// How many bridges start at once.
const BRIDGES: usize = 5;

/// The fixture server, killed when dropped.
struct OAuthServer {
    _child: KillOnDrop,
    url: String,
}

impl OAuthServer {
    fn start() -> Self {
        let mut child = KillOnDrop::new(
            Command::new(python())
                .arg(peer_script("oauth_server.py"))
                .stdout(Stdio::piped())
                .spawn()
                .expect("start oauth_server.py"),
        );
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the server's URL");
        let url = line.trim().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
        Self { _child: child, url }
    }

    fn address(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned()
    }

    /// One request to the fixture's control endpoints; the JSON it answers.
    fn control(&self, method: &str, path: &str) -> Value {
        let mut stream = TcpStream::connect(self.address()).expect("connect to the fixture");
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.address()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
    }

    fn stats(&self) -> Value {
        self.control("GET", "/control/stats")
    }
}

/// The environment every calltape process of a test shares: one store, one browser.
fn signed_in_env(command: &mut Command, dir: &Path) {
    command
        .env("CALLTAPE_HOME", dir.join("home"))
        .env("BROWSER", peer_script("auth_opener.py"))
        .env("OPENER_LOG", dir.join("opened.log"));
}

/// One `calltape bridge --url` with its stdin and stdout.
struct Bridge {
    child: KillOnDrop,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: PathBuf,
}

impl Bridge {
    fn start(url: &str, dir: &Path, n: usize) -> Self {
        Self::run(&["bridge", "--url", url], dir, n)
    }

    /// `calltape ARGS` (a command that bridges stdio), the `n`th of the test.
    fn run(args: &[&str], dir: &Path, n: usize) -> Self {
        let stderr = dir.join(format!("bridge-{n}.stderr"));
        let mut command = calltape();
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap());
        signed_in_env(&mut command, dir);
        let mut child = KillOnDrop::new(command.spawn().expect("start calltape bridge"));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The answer to request `id` (notifications before it are passed over).
    fn answer(&mut self, id: u64) -> Value {
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).unwrap();
            assert!(
                read > 0,
                "the bridge closed stdout before answering {id}; stderr:\n{}",
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    fn finish(mut self) -> String {
        drop(self.stdin);
        let status = wait_or_kill(&mut self.child, Duration::from_secs(20));
        assert!(
            status.is_some(),
            "the bridge did not exit once stdin closed"
        );
        std::fs::read_to_string(&self.stderr).unwrap()
    }
}

fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "auth-test", "version": "1"}}})
}

fn call(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn shared_sessions_of_a_remote_server_make_one_sign_in_and_no_file_but_the_store_holds_the_token() {
    let server = OAuthServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let paths = SharedPaths::under(&home, &SharedKey::new("remote").unwrap());

    // Two sessions at once: one shared server, `serve --url` of the fixture, signs in for both.
    let args = ["shared", "--key", "remote", "--url", server.url.as_str()];
    let mut sessions: Vec<Bridge> = (0..2).map(|n| Bridge::run(&args, tmp.path(), n)).collect();
    for session in &mut sessions {
        session.send(initialize(1));
    }
    for session in &mut sessions {
        let answer = session.answer(1);
        assert_eq!(
            answer["result"]["serverInfo"]["name"], "oauth-fixture",
            "{answer}"
        );
        session.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session.send(call(
            2,
            "tools/call",
            json!({"name": "whoami", "arguments": {}}),
        ));
    }
    for session in &mut sessions {
        let answer = session.answer(2);
        assert_eq!(
            answer["result"]["content"][0]["text"], "signed in",
            "{answer}"
        );
    }
    let stats = server.stats();
    assert_eq!(stats["registrations"], 1, "{stats}");
    assert_eq!(stats["authorizations"], 1, "{stats}");
    assert_eq!(stats["code_grants"], 1, "{stats}");
    let opened = std::fs::read_to_string(tmp.path().join("opened.log")).unwrap();
    assert_eq!(opened.lines().count(), 1, "{opened}");

    let entries: Vec<PathBuf> = files_under(&home.join("auth"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let stored: Value = serde_json::from_slice(&std::fs::read(&entries[0]).unwrap()).unwrap();
    let token = stored["access_token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("at-"), "{stored}");
    let mut stderr = String::new();
    for session in sessions {
        stderr.push_str(&session.finish());
    }
    assert!(!stderr.contains(&token), "{stderr}");
    // The shared server's log says it signed in, and no file but the store's entry holds the token.
    stop_shared_server(&paths);
    let log = std::fs::read_to_string(paths.log()).unwrap();
    assert!(log.contains("sign in to"), "{log}");
    let holding: Vec<PathBuf> = files_under(tmp.path())
        .into_iter()
        .filter(|p| *p != entries[0])
        .filter(|p| {
            std::fs::read(p).is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(&token))
        })
        .collect();
    assert_eq!(holding, Vec::<PathBuf>::new());
}

#[test]
fn five_bridges_started_at_once_make_one_sign_in_and_one_refresh() {
    let server = OAuthServer::start();
    let tmp = tempfile::tempdir().unwrap();

    // All five start and send initialize before any has signed in: each meets the 401.
    let mut bridges: Vec<Bridge> = (0..BRIDGES)
        .map(|n| Bridge::start(&server.url, tmp.path(), n))
        .collect();
    for bridge in &mut bridges {
        bridge.send(initialize(1));
    }
    for bridge in &mut bridges {
        let answer = bridge.answer(1);
        assert_eq!(
            answer["result"]["serverInfo"]["name"], "oauth-fixture",
            "{answer}"
        );
        bridge.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        bridge.send(call(2, "tools/list", json!({})));
    }
    for bridge in &mut bridges {
        let answer = bridge.answer(2);
        assert_eq!(answer["result"]["tools"][0]["name"], "whoami", "{answer}");
    }
    let stats = server.stats();
    assert_eq!(stats["registrations"], 1, "{stats}");
    assert_eq!(stats["authorizations"], 1, "{stats}");
    assert_eq!(stats["code_grants"], 1, "{stats}");
    assert_eq!(stats["refresh_grants"], 0, "{stats}");
    let opened = std::fs::read_to_string(tmp.path().join("opened.log")).unwrap();
    assert_eq!(opened.lines().count(), 1, "{opened}");

    // The server stops taking the token: every bridge's next call meets a 401 and one refresh serves
    // them all.
    server.control("POST", "/control/expire");
    for bridge in &mut bridges {
        bridge.send(call(
            3,
            "tools/call",
            json!({"name": "whoami", "arguments": {}}),
        ));
    }
    for bridge in &mut bridges {
        let answer = bridge.answer(3);
        assert_eq!(
            answer["result"]["content"][0]["text"], "signed in",
            "{answer}"
        );
    }
    let stats = server.stats();
    assert_eq!(stats["refresh_grants"], 1, "{stats}");
    assert_eq!(stats["code_grants"], 1, "{stats}");
    assert_eq!(stats["authorizations"], 1, "{stats}");

    // The tokens are in the store alone: owner-only, and in no log.
    let home = tmp.path().join("home");
    let entries: Vec<PathBuf> = files_under(&home.join("auth"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        std::fs::metadata(home.join("auth")).unwrap().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(&entries[0]).unwrap().mode() & 0o777,
        0o600
    );
    let stored: Value = serde_json::from_slice(&std::fs::read(&entries[0]).unwrap()).unwrap();
    let token = stored["access_token"].as_str().unwrap().to_owned();
    let refresh = stored["refresh_token"].as_str().unwrap().to_owned();
    assert!(
        token.starts_with("at-") && refresh.starts_with("rt-"),
        "{stored}"
    );
    for bridge in bridges {
        let stderr = bridge.finish();
        assert!(
            !stderr.contains(&token) && !stderr.contains(&refresh),
            "{stderr}"
        );
    }

    // `auth list` shows the sign-in, never a token; `auth logout` removes it.
    let mut list = calltape();
    list.args(["auth", "list"]);
    signed_in_env(&mut list, tmp.path());
    let out = list.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(shown.contains(&server.url), "{shown}");
    assert!(shown.contains("scopes: mcp"), "{shown}");
    assert!(shown.contains("expires in"), "{shown}");
    assert!(!shown.contains("at-") && !shown.contains("rt-"), "{shown}");

    let mut logout = calltape();
    logout.args(["auth", "logout", &server.url]);
    signed_in_env(&mut logout, tmp.path());
    let out = logout.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("signed out of"),
        "{out:?}"
    );
    let mut again = calltape();
    again.args(["auth", "logout", &server.url]);
    signed_in_env(&mut again, tmp.path());
    let out = again.output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("calltape auth list"),
        "{out:?}"
    );
}

#[test]
fn auth_login_signs_in_ahead_and_a_bridge_reuses_the_tokens() {
    let server = OAuthServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let mut login = calltape();
    login.args(["auth", "login", &server.url]);
    signed_in_env(&mut login, tmp.path());
    let out = login.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("signed in to"), "{stderr}");
    // The sign-in URL is always printed, whatever opened it.
    assert!(stderr.contains("/authorize?"), "{stderr}");
    assert_eq!(server.stats()["code_grants"], 1);

    let mut bridge = Bridge::start(&server.url, tmp.path(), 0);
    bridge.send(initialize(1));
    let answer = bridge.answer(1);
    assert_eq!(answer["result"]["serverInfo"]["name"], "oauth-fixture");
    bridge.finish();
    let stats = server.stats();
    assert_eq!(stats["code_grants"], 1, "{stats}");
    assert_eq!(stats["authorizations"], 1, "{stats}");
}

#[test]
fn a_recording_made_through_a_sign_in_holds_no_token_and_replays_with_client_credentials() {
    let server = OAuthServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let calls = tmp.path().join("calls.jsonl");
    let calls_arg = calls.to_str().unwrap();
    let mut record = Bridge::run(
        &["record", "-o", calls_arg, "--url", &server.url],
        tmp.path(),
        0,
    );
    record.send(initialize(1));
    record.answer(1);
    record.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    record.send(call(2, "tools/list", json!({})));
    record.answer(2);
    record.send(call(
        3,
        "tools/call",
        json!({"name": "whoami", "arguments": {}}),
    ));
    let answer = record.answer(3);
    assert_eq!(
        answer["result"]["content"][0]["text"], "signed in",
        "{answer}"
    );
    // A server that echoes the token: the client gets the answer, the recording never the token.
    record.send(call(
        4,
        "tools/call",
        json!({"name": "echo_token", "arguments": {}}),
    ));
    let echoed = record.answer(4);
    assert!(
        echoed["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("at-"),
        "{echoed}"
    );
    let stderr = record.finish();

    let token = &stored_token(&tmp.path().join("home"));
    let recording = std::fs::read_to_string(&calls).unwrap();
    assert!(recording.contains("whoami"), "{recording}");
    assert!(!recording.contains(token), "{recording}");
    assert!(!stderr.contains(token), "{stderr}");

    // In CI: another home, no browser, a pre-registered client and the client credentials grant.
    let secret = "ci-client-secret-value";
    let out = calltape()
        .args(["replay", calls_arg, "--url", &server.url])
        .args([
            "--oauth-client-id",
            "ci-client",
            "--oauth-client-credentials",
        ])
        .env("CALLTAPE_OAUTH_CLIENT_SECRET", secret)
        .env("CALLTAPE_HOME", tmp.path().join("ci-home"))
        .env("BROWSER", "/bin/false")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        !stdout.contains(secret) && !stderr.contains(secret),
        "{stderr}"
    );
    let stats = server.stats();
    assert_eq!(stats["client_credentials_grants"], 1, "{stats}");
    assert_eq!(stats["authorizations"], 1, "{stats}");
}

/// The access token of the one sign-in stored under `home`.
fn stored_token(home: &Path) -> String {
    let stored = files_under(&home.join("auth"))
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a stored sign-in");
    let stored: Value = serde_json::from_slice(&std::fs::read(stored).unwrap()).unwrap();
    stored["access_token"].as_str().unwrap().to_owned()
}

#[test]
fn a_token_the_server_echoes_is_in_no_recording_or_report_of_mock_replay_or_serve() {
    let server = OAuthServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let echo_token = || {
        call(
            3,
            "tools/call",
            json!({"name": "echo_token", "arguments": {}}),
        )
    };

    // `mock --mode auto` forwards what its (missing) recording lacks and records it.
    let calls = tmp.path().join("calls.jsonl");
    let calls_arg = calls.to_str().unwrap();
    let mut mock = Bridge::run(
        &["mock", "--mode", "auto", calls_arg, "--url", &server.url],
        tmp.path(),
        0,
    );
    mock.send(initialize(1));
    mock.answer(1);
    mock.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mock.send(echo_token());
    let token = stored_token(&tmp.path().join("home"));
    assert!(
        mock.answer(3).to_string().contains(&token),
        "the client gets the server's answer whole"
    );
    let stderr = mock.finish();
    let recording = std::fs::read_to_string(&calls).unwrap();
    assert!(recording.contains("your token: [REDACTED]"), "{recording}");
    assert!(!recording.contains(&token) && !stderr.contains(&token));

    // `replay` against the server (signed in from the store) when the answer changed: the token is
    // in the live answer, and in none of the reports or the updated recording.
    let changed = tmp.path().join("changed.jsonl");
    std::fs::write(
        &changed,
        recording.replace("your token: [REDACTED]", "your token: none"),
    )
    .unwrap();
    let replay = |extra: &[&str]| {
        let mut command = calltape();
        command
            .args(["replay", changed.to_str().unwrap(), "--url", &server.url])
            .args(extra);
        signed_in_env(&mut command, tmp.path());
        command.output().unwrap()
    };
    let out = replay(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("echo_token") && stdout.contains("your token: none"),
        "{stdout}"
    );
    assert!(!stdout.contains(&token) && !String::from_utf8_lossy(&out.stderr).contains(&token));
    for format in ["json", "html", "junit"] {
        let report = tmp.path().join(format!("report.{format}"));
        let out = replay(&["--format", format, "--output", report.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{format}");
        let report = std::fs::read_to_string(&report).unwrap();
        assert!(report.contains("echo_token"), "{format}: {report}");
        assert!(!report.contains(&token), "{format}: {report}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains(&token));
    }
    let out = replay(&["--update"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let updated = std::fs::read_to_string(&changed).unwrap();
    assert!(updated.contains("your token: [REDACTED]"), "{updated}");
    assert!(!updated.contains(&token));

    // `serve --url --record` with calltape's own sign-in, for an HTTP client that brings none.
    let served_dir = tmp.path().join("serve");
    std::fs::create_dir(&served_dir).unwrap();
    let served_calls = served_dir.join("served.jsonl");
    let args: Vec<std::ffi::OsString> = [
        "--listen",
        "127.0.0.1:0",
        "--url",
        &server.url,
        "--record",
        served_calls.to_str().unwrap(),
    ]
    .iter()
    .map(Into::into)
    .collect();
    let mut served = crate::serve::Served::start_configured(&served_dir, &args, |command| {
        signed_in_env(command, tmp.path())
    });
    let started = served.exchange(None, crate::serve::INITIALIZE);
    let session = crate::support::session_id_of(&started).unwrap_or_else(|| panic!("{started}"));
    served.exchange(
        Some(&session),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    let echoed = served.exchange(Some(&session), &echo_token().to_string());
    assert!(echoed.contains(&token), "{echoed}");
    let _ = Command::new("kill")
        .arg(served.child.id().to_string())
        .status();
    assert!(
        served.child.wait().unwrap().success(),
        "{}",
        served.stderr()
    );
    let recording = std::fs::read_to_string(&served_calls).unwrap();
    assert!(recording.contains("your token: [REDACTED]"), "{recording}");
    assert!(!recording.contains(&token) && !served.stderr().contains(&token));
    // One sign-in served all of it: the store's token was reused by replay and serve.
    assert_eq!(server.stats()["authorizations"], 1, "{}", server.stats());
}

//! `calltape shared` and `calltape serve` end to end: real Python MCP SDK clients and a FastMCP server.

use std::{
    io::{BufRead, BufReader, Read, Write},
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use calltape_stdio_bridge::shared::{ServerRecord, SharedKey, SharedPaths};
use serde_json::Value;

use crate::support::{calltape, first_line, peer_script, python, served_addr, stop_shared_server};

fn home() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    tmp
}

/// Every process's arguments and environment, as text.
fn all_processes_text() -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        for file in ["cmdline", "environ"] {
            if let Ok(bytes) = std::fs::read(entry.path().join(file)) {
                text.push_str(&String::from_utf8_lossy(&bytes));
                text.push('\n');
            }
        }
    }
    text
}

#[test]
fn python_clients_started_together_share_one_server_over_both_transports() {
    for transport in ["unix", "http"] {
        let home = home();
        let output = Command::new(python())
            .arg(peer_script("shared_client.py"))
            .arg("2")
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_calltape"))
            .args(["shared", "--key", "k", "--transport", transport, "--"])
            .arg(python())
            .arg(peer_script("shared_server.py"))
            .env("CALLTAPE_HOME", home.path())
            .env("CALLTAPE_LOG", "trace")
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{transport}: {stderr}");
        let result: Value = serde_json::from_slice(&output.stdout).expect("the client's JSON");
        let pids = result["pids"].as_array().unwrap();
        assert_eq!(pids.len(), 2);
        assert_eq!(
            pids[0], pids[1],
            "{transport}: both sessions reached one server"
        );
        assert_eq!(
            result["later"], pids[0],
            "{transport}: the server outlived the first sessions"
        );

        let paths = SharedPaths::under(home.path(), &SharedKey::new("k").unwrap());
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(paths.dir()), 0o700);
        assert_eq!(mode(&paths.record()), 0o600);
        if transport == "unix" {
            assert_eq!(mode(&paths.socket()), 0o600);
        }
        let record = ServerRecord::read(&paths.record())
            .unwrap()
            .expect("a record");
        assert_eq!(record.endpoint.transport().to_string(), transport);
        // The key's mark stays with the shared server: the server it runs does not get it.
        let server = pids[0].as_str().unwrap();
        let environ = std::fs::read(format!("/proc/{server}/environ")).unwrap();
        assert!(
            !String::from_utf8_lossy(&environ).contains("CALLTAPE_SHARED_SERVE=k"),
            "{transport}: the MCP server was marked as the shared server"
        );
        let secret = record.secret.to_hex();
        let token = record.secret.keys().token().to_owned();
        // Neither secret nor token in any output or log at trace level, nor in any process's arguments
        // or environment.
        assert!(
            stderr.contains("TRACE"),
            "the sessions logged at trace level"
        );
        let log = std::fs::read_to_string(paths.log()).unwrap();
        assert!(log.contains("TRACE"), "the server logged at trace level");
        for (what, text) in [
            ("session stderr", stderr.as_ref()),
            ("stdout", &String::from_utf8_lossy(&output.stdout)),
            ("server log", &log),
            ("process arguments and environment", &all_processes_text()),
        ] {
            assert!(
                !text.contains(&secret),
                "{transport}: the secret is in the {what}"
            );
            assert!(
                !text.contains(&token),
                "{transport}: the token is in the {what}"
            );
        }
        stop_shared_server(&paths);
        assert!(!paths.record().exists(), "the record is removed on SIGTERM");
        assert!(!paths.socket().exists(), "the socket is removed on SIGTERM");
    }
}

#[test]
fn a_shared_server_of_a_remote_takes_headers_only_from_a_file() {
    let home = home();
    let output = calltape()
        .args([
            "shared",
            "--key",
            "remote",
            "--url",
            "http://127.0.0.1:9/mcp",
        ])
        .args(["--header", "Authorization: Bearer sk-live-abcdefabcdef0123"])
        .env("CALLTAPE_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--header-file") && !stderr.contains("abcdefabcdef0123"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(home.path()).unwrap().count(),
        0,
        "nothing was created"
    );
}

#[test]
fn a_usage_error_shows_the_placeholders_and_still_hides_a_secret_typed_in_it() {
    let stderr = usage_error(&["shared"]);
    assert!(
        stderr.contains("--key <KEY>") && !stderr.contains("[REDACTED]"),
        "{stderr}"
    );

    let stderr = usage_error(&["bridge", "--buffer", "token=hunter2x", "--", "true"]);
    assert!(
        stderr.contains("--buffer <N>") && !stderr.contains("hunter2x"),
        "{stderr}"
    );
}

/// What `calltape ARGS` prints on stderr, after checking it exits 2 (a usage error).
fn usage_error(args: &[&str]) -> String {
    let output = calltape().args(args).stdin(Stdio::null()).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn every_invalid_key_is_rejected_before_any_file_is_touched() {
    let home = home();
    let long = "k".repeat(65);
    for (key, rule) in [
        ("", "must not be empty"),
        (long.as_str(), "at most 64"),
        ("Notes", "lowercase"),
        ("a/b", "may only hold"),
        ("../etc", "may only hold"),
        ("-k", "start with"),
        ("k.", "end with"),
        ("con", "Windows"),
        ("com1", "Windows"),
    ] {
        let output = calltape()
            .args(["shared", &format!("--key={key}"), "--", "true"])
            .env("CALLTAPE_HOME", home.path())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{key}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("invalid key") && stderr.contains(rule),
            "{key}: {stderr}"
        );
        assert_eq!(
            std::fs::read_dir(home.path()).unwrap().count(),
            0,
            "{key}: nothing was created"
        );
    }
}

#[test]
fn unsafe_folders_are_refused_with_the_path_and_what_to_do() {
    for mode in [0o777, 0o770] {
        let home = home();
        let dir = home.path().join("shared/k");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let output = calltape()
            .args(["shared", "--key", "k", "--", "true"])
            .env("CALLTAPE_HOME", home.path())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&dir.display().to_string()), "{stderr}");
        assert!(stderr.contains("CALLTAPE_HOME"), "{stderr}");
        assert!(!dir.join("server.log").exists(), "no server was started");
    }
}

#[test]
fn a_socket_path_over_the_limit_is_refused_up_front() {
    let home = home();
    let deep = home.path().join("d".repeat(100));
    std::fs::create_dir(&deep).unwrap();
    let output = calltape()
        .args(["shared", "--key", "k", "--", "true"])
        .env("CALLTAPE_HOME", &deep)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("over the 107-byte limit") && stderr.contains("--transport http"),
        "{stderr}"
    );
}

#[test]
fn a_failed_start_answers_the_held_request_with_its_own_id_and_the_reason() {
    let home = home();
    // Something live on the key's socket: the server this session starts cannot listen, and says why.
    let dir = home.path().join("shared/k");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(
        home.path().join("shared"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let _live = std::os::unix::net::UnixListener::bind(dir.join("server.sock")).unwrap();
    let mut child = calltape()
        .args(["shared", "--key", "k", "--"])
        .arg(python())
        .arg(peer_script("shared_server.py"))
        .env("CALLTAPE_HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":\"init-1\",\"method\":\"initialize\",\"params\":{}}\n",
        )
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let answer: Value = serde_json::from_str(&line).expect("a JSON-RPC answer");
    assert_eq!(answer["id"], "init-1");
    assert_eq!(
        answer["error"]["data"]["reason"],
        "shared_server_unavailable"
    );
    let reason = answer["error"]["data"]["upstream"]["message"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("did not start") && reason.contains("a live server already listens"),
        "{answer}"
    );
    assert_eq!(status.code(), Some(3));
    assert!(
        stderr.contains("cannot attach to the shared server"),
        "{stderr}"
    );
}

#[test]
fn a_session_that_cannot_attach_again_answers_at_once_and_says_why() {
    let home = home();
    let stderr_path = home.path().join("session.stderr");
    let mut child = calltape()
        .args(["shared", "--key", "k", "--"])
        .arg(python())
        .arg(peer_script("shared_server.py"))
        .env("CALLTAPE_HOME", home.path())
        .env("CALLTAPE_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answer = |stdin: &mut std::process::ChildStdin, line: &str, id: i64| -> Value {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        loop {
            let mut text = String::new();
            assert!(
                stdout.read_line(&mut text).unwrap() > 0,
                "the session ended"
            );
            let message: Value = serde_json::from_str(&text).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    };
    let init = answer(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        1,
    );
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .unwrap();

    // The server dies, and its folder has become unsafe: the session cannot attach again.
    let paths = SharedPaths::under(home.path(), &SharedKey::new("k").unwrap());
    let record = ServerRecord::read(&paths.record())
        .unwrap()
        .expect("a record");
    std::fs::set_permissions(paths.dir(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let _ = Command::new("kill")
        .args(["-KILL", &record.pid.to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&stderr_path)
        .unwrap()
        .contains("cannot attach to the shared server")
    {
        assert!(Instant::now() < deadline, "the session never said why");
        std::thread::sleep(Duration::from_millis(25));
    }
    let failed = answer(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pid","arguments":{}}}"#,
        2,
    );
    assert_eq!(
        failed["error"]["data"]["reason"], "shared_server_unavailable",
        "{failed}"
    );
    let reason = failed["error"]["data"]["upstream"]["message"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains(&paths.dir().display().to_string()) && reason.contains("CALLTAPE_HOME"),
        "{reason}"
    );
    drop(stdin);
    let _ = child.wait();
    std::fs::set_permissions(paths.dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(
        stderr.contains("cannot attach to the shared server `k`"),
        "{stderr}"
    );
    assert!(!stderr.contains(&record.secret.to_hex()));
    assert!(!stderr.contains(record.secret.keys().token()));
}

/// A raw HTTP/1.1 request (with `Connection: close`); returns the whole response.
fn exchange(addr: &str, request: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

fn status_of(addr: &str, request: &str) -> u16 {
    exchange(addr, request)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[test]
fn serve_over_loopback_http_requires_the_token_and_refuses_pages_and_foreign_hosts() {
    let tmp = home();
    let token_file = tmp.path().join("token");
    let recording = tmp.path().join("calls.jsonl");
    let mut server = calltape()
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        .arg("--record")
        .arg(&recording)
        .arg("--")
        .arg(python())
        .arg(peer_script("shared_server.py"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = first_line(&mut server);
    let addr = served_addr(&url);
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().mode() & 0o777,
        0o600
    );
    let token = std::fs::read_to_string(&token_file).unwrap();
    assert_eq!(token.len(), 64);

    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let post = |extra: &str, host: &str, body: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let request = |extra: &str, host: &str| post(extra, host, body);
    assert_eq!(status_of(&addr, &request("", &addr)), 401);
    assert_eq!(
        status_of(&addr, &request("Authorization: Bearer wrong\r\n", &addr)),
        401
    );
    let auth = format!("Authorization: Bearer {token}\r\n");
    assert_eq!(
        status_of(
            &addr,
            &request(&format!("{auth}Origin: http://evil.example\r\n"), &addr)
        ),
        403
    );
    assert_eq!(status_of(&addr, &request(&auth, "evil.example")), 421);
    // What a page sends without an Origin (an <img>, a form's GET): the browser's Sec-Fetch-Site
    // says another site made it. The user's own navigation and the listener's own origin pass.
    for (site, status) in [
        ("cross-site", 403),
        ("same-site", 403),
        ("none", 200),
        ("same-origin", 200),
    ] {
        let extra = format!("{auth}Sec-Fetch-Site: {site}\r\n");
        assert_eq!(status_of(&addr, &request(&extra, &addr)), status, "{site}");
    }
    let response = exchange(&addr, &request(&auth, &addr));
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        !response
            .to_ascii_lowercase()
            .contains("access-control-allow"),
        "no CORS: {response}"
    );
    let session = response
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("mcp-session-id: ")
                .map(str::to_owned)
        })
        .expect("a session id");
    let in_session =
        format!("{auth}Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(
        status_of(&addr, &post(&in_session, &addr, initialized)),
        202
    );
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"recorded call"}}}"#;
    let response = exchange(&addr, &post(&in_session, &addr, call));
    assert!(response.contains("recorded call"), "{response}");
    // A page's request in the session is neither served nor recorded.
    let from_a_page = format!("{in_session}Sec-Fetch-Site: cross-site\r\n");
    let page_call = call.replace("recorded call", "a page's call");
    assert_eq!(
        status_of(&addr, &post(&from_a_page, &addr, &page_call)),
        403
    );

    let _ = Command::new("kill").arg(server.id().to_string()).status();
    let status = server.wait().unwrap();
    assert!(status.success(), "SIGTERM stops serve cleanly: {status}");
    let recorded = std::fs::read_to_string(&recording).expect("a recording");
    assert_eq!(std::fs::metadata(&recording).unwrap().mode() & 0o777, 0o600);
    assert!(!recorded.contains("a page's call"), "{recorded}");
    let line: Value = serde_json::from_str(recorded.lines().next().expect("one call")).unwrap();
    assert_eq!(line["method"], "tools/call");
    assert_eq!(line["name"], "echo");
    assert_eq!(line["input"]["text"], "recorded call");
}

/// How the second session of a key differs from the first.
#[derive(Debug, Clone, Copy)]
enum Differs {
    /// The same server with another argument.
    Argument,
    /// The same command line, `python shared_server.py`, run from another checkout.
    Folder,
}

#[test]
fn a_session_for_another_command_or_folder_starts_its_own_server_and_says_so_in_one_line() {
    for differs in [Differs::Argument, Differs::Folder] {
        let home = home();
        let checkouts = tempfile::tempdir().unwrap();
        let checkout = |name: &str| {
            let dir = checkouts.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::copy(
                peer_script("shared_server.py"),
                dir.join("shared_server.py"),
            )
            .unwrap();
            dir.canonicalize().unwrap()
        };
        let (one, two) = (checkout("one"), checkout("two"));
        let run = |dir: &Path, extra: &[&str]| {
            Command::new(python())
                .arg(peer_script("shared_client.py"))
                .arg("1")
                .arg("--")
                .arg(env!("CARGO_BIN_EXE_calltape"))
                .args(["shared", "--key", "k", "--"])
                .arg(python())
                .arg("shared_server.py")
                .args(extra)
                .current_dir(dir)
                .env("CALLTAPE_HOME", home.path())
                .env_remove("CALLTAPE_LOG")
                .env("NO_COLOR", "1")
                .output()
                .unwrap()
        };
        let replaced = "runs another command, folder or calltape version";
        let first = run(&one, &[]);
        let stderr = String::from_utf8_lossy(&first.stderr);
        assert!(first.status.success(), "{differs:?}: {stderr}");
        assert!(!stderr.contains(replaced), "{differs:?}: {stderr}");
        let paths = SharedPaths::under(home.path(), &SharedKey::new("k").unwrap());
        let old = ServerRecord::read(&paths.record())
            .unwrap()
            .expect("the first server's record");
        let pid_of = |output: &std::process::Output| -> String {
            let value: Value = serde_json::from_slice(&output.stdout).unwrap();
            value["pids"][0].as_str().expect("a pid").to_owned()
        };
        let cwd_of = |pid: &str| std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
        let first_pid = pid_of(&first);
        assert_eq!(cwd_of(&first_pid), one, "{differs:?}");

        let second = match differs {
            Differs::Argument => run(&one, &["--another-argument"]),
            Differs::Folder => run(&two, &[]),
        };
        let stderr = String::from_utf8_lossy(&second.stderr);
        assert!(second.status.success(), "{differs:?}: {stderr}");
        assert_eq!(stderr.matches(replaced).count(), 1, "{differs:?}: {stderr}");
        let second_pid = pid_of(&second);
        assert_ne!(first_pid, second_pid, "{differs:?}");
        let folder = match differs {
            Differs::Argument => &one,
            Differs::Folder => &two,
        };
        assert_eq!(&cwd_of(&second_pid), folder, "{differs:?}");
        let new = ServerRecord::read(&paths.record())
            .unwrap()
            .expect("the new server's record");
        assert_ne!(new.pid, old.pid, "{differs:?}");
        // The old server had no session left: it exits (reaped, or a zombie of whoever adopted it).
        let running = || {
            std::fs::read_to_string(format!("/proc/{}/stat", old.pid)).is_ok_and(|stat| {
                stat.rsplit(") ")
                    .next()
                    .is_some_and(|s| !s.starts_with('Z'))
            })
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!running(), "{differs:?}: the replaced server exited");
        stop_shared_server(&paths);
    }
}

//! Shared servers: start-or-attach with real processes, real files and real sockets; squatters that
//! never get the token.

use std::{
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use calltape_stdio_bridge::{
    ErrorKind, Upstream, UpstreamEvent,
    serve::{Endpoint, Transport},
    shared::{
        Attached, Launcher, MCP_PATH, Secret, ServerRecord, SharedKey, SharedPaths, SharedUpstream,
        attach_or_start,
    },
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

use crate::serve::mux_server;

pub(crate) fn example(name: &str) -> PathBuf {
    mux_server().with_file_name(name)
}

/// Whether another open file holds the `flock` at `path`: trying it takes it only when nobody does, and
/// the file is closed again at once.
fn lock_is_held(path: &Path) -> bool {
    let file = std::fs::File::open(path).expect("the lock file");
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => false,
        Err(rustix::io::Errno::WOULDBLOCK) => true,
        Err(e) => panic!("cannot try the lock {}: {e}", path.display()),
    }
}

pub(crate) fn home() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    tmp
}

pub(crate) fn paths(home: &Path, key: &str) -> SharedPaths {
    SharedPaths::under(home, &SharedKey::new(key).unwrap())
}

pub(crate) fn launcher(transport: Transport) -> Launcher {
    let args: [std::ffi::OsString; 4] = [
        transport.to_string().into(),
        "60000".into(),
        "--".into(),
        mux_server().into(),
    ];
    Launcher::new(example("shared_server"), args).expect("the working folder")
}

/// The launcher behind `sh -c`, which runs `script` first and then execs the real server, keeping its
/// standard input (the server lock).
fn launcher_after(script: &str, transport: Transport) -> Launcher {
    let real = launcher(transport);
    let mut args = vec![
        "-c".into(),
        format!("{script}; exec \"$0\" \"$@\"").into(),
        real.program.into(),
    ];
    args.extend(real.args);
    Launcher::new("sh", args).expect("the working folder")
}

pub(crate) fn stop(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
}

pub(crate) async fn wait_gone(path: &Path) {
    for _ in 0..200 {
        if !path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} is still there", path.display());
}

async fn attach(paths: &SharedPaths, transport: Transport) -> Attached {
    attach_or_start(
        paths,
        transport,
        &launcher(transport),
        Duration::from_secs(60),
    )
    .await
    .expect("attached")
}

#[tokio::test]
async fn sessions_started_together_share_one_server_over_both_transports() {
    for transport in [Transport::Unix, Transport::Http] {
        let home = home();
        let paths = paths(home.path(), "k");
        let mut tasks = Vec::new();
        for _ in 0..5 {
            let paths = paths.clone();
            tasks.push(tokio::spawn(async move { attach(&paths, transport).await }));
        }
        let mut attached = Vec::new();
        for task in tasks {
            attached.push(task.await.unwrap());
        }
        let pid = attached[0].pid;
        assert!(attached.iter().all(|a| a.pid == pid), "{attached:?}");
        assert_eq!(
            attached.iter().filter(|a| a.started).count(),
            1,
            "{attached:?}"
        );
        assert_eq!(attached[0].endpoint.transport(), transport);
        assert_eq!(attached[0].path, MCP_PATH);

        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(paths.dir()), 0o700);
        assert_eq!(mode(&paths.record()), 0o600);
        if transport == Transport::Unix {
            assert_eq!(mode(&paths.socket()), 0o600);
        }
        // A later session attaches without starting anything.
        let later = attach(&paths, transport).await;
        assert_eq!(later.pid, pid);
        assert!(!later.started);

        // SIGTERM: the record (and the socket) go away.
        stop(pid);
        wait_gone(&paths.record()).await;
        wait_gone(&paths.socket()).await;
    }
}

/// What a squatter does with a challenge.
#[derive(Clone, Copy, Debug)]
enum Squat {
    /// A well-formed answer with a wrong proof.
    WrongProof,
    /// An answer without a length that never ends.
    Flood,
    /// A length over 1 KiB.
    TooLong,
}

/// A process listening on a port, recording every request it receives.
async fn squatter(listener: TcpListener, how: Squat) -> Arc<Mutex<Vec<String>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = stream.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    let Some(head_end) = text.find("\r\n\r\n") else {
                        continue;
                    };
                    let length = text[..head_end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if buf.len() < head_end + 4 + length {
                        continue;
                    }
                    log.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&buf[..head_end + 4 + length]).into_owned());
                    buf.drain(..head_end + 4 + length);
                    let proof = json!({"proof": "ab".repeat(32)}).to_string();
                    match how {
                        Squat::WrongProof => {
                            let res = format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{proof}",
                                proof.len()
                            );
                            let _ = stream.write_all(res.as_bytes()).await;
                        }
                        Squat::TooLong => {
                            let res = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000000\r\n\r\n{\"proof\":\"";
                            let _ = stream.write_all(res.as_bytes()).await;
                        }
                        Squat::Flood => {
                            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n").await;
                            let junk = vec![b' '; 1 << 16];
                            for _ in 0..1024 {
                                if stream.write_all(&junk).await.is_err() {
                                    return;
                                }
                            }
                            return;
                        }
                    }
                }
            });
        }
    });
    seen
}

fn assert_only_challenges(seen: &[String], secret: &str, token: &str) {
    assert!(!seen.is_empty(), "the squatter was challenged");
    for request in seen {
        assert!(
            request.starts_with("POST /.well-known/calltape-shared-server HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(
            !request.to_ascii_lowercase().contains("authorization"),
            "{request}"
        );
        assert!(
            !request.contains(secret) && !request.contains(token),
            "{request}"
        );
    }
}

#[tokio::test]
async fn a_squatter_on_the_recorded_port_gets_only_challenges_and_a_new_server_starts() {
    for how in [Squat::WrongProof, Squat::Flood, Squat::TooLong] {
        let home = home();
        let paths = paths(home.path(), "k");
        paths.prepare().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = squatter(listener, how).await;
        let secret = Secret::generate().unwrap();
        let token = secret.keys().token().to_owned();
        ServerRecord {
            endpoint: Endpoint::Http(addr),
            path: MCP_PATH.into(),
            pid: 1,
            secret: secret.clone(),
            command: String::new(),
        }
        .write(&paths.record())
        .unwrap();

        let attached = attach(&paths, Transport::Http).await;
        assert!(attached.started, "{how:?}");
        assert_ne!(attached.endpoint, Endpoint::Http(addr));
        assert_only_challenges(&seen.lock().unwrap(), &secret.to_hex(), &token);
        stop(attached.pid);
        wait_gone(&paths.record()).await;
    }
}

#[tokio::test]
async fn over_http_a_process_that_takes_the_port_after_the_server_stops_gets_nothing() {
    let home = home();
    let paths = paths(home.path(), "k");
    let upstream = SharedUpstream::new(paths.clone(), Transport::Http, launcher(Transport::Http));
    let attached = upstream.attach().await.unwrap();
    let Endpoint::Http(addr) = attached.endpoint else {
        panic!("http")
    };
    let record = ServerRecord::read(&paths.record()).unwrap().unwrap();
    let mut link = upstream.connect().await.unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    link.outgoing.send(init.to_string().into()).await.unwrap();
    match tokio::time::timeout(Duration::from_secs(20), link.events.recv())
        .await
        .unwrap()
        .unwrap()
    {
        UpstreamEvent::Message(frame) => {
            let answer: Value = serde_json::from_slice(&frame).unwrap();
            assert_eq!(answer["result"]["serverInfo"]["name"], "mux-server");
        }
        other => panic!("{other:?}"),
    }

    stop(attached.pid);
    wait_gone(&paths.record()).await;
    // Another process takes the port.
    let mut listener = None;
    for _ in 0..100 {
        if let Ok(l) = TcpListener::bind(addr).await {
            listener = Some(l);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen = squatter(listener.expect("the port is free again"), Squat::WrongProof).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "pid", "arguments": {}}});
    link.outgoing.send(call.to_string().into()).await.unwrap();
    // The call is never delivered: the process on the port is challenged and cannot prove itself. (The
    // GET stream may have reported the closed link before the squatter took the port; that is fine.)
    let mut refused = None;
    while let Ok(Some(event)) =
        tokio::time::timeout(Duration::from_secs(20), link.events.recv()).await
    {
        match event {
            UpstreamEvent::Undelivered {
                frame,
                maybe_delivered,
                reason,
            } => {
                assert!(!maybe_delivered);
                let frame: Value = serde_json::from_slice(&frame).unwrap();
                assert_eq!(frame["id"], 1);
                refused = Some(reason);
                break;
            }
            UpstreamEvent::Closed { .. } | UpstreamEvent::Message(_) => {}
            other => panic!("{other:?}"),
        }
    }
    let reason = refused.expect("the call was not delivered");
    assert!(reason.contains("did not prove"), "{reason}");
    let seen = seen.lock().unwrap().clone();
    assert_only_challenges(&seen, &record.secret.to_hex(), record.secret.keys().token());
}

/// A stdio session of the key `k` in a process of its own (the `shared_server session` example: a
/// bridge whose upstream is the key's server), started with `launcher`.
struct Session {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Session {
    fn start(home: &Path, transport: Transport, launcher: &Launcher) -> Self {
        let mut child = tokio::process::Command::new(example("shared_server"))
            .args(["session", "k", &transport.to_string(), "--"])
            .arg(&launcher.program)
            .args(&launcher.args)
            .env("CALLTAPE_HOME", home)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            stdout,
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    /// The answer to the request `id`, skipping notifications.
    async fn answer(&mut self, id: i64) -> Value {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(20), self.stdout.next_line())
                .await
                .expect("an answer within 20 s")
                .unwrap()
                .expect("the session is still running");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    async fn call(&mut self, id: i64, tool: &str) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}}))
            .await;
        self.answer(id).await
    }

    async fn initialize(&mut self) {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
            .await;
        let answer = self.answer(0).await;
        assert_eq!(
            answer["result"]["serverInfo"]["name"], "mux-server",
            "{answer}"
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }
}

fn pid_of(answer: &Value) -> u32 {
    answer["result"]["content"][0]["text"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("a pid: {answer}"))
}

fn parent_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // "pid (comm) state ppid …", where comm may hold spaces.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(1).unwrap().parse().unwrap()
}

/// The processes that have `path` open.
fn holders_of(path: &Path) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        if fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
        {
            pids.push(pid);
        }
    }
    pids
}

/// The running shared servers of the key `k` under `home`.
fn servers_of(home: &Path) -> Vec<u32> {
    let wanted = [
        format!("CALLTAPE_HOME={}", home.display()),
        "CALLTAPE_SHARED_SERVE=k".to_owned(),
    ];
    let server = example("shared_server");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let environ = String::from_utf8_lossy(&environ);
        let vars: Vec<&str> = environ.split('\0').collect();
        let exe = std::fs::read_link(entry.path().join("exe")).ok();
        if wanted.iter().all(|w| vars.contains(&w.as_str())) && exe.as_deref() == Some(&server) {
            pids.push(pid);
        }
    }
    pids
}

#[tokio::test]
async fn a_session_killed_while_its_server_starts_causes_no_second_server() {
    let home = home();
    let paths = paths(home.path(), "k");
    // The server takes as long to start as the test wants: it waits for the file `go` before it serves
    // (the point is that the first session is killed while its server is starting, not that starting
    // takes 10 s). Every start is counted in `starts`.
    let go = home.path().join("go");
    let starts = home.path().join("starts");
    let slow = launcher_after(
        &format!(
            "echo >> '{}'; while [ ! -e '{}' ]; do sleep 0.02; done",
            starts.display(),
            go.display()
        ),
        Transport::Unix,
    );
    let mut first = Session::start(home.path(), Transport::Unix, &slow);
    for _ in 0..400 {
        if starts.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(starts.exists(), "the first session started a server");
    first.child.kill().await.unwrap();
    assert!(!paths.record().exists(), "its server is still starting");
    assert!(lock_is_held(&paths.server_lock()));

    // A new session waits for that server instead of starting another.
    let mut second = Session::start(home.path(), Transport::Unix, &slow);
    second
        .send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .await;
    std::fs::write(&go, "").unwrap();
    let answer = second.answer(0).await;
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "mux-server",
        "{answer}"
    );
    let pid = pid_of(&second.call(1, "pid").await);

    let record = ServerRecord::read(&paths.record())
        .unwrap()
        .expect("a record");
    assert_eq!(
        std::fs::read_to_string(&starts).unwrap().lines().count(),
        1,
        "one server was started"
    );
    assert_eq!(servers_of(home.path()), vec![record.pid], "one server runs");
    assert_eq!(parent_of(pid), record.pid, "it answered the session");
    // The server lock is open in the server alone (not on its standard input, nor in its child).
    assert_eq!(holders_of(&paths.server_lock()), vec![record.pid]);
    let stdin = std::fs::read_link(format!("/proc/{}/fd/0", record.pid)).unwrap();
    assert_eq!(stdin, Path::new("/dev/null"));

    drop(second);
    stop(record.pid);
    wait_gone(&paths.record()).await;
}

#[tokio::test]
async fn an_attach_failure_mid_session_answers_at_once_with_the_reason_then_attaches_again() {
    let home = home();
    let paths = paths(home.path(), "k");
    // While the file `broken` exists, the server command fails at once.
    let broken = home.path().join("broken");
    let launcher = launcher_after(
        &format!(
            "if [ -e '{}' ]; then echo 'cannot start: the command is broken' >&2; exit 7; fi",
            broken.display()
        ),
        Transport::Unix,
    );
    let mut session = Session::start(home.path(), Transport::Unix, &launcher);
    session.initialize().await;
    let first_pid = pid_of(&session.call(1, "pid").await);
    let record = ServerRecord::read(&paths.record())
        .unwrap()
        .expect("a record");

    // The server dies and cannot be started again: the session notices, tries, and fails.
    std::fs::write(&broken, "").unwrap();
    let server = rustix::process::Pid::from_raw(record.pid as i32).unwrap();
    rustix::process::kill_process(server, rustix::process::Signal::KILL).unwrap();
    for _ in 0..400 {
        if std::fs::read_to_string(paths.log()).is_ok_and(|l| l.contains("cannot start")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // Answered at once (the restart deadline is 30 s, and this read gives up after 20 s), with its
    // own id and the reason.
    let answer = session.call(2, "pid").await;
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    assert_eq!(
        answer["error"]["data"]["reason"], "shared_server_unavailable",
        "{answer}"
    );
    let reason = answer["error"]["data"]["upstream"]["message"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("status 7") && reason.contains("cannot start: the command is broken"),
        "{reason}"
    );
    assert!(!reason.contains(&record.secret.to_hex()));

    // Once the command works again, the session attaches again at its first request after a pause
    // (1 s after the first failure); until then each request is answered at once with the reason.
    std::fs::remove_file(&broken).unwrap();
    let mut id = 3;
    let answer = loop {
        let answer = session.call(id, "pid").await;
        if answer.get("result").is_some() || id == 60 {
            break answer;
        }
        assert_eq!(
            answer["error"]["data"]["reason"], "shared_server_unavailable",
            "{answer}"
        );
        id += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let second_pid = pid_of(&answer);
    assert_ne!(second_pid, first_pid, "a new server answered");
    let record = ServerRecord::read(&paths.record())
        .unwrap()
        .expect("a record");
    drop(session);
    stop(record.pid);
    wait_gone(&paths.record()).await;
}

#[tokio::test]
async fn a_server_that_exits_early_fails_the_waiting_session_with_its_status() {
    let home = home();
    let paths = paths(home.path(), "k");
    let failing = Launcher::new("sh", ["-c", "echo 'cannot start: boom' >&2; exit 7"])
        .expect("the working folder");
    let err = attach_or_start(&paths, Transport::Unix, &failing, Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::SharedStart { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("status 7"), "{message}");
    assert!(message.contains("cannot start: boom"), "{message}");
}

#[tokio::test]
async fn a_live_socket_is_never_replaced() {
    let home = home();
    let paths = paths(home.path(), "k");
    paths.prepare().unwrap();
    let _live = std::os::unix::net::UnixListener::bind(paths.socket()).unwrap();
    std::fs::set_permissions(paths.socket(), std::fs::Permissions::from_mode(0o600)).unwrap();
    let err = attach_or_start(
        &paths,
        Transport::Unix,
        &launcher(Transport::Unix),
        Duration::from_secs(60),
    )
    .await
    .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("a live server already listens"),
        "{message}"
    );
    assert!(paths.socket().exists());
    assert!(!paths.record().exists());
}

#[tokio::test]
async fn unsafe_folders_and_records_are_refused_before_anything_starts() {
    for mode in [0o777, 0o770] {
        let home = home();
        let paths = paths(home.path(), "k");
        paths.prepare().unwrap();
        std::fs::set_permissions(paths.dir(), std::fs::Permissions::from_mode(mode)).unwrap();
        let err = attach_or_start(
            &paths,
            Transport::Unix,
            &launcher(Transport::Unix),
            Duration::from_secs(5),
        )
        .await
        .unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::UnsafePath { .. }), "{err}");
        assert!(err.to_string().contains(&paths.dir().display().to_string()));
        assert!(!paths.log().exists(), "no server was started");
    }

    let home = home();
    let paths = paths(home.path(), "k");
    paths.prepare().unwrap();
    let record = ServerRecord {
        endpoint: Endpoint::Unix(paths.socket()),
        path: MCP_PATH.into(),
        pid: 1,
        secret: Secret::generate().unwrap(),
        command: String::new(),
    };
    record.write(&paths.record()).unwrap();
    std::fs::set_permissions(paths.record(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = attach_or_start(
        &paths,
        Transport::Unix,
        &launcher(Transport::Unix),
        Duration::from_secs(5),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("the group or others can read"),
        "{err}"
    );
    assert!(!err.to_string().contains(&record.secret.to_hex()));

    if rustix::process::geteuid().is_root() {
        std::fs::set_permissions(paths.record(), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::chown(paths.record(), Some(65534), Some(65534)).unwrap();
        let err = attach_or_start(
            &paths,
            Transport::Unix,
            &launcher(Transport::Unix),
            Duration::from_secs(5),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string().contains("another user (uid 65534)"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn the_secret_is_in_no_argument_or_environment() {
    let home = home();
    let paths = paths(home.path(), "k");
    let attached = attach(&paths, Transport::Unix).await;
    let record = ServerRecord::read(&paths.record()).unwrap().unwrap();
    let secret = record.secret.to_hex();
    let token = record.secret.keys().token().to_owned();
    let mut checked = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let dir = entry.path();
        for file in ["cmdline", "environ"] {
            if let Ok(bytes) = std::fs::read(dir.join(file)) {
                let text = String::from_utf8_lossy(&bytes);
                assert!(
                    !text.contains(&secret) && !text.contains(&token),
                    "{} holds a secret",
                    dir.display()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 2);
    let environ = std::fs::read(format!("/proc/{}/environ", attached.pid)).unwrap();
    assert!(String::from_utf8_lossy(&environ).contains("CALLTAPE_SHARED_SERVE=k"));
    let log = std::fs::read_to_string(paths.log()).unwrap_or_default();
    assert!(!log.contains(&secret) && !log.contains(&token));
    stop(attached.pid);
    wait_gone(&paths.record()).await;
}

#[test]
fn public_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<calltape_stdio_bridge::serve::ServerBuilder>();
    check::<calltape_stdio_bridge::serve::Server>();
    check::<SharedUpstream>();
    check::<Attached>();
    check::<ServerRecord>();
    check::<SharedPaths>();
    check::<calltape_stdio_bridge::shared::ServerKeys>();
}

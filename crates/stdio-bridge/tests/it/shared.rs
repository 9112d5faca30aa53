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
    shared::{
        Attached, Endpoint, Launcher, MCP_PATH, Record, Secret, SharedKey, SharedPaths,
        SharedUpstream, Transport, attach_or_start,
    },
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

use crate::serve::mux_server;

fn example(name: &str) -> PathBuf {
    mux_server().with_file_name(name)
}

fn home() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    tmp
}

fn paths(home: &Path, key: &str) -> SharedPaths {
    SharedPaths::under(home, &SharedKey::new(key).unwrap())
}

fn launcher(transport: Transport) -> Launcher {
    Launcher {
        program: example("shared_server"),
        args: vec![
            transport.to_string().into(),
            "60000".into(),
            "--".into(),
            mux_server().into(),
        ],
    }
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
    Launcher {
        program: "sh".into(),
        args,
    }
}

fn stop(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
}

async fn wait_gone(path: &Path) {
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
        Record {
            endpoint: Endpoint::Http(addr),
            path: MCP_PATH.into(),
            pid: 1,
            secret: secret.clone(),
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
    let record = Record::read(&paths.record()).unwrap().unwrap();
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

#[tokio::test]
async fn a_session_killed_while_its_server_starts_causes_no_second_server() {
    let home = home();
    let paths = paths(home.path(), "k");
    let slow = launcher_after("sleep 10", Transport::Unix);
    let first = {
        let paths = paths.clone();
        tokio::spawn(async move {
            attach_or_start(&paths, Transport::Unix, &slow, Duration::from_secs(60)).await
        })
    };
    // Wait until the first session has started its server, then kill the session.
    for _ in 0..200 {
        if paths.log().exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(paths.log().exists(), "the first session started a server");
    first.abort();
    let _ = first.await;

    // A new session waits for that server instead of starting another.
    let second = attach(&paths, Transport::Unix).await;
    assert!(!second.started, "no second server was started");
    let third = attach(&paths, Transport::Unix).await;
    assert_eq!(third.pid, second.pid);
    stop(second.pid);
    wait_gone(&paths.record()).await;
}

#[tokio::test]
async fn a_server_that_exits_early_fails_the_waiting_session_with_its_status() {
    let home = home();
    let paths = paths(home.path(), "k");
    let failing = Launcher {
        program: "sh".into(),
        args: vec!["-c".into(), "echo 'cannot start: boom' >&2; exit 7".into()],
    };
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
    let record = Record {
        endpoint: Endpoint::Unix(paths.socket()),
        path: MCP_PATH.into(),
        pid: 1,
        secret: Secret::generate().unwrap(),
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
    let record = Record::read(&paths.record()).unwrap().unwrap();
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
    check::<calltape_stdio_bridge::serve::Serve>();
    check::<calltape_stdio_bridge::serve::Server>();
    check::<SharedUpstream>();
    check::<Attached>();
    check::<Record>();
    check::<SharedPaths>();
    check::<calltape_stdio_bridge::shared::FileLock>();
    check::<calltape_stdio_bridge::shared::ServerKeys>();
}

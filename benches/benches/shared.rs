//! Shared servers: what attaching to a running shared server costs a new session, beside starting the
//! same MCP server fresh for it, in the same run; and the memory of 5 sessions on one shared server
//! beside 5 separate servers.
//!
//! The MCP server is the Python SDK's FastMCP server of the end-to-end tests when `CALLTAPE_PEERS` is set
//! (a realistic start-up cost), else this binary's own minimal Rust server (`--echo-server`).
//!
//! This binary plays three roles: the bench (no role), the shared server a session starts (it finds
//! `CALLTAPE_SHARED_SERVE` in its environment, as `calltape serve` does), and the echo server
//! (`--echo-server`).

use std::{
    ffi::OsString,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use calltape_stdio_bridge::{
    ChildUpstream, Stderr, Upstream, UpstreamEvent,
    serve::{ServerBuilder, Transport},
    shared::{Launcher, SERVE_KEY_ENV, SharedKey, SharedPaths, SharedUpstream, serve_shared},
};
use criterion::Criterion;
use serde_json::json;

/// The argument that makes this binary the echo server.
const ECHO_ARG: &str = "--echo-server";
const SESSIONS: usize = 5;

/// How sessions reach the shared server: an owner-only Unix socket where there is one, else HTTP on
/// loopback.
#[cfg(unix)]
const TRANSPORT: Transport = Transport::Unix;
#[cfg(not(unix))]
const TRANSPORT: Transport = Transport::Http;

fn main() {
    if std::env::args().nth(1).as_deref() == Some(ECHO_ARG) {
        return echo_server();
    }
    if std::env::var_os(SERVE_KEY_ENV).is_some() {
        return shared_server();
    }
    let home = tempfile::tempdir().expect("a temporary folder");
    #[cfg(unix)]
    std::fs::set_permissions(
        home.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .expect("chmod");
    let paths = SharedPaths::under(home.path(), &SharedKey::new("bench").expect("a key"));
    let child = child_command();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let upstream = SharedUpstream::new(paths.clone(), TRANSPORT, launcher(&child));
    let attached = runtime
        .block_on(upstream.attach())
        .expect("a shared server");
    eprintln!(
        "shared server pid {} at {} (child: {})",
        attached.pid,
        attached.endpoint,
        child[0].to_string_lossy()
    );

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("session_start_to_first_answer");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("attach_to_running_shared_server", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let session = SharedUpstream::new(paths.clone(), TRANSPORT, launcher(&child));
                    let start = Instant::now();
                    let link = session.connect().await.expect("attached");
                    total += first_answer_from(link, start).await.0;
                }
                total
            })
        });
    });
    group.bench_function("start_fresh_server", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let fresh = ChildUpstream::new(child.iter().cloned())
                        .expect("a child")
                        .stderr(Stderr::Null);
                    let start = Instant::now();
                    let link = fresh.connect().await.expect("started");
                    let (elapsed, _) = first_answer_from(link, start).await;
                    total += elapsed;
                }
                total
            })
        });
    });
    group.finish();
    criterion.final_summary();

    memory(&runtime, &paths, &child, attached.pid);
    stop_server(attached.pid);
}

/// Asks the shared server `pid` to stop (SIGTERM, so that it cleans up as `calltape serve` does).
#[cfg(unix)]
fn stop_server(pid: u32) {
    let _ = Command::new("kill").arg(pid.to_string()).status();
}

/// Stops the shared server `pid` and its child.
#[cfg(not(unix))]
fn stop_server(pid: u32) {
    let _ = Command::new("taskkill")
        .args(["/PID", &pid.to_string(), "/T", "/F"])
        .stdout(Stdio::null())
        .status();
}

/// The MCP server both sides run.
fn child_command() -> Vec<OsString> {
    if let Some(peers) = std::env::var_os("CALLTAPE_PEERS") {
        let python = if cfg!(windows) {
            PathBuf::from(&peers).join("venv/Scripts/python.exe")
        } else {
            PathBuf::from(&peers).join("venv/bin/python")
        };
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/cli/tests/peers/shared_server.py");
        if python.exists() && script.exists() {
            return vec![python.into(), script.into()];
        }
    }
    vec![
        std::env::current_exe().expect("this binary").into(),
        ECHO_ARG.into(),
    ]
}

fn launcher(child: &[OsString]) -> Launcher {
    let mut args: Vec<OsString> = vec![TRANSPORT.to_string().into(), "--".into()];
    args.extend(child.iter().cloned());
    Launcher::new(std::env::current_exe().expect("this binary"), args).expect("the working folder")
}

fn initialize() -> bytes::Bytes {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    .to_string()
    .into()
}

/// Sends `initialize` and waits for its answer; returns the time from `start`, then closes the link.
async fn first_answer_from(
    mut link: calltape_stdio_bridge::Link,
    start: Instant,
) -> (Duration, ()) {
    link.outgoing.send(initialize()).await.expect("send");
    loop {
        match link.events.recv().await {
            Some(UpstreamEvent::Message(_)) => break,
            Some(_) => {}
            None => panic!("the server went away"),
        }
    }
    let elapsed = start.elapsed();
    (link.close)().await;
    (elapsed, ())
}

/// Resident memory of `pid` and all its descendants, in KiB, from `/proc` (0 without one).
fn tree_rss(pid: u32) -> u64 {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(entry.path().join("stat"))
            && let Some(after) = stat.rsplit_once(')').map(|(_, a)| a)
            && let Some(ppid) = after
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u32>().ok())
        {
            parents.push((p, ppid));
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    tree.iter().map(|p| rss(*p)).sum()
}

fn rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// Five sessions on the shared server against five separate servers, each after a handshake.
fn memory(runtime: &tokio::runtime::Runtime, paths: &SharedPaths, child: &[OsString], pid: u32) {
    let links = runtime.block_on(async {
        let mut links = Vec::new();
        for _ in 0..SESSIONS {
            let session = SharedUpstream::new(paths.clone(), TRANSPORT, launcher(child));
            let mut link = session.connect().await.expect("attached");
            link.outgoing.send(initialize()).await.expect("send");
            while !matches!(link.events.recv().await, Some(UpstreamEvent::Message(_))) {}
            links.push(link);
        }
        links
    });
    std::thread::sleep(Duration::from_millis(300));
    let shared = tree_rss(pid);
    let mut separate: Vec<Child> = (0..SESSIONS)
        .map(|_| {
            let mut c = Command::new(&child[0])
                .args(&child[1..])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("a separate server");
            let mut stdin = c.stdin.take().expect("stdin");
            stdin.write_all(&initialize()).expect("write");
            stdin.write_all(b"\n").expect("write");
            let mut line = String::new();
            BufReader::new(c.stdout.take().expect("stdout"))
                .read_line(&mut line)
                .expect("an answer");
            c.stdin = Some(stdin);
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let separate_rss: u64 = separate.iter().map(|c| tree_rss(c.id())).sum();
    for c in &mut separate {
        let _ = c.kill();
        let _ = c.wait();
    }
    drop(links);
    eprintln!(
        "memory, {SESSIONS} sessions: one shared server (server process and its child) {:.1} MiB; \
         {SESSIONS} separate servers {:.1} MiB (each session process of `calltape shared` adds its own \
         bridge-sized RSS, see the bridge bench)",
        shared as f64 / 1024.0,
        separate_rss as f64 / 1024.0
    );
}

/// The shared server a session starts, composed as `calltape serve` composes it.
fn shared_server() {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let transport: Transport = args[0].to_string_lossy().parse().expect("unix or http");
    let command: Vec<OsString> = args[2..].to_vec();
    let key = SharedKey::new(&std::env::var(SERVE_KEY_ENV).expect("a key")).expect("a valid key");
    let paths = SharedPaths::from_env(&key).expect("a home");
    let serve = ServerBuilder::new(
        ChildUpstream::new(command)
            .expect("a command")
            .stderr(Stderr::Null),
    )
    .idle_exit(Duration::from_secs(120));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    #[cfg(unix)]
    let stop = async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM");
        term.recv().await;
    };
    #[cfg(not(unix))]
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    if let Err(e) = runtime.block_on(serve_shared(&paths, transport, serve, stop)) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// A minimal stdio MCP server: answers `initialize` and every other request.
fn echo_server() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if message.get("id").is_none() || message.get("method").is_none() {
            continue;
        }
        let result = if message["method"] == "initialize" {
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench-echo", "version": "1"}})
        } else {
            json!({"content": [{"type": "text", "text": "ok"}]})
        };
        let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
        let _ = writeln!(out, "{answer}");
        let _ = out.flush();
    }
}

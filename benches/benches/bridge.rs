//! calltape-stdio-bridge: what the bridge adds to a `tools/call` round trip, pipelined throughput, and
//! the bridge's idle memory, each beside the same Rust echo server spoken to directly in the same run.
//!
//! Claims: added latency (median) at most 50 µs; pipelined throughput at least 50,000 messages/s; idle
//! RSS of the bridge at most 15 MB.
//!
//! This binary plays three roles, chosen by `CALLTAPE_BENCH_ROLE`: the bench itself (unset), the echo
//! server (`echo`), and the bridge (`bridge`: `Bridge` over stdio in front of the echo server, composed
//! exactly as `calltape bridge -- CMD` composes it). Set `CALLTAPE_BIN` to a built `calltape` binary to
//! measure `calltape bridge` itself instead.

use std::hint::black_box;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use calltape_stdio_bridge::{Bridge, ChildUpstream, stdio};
use criterion::{Criterion, Throughput};

const ROLE: &str = "CALLTAPE_BENCH_ROLE";
/// Messages per pipelined iteration.
const PIPELINED: u64 = 10_000;

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("echo") => return echo_server(),
        Ok("bridge") => return bridge(),
        _ => {}
    }
    let mut criterion = Criterion::default().configure_from_args();
    round_trip(&mut criterion);
    pipelined(&mut criterion);
    criterion.final_summary();
    idle_rss();
}

/// A minimal stdio MCP server: answers every request with a one-line text result.
fn echo_server() {
    let mut input = BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(request) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(id) = request.get("id") else {
            continue;
        };
        let result = if request["method"] == "initialize" {
            serde_json::json!({ "protocolVersion": "2025-06-18", "capabilities": { "tools": {} },
                "serverInfo": { "name": "bench-echo", "version": "1" } })
        } else {
            serde_json::json!({ "content": [{ "type": "text", "text": request["params"]["arguments"]["text"] }] })
        };
        let answer = serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result });
        if writeln!(out, "{answer}").is_err() {
            break;
        }
        // Flush once nothing more is waiting, so pipelined requests share writes.
        if input.buffer().is_empty() && out.flush().is_err() {
            break;
        }
    }
}

/// `calltape bridge -- <this binary as the echo server>`, composed the same way.
fn bridge() {
    let exe = std::env::current_exe().expect("own path");
    let upstream = ChildUpstream::new([exe]).expect("argv").env(ROLE, "echo");
    let bridge = Bridge::builder()
        .upstream(upstream)
        .build()
        .expect("bridge");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime
        .block_on(async { bridge.run(stdio::stdin(), stdio::stdout()).await })
        .expect("bridge run");
    runtime.shutdown_timeout(Duration::from_millis(100));
}

struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Peer {
    fn direct() -> Self {
        let mut command = Command::new(std::env::current_exe().expect("own path"));
        command.env(ROLE, "echo");
        Self::start(command)
    }

    fn bridged() -> Self {
        let exe = std::env::current_exe().expect("own path");
        let command = match std::env::var_os("CALLTAPE_BIN") {
            Some(calltape) => {
                let mut command = Command::new(calltape);
                // calltape ignores the role; the echo server it starts inherits it.
                command.arg("bridge").arg("--").arg(exe).env(ROLE, "echo");
                command
            }
            None => {
                let mut command = Command::new(exe);
                command.env(ROLE, "bridge");
                command
            }
        };
        Self::start(command)
    }

    fn start(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the peer");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut peer = Self {
            child,
            stdin: Some(stdin),
            stdout,
            line: String::new(),
        };
        peer.send(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#);
        peer.recv();
        peer.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        peer
    }

    fn input(&mut self) -> &mut ChildStdin {
        self.stdin.as_mut().expect("stdin open")
    }

    fn send(&mut self, line: &[u8]) {
        let input = self.input();
        input.write_all(line).expect("write");
        input.write_all(b"\n").expect("write");
    }

    fn recv(&mut self) -> usize {
        self.line.clear();
        let n = self.stdout.read_line(&mut self.line).expect("read");
        assert!(n > 0, "the peer closed its stdout");
        n
    }

    fn call(&mut self) -> usize {
        self.send(CALL);
        self.recv()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // Closing stdin ends both the echo server and the bridge.
        self.stdin = None;
        let _ = self.child.wait();
    }
}

const CALL: &[u8] =
    br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;

fn round_trip(c: &mut Criterion) {
    let mut group = c.benchmark_group("bridge/tools_call_round_trip");
    group.throughput(Throughput::Elements(1));
    let mut direct = Peer::direct();
    group.bench_function("direct", |b| b.iter(|| black_box(direct.call())));
    drop(direct);
    let mut bridged = Peer::bridged();
    group.bench_function("through_bridge", |b| b.iter(|| black_box(bridged.call())));
    drop(bridged);
    group.finish();
}

fn pipelined(c: &mut Criterion) {
    let mut group = c.benchmark_group("bridge/pipelined");
    group.throughput(Throughput::Elements(PIPELINED));
    group.sample_size(20);
    for (name, mut peer) in [
        ("direct", Peer::direct()),
        ("through_bridge", Peer::bridged()),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let Peer {
                    stdin,
                    stdout,
                    line,
                    ..
                } = &mut peer;
                let stdin = stdin.as_mut().expect("stdin open");
                std::thread::scope(|scope| {
                    scope.spawn(|| {
                        let mut writer = BufWriter::new(&mut *stdin);
                        for _ in 0..PIPELINED {
                            writer.write_all(CALL).expect("write");
                            writer.write_all(b"\n").expect("write");
                        }
                        writer.flush().expect("flush");
                    });
                    let mut bytes = 0;
                    for _ in 0..PIPELINED {
                        line.clear();
                        bytes += stdout.read_line(line).expect("read");
                    }
                    black_box(bytes)
                })
            });
        });
    }
    group.finish();
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}

/// The bridge's resident memory after a short session, idle; the echo server's beside it.
fn idle_rss() {
    let direct = Peer::direct();
    let mut bridged = Peer::bridged();
    for _ in 0..100 {
        bridged.call();
    }
    std::thread::sleep(Duration::from_secs(1));
    let bridge_kib = rss_kib(bridged.pid());
    let echo_kib = rss_kib(direct.pid());
    eprintln!(
        "bridge/idle_rss: bridge {:.1} MB, echo server alone {:.1} MB (claim: bridge <= 15 MB)",
        bridge_kib as f64 / 1024.0,
        echo_kib as f64 / 1024.0
    );
}

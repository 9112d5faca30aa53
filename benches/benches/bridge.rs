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
use std::process::Command;
use std::time::Duration;

use calltape_benches::stdio_peer::{Peer, ROLE, echo_server};
use calltape_stdio_bridge::{Bridge, ChildUpstream, stdio};
use criterion::{Criterion, Throughput};

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

fn direct() -> Peer {
    Peer::start(Peer::own_binary("echo"))
}

fn bridged() -> Peer {
    let command = match std::env::var_os("CALLTAPE_BIN") {
        Some(calltape) => {
            let exe = std::env::current_exe().expect("own path");
            let mut command = Command::new(calltape);
            // calltape ignores the role; the echo server it starts inherits it.
            command.arg("bridge").arg("--").arg(exe).env(ROLE, "echo");
            command
        }
        None => Peer::own_binary("bridge"),
    };
    Peer::start(command)
}

fn call(peer: &mut Peer) -> usize {
    peer.send(CALL);
    peer.recv()
}

const CALL: &[u8] =
    br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;

fn round_trip(c: &mut Criterion) {
    let mut group = c.benchmark_group("bridge/tools_call_round_trip");
    group.throughput(Throughput::Elements(1));
    let mut direct = direct();
    group.bench_function("direct", |b| b.iter(|| black_box(call(&mut direct))));
    drop(direct);
    let mut bridged = bridged();
    group.bench_function("through_bridge", |b| {
        b.iter(|| black_box(call(&mut bridged)))
    });
    drop(bridged);
    group.finish();
}

fn pipelined(c: &mut Criterion) {
    let mut group = c.benchmark_group("bridge/pipelined");
    group.throughput(Throughput::Elements(PIPELINED));
    group.sample_size(20);
    let requests: Vec<u8> = (0..PIPELINED)
        .flat_map(|_| CALL.iter().copied().chain([b'\n']))
        .collect();
    for (name, mut peer) in [("direct", direct()), ("through_bridge", bridged())] {
        group.bench_function(name, |b| {
            b.iter(|| black_box(peer.pipeline(&requests, PIPELINED as usize)))
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
    let direct = direct();
    let mut bridged = bridged();
    for _ in 0..100 {
        call(&mut bridged);
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

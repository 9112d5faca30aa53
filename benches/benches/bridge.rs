//! calltape-stdio-bridge: what the bridge adds to a `tools/call` round trip, pipelined throughput, the
//! bridge's CPU per call and idle memory, each beside the same Rust echo server spoken to directly in
//! the same run; and the routing peek the bridge runs on every frame, beside the `serde_json` peek it
//! replaced.
//!
//! Claims: added latency (median) at most 50 µs; pipelined throughput at least 50,000 messages/s; idle
//! RSS of the bridge at most 15 MB. Target: with the scanner's peek, a call costs the bridge 30 % less
//! CPU than with the `serde_json` peek (the bridge's README says what it reaches).
//!
//! This binary plays three roles, chosen by `CALLTAPE_BENCH_ROLE`: the bench itself (unset), the echo
//! server (`echo`), and the bridge (`bridge`: `Bridge` over stdio in front of the echo server, composed
//! exactly as `calltape bridge -- CMD` composes it). Set `CALLTAPE_BIN` to a built `calltape` binary to
//! measure `calltape bridge` itself instead.

use std::hint::black_box;
use std::process::Command;
use std::time::Duration;

use calltape_benches::paired::{paired_rounds, timed};
use calltape_benches::stdio_peer::{Peer, ROLE, echo_server};
use calltape_stdio_bridge::{Bridge, ChildUpstream, jsonrpc, stdio};
use criterion::{Criterion, Throughput};
use serde_json::json;

/// Messages per pipelined iteration.
const PIPELINED: u64 = 10_000;

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("echo") => return echo_server(),
        Ok("bridge") => return bridge(),
        _ => {}
    }
    let mut criterion = Criterion::default().configure_from_args();
    let peek_per_call = peek(&mut criterion);
    round_trip(&mut criterion);
    pipelined(&mut criterion);
    criterion.final_summary();
    cpu_per_call(peek_per_call);
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

/// The bridge's CPU time (user and system, all threads) so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    // The fields after the command name (which may hold blanks), from the third on.
    let fields: Vec<&str> = stat[stat.rfind(')').expect("comm") + 2..]
        .split(' ')
        .collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_secs_f64(ticks as f64 / clock_ticks_per_second())
}

fn clock_ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|ticks| ticks.trim().parse().ok())
        .unwrap_or(100.0)
}

/// The bridge's CPU per call in pipelined calls, and what it was with the `serde_json` peek: the same
/// bridge, plus what the `serde_json` peeks of a call cost more than the scanner's, measured above in
/// this run.
fn cpu_per_call(peek: Option<PeekPerCall>) {
    const ROUNDS: usize = 20;
    let requests: Vec<u8> = (0..PIPELINED)
        .flat_map(|_| CALL.iter().copied().chain([b'\n']))
        .collect();
    let mut bridged = bridged();
    // Warm up, then measure.
    bridged.pipeline(&requests, PIPELINED as usize);
    let before = cpu_time(bridged.pid());
    for _ in 0..ROUNDS {
        bridged.pipeline(&requests, PIPELINED as usize);
    }
    let per_call =
        (cpu_time(bridged.pid()) - before).as_secs_f64() / (ROUNDS as f64 * PIPELINED as f64);
    eprintln!(
        "bridge/cpu_per_call: {:.2} µs of the bridge's CPU per pipelined tools/call ({} calls)",
        per_call * 1e6,
        ROUNDS as u64 * PIPELINED
    );
    if let Some(peek) = peek {
        let before = per_call + peek.serde - peek.scanner;
        eprintln!(
            "bridge/cpu_per_call: with the serde_json peek {:.2} µs (+{:.2} µs for the peeks of a call); \
             the scanner saves {:.0} % (target: 30 %)",
            before * 1e6,
            (peek.serde - peek.scanner) * 1e6,
            (1.0 - per_call / before) * 100.0
        );
    }
}

/// What the peeks of one call (its request once, its answer twice) cost, in seconds, each way.
#[derive(Clone, Copy)]
struct PeekPerCall {
    serde: f64,
    scanner: f64,
}

/// Realistic frames: a `tools/call` request, its short answer, a large tool result, a progress
/// notification and a batch.
fn frames() -> Vec<(&'static str, Vec<u8>)> {
    let request = json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {
        "name": "search_issues",
        "arguments": {"query": "label:bug state:open", "limit": 20, "fields": ["title", "url", "labels"]},
        "_meta": {"progressToken": "p-42"}}});
    let answer = json!({"jsonrpc": "2.0", "id": 42, "result": {
        "content": [{"type": "text", "text": "hello"}]}});
    let issues: Vec<_> = (0..200)
        .map(|n| {
            json!({"number": n, "title": format!("Crash when the \"config\" path holds ü #{n}"),
            "url": format!("https://example.com/issues/{n}"), "labels": ["bug", "p2"],
            "body": "Steps:\n1. open the file\n2. save it\nExpected: no crash. ".repeat(3)})
        })
        .collect();
    let large = json!({"jsonrpc": "2.0", "id": 43, "result": {
        "content": [{"type": "text", "text": serde_json::to_string(&issues).expect("json")}],
        "structuredContent": {"issues": issues}}});
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
        "progressToken": "p-42", "progress": 50, "total": 100, "message": "indexing"}});
    let batch = json!([request, notification,
        {"jsonrpc": "2.0", "id": 44, "method": "resources/read", "params": {"uri": "file:///repo/README.md"}}]);
    [
        ("tools_call_request", request),
        ("tools_call_answer", answer),
        ("large_result", large),
        ("notification", notification),
        ("batch", batch),
    ]
    .into_iter()
    .map(|(name, frame)| (name, serde_json::to_vec(&frame).expect("json")))
    .collect()
}

/// The routing peek on each frame, the scanner's beside the `serde_json` baseline's; then both on a
/// call's two frames in paired rounds, for the CPU figure.
fn peek(c: &mut Criterion) -> Option<PeekPerCall> {
    let frames = frames();
    let mut group = c.benchmark_group("bridge/peek");
    for (name, frame) in &frames {
        group.throughput(Throughput::Bytes(frame.len() as u64));
        group.bench_function(format!("{name}/serde_baseline"), |b| {
            b.iter(|| black_box(serde_baseline::peek(black_box(frame))))
        });
        group.bench_function(format!("{name}/scanner"), |b| {
            b.iter(|| black_box(jsonrpc::peek(black_box(frame))))
        });
    }
    group.finish();
    if !calltape_benches::paired::selected("bridge/peek") {
        return None;
    }
    const PEEKS: u32 = 20_000;
    // A call through a child-process bridge: the session peeks at the request; the answer is peeked
    // at by the child's line reader (which checks that the line is a message) and by the session.
    let (request, answer) = (frames[0].1.as_slice(), frames[1].1.as_slice());
    let call = [request, answer, answer];
    type PeekFn = fn(&[u8]) -> bool;
    let mut setups: [(&str, PeekFn); 2] = [
        ("serde_baseline", |f| serde_baseline::peek(f).is_ok()),
        ("scanner", |f| jsonrpc::peek(f).is_ok()),
    ];
    let rounds = paired_rounds(&mut setups, 40, |peek| {
        timed(|| {
            for _ in 0..PEEKS {
                for frame in &call {
                    black_box(peek(black_box(frame)));
                }
            }
        })
    });
    eprintln!("{}", rounds.report("bridge/peek/call"));
    let per_call = |i| rounds.median(i).as_secs_f64() / f64::from(PEEKS);
    Some(PeekPerCall {
        serde: per_call(0),
        scanner: per_call(1),
    })
}

/// The routing peek the bridge ran before the scanner, kept here as the baseline: `serde_json` with a
/// derived struct of raw values per message.
mod serde_baseline {
    use serde::Deserialize;
    use serde_json::value::RawValue;

    pub(crate) struct Info {
        pub(crate) _id: Option<Box<str>>,
        pub(crate) _method: Option<Box<str>>,
        pub(crate) _malformed: bool,
    }

    #[expect(
        dead_code,
        reason = "built as routing built it; the bench only keeps it"
    )]
    pub(crate) enum Peek {
        One(Info),
        Batch(Vec<Info>),
    }

    #[derive(Deserialize)]
    struct RawFields<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        method: Option<&'a RawValue>,
    }

    fn info_of(fields: RawFields<'_>) -> Info {
        let raw_id = fields.id.map(RawValue::get).filter(|id| *id != "null");
        let malformed = raw_id.is_some_and(|id| {
            !id.starts_with(|c: char| c == '"' || c == '-' || c.is_ascii_digit())
        });
        Info {
            _id: raw_id.filter(|_| !malformed).map(Box::from),
            _method: fields
                .method
                .and_then(|m| serde_json::from_str::<String>(m.get()).ok())
                .map(String::into_boxed_str),
            _malformed: malformed,
        }
    }

    fn malformed() -> Info {
        Info {
            _id: None,
            _method: None,
            _malformed: true,
        }
    }

    pub(crate) fn peek(frame: &[u8]) -> Result<Peek, ()> {
        match frame.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => serde_json::from_slice::<RawFields<'_>>(frame)
                .map(|fields| Peek::One(info_of(fields)))
                .map_err(drop),
            Some(b'[') => {
                let items: Vec<&RawValue> = serde_json::from_slice(frame).map_err(drop)?;
                Ok(Peek::Batch(
                    items
                        .into_iter()
                        .map(|item| {
                            if item.get().starts_with('{') {
                                serde_json::from_str::<RawFields<'_>>(item.get())
                                    .map_or_else(|_| malformed(), info_of)
                            } else {
                                malformed()
                            }
                        })
                        .collect(),
                ))
            }
            _ => {
                serde_json::from_slice::<serde::de::IgnoredAny>(frame).map_err(drop)?;
                Err(())
            }
        }
    }
}

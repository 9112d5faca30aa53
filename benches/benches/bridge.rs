//! calltape-stdio-bridge: what the bridge adds to a `tools/call` round trip, pipelined throughput, the
//! bridge's CPU and instructions per call and idle memory, each beside the same Rust echo server spoken
//! to directly in the same run; the bridge's CPU and instructions per call beside a baseline build of
//! calltape in the same run; and the routing peek the bridge runs on every frame, beside the
//! `serde_json` peek it replaced.
//!
//! Claims: added latency (median) at most 50 µs; pipelined throughput at least 50,000 messages/s; idle
//! RSS of the bridge at most 15 MB. Target: a call costs the bridge 30 % less CPU than it did at
//! commit abb27ad, before the routing peek used the scanner (the bridge's README says what it
//! reaches).
//!
//! This binary plays three roles, chosen by `CALLTAPE_BENCH_ROLE`: the bench itself (unset), the echo
//! server (`echo`), and the bridge (`bridge`: `Bridge` over stdio in front of the echo server, composed
//! exactly as `calltape bridge -- CMD` composes it). Set `CALLTAPE_BIN` to a built `calltape` binary to
//! measure `calltape bridge` itself instead, and `CALLTAPE_BASELINE_BIN` to the `calltape` binary of
//! an earlier commit (`benches/scripts/baseline-bin.sh` builds abb27ad's) to measure it beside.

use std::ffi::OsString;
use std::hint::black_box;
use std::process::Command;
use std::time::Duration;

use calltape_benches::instructions::{Callgrind, Counter, perf_around};
use calltape_benches::paired::{paired_rounds, timed};
use calltape_benches::stdio_peer::{Peer, ROLE, echo_server};
use calltape_stdio_bridge::{Bridge, ChildUpstream, jsonrpc, stdio};
use criterion::{Criterion, Throughput};
use serde_json::json;

/// The environment variable that names the baseline `calltape` binary.
const BASELINE_BIN: &str = "CALLTAPE_BASELINE_BIN";

/// Messages per pipelined iteration.
const PIPELINED: u64 = 10_000;

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("echo") => return echo_server(),
        Ok("bridge") => return bridge(),
        _ => {}
    }
    let mut criterion = Criterion::default().configure_from_args();
    peek(&mut criterion);
    round_trip(&mut criterion);
    pipelined(&mut criterion);
    criterion.final_summary();
    if calltape_benches::paired::selected("bridge/cpu_per_call") {
        compare();
    }
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
    Peer::start(current_bin().command())
}

/// A bridge binary to measure: how to start it in front of the echo server.
struct BridgeBin {
    name: String,
    program: OsString,
    args: Vec<OsString>,
    /// The role in its environment: `bridge` for this binary, `echo` (inherited by the echo server
    /// it starts) for a `calltape` binary.
    role: &'static str,
}

impl BridgeBin {
    /// `calltape bridge -- <this binary as the echo server>`.
    fn calltape(name: String, calltape: OsString) -> Self {
        let exe = std::env::current_exe().expect("own path");
        Self {
            name,
            program: calltape,
            args: vec!["bridge".into(), "--".into(), exe.into()],
            role: "echo",
        }
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).env(ROLE, self.role);
        command
    }
}

/// `CALLTAPE_BIN`'s `calltape bridge`, or this binary in the bridge role.
fn current_bin() -> BridgeBin {
    match std::env::var_os("CALLTAPE_BIN") {
        Some(calltape) => BridgeBin::calltape("current (CALLTAPE_BIN)".to_owned(), calltape),
        None => BridgeBin {
            name: "current".to_owned(),
            program: std::env::current_exe().expect("own path").into(),
            args: Vec::new(),
            role: "bridge",
        },
    }
}

/// The current bridge, then the baseline when `CALLTAPE_BASELINE_BIN` names one.
fn bridge_bins() -> Vec<BridgeBin> {
    let mut bins = vec![current_bin()];
    if let Some(baseline) = std::env::var_os(BASELINE_BIN) {
        eprintln!(
            "bridge/cpu_per_call: baseline: {}",
            std::path::Path::new(&baseline).display()
        );
        bins.push(BridgeBin::calltape("baseline".to_owned(), baseline));
    }
    bins
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

/// `count` pipelined `tools/call` lines.
fn requests(count: usize) -> Vec<u8> {
    (0..count)
        .flat_map(|_| CALL.iter().copied().chain([b'\n']))
        .collect()
}

/// The bridge's CPU per pipelined call, from `/proc`, for each bridge binary: the rounds alternate
/// between the binaries, so that each sees the same moments of a shared machine. `/proc` counts in
/// clock ticks, so the figure is the sum over all rounds.
fn cpu_per_call(bins: &[BridgeBin]) -> Vec<f64> {
    const ROUNDS: usize = 20;
    let requests = requests(PIPELINED as usize);
    let mut peers: Vec<Peer> = bins.iter().map(|bin| Peer::start(bin.command())).collect();
    for peer in &mut peers {
        peer.pipeline(&requests, PIPELINED as usize);
    }
    let mut cpu = vec![Duration::ZERO; peers.len()];
    for round in 0..ROUNDS {
        for n in 0..peers.len() {
            let i = if round % 2 == 0 {
                n
            } else {
                peers.len() - 1 - n
            };
            let before = cpu_time(peers[i].pid());
            peers[i].pipeline(&requests, PIPELINED as usize);
            cpu[i] += cpu_time(peers[i].pid()) - before;
        }
    }
    let calls = ROUNDS as f64 * PIPELINED as f64;
    let per_call: Vec<f64> = cpu.iter().map(|t| t.as_secs_f64() / calls).collect();
    for (bin, per_call) in bins.iter().zip(&per_call) {
        eprintln!(
            "bridge/cpu_per_call: {}: {:.2} µs of the bridge's CPU per pipelined tools/call ({} calls)",
            bin.name,
            per_call * 1e6,
            calls
        );
    }
    per_call
}

/// The instructions the bridge runs per pipelined call, for each bridge binary; `None` when this
/// machine can count none (said on stderr).
fn instructions_per_call(bins: &[BridgeBin]) -> Option<Vec<f64>> {
    let counter = match Counter::detect() {
        Ok(counter) => counter,
        Err(why) => {
            eprintln!("bridge/instructions_per_call: not measured: {why}");
            return None;
        }
    };
    let mut per_call = Vec::new();
    for bin in bins {
        let count = match counter {
            Counter::Perf => perf_per_call(bin),
            Counter::Callgrind => callgrind_per_call(bin),
        };
        let Some(count) = count else {
            eprintln!(
                "bridge/instructions_per_call: {}: {counter:?} counted nothing",
                bin.name
            );
            return None;
        };
        eprintln!(
            "bridge/instructions_per_call: {}: {count:.0} instructions per pipelined tools/call ({counter:?})",
            bin.name
        );
        per_call.push(count);
    }
    Some(per_call)
}

fn perf_per_call(bin: &BridgeBin) -> Option<f64> {
    const ROUNDS: usize = 5;
    let requests = requests(PIPELINED as usize);
    let mut peer = Peer::start(bin.command());
    peer.pipeline(&requests, PIPELINED as usize);
    let pid = peer.pid();
    let count = perf_around(pid, || {
        for _ in 0..ROUNDS {
            peer.pipeline(&requests, PIPELINED as usize);
        }
    })?;
    Some(count as f64 / (ROUNDS as f64 * PIPELINED as f64))
}

/// Under callgrind, a session of few calls and one of more: the difference per call, so that the
/// start, the handshake and the end cancel out.
fn callgrind_per_call(bin: &BridgeBin) -> Option<f64> {
    const CHUNK: usize = 500;
    const FEW: usize = 2;
    const MORE: usize = 8;
    let requests = requests(CHUNK);
    let total = |chunks: usize| {
        let (mut command, callgrind) = Callgrind::command(&bin.program, &bin.args);
        command.env(ROLE, bin.role);
        let mut peer = Peer::start(command);
        for _ in 0..chunks {
            peer.pipeline(&requests, CHUNK);
        }
        drop(peer);
        callgrind.total()
    };
    let (few, more) = (total(FEW)?, total(MORE)?);
    Some(more.saturating_sub(few) as f64 / ((MORE - FEW) * CHUNK) as f64)
}

/// The bridge's CPU and instructions per call, the baseline binary's beside the current one's when
/// `CALLTAPE_BASELINE_BIN` names one, in the same run.
fn compare() {
    let bins = bridge_bins();
    if bins.len() == 1 {
        eprintln!(
            "bridge/cpu_per_call: {BASELINE_BIN} is not set: the current bridge alone, with no \
             baseline (benches/README.md says how to build one)"
        );
    }
    let cpu = cpu_per_call(&bins);
    let instructions = instructions_per_call(&bins);
    if let [current, baseline] = bins.as_slice() {
        let less = |now: f64, before: f64| (1.0 - now / before) * 100.0;
        eprintln!(
            "bridge/cpu_per_call: {} against {}: {:.0} % less CPU per call (target: 30 %)",
            current.name,
            baseline.name,
            less(cpu[0], cpu[1])
        );
        if let Some(instructions) = instructions {
            eprintln!(
                "bridge/instructions_per_call: {} against {}: {:.0} % fewer instructions per call",
                current.name,
                baseline.name,
                less(instructions[0], instructions[1])
            );
        }
    }
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
/// call's two frames in paired rounds.
fn peek(c: &mut Criterion) {
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
        return;
    }
    const PEEKS: u32 = 20_000;
    // A call through a child-process bridge at abb27ad: the session peeked at the request; the answer
    // was peeked at by the child's line reader (which checked that the line is a message) and by the
    // session.
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

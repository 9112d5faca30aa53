//! The `calltape mock` process end to end: answers per second and latency of the release `calltape`
//! binary serving a recording on stdio, beside the real reference "everything" server process
//! answering the same calls in the same run, both driven by the same client over pipes.
//!
//! Each arm is initialized once; then `tools/call echo` round trips one at a time, and pipelined
//! batches of [`BATCH`] calls (the client writes the batch from one thread while it reads the answers
//! on another). The recording is made first with `calltape record` in front of the same server.
//!
//! The binary is `$CALLTAPE_BIN`, else the workspace's `target/release/calltape` (build it first with
//! `cargo build --release -p calltape`); the server is
//! `$CALLTAPE_PEERS/node/node_modules/.bin/mcp-server-everything` (as `.ci/install-peers` installs
//! it). Without either the bench says which is missing and measures nothing.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

use calltape_benches::stdio_peer::{Peer, reference_server};
use criterion::{Criterion, Throughput};

/// The call measured.
const ECHO: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}"#;

/// Pipelined calls per batch.
const BATCH: usize = 100;

fn main() {
    let (Some(calltape), Some(server)) = (calltape(), reference_server("mock_binary")) else {
        return;
    };
    eprintln!("mock_binary: {}", calltape.display());
    let dir = tempfile::tempdir().expect("temporary folder");
    let recording = dir.path().join("calls.jsonl");
    record(&calltape, &server, &recording);

    let everything = || Peer::start(Command::new(&server));
    let mock = || {
        let mut command = Command::new(&calltape);
        command.arg("mock").arg(&recording);
        Peer::start(command)
    };
    let arms: [(&str, &dyn Fn() -> Peer); 2] = [("everything", &everything), ("mock", &mock)];

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("mock_binary/round_trip");
    group.throughput(Throughput::Elements(1));
    for (name, start) in arms {
        let mut peer = start();
        group.bench_function(name, |b| {
            b.iter(|| {
                peer.send(ECHO.as_bytes());
                black_box(peer.recv())
            })
        });
    }
    group.finish();

    // Each call of a batch has its own id, as a client's concurrent calls do.
    let mut requests = Vec::new();
    for id in 0..BATCH {
        requests.extend_from_slice(
            ECHO.replace(r#""id":1"#, &format!(r#""id":{}"#, 100 + id))
                .as_bytes(),
        );
        requests.push(b'\n');
    }
    let mut group = criterion.benchmark_group("mock_binary/pipelined");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, start) in arms {
        let mut peer = start();
        group.bench_function(name, |b| {
            b.iter(|| black_box(peer.pipeline(&requests, BATCH)))
        });
    }
    group.finish();
    criterion.final_summary();
}

/// `$CALLTAPE_BIN`, else the workspace's release build, when it exists.
fn calltape() -> Option<PathBuf> {
    let bin = match std::env::var_os("CALLTAPE_BIN") {
        Some(bin) => PathBuf::from(bin),
        None => std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
            .join("release/calltape"),
    };
    if !bin.exists() {
        eprintln!(
            "mock_binary: no calltape binary at {}; build it with cargo build --release -p calltape, or name one in CALLTAPE_BIN",
            bin.display()
        );
        return None;
    }
    Some(bin)
}

/// Records the echo call, through `calltape record -o RECORDING -- SERVER`.
fn record(calltape: &Path, server: &Path, recording: &Path) {
    let mut command = Command::new(calltape);
    command
        .args(["record", "-o"])
        .arg(recording)
        .arg("--")
        .arg(server);
    let mut peer = Peer::start(command);
    peer.send(ECHO.as_bytes());
    peer.recv();
    drop(peer);
    let text = std::fs::read_to_string(recording).expect("the recording");
    assert!(text.contains(r#""name":"echo""#), "{text}");
}

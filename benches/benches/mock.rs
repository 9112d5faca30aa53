//! calltape-replay's `mock`: answers per second and latency of a recording served as an MCP server on
//! stdio (`Mock` behind the bridge, as `calltape mock` composes them), beside the real reference
//! "everything" server answering the same calls in the same run.
//!
//! The server is `$CALLTAPE_PEERS/node/node_modules/.bin/mcp-server-everything` (as
//! `.ci/install-peers` installs it); without it the bench says so and measures nothing. The recording
//! is made first, through `Mock` in record mode in front of that server.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use calltape_benches::stdio_peer::{Peer, ROLE, reference_server};
use calltape_recorder::mcp::RecorderOptions;
use calltape_replay::{Mode, mock::Mock};
use calltape_stdio_bridge::{Bridge, ChildUpstream, EraUpstream, Protocol, Upstream, stdio};
use criterion::{Criterion, Throughput};

/// The recording the roles read or write.
const RECORDING: &str = "CALLTAPE_BENCH_RECORDING";

/// The calls measured, one of each tool the recording holds.
const CALLS: [&str; 2] = [
    r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":2,"b":40}}}"#,
    r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}"#,
];

/// How a measured server is started, from the everything server and the recording.
type Start = fn(&Path, &Path) -> Peer;

/// Pipelined calls per batch.
const BATCH: usize = 200;

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("mock") => return serve(Mode::Replay),
        Ok("record") => return serve(Mode::Record),
        _ => {}
    }
    let Some(server) = reference_server("mock") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temporary folder");
    let recording = dir.path().join("calls.jsonl");
    record(&server, &recording);
    let mut criterion = Criterion::default().configure_from_args();
    let peers: [(&str, Start); 2] = [
        ("everything", |server, _| Peer::start(Command::new(server))),
        ("mock", mocked),
    ];
    let mut group = criterion.benchmark_group("mock/round_trip");
    for (name, start) in peers {
        let mut peer = start(&server, &recording);
        group.bench_function(name, |b| {
            b.iter(|| {
                peer.send(CALLS[0].as_bytes());
                peer.recv()
            })
        });
    }
    group.finish();
    let mut requests = Vec::new();
    for at in 0..BATCH {
        requests.extend_from_slice(CALLS[at % CALLS.len()].as_bytes());
        requests.push(b'\n');
    }
    let mut group = criterion.benchmark_group("mock/pipelined");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, start) in peers {
        let mut peer = start(&server, &recording);
        group.bench_function(name, |b| b.iter(|| peer.pipeline(&requests, BATCH)));
    }
    group.finish();
    criterion.final_summary();
}

/// This binary as the mock of `recording`.
fn mocked(_: &Path, recording: &Path) -> Peer {
    let mut command = Peer::own_binary("mock");
    command.env(RECORDING, recording);
    Peer::start(command)
}

/// Records one answer to each of [`CALLS`] from `server` into `recording`.
fn record(server: &Path, recording: &Path) {
    let mut command = Peer::own_binary("record");
    command.env(RECORDING, recording).env("EVERYTHING", server);
    let mut peer = Peer::start(command);
    for call in CALLS {
        peer.send(call.as_bytes());
        peer.recv();
    }
    drop(peer);
    let text = std::fs::read_to_string(recording).expect("the recording");
    assert_eq!(text.lines().count(), CALLS.len(), "{text}");
}

/// `calltape mock --mode MODE RECORDING [-- EVERYTHING]` on this process's stdio, composed the same
/// way.
fn serve(mode: Mode) {
    let recording = std::env::var_os(RECORDING).expect("the recording");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = std::env::var_os("EVERYTHING")
        .map(|server| Arc::new(ChildUpstream::new([server]).expect("argv")) as Arc<dyn Upstream>);
    let mock = runtime
        .block_on(Mock::open(
            &recording,
            mode,
            server,
            RecorderOptions::default(),
        ))
        .expect("the mock");
    let bridge = Bridge::builder()
        .upstream(EraUpstream::new(mock.clone(), Protocol::Legacy))
        .build()
        .expect("bridge");
    runtime
        .block_on(async { bridge.run(stdio::stdin(), stdio::stdout()).await })
        .expect("bridge run");
    runtime.block_on(mock.close());
    runtime.shutdown_timeout(Duration::from_millis(100));
}

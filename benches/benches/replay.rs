//! MCP call recording and replay.
//!
//! Claims: redacting 10,000 replayed answers, comparing them with the recorded ones and producing the
//! text and JSON reports takes under 100 ms, the work `calltape replay` does once every call is
//! answered (baseline in the same run: plain `serde_json::Value` equality over the same pairs, the
//! floor any comparison pays); the HTML report of those 10,000 calls is under 5 MB and renders in
//! a small multiple of the JSON report's time (baseline in the same run: the JSON report of the same
//! calls), and it is written to `target/tmp/replay-10k.html` for opening in a browser by hand; a
//! replay of 10,000 calls that every one changed gives an HTML report under 5 MB that headless
//! Chromium opens and paints in under 2 s, whether they changed the same way (the calls shown once,
//! as a group) or each its own way at the same path (shown once too, with a line of values per call)
//! (baseline in the same run: the JSON report of the same calls for the rendering, and Chromium
//! painting a blank page, round after round, for the opening); recording costs the bridge at most
//! 10% of its pipelined throughput in front of a real MCP server, the reference server
//! `mcp-server-everything` (baseline in the same run: the same bridge without a recorder), when
//! `CALLTAPE_PEERS` says where it is installed.
//!
//! Two more groups show where that claim ends. The same calls to an echo server that does no work:
//! there the recorder's own work (reading, redacting and writing every call, on a thread of its own)
//! weighs most, and on a small machine it competes for the cores with the bridge and the server.
//! And calls made one at a time, each waiting for its answer, as most MCP clients make them, to the
//! echo server and to the reference server: there the figure is the delay recording adds to a call.
//!
//! After criterion's runs, every group also times paired rounds (`calltape_benches::paired`): its
//! setups one after the other, round after round, reporting the median of the per-round costs, which
//! a machine whose speed drifts cannot bias the way it can bias two criterion runs a minute apart.
//!
//! Like the bridge bench, this binary plays several roles chosen by `CALLTAPE_BENCH_ROLE`: the bench
//! (unset), the echo server (`echo`), the bridge (`bridge`), the bridge with a tap that drops every
//! frame (`tap`: what the observer hook alone costs), and the bridge with a recorder on its tap
//! (`record`, writing to `CALLTAPE_BENCH_RECORD`), composed as `calltape record` composes them.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use calltape_benches::paired::{paired_rounds, selected, timed};
use calltape_benches::stdio_peer::{Peer, ROLE, echo_server, reference_server};
use calltape_recorder::mcp::{CallError, ErrorCode, Outcome, Recorder, RecorderOptions, Recording};
use calltape_redact::Redactor;
use calltape_replay::ReportContext;
use calltape_replay::mcp::{Comparer, Format, ReplayOptions, compare_outcomes};
use calltape_stdio_bridge::{Bridge, ChildUpstream, Direction, TapEvent, stdio};
use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, Throughput};
use serde_json::{Value, json};

const RECORD_TO: &str = "CALLTAPE_BENCH_RECORD";
/// The MCP server the bridge roles start instead of this binary's echo server.
const UPSTREAM: &str = "CALLTAPE_BENCH_UPSTREAM";
/// Calls compared per iteration, and messages per pipelined iteration.
const CALLS: usize = 10_000;

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("echo") => return echo_server(),
        Ok("bridge") => return bridge(Observer::None),
        Ok("tap") => return bridge(Observer::EmptyTap),
        Ok("record") => return bridge(Observer::Recorder),
        _ => {}
    }
    let mut criterion = Criterion::default().configure_from_args();
    compare_and_report(&mut criterion);
    html_report(&mut criterion);
    every_call_changed(&mut criterion);
    recording_throughput(&mut criterion);
    recording_latency(&mut criterion);
    recorder_alone(&mut criterion);
    criterion.final_summary();
}

// ---------------------------------------------------------------------------------------------------
// Comparison and report.

fn answer(i: usize, price: i64, key: &str) -> Value {
    let structured = json!({
        "symbol": format!("SYM{i}"), "price": price, "currency": "USD",
        "quotedAt": "2026-11-29T20:46:45.123Z", "quoteId": format!("q-{i:08x}"),
        "book": {"bids": [[price - 1, 100], [price - 2, 250]], "asks": [[price + 1, 80]]},
    });
    let mut answer = json!({"content": [{"type": "text", "text": structured.to_string()}], "structuredContent": structured});
    if i % 100 == 11 {
        answer["structuredContent"]["apiKey"] = json!(key);
    }
    answer
}

/// Appends the recorded line of call `i`: a quote of `SYM{i}` at price 12, in one of 100 sessions.
fn recorded_line(text: &mut String, i: usize) {
    let line = json!({"v": 1, "at": "2026-11-29T20:46:45.123Z", "session": format!("{:08x}", i % 100),
        "client": {"name": "bench", "version": "1"}, "method": "tools/call", "name": "quote",
        "input": {"symbol": format!("SYM{i}")}, "answer": answer(i, 12, "[REDACTED]"), "durationMs": 1.25});
    text.push_str(&line.to_string());
    text.push('\n');
}

/// A recording of 10,000 calls in 100 sessions, and the outcomes a server gave on replay, before
/// redaction: 1 in 10 calls changed price, 1 in 50 errors now, and 1 in 100 answers with a live API
/// key where the recording holds `"[REDACTED]"` (same once redacted).
fn fixture() -> (Recording, Vec<Outcome>) {
    let mut text = String::new();
    let mut replayed = Vec::with_capacity(CALLS);
    for i in 0..CALLS {
        recorded_line(&mut text, i);
        replayed.push(if i % 50 == 7 {
            Outcome::Error(CallError::new(
                ErrorCode::Text("tool_error".into()),
                Some("quote service unavailable".into()),
            ))
        } else {
            let price = if i % 10 == 3 { 15 } else { 12 };
            Outcome::Answer(answer(i, price, "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e"))
        });
    }
    let recording = Recording::parse("bench.jsonl", text.as_bytes()).expect("valid fixture");
    (recording, replayed)
}

fn compare_and_report(c: &mut Criterion) {
    let (recording, replayed) = fixture();
    let comparer = Comparer::builder()
        .ignore(["**.quotedAt", "**.quoteId"])
        .build()
        .expect("globs");
    // What `calltape replay --ignore '**.quotedAt,**.quoteId'` compares with, once every call has been
    // answered: redaction of the replayed side, comparison, and the report.
    let options = ReplayOptions::default()
        .comparer(comparer)
        .redactor(Redactor::new());
    let mut group = c.benchmark_group("replay/compare_10k_calls");
    group.throughput(Throughput::Elements(CALLS as u64));
    group.sample_size(20);
    group.bench_function("baseline_value_eq", |b| {
        b.iter(|| {
            let equal = recording
                .calls
                .iter()
                .zip(&replayed)
                .filter(|(call, now)| call.record.outcome == **now)
                .count();
            black_box(equal)
        });
    });
    group.bench_function("redact_compare_and_text_json_report", |b| {
        b.iter_batched(
            || replayed.clone(),
            |outcomes| {
                let replayed = compare_outcomes(&recording, outcomes, &options);
                let text = replayed.report.render(Format::Text, false);
                let json = replayed.report.render(Format::Json, false);
                black_box((text.len(), json.len()));
                replayed
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
    let replayed = compare_outcomes(&recording, replayed, &options);
    eprintln!("replay/compare_10k_calls: {}", replayed.report.summary());
}

/// The HTML report of the 10,000 compared calls against the JSON report of the same calls, each
/// group's throughput in the bytes it writes.
fn html_report(c: &mut Criterion) {
    if !selected("replay/report_10k_calls") {
        return;
    }
    let (recording, replayed) = fixture();
    let comparer = Comparer::builder()
        .ignore(["**.quotedAt", "**.quoteId"])
        .build()
        .expect("globs");
    let options = ReplayOptions::default()
        .comparer(comparer)
        .redactor(Redactor::new());
    let report = compare_outcomes(&recording, replayed, &options).report;
    let context = ReportContext::new()
        .server("node server.js")
        .date("2026-12-01T18:00:00.000Z")
        .ignore(["**.quotedAt", "**.quoteId"]);
    let json = report.render(Format::Json, false);
    let html = report.to_html(&context);
    let mut group = c.benchmark_group("replay/report_10k_calls");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(json.len() as u64));
    group.bench_function("baseline_json", |b| {
        b.iter(|| black_box(report.render(Format::Json, false).len()));
    });
    group.throughput(Throughput::Bytes(html.len() as u64));
    group.bench_function("html", |b| {
        b.iter(|| black_box(report.to_html(&context).len()));
    });
    group.finish();
    let page = Path::new(env!("CARGO_TARGET_TMPDIR")).join("replay-10k.html");
    let written = std::fs::write(&page, &html).map_or_else(
        |e| format!("not written: {e}"),
        |()| page.display().to_string(),
    );
    eprintln!(
        "replay/report_10k_calls: {}; JSON {} bytes, HTML {} bytes (limit 5,000,000); the page: {written}",
        report.summary(),
        json.len(),
        html.len()
    );
    assert!(
        html.len() < 5_000_000,
        "the HTML report is {} bytes",
        html.len()
    );
}

/// A recording of 10,000 calls of `quote` and what a server answered on replay, every call changed:
/// each one's price from 12 to 15 (`alike`), or to a price of its own (and so its book's prices).
fn all_changed(alike: bool) -> (Recording, Vec<Outcome>) {
    let mut text = String::new();
    let mut replayed = Vec::with_capacity(CALLS);
    for i in 0..CALLS {
        recorded_line(&mut text, i);
        let price = if alike { 15 } else { 100 + i as i64 };
        replayed.push(Outcome::Answer(answer(
            i,
            price,
            "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e",
        )));
    }
    let recording = Recording::parse("bench.jsonl", text.as_bytes()).expect("valid fixture");
    (recording, replayed)
}

/// 10,000 calls that every one changed: the HTML report against the JSON report of the same calls,
/// then the page opened in headless Chromium against a blank page, when Chromium is installed.
fn every_call_changed(c: &mut Criterion) {
    const GROUP: &str = "replay/report_10k_all_changed";
    if !selected(GROUP) {
        return;
    }
    let options = ReplayOptions::default()
        .comparer(
            Comparer::builder()
                .ignore(["**.quotedAt", "**.quoteId"])
                .build()
                .expect("globs"),
        )
        .redactor(Redactor::new());
    let context = ReportContext::new().ignore(["**.quotedAt", "**.quoteId"]);
    let mut group = c.benchmark_group(GROUP);
    group.sample_size(10);
    let mut pages = Vec::new();
    for (name, alike) in [("alike", true), ("each_its_own", false)] {
        let (recording, replayed) = all_changed(alike);
        let report = compare_outcomes(&recording, replayed, &options).report;
        let json = report.render(Format::Json, false);
        let html = report.to_html(&context);
        group.throughput(Throughput::Bytes(json.len() as u64));
        group.bench_function(format!("{name}/baseline_json"), |b| {
            b.iter(|| black_box(report.render(Format::Json, false).len()));
        });
        group.throughput(Throughput::Bytes(html.len() as u64));
        group.bench_function(format!("{name}/html"), |b| {
            b.iter(|| black_box(report.to_html(&context).len()));
        });
        let page = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("replay-10k-{name}.html"));
        std::fs::write(&page, &html).expect("write the page");
        eprintln!(
            "{GROUP}/{name}: {}; JSON {} bytes, HTML {} bytes (limit 5,000,000); the page: {}",
            report.summary(),
            json.len(),
            html.len(),
            page.display()
        );
        assert!(
            html.len() < 5_000_000,
            "the HTML report of {name} is {} bytes",
            html.len()
        );
        pages.push((name, page));
    }
    group.finish();
    browser_opens(GROUP, &pages);
}

/// Times headless Chromium opening and painting each page (a screenshot of its first screen), paired
/// round after round with a blank page: what Chromium itself takes to start.
fn browser_opens(group: &str, pages: &[(&str, PathBuf)]) {
    const CHROMIUM: &str = "/usr/bin/chromium";
    if !Path::new(CHROMIUM).exists() {
        eprintln!("{group}: the page opening is not timed: no {CHROMIUM}");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><title>blank</title><p>blank</p>").expect("write");
    let mut setups: Vec<(&str, PathBuf)> = vec![("blank_page", blank)];
    setups.extend(pages.iter().map(|(name, page)| (*name, page.clone())));
    let shot = dir.path().join("shot.png");
    let rounds = paired_rounds(&mut setups, 7, |page| {
        let profile = tempfile::tempdir().expect("profile dir");
        let start = Instant::now();
        let status = Command::new(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
            ])
            .args([
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ])
            .args([
                "--proxy-server=127.0.0.1:9",
                "--host-resolver-rules=MAP * ~NOTFOUND",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("--screenshot={}", shot.display()))
            .args(["--window-size=1280,900", "--hide-scrollbars"])
            .arg(format!("file://{}", page.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run chromium");
        let took = start.elapsed();
        assert!(status.success(), "chromium failed on {}", page.display());
        took
    });
    eprintln!("{}", rounds.report(&format!("{group}/open_in_chromium")));
}

// ---------------------------------------------------------------------------------------------------
// Recording's cost on the bridge.

/// What watches the bridge's frames.
#[derive(PartialEq)]
enum Observer {
    None,
    /// A tap that drops every frame: the cost of the observer hook alone.
    EmptyTap,
    Recorder,
}

/// `calltape bridge -- <server>` or `calltape record -o FILE -- <server>`, composed the same way. The
/// server is this binary's echo server unless `CALLTAPE_BENCH_UPSTREAM` names another.
fn bridge(observer: Observer) {
    let upstream = match std::env::var_os(UPSTREAM) {
        Some(server) => ChildUpstream::new([server]).expect("argv"),
        None => {
            let exe = std::env::current_exe().expect("own path");
            ChildUpstream::new([exe]).expect("argv").env(ROLE, "echo")
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut builder = Bridge::builder().upstream(upstream);
    if observer == Observer::EmptyTap {
        builder = builder.tap(|event: TapEvent| drop(black_box(event)));
    }
    let recorder = if observer == Observer::Recorder {
        let path = std::env::var_os(RECORD_TO).expect("CALLTAPE_BENCH_RECORD");
        let recorder = runtime
            .block_on(Recorder::open(
                path,
                RecorderOptions::default().max_bytes(1 << 40),
            ))
            .expect("recorder");
        let session = recorder.session();
        builder = builder.tap(move |event: TapEvent| match event.direction {
            Direction::FromClient => session.client_frame(&event.frame, event.at),
            _ => session.server_frame(&event.frame, event.at),
        });
        Some(recorder)
    } else {
        None
    };
    let bridge = builder.build().expect("bridge");
    let summary = runtime
        .block_on(async { bridge.run(stdio::stdin(), stdio::stdout()).await })
        .expect("bridge run");
    // The bridge has returned: the tap has shown the recorder its last frame.
    if let Some(recorder) = recorder {
        let report = runtime.block_on(recorder.close());
        eprintln!(
            "replay bench, recording bridge: {report}; frames the tap dropped: {}",
            summary.tap_dropped
        );
    }
    runtime.shutdown_timeout(Duration::from_millis(100));
}

/// How a bench peer is started: this binary in `role`, recording to `record_to`, its bridge in front
/// of `upstream` (else of this binary's echo server).
#[derive(Clone, Copy)]
struct Spec<'a> {
    role: &'a str,
    record_to: Option<&'a Path>,
    upstream: Option<&'a Path>,
}

impl<'a> Spec<'a> {
    /// `role`, recording to `record_to` when it is the recording bridge.
    fn new(role: &'a str, record_to: &'a Path, upstream: Option<&'a Path>) -> Self {
        Self {
            role,
            record_to: (role == "record").then_some(record_to),
            upstream,
        }
    }

    fn start(&self) -> Peer {
        let mut command = Peer::own_binary(self.role);
        if let Some(path) = self.record_to {
            command.env(RECORD_TO, path);
        }
        if let Some(server) = self.upstream {
            command.env(UPSTREAM, server);
        }
        Peer::start(command)
    }
}

/// How the paired rounds after criterion's runs treat the peers.
enum Paired {
    /// Every round times each peer once, after an untimed exchange: a peer whose threads went idle
    /// while the others ran is timed awake, as criterion times it.
    Warm(usize),
    /// Every round starts each peer (and the server behind it) anew, warms it with one exchange and
    /// times the next: no peer keeps a server whose state (a JIT, a heap) favours it all along.
    Fresh(usize),
}

/// The setups a recording group compares: the bridge, then (in front of the echo server) the bridge
/// with a tap that drops every frame, what the observer hook alone costs, then the bridge with a
/// recorder.
fn recording_specs<'a>(
    record_to: &'a Path,
    upstream: Option<&'a Path>,
) -> Vec<(&'static str, Spec<'a>)> {
    let mut specs = vec![("bridge", Spec::new("bridge", record_to, upstream))];
    if upstream.is_none() {
        specs.push(("bridge_with_empty_tap", Spec::new("tap", record_to, None)));
    }
    specs.push((
        "bridge_with_record",
        Spec::new("record", record_to, upstream),
    ));
    specs
}

/// `tools/call` requests to the `echo` tool of `upstream` (else of the echo server), one per line,
/// ids from 1.
fn echo_calls(count: usize, upstream: Option<&Path>) -> Vec<String> {
    // The argument each server's `echo` tool takes.
    let key = if upstream.is_some() {
        "message"
    } else {
        "text"
    };
    (0..count)
        .map(|i| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"{key}":"hello {i}"}}}}}}"#,
                i + 1
            )
        })
        .collect()
}

/// The calls as one write: each line with its newline.
fn pipelined(calls: &[String]) -> Vec<u8> {
    calls
        .iter()
        .flat_map(|call| call.bytes().chain([b'\n']))
        .collect()
}

/// Benches `exchange` (`calls` calls an iteration) on each peer in turn with criterion, then times
/// paired rounds of it and prints each peer's cost against the first, round by round; last, says how
/// many of the calls made through `bridge_with_record` its recording holds.
fn bench_peers(
    group: &mut BenchmarkGroup<'_, WallTime>,
    group_name: &str,
    specs: &[(&str, Spec<'_>)],
    record_to: &Path,
    (calls, paired): (usize, Paired),
    mut exchange: impl FnMut(&mut Peer),
) {
    const RECORDING: &str = "bridge_with_record";
    if !selected(group_name) {
        return;
    }
    let mut made = 0;
    let mut peers: Vec<(&str, Peer)> = specs
        .iter()
        .map(|(name, spec)| (*name, spec.start()))
        .collect();
    for (name, peer) in &mut peers {
        let name = *name;
        group.bench_function(name, |b| {
            b.iter(|| {
                if name == RECORDING {
                    made += calls;
                }
                exchange(peer);
            });
        });
    }
    let rounds = match paired {
        Paired::Warm(rounds) => paired_rounds(&mut peers, rounds, |peer| {
            exchange(peer);
            timed(|| exchange(peer))
        }),
        Paired::Fresh(rounds) => {
            drop(std::mem::take(&mut peers));
            let mut specs = specs.to_vec();
            paired_rounds(&mut specs, rounds, |spec| {
                let mut peer = spec.start();
                exchange(&mut peer);
                timed(|| exchange(&mut peer))
            })
        }
    };
    if rounds.names.iter().any(|name| name == RECORDING) {
        made += 2 * calls * rounds.times[0].len();
    }
    eprintln!("{}", rounds.report(group_name));
    drop(peers);
    let lines = std::fs::read_to_string(record_to)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    eprintln!(
        "{}: {made} calls made with a recorder, {lines} recorded",
        group_name
    );
}

/// 10,000 calls sent at once, through the bridge in front of the echo server and (when installed)
/// the reference server.
fn recording_throughput(c: &mut Criterion) {
    echo_then_reference(
        c,
        [
            "replay/record_pipelined_10k",
            "replay/record_pipelined_reference_server_10k",
        ],
        pipelined_calls,
    );
}

/// 10,000 calls written at once through the bridge in front of `upstream` (else the echo server).
fn pipelined_calls(c: &mut Criterion, name: &str, upstream: Option<&Path>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let record_to = dir.path().join("pipelined.jsonl");
    let calls = pipelined(&echo_calls(CALLS, upstream));
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(CALLS as u64));
    let specs = recording_specs(&record_to, upstream);
    let paired = match upstream {
        // A real server's calls take ten times as long; and a server of its own per round, since
        // its state drifts.
        Some(_) => {
            group.sample_size(10);
            group.measurement_time(Duration::from_secs(15));
            Paired::Fresh(20)
        }
        None => {
            group.sample_size(20);
            Paired::Warm(40)
        }
    };
    bench_peers(
        &mut group,
        name,
        &specs,
        &record_to,
        (CALLS, paired),
        |peer| {
            black_box(peer.pipeline(&calls, CALLS));
        },
    );
    group.finish();
}

/// Calls made one at a time, each waiting for its answer: what the recorder adds to a call while the
/// bridge is not saturated, in front of the echo server and (when installed) the reference server.
fn recording_latency(c: &mut Criterion) {
    echo_then_reference(
        c,
        [
            "replay/record_sequential_1k",
            "replay/record_sequential_reference_server_1k",
        ],
        one_call_at_a_time,
    );
}

/// Runs `group` as `names[0]` in front of the echo server, then as `names[1]` in front of the
/// reference server when it is installed.
fn echo_then_reference(
    c: &mut Criterion,
    names: [&str; 2],
    group: fn(&mut Criterion, &str, Option<&Path>),
) {
    group(c, names[0], None);
    if let Some(server) = reference_server(names[1]) {
        group(c, names[1], Some(&server));
    }
}

/// 1,000 calls one at a time through the bridge in front of `upstream` (else the echo server).
fn one_call_at_a_time(c: &mut Criterion, name: &str, upstream: Option<&Path>) {
    const SEQUENTIAL: usize = 1_000;
    let dir = tempfile::tempdir().expect("temp dir");
    let record_to = dir.path().join("sequential.jsonl");
    let calls = echo_calls(SEQUENTIAL, upstream);
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(SEQUENTIAL as u64));
    group.sample_size(20);
    let specs = recording_specs(&record_to, upstream);
    // A server of its own per round for the reference server, whose state drifts.
    let paired = match upstream {
        Some(_) => Paired::Fresh(20),
        None => Paired::Warm(40),
    };
    bench_peers(
        &mut group,
        name,
        &specs,
        &record_to,
        (SEQUENTIAL, paired),
        |peer| {
            for call in &calls {
                peer.send(call.as_bytes());
                black_box(peer.recv());
            }
        },
    );
    group.finish();
}

/// The recorder's own work per call, without a bridge: 10,000 requests and their answers shown to one
/// session, each written as a record. Baseline in the same run: reading every frame into a `Value`,
/// the least a recorder that parses its traffic pays.
fn recorder_alone(c: &mut Criterion) {
    let frames: Vec<(String, String)> = (0..CALLS)
        .map(|i| {
            let id = i + 1;
            (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"hello {i}\"}}}}}}"),
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"hello {i}\"}}]}}}}"),
            )
        })
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let recorder = runtime
        .block_on(Recorder::open(
            dir.path().join("alone.jsonl"),
            RecorderOptions::default().max_bytes(1 << 40),
        ))
        .expect("recorder");
    let mut group = c.benchmark_group("replay/recorder_10k");
    group.throughput(Throughput::Elements(CALLS as u64));
    group.bench_function("parse_frames_as_values", |b| {
        b.iter(|| {
            for (request, answer) in &frames {
                black_box(serde_json::from_str::<Value>(request).expect("json"));
                black_box(serde_json::from_str::<Value>(answer).expect("json"));
            }
        });
    });
    group.bench_function("record", |b| {
        b.iter(|| {
            let session = recorder.session();
            let at = std::time::SystemTime::now();
            for (request, answer) in &frames {
                session.client_frame(request.as_bytes(), at);
                session.server_frame(answer.as_bytes(), at);
            }
        });
    });
    group.finish();
    runtime.block_on(recorder.close());
}

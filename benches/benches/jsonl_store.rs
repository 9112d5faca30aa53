//! calltape-jsonl-store: what `append` costs the caller, and how fast lines reach the page cache,
//! each beside a plain `BufWriter<File>` doing the same work in the same run.
//!
//! Lines are 200 bytes of JSON (201 with the newline). Claims: the caller-side `append` costs under
//! 2 µs (it only enqueues), and no writing work runs on the caller's runtime (a current-thread caller
//! that yields after every append pays little more than the yields); sustained writing reaches at
//! least 200,000 lines/s.

use std::fs::{File, OpenOptions};
use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use calltape_jsonl_store::{Fsync, JsonlWriter, Options, SyncJsonlWriter};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde::Serialize;

/// Lines per sustained-throughput iteration.
const LINES: usize = 10_000;
/// Lines appended between two (untimed) flushes in the append-cost benches.
const CHUNK: u64 = 10_000;

#[derive(Serialize)]
struct Call<'a> {
    v: u32,
    method: &'a str,
    name: &'a str,
    seq: u64,
    pad: String,
}

fn call(seq: u64) -> Call<'static> {
    let mut call = Call {
        v: 1,
        method: "tools/call",
        name: "quote",
        seq,
        pad: String::new(),
    };
    let len = serde_json::to_vec(&call).unwrap().len();
    call.pad = "x".repeat(200 - len);
    call
}

fn line() -> Bytes {
    let line = serde_json::to_vec(&call(1_000_000)).unwrap();
    assert_eq!(line.len(), 200);
    Bytes::from(line)
}

fn options() -> Options {
    Options::default().max_bytes(1 << 40).fsync(Fsync::Never)
}

fn truncate(path: &Path) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(0)
        .unwrap();
}

/// Times `iters` calls of `one`, `CHUNK` at a time, running the untimed `between` (a flush, a
/// truncation) after each chunk so that the file stays small.
fn timed_in_chunks(iters: u64, mut one: impl FnMut(), mut between: impl FnMut()) -> Duration {
    let mut timed = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(CHUNK);
        let start = Instant::now();
        for _ in 0..n {
            one();
        }
        timed += start.elapsed();
        left -= n;
        between();
    }
    timed
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// The caller's cost of one append: timed in chunks while the background writer works; the flush and
/// truncation between chunks are not timed.
fn append_cost(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("append.jsonl");
    let writer = rt.block_on(JsonlWriter::open(&path, options()));
    let line = line();
    let value = call(1_000_000);

    let mut group = c.benchmark_group("jsonl_store/append_cost");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(4));

    group.bench_function("JsonlWriter::append_line", |b| {
        b.iter_custom(|iters| {
            timed_in_chunks(
                iters,
                || writer.append_line(black_box(line.clone())),
                || {
                    let report = rt.block_on(writer.flush());
                    assert_eq!(report.dropped.total(), 0);
                    truncate(&path);
                },
            )
        });
    });

    group.bench_function("JsonlWriter::append (serializes)", |b| {
        b.iter_custom(|iters| {
            timed_in_chunks(
                iters,
                || writer.append(black_box(&value)),
                || {
                    rt.block_on(writer.flush());
                    truncate(&path);
                },
            )
        });
    });

    let base_path = dir.path().join("baseline.jsonl");
    let mut base = BufWriter::with_capacity(64 * 1024, File::create(&base_path).unwrap());
    group.bench_function("baseline BufWriter<File>::write_all", |b| {
        b.iter_custom(|iters| {
            let base = std::cell::RefCell::new(&mut base);
            timed_in_chunks(
                iters,
                || {
                    let mut base = base.borrow_mut();
                    base.write_all(black_box(&line)).unwrap();
                    base.write_all(b"\n").unwrap();
                },
                || {
                    base.borrow_mut().flush().unwrap();
                    truncate(&base_path);
                },
            )
        });
    });
    group.finish();
    rt.block_on(writer.close());
}

/// The caller's cost when its runtime is a current-thread one that also serves traffic (the shape of
/// `calltape record`): every append is followed by a yield, so any writing work that runs on that
/// runtime is paid here. Baseline in the same run: the yields alone.
fn current_thread_caller(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("current_thread.jsonl");
    let writer = rt.block_on(JsonlWriter::open(&path, options()));
    let line = line();

    let mut group = c.benchmark_group("jsonl_store/current_thread_caller");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(4));
    for append in [true, false] {
        let name = if append {
            "JsonlWriter::append_line + yield"
        } else {
            "baseline: yield only"
        };
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut timed = Duration::ZERO;
                    let mut left = iters;
                    while left > 0 {
                        let n = left.min(CHUNK);
                        let start = Instant::now();
                        for _ in 0..n {
                            if append {
                                writer.append_line(black_box(line.clone()));
                            }
                            tokio::task::yield_now().await;
                        }
                        timed += start.elapsed();
                        left -= n;
                        let report = writer.flush().await;
                        assert_eq!(report.dropped.total(), 0);
                        truncate(&path);
                    }
                    timed
                })
            });
        });
    }
    group.finish();
    rt.block_on(writer.close());
}

/// Lines per second to the page cache, end to end: open, append 10,000 lines, close (no fsync).
fn sustained(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sustained.jsonl");
    let line = line();

    let mut group = c.benchmark_group("jsonl_store/sustained");
    group.throughput(Throughput::Bytes((LINES * (line.len() + 1)) as u64));
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(6));

    group.bench_function("JsonlWriter 10k lines", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let _ = std::fs::remove_file(&path);
                let start = Instant::now();
                let report = rt.block_on(async {
                    let writer = JsonlWriter::open(&path, options()).await;
                    for _ in 0..LINES {
                        writer.append_line(line.clone());
                    }
                    writer.close().await
                });
                timed += start.elapsed();
                assert_eq!(report.lines_written, LINES as u64);
            }
            timed
        });
    });

    group.bench_function("SyncJsonlWriter 10k lines", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let _ = std::fs::remove_file(&path);
                let start = Instant::now();
                let writer = SyncJsonlWriter::open(&path, options());
                for _ in 0..LINES {
                    writer.append_line(&line);
                }
                let report = writer.close();
                timed += start.elapsed();
                assert_eq!(report.lines_written, LINES as u64);
            }
            timed
        });
    });

    group.bench_function("baseline BufWriter<File> 10k lines", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let _ = std::fs::remove_file(&path);
                let start = Instant::now();
                let mut out = BufWriter::with_capacity(64 * 1024, File::create(&path).unwrap());
                for _ in 0..LINES {
                    out.write_all(&line).unwrap();
                    out.write_all(b"\n").unwrap();
                }
                out.flush().unwrap();
                drop(out);
                timed += start.elapsed();
            }
            timed
        });
    });
    group.finish();
}

criterion_group!(benches, append_cost, current_thread_caller, sustained);
criterion_main!(benches);

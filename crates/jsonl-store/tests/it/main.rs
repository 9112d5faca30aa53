//! Integration tests of calltape-jsonl-store: real files, real pipes, real child processes.
//!
//! Tests that need other processes re-run this test binary with `CALLTAPE_JSONL_CHILD` naming the
//! child's role; the test checks it first thing and plays that role instead.

mod batching;
// Its sinks fail with Unix error numbers, and the engine it tests is the same on every platform.
#[cfg(unix)]
mod failures;
mod files;
mod process;
mod reader;
mod slow_disk;

use std::io::{self, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The record the tests write: who wrote it, its sequence number, and padding to vary its length.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rec {
    pub(crate) id: usize,
    pub(crate) seq: usize,
    pub(crate) pad: String,
}

impl Rec {
    pub(crate) fn new(id: usize, seq: usize, pad_len: usize) -> Self {
        Self {
            id,
            seq,
            pad: "x".repeat(pad_len),
        }
    }
}

/// A line of about 200 bytes.
pub(crate) fn line_200(seq: usize) -> Vec<u8> {
    let mut line = serde_json::to_vec(&Rec::new(0, seq, 0)).unwrap();
    let pad = 200usize.saturating_sub(line.len());
    line = serde_json::to_vec(&Rec::new(0, seq, pad)).unwrap();
    line
}

static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct Capture;

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Sends every `tracing` event of this process into a buffer that [`warnings`] searches.
pub(crate) fn capture_logs() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        tracing_subscriber::fmt()
            .with_writer(|| Capture)
            .with_ansi(false)
            .without_time()
            .init();
    });
}

/// How many warnings of `kind` were logged about `path` (each test uses its own path).
pub(crate) fn warnings(path: &Path, kind: &str) -> usize {
    let logs = LOGS.lock().unwrap();
    let text = String::from_utf8_lossy(&logs);
    let path = path.display().to_string();
    text.lines()
        .filter(|l| {
            l.contains(" WARN ") && l.contains(&path) && l.contains(&format!("kind=\"{kind}\""))
        })
        .count()
}

/// The role this process plays when a test re-ran the binary, if any.
pub(crate) fn child_role() -> Option<String> {
    std::env::var("CALLTAPE_JSONL_CHILD").ok()
}

/// Re-runs this test binary for the single test `test`, in the role `role`, with `path` in
/// `CALLTAPE_JSONL_PATH`.
pub(crate) fn spawn_child(test: &str, role: &str, path: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1", "-q"])
        .env("CALLTAPE_JSONL_CHILD", role)
        .env("CALLTAPE_JSONL_PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits until `cond` holds, checking every few milliseconds, for at most a minute.
pub(crate) fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "gave up waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn public_types_are_send_and_sync() {
    fn assert_traits<T: Send + Sync>() {}
    assert_traits::<calltape_jsonl_store::JsonlWriter>();
    assert_traits::<calltape_jsonl_store::SyncJsonlWriter>();
    assert_traits::<calltape_jsonl_store::WriterReport>();
    assert_traits::<calltape_jsonl_store::Error>();
    assert_traits::<calltape_jsonl_store::JsonlReader<Rec>>();
}

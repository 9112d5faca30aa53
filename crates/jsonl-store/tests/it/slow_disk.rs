//! A disk that stalls: appends still return at once, the queue stays under `max_bytes`, and later
//! lines are dropped with one warning.

#[cfg(unix)]
use std::fs::OpenOptions;
use std::io;
#[cfg(unix)]
use std::io::Read;
#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;
#[cfg(unix)]
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(unix)]
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

use bytes::Bytes;
#[cfg(unix)]
use calltape_jsonl_store::ErrorKind;
use calltape_jsonl_store::{JsonlWriter, Options, Sink};

use crate::{capture_logs, line_200, wait_for, warnings};

/// A sink whose writes wait until the test opens its gate.
#[derive(Clone, Default)]
struct StallSink {
    open: Arc<(Mutex<bool>, Condvar)>,
    entered: Arc<AtomicBool>,
    written: Arc<AtomicUsize>,
}

impl StallSink {
    fn release(&self) {
        *self.open.0.lock().unwrap() = true;
        self.open.1.notify_all();
    }
}

/// Opens the gate when dropped, so a failed assertion does not leave the writer stuck for good.
struct ReleaseOnDrop(StallSink);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

impl Sink for StallSink {
    fn size(&mut self) -> io::Result<u64> {
        Ok(0)
    }
    fn write_lines(&mut self, lines: &[u8]) -> io::Result<()> {
        self.entered.store(true, Ordering::SeqCst);
        let (lock, cvar) = &*self.open;
        let _open = cvar
            .wait_while(lock.lock().unwrap(), |open| !*open)
            .unwrap();
        self.written.fetch_add(lines.len(), Ordering::SeqCst);
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_sink_never_blocks_append_and_the_queue_stays_under_max_bytes() {
    capture_logs();
    const MAX: u64 = 64 * 1024;
    const LINES: usize = 5000;
    let sink = StallSink::default();
    let name = std::path::PathBuf::from("stalled-sink.jsonl");
    let _release = ReleaseOnDrop(sink.clone());
    let writer =
        JsonlWriter::with_sink(&name, sink.clone(), Options::default().max_bytes(MAX)).await;

    let line = Bytes::from(line_200(0));
    writer.append_line(line.clone());
    wait_for("the first write to stall", || {
        sink.entered.load(Ordering::SeqCst)
    });
    // The sink is now stuck in a write: every append below has to return without it.
    for _ in 1..LINES {
        writer.append_line(line.clone());
        assert!(writer.queued_bytes() <= MAX);
    }
    let during = writer.report();
    assert_eq!(during.lines_written, 0);
    assert!(during.dropped.queue_full > 0);
    let accepted = LINES as u64 - during.dropped.queue_full;
    assert!(
        accepted <= MAX / 201,
        "{accepted} lines of 201 bytes queued under a {MAX}-byte budget"
    );
    assert_eq!(
        warnings(&name, "queue_full"),
        1,
        "one warning however many lines dropped"
    );

    sink.release();
    let report = writer.close().await;
    assert_eq!(report.lines_written, accepted, "{report}");
    assert_eq!(report.dropped.queue_full, during.dropped.queue_full);
    assert_eq!(report.lines_written + report.dropped.total(), LINES as u64);
    assert_eq!(sink.written.load(Ordering::SeqCst) as u64, accepted * 201);
    assert!(
        report.first_error.is_none(),
        "a full queue is no error: {report}"
    );
    assert_eq!(warnings(&name, "queue_full"), 1);
}

/// The same with a real stall: a named pipe whose reader stops reading.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_whose_reader_sleeps_fills_the_queue_then_drains() {
    capture_logs();
    const MAX: u64 = 256 * 1024;
    const LINES: usize = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pipe.jsonl");
    let status = Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(status.success());

    // The reading end, opened first (non-blocking, so the open does not wait for a writer).
    let mut pipe = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .unwrap();
    let (go, wait) = mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        wait.recv().unwrap(); // a reader that sleeps: the pipe's buffer fills, writes block
        let mut got = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break, // the writer closed its end
                Ok(n) => got.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(e) => panic!("reading the pipe: {e}"),
            }
        }
        got
    });
    let writer = JsonlWriter::open(&path, Options::default().max_bytes(MAX)).await;
    assert!(
        writer.report().first_error.is_none(),
        "a named pipe is accepted"
    );
    let line = Bytes::from(line_200(0));
    for _ in 0..LINES {
        writer.append_line(line.clone());
        assert!(writer.queued_bytes() <= MAX);
    }
    let during = writer.report();
    assert!(during.dropped.queue_full > 0, "{during}");
    assert_eq!(warnings(&path, "queue_full"), 1);

    go.send(()).unwrap();
    let report = writer.close().await;
    let got = reader.join().unwrap();
    let lines: Vec<&[u8]> = got
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len() as u64, report.lines_written, "{report}");
    assert_eq!(
        report.lines_written + report.dropped.queue_full,
        LINES as u64
    );
    assert!(lines.iter().all(|l| *l == &line[..]));
    assert!(report.first_error.is_none(), "{report}");
}

#[cfg(unix)]
#[tokio::test]
async fn a_fifo_nobody_reads_is_refused_at_once_instead_of_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lonely.pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success()
    );
    let writer = JsonlWriter::open(&path, Options::default()).await;
    writer.append_line("{}");
    let report = writer.close().await;
    assert_eq!(report.dropped.refused, 1);
    let error = report.first_error.unwrap();
    assert!(
        matches!(error.kind(), ErrorKind::PipeWithoutReader { .. }),
        "{error}"
    );
}

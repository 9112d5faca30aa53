//! A full disk or a failing one: one warning, the caller unaffected, the report names the error.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use calltape_jsonl_store::{ErrorKind, JsonlWriter, Options, Sink, SyncJsonlWriter};

use crate::{Rec, capture_logs, warnings};

/// A sink whose writes fail with an OS error while `fail` is above zero, counting down.
#[derive(Clone)]
struct FailingSink {
    errno: i32,
    fail: Arc<AtomicUsize>,
    written: Arc<AtomicUsize>,
}

impl Sink for FailingSink {
    fn size(&mut self) -> io::Result<u64> {
        Ok(self.written.load(Ordering::SeqCst) as u64)
    }
    fn write_lines(&mut self, lines: &[u8]) -> io::Result<()> {
        if self.fail.load(Ordering::SeqCst) > 0 {
            self.fail.fetch_sub(1, Ordering::SeqCst);
            return Err(io::Error::from_raw_os_error(self.errno));
        }
        self.written.fetch_add(lines.len(), Ordering::SeqCst);
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn enospc_and_eio_are_logged_once_and_named_in_the_report() {
    capture_logs();
    for (errno, text) in [
        (libc::ENOSPC, "No space left on device"),
        (libc::EIO, "Input/output error"),
    ] {
        let name = std::path::PathBuf::from(format!("failing-{errno}.jsonl"));
        let sink = FailingSink {
            errno,
            fail: Arc::new(AtomicUsize::new(usize::MAX)),
            written: Arc::default(),
        };
        let writer = JsonlWriter::with_sink(&name, sink, Options::default()).await;
        for i in 0..50 {
            writer.append(&Rec::new(0, i, 100));
            // Let the writer meet the error several times, in several batches.
            if i % 10 == 0 {
                writer.flush().await;
            }
        }
        let report = writer.close().await;
        assert_eq!(report.lines_written, 0);
        assert_eq!(report.dropped.write_failed, 50, "{report}");
        let error = report
            .first_error
            .clone()
            .expect("the error is in the report");
        assert!(matches!(error.kind(), ErrorKind::Write { .. }));
        assert_eq!(
            error.io_error().and_then(io::Error::raw_os_error),
            Some(errno)
        );
        assert!(report.to_string().contains(text), "{report}");
        assert_eq!(warnings(&name, "write_failed"), 1, "{errno}");
    }
}

#[tokio::test]
async fn writing_resumes_when_the_disk_has_room_again() {
    let sink = FailingSink {
        errno: libc::ENOSPC,
        fail: Arc::new(AtomicUsize::new(1)),
        written: Arc::default(),
    };
    let writer = JsonlWriter::with_sink("recovering.jsonl", sink.clone(), Options::default()).await;
    writer.append_line("{\"a\":1}");
    writer.flush().await;
    writer.append_line("{\"a\":2}");
    let report = writer.close().await;
    assert_eq!((report.dropped.write_failed, report.lines_written), (1, 1));
    assert_eq!(sink.written.load(Ordering::SeqCst), 8);
    assert!(report.first_error.is_some());
}

#[test]
fn the_sync_writer_reports_a_full_disk_the_same_way() {
    capture_logs();
    let name = std::path::PathBuf::from("failing-sync.jsonl");
    let sink = FailingSink {
        errno: libc::ENOSPC,
        fail: Arc::new(AtomicUsize::new(usize::MAX)),
        written: Arc::default(),
    };
    let writer = SyncJsonlWriter::with_sink(&name, sink, Options::default());
    for i in 0..20 {
        writer.append(&Rec::new(0, i, 10));
    }
    let report = writer.close();
    assert_eq!((report.lines_written, report.dropped.write_failed), (0, 20));
    assert_eq!(
        report
            .first_error
            .unwrap()
            .io_error()
            .and_then(io::Error::raw_os_error),
        Some(libc::ENOSPC)
    );
    assert_eq!(warnings(&name, "write_failed"), 1);
}

/// A sink that panics on its second write.
#[derive(Clone, Default)]
struct PanicSink {
    writes: Arc<AtomicUsize>,
    written: Arc<AtomicUsize>,
}

impl Sink for PanicSink {
    fn size(&mut self) -> io::Result<u64> {
        Ok(self.written.load(Ordering::SeqCst) as u64)
    }
    fn write_lines(&mut self, lines: &[u8]) -> io::Result<()> {
        if self.writes.fetch_add(1, Ordering::SeqCst) == 1 {
            panic!("disk on fire");
        }
        self.written.fetch_add(lines.len(), Ordering::SeqCst);
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_panicking_sink_counts_as_failed_writes_and_never_reaches_the_caller() {
    let sink = PanicSink::default();
    let writer = JsonlWriter::with_sink("panicking.jsonl", sink.clone(), Options::default()).await;
    writer.append_line("{\"a\":1}");
    assert_eq!(writer.flush().await.lines_written, 1);
    writer.append_line("{\"a\":2}");
    writer.append_line("{\"a\":3}");
    let report = writer.flush().await;
    assert_eq!((report.lines_written, report.dropped.write_failed), (1, 2));
    assert_eq!(writer.queued_bytes(), 0);
    writer.append_line("{\"a\":4}");
    let report = writer.close().await;
    assert_eq!(
        (report.lines_written, report.dropped.total()),
        (1, 3),
        "{report}"
    );
    assert_eq!(report.dropped.write_failed, 3);
    let error = report.first_error.expect("the panic is in the report");
    assert!(matches!(error.kind(), ErrorKind::Write { .. }));
    assert!(
        error
            .to_string()
            .contains("the sink panicked: disk on fire"),
        "{error}"
    );
    assert_eq!(sink.written.load(Ordering::SeqCst), 8);
}

/// A log buffer for one test's own subscriber.
#[derive(Clone, Default)]
struct Buffer(Arc<std::sync::Mutex<Vec<u8>>>);

impl io::Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn warnings_from_the_writer_thread_reach_the_callers_scoped_subscriber() {
    let logs = Buffer::default();
    let subscriber = {
        let logs = logs.clone();
        tracing_subscriber::fmt()
            .with_writer(move || logs.clone())
            .with_ansi(false)
            .finish()
    };
    let _scope = tracing::subscriber::set_default(subscriber);
    let sink = FailingSink {
        errno: libc::ENOSPC,
        fail: Arc::new(AtomicUsize::new(usize::MAX)),
        written: Arc::default(),
    };
    let writer = JsonlWriter::with_sink("scoped.jsonl", sink, Options::default()).await;
    writer.append_line("{}");
    let report = writer.close().await;
    assert_eq!(report.dropped.write_failed, 1);
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        text.contains("scoped.jsonl: write failed") && text.contains("write_failed"),
        "{text}"
    );
}

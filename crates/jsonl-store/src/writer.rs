//! The asynchronous writer: callers enqueue, one background thread gathers lines into batches and
//! writes them.

use std::any::Any;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Serialize;
use tokio::sync::oneshot;

use crate::engine::{Engine, Reason, Shared, WriterReport, check_line, with_serialized};
use crate::error::{Error, ErrorKind};
use crate::options::Options;
use crate::sink::{Sink, open_file};

/// The most bytes of lines handed to the disk in one batch.
const MAX_BATCH: usize = 1024 * 1024;

/// How long the writer thread waits, after the first line of a batch, for more lines to join it. A
/// steady stream of small lines then costs about one wake-up and one `write` per millisecond instead
/// of one per line.
const LINGER: Duration = Duration::from_millis(1);

/// A batch this large is written without lingering (half of `max_bytes` when that is smaller, so a
/// small queue never fills while the thread waits).
const LINGER_BYTES: u64 = 64 * 1024;

/// The name of the writer thread, as debuggers and `top -H` show it.
const THREAD_NAME: &str = "calltape-writer";

enum Msg {
    Line(Bytes),
    Flush(oneshot::Sender<()>),
}

/// Appends JSON lines to a file without ever blocking or failing the caller.
///
/// [`append`](JsonlWriter::append) and [`append_line`](JsonlWriter::append_line) only put the line in
/// an in-memory queue and return. One background thread per writer (named `calltape-writer`) owns the
/// file: it gathers queued lines into batches, waiting about a millisecond after the first line of a
/// batch for more to join it unless a flush or close is waiting, and writes each batch in as few
/// `write` calls as it can. The caller's runtime never runs any of this work.
///
/// The queue holds at most `max_bytes` of lines: while a slow disk keeps it full, new lines are
/// dropped. Nothing is ever returned as an error: dropped lines, refusals and failures (a sink that
/// panics counts as a failed write) are logged once per kind through `tracing` and counted in the
/// [`WriterReport`] that [`flush`](JsonlWriter::flush) and [`close`](JsonlWriter::close) return.
///
/// Dropping a writer without closing it lets the background thread finish the queue on its own (and
/// `fsync` per the policy), as long as the process keeps running; `close` waits for that and returns
/// the report.
#[derive(Debug)]
pub struct JsonlWriter {
    shared: Arc<Shared>,
    tx: Option<Sender<Msg>>,
    /// The writer thread: woken early when a flush, a close or a large queue should end its wait.
    thread: Option<Thread>,
    /// Resolves (its sender is dropped) when the writer thread has finished.
    finished: Option<oneshot::Receiver<()>>,
    /// Queued bytes at which an append wakes the writer thread instead of letting it wait.
    wake_at: u64,
}

impl JsonlWriter {
    /// Opens `path` for appending and starts the background writer thread.
    ///
    /// Never fails: a file that is refused (a symbolic link, a file owned by another user, one whose
    /// mode cannot be set, a missing folder) gets no line, and the refusal is logged once and named in
    /// the report. The file is opened on the writer thread, so the caller's runtime never blocks on
    /// it; any async runtime can await this.
    pub async fn open(path: impl AsRef<Path>, options: Options) -> Self {
        let path = path.as_ref().to_owned();
        let shared = Arc::new(Shared::new(path.clone(), options.max_bytes));
        let fsync = options.fsync;
        Self::start(shared, move |shared| {
            open_file(&path, &options).map(|sink| Engine::new(Box::new(sink), shared, fsync))
        })
        .await
    }

    /// Starts a writer that writes to `sink` instead of a file it opens itself; `name` stands for the
    /// destination in messages and the report.
    ///
    /// The cap, the queue, the `fsync` policy and the report work as with [`open`](JsonlWriter::open);
    /// `mode` and `create_dirs` are the sink's business. The sink is called on the writer thread only.
    pub async fn with_sink(name: impl Into<PathBuf>, sink: impl Sink, options: Options) -> Self {
        let shared = Arc::new(Shared::new(name.into(), options.max_bytes));
        let sink: Box<dyn Sink> = Box::new(sink);
        let fsync = options.fsync;
        Self::start(shared, move |shared| Ok(Engine::new(sink, shared, fsync))).await
    }

    /// Starts the writer thread, which builds the engine with `make` (opening the file, reading its
    /// size) and then writes until every handle is gone.
    async fn start(
        shared: Arc<Shared>,
        make: impl FnOnce(Arc<Shared>) -> Result<Engine, Error> + Send + 'static,
    ) -> Self {
        let wake_at = LINGER_BYTES.min(shared.max_bytes / 2);
        let (tx, rx) = mpsc::channel();
        let (opened_tx, opened) = oneshot::channel();
        let (finished_tx, finished) = oneshot::channel::<()>();
        let thread_shared = shared.clone();
        // The thread logs where the caller would: to the caller's subscriber, scoped or global.
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let spawned = thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || {
                // Dropped when this thread ends, however it ends: `close` waits for that.
                let _finished = finished_tx;
                let shared = thread_shared;
                tracing::dispatcher::with_default(&dispatch, || {
                    let made = catch_unwind(AssertUnwindSafe(|| make(shared.clone())));
                    let made = made.unwrap_or_else(|panic| {
                        let error =
                            io::Error::other(format!("the sink panicked: {}", message(&*panic)));
                        Err(Error::open(&shared.path, error))
                    });
                    match made {
                        Ok(engine) => {
                            let _ = opened_tx.send(Ok(()));
                            run(engine, shared, rx, wake_at as usize);
                        }
                        Err(error) => {
                            let _ = opened_tx.send(Err(error));
                        }
                    }
                });
            });
        let thread = match spawned {
            Ok(handle) => handle.thread().clone(),
            Err(e) => {
                let error = io::Error::other(format!("cannot start the writer thread: {e}"));
                let error = Error::open(&shared.path, error);
                return Self::refused(shared, error);
            }
        };
        match opened.await {
            Ok(Ok(())) => Self {
                shared,
                tx: Some(tx),
                thread: Some(thread),
                finished: Some(finished),
                wake_at,
            },
            Ok(Err(error)) => Self::refused(shared, error),
            Err(_) => {
                let error = io::Error::other("the writer thread ended while opening");
                let error = Error::open(&shared.path, error);
                Self::refused(shared, error)
            }
        }
    }

    fn refused(shared: Arc<Shared>, error: Error) -> Self {
        shared.refuse(error);
        Self {
            shared,
            tx: None,
            thread: None,
            finished: None,
            wake_at: 0,
        }
    }

    /// Queues `value` as one JSON line and returns at once.
    pub fn append<T: Serialize + ?Sized>(&self, value: &T) {
        if let Some(reason) = self.shared.stopped() {
            self.shared.drop_lines(reason, 1, None);
            return;
        }
        match with_serialized(value, Bytes::copy_from_slice) {
            Ok(line) => self.append_line(line),
            Err(e) => {
                let error = ErrorKind::Serialize {
                    path: self.shared.path.clone(),
                    message: e.to_string(),
                };
                self.shared
                    .drop_lines(Reason::Invalid, 1, Some(error.into()));
            }
        }
    }

    /// Queues an already serialized line (with or without its newline) and returns at once. A line that
    /// holds a newline of its own is dropped as invalid.
    pub fn append_line(&self, line: impl Into<Bytes>) {
        let line: Bytes = line.into();
        let shared = &*self.shared;
        if let Some(reason) = shared.stopped() {
            shared.drop_lines(reason, 1, None);
            return;
        }
        let len = match check_line(&shared.path, &line) {
            Ok(body) => body.len(),
            Err(error) => {
                shared.drop_lines(Reason::Invalid, 1, Some(error));
                return;
            }
        };
        let line = line.slice(..len);
        let n = len as u64 + 1;
        let before = shared.queued.fetch_add(n, Ordering::AcqRel);
        if before + n > shared.max_bytes {
            shared.queued.fetch_sub(n, Ordering::AcqRel);
            shared.drop_lines(Reason::QueueFull, 1, None);
            return;
        }
        let sent = match &self.tx {
            Some(tx) => tx.send(Msg::Line(line)).is_ok(),
            None => false,
        };
        if !sent {
            shared.queued.fetch_sub(n, Ordering::AcqRel);
            let reason = shared.stopped().unwrap_or(Reason::Closed);
            shared.drop_lines(reason, 1, None);
        } else if before < self.wake_at && before + n >= self.wake_at {
            // The queue just grew past what is worth waiting for: write it now. Only the append that
            // crosses the mark pays for the wake-up.
            self.wake();
        }
    }

    /// Waits until every line queued before this call is written (or dropped), and returns the report.
    pub async fn flush(&self) -> WriterReport {
        if let Some(tx) = &self.tx {
            let (done, wait) = oneshot::channel();
            if tx.send(Msg::Flush(done)).is_ok() {
                self.wake();
                let _ = wait.await;
            }
        }
        self.shared.report()
    }

    /// Writes what is queued, `fsync`s unless the policy is [`Fsync::Never`](crate::Fsync::Never), stops
    /// the background thread and returns the final report.
    pub async fn close(mut self) -> WriterReport {
        self.tx = None;
        self.wake();
        if let Some(finished) = self.finished.take() {
            let _ = finished.await;
        }
        self.shared.report()
    }

    /// What the writer has done so far, without waiting for the queue.
    pub fn report(&self) -> WriterReport {
        self.shared.report()
    }

    /// Bytes of lines (newlines included) queued and not yet written: never more than `max_bytes`.
    pub fn queued_bytes(&self) -> u64 {
        self.shared.queued.load(Ordering::Acquire)
    }

    /// The path (or sink name) written to.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Ends the writer thread's wait for more lines, so that it writes what it holds now.
    fn wake(&self) {
        if let Some(thread) = &self.thread {
            thread.unpark();
        }
    }
}

impl Drop for JsonlWriter {
    fn drop(&mut self) {
        // Closing the channel tells the thread to write the rest of the queue and finish; waking it
        // saves it the rest of its wait.
        self.tx = None;
        self.wake();
    }
}

/// Lines taken from the queue and not yet written, with the flushes waiting for them.
struct Batch {
    lines: Vec<Bytes>,
    /// Bytes of `lines`, newlines included: what leaves the `queued` count once they are handled.
    bytes: usize,
    flushes: Vec<oneshot::Sender<()>>,
    /// Whether to write at once: a flush or a close is waiting, or the batch is full.
    now: bool,
}

impl Batch {
    /// Takes `msg` into the batch; returns whether the batch should stop taking messages.
    fn take(&mut self, msg: Msg) -> bool {
        match msg {
            Msg::Line(line) => {
                self.bytes += line.len() + 1;
                self.lines.push(line);
                if self.bytes >= MAX_BATCH {
                    self.now = true;
                }
                self.now
            }
            // Lines after a flush wait for the next batch, so the flush is answered soon.
            Msg::Flush(done) => {
                self.flushes.push(done);
                self.now = true;
                true
            }
        }
    }

    /// Takes what the queue holds now, until the batch is full or a flush is taken.
    fn drain(&mut self, rx: &Receiver<Msg>) {
        loop {
            match rx.try_recv() {
                Ok(msg) => {
                    if self.take(msg) {
                        return;
                    }
                }
                Err(TryRecvError::Empty) => return,
                // Every handle is gone and the queue is empty: write what is here and finish.
                Err(TryRecvError::Disconnected) => {
                    self.now = true;
                    return;
                }
            }
        }
    }
}

/// The writer thread: gathers queued lines into batches and writes each, until every handle is gone
/// and the queue is empty; then closes the engine (the last `fsync`).
///
/// A sink that panics is caught: the lines it was given count as failed writes, and so does every
/// later line, since a sink left halfway through a write cannot be trusted with the next one.
fn run(engine: Engine, shared: Arc<Shared>, rx: Receiver<Msg>, linger_bytes: usize) {
    let mut engine = Some(engine);
    let mut batch = Batch {
        lines: Vec::new(),
        bytes: 0,
        flushes: Vec::new(),
        now: false,
    };
    while let Ok(first) = rx.recv() {
        let deadline = Instant::now() + LINGER;
        if !batch.take(first) {
            batch.drain(&rx);
        }
        // Linger: let more lines join a small batch, unless something waits for it. A flush, a close
        // or a growing queue unparks this thread; anything else only costs an extra look.
        while !batch.now && batch.bytes < linger_bytes {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            thread::park_timeout(deadline - now);
            batch.drain(&rx);
        }

        let refresh = !batch.flushes.is_empty();
        match engine.as_mut() {
            Some(e) => {
                let written = catch_unwind(AssertUnwindSafe(|| {
                    e.write(&batch.lines);
                    if refresh {
                        e.refresh_len();
                    }
                }));
                if let Err(panic) = written {
                    let left = batch.lines.len().saturating_sub(e.settled) as u64;
                    let error =
                        io::Error::other(format!("the sink panicked: {}", message(&*panic)));
                    let error = Error::write(&shared.path, error);
                    shared.drop_lines(Reason::WriteFailed, left, Some(error));
                    if let Some(e) = engine.take() {
                        // The sink's own drop may panic too; it has nothing left to lose.
                        let _ = catch_unwind(AssertUnwindSafe(move || drop(e)));
                    }
                }
            }
            None => shared.drop_lines(Reason::WriteFailed, batch.lines.len() as u64, None),
        }
        shared
            .queued
            .fetch_sub(batch.bytes as u64, Ordering::AcqRel);
        batch.lines.clear();
        batch.bytes = 0;
        batch.now = false;
        for done in batch.flushes.drain(..) {
            let _ = done.send(());
        }
    }
    if let Some(mut e) = engine {
        let closed = catch_unwind(AssertUnwindSafe(|| e.close()));
        if let Err(panic) = closed {
            let error = io::Error::other(format!("the sink panicked: {}", message(&*panic)));
            shared.drop_lines(
                Reason::WriteFailed,
                0,
                Some(Error::write(&shared.path, error)),
            );
        }
    }
}

/// The message a panic was raised with, when it is text.
fn message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_is_send_and_sync() {
        fn assert_traits<T: Send + Sync>() {}
        assert_traits::<JsonlWriter>();
    }

    #[tokio::test]
    async fn lines_are_written_in_order_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.jsonl");
        let writer = JsonlWriter::open(&path, Options::default()).await;
        for i in 0..100 {
            writer.append(&serde_json::json!({ "i": i }));
        }
        writer.append_line(Bytes::from_static(b"{\"raw\":true}\n"));
        let report = writer.close().await;
        assert!(report.is_complete(), "{report}");
        assert_eq!(report.lines_written, 101);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(report.bytes_on_disk, text.len() as u64);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], r#"{"i":0}"#);
        assert_eq!(lines[99], r#"{"i":99}"#);
        assert_eq!(lines[100], r#"{"raw":true}"#);
    }

    #[tokio::test]
    async fn an_invalid_line_is_dropped_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.jsonl");
        let writer = JsonlWriter::open(&path, Options::default()).await;
        writer.append_line("{}\n{}");
        let mut bad = std::collections::HashMap::new();
        bad.insert(vec![1u8], 1);
        writer.append(&bad);
        writer.append_line("{}");
        let report = writer.close().await;
        assert_eq!((report.lines_written, report.dropped.invalid), (1, 2));
        let first = report.first_error.unwrap().to_string();
        assert!(first.contains("holds a newline at byte 2"), "{first}");
    }
}

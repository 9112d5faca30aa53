//! The asynchronous writer: callers enqueue, one background task writes.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::engine::{Engine, Reason, Shared, WriterReport, check_line, with_serialized};
use crate::error::{Error, ErrorKind};
use crate::options::Options;
use crate::sink::{Sink, open_file};

/// The most bytes of lines handed to the disk in one batch.
const MAX_BATCH: usize = 1024 * 1024;

enum Msg {
    Line(Bytes),
    Flush(oneshot::Sender<()>),
}

/// Appends JSON lines to a file without ever blocking or failing the caller.
///
/// [`append`](JsonlWriter::append) and [`append_line`](JsonlWriter::append_line) only put the line in
/// an in-memory queue and return; one background Tokio task writes the queue to the file in batches.
/// The queue holds at most `max_bytes` of lines: while a slow disk keeps it full, new lines are
/// dropped. Nothing is ever returned as an error: dropped lines, refusals and failures are logged once
/// per kind through `tracing` and counted in the [`WriterReport`] that [`flush`](JsonlWriter::flush) and
/// [`close`](JsonlWriter::close) return.
///
/// Dropping a writer without closing it lets the background task finish the queue on its own (as
/// long as the runtime keeps running); `close` waits for that and returns the report.
#[derive(Debug)]
pub struct JsonlWriter {
    shared: Arc<Shared>,
    tx: Option<mpsc::UnboundedSender<Msg>>,
    task: Option<JoinHandle<()>>,
}

impl JsonlWriter {
    /// Opens `path` for appending and starts the background writer.
    ///
    /// Never fails: a file that is refused (a symbolic link, a file owned by another user, one whose
    /// mode cannot be set, a missing folder) gets no line, and the refusal is logged once and named in
    /// the report.
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime.
    pub async fn open(path: impl AsRef<Path>, options: Options) -> Self {
        let path = path.as_ref().to_owned();
        let shared = Arc::new(Shared::new(path.clone(), options.max_bytes));
        let engine = {
            let shared = shared.clone();
            tokio::task::spawn_blocking(move || {
                open_file(&path, &options)
                    .map(|sink| Engine::new(Box::new(sink), shared, options.fsync))
            })
            .await
        };
        match engine {
            Ok(Ok(engine)) => Self::start(shared, engine),
            Ok(Err(error)) => Self::refused(shared, error),
            Err(join) => {
                let error = Error::open(&shared.path, io::Error::other(join.to_string()));
                Self::refused(shared, error)
            }
        }
    }

    /// Starts a writer that writes to `sink` instead of a file it opens itself; `name` stands for the
    /// destination in messages and the report.
    ///
    /// The cap, the queue, the `fsync` policy and the report work as with [`open`](JsonlWriter::open);
    /// `mode` and `create_dirs` are the sink's business.
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime.
    pub async fn with_sink(name: impl Into<PathBuf>, sink: impl Sink, options: Options) -> Self {
        let shared = Arc::new(Shared::new(name.into(), options.max_bytes));
        let engine = {
            let shared = shared.clone();
            let sink: Box<dyn Sink> = Box::new(sink);
            tokio::task::spawn_blocking(move || Engine::new(sink, shared, options.fsync)).await
        };
        match engine {
            Ok(engine) => Self::start(shared, engine),
            Err(join) => {
                let error = Error::open(&shared.path, io::Error::other(join.to_string()));
                Self::refused(shared, error)
            }
        }
    }

    fn start(shared: Arc<Shared>, engine: Engine) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(engine, rx));
        Self {
            shared,
            tx: Some(tx),
            task: Some(task),
        }
    }

    fn refused(shared: Arc<Shared>, error: Error) -> Self {
        shared.refuse(error);
        Self {
            shared,
            tx: None,
            task: None,
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
        }
    }

    /// Waits until every line queued before this call is written (or dropped), and returns the report.
    pub async fn flush(&self) -> WriterReport {
        if let Some(tx) = &self.tx {
            let (done, wait) = oneshot::channel();
            if tx.send(Msg::Flush(done)).is_ok() {
                let _ = wait.await;
            }
        }
        self.shared.report()
    }

    /// Writes what is queued, `fsync`s unless the policy is [`Fsync::Never`](crate::Fsync::Never), stops
    /// the background task and returns the final report.
    pub async fn close(mut self) -> WriterReport {
        self.tx = None;
        if let Some(task) = self.task.take() {
            let _ = task.await;
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
}

/// The background task: gathers queued lines into batches and writes each on a blocking thread.
async fn run(engine: Engine, mut rx: mpsc::UnboundedReceiver<Msg>) {
    let mut engine = Some(engine);
    let mut batch: Vec<Bytes> = Vec::new();
    let mut flushes: Vec<oneshot::Sender<()>> = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        let mut bytes = 0usize;
        while let Some(msg) = next.take() {
            match msg {
                Msg::Line(line) => {
                    bytes += line.len() + 1;
                    batch.push(line);
                }
                Msg::Flush(done) => {
                    flushes.push(done);
                    break;
                }
            }
            if bytes >= MAX_BATCH {
                break;
            }
            next = rx.try_recv().ok();
        }
        let Some(mut e) = engine.take() else { break };
        let refresh = !flushes.is_empty();
        let lines = std::mem::take(&mut batch);
        let done = tokio::task::spawn_blocking(move || {
            e.write(&lines);
            if refresh {
                e.refresh_len();
            }
            (e, lines)
        })
        .await;
        match done {
            Ok((e, mut lines)) => {
                e.shared().queued.fetch_sub(bytes as u64, Ordering::AcqRel);
                lines.clear();
                batch = lines;
                engine = Some(e);
            }
            // The runtime is shutting down (or the sink panicked): nothing more can be written.
            Err(_) => break,
        }
        for done in flushes.drain(..) {
            let _ = done.send(());
        }
    }
    if let Some(mut e) = engine {
        let _ = tokio::task::spawn_blocking(move || e.close()).await;
    }
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

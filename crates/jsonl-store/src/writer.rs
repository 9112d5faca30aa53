//! The asynchronous writer: callers copy lines into a shared queue, one background thread takes the
//! whole queue at a time and writes it.

use std::any::Any;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::oneshot;

use crate::engine::{Engine, Reason, Shared, WriterReport};
use crate::error::Error;
use crate::options::Options;
use crate::sink::{Sink, open_file};

/// How long the writer thread waits, after the first line of a batch, for more lines to join it. A
/// steady stream of small lines then costs about one wake-up and one `write` per millisecond instead
/// of one per line.
const LINGER: Duration = Duration::from_millis(1);

/// A batch this large is written without lingering (half of `max_bytes` when that is smaller, so a
/// small queue never fills while the thread waits).
const LINGER_BYTES: u64 = 64 * 1024;

/// A queue buffer that grew past this during a burst is given back once its batch is written.
const KEEP_BYTES: usize = 1024 * 1024;

/// The name of the writer thread, as debuggers and `top -H` show it.
const THREAD_NAME: &str = "calltape-writer";

/// Appends JSON lines to a file without ever blocking or failing the caller.
///
/// [`append`](JsonlWriter::append) and [`append_line`](JsonlWriter::append_line) only copy the line
/// into an in-memory queue and return. One background thread per writer (named `calltape-writer`)
/// owns the file: it takes the whole queue at a time, waiting about a millisecond after the first line
/// of a batch for more to join it unless a flush or close is waiting, and writes each batch in as few
/// `write` calls as it can. The caller's runtime never runs any of this work, and a line costs its
/// caller a copy under a lock: no allocation, no wake-up unless the thread sleeps.
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
    /// The queue the writer thread takes lines from; `None` when the file was refused.
    channel: Option<Arc<Channel>>,
    /// Resolves (its sender is dropped) when the writer thread has finished.
    finished: Option<oneshot::Receiver<()>>,
    /// Queued bytes at which an append ends the writer thread's wait instead of letting it linger.
    wake_at: usize,
}

/// The queue between the handle and the writer thread.
#[derive(Debug, Default)]
struct Channel {
    queue: Mutex<Queue>,
    /// Wakes the writer thread while it waits for a first line or lingers.
    ready: Condvar,
}

/// Lines waiting for the writer thread, one after the other, each followed by its newline.
#[derive(Debug, Default)]
struct Queue {
    bytes: Vec<u8>,
    /// Where each line of `bytes` ends, its newline left out.
    ends: Vec<usize>,
    /// Flushes waiting for the lines queued before them.
    flushes: Vec<oneshot::Sender<()>>,
    /// Bytes of lines queued, or taken by the writer thread and not yet written or dropped: what
    /// `max_bytes` bounds.
    held: usize,
    /// The handle is gone: the thread writes what is queued and finishes.
    closed: bool,
    /// The thread has finished: nothing more is taken.
    gone: bool,
    /// The thread waits for a first line.
    idle: bool,
    /// The thread waits for more lines to join a small batch.
    lingering: bool,
}

impl Channel {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
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
    /// size) and then writes until the handle is gone.
    async fn start(
        shared: Arc<Shared>,
        make: impl FnOnce(Arc<Shared>) -> Result<Engine, Error> + Send + 'static,
    ) -> Self {
        let wake_at = LINGER_BYTES.min(shared.max_bytes / 2) as usize;
        let channel = Arc::new(Channel::default());
        let (opened_tx, opened) = oneshot::channel();
        let (finished_tx, finished) = oneshot::channel::<()>();
        let thread_shared = shared.clone();
        let thread_channel = channel.clone();
        // The thread logs where the caller would: to the caller's subscriber, scoped or global.
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let spawned = thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || {
                // Dropped when this thread ends, however it ends: `close` waits for that.
                let _finished = finished_tx;
                let shared = thread_shared;
                let _gone = Gone(&thread_channel, &shared);
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
                            run(engine, &shared, &thread_channel, wake_at);
                        }
                        Err(error) => {
                            let _ = opened_tx.send(Err(error));
                        }
                    }
                });
            });
        if let Err(e) = spawned {
            let error = io::Error::other(format!("cannot start the writer thread: {e}"));
            let error = Error::open(&shared.path, error);
            return Self::refused(shared, error);
        }
        match opened.await {
            Ok(Ok(())) => Self {
                shared,
                channel: Some(channel),
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
            channel: None,
            finished: None,
            wake_at: 0,
        }
    }

    /// Queues `value` as one JSON line and returns at once.
    pub fn append<T: Serialize + ?Sized>(&self, value: &T) {
        self.shared
            .append_value(value, |line| self.append_line(line));
    }

    /// Queues an already serialized line (with or without its newline) and returns at once. A line that
    /// holds a newline of its own is dropped as invalid.
    pub fn append_line(&self, line: impl AsRef<[u8]>) {
        let shared = &*self.shared;
        let Some(line) = shared.admit_line(line.as_ref()) else {
            return;
        };
        let Some(channel) = &self.channel else {
            shared.drop_lines(Reason::Closed, 1, None);
            return;
        };
        let n = line.len() + 1;
        let mut queue = channel.lock();
        if queue.gone {
            drop(queue);
            let reason = shared.stopped().unwrap_or(Reason::Closed);
            shared.drop_lines(reason, 1, None);
            return;
        }
        if (queue.held + n) as u64 > shared.max_bytes {
            drop(queue);
            shared.drop_lines(Reason::QueueFull, 1, None);
            return;
        }
        let before = queue.bytes.len();
        queue.bytes.reserve(n);
        queue.bytes.extend_from_slice(line);
        let end = queue.bytes.len();
        queue.bytes.push(b'\n');
        queue.ends.push(end);
        queue.held += n;
        shared.queued.store(queue.held as u64, Ordering::Release);
        // Only the append that finds the thread waiting for a first line, or that grows a lingering
        // batch past the mark, pays for a wake-up.
        let wake =
            queue.idle || (queue.lingering && before < self.wake_at && before + n >= self.wake_at);
        if wake {
            queue.idle = false;
            queue.lingering = false;
        }
        drop(queue);
        if wake {
            channel.ready.notify_one();
        }
    }

    /// Waits until every line queued before this call is written (or dropped), and returns the report.
    pub async fn flush(&self) -> WriterReport {
        if let Some(channel) = &self.channel {
            let (done, wait) = oneshot::channel();
            let wake = {
                let mut queue = channel.lock();
                // Once the thread is gone nothing answers: `done` is dropped here and the wait ends.
                if !queue.gone {
                    queue.flushes.push(done);
                }
                std::mem::take(&mut queue.idle) | std::mem::take(&mut queue.lingering)
            };
            if wake {
                channel.ready.notify_one();
            }
            let _ = wait.await;
        }
        self.shared.report()
    }

    /// Writes what is queued, `fsync`s unless the policy is [`Fsync::Never`](crate::Fsync::Never), stops
    /// the background thread and returns the final report.
    pub async fn close(mut self) -> WriterReport {
        self.shut();
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

    /// Tells the writer thread that no line will follow: it writes the rest of the queue, without
    /// waiting out its linger, and finishes.
    fn shut(&self) {
        if let Some(channel) = &self.channel {
            channel.lock().closed = true;
            channel.ready.notify_one();
        }
    }
}

impl Drop for JsonlWriter {
    fn drop(&mut self) {
        self.shut();
    }
}

/// Marks the queue's thread gone when it ends, however it ends: later appends are dropped and
/// counted, waiting flushes are answered, and lines it never took are counted as dropped.
struct Gone<'a>(&'a Channel, &'a Shared);

impl Drop for Gone<'_> {
    fn drop(&mut self) {
        let mut queue = self.0.lock();
        queue.gone = true;
        queue.flushes.clear();
        let left = queue.ends.len() as u64;
        queue.bytes = Vec::new();
        queue.ends = Vec::new();
        drop(queue);
        if left > 0 {
            let reason = self.1.stopped().unwrap_or(Reason::Closed);
            self.1.drop_lines(reason, left, None);
        }
    }
}

/// A batch taken from the queue: its lines, and the flushes waiting for them.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    flushes: Vec<oneshot::Sender<()>>,
}

impl Batch {
    /// The batch's lines, each without its newline.
    fn lines(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let line = &self.bytes[start..end];
                start = end + 1;
                line
            })
            .collect()
    }
}

/// The writer thread: takes the whole queue at a time and writes it, until the handle is gone and
/// the queue is empty; then closes the engine (the last `fsync`).
///
/// A sink that panics is caught: the lines it was given count as failed writes, and so does every
/// later line, since a sink left halfway through a write cannot be trusted with the next one.
fn run(engine: Engine, shared: &Shared, channel: &Channel, linger_bytes: usize) {
    let mut engine = Some(engine);
    let mut batch = Batch::default();
    loop {
        let mut queue = channel.lock();
        while queue.ends.is_empty() && queue.flushes.is_empty() && !queue.closed {
            queue.idle = true;
            queue = channel
                .ready
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
        queue.idle = false;
        // Linger: let more lines join a small batch, unless something waits for it. A flush, a close
        // or a growing queue ends the wait early.
        let deadline = Instant::now() + LINGER;
        while queue.flushes.is_empty() && !queue.closed && queue.bytes.len() < linger_bytes {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            queue.lingering = true;
            queue = channel
                .ready
                .wait_timeout(queue, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            queue.lingering = false;
        }
        let last = queue.closed;
        std::mem::swap(&mut queue.bytes, &mut batch.bytes);
        std::mem::swap(&mut queue.ends, &mut batch.ends);
        std::mem::swap(&mut queue.flushes, &mut batch.flushes);
        drop(queue);

        let refresh = !batch.flushes.is_empty();
        match engine.as_mut() {
            Some(e) => {
                let lines = batch.lines();
                let written = catch_unwind(AssertUnwindSafe(|| {
                    e.write(&lines);
                    if refresh {
                        e.refresh_len();
                    }
                }));
                if let Err(panic) = written {
                    let left = lines.len().saturating_sub(e.settled) as u64;
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
            None => shared.drop_lines(Reason::WriteFailed, batch.ends.len() as u64, None),
        }
        {
            let mut queue = channel.lock();
            queue.held -= batch.bytes.len();
            shared.queued.store(queue.held as u64, Ordering::Release);
        }
        for done in batch.flushes.drain(..) {
            let _ = done.send(());
        }
        if batch.bytes.capacity() > KEEP_BYTES {
            batch.bytes = Vec::new();
            batch.ends = Vec::new();
        }
        batch.bytes.clear();
        batch.ends.clear();
        if last {
            break;
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
        writer.append_line(b"{\"raw\":true}\n");
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

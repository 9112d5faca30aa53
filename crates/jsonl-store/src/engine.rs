//! What both writers share: counters, warnings logged once, the report, and the code that moves lines
//! into a sink under the size cap.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::error::{Error, ErrorKind};
use crate::options::Fsync;
use crate::sink::Sink;

/// Why lines were dropped, counted per reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Dropped {
    /// The in-memory queue already held `max_bytes` of lines waiting for a slow disk.
    pub queue_full: u64,
    /// The file had reached `max_bytes` on disk.
    pub size_cap: u64,
    /// Writing failed (a full disk, an I/O error).
    pub write_failed: u64,
    /// The file was refused when the writer opened it (a symbolic link, another owner, …).
    pub refused: u64,
    /// The line could not be serialized, or held a newline of its own.
    pub invalid: u64,
    /// The writer's background thread was gone.
    pub closed: u64,
}

impl Dropped {
    /// All dropped lines, whatever the reason.
    pub fn total(&self) -> u64 {
        self.queue_full
            + self.size_cap
            + self.write_failed
            + self.refused
            + self.invalid
            + self.closed
    }
}

/// What a writer did: returned by `flush` and `close`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WriterReport {
    /// The file written to.
    pub path: PathBuf,
    /// Lines that reached the file.
    pub lines_written: u64,
    /// Lines that did not, by reason.
    pub dropped: Dropped,
    /// The file's size on disk when the report was made, lines of other writers included.
    pub bytes_on_disk: u64,
    /// The first error met: why the file was refused, or the first failed write.
    pub first_error: Option<Error>,
}

impl WriterReport {
    /// Whether every line given to the writer reached the file.
    pub fn is_complete(&self) -> bool {
        self.dropped.total() == 0 && self.first_error.is_none()
    }
}

impl fmt::Display for WriterReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} lines written, {} bytes on disk",
            self.path.display(),
            self.lines_written,
            self.bytes_on_disk
        )?;
        let d = &self.dropped;
        if d.total() > 0 {
            write!(f, ", {} dropped (", d.total())?;
            let mut sep = "";
            for (n, why) in [
                (d.queue_full, "queue full"),
                (d.size_cap, "size cap"),
                (d.write_failed, "write failed"),
                (d.refused, "file refused"),
                (d.invalid, "invalid line"),
                (d.closed, "writer closed"),
            ] {
                if n > 0 {
                    write!(f, "{sep}{n} {why}")?;
                    sep = ", ";
                }
            }
            f.write_str(")")?;
        }
        if let Some(e) = &self.first_error {
            write!(f, "; first error: {e}")?;
        }
        Ok(())
    }
}

/// A reason a line was dropped; each has its own counter and its own once-only warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    QueueFull = 0,
    SizeCap = 1,
    WriteFailed = 2,
    Refused = 3,
    Invalid = 4,
    Closed = 5,
}

const REASONS: usize = 6;

/// State shared by a writer's handle and the code that writes.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) path: PathBuf,
    pub(crate) max_bytes: u64,
    /// Bytes of lines (newlines included) accepted but not yet written or dropped.
    pub(crate) queued: AtomicU64,
    written: AtomicU64,
    bytes_on_disk: AtomicU64,
    dropped: [AtomicU64; REASONS],
    warned: [AtomicBool; REASONS],
    first_error: OnceLock<Error>,
    /// Set once the file reached `max_bytes`: later lines are dropped at once.
    capped: AtomicBool,
    /// Set when the file was refused: nothing is ever written.
    refused: AtomicBool,
}

impl Shared {
    pub(crate) fn new(path: PathBuf, max_bytes: u64) -> Self {
        Self {
            path,
            max_bytes,
            queued: AtomicU64::new(0),
            written: AtomicU64::new(0),
            bytes_on_disk: AtomicU64::new(0),
            dropped: Default::default(),
            warned: Default::default(),
            first_error: OnceLock::new(),
            capped: AtomicBool::new(false),
            refused: AtomicBool::new(false),
        }
    }

    /// Marks the file refused: logs `error` once and keeps it as the first error.
    pub(crate) fn refuse(&self, error: Error) {
        self.refused.store(true, Ordering::Release);
        self.drop_lines(Reason::Refused, 0, Some(error));
    }

    /// The reason a new line is dropped before it is even queued, if there is one.
    pub(crate) fn stopped(&self) -> Option<Reason> {
        if self.refused.load(Ordering::Acquire) {
            Some(Reason::Refused)
        } else if self.capped.load(Ordering::Acquire) {
            Some(Reason::SizeCap)
        } else {
            None
        }
    }

    /// Counts `n` lines dropped for `reason`, logging the reason's warning the first time it happens.
    pub(crate) fn drop_lines(&self, reason: Reason, n: u64, error: Option<Error>) {
        let i = reason as usize;
        self.dropped[i].fetch_add(n, Ordering::Relaxed);
        if let Some(e) = &error {
            let _ = self.first_error.set(e.clone());
        }
        if self.warned[i].swap(true, Ordering::Relaxed) {
            return;
        }
        let path = self.path.display();
        let max = self.max_bytes;
        match (reason, error) {
            (Reason::QueueFull, _) => tracing::warn!(
                kind = "queue_full",
                "{path}: {max} bytes of lines are already waiting for the disk; dropping lines until the \
                 queue drains (this warning is shown once)"
            ),
            (Reason::SizeCap, _) => tracing::warn!(
                kind = "size_cap",
                "{path}: the file reached its {max}-byte cap; later lines are dropped (this warning is \
                 shown once), raise max_bytes or start a new file"
            ),
            (Reason::WriteFailed, e) => tracing::warn!(
                kind = "write_failed",
                "{}; lines are dropped while writing fails (this warning is shown once)",
                display_error(e.as_ref(), &self.path)
            ),
            (Reason::Refused, e) => tracing::warn!(
                kind = "file_refused",
                "{}; no line will be written to it",
                display_error(e.as_ref(), &self.path)
            ),
            (Reason::Invalid, e) => tracing::warn!(
                kind = "invalid_line",
                "{}; the line was dropped (this warning is shown once)",
                display_error(e.as_ref(), &self.path)
            ),
            (Reason::Closed, _) => tracing::warn!(
                kind = "writer_closed",
                "{path}: the writer's background thread is gone; lines are dropped"
            ),
        }
    }

    /// Serializes `value` and hands the line to `append`: a value refused before it is even
    /// serialized, or one that cannot be serialized, is counted as dropped instead.
    /// The line an `append_line` may queue: `line` without its line break, or `None` when the writer
    /// has stopped taking lines or the line holds a newline of its own (either counted as dropped).
    pub(crate) fn admit_line<'a>(&self, line: &'a [u8]) -> Option<&'a [u8]> {
        if let Some(reason) = self.stopped() {
            self.drop_lines(reason, 1, None);
            return None;
        }
        match check_line(&self.path, line) {
            Ok(line) => Some(line),
            Err(error) => {
                self.drop_lines(Reason::Invalid, 1, Some(error));
                None
            }
        }
    }

    pub(crate) fn append_value<T: serde::Serialize + ?Sized>(
        &self,
        value: &T,
        append: impl FnOnce(&[u8]),
    ) {
        if let Some(reason) = self.stopped() {
            self.drop_lines(reason, 1, None);
            return;
        }
        if let Err(e) = with_serialized(value, append) {
            let error = ErrorKind::Serialize {
                path: self.path.clone(),
                message: e.to_string(),
            };
            self.drop_lines(Reason::Invalid, 1, Some(error.into()));
        }
    }

    pub(crate) fn set_bytes_on_disk(&self, n: u64) {
        self.bytes_on_disk.store(n, Ordering::Relaxed);
    }

    pub(crate) fn report(&self) -> WriterReport {
        let d = |r: Reason| self.dropped[r as usize].load(Ordering::Relaxed);
        WriterReport {
            path: self.path.clone(),
            lines_written: self.written.load(Ordering::Relaxed),
            dropped: Dropped {
                queue_full: d(Reason::QueueFull),
                size_cap: d(Reason::SizeCap),
                write_failed: d(Reason::WriteFailed),
                refused: d(Reason::Refused),
                invalid: d(Reason::Invalid),
                closed: d(Reason::Closed),
            },
            bytes_on_disk: self.bytes_on_disk.load(Ordering::Relaxed),
            first_error: self.first_error.get().cloned(),
        }
    }
}

fn display_error(error: Option<&Error>, path: &Path) -> String {
    match error {
        Some(e) => e.to_string(),
        None => format!("{}: failed", path.display()),
    }
}

/// Checks a line given as bytes: strips one trailing newline (`\n` or `\r\n`), and rejects one that
/// still holds a newline, which would make it two lines.
pub(crate) fn check_line<'a>(path: &Path, line: &'a [u8]) -> Result<&'a [u8], Error> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match memchr::memchr(b'\n', line) {
        None => Ok(line),
        Some(at) => Err(ErrorKind::NewlineInLine {
            path: path.to_owned(),
            at,
        }
        .into()),
    }
}

/// Serializes `value` into a per-thread scratch buffer and hands the bytes to `f`: one allocation
/// fewer per line than `serde_json::to_vec`, whose buffer grows while it writes.
pub(crate) fn with_serialized<T: serde::Serialize + ?Sized, R>(
    value: &T,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<R, serde_json::Error> {
    use std::cell::RefCell;
    /// Above this the scratch buffer is given back rather than kept for the next line.
    const KEEP: usize = 64 * 1024;
    thread_local! {
        static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let written = serde_json::to_writer(&mut *buf, value);
            let out = written.map(|()| f(&buf));
            if buf.capacity() > KEEP {
                *buf = Vec::new();
            }
            out
        }
        // A `Serialize` impl that appends while it is being serialized: use a buffer of its own.
        Err(_) => serde_json::to_vec(value).map(|buf| f(&buf)),
    })
}

/// The most bytes gathered for one `write` call.
const CHUNK: usize = 256 * 1024;

/// Moves lines into a sink: reads the destination's size before each write, stops at the cap, counts
/// and reports failures. Runs where blocking is allowed: the asynchronous writer's own thread, or the
/// caller's thread for the synchronous writer.
pub(crate) struct Engine {
    sink: Box<dyn Sink>,
    shared: std::sync::Arc<Shared>,
    fsync: Fsync,
    since_sync: u64,
    buf: Vec<u8>,
    /// How many lines of the current (or last) [`write`](Engine::write) call are written or counted as
    /// dropped: what a caller that catches a panicking sink has left to count.
    pub(crate) settled: usize,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

impl Engine {
    /// Starts writing to `sink`; reads its size, so call it where blocking is allowed.
    pub(crate) fn new(sink: Box<dyn Sink>, shared: std::sync::Arc<Shared>, fsync: Fsync) -> Self {
        let mut engine = Self {
            sink,
            shared,
            fsync,
            since_sync: 0,
            buf: Vec::new(),
            settled: 0,
        };
        engine.refresh_len();
        engine
    }

    /// Writes `lines` (each without its newline) in as few `write` calls as [`CHUNK`] allows.
    pub(crate) fn write<L: AsRef<[u8]>>(&mut self, lines: &[L]) {
        let shared = self.shared.clone();
        let mut i = 0;
        self.settled = 0;
        while i < lines.len() {
            self.settled = i;
            if shared.capped.load(Ordering::Relaxed) {
                shared.drop_lines(Reason::SizeCap, (lines.len() - i) as u64, None);
                break;
            }
            let size = match self.sink.size() {
                Ok(size) => size,
                Err(e) => {
                    // Without the size the cap cannot be kept: count the chunk as failed.
                    let n = self.fill(lines, i, 0).max(i + 1);
                    let err = Error::write(&shared.path, e);
                    shared.drop_lines(Reason::WriteFailed, (n - i) as u64, Some(err));
                    i = n;
                    continue;
                }
            };
            let j = self.fill(lines, i, size);
            if j == i {
                shared.capped.store(true, Ordering::Release);
                shared.set_bytes_on_disk(size);
                continue;
            }
            match self.sink.write_lines(&self.buf) {
                Ok(()) => {
                    let n = (j - i) as u64;
                    shared.written.fetch_add(n, Ordering::Relaxed);
                    shared.set_bytes_on_disk(size + self.buf.len() as u64);
                    self.since_sync += n;
                    self.settled = j;
                    if let Fsync::EveryLines(every) = self.fsync
                        && self.since_sync >= every.max(1)
                    {
                        self.sync();
                    }
                }
                Err(e) => {
                    let err = Error::write(&shared.path, e);
                    shared.drop_lines(Reason::WriteFailed, (j - i) as u64, Some(err));
                }
            }
            i = j;
        }
        self.settled = lines.len();
    }

    /// Gathers lines from `from` into the buffer while they fit both the chunk and the cap (given the
    /// destination's `size`); returns the index of the first line left out.
    fn fill<L: AsRef<[u8]>>(&mut self, lines: &[L], from: usize, size: u64) -> usize {
        self.buf.clear();
        let room = self.shared.max_bytes.saturating_sub(size);
        let mut j = from;
        while let Some(line) = lines.get(j) {
            let line = line.as_ref();
            let need = self.buf.len() + line.len() + 1;
            if need as u64 > room || (!self.buf.is_empty() && need > CHUNK) {
                break;
            }
            self.buf.extend_from_slice(line);
            self.buf.push(b'\n');
            j += 1;
        }
        j
    }

    /// `fsync`s the destination, counting a failure as a write failure.
    pub(crate) fn sync(&mut self) {
        self.since_sync = 0;
        if let Err(e) = self.sink.sync() {
            let err = Error::write(&self.shared.path, e);
            self.shared.drop_lines(Reason::WriteFailed, 0, Some(err));
        }
    }

    /// Reads the destination's size for the report.
    pub(crate) fn refresh_len(&mut self) {
        if let Ok(n) = self.sink.size() {
            self.shared.set_bytes_on_disk(n);
        }
    }

    /// What closing does: a last `fsync` unless the policy is [`Fsync::Never`], and a fresh size.
    pub(crate) fn close(&mut self) {
        if self.fsync != Fsync::Never {
            self.sync();
        }
        self.refresh_len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Mem(Arc<Mutex<Vec<u8>>>);

    impl Sink for Mem {
        fn size(&mut self) -> io::Result<u64> {
            Ok(self.0.lock().unwrap().len() as u64)
        }
        fn write_lines(&mut self, lines: &[u8]) -> io::Result<()> {
            self.0.lock().unwrap().extend_from_slice(lines);
            Ok(())
        }
        fn sync(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn engine(max_bytes: u64) -> (Engine, Mem, Arc<Shared>) {
        let mem = Mem::default();
        let shared = Arc::new(Shared::new("t.jsonl".into(), max_bytes));
        let engine = Engine::new(Box::new(mem.clone()), shared.clone(), Fsync::Never);
        (engine, mem, shared)
    }

    #[test]
    fn lines_get_newlines_and_the_cap_stops_at_a_whole_line() {
        let (mut engine, mem, shared) = engine(10);
        engine.write(&[b"abc".as_slice(), b"def", b"ghi"]);
        assert_eq!(&*mem.0.lock().unwrap(), b"abc\ndef\n");
        let report = shared.report();
        assert_eq!(report.lines_written, 2);
        assert_eq!(report.dropped.size_cap, 1);
        assert_eq!(report.bytes_on_disk, 8);
        assert_eq!(shared.stopped(), Some(Reason::SizeCap));
        engine.write(&[b"x"]);
        assert_eq!(shared.report().dropped.size_cap, 2);
    }

    #[derive(Clone, Default)]
    struct CountSyncs(Arc<Mutex<usize>>);

    impl Sink for CountSyncs {
        fn size(&mut self) -> io::Result<u64> {
            Ok(0)
        }
        fn write_lines(&mut self, _: &[u8]) -> io::Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> io::Result<()> {
            *self.0.lock().unwrap() += 1;
            Ok(())
        }
    }

    #[test]
    fn fsync_policy_table() {
        // (policy, syncs after 7 single-line writes, syncs after close)
        let cases = [
            (Fsync::Never, 0, 0),
            (Fsync::OnClose, 0, 1),
            (Fsync::EveryLines(3), 2, 3),
            (Fsync::EveryLines(0), 7, 8),
        ];
        for (policy, during, after) in cases {
            let sink = CountSyncs::default();
            let shared = Arc::new(Shared::new("s.jsonl".into(), u64::MAX));
            let mut engine = Engine::new(Box::new(sink.clone()), shared, policy);
            for _ in 0..7 {
                engine.write(&[b"{}"]);
            }
            assert_eq!(*sink.0.lock().unwrap(), during, "{policy:?}");
            engine.close();
            assert_eq!(*sink.0.lock().unwrap(), after, "{policy:?}");
        }
    }

    #[test]
    fn large_batches_are_split_into_chunks() {
        let (mut engine, mem, shared) = engine(u64::MAX);
        let line = vec![b'a'; 100_000];
        engine.write(&[&line, &line, &line, &line]);
        assert_eq!(mem.0.lock().unwrap().len(), 4 * 100_001);
        assert_eq!(shared.report().lines_written, 4);
    }

    #[test]
    fn serializing_reuses_a_scratch_buffer_and_survives_reentry() {
        struct Nested;
        impl serde::Serialize for Nested {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                // Serializing while the scratch buffer is in use takes a buffer of its own.
                let inner = with_serialized(&[1, 2], |b| String::from_utf8(b.to_vec()).unwrap());
                s.serialize_str(&inner.unwrap())
            }
        }
        let out = with_serialized(&Nested, |b| b.to_vec()).unwrap();
        assert_eq!(out, br#""[1,2]""#);
        let big = "x".repeat(100_000);
        assert_eq!(with_serialized(&big, <[u8]>::len).unwrap(), 100_002);
        assert_eq!(with_serialized(&7, <[u8]>::to_vec).unwrap(), b"7");
    }

    #[test]
    fn check_line_strips_one_newline_and_rejects_inner_ones() {
        let p = Path::new("t");
        let cases: [(&[u8], Option<&[u8]>); 5] = [
            (b"{}", Some(b"{}")),
            (b"{}\n", Some(b"{}")),
            (b"{}\r\n", Some(b"{}")),
            (b"{}\n\n", None),
            (b"{\n}", None),
        ];
        for (input, want) in cases {
            assert_eq!(check_line(p, input).ok(), want, "{input:?}");
        }
    }

    #[test]
    fn report_display_lists_the_reasons() {
        let shared = Shared::new("c.jsonl".into(), 5);
        shared.drop_lines(Reason::QueueFull, 3, None);
        shared.drop_lines(Reason::SizeCap, 1, None);
        assert_eq!(
            shared.report().to_string(),
            "c.jsonl: 0 lines written, 0 bytes on disk, 4 dropped (3 queue full, 1 size cap)"
        );
    }
}

//! The synchronous writer, for callers without an async runtime.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::engine::{Engine, Reason, Shared, WriterReport};
use crate::options::Options;
use crate::sink::{Sink, open_file};

/// Appends JSON lines to a file from the calling thread, with no runtime and no background task.
///
/// It keeps the promises of [`JsonlWriter`](crate::JsonlWriter) (owner-only file, size cap counted on
/// disk, one `write` per line, nothing returned as an error, each warning logged once, a
/// [`WriterReport`]), except one: [`append`](SyncJsonlWriter::append) writes the line before it
/// returns, so a slow disk slows the caller. It can be shared between threads (`&self` methods).
///
/// Dropping it closes it, as [`close`](SyncJsonlWriter::close) does.
#[derive(Debug)]
pub struct SyncJsonlWriter {
    shared: Arc<Shared>,
    engine: Option<Mutex<Engine>>,
}

impl SyncJsonlWriter {
    /// Opens `path` for appending. Never fails: a refused file is logged once and named in the report,
    /// and gets no line.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Self {
        let path = path.as_ref();
        let shared = Arc::new(Shared::new(path.to_owned(), options.max_bytes));
        match open_file(path, &options) {
            Ok(sink) => {
                let engine = Engine::new(Box::new(sink), shared.clone(), options.fsync);
                Self {
                    shared,
                    engine: Some(Mutex::new(engine)),
                }
            }
            Err(error) => {
                shared.refuse(error);
                Self {
                    shared,
                    engine: None,
                }
            }
        }
    }

    /// Writes to `sink` instead of a file; `name` stands for it in messages and the report.
    pub fn with_sink(name: impl Into<PathBuf>, sink: impl Sink, options: Options) -> Self {
        let shared = Arc::new(Shared::new(name.into(), options.max_bytes));
        let engine = Engine::new(Box::new(sink), shared.clone(), options.fsync);
        Self {
            shared,
            engine: Some(Mutex::new(engine)),
        }
    }

    /// Writes `value` as one JSON line.
    pub fn append<T: Serialize + ?Sized>(&self, value: &T) {
        self.shared
            .append_value(value, |line| self.append_line(line));
    }

    /// Writes an already serialized line (with or without its newline). A line that holds a newline of
    /// its own is dropped as invalid.
    pub fn append_line(&self, line: impl AsRef<[u8]>) {
        let shared = &*self.shared;
        let Some(line) = shared.admit_line(line.as_ref()) else {
            return;
        };
        match &self.engine {
            Some(engine) => engine
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .write(&[line]),
            None => shared.drop_lines(Reason::Refused, 1, None),
        }
    }

    /// Returns the report, with the file's size read afresh. Lines are written as they are appended,
    /// so there is nothing to wait for.
    pub fn flush(&self) -> WriterReport {
        if let Some(engine) = &self.engine {
            engine
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .refresh_len();
        }
        self.shared.report()
    }

    /// `fsync`s unless the policy is [`Fsync::Never`](crate::Fsync::Never), and returns the final
    /// report.
    pub fn close(mut self) -> WriterReport {
        self.finish();
        self.shared.report()
    }

    /// The path (or sink name) written to.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    fn finish(&mut self) {
        if let Some(engine) = self.engine.take() {
            engine
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner)
                .close();
        }
    }
}

impl Drop for SyncJsonlWriter {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_at_once_and_keeps_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let writer = SyncJsonlWriter::open(&path, Options::default().max_bytes(20));
        writer.append(&serde_json::json!({"a": 1}));
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}\n");
        writer.append_line("{\"b\":2}\n");
        writer.append_line("{\"c\":3}");
        let report = writer.close();
        assert_eq!((report.lines_written, report.dropped.size_cap), (2, 1));
        assert_eq!(report.bytes_on_disk, 16);
        crate::sys::assert_owner_only(&path);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn sync_writer_is_send_and_sync() {
        fn assert_traits<T: Send + Sync>() {}
        assert_traits::<SyncJsonlWriter>();
    }
}

//! Where a writer's bytes go: the [`Sink`] trait, and the owner-only file behind it.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::Error;
use crate::options::Options;
use crate::sys::{self, Access};

/// The destination of a writer's lines.
///
/// [`JsonlWriter::open`](crate::JsonlWriter::open) writes to a file through the crate's own sink; a
/// caller can plug in another one with [`JsonlWriter::with_sink`](crate::JsonlWriter::with_sink) (an
/// in-memory buffer, a pipe, or a sink that stalls or fails, to test how a program copes with a slow or
/// full disk). A sink is called from one thread at a time: by [`JsonlWriter`](crate::JsonlWriter) on its
/// own writer thread, never on an async task; by [`SyncJsonlWriter`](crate::SyncJsonlWriter) on the
/// caller's thread.
///
/// ```
/// use std::io;
/// use std::sync::{Arc, Mutex};
///
/// use calltape_jsonl_store::{Options, Sink, SyncJsonlWriter};
///
/// #[derive(Clone, Default)]
/// struct Memory(Arc<Mutex<Vec<u8>>>);
///
/// impl Sink for Memory {
///     fn size(&mut self) -> io::Result<u64> {
///         Ok(self.0.lock().unwrap().len() as u64)
///     }
///     fn write_lines(&mut self, lines: &[u8]) -> io::Result<()> {
///         self.0.lock().unwrap().extend_from_slice(lines);
///         Ok(())
///     }
///     fn sync(&mut self) -> io::Result<()> {
///         Ok(())
///     }
/// }
///
/// let memory = Memory::default();
/// let writer = SyncJsonlWriter::with_sink("memory", memory.clone(), Options::default());
/// writer.append(&[1, 2, 3]);
/// writer.close();
/// assert_eq!(*memory.0.lock().unwrap(), b"[1,2,3]\n");
/// ```
pub trait Sink: Send + 'static {
    /// The size of the destination now, in bytes, including what others wrote to it. The writer reads
    /// it before every write to keep the destination under `max_bytes`.
    fn size(&mut self) -> io::Result<u64>;

    /// Writes `lines`, one or more whole lines each ending in `\n`, in as few `write` calls as the OS
    /// allows (one, for an append-mode file), so that lines of other writers never land inside one.
    fn write_lines(&mut self, lines: &[u8]) -> io::Result<()>;

    /// Puts what was written on stable storage.
    fn sync(&mut self) -> io::Result<()>;
}

impl<S: Sink + ?Sized> Sink for Box<S> {
    fn size(&mut self) -> io::Result<u64> {
        (**self).size()
    }

    fn write_lines(&mut self, lines: &[u8]) -> io::Result<()> {
        (**self).write_lines(lines)
    }

    fn sync(&mut self) -> io::Result<()> {
        (**self).sync()
    }
}

/// An append-mode file that passed [`open_file`]'s checks.
#[derive(Debug)]
pub(crate) struct FileSink {
    file: File,
    /// A named pipe: nothing to measure or sync.
    fifo: bool,
}

impl Sink for FileSink {
    fn size(&mut self) -> io::Result<u64> {
        if self.fifo {
            return Ok(0);
        }
        // The end offset is the size, other processes' lines included; lseek is cheaper than fstat,
        // and moving the offset of an append-mode descriptor changes nothing about where writes go.
        self.file.seek(SeekFrom::End(0))
    }

    fn write_lines(&mut self, lines: &[u8]) -> io::Result<()> {
        // On an append-mode regular file one write(2) puts all of `lines` at the end in one piece; the
        // loop only continues after a short write (a full disk, a pipe), where nothing better exists.
        // On Windows the handle has append access without write access, so each WriteFile goes to
        // the end of the file as one piece on a local volume; a network share makes no such promise.
        self.file.write_all(lines)
    }

    fn sync(&mut self) -> io::Result<()> {
        if self.fifo {
            return Ok(());
        }
        self.file.sync_data()
    }
}

/// Opens `path` for appending under the crate's file rules, or says why it is refused.
///
/// The rules: the path is opened append + create + no-follow (and non-blocking for the open itself, so
/// that a named pipe without a reader is refused rather than waited for), so a symbolic link is refused and a new
/// file is created with `options.mode`; the file must be a regular file (or a named pipe) owned by this
/// process's effective user; and its mode is set to `options.mode` before anything is written, so a
/// file that cannot be made owner-only is never written to. On Windows the file is owner-only
/// through its access list whatever the mode, and only a regular file is taken
/// ([`sys::open_checked`]).
pub(crate) fn open_file(path: &Path, options: &Options) -> Result<FileSink, Error> {
    let mode = options.file_mode();
    if options.create_dirs
        && let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.exists()
    {
        sys::make_dirs(parent).map_err(|e| Error::open(parent, e))?;
    }
    let (file, meta) = sys::open_checked(path, Access::Append, mode, true)?;
    if meta.file_type().is_file() && sys::ends_in_a_cut_line(path, &file, &meta) {
        // A crash left half a line at the end. End it, so that the first line written now stays a
        // line of its own instead of being glued to the fragment.
        (&file)
            .write_all(b"\n")
            .map_err(|e| Error::write(path, e))?;
    }
    Ok(FileSink {
        file,
        fifo: sys::is_fifo(&meta),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn a_new_file_gets_the_mode_and_a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        let mut sink = open_file(&path, &Options::default()).unwrap();
        sink.write_lines(b"{}\n").unwrap();
        assert_eq!(sink.size().unwrap(), 3);
        sys::assert_owner_only(&path);

        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            assert_eq!(path.metadata().unwrap().mode() & 0o777, 0o600);
            let link = dir.path().join("link.jsonl");
            std::os::unix::fs::symlink(&path, &link).unwrap();
            let err = open_file(&link, &Options::default()).unwrap_err();
            assert!(matches!(err.kind(), ErrorKind::Symlink { .. }), "{err}");
        }
    }

    #[test]
    fn create_dirs_makes_an_owner_only_parent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x/y/a.jsonl");
        let err = open_file(&path, &Options::default()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Open { .. }), "{err}");
        open_file(&path, &Options::default().create_dirs(true)).unwrap();
        for folder in ["x", "x/y"] {
            sys::assert_owner_only(&dir.path().join(folder));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let parent = dir.path().join("x/y").metadata().unwrap();
            assert_eq!(parent.mode() & 0o777, 0o700);
        }
    }

    #[test]
    fn a_cut_last_line_is_ended_before_anything_is_appended() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&[u8], &[u8]); 4] = [
            (b"", b"{}\n"),
            (b"{\"a\":1}\n", b"{\"a\":1}\n{}\n"),
            (b"{\"a\":1}\n{\"b\":", b"{\"a\":1}\n{\"b\":\n{}\n"),
            (b"{\"a\":1}", b"{\"a\":1}\n{}\n"),
        ];
        for (i, (before, after)) in cases.into_iter().enumerate() {
            let path = dir.path().join(format!("{i}.jsonl"));
            std::fs::write(&path, before).unwrap();
            let mut sink = open_file(&path, &Options::default()).unwrap();
            sink.write_lines(b"{}\n").unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), after, "{before:?}");
        }
    }

    #[test]
    fn a_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = open_file(dir.path(), &Options::default()).unwrap_err();
        // Opening a folder for writing fails in the OS already.
        assert!(
            matches!(
                err.kind(),
                ErrorKind::Open { .. } | ErrorKind::NotAFile { .. }
            ),
            "{err}"
        );
    }
}

//! Where a writer's bytes go: the [`Sink`] trait, and the owner-only file behind it.

use std::fs::{DirBuilder, File, Metadata, OpenOptions, Permissions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::{
    DirBuilderExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt,
};
use std::path::Path;

use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};

use crate::error::{Error, ErrorKind};
use crate::options::Options;

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
        self.file.write_all(lines)
    }

    fn sync(&mut self) -> io::Result<()> {
        if self.fifo {
            return Ok(());
        }
        self.file.sync_data()
    }
}

/// This process's effective user id: the owner a written file must have.
pub(crate) fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Opens `path` for appending under the crate's file rules, or says why it is refused.
///
/// The rules: the path is opened append + create + no-follow (and non-blocking for the open itself, so
/// that a named pipe without a reader is refused rather than waited for), so a symbolic link is refused and a new
/// file is created with `options.mode`; the file must be a regular file (or a named pipe) owned by this
/// process's effective user; and its mode is set to `options.mode` before anything is written, so a
/// file that cannot be made owner-only is never written to.
pub(crate) fn open_file(path: &Path, options: &Options) -> Result<FileSink, Error> {
    let mode = options.file_mode();
    if options.create_dirs
        && let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.exists()
    {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| Error::open(parent, e))?;
    }
    let (file, meta) = open_checked(
        path,
        OpenOptions::new().append(true).create(true),
        mode,
        true,
    )?;
    let file_type = meta.file_type();
    if file_type.is_file() && ends_in_a_cut_line(path, &meta) {
        // A crash left half a line at the end. End it, so that the first line written now stays a
        // line of its own instead of being glued to the fragment.
        (&file)
            .write_all(b"\n")
            .map_err(|e| Error::write(path, e))?;
    }
    Ok(FileSink {
        file,
        fifo: file_type.is_fifo(),
    })
}

/// Opens `path` with `how` under the crate's file rules, or says why it is refused; every file this
/// crate writes is opened here.
///
/// The open adds no-follow (and non-blocking for the open itself, so that a named pipe without a
/// reader is refused rather than waited for) and `mode` for a new file: a symbolic link is refused.
/// The file must be a regular file (or a named pipe, when `fifo_ok`) owned by this process's
/// effective user, and its mode is set to `mode` through the open descriptor before anything is
/// written, so a file that cannot be made owner-only is never written to. `how` must not truncate:
/// a file is only cut once it passed these checks.
pub(crate) fn open_checked(
    path: &Path,
    how: &mut OpenOptions,
    mode: u32,
    fifo_ok: bool,
) -> Result<(File, Metadata), Error> {
    let file = how
        .mode(mode)
        // O_NONBLOCK only for the open: a named pipe with no reader is refused at once (ENXIO)
        // instead of blocking the open until one comes. It is cleared below.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| open_error(path, e))?;
    let meta = file.metadata().map_err(|e| Error::open(path, e))?;
    let file_type = meta.file_type();
    if !(file_type.is_file() || (fifo_ok && file_type.is_fifo())) {
        return Err(ErrorKind::NotAFile {
            path: path.to_owned(),
        }
        .into());
    }
    own_with_mode(&file, &meta, path, mode)?;
    let flags = fcntl_getfl(&file).map_err(|e| Error::open(path, e.into()))?;
    fcntl_setfl(&file, flags - OFlags::NONBLOCK).map_err(|e| Error::open(path, e.into()))?;
    Ok((file, meta))
}

/// Checks that the open `file` at `path` (whose metadata is `meta`) belongs to this process's
/// effective user, and sets its mode to `mode` when it differs. The mode is changed through the open
/// descriptor, so the file checked is the file changed.
pub(crate) fn own_with_mode(
    file: &File,
    meta: &Metadata,
    path: &Path,
    mode: u32,
) -> Result<(), Error> {
    let euid = euid();
    if meta.uid() != euid {
        return Err(ErrorKind::NotOwner {
            path: path.to_owned(),
            owner: meta.uid(),
            euid,
        }
        .into());
    }
    if meta.mode() & 0o7777 != mode {
        file.set_permissions(Permissions::from_mode(mode))
            .map_err(|e| ErrorKind::SetMode {
                path: path.to_owned(),
                mode,
                source: e.into(),
            })?;
    }
    Ok(())
}

/// The error for a failed no-follow open of `path`: a symbolic link there is named as such (`ELOOP`,
/// or `EEXIST` when the open asked for a new file).
pub(crate) fn open_error(path: &Path, e: io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::ELOOP | libc::EEXIST) if is_symlink(path) => ErrorKind::Symlink {
            path: path.to_owned(),
        }
        .into(),
        Some(libc::ENXIO) => ErrorKind::PipeWithoutReader {
            path: path.to_owned(),
        }
        .into(),
        _ => Error::open(path, e),
    }
}

/// Whether the file checked as `meta` is non-empty and its last byte is not a newline. Read through a
/// second, read-only descriptor (the writer's is write-only), trusted only when it is the same file.
fn ends_in_a_cut_line(path: &Path, meta: &Metadata) -> bool {
    if meta.len() == 0 {
        return false;
    }
    let Ok(reader) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    let Ok(now) = reader.metadata() else {
        return false;
    };
    if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) || now.len() == 0 {
        return false;
    }
    let mut last = [0u8];
    matches!(reader.read_at(&mut last, now.len() - 1), Ok(1)) && last[0] != b'\n'
}

pub(crate) fn is_symlink(path: &Path) -> bool {
    path.symlink_metadata()
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_gets_the_mode_and_a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        let mut sink = open_file(&path, &Options::default()).unwrap();
        sink.write_lines(b"{}\n").unwrap();
        assert_eq!(sink.size().unwrap(), 3);
        assert_eq!(path.metadata().unwrap().mode() & 0o777, 0o600);

        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let err = open_file(&link, &Options::default()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Symlink { .. }), "{err}");
    }

    #[test]
    fn create_dirs_makes_an_owner_only_parent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x/y/a.jsonl");
        let err = open_file(&path, &Options::default()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Open { .. }), "{err}");
        open_file(&path, &Options::default().create_dirs(true)).unwrap();
        let parent = dir.path().join("x/y").metadata().unwrap();
        assert_eq!(parent.mode() & 0o777, 0o700);
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

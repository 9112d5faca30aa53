//! The crate's one error type.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An error from opening, writing, rewriting or reading a JSONL file.
///
/// Its [`kind`](Error::kind) says what went wrong; its message names the file (and, for a reader, the
/// line and column) and what to do about it. `Error` is cheap to clone, so a [`WriterReport`] can hold
/// the first one a writer met.
///
/// [`WriterReport`]: crate::WriterReport
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct Error {
    kind: Box<ErrorKind>,
}

/// What went wrong, with the details a caller may want to act on.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The path is a symbolic link; the crate never follows one.
    #[error(
        "{}: is a symbolic link; refusing to follow it, give the path of the real file or folder instead",
        path.display()
    )]
    Symlink {
        /// The path that was refused.
        path: PathBuf,
    },
    /// The file belongs to another user, so this process may not make it owner-only.
    #[error(
        "{}: owned by {owner}, not by this process's {user}; refusing to write a file another user \
         controls, remove it or choose another path",
        path.display()
    )]
    NotOwner {
        /// The file that was refused.
        path: PathBuf,
        /// Its owner: `uid 1000` on Unix, `SID S-1-5-21-…` on Windows.
        owner: String,
        /// The user this process runs as, in the same form: its effective user id on Unix, its
        /// token's user SID on Windows.
        user: String,
    },
    /// The path is neither a regular file nor a named pipe.
    #[error("{}: is not a regular file; choose a path to a regular file", path.display())]
    NotAFile {
        /// The path that was refused.
        path: PathBuf,
    },
    /// The file is larger than the reader takes.
    #[error("{}: is larger than {max} bytes, more than is read of it; leave it out", path.display())]
    TooLarge {
        /// The file that was refused.
        path: PathBuf,
        /// The most bytes the reader takes.
        max: u64,
    },
    /// A path meant to name a file inside a folder leaves it, or names the folder itself (an
    /// absolute path, `..`, `.` or nothing).
    #[error("{}: is not a path inside {}; give a relative path of plain names", path.display(), folder.display())]
    OutsideFolder {
        /// The path that was refused.
        path: PathBuf,
        /// The folder it was meant to be inside.
        folder: PathBuf,
    },
    /// The path is not a folder, where [`fs`](crate::fs) wants one.
    #[error("{}: is not a folder; remove it or choose another path", path.display())]
    NotAFolder {
        /// The path that was refused.
        path: PathBuf,
    },
    /// A folder could not be created.
    #[error("{}: cannot create the folder: {source}", path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: Arc<io::Error>,
    },
    /// The path is a named pipe that no process is reading; writers do not wait for one.
    #[error(
        "{}: is a named pipe with no reader; start the reading process before the writer",
        path.display()
    )]
    PipeWithoutReader {
        /// The pipe that was refused.
        path: PathBuf,
    },
    /// The file's mode could not be set (a read-only mount, for instance), so it is not written to.
    /// On Windows: its access list could not be made owner-only.
    #[cfg_attr(
        not(windows),
        error("{}: cannot set mode {mode:04o}: {source}; the file was left untouched", path.display())
    )]
    #[cfg_attr(
        windows,
        error(
            "{}: cannot make it owner-only (an access list for this user alone): {source}; the file was \
             left untouched",
            path.display()
        )
    )]
    SetMode {
        /// The file that was refused.
        path: PathBuf,
        /// The mode it should have had (on Windows, the Unix mode the call stands for; the file gets
        /// an owner-only access list whatever it is).
        mode: u32,
        /// Why it could not be set.
        #[source]
        source: Arc<io::Error>,
    },
    /// The file or its folder could not be opened or created.
    #[error("{}: cannot open: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Arc<io::Error>,
    },
    /// Writing, syncing or measuring the file failed.
    #[error("{}: write failed: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why, such as "No space left on device".
        #[source]
        source: Arc<io::Error>,
    },
    /// Reading the file failed.
    #[error("{}: read failed: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Arc<io::Error>,
    },
    /// A line could not be turned into the caller's type.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line number, from 1.
        line: usize,
        /// The column in that line, from 1.
        column: usize,
        /// What was wrong, as the JSON parser words it.
        message: String,
    },
    /// The last line has no newline and is not complete JSON: what a crash in the middle of a write
    /// leaves. Every complete line before it was read; the tail can be ignored or cut off.
    #[error(
        "{}:{line}: the last line is cut short ({len} bytes, no newline: {message}), as a crash mid-write \
         leaves it; every line before it was read",
        path.display()
    )]
    TruncatedTail {
        /// The file.
        path: PathBuf,
        /// The number of the cut line, from 1.
        line: usize,
        /// How many bytes of it are in the file.
        len: usize,
        /// What the parser said about it.
        message: String,
    },
    /// A line is longer than the reader's `max_line`; it was skipped without being held in memory.
    #[error(
        "{}:{line}: line is longer than the {max_line}-byte limit; it was skipped, raise max_line to read it",
        path.display()
    )]
    LineTooLong {
        /// The file.
        path: PathBuf,
        /// The line number, from 1.
        line: usize,
        /// The limit it crossed.
        max_line: usize,
    },
    /// A value could not be serialized as JSON.
    #[error("cannot serialize a line for {}: {message}", path.display())]
    Serialize {
        /// The file it was meant for.
        path: PathBuf,
        /// What serde_json said.
        message: String,
    },
    /// A line given to be written holds a newline of its own, so it would become two lines.
    #[error(
        "{}: a line holds a newline at byte {at}; give one JSON value per line, serialized without newlines",
        path.display()
    )]
    NewlineInLine {
        /// The file it was meant for.
        path: PathBuf,
        /// The offset of the newline in the line.
        at: usize,
    },
    /// An atomic rewrite failed at one of its steps; the old file is unchanged.
    #[error("{}: rewrite failed while {step}: {source}; the old file is unchanged", path.display())]
    Rewrite {
        /// The file being replaced.
        path: PathBuf,
        /// The step, such as "renaming the temporary file into place".
        step: &'static str,
        /// Why.
        #[source]
        source: Arc<io::Error>,
    },
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Whether this is a [`ErrorKind::TruncatedTail`]: the recoverable mark a crash leaves, not
    /// corruption.
    pub fn is_truncated_tail(&self) -> bool {
        matches!(*self.kind, ErrorKind::TruncatedTail { .. })
    }

    /// The underlying OS error, when there is one (`ENOSPC`, `EIO`, `EROFS`, …).
    pub fn io_error(&self) -> Option<&io::Error> {
        match &*self.kind {
            ErrorKind::SetMode { source, .. }
            | ErrorKind::Open { source, .. }
            | ErrorKind::CreateDir { source, .. }
            | ErrorKind::Write { source, .. }
            | ErrorKind::Read { source, .. }
            | ErrorKind::Rewrite { source, .. } => Some(source),
            _ => None,
        }
    }

    pub(crate) fn open(path: &Path, source: io::Error) -> Self {
        ErrorKind::Open {
            path: path.to_owned(),
            source: Arc::new(source),
        }
        .into()
    }

    pub(crate) fn create_dir(path: &Path, source: io::Error) -> Self {
        ErrorKind::CreateDir {
            path: path.to_owned(),
            source: Arc::new(source),
        }
        .into()
    }

    pub(crate) fn write(path: &Path, source: io::Error) -> Self {
        ErrorKind::Write {
            path: path.to_owned(),
            source: Arc::new(source),
        }
        .into()
    }

    pub(crate) fn read(path: &Path, source: io::Error) -> Self {
        ErrorKind::Read {
            path: path.to_owned(),
            source: Arc::new(source),
        }
        .into()
    }

    pub(crate) fn rewrite(path: &Path, step: &'static str, source: io::Error) -> Self {
        ErrorKind::Rewrite {
            path: path.to_owned(),
            step,
            source: Arc::new(source),
        }
        .into()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self {
            kind: Box::new(kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn messages_name_the_file_and_say_what_to_do() {
        let cases: Vec<(Error, &str)> = vec![
            (
                ErrorKind::Symlink {
                    path: "a/calls.jsonl".into(),
                }
                .into(),
                "a/calls.jsonl: is a symbolic link; refusing to follow it, give the path of the real file or folder instead",
            ),
            (
                ErrorKind::Parse {
                    path: "calls.jsonl".into(),
                    line: 17,
                    column: 42,
                    message: "unknown field `anwser`".into(),
                }
                .into(),
                "calls.jsonl:17:42: unknown field `anwser`",
            ),
            (
                ErrorKind::NotOwner {
                    path: "theirs.jsonl".into(),
                    owner: "uid 65534".into(),
                    user: "uid 1000".into(),
                }
                .into(),
                "theirs.jsonl: owned by uid 65534, not by this process's uid 1000; refusing to write a file \
                 another user controls, remove it or choose another path",
            ),
            (
                Error::write(
                    Path::new("x.jsonl"),
                    io::Error::from_raw_os_error(libc::ENOSPC),
                ),
                "x.jsonl: write failed: No space left on device (os error 28)",
            ),
        ];
        for (error, want) in cases {
            assert_eq!(error.to_string(), want);
            assert!(!error.to_string().ends_with('.'));
        }
    }

    #[test]
    #[cfg(unix)]
    fn truncated_tail_is_recognisable_and_errors_keep_their_os_error() {
        let tail: Error = ErrorKind::TruncatedTail {
            path: "c.jsonl".into(),
            line: 3,
            len: 10,
            message: "EOF while parsing an object".into(),
        }
        .into();
        assert!(tail.is_truncated_tail());
        let eio = Error::write(Path::new("c"), io::Error::from_raw_os_error(libc::EIO));
        assert!(!eio.is_truncated_tail());
        assert_eq!(
            eio.io_error().and_then(io::Error::raw_os_error),
            Some(libc::EIO)
        );
    }

    #[test]
    fn error_is_small_send_sync_and_clone() {
        fn assert_traits<T: Send + Sync + Clone + 'static>() {}
        assert_traits::<Error>();
        assert_eq!(size_of::<Error>(), size_of::<usize>());
    }
}

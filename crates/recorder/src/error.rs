//! The crate's one error type.

use std::io;
use std::path::{Path, PathBuf};

/// An error from reading, writing or checking a call recording or a cassette.
///
/// Its [`kind`](Error::kind) says what went wrong; the message names the file (and for a reader the line)
/// and what to do about it.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error {
    kind: Box<ErrorKind>,
}

/// What went wrong, with the details a caller may want to act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file or folder could not be read, written or renamed.
    #[error("{}: {action}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What was being done ("cannot read", "cannot write", …).
        action: &'static str,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
    /// A cassette line is not valid JSON or does not have the shape of a cassette record.
    #[error("{}:{line}: {message}; fix the line or re-record the cassette", path.display())]
    Parse {
        /// The cassette.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What was wrong with the line, naming the field when one is at fault.
        message: String,
    },
    /// The cassette was written by a newer or unknown format version.
    #[error(
        "{}: cassette format version {found} is not supported (this build reads version 1); \
         re-record it or upgrade calltape",
        path.display()
    )]
    Version {
        /// The cassette.
        path: PathBuf,
        /// The version found in its meta line.
        found: u64,
    },
    /// A sidecar blob holds a known credential or a provider token, so nothing of its interaction
    /// was stored.
    #[error(
        "{}: the {side} body of {interaction} holds {what} at byte {offset}; nothing of this \
         interaction was stored. Keep the credential out of that body and record again",
        path.display()
    )]
    SecretInBlob {
        /// The cassette.
        path: PathBuf,
        /// The interaction: method, upstream, path and sequence number.
        interaction: String,
        /// `request` or `response`.
        side: &'static str,
        /// What was found (`the value of authorization`, `a github-pat token`), never the value.
        what: String,
        /// The 0-based byte offset in the blob.
        offset: usize,
    },
    /// A line of an interaction still holds a provider token or the value of a known credential
    /// after redaction, so the final gate refused it and nothing of the interaction was stored.
    #[error(
        "{}: the {record} record of {interaction} holds {what} at byte {column}; nothing of this \
         interaction was stored. Redact that field (add its name to the redaction names) or keep \
         the credential out of it, and record again",
        path.display()
    )]
    SecretInLine {
        /// The cassette (or the file being scanned).
        path: PathBuf,
        /// The interaction: method, upstream, path and sequence number.
        interaction: String,
        /// The record type of that line (`req`, `res`, `ev`, …).
        record: String,
        /// What was found (`the value of OPENAI_API_KEY`, `a github-pat token`), never the value.
        what: String,
        /// The 0-based byte offset of what was found in the line.
        column: usize,
    },
    /// A file given to [`scan`](crate::scan::scan) is not one it can scan.
    #[error(
        "{}: cannot scan it: {reason}; give call recordings, cassettes or folders that hold them",
        path.display()
    )]
    NotScannable {
        /// The file.
        path: PathBuf,
        /// Why, as a clause ("it is empty").
        reason: String,
    },
    /// A blob reference points outside the cassette's sidecar folder.
    #[error(
        "{}:{line}: blob reference {reference:?} is not a file inside the cassette's .blobs folder; \
         refusing to follow it",
        path.display()
    )]
    BlobPath {
        /// The cassette.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// The reference as written.
        reference: String,
    },
    /// One recording of a file being imported could not be; the file's other recordings were.
    #[cfg(feature = "http")]
    #[error(
        "{}: {recording} was not imported: {reason}; the file's other recordings were",
        path.display()
    )]
    NotImported {
        /// The file of recordings.
        path: PathBuf,
        /// The recording: its place in the file, and its request when it has one.
        recording: String,
        /// Why it could not be imported.
        reason: String,
    },
    /// A file given to [`remove_cassette`](crate::http::remove_cassette) is not a cassette, so it
    /// was not deleted.
    #[cfg(feature = "http")]
    #[error(
        "{} is not a cassette (its first line is not a cassette meta record); refusing to delete it",
        path.display()
    )]
    NotACassette {
        /// The file.
        path: PathBuf,
    },
    /// A folder given to [`import_mastra_dir`](crate::http::import_mastra_dir) holds no file to
    /// import.
    #[cfg(feature = "http")]
    #[error("{} holds no *.json recordings to import", dir.display())]
    NothingToImport {
        /// The folder.
        dir: PathBuf,
    },
    /// A dot-path glob is malformed.
    #[error(
        "invalid glob {glob:?}: {reason}; write a dot path where * is part of one key, ** any \
         number of keys and [NAME] a list item, such as messages.**.ts or tools[*].description"
    )]
    Glob {
        /// The glob as given.
        glob: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The redaction configuration (names to redact or keep) was refused.
    #[error("invalid redaction configuration: {0}")]
    Redaction(#[source] calltape_redact::Error),
    /// A cassette file could not be replaced.
    #[error(transparent)]
    Store(calltape_jsonl_store::Error),
    /// A call recording holds lines that are not valid call records.
    #[cfg(feature = "mcp")]
    #[error("{}", crate::mcp::describe_problems(path, problems, *total))]
    InvalidRecording {
        /// The recording.
        path: PathBuf,
        /// The first bad lines (at most [`MAX_PROBLEMS`](crate::mcp::MAX_PROBLEMS)), each with why.
        problems: Vec<crate::mcp::LineProblem>,
        /// How many lines are bad in all.
        total: usize,
    },
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Whether the error refused an interaction because a line or a sidecar blob of it still held a
    /// credential ([`ErrorKind::SecretInLine`], [`ErrorKind::SecretInBlob`]): nothing of it was
    /// written, and a caller that keeps interactions to write again must drop it.
    pub fn is_refusal(&self) -> bool {
        matches!(
            &*self.kind,
            ErrorKind::SecretInLine { .. } | ErrorKind::SecretInBlob { .. }
        )
    }

    /// Whether the error is a file that does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(&*self.kind, ErrorKind::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    pub(crate) fn io(path: &Path, action: &'static str, source: io::Error) -> Self {
        ErrorKind::Io {
            path: path.to_path_buf(),
            action,
            source,
        }
        .into()
    }

    #[cfg(feature = "http")]
    pub(crate) fn parse(path: &Path, line: usize, message: impl Into<String>) -> Self {
        ErrorKind::Parse {
            path: path.to_path_buf(),
            line,
            message: message.into(),
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

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

//! The crate's one error type.

use std::{io, path::PathBuf};

/// An error from signing in, refreshing a token, or reading and writing the token store.
///
/// Its [`kind`](Error::kind) says what went wrong; the message says what to do about it. No message
/// holds a token, a client secret or an authorization code.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error {
    kind: Box<ErrorKind>,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file or folder of the token store could not be read, written or locked.
    #[error("{}: {action}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What was being done ("cannot read", "cannot lock", …).
        action: &'static str,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
    /// A stored entry is not what this build reads (damaged, or written by a newer format).
    #[error("{}: {message}; run `calltape auth logout` for that server and sign in again", path.display())]
    Store {
        /// The entry's file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// No home for the token store: none of `CALLTAPE_HOME`, `XDG_STATE_HOME` or `HOME` is set (nor,
    /// on Windows, `LOCALAPPDATA`).
    #[error(
        "cannot find a home for the token store: set CALLTAPE_HOME (or XDG_STATE_HOME or HOME)"
    )]
    NoHome,
    /// The server, its metadata or the authorization server did not allow a sign-in.
    #[error("{0}")]
    SignIn(String),
    /// A configuration value is not usable (a URL, a client ID, a secret file).
    #[error("{0}")]
    Config(String),
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    pub(crate) fn io(path: impl Into<PathBuf>, action: &'static str, source: io::Error) -> Self {
        ErrorKind::Io {
            path: path.into(),
            action,
            source,
        }
        .into()
    }

    pub(crate) fn store(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        ErrorKind::Store {
            path: path.into(),
            message: message.into(),
        }
        .into()
    }

    pub(crate) fn sign_in(message: impl Into<String>) -> Self {
        ErrorKind::SignIn(message.into()).into()
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        ErrorKind::Config(message.into()).into()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self {
            kind: Box::new(kind),
        }
    }
}

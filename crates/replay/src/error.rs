//! The crate's one error type.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

/// An error from configuring, starting or stopping the proxy.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error {
    kind: Box<ErrorKind>,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The listen address could not be bound.
    #[error(
        "cannot listen on {addr}: {source}; choose another address or port (port 0 picks a free one)"
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The listen address is not a loopback address.
    #[error("refusing to listen on {0}: the proxy serves loopback only; use 127.0.0.1 or [::1]")]
    NotLoopback(SocketAddr),
    /// An upstream was misconfigured.
    #[error("upstream {name:?}: {reason}")]
    Upstream {
        /// The upstream's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The configuration is incomplete or contradictory.
    #[error("{0}")]
    Config(String),
    /// A cassette could not be read or written.
    #[error(transparent)]
    Cassette(#[from] calltape_recorder::Error),
    /// The HTTP client for upstream requests could not be built.
    #[error("cannot build the upstream HTTP client: {0}")]
    Client(String),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// An `--ignore` glob of an MCP replay is malformed.
    #[error(
        "invalid --ignore glob {glob:?}: {reason}; write dot paths where * is one key and ** any number, \
         such as **.quotedAt"
    )]
    IgnoreGlob {
        /// The glob as given.
        glob: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A recording could not be rewritten.
    #[error(transparent)]
    Store(calltape_jsonl_store::Error),
    /// The MCP server under replay could not be started, or stopped answering.
    #[error("{upstream}: {reason}")]
    ReplayUpstream {
        /// The server, as its upstream describes itself.
        upstream: String,
        /// Which call (or the handshake) and what happened.
        reason: String,
    },
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self {
            kind: Box::new(kind),
        }
    }
}

impl From<calltape_recorder::Error> for Error {
    fn from(e: calltape_recorder::Error) -> Self {
        ErrorKind::Cassette(e).into()
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

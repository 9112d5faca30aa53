//! The crate's one error type.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

/// An error from replaying a call recording, or from configuring, starting or stopping the proxy.
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
    Client(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The operating system gave no random bytes for the proxy's path prefix.
    #[cfg(feature = "http")]
    #[error("cannot draw a random path prefix from the operating system: {0}")]
    Random(#[source] getrandom::Error),
    /// Saving the cassettes at shutdown panicked.
    #[error("saving cassettes panicked: {0}")]
    SavePanicked(#[source] tokio::task::JoinError),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A glob of answer paths to ignore in an MCP replay is malformed.
    #[error("cannot ignore answer paths: {0}")]
    IgnoreGlob(#[source] calltape_recorder::Error),
    /// A recording could not be rewritten.
    #[error(transparent)]
    Store(calltape_jsonl_store::Error),
    /// A fill is not written `NAME=env:VAR` or `NAME=file:PATH`. The message names the field, never
    /// what came after it, since that may be the very value that must stay off a command line.
    #[error(
        "a fill{} is written NAME=env:VAR or NAME=file:PATH: the value comes from an environment \
         variable or a file, never from the text of the fill itself",
        name.as_deref().map(|n| format!(" for `{n}`")).unwrap_or_default()
    )]
    FillSpec {
        /// The field name, when the fill had one.
        name: Option<String>,
    },
    /// A fill's environment variable is not set, or not UTF-8.
    #[error(
        "cannot fill `{name}`: the environment variable {var} is not set (or not UTF-8); set it to \
         the value to send"
    )]
    FillEnv {
        /// The field name.
        name: String,
        /// The environment variable.
        var: String,
    },
    /// A fill's file could not be read, or is not UTF-8.
    #[error("cannot fill `{name}`: cannot read {}: {source}; put the value to send in that file", path.display())]
    FillFile {
        /// The field name.
        name: String,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A fill's value is empty.
    #[error("cannot fill `{name}`: {from} is empty; give the value to send")]
    FillEmpty {
        /// The field name.
        name: String,
        /// Where the value was looked for (`the environment variable CARD`, `the file …`).
        from: String,
    },
    /// A mask is neither a preset's name nor a regular expression that compiles.
    #[error(
        "cannot compile the mask `{mask}` (a regular expression in the regex crate's syntax, or a \
         preset: timestamp, uuid): {reason}"
    )]
    Mask {
        /// The mask as given.
        mask: String,
        /// The regular expression compiler's message.
        reason: String,
    },
    /// A rule's glob on call names or URIs does not compile.
    #[error(
        "cannot match calls by `{glob}`: {reason}; write a glob on a tool's or a prompt's name or a \
         resource's URI, e.g. get_file_info, get_*, file:///tmp/*"
    )]
    CallName {
        /// The glob as given.
        glob: String,
        /// Why it does not compile.
        reason: String,
    },
    /// A setting in a configuration file is wrong: an unknown key, a value of the wrong type, a
    /// value that is not allowed.
    #[error("{}:{line}: {key}: {problem}", path.display())]
    ConfigFile {
        /// The file.
        path: PathBuf,
        /// The line of the setting, from 1.
        line: usize,
        /// The setting's full key, e.g. `replay.ignore`.
        key: String,
        /// What is wrong and what is allowed.
        problem: String,
    },
    /// A configuration file is not valid TOML.
    #[error("{}:{line}: not valid TOML: {reason}", path.display())]
    ConfigSyntax {
        /// The file.
        path: PathBuf,
        /// The line the parser stopped at, from 1.
        line: usize,
        /// The parser's message.
        reason: String,
    },
    /// A setting, from a file or from the caller, that cannot be used; `at` says where it came from.
    #[error("{at}: {source}")]
    Setting {
        /// Where the setting came from: `calltape.toml:4: replay.mask`, or the caller's label.
        at: String,
        /// Why it cannot be used.
        #[source]
        source: Box<Error>,
    },
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

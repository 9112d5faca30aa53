//! The crate's error type and the JSON-RPC error codes the bridge answers with.
//!
//! Bridge failures use codes in -32000…-32019 only: the MCP specification reserves -32020…-32099.
//! Every error the bridge sends carries `data.reason` (a snake_case string) and, where known,
//! `data.upstream` (`{ "status": …, "message": … }`).

use std::{io, path::PathBuf};

/// The upstream could not be reached before the client left (`data.reason = "upstream_unreachable"`),
/// or it forgot the session again right after the bridge re-initialized it
/// (`data.reason = "session_expired"`).
pub const UPSTREAM_UNREACHABLE: i64 = -32000;
/// The request was in flight when the upstream exited or the connection dropped; its outcome is unknown
/// and it is never replayed (`data.reason` is `upstream_exited`, `upstream_restarted` (a restart was
/// asked for), `connection_lost`, or `session_ended` (the client left first)).
pub const UPSTREAM_EXITED: i64 = -32001;
/// The hold buffer (messages held while the upstream starts) was full (`data.reason = "buffer_full"`).
pub const BUFFER_FULL: i64 = -32002;
/// The request was held longer than the restart deadline (`data.reason = "restart_deadline"`).
pub const RESTART_DEADLINE: i64 = -32003;
/// The upstream answered with something that is not MCP, such as an HTML error page
/// (`data.reason = "upstream_protocol_error"`, `data.upstream = { status, message }`).
pub const UPSTREAM_PROTOCOL_ERROR: i64 = -32004;
#[cfg(feature = "serve")]
/// `serve` holds as many sessions as it may, so it refused a new one (HTTP 503,
/// `data.reason = "too_many_sessions"`): a session must end or expire first.
pub const TOO_MANY_SESSIONS: i64 = -32005;

/// The most resource URIs one `subscriptions/listen` may name, and the most resources a session
/// subscribes to: as many as a bridge sets up again after a restart.
pub const MAX_SUBSCRIPTIONS: usize = 1024;
#[cfg(feature = "era")]
/// A `subscriptions/listen` named more than [`MAX_SUBSCRIPTIONS`] resources, or a
/// `resources/subscribe` would take a session past that many (`data.reason = "too_many_uris"`,
/// `data.limit`). Nothing of the request reached the upstream: send fewer.
pub const TOO_MANY_URIS: i64 = -32006;

#[cfg(feature = "serve")]
/// The most `subscriptions/listen` streams one session of `serve` holds open at once (a stateless
/// request's session is its POST's exchange).
pub const MAX_LISTENS: usize = 16;
#[cfg(feature = "serve")]
/// A `subscriptions/listen` past the [`MAX_LISTENS`] a session holds open
/// (`data.reason = "too_many_listens"`, `data.limit`): end one (cancel it or close its stream) first.
pub const TOO_MANY_LISTENS: i64 = -32007;

#[cfg(feature = "era")]
/// The most sessions of a handshake-era upstream one link holds at once, its own included: a
/// 2026-07-28 client whose capabilities differ from every open one gets a session of its own (for a
/// child, a process of its own), up to this many.
pub const MAX_CAPABILITY_SESSIONS: usize = 8;
#[cfg(feature = "era")]
/// How long a session opened for other capabilities may go without a request, with nothing in
/// flight, before it is closed (its child process stopped); the next request with its capabilities
/// opens another.
pub const CAPABILITY_SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(300);
#[cfg(feature = "era")]
/// A 2026-07-28 request needed a session of its own for its capabilities while
/// [`MAX_CAPABILITY_SESSIONS`] are open (`data.reason = "too_many_capability_sessions"`,
/// `data.limit`): it was not sent. One closes once it has been idle for
/// [`CAPABILITY_SESSION_IDLE`]; a client that declares the capabilities of an open one shares it.
pub const TOO_MANY_CAPABILITY_SESSIONS: i64 = -32008;

#[cfg(feature = "serve")]
/// The answers to one POST of `serve` (with JSON answers rather than an event stream) came to more
/// than 16 MiB: the answers past that are replaced by this error, with their own ids
/// (`data.reason = "answers_too_large"`, `data.limit` in bytes). Send fewer requests in one batch.
pub const ANSWERS_TOO_LARGE: i64 = -32009;

/// An error from this crate: building a bridge or an upstream, or running a session.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error {
    kind: Box<ErrorKind>,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file was refused or could not be opened under calltape-jsonl-store's file rules (a symbolic
    /// link at its path, another user's file, …); the message names the file.
    #[error(transparent)]
    File(calltape_jsonl_store::Error),
    /// Reading or writing a stream failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A child process could not be started.
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        /// The program that was run.
        program: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The upstream could not be reached; the bridge retries.
    #[error("{upstream} is unreachable: {reason}")]
    Unreachable {
        /// The upstream's description (never a secret).
        upstream: String,
        /// Why.
        reason: String,
    },
    /// A setting was invalid.
    #[error("{0}")]
    Config(String),
    /// Watching files for changes failed.
    #[error("cannot watch {}: {message}", path.display())]
    Watch {
        /// The path that could not be watched.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A shared-server key broke one of the naming rules; nothing was touched.
    #[error("invalid key `{key}`: {rule}")]
    InvalidKey {
        /// The key as given.
        key: String,
        /// The rule it broke.
        rule: &'static str,
    },
    /// A folder, record or socket of a shared server is not safe to trust or to write to.
    #[error("refusing to use {} ({reason}); {hint}", path.display())]
    UnsafePath {
        /// The path that was refused.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
        /// What to do about it.
        hint: &'static str,
    },
    /// A Unix socket path is longer than the platform allows.
    #[error(
        "socket path {} is {len} bytes, over the {max}-byte limit; set CALLTAPE_HOME to a shorter folder or use the loopback HTTP transport",
        path.display()
    )]
    SocketPathTooLong {
        /// The socket path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The platform limit.
        max: usize,
    },
    /// Something already listens on the socket a server was to bind; it is never replaced.
    #[error("a live server already listens on {}; stop it or use another key", path.display())]
    SocketInUse {
        /// The socket path.
        path: PathBuf,
    },
    /// The process at a shared server's endpoint did not prove that it holds the record's secret.
    #[error("the process at {endpoint} did not prove it is the shared server: {reason}")]
    IdentityRefused {
        /// The endpoint that was challenged.
        endpoint: String,
        /// Why the answer was refused.
        reason: String,
    },
    /// A shared server could not be started or did not come up in time.
    #[error("the shared server `{key}` did not start: {reason}")]
    SharedStart {
        /// The key.
        key: String,
        /// Why.
        reason: String,
    },
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Makes an [`ErrorKind::Io`] error.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        ErrorKind::Io {
            context: context.into(),
            source,
        }
        .into()
    }

    /// Makes an [`ErrorKind::Config`] error.
    pub fn config(message: impl Into<String>) -> Self {
        ErrorKind::Config(message.into()).into()
    }

    /// Makes an [`ErrorKind::Unreachable`] error.
    pub fn unreachable(upstream: impl Into<String>, reason: impl Into<String>) -> Self {
        ErrorKind::Unreachable {
            upstream: upstream.into(),
            reason: reason.into(),
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

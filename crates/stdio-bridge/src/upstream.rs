//! Upstreams: where the bridge forwards the client's messages.
//!
//! An [`Upstream`] is a factory for [`Link`]s. The bridge calls [`Upstream::connect`] when it starts and
//! again whenever a link closes, so one value covers the whole session: every restart of a child process,
//! every reconnection to an HTTP endpoint.

use std::{future::Future, pin::Pin};
use tokio::sync::mpsc;

pub(crate) mod child;
#[cfg(any(feature = "http", feature = "serve"))]
pub(crate) mod http;
#[cfg(any(feature = "http", feature = "serve"))]
pub(crate) mod sse;
#[cfg(all(feature = "http", unix))]
pub(crate) mod unix;

pub(crate) use crate::jsonrpc::Frame;
pub use child::{ChildUpstream, SharedWriter, Stderr};
#[cfg(feature = "http")]
pub use http::{
    AuthChallenge, Authorizer, DEFAULT_HTTP_PATH, ExtraHeaders, HttpUpstream, MAX_AUTH_RETRIES,
    error_chain, tls_client_config,
};
#[cfg(all(feature = "http", unix))]
pub use unix::UnixUpstream;

/// A boxed future, so the trait stays object safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Something the bridge can forward client messages to: a child process, a Streamable HTTP endpoint,
/// an HTTP endpoint on a Unix socket (Unix only).
pub trait Upstream: Send + Sync + 'static {
    /// A short description for logs, never containing a secret (no header values).
    fn describe(&self) -> String;
    /// Starts (or restarts) the upstream and returns a live link. Called again after the link closes.
    /// An Err means "not reachable yet": the bridge retries with backoff.
    fn connect(&self) -> BoxFuture<'_, Result<Link, crate::Error>>;

    /// Starts a link that holds a session of its own, beside the one [`connect`](Upstream::connect)'s
    /// links share: for a client the server must see apart (a 2026-07-28 client whose capabilities
    /// differ from the session's). A child process is started once more; an HTTP endpoint is asked for
    /// another session. `None` (the default): the upstream has one session only. Feature `era`: only the
    /// era adapter asks for it.
    #[cfg(feature = "era")]
    fn connect_apart(&self) -> Option<BoxFuture<'_, Result<Link, crate::Error>>> {
        None
    }
}

/// A live connection to an upstream. The upstream implementation owns its tasks; dropping `outgoing`
/// (or calling `close`) ends it.
pub struct Link {
    /// Client → upstream messages, in order. The implementation sends each one (for HTTP: one POST each,
    /// concurrently allowed, but it must send `initialize` and wait for its answer before sending
    /// anything else, and must order requests as received).
    pub outgoing: mpsc::Sender<Frame>,
    /// Upstream → bridge events.
    pub events: mpsc::Receiver<UpstreamEvent>,
    /// Graceful stop: child = close stdin, SIGTERM group after 500 ms, SIGKILL at 1.5 s (Windows: close
    /// stdin, terminate the child's job at 1.5 s);
    /// HTTP = DELETE the session (with the session id and protocol version headers) and stop the GET stream.
    pub close: Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link").finish_non_exhaustive()
    }
}

/// What an upstream reports back.
#[derive(Debug)]
pub enum UpstreamEvent {
    /// A message for the client (answer, notification, or server-to-client request).
    Message(Frame),
    /// HTTP only: a frame that carried a session id was answered 404, or 400 whose body says the session id
    /// is missing/invalid/unknown. The session id is already forgotten. The bridge re-sends the client's
    /// original `initialize` (+ `notifications/initialized`) through `outgoing`, swallows their answers,
    /// sends list_changed notifications, then re-sends `frame` once.
    SessionExpired {
        /// The frame that hit the expired session.
        frame: Frame,
    },
    /// A frame could not be delivered. `maybe_delivered == false` (connection refused, nothing sent): the
    /// bridge holds it and re-sends after reconnecting. `true` (connection dropped after sending): outcome
    /// unknown, never replayed; the bridge answers the client with an error if it was a request.
    Undelivered {
        /// The frame that was not delivered.
        frame: Frame,
        /// Whether the upstream may have received it.
        maybe_delivered: bool,
        /// Why, for logs and the error's `data.upstream.message`.
        reason: String,
    },
    /// The upstream answered with something that is not MCP (e.g. HTTP 500 with HTML, bad JSON):
    /// the bridge answers `frame`'s request (if it is one) with the "upstream protocol error" code,
    /// `data.upstream = {status, message}`.
    ProtocolError {
        /// The frame whose answer was not MCP.
        frame: Frame,
        /// The HTTP status, when there was one.
        status: Option<u16>,
        /// What was wrong, short and without secrets.
        message: String,
    },
    /// The link is gone (child exited, HTTP endpoint refusing connections). The bridge fails in-flight
    /// requests with "upstream exited" (child) or holds unsent ones, then calls `connect` again.
    Closed {
        /// Why, for logs.
        reason: String,
    },
}

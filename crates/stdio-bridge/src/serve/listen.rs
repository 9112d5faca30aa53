//! The server side of MCP's Streamable HTTP transport, on loopback TCP or a Unix socket (hyper, HTTP/1.1).
//!
//! This module holds the server's setup and life: [`ServerBuilder`], the listeners, the accept loop and one
//! connection's service; `routes` checks and routes each request, `post` answers a POST's messages, and
//! `reply` builds the answers.

mod post;
mod reply;
mod routes;
mod stateless;

#[cfg(unix)]
use std::path::Path;
use std::{
    collections::HashMap,
    convert::Infallible,
    future::Future,
    net::SocketAddr,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt, combinators::UnsyncBoxBody};
use hyper_util::rt::{TokioIo, TokioTimer};
#[cfg(unix)]
use tokio::net::UnixListener;
use tokio::{net::TcpListener, sync::Notify, time::Instant};

use super::{
    conn::{Connections, DEFAULT_MAX_CONNECTIONS},
    credential::{Muxes, UpstreamFor},
    endpoint::Endpoint,
    mux::{Mux, SessionNo},
    per_path::{PerPath, UpstreamAt},
};
use crate::vocab::{HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID};
use crate::{
    Error, Protocol, Tap, Upstream,
    shared::ServerKeys,
    tap::{TapSender, TapThread},
};
#[cfg(unix)]
use crate::{ErrorKind, shared::check_socket_len};

/// The MCP protocol versions this server accepts in `MCP-Protocol-Version`.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = crate::vocab::PROTOCOL_VERSIONS;

/// The first protocol version whose requests may come without a session (stateless).
const STATELESS_VERSION: &str = crate::vocab::MODERN_VERSION;

/// How long a connection may take to send a request's headers, by default.
pub(crate) const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How many sessions a server holds at most, by default.
pub(crate) const DEFAULT_MAX_SESSIONS: usize = 1024;

/// The largest request body accepted on `/mcp`.
const MAX_BODY: usize = 16 * 1024 * 1024;
/// The largest body accepted on the identity endpoint.
const MAX_IDENTITY_BODY: usize = 1024;

const SESSION_HEADER: &str = HEADER_SESSION_ID;
const VERSION_HEADER: &str = HEADER_PROTOCOL_VERSION;

type ResBody = UnsyncBoxBody<Bytes, Infallible>;

/// Makes the observer of one session.
type TapFactory = Arc<dyn Fn() -> Box<dyn Tap> + Send + Sync>;

/// Frames queued for a session's tap before further ones are dropped: as many as a stdio bridge's
/// (the queue also holds at most `TAP_QUEUE_BYTES` of them).
const TAP_CAPACITY: usize = crate::DEFAULT_TAP_CAPACITY;

/// Why [`Server::run_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The shutdown future completed (a signal, say).
    Shutdown,
    /// No session was left for the idle period.
    Idle,
    /// A shared server was replaced by one for another command, and its last session ended.
    Replaced,
}

/// The settings of a Streamable HTTP server in front of one upstream (usually a stdio child process),
/// multiplexing any number of MCP sessions onto it: [`listen_tcp`](Self::listen_tcp) or
/// `listen_unix` (Unix only) binds it and gives the [`Server`] that runs.
///
/// The server listens on 127.0.0.1 or on a Unix socket only, refuses any request with an `Origin` header or a
/// `Sec-Fetch-Site` that says another site's page sent it (403, see
/// [`LoopbackGuard`](crate::guard::LoopbackGuard)) or a `Host` that is not a loopback name (421),
/// sends no CORS headers, and, when given a token, answers `/mcp` only to requests that carry it as
/// a bearer token (401), compared in constant time.
pub struct ServerBuilder {
    upstream: Option<Arc<dyn Upstream>>,
    protocol: Protocol,
    token: Option<String>,
    keys: Option<ServerKeys>,
    idle_exit: Option<Duration>,
    session_timeout: Duration,
    json_response: bool,
    tap: Option<TapFactory>,
    header_read_timeout: Duration,
    max_connections: usize,
    max_sessions: usize,
    on_retire: Option<OnRetire>,
    upstream_for: Option<UpstreamFor>,
    per_path: Option<(String, UpstreamAt)>,
}

/// What a shared server lets go of when it is replaced.
type OnRetire = Box<dyn FnOnce() + Send + Sync>;

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("upstream", &self.upstream.as_ref().map(|u| u.describe()))
            .field(
                "per_path",
                &self.per_path.as_ref().map(|(prefix, _)| prefix),
            )
            .field("protocol", &self.protocol)
            .field("token", &self.token.as_ref().map(|_| "[REDACTED]"))
            .field("idle_exit", &self.idle_exit)
            .field("json_response", &self.json_response)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// A server in front of `upstream`, started once and restarted when it exits.
    pub fn new(upstream: impl Upstream) -> Self {
        Self::from_arc(Arc::new(upstream))
    }

    /// A server in front of an upstream that is already shared.
    pub fn from_arc(upstream: Arc<dyn Upstream>) -> Self {
        Self::with_upstream(Some(upstream))
    }

    /// A server with no upstream of its own: MCP is served only at `{prefix}KEY/mcp`, as
    /// [`upstream_per_path`](Self::upstream_per_path) says, and `/mcp` is answered 404 with a
    /// message naming that shape.
    pub fn per_path_only<F, Fut>(prefix: impl Into<String>, upstream_at: F) -> Self
    where
        F: Fn(&str) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Arc<dyn Upstream>, Error>> + Send + 'static,
    {
        Self::with_upstream(None).upstream_per_path(prefix, upstream_at)
    }

    fn with_upstream(upstream: Option<Arc<dyn Upstream>>) -> Self {
        Self {
            upstream,
            protocol: Protocol::Auto,
            token: None,
            keys: None,
            idle_exit: None,
            session_timeout: Duration::from_secs(3600),
            json_response: false,
            tap: None,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_sessions: DEFAULT_MAX_SESSIONS,
            on_retire: None,
            upstream_for: None,
            per_path: None,
        }
    }

    /// Also serves MCP at `{prefix}KEY/mcp` for every KEY that is one non-empty path segment (no
    /// `/`; the KEY is given as the request wrote it, percent escapes and all): the sessions and
    /// stateless requests at a KEY are multiplexed onto an upstream of their own, which
    /// `upstream_at(KEY)` makes when the first request for that KEY arrives (after the loopback and
    /// token checks) and which serves until the server stops. When `upstream_at` fails, the request
    /// is answered 400 with the error's message, and the next one for that KEY tries again.
    ///
    /// `prefix` starts and ends with `/`, e.g. `/_cassette/`. A session belongs to the path it was
    /// initialized at: a request at another path that names it is answered 404 as for an unknown
    /// session. Every rule of the server holds there as at `/mcp`: the loopback guard, the bearer
    /// token, the session and connection limits.
    #[must_use]
    pub fn upstream_per_path<F, Fut>(mut self, prefix: impl Into<String>, upstream_at: F) -> Self
    where
        F: Fn(&str) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Arc<dyn Upstream>, Error>> + Send + 'static,
    {
        let upstream_at: UpstreamAt = Arc::new(move |key: &str| Box::pin(upstream_at(key)));
        self.per_path = Some((prefix.into(), upstream_at));
        self
    }

    /// As a shared server, runs `f` when a session for another command says it replaces this server
    /// (with the token, at [`RETIRE_PATH`](crate::shared::RETIRE_PATH)); from then on it takes no new
    /// session and stops once its last one ends.
    pub(crate) fn on_retire(mut self, f: impl FnOnce() + Send + Sync + 'static) -> Self {
        self.on_retire = Some(Box::new(f));
        self
    }

    /// Holds at most this many sessions (default 1,024), counting each stateless request while it
    /// is answered (a `subscriptions/listen` for as long as its stream is open). An `initialize` or
    /// a stateless request past that is answered with HTTP 503 and a
    /// [`TOO_MANY_SESSIONS`](crate::TOO_MANY_SESSIONS) error, with its id, until one ends.
    #[must_use]
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max;
        self
    }

    /// Closes a connection that has not sent a request's headers within this time (default 10 s),
    /// whether it just opened or kept alive after an answer.
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Holds at most this many connections open (default 256). A connection past that makes room by
    /// closing the oldest one that waits for a request's headers, or is closed itself when every open
    /// one is answering a request.
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// Gives every session an observer of its own, made by `factory` when the session starts (a
    /// stateless 2026-07-28 request's exchange counts as a session of its own): it sees
    /// the session's messages as the session sent and received them (its own ids), on a thread of its
    /// own behind a bounded queue, so a slow observer never slows a session. A recorder plugs in here.
    #[must_use]
    pub fn tap_sessions(
        mut self,
        factory: impl Fn() -> Box<dyn Tap> + Send + Sync + 'static,
    ) -> Self {
        self.tap = Some(Arc::new(factory));
        self
    }

    /// Requires `Authorization: Bearer <token>` on every `/mcp` request.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Passes each client's own `Authorization` header on to the upstream: the sessions (and
    /// stateless requests) that send one go to an upstream that `upstream_for` makes from its value,
    /// one upstream per distinct value, so clients with different credentials never share an
    /// upstream session; the sessions that send none go to the builder's upstream. An upstream made
    /// for a value is stopped (an HTTP upstream ends its session) once no session holds it.
    ///
    /// A session is bound to the value it was initialized with: a request for it that carries
    /// another value, or none, is answered 404 as for an unknown session, which tells a client to
    /// initialize again. A value that is not visible ASCII is refused with 400, as is one for which
    /// `upstream_for` fails.
    ///
    /// The server keeps no copy of the value but in the upstream made for it (its tables hold a
    /// digest), logs none, and never shows it to a [`Tap`], which sees message bodies only. With a
    /// [`bearer_token`](Self::bearer_token) (or as a shared server), `Authorization` is the server's
    /// own token and nothing is passed on.
    #[must_use]
    pub fn client_authorization(
        mut self,
        upstream_for: impl Fn(&str) -> Result<Arc<dyn Upstream>, Error> + Send + Sync + 'static,
    ) -> Self {
        self.upstream_for = Some(Arc::new(upstream_for));
        self
    }

    /// Serves as a shared server: answers identity challenges at
    /// `POST /.well-known/calltape-shared-server` and requires the token derived from the same secret.
    #[must_use]
    pub fn shared_keys(mut self, keys: ServerKeys) -> Self {
        self.token = Some(keys.token().to_owned());
        self.keys = Some(keys);
        self
    }

    /// Stops once no session has had a connection open or sent a request for this long.
    #[must_use]
    pub fn idle_exit(mut self, after: Duration) -> Self {
        self.idle_exit = Some(after);
        self
    }

    /// Forgets a session that has had no connection open and sent nothing for this long (default 1 h).
    #[must_use]
    pub fn session_timeout(mut self, after: Duration) -> Self {
        self.session_timeout = after;
        self
    }

    /// Answers requests with a single JSON body instead of an SSE stream; the messages tied to a request
    /// (progress, server-to-client requests) then go to the session's GET stream. A 2026-07-28
    /// `subscriptions/listen` request, answered by its events, still gets an SSE stream.
    #[must_use]
    pub fn json_response(mut self, on: bool) -> Self {
        self.json_response = on;
        self
    }

    /// The protocol era the upstream speaks (default [`Protocol::Auto`]: found each time it starts).
    ///
    /// The upstream is reached through an [`EraUpstream`](crate::EraUpstream), so sessions of the
    /// handshake era and stateless 2026-07-28 requests share one endpoint whatever the upstream's
    /// era: what the upstream lacks is translated.
    #[must_use]
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Listens on a port of 127.0.0.1 (port 0 picks a free one).
    pub async fn listen_tcp(self, addr: SocketAddr) -> Result<Server, Error> {
        let loopback_v4 =
            matches!(addr, SocketAddr::V4(a) if *a.ip() == std::net::Ipv4Addr::LOCALHOST);
        if !loopback_v4 {
            return Err(Error::config(format!(
                "refusing to listen on {addr}: calltape serve listens on 127.0.0.1 only"
            )));
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| Error::io(format!("cannot listen on {addr}"), e))?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::io("cannot read the listening address", e))?;
        Ok(self.server(
            Listener::Tcp(listener),
            Endpoint::Http(local),
            Some(local.port()),
        ))
    }

    /// Listens on a Unix socket at `path`, owner-only (0600). A stale socket (nothing listening) is
    /// removed first; a live one is never replaced. Unix only.
    #[cfg(unix)]
    pub async fn listen_unix(self, path: &Path) -> Result<Server, Error> {
        check_socket_len(path)?;
        remove_stale_socket(path).await?;
        let listener = bind_private(path)
            .map_err(|e| Error::io(format!("cannot listen on {}", path.display()), e))?;
        let endpoint = Endpoint::Unix(path.to_owned());
        let mut server = self.server(Listener::Unix(listener), endpoint, None);
        server.socket = Some(path.to_owned());
        Ok(server)
    }

    fn server(self, listener: Listener, endpoint: Endpoint, port: Option<u16>) -> Server {
        // The `Authorization` header is the server's own token when it has one: never passed on.
        let upstream_for = self.upstream_for.filter(|_| self.token.is_none());
        let muxes = Muxes::new(self.upstream, self.protocol, upstream_for);
        let protocol = self.protocol;
        let per_path = self
            .per_path
            .map(|(prefix, upstream_at)| PerPath::new(prefix, upstream_at, protocol));
        let inner = Arc::new(Inner {
            muxes,
            per_path,
            token: self.token,
            keys: self.keys,
            endpoint_text: endpoint.to_string(),
            port,
            json_response: self.json_response,
            tap: self.tap,
            sessions: Mutex::new(HashMap::new()),
            stateless: Arc::new(AtomicUsize::new(0)),
            max_sessions: self.max_sessions.max(1),
            on_retire: Mutex::new(self.on_retire),
            retired: AtomicBool::new(false),
            tap_threads: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
            last_activity: Mutex::new(Instant::now()),
            activity: Notify::new(),
        });
        Server {
            listener,
            endpoint,
            inner,
            idle_exit: self.idle_exit,
            session_timeout: self.session_timeout,
            socket: None,
            connections: Connections::new(self.max_connections),
            header_read_timeout: self.header_read_timeout,
        }
    }
}

#[cfg(unix)]
async fn remove_stale_socket(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::FileTypeExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("cannot inspect {}", path.display()), e)),
    };
    if !meta.file_type().is_socket() {
        return Err(ErrorKind::UnsafePath {
            path: path.to_owned(),
            reason: "it exists and is not a socket".into(),
            hint: "remove it or choose another socket path",
        }
        .into());
    }
    match tokio::net::UnixStream::connect(path).await {
        Ok(_) => Err(ErrorKind::SocketInUse {
            path: path.to_owned(),
        }
        .into()),
        Err(_) => {
            tracing::debug!(path = %path.display(), "removing a stale socket");
            std::fs::remove_file(path).map_err(|e| {
                Error::io(
                    format!("cannot remove the stale socket {}", path.display()),
                    e,
                )
            })
        }
    }
}

enum Listener {
    Tcp(TcpListener),
    #[cfg(unix)]
    Unix(UnixListener),
}

/// A bound, listening server (built by a [`ServerBuilder`]); [`run_until`](Server::run_until) serves it.
pub struct Server {
    listener: Listener,
    endpoint: Endpoint,
    inner: Arc<Inner>,
    idle_exit: Option<Duration>,
    session_timeout: Duration,
    socket: Option<PathBuf>,
    connections: Arc<Connections>,
    header_read_timeout: Duration,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Where it listens: `http://127.0.0.1:<port>` or `unix:<path>`.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Serves until `shutdown` completes or, with an idle exit set, no session is left for that long.
    /// Then stops the upstream gracefully and removes its own socket, and returns once every session's
    /// tap ([`ServerBuilder::tap_sessions`]) has seen the frames queued for it.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<StopReason, Error> {
        let Self {
            listener,
            inner,
            idle_exit,
            session_timeout,
            socket,
            connections,
            header_read_timeout,
            ..
        } = self;
        tokio::pin!(shutdown);
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        let reason = loop {
            tokio::select! {
                () = &mut shutdown => break StopReason::Shutdown,
                _ = tick.tick() => {
                    inner.expire_sessions(session_timeout);
                    if let Some(idle) = idle_exit && inner.idle_for() >= idle {
                        break StopReason::Idle;
                    }
                    if inner.retired.load(Ordering::SeqCst)
                        && lock(&inner.sessions).is_empty()
                        && inner.open.load(Ordering::SeqCst) == 0
                    {
                        break StopReason::Replaced;
                    }
                }
                accepted = accept(&listener) => match accepted {
                    Ok(io) => {
                        let Some(admitted) = connections.admit() else {
                            tracing::debug!(
                                "every open connection is answering a request: refusing a new one"
                            );
                            continue;
                        };
                        let inner = Arc::clone(&inner);
                        tokio::spawn(serve_connection(inner, io, admitted, header_read_timeout));
                    }
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
        };
        tracing::debug!("stopping ({reason:?})");
        if let Some(path) = socket {
            let _ = std::fs::remove_file(path);
        }
        inner.muxes.shutdown().await;
        if let Some(per_path) = &inner.per_path {
            per_path.shutdown().await;
        }
        // Every frame of every session reaches its tap before this returns.
        let tap_threads = std::mem::take(&mut *lock(&inner.tap_threads));
        for thread in tap_threads {
            thread.flush().await;
        }
        Ok(reason)
    }
}

/// Serves one connection until it ends, its headers are late, or it must close to make room.
async fn serve_connection(
    inner: Arc<Inner>,
    io: Io,
    admitted: super::conn::Admitted,
    header_read_timeout: Duration,
) {
    let conn = Arc::clone(admitted.conn());
    let for_service = Arc::clone(&conn);
    let service = hyper::service::service_fn(move |req| {
        let inner = Arc::clone(&inner);
        let conn = Arc::clone(&for_service);
        async move {
            let res = inner.handle(req, &conn).await;
            Ok::<_, Infallible>(res.map(|body| conn.busy(body).boxed_unsync()))
        }
    });
    let serving = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .keep_alive(true)
        .serve_connection(io, service);
    tokio::select! {
        result = serving => if let Err(e) = result {
            tracing::trace!("connection ended: {e}");
        },
        () = conn.closing() => tracing::trace!("connection closed by the server"),
    }
    drop(admitted);
}

type Io = TokioIo<Box<dyn IoStream>>;

trait IoStream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> IoStream for T {}

async fn accept(listener: &Listener) -> std::io::Result<Io> {
    match listener {
        Listener::Tcp(l) => {
            let (stream, _) = l.accept().await?;
            let _ = stream.set_nodelay(true);
            Ok(TokioIo::new(Box::new(stream)))
        }
        #[cfg(unix)]
        Listener::Unix(l) => {
            let (stream, _) = l.accept().await?;
            Ok(TokioIo::new(Box::new(stream)))
        }
    }
}

/// A `{prefix}KEY/mcp` endpoint a request came to: its KEY and multiplexer. `/mcp` has none.
struct At {
    key: String,
    mux: Mux,
}

struct SessionEntry {
    no: SessionNo,
    /// The multiplexer the session is on.
    mux: Mux,
    /// The digest of the `Authorization` the session started with, when the client's own is passed
    /// on: its later requests must carry the same.
    credential: Option<[u8; 32]>,
    /// The KEY of the `{prefix}KEY/mcp` path it was initialized at (none at `/mcp`): its later
    /// requests must come there.
    path_key: Option<String>,
    open: AtomicUsize,
    last_seen: Mutex<Instant>,
    tap: Option<TapSender>,
}

struct Inner {
    muxes: Muxes,
    per_path: Option<PerPath>,
    token: Option<String>,
    keys: Option<ServerKeys>,
    endpoint_text: String,
    port: Option<u16>,
    json_response: bool,
    tap: Option<TapFactory>,
    sessions: Mutex<HashMap<String, Arc<SessionEntry>>>,
    /// Stateless requests being answered: each counts as a session while its exchange lasts.
    stateless: Arc<AtomicUsize>,
    max_sessions: usize,
    on_retire: Mutex<Option<OnRetire>>,
    /// Replaced by a server for another command: no new session.
    retired: AtomicBool,
    /// The taps' threads still running, waited for when the server stops.
    tap_threads: Mutex<Vec<TapThread>>,
    /// Connections open across all sessions (GET streams and POSTs waiting for answers).
    open: AtomicUsize,
    last_activity: Mutex<Instant>,
    activity: Notify,
}

/// Counts an open stream for as long as it lives.
struct StreamGuard {
    inner: Arc<Inner>,
    session: Option<Arc<SessionEntry>>,
}

impl StreamGuard {
    fn new(inner: &Arc<Inner>, session: Option<Arc<SessionEntry>>) -> Self {
        inner.open.fetch_add(1, Ordering::SeqCst);
        if let Some(s) = &session {
            s.open.fetch_add(1, Ordering::SeqCst);
        }
        Self {
            inner: Arc::clone(inner),
            session,
        }
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.inner.open.fetch_sub(1, Ordering::SeqCst);
        if let Some(s) = &self.session {
            s.open.fetch_sub(1, Ordering::SeqCst);
            *lock(&s.last_seen) = Instant::now();
        }
        self.inner.touch();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Binds a Unix socket at `path` that is owner-only (0600) from its first instant: the process's umask
/// is narrowed for the bind. A socket's mode could otherwise be set only through its path, which a link
/// planted between the bind and the change could redirect; the umask is process-wide, but while it is
/// narrowed any file another thread creates only comes out stricter.
#[cfg(unix)]
fn bind_private(path: &Path) -> std::io::Result<UnixListener> {
    use rustix::fs::Mode;
    let old = rustix::process::umask(Mode::from_raw_mode(0o177));
    let bound = UnixListener::bind(path);
    rustix::process::umask(old);
    bound
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_hold_by_default() {
        let serve = ServerBuilder::new(crate::ChildUpstream::new(["true"]).unwrap());
        assert_eq!(serve.header_read_timeout, Duration::from_secs(10));
        assert_eq!(serve.max_connections, 256);
        assert_eq!(serve.max_sessions, 1024);
    }
}

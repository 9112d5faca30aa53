//! The server side of MCP's Streamable HTTP transport, on loopback TCP or a Unix socket (hyper, HTTP/1.1).

use std::{
    collections::{HashMap, HashSet},
    convert::Infallible,
    future::Future,
    net::SocketAddr,
    path::{Path, PathBuf},
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, combinators::UnsyncBoxBody};
use hyper::body::{Body, Frame as BodyFrame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Value, json};
use tokio::{
    net::{TcpListener, UnixListener},
    sync::{Notify, mpsc},
    time::Instant,
};

use super::{
    conn::{Conn, Connections, DEFAULT_MAX_CONNECTIONS},
    mux::{Command, Mux, SessionNo},
    stream::Outbox as StreamOutbox,
};
use crate::{
    Direction, Error, ErrorKind, Tap, Upstream,
    guard::LoopbackGuard,
    jsonrpc::{self, id_of, method_of, request_ids, to_frame},
    shared::{
        Endpoint, IDENTITY_PATH, MCP_PATH, Nonce, RETIRE_PATH, ServerKeys, check_socket_len,
        token_matches,
    },
    tap::{TapSender, TapThread},
};

/// The MCP protocol versions this server accepts in `MCP-Protocol-Version`.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The first protocol version whose requests may come without a session (stateless).
const STATELESS_VERSION: &str = "2026-07-28";

/// How long a connection may take to send a request's headers, by default.
pub(crate) const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How many sessions a server holds at most, by default.
pub(crate) const DEFAULT_MAX_SESSIONS: usize = 1024;

/// The largest request body accepted on `/mcp`.
const MAX_BODY: usize = 16 * 1024 * 1024;
/// The largest body accepted on the identity endpoint.
const MAX_IDENTITY_BODY: usize = 1024;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

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

/// A Streamable HTTP server in front of one upstream (usually a stdio child process), multiplexing any
/// number of MCP sessions onto it.
///
/// It listens on 127.0.0.1 or on a Unix socket only, refuses any request with an `Origin` header (403)
/// or a `Host` that is not a loopback name (421), sends no CORS headers, and, when given a token,
/// answers `/mcp` only to requests that carry it as a bearer token (401), compared in constant time.
pub struct Serve {
    upstream: Arc<dyn Upstream>,
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
}

/// What a shared server lets go of when it is replaced.
type OnRetire = Box<dyn FnOnce() + Send + Sync>;

impl std::fmt::Debug for Serve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("upstream", &self.upstream.describe())
            .field("token", &self.token.as_ref().map(|_| "[REDACTED]"))
            .field("idle_exit", &self.idle_exit)
            .field("json_response", &self.json_response)
            .finish_non_exhaustive()
    }
}

impl Serve {
    /// A server in front of `upstream`, started once and restarted when it exits.
    pub fn new(upstream: impl Upstream) -> Self {
        Self {
            upstream: Arc::new(upstream),
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
        }
    }

    /// As a shared server, runs `f` when a session for another command says it replaces this server
    /// (with the token, at [`RETIRE_PATH`]); from then on it takes no new session and stops once its
    /// last one ends.
    pub(crate) fn on_retire(mut self, f: impl FnOnce() + Send + Sync + 'static) -> Self {
        self.on_retire = Some(Box::new(f));
        self
    }

    /// Holds at most this many sessions (default 1,024). An `initialize` past that is answered with
    /// HTTP 503 and a [`TOO_MANY_SESSIONS`](crate::TOO_MANY_SESSIONS) error until a session ends
    /// (DELETE) or expires.
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

    /// Gives every session an observer of its own, made by `factory` when the session starts: it sees
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
    /// (progress, server-to-client requests) then go to the session's GET stream.
    #[must_use]
    pub fn json_response(mut self, on: bool) -> Self {
        self.json_response = on;
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
    /// removed first; a live one is never replaced.
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
        let mux = Mux::start(self.upstream);
        let inner = Arc::new(Inner {
            mux,
            token: self.token,
            keys: self.keys,
            endpoint_text: endpoint.to_string(),
            port,
            json_response: self.json_response,
            tap: self.tap,
            sessions: Mutex::new(HashMap::new()),
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
    Unix(UnixListener),
}

/// A listening server; [`run_until`](Server::run_until) serves it.
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
    /// tap ([`Serve::tap_sessions`]) has seen the frames queued for it.
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
        inner.mux.shutdown().await;
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
        Listener::Unix(l) => {
            let (stream, _) = l.accept().await?;
            Ok(TokioIo::new(Box::new(stream)))
        }
    }
}

struct SessionEntry {
    no: SessionNo,
    open: AtomicUsize,
    last_seen: Mutex<Instant>,
    tap: Option<TapSender>,
}

struct Inner {
    mux: Mux,
    token: Option<String>,
    keys: Option<ServerKeys>,
    endpoint_text: String,
    port: Option<u16>,
    json_response: bool,
    tap: Option<TapFactory>,
    sessions: Mutex<HashMap<String, Arc<SessionEntry>>>,
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

fn plain(status: StatusCode, text: &str) -> Response<ResBody> {
    let mut res = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed_unsync());
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

fn json_response(status: StatusCode, value: &Value) -> Response<ResBody> {
    // A `Value` always serializes (its keys are strings, its numbers finite).
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut res = Response::new(Full::new(Bytes::from(body)).boxed_unsync());
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<ResBody> {
    json_response(
        status,
        &json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}}),
    )
}

/// A refusal with `-32600` and `id: null`, for a POST that is not a request to take.
fn invalid_request(message: &str) -> Box<Response<ResBody>> {
    Box::new(rpc_error(StatusCode::BAD_REQUEST, -32600, message))
}

fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    let (kind, _) = wanted.split_once('/').unwrap_or((wanted, ""));
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',').any(|item| {
                let media = item
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                media == wanted || media == "*/*" || media == format!("{kind}/*")
            })
        })
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

impl Inner {
    fn touch(&self) {
        *lock(&self.last_activity) = Instant::now();
        self.activity.notify_waiters();
    }

    fn idle_for(&self) -> Duration {
        if self.open.load(Ordering::SeqCst) > 0 {
            return Duration::ZERO;
        }
        lock(&self.last_activity).elapsed()
    }

    fn expire_sessions(&self, timeout: Duration) {
        let mut expired = Vec::new();
        lock(&self.sessions).retain(|_, s| {
            let keep = s.open.load(Ordering::SeqCst) > 0 || lock(&s.last_seen).elapsed() < timeout;
            if !keep {
                expired.push(s.no);
            }
            keep
        });
        for no in expired {
            tracing::debug!(session = no, "session expired");
            self.mux.send(Command::Close { session: no });
        }
    }

    async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
        conn: &Arc<Conn>,
    ) -> Response<ResBody> {
        let res = self.route(req, conn).await;
        tracing::trace!(status = res.status().as_u16(), "answered");
        res
    }

    async fn route(
        self: &Arc<Self>,
        req: Request<Incoming>,
        conn: &Arc<Conn>,
    ) -> Response<ResBody> {
        // This server serves no page: no origin is allowed.
        if let Err(refusal) = LoopbackGuard::new(self.port).check(req.headers()) {
            return plain(refusal.status(), refusal.message());
        }
        let path = req.uri().path().to_owned();
        if path == IDENTITY_PATH && self.keys.is_some() {
            if req.method() != Method::POST {
                return plain(StatusCode::METHOD_NOT_ALLOWED, "use POST");
            }
            return self.identify(req).await;
        }
        let retire = path == RETIRE_PATH && self.keys.is_some();
        if path != MCP_PATH && !retire {
            return plain(StatusCode::NOT_FOUND, "not found; MCP is served at /mcp");
        }
        if let Some(token) = &self.token {
            let presented = header_str(req.headers(), "authorization")
                .and_then(|v| {
                    v.strip_prefix("Bearer ")
                        .or_else(|| v.strip_prefix("bearer "))
                })
                .unwrap_or("");
            if !token_matches(token.as_bytes(), presented.as_bytes()) {
                let mut res = plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
                res.headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return res;
            }
        }
        if retire {
            if req.method() != Method::POST {
                return plain(StatusCode::METHOD_NOT_ALLOWED, "use POST");
            }
            return self.retire();
        }
        if let Some(version) = header_str(req.headers(), VERSION_HEADER)
            && !SUPPORTED_PROTOCOL_VERSIONS.contains(&version)
        {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                &format!(
                    "unsupported MCP-Protocol-Version; supported: {}",
                    SUPPORTED_PROTOCOL_VERSIONS.join(", ")
                ),
            );
        }
        self.touch();
        match *req.method() {
            Method::POST => self.post(req).await,
            Method::GET => self.get(&req, conn),
            Method::DELETE => self.delete(&req),
            _ => {
                let mut res = plain(StatusCode::METHOD_NOT_ALLOWED, "use POST, GET or DELETE");
                res.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                res
            }
        }
    }

    /// Steps aside for a server that runs another command: lets go of what `on_retire` holds, takes no
    /// new session, and stops once the last one ends.
    fn retire(&self) -> Response<ResBody> {
        if !self.retired.swap(true, Ordering::SeqCst) {
            if let Some(f) = lock(&self.on_retire).take() {
                f();
            }
            tracing::info!(
                "replaced by a shared server for another command; serving the {} sessions open until they end",
                lock(&self.sessions).len()
            );
        }
        plain(StatusCode::OK, "retired")
    }

    async fn identify(&self, req: Request<Incoming>) -> Response<ResBody> {
        let Some(keys) = &self.keys else {
            return plain(StatusCode::NOT_FOUND, "not found");
        };
        let Ok(body) = Limited::new(req.into_body(), MAX_IDENTITY_BODY)
            .collect()
            .await
        else {
            return plain(
                StatusCode::BAD_REQUEST,
                "the body must be {\"nonce\":\"<64 hex digits>\"}",
            );
        };
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Challenge {
            nonce: String,
        }
        let nonce = serde_json::from_slice::<Challenge>(&body.to_bytes())
            .ok()
            .and_then(|c| Nonce::from_hex(&c.nonce));
        let Some(nonce) = nonce else {
            return plain(
                StatusCode::BAD_REQUEST,
                "the body must be {\"nonce\":\"<64 hex digits>\"}",
            );
        };
        json_response(
            StatusCode::OK,
            &json!({"proof": keys.prove(&self.endpoint_text, &nonce)}),
        )
    }

    fn session_of(&self, headers: &HeaderMap) -> Result<Option<Arc<SessionEntry>>, UnknownSession> {
        let Some(id) = header_str(headers, SESSION_HEADER) else {
            return Ok(None);
        };
        match lock(&self.sessions).get(id) {
            Some(s) => {
                *lock(&s.last_seen) = Instant::now();
                Ok(Some(Arc::clone(s)))
            }
            None => Err(UnknownSession),
        }
    }

    async fn new_session(&self) -> Result<(String, Arc<SessionEntry>), NoSession> {
        if self.retired.load(Ordering::SeqCst) {
            return Err(NoSession::Replaced);
        }
        if lock(&self.sessions).len() >= self.max_sessions {
            return Err(NoSession::Full);
        }
        let no = self.mux.open().await.ok_or(NoSession::Stopping)?;
        let Ok(id) = Nonce::generate().map(|n| n.to_hex()) else {
            self.mux.send(Command::Close { session: no });
            return Err(NoSession::Stopping);
        };
        let tap =
            self.tap
                .as_ref()
                .and_then(|factory| match TapSender::start(factory(), TAP_CAPACITY) {
                    Ok((tap, thread)) => {
                        let mut threads = lock(&self.tap_threads);
                        threads.retain(|t| !t.is_finished());
                        threads.push(thread);
                        Some(tap)
                    }
                    Err(e) => {
                        tracing::warn!("cannot start the session's observer: {e}");
                        None
                    }
                });
        let entry = Arc::new(SessionEntry {
            no,
            open: AtomicUsize::new(0),
            last_seen: Mutex::new(Instant::now()),
            tap,
        });
        {
            // Checked again: other sessions may have opened while the multiplexer answered.
            let mut sessions = lock(&self.sessions);
            if sessions.len() >= self.max_sessions {
                drop(sessions);
                self.mux.send(Command::Close { session: no });
                return Err(NoSession::Full);
            }
            sessions.insert(id.clone(), Arc::clone(&entry));
        }
        tracing::debug!(session = no, "session opened");
        Ok((id, entry))
    }

    async fn post(self: &Arc<Self>, req: Request<Incoming>) -> Response<ResBody> {
        let headers = req.headers().clone();
        if let Some(refused) = refuse_post_headers(&headers) {
            return refused;
        }
        let messages = match read_messages(req).await {
            Ok(messages) => messages,
            Err(refused) => return *refused,
        };
        let PostSession {
            session,
            minted,
            ephemeral,
        } = match self.post_session(&headers, &messages).await {
            Ok(found) => found,
            Err(refused) => return *refused,
        };
        if let Some(tap) = &session.tap {
            for m in &messages {
                tap.send(Direction::FromClient, &to_frame(m));
            }
        }
        let expected: HashSet<String> = messages
            .iter()
            .flat_map(request_ids)
            .map(Value::to_string)
            .collect();
        if expected.is_empty() {
            for message in messages {
                self.mux.send(Command::Message {
                    session: session.no,
                    message,
                    answers: None,
                    related: false,
                });
            }
            if ephemeral {
                self.mux.send(Command::Close {
                    session: session.no,
                });
            }
            let mut res = Response::new(Full::new(Bytes::new()).boxed_unsync());
            *res.status_mut() = StatusCode::ACCEPTED;
            return res;
        }
        let exchange = Exchange {
            session,
            messages,
            expected,
            ephemeral,
        };
        let Some(mut res) = self.exchange(exchange).await else {
            return plain(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
        };
        if let Some(id) = minted
            && let Ok(value) = HeaderValue::from_str(&id)
        {
            res.headers_mut().insert(SESSION_HEADER, value);
        }
        res
    }

    /// The session a POST goes to: a new one for `initialize`, the one its header names, or one for
    /// this exchange alone (a stateless request).
    async fn post_session(
        &self,
        headers: &HeaderMap,
        messages: &[Value],
    ) -> Result<PostSession, Box<Response<ResBody>>> {
        let is_initialize = messages.iter().any(|m| method_of(m) == Some("initialize"));
        let session = self
            .session_of(headers)
            .map_err(|UnknownSession| Box::new(UnknownSession.response()))?;
        if is_initialize {
            if messages.len() != 1 {
                let message = "initialize must be sent alone";
                return Err(invalid_request(message));
            }
            if session.is_some() {
                let message = "initialize must not carry an Mcp-Session-Id";
                return Err(invalid_request(message));
            }
            let (id, entry) = self
                .new_session()
                .await
                .map_err(|e| Box::new(self.no_session(e, &messages[0])))?;
            return Ok(PostSession {
                session: entry,
                minted: Some(id),
                ephemeral: false,
            });
        }
        if let Some(session) = session {
            return Ok(PostSession {
                session,
                minted: None,
                ephemeral: false,
            });
        }
        let stateless = header_str(headers, VERSION_HEADER).is_some_and(|v| v >= STATELESS_VERSION);
        if !stateless {
            let message = "Mcp-Session-Id is required; initialize first";
            return Err(invalid_request(message));
        }
        // A stateless request: a session of its own for this one exchange, ids remapped as usual.
        let Some(no) = self.mux.open().await else {
            return Err(Box::new(plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is stopping",
            )));
        };
        Ok(PostSession {
            session: Arc::new(SessionEntry {
                no,
                open: AtomicUsize::new(0),
                last_seen: Mutex::new(Instant::now()),
                tap: None,
            }),
            minted: None,
            ephemeral: true,
        })
    }

    /// The answer to an `initialize` that got no session.
    fn no_session(&self, why: NoSession, initialize: &Value) -> Response<ResBody> {
        match why {
            NoSession::Stopping => plain(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping"),
            NoSession::Replaced => plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "this shared server was replaced by one for another command; attach again",
            ),
            NoSession::Full => {
                tracing::warn!(
                    "refused a new session: {} are open, the most this server holds",
                    self.max_sessions
                );
                let id = initialize.get("id").cloned().unwrap_or(Value::Null);
                let message = format!(
                    "the server holds {} sessions, the most it may; end a session (DELETE) or wait for one to expire, then initialize again",
                    self.max_sessions
                );
                let data = jsonrpc::data("too_many_sessions", None);
                let answer = jsonrpc::error(&id, crate::TOO_MANY_SESSIONS, &message, data);
                json_response(StatusCode::SERVICE_UNAVAILABLE, &answer)
            }
        }
    }

    /// Sends a POST's messages and answers with its requests' answers: one JSON body, or an SSE
    /// stream that ends after them. `None` when the server stopped before any answer came.
    async fn exchange(self: &Arc<Self>, exchange: Exchange) -> Option<Response<ResBody>> {
        let Exchange {
            session,
            messages,
            mut expected,
            ephemeral,
        } = exchange;
        let batch = messages.len() > 1;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let related = !self.json_response;
        for message in messages {
            let is_request = !request_ids(&message).is_empty();
            self.mux.send(Command::Message {
                session: session.no,
                message,
                answers: is_request.then(|| tx.clone()),
                related,
            });
        }
        drop(tx);
        let guard = StreamGuard::new(self, (!ephemeral).then(|| Arc::clone(&session)));
        let close_after = ephemeral.then(|| (self.mux.clone(), session.no));
        if !self.json_response {
            let body = SseBody {
                rx,
                expected: Some(expected),
                done: false,
                tap: session.tap.clone(),
                _guard: guard,
                close_after,
            };
            let mut res = Response::new(body.boxed_unsync());
            res.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            res.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            return Some(res);
        }
        let mut answers = Vec::new();
        while !expected.is_empty() {
            let Some(message) = rx.recv().await else {
                break;
            };
            if let Some(key) = answer_key(&message)
                && expected.remove(&key)
            {
                if let Some(tap) = &session.tap {
                    tap.send(Direction::ToClient, &to_frame(&message));
                }
                answers.push(message);
            }
        }
        drop(guard);
        if let Some((mux, no)) = close_after {
            mux.send(Command::Close { session: no });
        }
        if answers.is_empty() {
            return None;
        }
        let value = if batch {
            Value::Array(answers)
        } else {
            answers.remove(0)
        };
        Some(json_response(StatusCode::OK, &value))
    }

    fn get(self: &Arc<Self>, req: &Request<Incoming>, conn: &Arc<Conn>) -> Response<ResBody> {
        if !accepts(req.headers(), "text/event-stream") {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "Accept must include text/event-stream",
            );
        }
        let session = match self.session_of(req.headers()) {
            Ok(Some(session)) => session,
            Ok(None) => return plain(StatusCode::BAD_REQUEST, "Mcp-Session-Id is required"),
            Err(UnknownSession) => return UnknownSession.response(),
        };
        let last_event = header_str(req.headers(), "last-event-id").and_then(|v| v.parse().ok());
        let (outbox, body) = StreamOutbox::open(
            conn,
            session.tap.clone(),
            StreamGuard::new(self, Some(Arc::clone(&session))),
        );
        self.mux.send(Command::Stream {
            session: session.no,
            outbox,
            last_event,
        });
        let mut res = Response::new(body.boxed_unsync());
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        res
    }

    fn delete(&self, req: &Request<Incoming>) -> Response<ResBody> {
        let Some(id) = header_str(req.headers(), SESSION_HEADER) else {
            return plain(StatusCode::BAD_REQUEST, "Mcp-Session-Id is required");
        };
        let Some(entry) = lock(&self.sessions).remove(id) else {
            return plain(StatusCode::NOT_FOUND, "unknown or expired session");
        };
        tracing::debug!(session = entry.no, "session deleted");
        self.mux.send(Command::Close { session: entry.no });
        let mut res = Response::new(Full::new(Bytes::new()).boxed_unsync());
        *res.status_mut() = StatusCode::OK;
        res
    }
}

/// Why no session was opened.
enum NoSession {
    /// The multiplexer ended: the server is stopping.
    Stopping,
    /// As many sessions are open as the server may hold.
    Full,
    /// A shared server replaced by one for another command.
    Replaced,
}

/// A session id that names no session (never minted, deleted or expired).
struct UnknownSession;

impl UnknownSession {
    fn response(self) -> Response<ResBody> {
        plain(
            StatusCode::NOT_FOUND,
            "unknown or expired session; initialize again",
        )
    }
}

/// Where a POST goes, and whether its session is for this exchange alone.
struct PostSession {
    session: Arc<SessionEntry>,
    /// The id of a session this POST (an `initialize`) opened, for the answer's header.
    minted: Option<String>,
    ephemeral: bool,
}

/// A POST that holds requests, on its way to the multiplexer.
struct Exchange {
    session: Arc<SessionEntry>,
    messages: Vec<Value>,
    /// The ids of its requests, as JSON text.
    expected: HashSet<String>,
    ephemeral: bool,
}

/// Why a POST's headers are refused (`Accept`, `Content-Type`), if they are.
fn refuse_post_headers(headers: &HeaderMap) -> Option<Response<ResBody>> {
    if !(accepts(headers, "application/json") && accepts(headers, "text/event-stream")) {
        return Some(plain(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must include application/json and text/event-stream",
        ));
    }
    let json_type = header_str(headers, "content-type").is_some_and(|t| {
        t.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("application/json")
    });
    (!json_type).then(|| {
        plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        )
    })
}

/// A POST's body as messages: one object or a batch of them, each with a valid id if any.
async fn read_messages(req: Request<Incoming>) -> Result<Vec<Value>, Box<Response<ResBody>>> {
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            return Err(Box::new(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the body is over 16 MiB or was cut short",
            )));
        }
    };
    let messages = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(items)) if !items.is_empty() && items.iter().all(Value::is_object) => items,
        Ok(value @ Value::Object(_)) => vec![value],
        Ok(_) => {
            let message = "a message must be a JSON object or a batch of them";
            return Err(invalid_request(message));
        }
        Err(_) => {
            let message = "parse error: the body is not JSON";
            return Err(Box::new(rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                message,
            )));
        }
    };
    if !messages.iter().all(has_valid_id) {
        let message = "invalid request: an id must be a string, a number or null";
        return Err(invalid_request(message));
    }
    Ok(messages)
}

/// Whether a message's `id`, if any, is one JSON-RPC allows: a string, a number or null.
fn has_valid_id(message: &Value) -> bool {
    matches!(
        message.get("id"),
        None | Some(Value::Null | Value::String(_) | Value::Number(_))
    )
}

/// The id of an answer (a message with an id and no method), as JSON text.
fn answer_key(message: &Value) -> Option<String> {
    if message.get("method").is_some() {
        return None;
    }
    id_of(message).map(Value::to_string)
}

/// An SSE body fed by the multiplexer. For a POST it ends after the answers to its requests.
struct SseBody {
    rx: mpsc::UnboundedReceiver<Value>,
    expected: Option<HashSet<String>>,
    done: bool,
    tap: Option<TapSender>,
    _guard: StreamGuard,
    close_after: Option<(Mux, SessionNo)>,
}

impl Drop for SseBody {
    fn drop(&mut self) {
        if let Some((mux, no)) = self.close_after.take() {
            mux.send(Command::Close { session: no });
        }
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        if self.done {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(message)) => {
                if let (Some(expected), Some(key)) = (self.expected.as_mut(), answer_key(&message))
                {
                    expected.remove(&key);
                    if expected.is_empty() {
                        self.done = true;
                    }
                }
                let frame = to_frame(&message);
                if let Some(tap) = &self.tap {
                    tap.send(Direction::ToClient, &frame);
                }
                let mut event = Vec::with_capacity(frame.len() + 24);
                event.extend_from_slice(b"event: message\ndata: ");
                event.extend_from_slice(&frame);
                event.extend_from_slice(b"\n\n");
                Poll::Ready(Some(Ok(BodyFrame::data(Bytes::from(event)))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// Binds a Unix socket at `path` that is owner-only (0600) from its first instant: the process's umask
/// is narrowed for the bind. A socket's mode could otherwise be set only through its path, which a link
/// planted between the bind and the change could redirect; the umask is process-wide, but while it is
/// narrowed any file another thread creates only comes out stricter.
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
        let serve = Serve::new(crate::ChildUpstream::new(["true"]).unwrap());
        assert_eq!(serve.header_read_timeout, Duration::from_secs(10));
        assert_eq!(serve.max_connections, 256);
        assert_eq!(serve.max_sessions, 1024);
    }

    #[test]
    fn accept_lists() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(accepts(&headers, "application/json"));
        assert!(accepts(&headers, "text/event-stream"));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;q=0.9"),
        );
        assert!(accepts(&headers, "application/json"));
        assert!(!accepts(&headers, "text/event-stream"));
        headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        assert!(accepts(&headers, "text/event-stream"));
        headers.insert(header::ACCEPT, HeaderValue::from_static("text/*"));
        assert!(accepts(&headers, "text/event-stream"));
        assert!(!accepts(&headers, "application/json"));
        assert!(!accepts(&HeaderMap::new(), "application/json"));
    }
}

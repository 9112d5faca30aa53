//! [`SharedUpstream`]: the key's shared server as an [`Upstream`] for a [`Bridge`](crate::Bridge).
//!
//! Every `connect` finds the key's server or starts one. Each link speaks Streamable HTTP to it and
//! sends the bearer token only on a connection whose other end has just proved its identity: over
//! loopback HTTP every request (the GET stream and the DELETE included) goes on a fresh connection that
//! is challenged first, so a process that takes the port after the server stops gets nothing; over the
//! owner-only socket each connection is challenged once and then reused. A request of 2026-07-28 (its
//! protocol version in `_meta`) goes without a session, with that version in `MCP-Protocol-Version`.
//!
//! When no server can be attached (it cannot be started, it exits before it proves itself, or the
//! process at its endpoint cannot prove itself), the link says why on stderr and answers every request
//! at once with [`unavailable_answer`], instead of holding it until the bridge's restart deadline; it
//! tries again at the first message after a pause that doubles with each failure in a row.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio::{
    sync::{mpsc, watch},
    task::JoinHandle,
    time::Instant,
};

use super::{
    client::{Conn, SseSplitter},
    launch::{Attached, DEFAULT_START_TIMEOUT, Launcher, attach_or_start},
    paths::SharedPaths,
};
use crate::serve::Transport;
use crate::vocab::{self, INITIALIZE, META_PROTOCOL_VERSION, TOOLS_CALL};
use crate::{
    BoxFuture, Error, Frame, FrameReader, FrameWriter, Link, UPSTREAM_UNREACHABLE, Upstream,
    UpstreamEvent,
    jsonrpc::{self, Peek, peek, request_ids},
};

/// How long a connection to the socket is kept for another request.
const POOL_IDLE: Duration = Duration::from_secs(5);

/// The longest answer body read from the server.
const MAX_ANSWER: usize = 64 * 1024 * 1024;

/// How long a session that could not attach answers every request at once with the reason before it
/// tries again; it doubles with each failure in a row, up to [`MAX_RETRY_AFTER`]. Trying again starts
/// the server again, so a broken server command is not run in a tight loop.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// The longest wait between two attempts to attach.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// The answer to a request while the key's server cannot be attached: an error with the request's own
/// `id`, code [`UPSTREAM_UNREACHABLE`], `data.reason` `"shared_server_unavailable"` and the reason in
/// `data.upstream.message`.
///
/// ```
/// use calltape_stdio_bridge::shared::unavailable_answer;
///
/// let answer = unavailable_answer(&7.into(), "the shared server `k` did not start: it exited with status 2");
/// assert_eq!(answer["id"], 7);
/// assert_eq!(answer["error"]["data"]["reason"], "shared_server_unavailable");
/// ```
pub fn unavailable_answer(id: &Value, reason: &str) -> Value {
    let data = jsonrpc::data(
        "shared_server_unavailable",
        Some(json!({"message": reason})),
    );
    vocab::error_answer_with_data(
        id,
        UPSTREAM_UNREACHABLE,
        "the shared server is unavailable",
        data,
    )
}

/// Answers every request read from `input` with [`unavailable_answer`] on `output` (a batch with a
/// batch), until `input` ends or stays quiet for `quiet`; notifications and lines that are not
/// messages get nothing. For a session that could not attach and exits: its client hears why at
/// once instead of waiting for answers that never come.
pub async fn answer_held_requests<R, W>(input: R, output: W, reason: &str, quiet: Duration)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut reader = FrameReader::new(input);
    let mut writer = FrameWriter::new(output);
    while let Ok(Ok(Some(next))) = tokio::time::timeout(quiet, reader.next()).await {
        let crate::Incoming::Frame(frame) = next else {
            continue;
        };
        let Some(answers) = unavailable_answers(&frame, reason) else {
            continue;
        };
        if writer.write(&answers).await.is_err() || writer.flush().await.is_err() {
            return;
        }
    }
}

/// The key's shared server, reached as an upstream: started when none proves itself.
#[derive(Clone)]
pub struct SharedUpstream {
    paths: SharedPaths,
    transport: Transport,
    launcher: Launcher,
    timeout: Duration,
    first: Arc<Mutex<Option<Attached>>>,
    /// Attach attempts that failed in a row.
    failures: Arc<AtomicU32>,
}

impl std::fmt::Debug for SharedUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedUpstream")
            .field("key", self.paths.key())
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl SharedUpstream {
    /// The shared server of the key `paths` names, over `transport`, started with `launcher` when none
    /// proves itself.
    pub fn new(paths: SharedPaths, transport: Transport, launcher: Launcher) -> Self {
        Self {
            paths,
            transport,
            launcher,
            timeout: DEFAULT_START_TIMEOUT,
            first: Arc::new(Mutex::new(None)),
            failures: Arc::new(AtomicU32::new(0)),
        }
    }

    /// How long to wait for a server to prove itself (default 60 s).
    #[must_use]
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Finds the key's server or starts one. The next [`connect`](Upstream::connect) uses this server
    /// without asking again.
    pub async fn attach(&self) -> Result<Attached, Error> {
        let attached =
            attach_or_start(&self.paths, self.transport, &self.launcher, self.timeout).await?;
        *self
            .first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(attached.clone());
        Ok(attached)
    }

    async fn link(&self) -> Link {
        let cached = self
            .first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let attached = match cached {
            Some(attached) => attached,
            None => {
                match attach_or_start(&self.paths, self.transport, &self.launcher, self.timeout)
                    .await
                {
                    Ok(attached) => attached,
                    Err(e) => {
                        let failures = self.failures.fetch_add(1, Ordering::Relaxed).min(5);
                        let retry_after = (RETRY_AFTER * (1 << failures)).min(MAX_RETRY_AFTER);
                        tracing::error!(
                            "cannot attach to the shared server `{}`: {e}; answering requests with this error, and trying again at the first one after {} s",
                            self.paths.key(),
                            retry_after.as_secs()
                        );
                        return unavailable_link(e.to_string(), retry_after);
                    }
                }
            }
        };
        self.failures.store(0, Ordering::Relaxed);
        tracing::debug!(
            pid = attached.pid,
            "attached to the shared server `{}` at {}",
            self.paths.key(),
            attached.endpoint
        );
        start_link(attached)
    }
}

impl Upstream for SharedUpstream {
    fn describe(&self) -> String {
        format!("shared server `{}`", self.paths.key())
    }

    /// Finds the key's server or starts one. This never fails: when no server can be attached, the
    /// link answers every request at once with [`unavailable_answer`] (and says why on stderr), and
    /// closes at the first message after a pause, so that the bridge holds it and tries again.
    fn connect(&self) -> BoxFuture<'_, Result<Link, Error>> {
        Box::pin(async move { Ok(self.link().await) })
    }
}

/// The answers of the requests in `frame` (one message or a batch) while no server can be attached.
fn unavailable_answers(frame: &[u8], reason: &str) -> Option<Frame> {
    let message = serde_json::from_slice::<Value>(frame).ok()?;
    let mut answers: Vec<Value> = request_ids(&message)
        .into_iter()
        .map(|id| unavailable_answer(id, reason))
        .collect();
    let answers = match message {
        Value::Array(_) if !answers.is_empty() => Value::Array(answers),
        Value::Object(_) if answers.len() == 1 => answers.remove(0),
        _ => return None,
    };
    Some(jsonrpc::to_frame(&answers))
}

/// A link for a session that could not attach: it answers every request at once with `reason`, and
/// the first message that comes after `retry_after` is handed back undelivered (the bridge holds it)
/// and the link closes, so that the bridge attaches again.
fn unavailable_link(reason: String, retry_after: Duration) -> Link {
    let (outgoing, mut outgoing_rx) = mpsc::channel::<Frame>(64);
    let (events_tx, events) = mpsc::channel(64);
    let until = Instant::now() + retry_after;
    let task = tokio::spawn(async move {
        while let Some(frame) = outgoing_rx.recv().await {
            if Instant::now() < until {
                if let Some(answers) = unavailable_answers(&frame, &reason)
                    && events_tx
                        .send(UpstreamEvent::Message(answers))
                        .await
                        .is_err()
                {
                    return;
                }
                continue;
            }
            let mut frames = vec![frame];
            outgoing_rx.close();
            while let Ok(frame) = outgoing_rx.try_recv() {
                frames.push(frame);
            }
            // The bridge puts each one back at the front of what it holds: last first keeps the order.
            for frame in frames.into_iter().rev() {
                let undelivered = UpstreamEvent::Undelivered {
                    frame,
                    maybe_delivered: false,
                    reason: reason.clone(),
                };
                if events_tx.send(undelivered).await.is_err() {
                    return;
                }
            }
            let _ = events_tx
                .send(UpstreamEvent::Closed {
                    reason: "could not be attached; attaching again".to_owned(),
                })
                .await;
            return;
        }
    });
    Link {
        outgoing,
        events,
        close: Box::new(move || {
            Box::pin(async move {
                task.abort();
            })
        }),
    }
}

struct Ctx {
    attached: Attached,
    events: mpsc::Sender<UpstreamEvent>,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    /// Challenged connections to the socket, ready for another request, and since when.
    pool: Mutex<Vec<(Conn, Instant)>>,
    stop: watch::Sender<bool>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

enum ConnError {
    /// Nothing answered: nothing was sent.
    Unreachable(String),
    /// Something answered but did not prove itself: it was sent nothing but the challenge.
    Refused(String),
}

impl Ctx {
    fn reusable(&self) -> bool {
        self.attached.endpoint.transport() == Transport::Unix
    }

    /// A connection whose other end has proved its identity.
    async fn conn(&self) -> Result<Conn, ConnError> {
        if self.reusable() {
            let mut pool = lock(&self.pool);
            while let Some((conn, since)) = pool.pop() {
                // The server closes a connection that sends no request for 10 s: one idle half that
                // long is not worth the race with its closing.
                if conn.is_usable() && since.elapsed() < POOL_IDLE {
                    return Ok(conn);
                }
            }
        }
        let endpoint = &self.attached.endpoint;
        let mut conn = Conn::open(endpoint)
            .await
            .map_err(|e| ConnError::Unreachable(format!("cannot connect to {endpoint}: {e}")))?;
        match conn.challenge(endpoint, &self.attached.keys).await {
            Ok(()) => Ok(conn),
            Err(reason) => {
                tracing::warn!(
                    "the process at {endpoint} did not prove it is the shared server ({reason}); it was not sent the token"
                );
                Err(ConnError::Refused(format!(
                    "the process at {endpoint} did not prove it is the shared server: {reason}"
                )))
            }
        }
    }

    fn give_back(&self, conn: Conn) {
        if self.reusable() && conn.is_usable() {
            lock(&self.pool).push((conn, Instant::now()));
        }
    }

    /// A request to the server's MCP path; `Err` says why it cannot be built (a path in the record
    /// that is not a valid request target).
    fn request(
        &self,
        method: Method,
        body: Option<Bytes>,
        accept: &str,
    ) -> Result<Request<Full<Bytes>>, String> {
        let mut builder = Request::builder()
            .method(method)
            .uri(self.attached.path.as_str())
            .header(header::ACCEPT, accept)
            .header(
                header::AUTHORIZATION,
                format!("Bearer {}", self.attached.keys.token()),
            );
        if body.is_some() {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        // Both were checked to be valid header values when the server sent them.
        if let Some(id) = lock(&self.session).as_deref() {
            builder = builder.header("mcp-session-id", id);
        }
        let version = lock(&self.version).clone();
        if let Some(version) = &version {
            builder = builder.header("mcp-protocol-version", version);
        }
        if version.is_some_and(|v| v.as_str() >= crate::MODERN_VERSION)
            && let Some(body) = &body
        {
            for (name, value) in mirrored_headers(body) {
                builder = builder.header(name, value);
            }
        }
        builder
            .body(Full::new(body.unwrap_or_default()))
            .map_err(|e| format!("cannot build a request to the shared server: {e}"))
    }

    async fn emit(&self, event: UpstreamEvent) {
        let _ = self.events.send(event).await;
    }
}

fn start_link(attached: Attached) -> Link {
    let (outgoing, outgoing_rx) = mpsc::channel::<Frame>(64);
    let (events_tx, events) = mpsc::channel(64);
    let (stop, _) = watch::channel(false);
    let ctx = Arc::new(Ctx {
        attached,
        events: events_tx,
        session: Mutex::new(None),
        version: Mutex::new(None),
        pool: Mutex::new(Vec::new()),
        stop,
    });
    let sender = tokio::spawn(send_loop(Arc::clone(&ctx), outgoing_rx));
    Link {
        outgoing,
        events,
        close: Box::new(move || {
            Box::pin(async move {
                let _ = ctx.stop.send(true);
                sender.abort();
                // End the session on the server, after proving it is still the server.
                if lock(&ctx.session).is_some() {
                    let end = async {
                        if let Ok(mut conn) = ctx.conn().await
                            && let Ok(req) = ctx.request(Method::DELETE, None, "application/json")
                        {
                            let _ = conn.send(req).await;
                        }
                    };
                    let _ = tokio::time::timeout(Duration::from_secs(2), end).await;
                }
            })
        }),
    }
}

async fn send_loop(ctx: Arc<Ctx>, mut outgoing: mpsc::Receiver<Frame>) {
    let mut stream: Option<JoinHandle<()>> = None;
    while let Some(frame) = outgoing.recv().await {
        let initialize = matches!(
            peek(&frame),
            Ok(Peek::One(info)) if info.method.as_deref() == Some(INITIALIZE)
        );
        if initialize {
            // A new handshake: a new session on the server.
            *lock(&ctx.session) = None;
            *lock(&ctx.version) = None;
            if let Some(task) = stream.take() {
                task.abort();
            }
        }
        let mut conn = match ctx.conn().await {
            Ok(conn) => conn,
            Err(ConnError::Unreachable(reason) | ConnError::Refused(reason)) => {
                ctx.emit(UpstreamEvent::Undelivered {
                    frame,
                    maybe_delivered: false,
                    reason: reason.clone(),
                })
                .await;
                ctx.emit(UpstreamEvent::Closed { reason }).await;
                break;
            }
        };
        let had_session = lock(&ctx.session).is_some();
        if !had_session && let Some(version) = stateless_version(&frame) {
            // A 2026-07-28 request: no session, its version in the header from now on, as the server
            // asks of a request that comes without one.
            *lock(&ctx.version) = Some(version);
        }
        let req = match ctx.request(
            Method::POST,
            Some(frame.clone()),
            "application/json, text/event-stream",
        ) {
            Ok(req) => req,
            Err(message) => {
                ctx.emit(UpstreamEvent::ProtocolError {
                    frame,
                    status: None,
                    message,
                })
                .await;
                continue;
            }
        };
        let res = match conn.send(req).await {
            Ok(res) => res,
            Err(e) => {
                let reason = format!("the shared server dropped the connection: {e}");
                ctx.emit(UpstreamEvent::Undelivered {
                    frame,
                    maybe_delivered: true,
                    reason: reason.clone(),
                })
                .await;
                ctx.emit(UpstreamEvent::Closed { reason }).await;
                break;
            }
        };
        let status = res.status();
        if status == StatusCode::NOT_FOUND && had_session {
            *lock(&ctx.session) = None;
            if let Some(task) = stream.take() {
                task.abort();
            }
            ctx.emit(UpstreamEvent::SessionExpired { frame }).await;
            continue;
        }
        if status == StatusCode::ACCEPTED {
            let _ = res.into_body().collect().await;
            ctx.give_back(conn);
            continue;
        }
        if status != StatusCode::OK {
            let text = Limited::new(res.into_body(), 4096)
                .collect()
                .await
                .map(|b| String::from_utf8_lossy(&b.to_bytes()).trim().to_owned())
                .unwrap_or_default();
            ctx.emit(UpstreamEvent::ProtocolError {
                frame,
                status: Some(status.as_u16()),
                message: text,
            })
            .await;
            continue;
        }
        if initialize {
            stream = read_handshake(&ctx, res, conn, &frame).await;
            continue;
        }
        // Answers may take long (a slow tool): read them aside, so later requests go out meanwhile.
        let ctx2 = Arc::clone(&ctx);
        tokio::spawn(async move {
            for answer in read_answers(&ctx2, res, false).await {
                ctx2.emit(UpstreamEvent::Message(answer)).await;
            }
            ctx2.give_back(conn);
        });
    }
    if let Some(task) = stream {
        task.abort();
    }
}

/// Reads the answer to `initialize`, JSON or SSE, before anything else is sent (later requests carry
/// the version it negotiated), and opens the server's GET stream when the answer named a session.
async fn read_handshake(
    ctx: &Arc<Ctx>,
    res: hyper::Response<Incoming>,
    conn: Conn,
    frame: &Frame,
) -> Option<JoinHandle<()>> {
    if let Some(id) = res
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
    {
        *lock(&ctx.session) = Some(id.to_owned());
    }
    let answers = read_answers(ctx, res, true).await;
    ctx.give_back(conn);
    for answer in answers {
        match negotiated_version(&answer) {
            Ok(Some(version)) => *lock(&ctx.version) = Some(version),
            Ok(None) => {}
            Err(message) => {
                ctx.emit(UpstreamEvent::ProtocolError {
                    frame: frame.clone(),
                    status: None,
                    message,
                })
                .await;
                continue;
            }
        }
        ctx.emit(UpstreamEvent::Message(answer)).await;
    }
    let has_session = lock(&ctx.session).is_some();
    has_session.then(|| tokio::spawn(get_stream(Arc::clone(ctx))))
}

/// The `protocolVersion` an answer to `initialize` negotiated; `Err` when it cannot be sent back as
/// a header (control characters, say), which makes the answer an upstream protocol error.
fn negotiated_version(answer: &[u8]) -> Result<Option<String>, String> {
    let Ok(value) = serde_json::from_slice::<Value>(answer) else {
        return Ok(None);
    };
    let Some(version) = value["result"]["protocolVersion"].as_str() else {
        return Ok(None);
    };
    if http::HeaderValue::from_str(version).is_err() {
        return Err(format!(
            "the shared server answered initialize with the protocolVersion {version:?}, which is not a valid header value"
        ));
    }
    Ok(Some(version.to_owned()))
}

/// The protocol version a stateless request (2026-07-28) names in its `_meta`, when it can be a header.
fn stateless_version(frame: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(frame).ok()?;
    let meta = jsonrpc::Message::parse(text)?.params?.meta?;
    let meta = serde_json::from_str::<Value>(meta).ok()?;
    let version = meta.get(META_PROTOCOL_VERSION)?.as_str()?;
    http::HeaderValue::from_str(version)
        .is_ok()
        .then(|| version.to_owned())
}

/// The headers 2026-07-28 mirrors from a request's body: `Mcp-Method`, and `Mcp-Name` (a tool's or
/// prompt's name, a resource's URI) when it is plain visible ASCII; the server checks one only when sent.
fn mirrored_headers(frame: &[u8]) -> Vec<(&'static str, http::HeaderValue)> {
    let Some(message) = std::str::from_utf8(frame)
        .ok()
        .and_then(jsonrpc::Message::parse)
    else {
        return Vec::new();
    };
    let plain = |v: &str| v.bytes().all(|b| (0x20..=0x7e).contains(&b)) && v.trim() == v;
    let mut headers = Vec::new();
    let method = message.method.and_then(jsonrpc::string);
    if let Some(method) = method.as_deref().filter(|m| plain(m))
        && let Ok(value) = http::HeaderValue::from_str(method)
    {
        headers.push(("mcp-method", value));
    }
    let named = matches!(
        method.as_deref(),
        Some(TOOLS_CALL | "prompts/get" | "resources/read")
    );
    let name = message
        .params
        .filter(|_| named)
        .and_then(|p| p.name.or(p.uri))
        .and_then(jsonrpc::string);
    if let Some(name) = name.filter(|n| plain(n) && !n.starts_with("=?base64?"))
        && let Ok(value) = http::HeaderValue::from_str(&name)
    {
        headers.push(("mcp-name", value));
    }
    headers
}

/// The messages of a JSON or SSE answer, in order. SSE events are passed on as they come, unless
/// `hold` is set: then they are returned with the rest.
async fn read_answers(ctx: &Ctx, res: hyper::Response<Incoming>, hold: bool) -> Vec<Frame> {
    let sse = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let mut body = res.into_body();
    if !sse {
        return match Limited::new(body, MAX_ANSWER).collect().await {
            Ok(b) => {
                let bytes = b.to_bytes();
                match serde_json::from_slice::<Value>(&bytes) {
                    Ok(Value::Array(items)) => items
                        .iter()
                        .filter_map(|m| serde_json::to_vec(m).ok().map(Bytes::from))
                        .collect(),
                    Ok(_) => vec![bytes],
                    Err(_) => Vec::new(),
                }
            }
            Err(_) => Vec::new(),
        };
    }
    let mut splitter = SseSplitter::default();
    let mut held = Vec::new();
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(data) = frame.into_data() {
            for event in splitter.feed(&data) {
                if hold {
                    held.push(event);
                } else {
                    ctx.emit(UpstreamEvent::Message(event)).await;
                }
            }
        }
    }
    held
}

/// The session's GET stream, reopened (and its server challenged again) whenever it ends.
async fn get_stream(ctx: Arc<Ctx>) {
    let mut stop = ctx.stop.subscribe();
    loop {
        if *stop.borrow() {
            return;
        }
        let mut conn = match ctx.conn().await {
            Ok(conn) => conn,
            Err(ConnError::Unreachable(reason) | ConnError::Refused(reason)) => {
                ctx.emit(UpstreamEvent::Closed { reason }).await;
                return;
            }
        };
        let req = match ctx.request(Method::GET, None, "text/event-stream") {
            Ok(req) => req,
            Err(reason) => {
                ctx.emit(UpstreamEvent::Closed { reason }).await;
                return;
            }
        };
        let res = match conn.send(req).await {
            Ok(res) => res,
            Err(e) => {
                ctx.emit(UpstreamEvent::Closed {
                    reason: format!("the shared server dropped the connection: {e}"),
                })
                .await;
                return;
            }
        };
        if res.status() != StatusCode::OK {
            // 404: the session is gone; the next request finds out and re-initializes.
            tracing::debug!(
                status = res.status().as_u16(),
                "the shared server refused the GET stream"
            );
            return;
        }
        let mut body = res.into_body();
        let mut splitter = SseSplitter::default();
        loop {
            let frame = tokio::select! {
                _ = stop.changed() => return,
                frame = body.frame() => frame,
            };
            let Some(Ok(frame)) = frame else { break };
            if let Ok(data) = frame.into_data() {
                for event in splitter.feed(&data) {
                    ctx.emit(UpstreamEvent::Message(event)).await;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests;

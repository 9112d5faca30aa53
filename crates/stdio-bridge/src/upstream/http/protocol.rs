//! The Streamable HTTP client protocol, written once over the [`Transport`] seam: POST per message, JSON
//! and SSE answers, the session id and protocol version headers, the GET stream, session expiry, the
//! 2026-07-28 mirrored headers, and the DELETE that ends a session.
//!
//! This module holds the protocol client's state ([`Core`]: the session) and the driver that takes the
//! bridge's frames in order; `post` sends one frame and reads its answer, `stream` reads event streams.

mod post;
mod stream;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use http::{HeaderMap, HeaderName, HeaderValue, Method, header::CONTENT_TYPE};
use tokio::{
    sync::{Notify, mpsc},
    task::{AbortHandle, JoinError, JoinSet},
};

use self::{post::post, stream::get_stream};
use super::transport::{HttpRequest, Transport};
use crate::vocab::{
    HEADER_LAST_EVENT_ID, HEADER_METHOD, HEADER_NAME, HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID,
};
use crate::{
    Error,
    jsonrpc::OutgoingPeek,
    upstream::{BoxFuture, Frame, Link, UpstreamEvent},
};

/// The largest message (a JSON body or one SSE event) taken from the upstream.
pub(crate) const MAX_MESSAGE: usize = 64 << 20;
/// How much of an error answer's body is read to explain it.
const ERROR_BODY_LIMIT: usize = 64 << 10;
/// How much of an error answer's body is quoted in the message.
const ERROR_QUOTE_CHARS: usize = 200;
const CHANNEL_CAPACITY: usize = 256;
/// Reconnection delay of the GET stream when the server named none.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
const MAX_RETRY: Duration = Duration::from_secs(30);
/// The GET stream gives up after this many failed attempts in a row (an endpoint that refuses the
/// connection closes the link at once).
const GET_ATTEMPTS: u32 = 5;
/// After the endpoint refused a connection, requests still in flight get this long to finish.
const REFUSED_GRACE: Duration = Duration::from_secs(2);
/// The session's DELETE may take this long; closing must stay quick.
const DELETE_TIMEOUT: Duration = Duration::from_millis(1500);

pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static(HEADER_SESSION_ID);
pub(crate) const MCP_PROTOCOL_VERSION: HeaderName =
    HeaderName::from_static(HEADER_PROTOCOL_VERSION);
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static(HEADER_METHOD);
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static(HEADER_NAME);
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static(HEADER_LAST_EVENT_ID);

const ACCEPT_POST: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const ACCEPT_SSE: HeaderValue = HeaderValue::from_static("text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
/// The first revision whose requests carry `Mcp-Method` and `Mcp-Name`.
const MIRRORED_HEADERS_SINCE: &str = crate::vocab::MODERN_VERSION;

/// The protocol client for one endpoint, shared by every link to it.
pub(crate) struct Core<T> {
    transport: Arc<T>,
    extra: HeaderMap,
    session: Mutex<Session>,
}

/// What the legacy (session) protocol remembers between requests.
#[derive(Debug, Default)]
struct Session {
    /// `Mcp-Session-Id` from the initialize answer.
    id: Option<HeaderValue>,
    /// The negotiated protocol version.
    version: Option<String>,
    /// `notifications/initialized` was delivered, so the server's GET stream may be opened.
    initialized: bool,
    /// The version the last request of the stateless revision named in its `_meta`, for the frames
    /// that carry none (notifications, responses) of a client without a session.
    stateless_version: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    /// The endpoint refused the connection: the link closes.
    Refused,
}

impl<T: Transport> Core<T> {
    pub(crate) fn new(transport: T, extra: HeaderMap) -> Self {
        Self {
            transport: Arc::new(transport),
            extra,
            session: Mutex::new(Session::default()),
        }
    }

    /// A protocol client for the same endpoint and headers that holds a session of its own.
    #[cfg(all(feature = "http", feature = "era"))]
    pub(crate) fn apart(&self) -> Arc<Self> {
        Arc::new(Self {
            transport: Arc::clone(&self.transport),
            extra: self.extra.clone(),
            session: Mutex::new(Session::default()),
        })
    }

    pub(crate) fn describe(&self) -> String {
        self.transport.describe()
    }

    #[cfg(all(feature = "http", unix))]
    pub(crate) fn transport(&self) -> &T {
        &self.transport
    }

    fn session(&self) -> MutexGuard<'_, Session> {
        // The lock is never held across an await or a panic point that matters; recover from poison.
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks the endpoint accepts connections, then starts a link.
    pub(crate) fn connect(self: &Arc<Self>) -> BoxFuture<'static, Result<Link, Error>> {
        let core = Arc::clone(self);
        Box::pin(async move {
            if let Err(reason) = core.transport.probe().await {
                return Err(Error::unreachable(core.describe(), reason));
            }
            Ok(core.start_link())
        })
    }

    fn start_link(self: &Arc<Self>) -> Link {
        let (outgoing, outgoing_rx) = mpsc::channel(CHANNEL_CAPACITY);
        let (events_tx, events) = mpsc::channel(CHANNEL_CAPACITY);
        let tasks = Arc::new(LinkTasks::default());
        let mut driver = Driver {
            core: Arc::clone(self),
            events: events_tx,
            tasks: Arc::clone(&tasks),
            posts: JoinSet::new(),
            in_flight: HashMap::new(),
            stream_refused: Arc::new(Notify::new()),
        };
        if self.session().initialized {
            // A new link to a session that is already set up (the endpoint came back): reopen its stream.
            driver.start_get_stream();
        }
        let handle = tokio::spawn(driver.run(outgoing_rx));
        tasks.set_driver(handle.abort_handle());
        let core = Arc::clone(self);
        Link {
            outgoing,
            events,
            close: Box::new(move || Box::pin(async move { core.close(&tasks).await })),
        }
    }

    async fn close(&self, tasks: &LinkTasks) {
        tasks.abort_all();
        let (id, version) = {
            let mut session = self.session();
            session.initialized = false;
            (session.id.take(), session.version.clone())
        };
        let Some(id) = id else { return };
        end_session(
            &*self.transport,
            self.delete_request(id, version.as_deref()),
        )
        .await;
    }

    /// The DELETE that ends the session `id`.
    fn delete_request(&self, id: HeaderValue, version: Option<&str>) -> HttpRequest {
        let mut headers = self.extra.clone();
        headers.insert(MCP_SESSION_ID, id);
        if let Some(version) = version.and_then(header_value) {
            headers.insert(MCP_PROTOCOL_VERSION, version);
        }
        HttpRequest {
            method: Method::DELETE,
            headers,
            body: None,
        }
    }

    /// A new `initialize` starts a new session: the old one, which nobody will use again, is ended
    /// with a DELETE on the side, and forgotten.
    fn begin_session(&self) {
        let old = std::mem::take(&mut *self.session());
        if let Some(id) = old.id {
            let request = self.delete_request(id, old.version.as_deref());
            let transport = Arc::clone(&self.transport);
            tokio::spawn(async move { end_session(&*transport, request).await });
        }
    }

    /// Forgets the session the server no longer knows, unless a newer one replaced it meanwhile.
    fn forget_session(&self, sent: Option<&HeaderValue>) {
        let mut session = self.session();
        if sent.is_none() || session.id.as_ref() == sent {
            session.id = None;
            session.initialized = false;
        }
    }

    fn adopt_session_id(&self, headers: &HeaderMap) {
        let Some(id) = headers.get(&MCP_SESSION_ID) else {
            return;
        };
        // The specification allows visible ASCII only; anything else cannot be sent back safely.
        if id.is_empty() || !id.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b)) {
            tracing::warn!(
                "the upstream sent a malformed Mcp-Session-Id; continuing without a session"
            );
            return;
        }
        let mut id = id.clone();
        id.set_sensitive(true);
        self.session().id = Some(id);
    }

    /// Takes the version an answer to `initialize` negotiated for the later requests' header; `Err`
    /// says why it cannot be one (control characters, say), which makes the answer not MCP.
    fn adopt_version(&self, version: String) -> Result<(), String> {
        if header_value(&version).is_none() {
            return Err(format!(
                "a protocolVersion {version:?} that is not a valid header value"
            ));
        }
        self.session().version = Some(version);
        Ok(())
    }

    /// Headers of every request after initialize: extras, session id, protocol version.
    fn session_headers(&self) -> (HeaderMap, Option<HeaderValue>, Option<String>) {
        let mut headers = self.extra.clone();
        let session = self.session();
        if let Some(id) = &session.id {
            headers.insert(MCP_SESSION_ID, id.clone());
        }
        if let Some(version) = session.version.as_deref().and_then(header_value) {
            headers.insert(MCP_PROTOCOL_VERSION, version);
        }
        (headers, session.id.clone(), session.version.clone())
    }
}

/// The tasks of one link, so `close` can stop them.
#[derive(Default)]
struct LinkTasks {
    driver: Mutex<Option<AbortHandle>>,
    get_stream: Mutex<Option<AbortHandle>>,
}

impl LinkTasks {
    fn set_driver(&self, handle: AbortHandle) {
        *lock(&self.driver) = Some(handle);
    }

    fn set_get_stream(&self, handle: AbortHandle) {
        if let Some(old) = lock(&self.get_stream).replace(handle) {
            old.abort();
        }
    }

    fn stop_get_stream(&self) {
        if let Some(handle) = lock(&self.get_stream).take() {
            handle.abort();
        }
    }

    fn abort_all(&self) {
        self.stop_get_stream();
        if let Some(handle) = lock(&self.driver).take() {
            handle.abort();
        }
    }
}

fn lock<V>(mutex: &Mutex<V>) -> MutexGuard<'_, V> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes frames from the bridge in order and sends them.
struct Driver<T> {
    core: Arc<Core<T>>,
    events: mpsc::Sender<UpstreamEvent>,
    tasks: Arc<LinkTasks>,
    posts: JoinSet<Flow>,
    in_flight: HashMap<tokio::task::Id, Frame>,
    /// The GET stream found the endpoint refusing connections (the server is gone): the link closes,
    /// as when a POST finds it so, even while the client sends nothing.
    stream_refused: Arc<Notify>,
}

impl<T: Transport> Driver<T> {
    async fn run(mut self, mut outgoing: mpsc::Receiver<Frame>) {
        let stream_refused = Arc::clone(&self.stream_refused);
        loop {
            let flow = tokio::select! {
                biased;
                Some(done) = self.posts.join_next_with_id(), if !self.posts.is_empty() => {
                    self.finish_post(done).await
                }
                () = stream_refused.notified() => Flow::Refused,
                frame = outgoing.recv() => match frame {
                    Some(frame) => self.handle(frame).await,
                    None => break,
                },
            };
            if flow == Flow::Refused {
                self.shut_down(outgoing).await;
                return;
            }
        }
        // The bridge let go of the link: answers still in flight may arrive, then everything stops.
        while let Some(done) = self.posts.join_next_with_id().await {
            self.finish_post(done).await;
        }
        self.tasks.stop_get_stream();
    }

    async fn handle(&mut self, frame: Frame) -> Flow {
        let info = OutgoingPeek::peek(&frame);
        if info.is_initialize() {
            // Nothing else may be sent before the initialize answer is in.
            self.tasks.stop_get_stream();
            self.core.begin_session();
            return post(&self.core, frame, &info, &self.events).await;
        }
        if !info.is_request() {
            // Notifications and responses are answered at once (202); sending them in turn keeps their
            // order, `notifications/initialized` before any later request in particular.
            let flow = post(&self.core, frame, &info, &self.events).await;
            if info.is_initialized_notification() && flow == Flow::Continue {
                self.core.session().initialized = true;
                self.start_get_stream();
            }
            return flow;
        }
        let core = Arc::clone(&self.core);
        let events = self.events.clone();
        let sent = frame.clone();
        let handle = self
            .posts
            .spawn(async move { post(&core, sent, &info, &events).await });
        self.in_flight.insert(handle.id(), frame);
        Flow::Continue
    }

    async fn finish_post(&mut self, done: Result<(tokio::task::Id, Flow), JoinError>) -> Flow {
        match done {
            Ok((id, flow)) => {
                self.in_flight.remove(&id);
                flow
            }
            Err(err) => {
                if let Some(frame) = self.in_flight.remove(&err.id()) {
                    let reason = if err.is_panic() {
                        "the request's task failed".to_owned()
                    } else {
                        "the upstream stopped accepting connections while the request was in flight"
                            .to_owned()
                    };
                    send_event(
                        &self.events,
                        UpstreamEvent::Undelivered {
                            frame,
                            maybe_delivered: true,
                            reason,
                        },
                    )
                    .await;
                }
                Flow::Continue
            }
        }
    }

    /// The endpoint refused a connection: hand back what was not sent, give what is in flight a moment,
    /// then report the link closed.
    async fn shut_down(mut self, mut outgoing: mpsc::Receiver<Frame>) {
        let reason = format!("{} refused the connection", self.core.describe());
        outgoing.close();
        while let Ok(frame) = outgoing.try_recv() {
            let event = UpstreamEvent::Undelivered {
                frame,
                maybe_delivered: false,
                reason: reason.clone(),
            };
            send_event(&self.events, event).await;
        }
        let grace = tokio::time::sleep(REFUSED_GRACE);
        tokio::pin!(grace);
        loop {
            tokio::select! {
                _ = &mut grace => break,
                done = self.posts.join_next_with_id() => match done {
                    Some(done) => { self.finish_post(done).await; }
                    None => break,
                },
            }
        }
        self.posts.abort_all();
        while let Some(done) = self.posts.join_next_with_id().await {
            self.finish_post(done).await;
        }
        self.tasks.stop_get_stream();
        send_event(&self.events, UpstreamEvent::Closed { reason }).await;
    }

    fn start_get_stream(&mut self) {
        let core = Arc::clone(&self.core);
        let events = self.events.clone();
        let refused = Arc::clone(&self.stream_refused);
        let handle = tokio::spawn(async move { get_stream(core, events, &refused).await });
        self.tasks.set_get_stream(handle.abort_handle());
    }
}

async fn send_event(events: &mpsc::Sender<UpstreamEvent>, event: UpstreamEvent) {
    // A bridge that dropped the receiver has stopped listening; there is no one left to tell.
    let _ = events.send(event).await;
}

/// Sends a session's DELETE, giving it [`DELETE_TIMEOUT`]; the outcome is only logged.
async fn end_session<T: Transport>(transport: &T, request: HttpRequest) {
    match tokio::time::timeout(DELETE_TIMEOUT, transport.send(request)).await {
        Ok(Ok(response)) => {
            tracing::debug!(status = %response.status, "session ended with DELETE");
        }
        Ok(Err(err)) => tracing::debug!(?err, "DELETE of the session failed"),
        Err(_) => tracing::debug!("DELETE of the session timed out"),
    }
}

fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

fn header_value(text: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(text).ok()
}

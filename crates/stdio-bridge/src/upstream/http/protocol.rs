//! The Streamable HTTP client protocol, written once over the [`Transport`] seam: POST per message, JSON
//! and SSE answers, the session id and protocol version headers, the GET stream, session expiry, the
//! 2026-07-28 mirrored headers, and the DELETE that ends a session.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;
use http::{
    HeaderMap, HeaderName, HeaderValue, Method, StatusCode,
    header::{ACCEPT, CONTENT_TYPE, LOCATION},
};
use tokio::{
    sync::mpsc,
    task::{AbortHandle, JoinError, JoinSet},
};

use super::{
    headers::encode_mcp_value,
    peek::{Incoming, Outgoing},
    transport::{BodyStream, HttpRequest, HttpResponse, SendError, Transport},
};
use crate::{
    Error,
    upstream::{
        BoxFuture, Frame, Link, UpstreamEvent,
        sse::{SseEvent, SseParser},
    },
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
/// The GET stream gives up after this many failed attempts in a row.
const GET_ATTEMPTS: u32 = 5;
/// After the endpoint refused a connection, requests still in flight get this long to finish.
const REFUSED_GRACE: Duration = Duration::from_secs(2);
/// The session's DELETE may take this long; closing must stay quick.
const DELETE_TIMEOUT: Duration = Duration::from_millis(1500);

pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
pub(crate) const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

const ACCEPT_POST: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const ACCEPT_SSE: HeaderValue = HeaderValue::from_static("text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
/// The first revision whose requests carry `Mcp-Method` and `Mcp-Name`.
const MIRRORED_HEADERS_SINCE: &str = "2026-07-28";

/// The protocol client for one endpoint, shared by every link to it.
pub(crate) struct Core<T> {
    transport: T,
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
            transport,
            extra,
            session: Mutex::new(Session::default()),
        }
    }

    pub(crate) fn describe(&self) -> String {
        self.transport.describe()
    }

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
        let mut headers = self.extra.clone();
        headers.insert(MCP_SESSION_ID, id);
        if let Some(version) = version.as_deref().and_then(header_value) {
            headers.insert(MCP_PROTOCOL_VERSION, version);
        }
        let request = HttpRequest {
            method: Method::DELETE,
            headers,
            body: None,
        };
        match tokio::time::timeout(DELETE_TIMEOUT, self.transport.send(request)).await {
            Ok(Ok(response)) => {
                tracing::debug!(status = %response.status, "session ended with DELETE");
            }
            Ok(Err(err)) => tracing::debug!(?err, "DELETE of the session failed"),
            Err(_) => tracing::debug!("DELETE of the session timed out"),
        }
    }

    /// A new `initialize` starts a new session: forget the old one.
    fn begin_session(&self) {
        *self.session() = Session::default();
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

    fn adopt_version(&self, version: String) {
        if header_value(&version).is_some() {
            self.session().version = Some(version);
        }
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
}

impl<T: Transport> Driver<T> {
    async fn run(mut self, mut outgoing: mpsc::Receiver<Frame>) {
        loop {
            let flow = tokio::select! {
                biased;
                Some(done) = self.posts.join_next_with_id(), if !self.posts.is_empty() => {
                    self.finish_post(done).await
                }
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
        let info = Outgoing::peek(&frame);
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
        let handle = tokio::spawn(async move { get_stream(core, events).await });
        self.tasks.set_get_stream(handle.abort_handle());
    }
}

async fn send_event(events: &mpsc::Sender<UpstreamEvent>, event: UpstreamEvent) {
    // A bridge that dropped the receiver has stopped listening; there is no one left to tell.
    let _ = events.send(event).await;
}

/// POSTs one frame and reports what came back.
async fn post<T: Transport>(
    core: &Core<T>,
    frame: Frame,
    info: &Outgoing,
    events: &mpsc::Sender<UpstreamEvent>,
) -> Flow {
    let stateless = info.meta_version.is_some();
    let mut headers;
    let mut sent_session = None;
    let mirrored_version;
    if let Some(version) = &info.meta_version {
        // The stateless revision: the request names its own version and no session exists.
        headers = core.extra.clone();
        if let Some(value) = header_value(version) {
            headers.insert(MCP_PROTOCOL_VERSION, value);
        }
        core.session().stateless_version = Some(version.clone());
        mirrored_version = Some(version.clone());
    } else if info.is_initialize() {
        headers = core.extra.clone();
        mirrored_version = None;
    } else {
        let (session_headers, id, version) = core.session_headers();
        headers = session_headers;
        sent_session = id;
        mirrored_version = match version {
            Some(version) => Some(version),
            None => {
                let stateless = core.session().stateless_version.clone();
                if let Some(value) = stateless.as_deref().and_then(header_value) {
                    headers.insert(MCP_PROTOCOL_VERSION, value);
                }
                stateless
            }
        };
    }
    if mirrored_version.is_some_and(|v| v.as_str() >= MIRRORED_HEADERS_SINCE)
        && let Some(method) = &info.method
    {
        headers.insert(MCP_METHOD, encode_mcp_value(method));
        if let Some(name) = &info.name {
            headers.insert(MCP_NAME, encode_mcp_value(name));
        }
    }
    headers.insert(ACCEPT, ACCEPT_POST);
    headers.insert(CONTENT_TYPE, JSON);
    let request = HttpRequest {
        method: Method::POST,
        headers,
        body: Some(frame.clone()),
    };
    let response = match core.transport.send(request).await {
        Ok(response) => response,
        Err(SendError::NotSent(reason)) => {
            let event = UpstreamEvent::Undelivered {
                frame,
                maybe_delivered: false,
                reason,
            };
            send_event(events, event).await;
            return Flow::Refused;
        }
        Err(SendError::MaybeSent(reason)) => {
            let event = UpstreamEvent::Undelivered {
                frame,
                maybe_delivered: true,
                reason,
            };
            send_event(events, event).await;
            return Flow::Continue;
        }
    };
    let status = response.status;
    let session_rules = !stateless && !info.is_initialize();
    if status.is_redirection() {
        let message = redirect_message(status, &response.headers);
        send_event(events, protocol_error(frame, status, message)).await;
        return Flow::Continue;
    }
    if status == StatusCode::NOT_FOUND && session_rules && sent_session.is_some() {
        tracing::debug!(
            "session expired: the upstream answered {status} to a request with its session id"
        );
        core.forget_session(sent_session.as_ref());
        send_event(events, UpstreamEvent::SessionExpired { frame }).await;
        return Flow::Continue;
    }
    if status.is_success() {
        if info.is_initialize() {
            core.adopt_session_id(&response.headers);
        }
        read_success(core, response, frame, info, events).await;
        return Flow::Continue;
    }
    let body = match read_body(response.body, ERROR_BODY_LIMIT, true).await {
        Ok(body) => body,
        Err(reason) => {
            let message = format!("upstream answered HTTP {status} and then {reason}");
            send_event(events, protocol_error(frame, status, message)).await;
            return Flow::Continue;
        }
    };
    if status == StatusCode::BAD_REQUEST && session_rules && says_session_is_invalid(&body) {
        tracing::debug!(
            "session expired: the upstream answered {status} saying the session id is not valid"
        );
        core.forget_session(sent_session.as_ref());
        send_event(events, UpstreamEvent::SessionExpired { frame }).await;
        return Flow::Continue;
    }
    // A JSON-RPC error answering this very request is an answer, whatever the status.
    if let Some(id) = &info.id
        && let Ok((message, incoming)) = to_frame(body.clone())
        && incoming.is_error
        && incoming.response_id.as_ref() == Some(id)
    {
        send_event(events, UpstreamEvent::Message(message)).await;
        return Flow::Continue;
    }
    let message = error_message(status, &body);
    send_event(events, protocol_error(frame, status, message)).await;
    Flow::Continue
}

/// Handles a 2xx answer to a POST: nothing (202), one JSON message, or an event stream.
async fn read_success<T: Transport>(
    core: &Core<T>,
    response: HttpResponse,
    frame: Frame,
    info: &Outgoing,
    events: &mpsc::Sender<UpstreamEvent>,
) {
    let status = response.status;
    if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
        return;
    }
    match content_type(&response.headers).as_str() {
        "text/event-stream" => read_post_stream(core, response.body, frame, info, events).await,
        "application/json" => {
            let body = match read_body(response.body, MAX_MESSAGE, false).await {
                Ok(body) => body,
                Err(reason) => {
                    let event = broken(frame, status, reason);
                    send_event(events, event).await;
                    return;
                }
            };
            if body.iter().all(u8::is_ascii_whitespace) {
                if info.is_request() {
                    let message = format!("upstream answered HTTP {status} with an empty body");
                    send_event(events, protocol_error(frame, status, message)).await;
                }
                return;
            }
            match to_frame(body) {
                Ok((message, incoming)) => {
                    if info.is_initialize()
                        && let Some(version) = incoming.protocol_version
                    {
                        core.adopt_version(version);
                    }
                    send_event(events, UpstreamEvent::Message(message)).await;
                }
                Err(reason) => {
                    let message = format!("upstream answered HTTP {status} with {reason}");
                    send_event(events, protocol_error(frame, status, message)).await;
                }
            }
        }
        other => {
            let body = read_body(response.body, ERROR_BODY_LIMIT, true)
                .await
                .unwrap_or_default();
            if !info.is_request() && body.iter().all(u8::is_ascii_whitespace) {
                // Some servers answer a notification with 200 and nothing; that is fine.
                return;
            }
            let shown = if other.is_empty() { "none" } else { other };
            let message = format!(
                "upstream answered HTTP {status} with content type {shown}, not application/json or text/event-stream"
            );
            send_event(events, protocol_error(frame, status, message)).await;
        }
    }
}

/// What reading one event stream found.
#[derive(Debug, Default)]
struct StreamState {
    /// The answer to the request arrived (or none is expected).
    answered: bool,
    /// An event that was not JSON-RPC, and why.
    bad_event: Option<String>,
    /// The id of the last event, for `Last-Event-ID`.
    last_event_id: String,
    /// The reconnection delay the server asked for.
    retry_ms: Option<u64>,
    /// How many events arrived.
    events: usize,
}

/// How an event stream ended.
#[derive(Debug)]
enum StreamEnd {
    /// The server closed it.
    Ended,
    /// The connection broke.
    Broke(String),
    /// An event outgrew the size limit.
    TooLarge,
}

/// Relays the messages of one event stream until it ends, watching for the answer to `info`.
async fn pump<T: Transport>(
    core: &Core<T>,
    mut body: BodyStream,
    info: &Outgoing,
    events: &mpsc::Sender<UpstreamEvent>,
    state: &mut StreamState,
) -> StreamEnd {
    let mut parser = SseParser::new(MAX_MESSAGE);
    let mut batch = Vec::new();
    let end = loop {
        let chunk = match body.next().await {
            None => break StreamEnd::Ended,
            Some(Err(reason)) => break StreamEnd::Broke(reason),
            Some(Ok(chunk)) => chunk,
        };
        if parser.feed(&chunk, &mut batch).is_err() {
            break StreamEnd::TooLarge;
        }
        for event in batch.drain(..) {
            state.events += 1;
            match message_of(event) {
                None => {}
                Some(Ok((message, incoming))) => {
                    if incoming.response_id.is_some() && incoming.response_id == info.id {
                        state.answered = true;
                        if info.is_initialize()
                            && let Some(version) = incoming.protocol_version
                        {
                            core.adopt_version(version);
                        }
                    }
                    send_event(events, UpstreamEvent::Message(message)).await;
                }
                Some(Err(reason)) => {
                    tracing::warn!(%reason, "skipping an event from the upstream that is not JSON-RPC");
                    state.bad_event = Some(reason);
                }
            }
        }
        if !parser.last_event_id().is_empty() {
            state.last_event_id = parser.last_event_id().to_owned();
        }
    };
    if let Some(ms) = parser.retry_ms() {
        state.retry_ms = Some(ms);
    }
    end
}

/// Reads the event stream answering one POST. When it ends before the answer and its events had ids,
/// the stream is resumed with a GET carrying `Last-Event-ID`, as servers that close streams early expect.
async fn read_post_stream<T: Transport>(
    core: &Core<T>,
    body: BodyStream,
    frame: Frame,
    info: &Outgoing,
    events: &mpsc::Sender<UpstreamEvent>,
) {
    let mut state = StreamState {
        answered: !info.is_request() || info.batch,
        ..StreamState::default()
    };
    let mut end = pump(core, body, info, events, &mut state).await;
    let mut attempts = 0;
    while !state.answered
        && state.bad_event.is_none()
        && !matches!(end, StreamEnd::TooLarge)
        && !state.last_event_id.is_empty()
        && info.meta_version.is_none()
        && attempts < GET_ATTEMPTS
    {
        attempts += 1;
        let delay = state
            .retry_ms
            .map_or(DEFAULT_RETRY, Duration::from_millis)
            .min(MAX_RETRY);
        tokio::time::sleep(delay).await;
        let (mut headers, _, _) = core.session_headers();
        headers.insert(ACCEPT, ACCEPT_SSE);
        if let Some(id) = header_value(&state.last_event_id) {
            headers.insert(LAST_EVENT_ID, id);
        }
        let request = HttpRequest {
            method: Method::GET,
            headers,
            body: None,
        };
        match core.transport.send(request).await {
            Err(err) => {
                tracing::debug!(?err, "resuming the answer's event stream failed");
                end = StreamEnd::Broke(err.reason().to_owned());
            }
            Ok(response)
                if response.status.is_success()
                    && content_type(&response.headers) == "text/event-stream" =>
            {
                tracing::debug!(last_event_id = %state.last_event_id, "resumed the answer's event stream");
                end = pump(core, response.body, info, events, &mut state).await;
            }
            Ok(response) => {
                tracing::debug!(status = %response.status, "the upstream refused to resume the answer's event stream");
                break;
            }
        }
    }
    if state.answered {
        return;
    }
    let event = match (state.bad_event, end) {
        (Some(reason), _) => protocol_error(
            frame,
            StatusCode::OK,
            format!("upstream sent an event with {reason}"),
        ),
        (None, StreamEnd::TooLarge) => protocol_error(
            frame,
            StatusCode::OK,
            format!("upstream sent an event over the {MAX_MESSAGE}-byte limit"),
        ),
        (None, StreamEnd::Broke(reason)) => broken(frame, StatusCode::OK, reason),
        (None, StreamEnd::Ended) => UpstreamEvent::Undelivered {
            frame,
            maybe_delivered: true,
            reason: "the upstream's event stream ended before the answer".to_owned(),
        },
    };
    send_event(events, event).await;
}

/// The server's own stream (GET), opened after the handshake and reopened after a drop with
/// `Last-Event-ID`, until the server says it offers none, the session changes, or the link closes.
async fn get_stream<T: Transport>(core: Arc<Core<T>>, events: mpsc::Sender<UpstreamEvent>) {
    let session_at_start = core.session().id.clone();
    let mut last_event_id = String::new();
    let mut delay = DEFAULT_RETRY;
    let mut failures = 0;
    loop {
        let (mut headers, session, _) = core.session_headers();
        if session != session_at_start {
            return;
        }
        headers.insert(ACCEPT, ACCEPT_SSE);
        if let Some(id) = header_value(&last_event_id).filter(|_| !last_event_id.is_empty()) {
            headers.insert(LAST_EVENT_ID, id);
        }
        let request = HttpRequest {
            method: Method::GET,
            headers,
            body: None,
        };
        let mut received = false;
        match core.transport.send(request).await {
            Err(err) => tracing::debug!(?err, "the upstream's event stream could not be opened"),
            Ok(response) => {
                let status = response.status;
                if status == StatusCode::METHOD_NOT_ALLOWED {
                    tracing::debug!("the upstream offers no event stream of its own");
                    return;
                }
                if status.is_client_error() || status.is_redirection() {
                    tracing::debug!(%status, "the upstream refused its event stream");
                    return;
                }
                if status.is_success() {
                    if content_type(&response.headers) != "text/event-stream" {
                        tracing::debug!(%status, "the upstream's GET answer is not an event stream");
                        return;
                    }
                    failures = 0;
                    let mut state = StreamState {
                        last_event_id: last_event_id.clone(),
                        ..StreamState::default()
                    };
                    let end = pump(
                        &core,
                        response.body,
                        &Outgoing::default(),
                        &events,
                        &mut state,
                    )
                    .await;
                    if matches!(end, StreamEnd::TooLarge) {
                        tracing::warn!(
                            "the upstream's event stream sent an event over the size limit"
                        );
                    }
                    received = state.events > 0 || state.last_event_id != last_event_id;
                    last_event_id = state.last_event_id;
                    if let Some(ms) = state.retry_ms {
                        delay = Duration::from_millis(ms).min(MAX_RETRY);
                    }
                } else {
                    tracing::debug!(%status, "the upstream's event stream failed");
                }
            }
        }
        if received {
            failures = 0;
        } else {
            failures += 1;
            if failures >= GET_ATTEMPTS {
                tracing::debug!("giving up on the upstream's event stream");
                return;
            }
        }
        let wait = delay.saturating_mul(1 << failures.min(5)).min(MAX_RETRY);
        tokio::time::sleep(wait).await;
    }
}

/// The JSON-RPC message an SSE event carries; `None` for events of other types and empty ones.
fn message_of(event: SseEvent) -> Option<Result<(Frame, Incoming), String>> {
    if !event.is_message() || event.data.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(to_frame(event.data))
}

/// Checks that `body` is one JSON-RPC message (an object or a batch) and makes it a frame: trimmed, and
/// on one line, which is safe because a raw line break in valid JSON can only be whitespace.
fn to_frame(body: Bytes) -> Result<(Frame, Incoming), String> {
    let Some(incoming) = Incoming::peek(&body) else {
        return Err(format!("a body that is not JSON-RPC ({})", quote(&body)));
    };
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    let end = body
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    let body = body.slice(start..end);
    let frame = if memchr::memchr2(b'\n', b'\r', &body).is_some() {
        let mut one_line = BytesMut::with_capacity(body.len());
        for part in body.split(|b| *b == b'\n' || *b == b'\r') {
            one_line.extend_from_slice(part);
        }
        one_line.freeze()
    } else {
        body
    };
    Ok((frame, incoming))
}

/// Reads a whole body, up to `limit` bytes; `truncate` keeps the first `limit` bytes of a longer one
/// instead of failing.
async fn read_body(mut body: BodyStream, limit: usize, truncate: bool) -> Result<Bytes, String> {
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        if buf.len() + chunk.len() > limit {
            if truncate {
                let room = limit - buf.len();
                buf.extend_from_slice(&chunk[..room]);
                break;
            }
            return Err(format!("sent a body over the {limit}-byte limit"));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// The event for a frame whose answer broke off after it was sent.
fn broken(frame: Frame, status: StatusCode, reason: String) -> UpstreamEvent {
    if reason.starts_with("sent a body over") {
        return protocol_error(frame, status, format!("upstream {reason}"));
    }
    UpstreamEvent::Undelivered {
        frame,
        maybe_delivered: true,
        reason: format!("the connection broke while the answer streamed: {reason}"),
    }
}

fn protocol_error(frame: Frame, status: StatusCode, message: String) -> UpstreamEvent {
    UpstreamEvent::ProtocolError {
        frame,
        status: Some(status.as_u16()),
        message,
    }
}

fn redirect_message(status: StatusCode, headers: &HeaderMap) -> String {
    let target = headers
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(|location| {
            // The query may carry a token; it is not needed to explain the refusal.
            let cut = location.find(['?', '#']).unwrap_or(location.len());
            format!(" to {}", &location[..cut])
        })
        .unwrap_or_default();
    format!(
        "upstream answered HTTP {status} (a redirect{target}); redirects are refused so that credentials never follow them: use the final address"
    )
}

fn error_message(status: StatusCode, body: &[u8]) -> String {
    if body.iter().all(u8::is_ascii_whitespace) {
        format!("upstream answered HTTP {status}")
    } else {
        format!("upstream answered HTTP {status}: {}", quote(body))
    }
}

/// The start of a body, on one line, for an error message.
fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out = String::new();
    for (i, word) in text.split_whitespace().enumerate() {
        if out.len() + word.len() > ERROR_QUOTE_CHARS {
            out.push('…');
            break;
        }
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Whether a 400 answer says the session id is missing, invalid or unknown.
pub(crate) fn says_session_is_invalid(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body).to_ascii_lowercase();
    text.contains("session")
        && [
            "missing",
            "invalid",
            "unknown",
            "no valid",
            "not found",
            "expired",
            "required",
            "terminated",
        ]
        .iter()
        .any(|word| text.contains(word))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_errors_are_recognised_in_400_bodies() {
        let cases: &[(&str, bool)] = &[
            ("Bad Request: No valid session ID provided", true),
            (
                r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
                true,
            ),
            ("Bad Request: Missing session ID", true),
            ("Invalid or expired session", true),
            ("Session not found", true),
            ("unknown session id abc", true),
            ("Bad Request: invalid JSON", false),
            ("Session", false),
            ("", false),
        ];
        for (body, expected) in cases {
            assert_eq!(
                says_session_is_invalid(body.as_bytes()),
                *expected,
                "{body}"
            );
        }
    }

    #[test]
    fn frames_are_trimmed_and_put_on_one_line() {
        let (frame, incoming) =
            to_frame(Bytes::from_static(b"\n {\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 1,\n  \"result\": {\"text\": \"a\\nb\"}\n}\n")).unwrap();
        assert_eq!(
            &frame[..],
            br#"{  "jsonrpc": "2.0",  "id": 1,  "result": {"text": "a\nb"}}"#
        );
        assert_eq!(incoming.response_id, Some(serde_json::json!(1)));
        let (frame, _) = to_frame(Bytes::from_static(br#"{"a":1}"#)).unwrap();
        assert_eq!(&frame[..], br#"{"a":1}"#);
        let err =
            to_frame(Bytes::from_static(b"<html><body>Bad Gateway</body></html>")).unwrap_err();
        assert_eq!(
            err,
            "a body that is not JSON-RPC (<html><body>Bad Gateway</body></html>)"
        );
    }

    #[test]
    fn error_messages_quote_the_start_of_the_body() {
        assert_eq!(
            error_message(
                StatusCode::INTERNAL_SERVER_ERROR,
                b"<html>\n  <h1>oops</h1>\n</html>"
            ),
            "upstream answered HTTP 500 Internal Server Error: <html> <h1>oops</h1> </html>"
        );
        assert_eq!(
            error_message(StatusCode::BAD_GATEWAY, b""),
            "upstream answered HTTP 502 Bad Gateway"
        );
        let long = "word ".repeat(100);
        let message = error_message(StatusCode::BAD_REQUEST, long.as_bytes());
        assert!(message.ends_with('…') && message.len() < 260, "{message}");
    }

    #[test]
    fn redirects_are_explained_without_their_query() {
        let mut headers = HeaderMap::new();
        headers.insert(
            LOCATION,
            HeaderValue::from_static("https://elsewhere.example/mcp?token=abc"),
        );
        assert_eq!(
            redirect_message(StatusCode::TEMPORARY_REDIRECT, &headers),
            "upstream answered HTTP 307 Temporary Redirect (a redirect to https://elsewhere.example/mcp); redirects are refused so that credentials never follow them: use the final address"
        );
    }
}

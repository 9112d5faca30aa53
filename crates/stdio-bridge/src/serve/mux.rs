//! The multiplexer: many MCP sessions onto one upstream (usually one stdio child process).
//!
//! One task owns all routing state, so no lock is ever held across an await:
//! - the first session's `initialize` is forwarded and its result cached; every later `initialize` is
//!   answered from the cache with the caller's own id, and only the first `notifications/initialized`
//!   reaches the upstream;
//! - every request id becomes a fresh number upstream and is mapped back on the answer; progress tokens
//!   likewise, and `notifications/cancelled` follows the mapping;
//! - list changes, `notifications/message` and other notifications go to every session;
//!   `notifications/resources/updated` only to the sessions that subscribed to that URI;
//! - a server-to-client request (roots, sampling, elicitation, ping) goes to the session whose request
//!   is in flight (the most recent one if several), and its answer goes back with the upstream's own id;
//! - when the upstream exits, every session's in-flight requests get an error with their own ids, the
//!   upstream is started again and re-initialized from the cached handshake, and sessions go on.
//!
//! What cannot be shared: `logging/setLevel` sets the one upstream's level for everybody (the last
//! session to set it wins), and the upstream sees one client, so roots that differ between sessions
//! cannot be told apart (a `roots/list` request goes to one session).

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::stream::{Events, Outbox as StreamOutbox};
use crate::{
    UPSTREAM_EXITED, UPSTREAM_PROTOCOL_ERROR, UPSTREAM_UNREACHABLE, Upstream, UpstreamEvent,
    jsonrpc::{
        self, CONNECTION_LOST, EXITED_IN_FLIGHT, INITIALIZED, NOT_MCP, data, error, id_of,
        method_of, to_frame,
    },
    upstream::Link,
};

/// A session's number inside the multiplexer.
pub(crate) type SessionNo = u64;

/// Where the answers to a POST's requests go (and, for an SSE answer, the messages tied to them).
pub(crate) type Outbox = mpsc::UnboundedSender<Value>;

/// Commands from the HTTP side.
pub(crate) enum Command {
    /// A new session.
    Open { reply: oneshot::Sender<SessionNo> },
    /// A session ended (DELETE or expiry).
    Close { session: SessionNo },
    /// The session's GET stream opened, resuming after `last_event` when the client sent
    /// `Last-Event-ID`; messages not tied to a request go there.
    Stream {
        session: SessionNo,
        outbox: StreamOutbox,
        last_event: Option<u64>,
    },
    /// Stop the upstream gracefully; `done` fires once it stopped.
    Shutdown { done: oneshot::Sender<()> },
    /// One message from a session. `answers` receives the answer to it when it is a request, and, when
    /// `related` is set, the messages tied to that request (progress, server-to-client requests).
    Message {
        session: SessionNo,
        message: Value,
        answers: Option<Outbox>,
        related: bool,
    },
}

/// The handle the HTTP side holds.
#[derive(Clone)]
pub(crate) struct Mux {
    tx: mpsc::UnboundedSender<Command>,
}

impl Mux {
    /// Starts the multiplexer's task in front of `upstream`.
    pub(crate) fn start(upstream: Arc<dyn Upstream>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let (conn_tx, conn_rx) = mpsc::unbounded_channel();
        let state = State {
            upstream,
            conn_tx,
            link: None,
            connecting: false,
            attempts: 0,
            held: Vec::new(),
            next_id: 1,
            next_token: 1,
            next_session: 1,
            sessions: BTreeMap::new(),
            routes: HashMap::new(),
            tokens: HashMap::new(),
            s2c: HashMap::new(),
            internal: HashSet::new(),
            init: Init::None,
            initialized_sent: false,
            subscriptions: HashMap::new(),
            log_level: None,
        };
        tokio::spawn(state.run(rx, conn_rx));
        Self { tx }
    }

    pub(crate) async fn open(&self) -> Option<SessionNo> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Command::Open { reply }).ok()?;
        rx.await.ok()
    }

    /// Stops the upstream gracefully and ends the multiplexer.
    pub(crate) async fn shutdown(&self) {
        let (done, rx) = oneshot::channel();
        if self.tx.send(Command::Shutdown { done }).is_ok() {
            let _ = rx.await;
        }
    }

    pub(crate) fn send(&self, command: Command) {
        let _ = self.tx.send(command);
    }
}

#[derive(Default)]
struct Session {
    /// Messages not tied to a request: its GET stream, and the recent ones retained.
    events: Events,
}

/// A request in flight upstream.
struct Route {
    session: SessionNo,
    client_id: Value,
    answers: Option<Outbox>,
    related: bool,
    token: Option<u64>,
    /// The first `initialize`, whose answer is cached.
    initialize: Option<Value>,
}

enum Init {
    /// Nobody initialized yet.
    None,
    /// The first session's `initialize` is upstream; later ones wait.
    Pending {
        waiting: Vec<(SessionNo, Value, Option<Outbox>)>,
    },
    /// The handshake: the first `initialize` request's params and its result.
    Done { params: Value, result: Value },
}

struct State {
    upstream: Arc<dyn Upstream>,
    conn_tx: mpsc::UnboundedSender<Result<Link, crate::Error>>,
    link: Option<LinkState>,
    connecting: bool,
    attempts: u32,
    /// Frames for the upstream while it (re)starts, in order.
    held: Vec<Value>,
    next_id: u64,
    next_token: u64,
    next_session: SessionNo,
    sessions: BTreeMap<SessionNo, Session>,
    routes: HashMap<u64, Route>,
    /// Upstream progress token → (session, the client's token, upstream request id).
    tokens: HashMap<u64, (SessionNo, Value, u64)>,
    /// Server-to-client requests in flight: upstream id (as JSON text) → session.
    s2c: HashMap<String, SessionNo>,
    /// Ids of requests the multiplexer itself sent (replayed handshake, subscriptions); answers swallowed.
    internal: HashSet<u64>,
    init: Init,
    initialized_sent: bool,
    subscriptions: HashMap<String, HashSet<SessionNo>>,
    log_level: Option<Value>,
}

struct LinkState {
    outgoing: mpsc::UnboundedSender<Bytes>,
    /// Fires once the upstream was closed after `outgoing` was dropped.
    closed: oneshot::Receiver<()>,
    /// Until the replayed handshake is answered, frames are held.
    ready: bool,
    replay_id: Option<u64>,
}

/// Where the upstream sends a message, per its kind.
fn id_key(id: &Value) -> String {
    id.to_string()
}

impl State {
    async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<Command>,
        mut connections: mpsc::UnboundedReceiver<Result<Link, crate::Error>>,
    ) {
        self.connect();
        let mut events: Option<mpsc::Receiver<UpstreamEvent>> = None;
        loop {
            tokio::select! {
                command = commands.recv() => match command {
                    Some(Command::Shutdown { done }) => {
                        if let Some(link) = self.link.take() {
                            drop(link.outgoing);
                            let _ = tokio::time::timeout(Duration::from_secs(3), link.closed).await;
                        }
                        let _ = done.send(());
                        break;
                    }
                    Some(command) => self.command(command),
                    None => break,
                },
                Some(result) = connections.recv() => {
                    self.connecting = false;
                    match result {
                        Ok(link) => events = Some(self.linked(link)),
                        Err(e) => {
                            tracing::warn!("cannot start the upstream {}: {e}", self.upstream.describe());
                            self.fail_held(&e.to_string());
                            self.connect();
                        }
                    }
                }
                event = async { events.as_mut().expect("guarded").recv().await }, if events.is_some() => {
                    match event {
                        Some(UpstreamEvent::Message(frame)) => self.on_upstream_frame(&frame),
                        Some(UpstreamEvent::Closed { reason }) => {
                            events = None;
                            self.crashed(&reason);
                        }
                        None => {
                            events = None;
                            self.crashed("the upstream link closed");
                        }
                        Some(UpstreamEvent::Undelivered { frame, maybe_delivered, reason }) => {
                            self.undelivered(&frame, maybe_delivered, &reason);
                        }
                        Some(UpstreamEvent::ProtocolError { frame, status, message }) => {
                            self.protocol_error(&frame, status, &message);
                        }
                        Some(UpstreamEvent::SessionExpired { frame }) => {
                            // The upstream forgot the handshake: replay it, then the frame.
                            self.replay_handshake();
                            if let Ok(value) = serde_json::from_slice::<Value>(&frame) {
                                self.send_upstream(value);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Starts (or restarts) the upstream, with a growing pause after failures.
    fn connect(&mut self) {
        if self.connecting {
            return;
        }
        self.connecting = true;
        let delay = match self.attempts {
            0 => Duration::ZERO,
            n => Duration::from_millis(100u64 << n.min(5)),
        };
        self.attempts += 1;
        let upstream = Arc::clone(&self.upstream);
        let tx = self.conn_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(upstream.connect().await);
        });
    }

    fn linked(&mut self, link: Link) -> mpsc::Receiver<UpstreamEvent> {
        let Link {
            outgoing,
            events,
            close,
        } = link;
        let (tx, mut rx) = mpsc::unbounded_channel::<Bytes>();
        let (closed_tx, closed) = oneshot::channel();
        // A separate task writes to the upstream, so a slow reader never stalls routing.
        tokio::spawn(async move {
            while let Some(frame) = rx.recv().await {
                if outgoing.send(frame).await.is_err() {
                    break;
                }
            }
            drop(outgoing);
            close().await;
            let _ = closed_tx.send(());
        });
        self.link = Some(LinkState {
            outgoing: tx,
            closed,
            ready: true,
            replay_id: None,
        });
        if matches!(self.init, Init::Done { .. }) {
            self.replay_handshake();
        } else {
            self.flush_held();
        }
        events
    }

    /// Sends the cached `initialize` (then `notifications/initialized`) to a fresh upstream, and holds
    /// everything else until it is answered.
    fn replay_handshake(&mut self) {
        let Init::Done { params, .. } = &self.init else {
            return;
        };
        let id = self.next_id;
        self.next_id += 1;
        self.internal.insert(id);
        let frame = jsonrpc::initialize(&json!(id), params);
        if let Some(link) = &mut self.link {
            link.ready = false;
            link.replay_id = Some(id);
            let _ = link.outgoing.send(to_frame(&frame));
        }
    }

    fn handshake_replayed(&mut self) {
        let mut frames = vec![json!({"jsonrpc": "2.0", "method": INITIALIZED})];
        if let Some(level) = self.log_level.clone() {
            let id = self.internal_id();
            frames.push(json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel", "params": {"level": level}}));
        }
        let uris: Vec<String> = self.subscriptions.keys().cloned().collect();
        for uri in uris {
            let id = self.internal_id();
            frames.push(json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": uri}}));
        }
        if let Some(link) = &mut self.link {
            link.ready = true;
            link.replay_id = None;
            for frame in &frames {
                let _ = link.outgoing.send(to_frame(frame));
            }
        }
        // The server may have changed while it was down: tell every session to list again.
        for method in self.list_changed_methods() {
            self.broadcast(jsonrpc::notification(method));
        }
        self.flush_held();
    }

    fn list_changed_methods(&self) -> Vec<&'static str> {
        let Init::Done { result, .. } = &self.init else {
            return Vec::new();
        };
        jsonrpc::list_changed(&result["capabilities"])
    }

    fn internal_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.internal.insert(id);
        id
    }

    fn flush_held(&mut self) {
        let held = std::mem::take(&mut self.held);
        for frame in held {
            self.send_upstream(frame);
        }
    }

    fn send_upstream(&mut self, frame: Value) {
        match &self.link {
            Some(link) if link.ready => {
                if link.outgoing.send(to_frame(&frame)).is_err() {
                    self.held.push(frame);
                }
            }
            _ => self.held.push(frame),
        }
    }

    fn crashed(&mut self, reason: &str) {
        tracing::warn!(
            "the upstream {} exited: {reason}; restarting it",
            self.upstream.describe()
        );
        self.link = None;
        self.internal.clear();
        let waiting = match std::mem::replace(&mut self.init, Init::None) {
            Init::Pending { waiting } => waiting,
            other => {
                self.init = other;
                Vec::new()
            }
        };
        if matches!(self.init, Init::None) {
            // The first handshake died with the upstream: the next initialize is forwarded afresh.
            self.initialized_sent = false;
        }
        // Every request in flight gets an error with its own id: its outcome is unknown, never replayed.
        // Requests still held (never sent) wait for the restarted upstream instead.
        let held: HashSet<u64> = self
            .held
            .iter()
            .filter_map(|f| id_of(f).and_then(Value::as_u64))
            .collect();
        let in_flight: Vec<u64> = self
            .routes
            .keys()
            .copied()
            .filter(|id| !held.contains(id))
            .collect();
        let routes: Vec<Route> = in_flight
            .into_iter()
            .filter_map(|id| self.routes.remove(&id))
            .collect();
        let upstream = json!({"message": format!("{} {reason}", self.upstream.describe())});
        let data = data("upstream_exited", Some(upstream));
        for route in routes {
            let frame = error(
                &route.client_id,
                UPSTREAM_EXITED,
                EXITED_IN_FLIGHT,
                data.clone(),
            );
            self.answer(&route, frame);
        }
        for (session, id, answers) in waiting {
            let frame = error(&id, UPSTREAM_EXITED, EXITED_IN_FLIGHT, data.clone());
            self.deliver_answer(session, answers.as_ref(), frame);
        }
        let routes = &self.routes;
        self.tokens.retain(|_, (_, _, up)| routes.contains_key(up));
        self.s2c.clear();
        self.connect();
    }

    /// The upstream could not be started: the requests held for it get an error now rather than wait for
    /// a start that may never come; it is retried for the requests that follow.
    fn fail_held(&mut self, reason: &str) {
        let held = std::mem::take(&mut self.held);
        for frame in held {
            let Some(up) = id_of(&frame).and_then(Value::as_u64) else {
                continue;
            };
            if method_of(&frame).is_none() {
                continue;
            }
            if let Some(route) = self.routes.remove(&up) {
                if let Some(t) = route.token {
                    self.tokens.remove(&t);
                }
                let data = data("upstream_unreachable", Some(json!({"message": reason})));
                let frame = error(
                    &route.client_id,
                    UPSTREAM_UNREACHABLE,
                    "upstream unreachable",
                    data,
                );
                if route.initialize.is_some() {
                    let waiting = match std::mem::replace(&mut self.init, Init::None) {
                        Init::Pending { waiting } => waiting,
                        other => {
                            self.init = other;
                            Vec::new()
                        }
                    };
                    for (session, id, answers) in waiting {
                        let mut copy = frame.clone();
                        copy["id"] = id;
                        self.deliver_answer(session, answers.as_ref(), copy);
                    }
                }
                self.answer(&route, frame);
            }
        }
    }

    fn undelivered(&mut self, frame: &[u8], maybe_delivered: bool, reason: &str) {
        let Ok(value) = serde_json::from_slice::<Value>(frame) else {
            return;
        };
        if !maybe_delivered {
            self.held.push(value);
            return;
        }
        if let Some(route) = id_of(&value)
            .and_then(Value::as_u64)
            .and_then(|id| self.routes.remove(&id))
        {
            let data = data("connection_lost", Some(json!({"message": reason})));
            let frame = error(&route.client_id, UPSTREAM_EXITED, CONNECTION_LOST, data);
            self.answer(&route, frame);
        }
    }

    fn protocol_error(&mut self, frame: &[u8], status: Option<u16>, message: &str) {
        let Ok(value) = serde_json::from_slice::<Value>(frame) else {
            return;
        };
        if let Some(route) = id_of(&value)
            .and_then(Value::as_u64)
            .and_then(|id| self.routes.remove(&id))
        {
            let upstream = json!({"status": status, "message": message});
            let data = data("upstream_protocol_error", Some(upstream));
            let frame = error(&route.client_id, UPSTREAM_PROTOCOL_ERROR, NOT_MCP, data);
            self.answer(&route, frame);
        }
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Open { reply } => {
                let no = self.next_session;
                self.next_session += 1;
                self.sessions.insert(no, Session::default());
                let _ = reply.send(no);
            }
            Command::Close { session } => self.close_session(session),
            Command::Shutdown { .. } => {}
            Command::Stream {
                session,
                outbox,
                last_event,
            } => {
                if let Some(s) = self.sessions.get_mut(&session) {
                    s.events.open(session, outbox, last_event);
                }
            }
            Command::Message {
                session,
                message,
                answers,
                related,
            } => {
                if self.sessions.contains_key(&session) {
                    self.on_session_message(session, message, answers, related);
                }
            }
        }
    }

    fn close_session(&mut self, session: SessionNo) {
        if self.sessions.remove(&session).is_none() {
            return;
        }
        // Its requests in flight are cancelled upstream; their answers would have nowhere to go.
        let ids: Vec<u64> = self
            .routes
            .iter()
            .filter(|(_, r)| r.session == session)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.routes.remove(&id);
            self.send_upstream(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "the session ended"}}),
            );
        }
        self.tokens.retain(|_, (s, _, _)| *s != session);
        // Server-to-client requests it was asked get an error, so the upstream does not wait forever.
        let asked: Vec<String> = self
            .s2c
            .iter()
            .filter(|(_, s)| **s == session)
            .map(|(id, _)| id.clone())
            .collect();
        for key in asked {
            self.s2c.remove(&key);
            if let Ok(id) = serde_json::from_str::<Value>(&key) {
                self.send_upstream(json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32603, "message": "the session this request went to has ended"}}));
            }
        }
        let mut gone = Vec::new();
        for (uri, subscribers) in &mut self.subscriptions {
            if subscribers.remove(&session) && subscribers.is_empty() {
                gone.push(uri.clone());
            }
        }
        for uri in gone {
            self.subscriptions.remove(&uri);
            let id = self.internal_id();
            self.send_upstream(json!({"jsonrpc": "2.0", "id": id, "method": "resources/unsubscribe", "params": {"uri": uri}}));
        }
        if let Init::Pending { waiting } = &mut self.init {
            waiting.retain(|(s, _, _)| *s != session);
        }
    }

    fn on_session_message(
        &mut self,
        session: SessionNo,
        mut message: Value,
        answers: Option<Outbox>,
        related: bool,
    ) {
        let method = method_of(&message).map(str::to_owned);
        let id = id_of(&message).cloned();
        match (method.as_deref(), id) {
            (Some(method), Some(client_id)) => {
                self.request(session, method, client_id, message, answers, related)
            }
            (Some(INITIALIZED), None) => {
                if !self.initialized_sent && matches!(self.init, Init::Done { .. }) {
                    self.initialized_sent = true;
                    self.send_upstream(message);
                }
            }
            (Some("notifications/cancelled"), None) => {
                let wanted = message["params"]["requestId"].clone();
                let found = self
                    .routes
                    .iter()
                    .find(|(_, r)| r.session == session && r.client_id == wanted)
                    .map(|(id, _)| *id);
                if let Some(up) = found {
                    message["params"]["requestId"] = json!(up);
                    self.send_upstream(message);
                }
            }
            (Some(_), None) => self.send_upstream(message),
            (None, Some(client_id)) => {
                // An answer to a server-to-client request: back with the upstream's own id.
                let key = id_key(&client_id);
                if self.s2c.get(&key) == Some(&session) {
                    self.s2c.remove(&key);
                    self.send_upstream(message);
                }
            }
            (None, None) => {}
        }
    }

    fn request(
        &mut self,
        session: SessionNo,
        method: &str,
        client_id: Value,
        mut message: Value,
        answers: Option<Outbox>,
        related: bool,
    ) {
        match method {
            "initialize" => match &mut self.init {
                Init::Done { result, .. } => {
                    let frame = json!({"jsonrpc": "2.0", "id": client_id, "result": result});
                    self.deliver_answer(session, answers.as_ref(), frame);
                    return;
                }
                Init::Pending { waiting } => {
                    waiting.push((session, client_id, answers));
                    return;
                }
                Init::None => {
                    self.init = Init::Pending {
                        waiting: Vec::new(),
                    };
                }
            },
            "resources/subscribe" | "resources/unsubscribe" => {
                let uri = message["params"]["uri"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let subscribe = method == "resources/subscribe";
                let subscribers = self.subscriptions.entry(uri.clone()).or_default();
                let others = subscribers.iter().any(|s| *s != session);
                if subscribe {
                    subscribers.insert(session);
                } else {
                    subscribers.remove(&session);
                    if subscribers.is_empty() {
                        self.subscriptions.remove(&uri);
                    }
                }
                if others {
                    // The upstream already sends (or still must send) updates for this URI.
                    let frame = json!({"jsonrpc": "2.0", "id": client_id, "result": {}});
                    self.deliver_answer(session, answers.as_ref(), frame);
                    return;
                }
            }
            "logging/setLevel" => self.log_level = Some(message["params"]["level"].clone()),
            _ => {}
        }
        let up = self.next_id;
        self.next_id += 1;
        message["id"] = json!(up);
        let mut token = None;
        if let Some(meta) = message.get_mut("params").and_then(|p| p.get_mut("_meta"))
            && let Some(client_token) = meta.get("progressToken").filter(|t| !t.is_null()).cloned()
        {
            let t = self.next_token;
            self.next_token += 1;
            meta["progressToken"] = json!(t);
            self.tokens.insert(t, (session, client_token, up));
            token = Some(t);
        }
        let initialize = (method == "initialize").then(|| message["params"].clone());
        self.routes.insert(
            up,
            Route {
                session,
                client_id,
                answers,
                related,
                token,
                initialize,
            },
        );
        self.send_upstream(message);
    }

    fn on_upstream_frame(&mut self, frame: &[u8]) {
        // The upstream is alive and talking: the next restart starts without a pause.
        self.attempts = 0;
        let Ok(value) = serde_json::from_slice::<Value>(frame) else {
            tracing::debug!("the upstream sent a frame that is not JSON; dropped");
            return;
        };
        if let Value::Array(items) = value {
            for item in items {
                self.upstream_message(item);
            }
        } else {
            self.upstream_message(value);
        }
    }

    fn upstream_message(&mut self, mut message: Value) {
        let method = method_of(&message).map(str::to_owned);
        let id = id_of(&message).cloned();
        match (method.as_deref(), id) {
            (None, Some(id)) => {
                let Some(up) = id.as_u64() else {
                    tracing::debug!("the upstream answered an id it was never sent; dropped");
                    return;
                };
                if self.internal.remove(&up) {
                    let replayed = self.link.as_ref().and_then(|l| l.replay_id) == Some(up);
                    if replayed {
                        if let Some(result) = message.get("result")
                            && let Init::Done { result: cached, .. } = &mut self.init
                        {
                            *cached = result.clone();
                        }
                        self.handshake_replayed();
                    }
                    return;
                }
                let Some(route) = self.routes.remove(&up) else {
                    return;
                };
                if let Some(t) = route.token {
                    self.tokens.remove(&t);
                }
                message["id"] = route.client_id.clone();
                if let Some(params) = &route.initialize {
                    self.initialized(params.clone(), &message);
                }
                self.answer(&route, message);
            }
            (Some(method), Some(id)) => self.server_request(method, id, message),
            (Some("notifications/progress"), None) => {
                let Some(t) = message["params"]["progressToken"].as_u64() else {
                    return;
                };
                let Some((session, client_token, up)) = self.tokens.get(&t).cloned() else {
                    return;
                };
                message["params"]["progressToken"] = client_token;
                match self.routes.get(&up) {
                    Some(route) if route.related => {
                        let answers = route.answers.clone();
                        self.deliver_related(session, answers.as_ref(), message);
                    }
                    _ => self.deliver(session, message),
                }
            }
            (Some("notifications/cancelled"), None) => {
                let key = id_key(&message["params"]["requestId"]);
                if let Some(session) = self.s2c.remove(&key) {
                    self.deliver(session, message);
                }
            }
            (Some("notifications/resources/updated"), None) => {
                let uri = message["params"]["uri"].as_str().unwrap_or_default();
                let subscribers: Vec<SessionNo> = self
                    .subscriptions
                    .get(uri)
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default();
                for session in subscribers {
                    self.deliver(session, message.clone());
                }
            }
            (Some(_), None) => self.broadcast(to_frame(&message)),
            (None, None) => {}
        }
    }

    fn initialized(&mut self, params: Value, answer: &Value) {
        let waiting = match std::mem::replace(&mut self.init, Init::None) {
            Init::Pending { waiting } => waiting,
            other => {
                self.init = other;
                return;
            }
        };
        if let Some(result) = answer.get("result") {
            self.init = Init::Done {
                params,
                result: result.clone(),
            };
            for (session, id, answers) in waiting {
                let frame = json!({"jsonrpc": "2.0", "id": id, "result": result});
                self.deliver_answer(session, answers.as_ref(), frame);
            }
        } else {
            // The first handshake failed: the waiting sessions get the same error with their own ids.
            for (session, id, answers) in waiting {
                let mut frame = answer.clone();
                frame["id"] = id;
                self.deliver_answer(session, answers.as_ref(), frame);
            }
        }
    }

    fn server_request(&mut self, method: &str, id: Value, message: Value) {
        // The session whose request is in flight, the most recent one if several.
        let target = self
            .routes
            .iter()
            .filter(|(_, r)| self.sessions.contains_key(&r.session))
            .max_by_key(|(up, _)| **up)
            .map(|(_, r)| (r.session, if r.related { r.answers.clone() } else { None }));
        let target = target.or_else(|| self.sessions.keys().next_back().map(|s| (*s, None)));
        let Some((session, answers)) = target else {
            let frame = if method == "ping" {
                json!({"jsonrpc": "2.0", "id": id, "result": {}})
            } else {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "no session is attached to answer this request"}})
            };
            self.send_upstream(frame);
            return;
        };
        self.s2c.insert(id_key(&id), session);
        self.deliver_related(session, answers.as_ref(), message);
    }

    fn answer(&mut self, route: &Route, frame: Value) {
        self.deliver_answer(route.session, route.answers.as_ref(), frame);
    }

    fn deliver_answer(&mut self, session: SessionNo, answers: Option<&Outbox>, frame: Value) {
        match answers {
            Some(tx) => {
                if let Err(mpsc::error::SendError(frame)) = tx.send(frame) {
                    self.deliver(session, frame);
                }
            }
            None => self.deliver(session, frame),
        }
    }

    fn deliver_related(&mut self, session: SessionNo, answers: Option<&Outbox>, frame: Value) {
        self.deliver_answer(session, answers, frame);
    }

    fn deliver(&mut self, session: SessionNo, frame: Value) {
        if let Some(s) = self.sessions.get_mut(&session) {
            s.events.deliver(session, to_frame(&frame));
        }
    }

    /// Sends `frame` to every session; they share one copy of it.
    fn broadcast(&mut self, bytes: Bytes) {
        for (no, session) in &mut self.sessions {
            session.events.deliver(*no, bytes.clone());
        }
    }
}

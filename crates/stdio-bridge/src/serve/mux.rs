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
//! - an event of a `subscriptions/listen` stream (2026-07-28) names the listen request's id in its
//!   `_meta`: it goes to that request's stream only, with the client's id put back;
//! - a server-to-client request (roots, sampling, elicitation, ping) goes to the session whose request
//!   is in flight (the most recent one if several, never a stateless request's), and its answer goes
//!   back with the upstream's own id;
//! - when the upstream exits, every session's in-flight requests get an error with their own ids, the
//!   upstream is started again and re-initialized from the cached handshake, and sessions go on.
//!
//! What sessions set up (subscriptions, the log level) counts from the request on, and an error answer
//! takes it back; a restarted upstream is set up with it again, except what is held for it anyway.
//!
//! What cannot be shared: `logging/setLevel` sets the one upstream's level for everybody (the last
//! session to set it wins), and the upstream sees one client, so roots that differ between sessions
//! cannot be told apart (a `roots/list` request goes to one session).
//!
//! This module holds the routing state, its task and the delivery to sessions; `lifecycle` runs the
//! upstream's life, `to_upstream` routes what sessions send and `from_upstream` what the upstream sends,
//! and `fair` writes to the upstream, giving the sessions turns.

mod fair;
mod from_upstream;
mod lifecycle;
mod to_upstream;

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::outbox::{Events, MAX_QUEUED, MAX_QUEUED_BYTES, Outbox as StreamOutbox, Refused};
use crate::{Upstream, UpstreamEvent, jsonrpc::to_frame, upstream::Link};

/// A session's number inside the multiplexer.
pub(crate) type SessionNo = u64;

/// Where the answers to a POST's requests go (and, for an SSE answer, the messages tied to them):
/// bounded as a GET stream is.
pub(crate) type Outbox = StreamOutbox;

/// Commands from the HTTP side.
pub(crate) enum Command {
    /// A new session; a stateless one (a 2026-07-28 request's, for one exchange) is never asked a
    /// server-to-client request, which it could not answer.
    Open {
        reply: oneshot::Sender<SessionNo>,
        stateless: bool,
    },
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

    pub(crate) async fn open(&self, stateless: bool) -> Option<SessionNo> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Command::Open { reply, stateless }).ok()?;
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

    /// A handle that does not keep the multiplexer alive: once every [`Mux`] is dropped, it stops
    /// the upstream gracefully and ends.
    pub(crate) fn downgrade(&self) -> WeakMux {
        WeakMux(self.tx.downgrade())
    }
}

/// A [`Mux`] handle that does not keep it alive.
pub(crate) struct WeakMux(mpsc::WeakUnboundedSender<Command>);

impl WeakMux {
    /// The multiplexer, while some [`Mux`] still holds it.
    pub(crate) fn upgrade(&self) -> Option<Mux> {
        self.0.upgrade().map(|tx| Mux { tx })
    }
}

#[derive(Default)]
struct Session {
    /// Messages not tied to a request: its GET stream, and the recent ones retained.
    events: Events,
    /// A stateless request's session, for one exchange.
    stateless: bool,
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
    /// What an error answer to it takes back.
    undo: Option<Undo>,
    /// A `subscriptions/listen`, open until it is answered or cancelled.
    listen: bool,
}

/// What a request changed before it was answered, taken back when it is answered with an error (by the
/// upstream, or by the multiplexer when the upstream exits), so that only what the upstream accepted
/// is set up again on a restarted one.
#[derive(Clone)]
enum Undo {
    /// The session's subscription to this URI.
    Subscribe(String),
    /// The log level this request set, and the one before it.
    SetLevel {
        level: Value,
        previous: Option<Value>,
    },
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
    outgoing: mpsc::UnboundedSender<fair::Up>,
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
                        self.stop().await;
                        let _ = done.send(());
                        break;
                    }
                    Some(command) => self.command(command),
                    // Every handle is gone: no session can reach this upstream again.
                    None => {
                        self.stop().await;
                        break;
                    }
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

    /// Stops the upstream gracefully (an HTTP upstream ends its session), giving it 3 s.
    async fn stop(&mut self) {
        if let Some(link) = self.link.take() {
            drop(link.outgoing);
            let _ = tokio::time::timeout(Duration::from_secs(3), link.closed).await;
        }
    }

    fn internal_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.internal.insert(id);
        id
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Open { reply, stateless } => {
                let no = self.next_session;
                self.next_session += 1;
                let session = Session {
                    stateless,
                    ..Session::default()
                };
                self.sessions.insert(no, session);
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

    /// Delivers the answer to a request. The first `initialize`'s answer, whoever made it (the
    /// upstream, or the multiplexer for an upstream that refused it or went away), settles the
    /// handshake: the sessions waiting for it get it too, and after an error the next `initialize`
    /// is forwarded afresh.
    fn answer(&mut self, route: &Route, frame: Value) {
        if let Some(params) = &route.initialize {
            self.initialized(params.clone(), &frame);
        }
        if frame.get("error").is_some()
            && let Some(undo) = &route.undo
        {
            self.undo(route.session, undo.clone());
        }
        self.deliver_answer(route.session, route.answers.as_ref(), frame);
    }

    /// Sends an answer (or a message tied to a request) to the POST that awaits it. When that POST
    /// is gone, or its client left so much unread that its stream was closed, the session's GET
    /// stream gets it instead.
    fn deliver_answer(&mut self, session: SessionNo, answers: Option<&Outbox>, frame: Value) {
        let frame = to_frame(&frame);
        if let Some(outbox) = answers {
            match outbox.send_answer(&frame) {
                Ok(()) => return,
                Err(Refused::Gone) => {}
                Err(Refused::Behind) => tracing::warn!(
                    session,
                    "a POST's client left {MAX_QUEUED} answers or {} MiB unread; closed its stream \
                     (what is left goes to the session's GET stream)",
                    MAX_QUEUED_BYTES >> 20
                ),
            }
        }
        if let Some(s) = self.sessions.get_mut(&session) {
            s.events.deliver(session, frame);
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

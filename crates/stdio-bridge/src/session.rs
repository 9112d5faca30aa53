//! The session state machine between the client (stdio) and the upstream.
//!
//! One task (the core) owns all state; a reader task feeds it the client's lines and a writer task writes
//! its answers, so a slow client or upstream applies backpressure instead of growing memory.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::Arc,
    time::Duration,
};

use serde_json::Value;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::mpsc,
    time::{Instant, sleep_until},
};

use crate::{
    BUFFER_FULL, Error, RESTART_DEADLINE, UPSTREAM_EXITED, UPSTREAM_PROTOCOL_ERROR,
    UPSTREAM_UNREACHABLE,
    frame::{FrameReader, FrameWriter, InvalidLine, Message},
    jsonrpc::{self, CONNECTION_LOST, EXITED_IN_FLIGHT, Info, NOT_MCP, Peek, error_frame, peek},
    tap::{Direction, TapSender},
    upstream::{BoxFuture, Frame, Link, Upstream, UpstreamEvent},
};

/// Limits and timings of a session.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) buffer_messages: usize,
    pub(crate) buffer_bytes: usize,
    pub(crate) restart_deadline: Duration,
    pub(crate) max_frame: usize,
    /// How long answers still in flight are awaited after the client's stdin ends.
    pub(crate) drain: Duration,
    /// The whole time from the client's stdin ending to the session's end.
    pub(crate) exit_budget: Duration,
}

/// What the session counted.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    pub(crate) connects: u64,
    pub(crate) reinitializations: u64,
}

enum ClientInput {
    Message(Message),
    Invalid(InvalidLine),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// No link yet, or the link is gone: connecting (with backoff).
    Connecting,
    /// A new link (or an expired session) is being initialized with the client's `initialize`.
    Reinit { id: Box<str> },
    /// Messages flow.
    Ready,
}

/// A client message waiting to be sent upstream.
struct Held {
    frame: Frame,
    infos: Vec<Info>,
    since: Instant,
    /// Made by the bridge (re-initialization): sent before anything else, never expires.
    control: bool,
}

impl Held {
    fn new(frame: Frame, infos: Vec<Info>) -> Self {
        Self {
            frame,
            infos,
            since: Instant::now(),
            control: false,
        }
    }

    fn control(frame: Frame) -> Self {
        Self {
            frame,
            infos: Vec::new(),
            since: Instant::now(),
            control: true,
        }
    }

    fn requests(&self) -> impl Iterator<Item = &str> {
        self.infos
            .iter()
            .filter(|i| i.is_request())
            .filter_map(|i| i.id.as_deref())
    }
}

/// The client's handshake, replayed after every restart.
struct Handshake {
    initialize: Frame,
    /// The client's id for it, while its answer is awaited.
    id: Option<Box<str>>,
    answered: bool,
    initialized: bool,
    list_changed: Vec<&'static str>,
}

struct Live {
    outgoing: mpsc::Sender<Frame>,
    /// The upstream stopped taking messages; its `Closed` event is on the way.
    outgoing_closed: bool,
    events: mpsc::Receiver<UpstreamEvent>,
    close: Option<Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>>,
}

enum Wake {
    Client(Option<ClientInput>),
    Upstream(Option<UpstreamEvent>),
    Connected(Result<Link, Error>),
    Permit(Result<mpsc::OwnedPermit<Frame>, mpsc::error::SendError<()>>),
    Restart(Option<()>),
    Shutdown,
    Timer,
}

/// Runs one session until the client's stdin ends.
pub(crate) async fn run<R, W>(
    upstream: Arc<dyn Upstream>,
    config: Config,
    stdin: R,
    stdout: W,
    restart: mpsc::Receiver<()>,
    shutdown: Option<BoxFuture<'static, ()>>,
    tap: Option<TapSender>,
) -> Counts
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (client_tx, client_rx) = mpsc::channel(16);
    let (out_tx, out_rx) = mpsc::channel(256);
    let reader = tokio::spawn(read_client(stdin, config.max_frame, client_tx));
    let writer = tokio::spawn(write_client(stdout, out_rx));
    let describe = upstream.describe();
    let core = Core {
        upstream,
        describe,
        config,
        out: out_tx,
        tap,
        link: None,
        connecting: None,
        next_connect: Some(Instant::now()),
        attempts: 0,
        phase: Phase::Connecting,
        pending: VecDeque::new(),
        pending_bytes: 0,
        pause_until: None,
        in_flight: HashMap::new(),
        handshake: None,
        retried: HashSet::new(),
        server_requests: HashSet::new(),
        counts: Counts::default(),
        eof_at: None,
        waiting_logged: false,
        last_connect_error: None,
    };
    let counts = core.run(client_rx, restart, shutdown).await;
    reader.abort();
    // The writer ends once every queued answer is written (its channel closed with the core).
    let _ = tokio::time::timeout(Duration::from_millis(500), writer).await;
    counts
}

async fn read_client<R: AsyncRead + Unpin>(
    stdin: R,
    max_frame: usize,
    tx: mpsc::Sender<ClientInput>,
) {
    let mut reader = FrameReader::with_max_frame(stdin, max_frame);
    loop {
        let input = match reader.next_message().await {
            Ok(Some(Ok(message))) if message.peek.is_invalid_request() => {
                ClientInput::Invalid(InvalidLine::InvalidRequest)
            }
            Ok(Some(Ok(message))) => ClientInput::Message(message),
            Ok(Some(Err(invalid))) => ClientInput::Invalid(invalid),
            Ok(None) => break,
            Err(e) => {
                tracing::debug!("reading stdin failed: {e}");
                break;
            }
        };
        if tx.send(input).await.is_err() {
            break;
        }
    }
}

async fn write_client<W: AsyncWrite + Unpin>(stdout: W, mut rx: mpsc::Receiver<Frame>) {
    let mut writer = FrameWriter::new(stdout);
    let mut broken = false;
    while let Some(frame) = rx.recv().await {
        if broken {
            continue;
        }
        let result = async {
            writer.write(&frame).await?;
            while let Ok(frame) = rx.try_recv() {
                writer.write(&frame).await?;
            }
            writer.flush().await
        }
        .await;
        if let Err(e) = result {
            // Keep draining so the session never blocks on a client that stopped reading.
            tracing::warn!("writing to stdout failed: {e}; answers are dropped from now on");
            broken = true;
        }
    }
}

struct Core {
    upstream: Arc<dyn Upstream>,
    describe: String,
    config: Config,
    out: mpsc::Sender<Frame>,
    tap: Option<TapSender>,
    link: Option<Live>,
    connecting: Option<BoxFuture<'static, Result<Link, Error>>>,
    next_connect: Option<Instant>,
    attempts: u32,
    phase: Phase,
    pending: VecDeque<Held>,
    pending_bytes: usize,
    /// After a frame could not be delivered, sending waits until then.
    pause_until: Option<Instant>,
    /// Requests sent upstream and not answered yet; `true` for the client's `initialize`.
    in_flight: HashMap<Box<str>, bool>,
    handshake: Option<Handshake>,
    /// Requests already re-sent once after a session expired.
    retried: HashSet<Box<str>>,
    /// Requests the upstream sent the client, on the current link.
    server_requests: HashSet<Box<str>>,
    counts: Counts,
    eof_at: Option<Instant>,
    waiting_logged: bool,
    last_connect_error: Option<String>,
}

fn backoff(attempts: u32) -> Duration {
    Duration::from_millis(100u64 << attempts.min(4)).min(Duration::from_secs(1))
}

impl Core {
    async fn run(
        mut self,
        mut client: mpsc::Receiver<ClientInput>,
        mut restart: mpsc::Receiver<()>,
        mut shutdown: Option<BoxFuture<'static, ()>>,
    ) -> Counts {
        let mut restart_open = true;
        loop {
            let now = Instant::now();
            if let Some(eof) = self.eof_at {
                let idle = self.in_flight.is_empty() && self.pending.iter().all(|h| h.control);
                if idle || now >= eof + self.config.drain {
                    break;
                }
            }
            if self.link.is_none()
                && self.connecting.is_none()
                && self.next_connect.is_some_and(|at| at <= now)
            {
                self.next_connect = None;
                let upstream = Arc::clone(&self.upstream);
                self.connecting = Some(Box::pin(async move { upstream.connect().await }));
            }
            if self.pause_until.is_some_and(|at| at <= now) {
                self.pause_until = None;
            }
            self.expire_held(now).await;

            let timer = self.next_timer();
            let accepting = self.eof_at.is_none()
                && !(self.sending() && self.pending.len() >= self.config.buffer_messages);
            let dispatch = if self.can_dispatch() {
                self.link.as_ref().map(|l| l.outgoing.clone())
            } else {
                None
            };
            let link = &mut self.link;
            let connecting = &mut self.connecting;
            let wake = tokio::select! {
                input = client.recv(), if accepting => Wake::Client(input),
                event = async { link.as_mut().expect("guarded").events.recv().await }, if link.is_some() => Wake::Upstream(event),
                result = async { connecting.as_mut().expect("guarded").await }, if connecting.is_some() => Wake::Connected(result),
                permit = async { dispatch.expect("guarded").reserve_owned().await.map_err(|_| mpsc::error::SendError(())) }, if dispatch.is_some() => Wake::Permit(permit),
                request = restart.recv(), if restart_open => Wake::Restart(request),
                () = async { shutdown.as_mut().expect("guarded").await }, if shutdown.is_some() && self.eof_at.is_none() => Wake::Shutdown,
                () = sleep_until(timer.unwrap_or_else(|| now + Duration::from_secs(3600))), if timer.is_some() => Wake::Timer,
            };
            match wake {
                Wake::Client(Some(ClientInput::Message(message))) => self.on_client(message).await,
                Wake::Client(Some(ClientInput::Invalid(invalid))) => {
                    self.send_to_client(invalid.error_frame()).await;
                }
                Wake::Client(None) => {
                    tracing::debug!("stdin ended; waiting for answers still in flight");
                    self.eof_at = Some(Instant::now());
                }
                Wake::Shutdown => {
                    tracing::debug!("asked to shut down; waiting for answers still in flight");
                    shutdown = None;
                    self.eof_at = Some(Instant::now());
                }
                Wake::Upstream(Some(event)) => self.on_upstream(event).await,
                Wake::Upstream(None) => self.on_link_gone("closed the connection").await,
                Wake::Connected(result) => self.on_connected(result),
                Wake::Permit(Ok(permit)) => self.dispatch(permit),
                // The link's tasks ended; its events channel says why.
                Wake::Permit(Err(_)) => {
                    if let Some(live) = &mut self.link {
                        live.outgoing_closed = true;
                    }
                }
                Wake::Restart(Some(())) => self.restart().await,
                Wake::Restart(None) => restart_open = false,
                Wake::Timer => {}
            }
        }
        self.finish().await;
        self.counts
    }

    /// Whether client messages go straight upstream.
    fn sending(&self) -> bool {
        self.link.is_some() && self.phase == Phase::Ready && self.pause_until.is_none()
    }

    fn can_dispatch(&self) -> bool {
        let Some(front) = self.pending.front() else {
            return false;
        };
        self.link.as_ref().is_some_and(|l| !l.outgoing_closed)
            && self.pause_until.is_none()
            && match self.phase {
                Phase::Ready => true,
                Phase::Reinit { .. } => front.control,
                Phase::Connecting => false,
            }
    }

    fn next_timer(&self) -> Option<Instant> {
        let mut timer: Option<Instant> = None;
        let mut consider = |at: Instant| timer = Some(timer.map_or(at, |t| t.min(at)));
        if self.link.is_none()
            && self.connecting.is_none()
            && let Some(at) = self.next_connect
        {
            consider(at);
        }
        if let Some(at) = self.pause_until {
            consider(at);
        }
        if !self.sending()
            && let Some(since) = self
                .pending
                .iter()
                .filter(|h| !h.control)
                .map(|h| h.since)
                .min()
        {
            consider(since + self.config.restart_deadline);
        }
        if let Some(eof) = self.eof_at {
            consider(eof + self.config.drain);
        }
        timer
    }

    async fn send_to_client(&mut self, frame: Frame) {
        if let Some(tap) = &self.tap {
            tap.send(Direction::ToClient, &frame);
        }
        // An error means the writer is gone, and with it the client.
        let _ = self.out.send(frame).await;
    }

    async fn error_to(&mut self, id: &str, code: i64, message: &str, data: Value) {
        self.send_to_client(error_frame(Some(id), code, message, data))
            .await;
    }

    async fn on_client(&mut self, message: Message) {
        if let Some(tap) = &self.tap {
            tap.send(Direction::FromClient, &message.frame);
        }
        let infos = match message.peek {
            Peek::One(info) => {
                match info.method.as_deref() {
                    Some("initialize") if info.id.is_some() => {
                        self.handshake = Some(Handshake {
                            initialize: message.frame.clone(),
                            id: info.id.clone(),
                            answered: false,
                            initialized: false,
                            list_changed: Vec::new(),
                        });
                    }
                    Some(jsonrpc::INITIALIZED) => {
                        if let Some(handshake) = &mut self.handshake {
                            handshake.initialized = true;
                        }
                    }
                    _ => {}
                }
                if info.is_response() {
                    let id = info.id.as_deref().unwrap_or_default();
                    if !self.server_requests.remove(id) {
                        tracing::debug!(
                            "dropped the client's answer to {id}: the upstream that asked is gone"
                        );
                        return;
                    }
                }
                vec![info]
            }
            Peek::Batch(infos) => infos,
        };
        self.hold(Held::new(message.frame, infos)).await;
    }

    /// Sends a client message upstream, or holds it while the upstream is not ready.
    async fn hold(&mut self, held: Held) {
        if self.sending() && self.pending.is_empty() {
            let link = self.link.as_ref().expect("sending");
            // Full or closed: hold it.
            if link.outgoing.try_send(held.frame.clone()).is_ok() {
                self.register(&held);
                return;
            }
        } else if !self.sending()
            && (self.pending.len() >= self.config.buffer_messages
                || self.pending_bytes + held.frame.len() > self.config.buffer_bytes)
        {
            tracing::warn!(
                "the hold buffer is full ({} messages, {} bytes) while {} is not ready",
                self.pending.len(),
                self.pending_bytes,
                self.describe
            );
            self.reject(
                held,
                BUFFER_FULL,
                "the upstream is not ready and the hold buffer is full",
                "buffer_full",
                None,
            )
            .await;
            return;
        }
        self.push_back(held);
    }

    fn push_back(&mut self, held: Held) {
        self.pending_bytes += held.frame.len();
        self.pending.push_back(held);
    }

    /// Puts messages back at the front of the queue, keeping their order.
    fn push_front(&mut self, items: Vec<Held>) {
        for held in items.into_iter().rev() {
            self.pending_bytes += held.frame.len();
            self.pending.push_front(held);
        }
    }

    fn pop_front(&mut self) -> Option<Held> {
        let held = self.pending.pop_front()?;
        self.pending_bytes -= held.frame.len();
        Some(held)
    }

    /// Answers every request in `held` with an error; notifications are dropped.
    async fn reject(
        &mut self,
        held: Held,
        code: i64,
        message: &str,
        reason: &str,
        upstream: Option<Value>,
    ) {
        let data = jsonrpc::data(reason, upstream);
        let ids: Vec<Box<str>> = held.requests().map(Box::from).collect();
        for info in held.infos.iter().filter(|i| !i.is_request()) {
            if let Some(method) = &info.method {
                tracing::warn!("dropped the client's notification {method} ({reason})");
            }
        }
        for id in ids {
            self.error_to(&id, code, message, data.clone()).await;
        }
    }

    fn register(&mut self, held: &Held) {
        if held.control {
            return;
        }
        for info in &held.infos {
            if let (true, Some(id)) = (info.is_request(), &info.id) {
                self.in_flight
                    .insert(id.clone(), info.method.as_deref() == Some("initialize"));
            }
        }
    }

    fn dispatch(&mut self, permit: mpsc::OwnedPermit<Frame>) {
        if !self.can_dispatch() {
            return;
        }
        let Some(held) = self.pop_front() else {
            return;
        };
        permit.send(held.frame.clone());
        self.register(&held);
    }

    /// Errors for held messages older than the restart deadline, while nothing is being sent.
    async fn expire_held(&mut self, now: Instant) {
        if self.sending() {
            return;
        }
        let deadline = self.config.restart_deadline;
        if !self
            .pending
            .iter()
            .any(|h| !h.control && h.since + deadline <= now)
        {
            return;
        }
        let mut keep = VecDeque::with_capacity(self.pending.len());
        let mut expired = Vec::new();
        while let Some(held) = self.pop_front() {
            if !held.control && held.since + deadline <= now {
                expired.push(held);
            } else {
                keep.push_back(held);
            }
        }
        self.push_front(keep.into());
        tracing::warn!(
            "{} is still not ready after {deadline:?}; answering {} held messages with errors",
            self.describe,
            expired.len()
        );
        let upstream = serde_json::json!({ "message": format!("{} is not ready", self.describe) });
        for held in expired {
            self.reject(
                held,
                RESTART_DEADLINE,
                "the upstream did not come back before the restart deadline",
                "restart_deadline",
                Some(upstream.clone()),
            )
            .await;
        }
    }

    fn on_connected(&mut self, result: Result<Link, Error>) {
        self.connecting = None;
        match result {
            Ok(link) => {
                self.counts.connects += 1;
                if self.waiting_logged {
                    tracing::info!("{} is up", self.describe);
                    self.waiting_logged = false;
                } else {
                    tracing::debug!("connected to {}", self.describe);
                }
                self.link = Some(Live {
                    outgoing: link.outgoing,
                    outgoing_closed: false,
                    events: link.events,
                    close: Some(link.close),
                });
                self.pause_until = None;
                self.server_requests.clear();
                if self.handshake.as_ref().is_some_and(|h| h.answered) {
                    self.start_reinit();
                } else {
                    self.phase = Phase::Ready;
                }
            }
            Err(e) => {
                self.last_connect_error = Some(e.to_string());
                if self.waiting_logged {
                    tracing::debug!("{} is not reachable yet: {e}", self.describe);
                } else {
                    tracing::info!("waiting for {}: {e}", self.describe);
                    self.waiting_logged = true;
                }
                self.next_connect = Some(Instant::now() + backoff(self.attempts));
                self.attempts = self.attempts.saturating_add(1);
            }
        }
    }

    /// Sends the client's original `initialize` (under a bridge id) before anything else.
    fn start_reinit(&mut self) {
        let Some(handshake) = &self.handshake else {
            self.phase = Phase::Ready;
            return;
        };
        self.counts.reinitializations += 1;
        let id: Box<str> = format!("\"calltape-reinit-{}\"", self.counts.reinitializations).into();
        let frame = jsonrpc::with_id(&handshake.initialize, &id);
        self.drop_control();
        self.push_front(vec![Held::control(frame)]);
        tracing::debug!("re-initializing {}", self.describe);
        self.phase = Phase::Reinit { id };
    }

    fn drop_control(&mut self) {
        let before = self.pending.len();
        if self.pending.iter().any(|h| h.control) {
            let items: Vec<Held> = std::iter::from_fn(|| self.pop_front()).collect();
            for held in items.into_iter().filter(|h| !h.control) {
                self.push_back(held);
            }
        }
        debug_assert!(self.pending.len() <= before);
    }

    async fn finish_reinit(&mut self, answer: &Frame) {
        if let Ok(value) = serde_json::from_slice::<Value>(answer)
            && let Some(error) = value.get("error")
        {
            tracing::warn!("the upstream refused the replayed initialize: {error}");
        }
        self.phase = Phase::Ready;
        let Some(handshake) = &self.handshake else {
            return;
        };
        let lists = handshake.list_changed.clone();
        if handshake.initialized {
            let initialized = jsonrpc::notification(jsonrpc::INITIALIZED);
            self.push_front(vec![Held::control(initialized)]);
        }
        for method in lists {
            self.send_to_client(jsonrpc::notification(method)).await;
        }
        tracing::info!("{} is ready again", self.describe);
    }

    async fn on_upstream(&mut self, event: UpstreamEvent) {
        match event {
            UpstreamEvent::Message(frame) => self.on_upstream_message(frame).await,
            UpstreamEvent::Closed { reason } => self.on_link_gone(&reason).await,
            UpstreamEvent::SessionExpired { frame } => self.on_session_expired(frame).await,
            UpstreamEvent::Undelivered {
                frame,
                maybe_delivered,
                reason,
            } => self.on_undelivered(frame, maybe_delivered, &reason).await,
            UpstreamEvent::ProtocolError {
                frame,
                status,
                message,
            } => self.on_protocol_error(frame, status, &message).await,
        }
    }

    async fn on_upstream_message(&mut self, frame: Frame) {
        let peek = match peek(&frame) {
            Ok(peek) => peek,
            Err(invalid) => {
                tracing::warn!(
                    "the upstream sent a message that is not JSON-RPC ({}); dropped it",
                    invalid.reason()
                );
                return;
            }
        };
        self.attempts = 0;
        for info in peek.infos() {
            let Some(id) = &info.id else { continue };
            if info.is_request() {
                self.server_requests.insert(id.clone());
                continue;
            }
            if let Phase::Reinit { id: reinit } = &self.phase
                && reinit == id
                && matches!(peek, Peek::One(_))
            {
                self.finish_reinit(&frame).await;
                return;
            }
            self.retried.remove(id);
            if self.in_flight.remove(id) == Some(true) {
                self.on_initialize_answer(id, &frame);
            }
        }
        self.send_to_client(frame).await;
    }

    fn on_initialize_answer(&mut self, id: &str, frame: &Frame) {
        let Some(handshake) = &mut self.handshake else {
            return;
        };
        if handshake.id.as_deref() != Some(id) {
            return;
        }
        let Ok(value) = serde_json::from_slice::<Value>(frame) else {
            return;
        };
        if value.get("result").is_none() {
            // The upstream refused it: nothing to replay.
            return;
        }
        handshake.answered = true;
        handshake.id = None;
        handshake.list_changed = jsonrpc::list_changed(&value["result"]["capabilities"]);
    }

    /// The link ended: in-flight requests get errors, unsent ones wait for the next link.
    async fn on_link_gone(&mut self, reason: &str) {
        let Some(mut live) = self.link.take() else {
            return;
        };
        if let Some(close) = live.close.take() {
            tokio::spawn(close());
        }
        tracing::warn!("{} {reason}; restarting it", self.describe);
        self.fail_in_flight(reason, "upstream_exited").await;
        self.phase = Phase::Connecting;
        self.next_connect = Some(Instant::now() + backoff(self.attempts));
        self.attempts = self.attempts.saturating_add(1);
    }

    async fn fail_in_flight(&mut self, reason: &str, code_reason: &str) {
        self.drop_control();
        self.pause_until = None;
        self.server_requests.clear();
        let mut in_flight: Vec<(Box<str>, bool)> = self.in_flight.drain().collect();
        in_flight.sort();
        let upstream = serde_json::json!({ "message": format!("{} {reason}", self.describe) });
        let data = jsonrpc::data(code_reason, Some(upstream));
        for (id, initialize) in in_flight {
            let first_handshake = initialize
                && self
                    .handshake
                    .as_ref()
                    .is_some_and(|h| !h.answered && h.id.as_ref() == Some(&id));
            if let (true, Some(handshake)) = (first_handshake, &self.handshake) {
                // Nothing has happened yet: the client's initialize can safely go to the next process.
                let frame = handshake.initialize.clone();
                let infos = peek(&frame).map(|p| p.infos().to_vec()).unwrap_or_default();
                self.push_front(vec![Held::new(frame, infos)]);
                continue;
            }
            self.error_to(&id, UPSTREAM_EXITED, EXITED_IN_FLIGHT, data.clone())
                .await;
        }
    }

    async fn restart(&mut self) {
        let Some(mut live) = self.link.take() else {
            // Not running: the next start picks up the change anyway.
            return;
        };
        tracing::info!("restarting {}", self.describe);
        self.fail_in_flight("was restarted", "upstream_restarted")
            .await;
        self.phase = Phase::Connecting;
        self.attempts = 0;
        let close = live.close.take();
        drop(live);
        let upstream = Arc::clone(&self.upstream);
        self.next_connect = None;
        self.connecting = Some(Box::pin(async move {
            if let Some(close) = close {
                close().await;
            }
            upstream.connect().await
        }));
    }

    async fn on_session_expired(&mut self, frame: Frame) {
        let Ok(peek) = peek(&frame) else { return };
        let infos = peek.infos().to_vec();
        if let Phase::Reinit { id } = &self.phase
            && infos.iter().any(|i| i.id.as_deref() == Some(&**id))
        {
            tracing::warn!("the upstream refused the replayed initialize as an expired session");
            self.phase = Phase::Ready;
            return;
        }
        let mut retry = true;
        for info in &infos {
            if let (true, Some(id)) = (info.is_request(), &info.id) {
                self.in_flight.remove(id);
                if !self.retried.insert(id.clone()) {
                    retry = false;
                }
            }
        }
        let notification = infos.iter().all(|i| !i.is_request());
        if notification
            && infos
                .iter()
                .any(|i| i.method.as_deref() == Some(jsonrpc::INITIALIZED))
        {
            // The re-initialization sends it again.
            if !matches!(self.phase, Phase::Reinit { .. }) {
                self.start_reinit();
            }
            return;
        }
        if !retry {
            let held = Held::new(frame, infos);
            self.reject(
                held,
                UPSTREAM_UNREACHABLE,
                "the upstream forgot the session again right after it was re-initialized",
                "session_expired",
                None,
            )
            .await;
            return;
        }
        tracing::info!("{} forgot the session; re-initializing", self.describe);
        let after_control = self.pending.iter().take_while(|h| h.control).count();
        let mut rest: Vec<Held> = self.pending.drain(after_control..).collect();
        let rest_bytes: usize = rest.iter().map(|h| h.frame.len()).sum();
        self.pending_bytes -= rest_bytes;
        rest.insert(0, Held::new(frame, infos));
        for held in rest {
            self.push_back(held);
        }
        if !matches!(self.phase, Phase::Reinit { .. }) {
            self.start_reinit();
        }
    }

    async fn on_undelivered(&mut self, frame: Frame, maybe_delivered: bool, reason: &str) {
        let Ok(peek) = peek(&frame) else { return };
        let infos = peek.infos().to_vec();
        let pause = Instant::now() + backoff(self.attempts);
        if let Phase::Reinit { id } = &self.phase
            && infos.iter().any(|i| i.id.as_deref() == Some(&**id))
        {
            // Replaying initialize is safe whatever happened to it.
            tracing::debug!("the replayed initialize was not delivered ({reason}); retrying");
            self.push_front(vec![Held::control(frame)]);
            self.pause_until = Some(pause);
            self.attempts = self.attempts.saturating_add(1);
            return;
        }
        for info in &infos {
            if let Some(id) = &info.id {
                self.in_flight.remove(id);
            }
        }
        if maybe_delivered {
            let held = Held::new(frame, infos);
            let upstream = serde_json::json!({ "message": reason });
            self.reject(
                held,
                UPSTREAM_EXITED,
                CONNECTION_LOST,
                "connection_lost",
                Some(upstream),
            )
            .await;
        } else {
            tracing::debug!(
                "{} did not take a message ({reason}); holding it",
                self.describe
            );
            let after_control = self.pending.iter().take_while(|h| h.control).count();
            let mut held = Held::new(frame, infos);
            held.since = Instant::now();
            self.pending_bytes += held.frame.len();
            self.pending.insert(after_control, held);
            self.pause_until = Some(pause);
            self.attempts = self.attempts.saturating_add(1);
        }
    }

    async fn on_protocol_error(&mut self, frame: Frame, status: Option<u16>, message: &str) {
        let Ok(peek) = peek(&frame) else { return };
        let infos = peek.infos().to_vec();
        tracing::warn!(
            "{} answered with something that is not MCP: {message}",
            self.describe
        );
        if let Phase::Reinit { id } = &self.phase
            && infos.iter().any(|i| i.id.as_deref() == Some(&**id))
        {
            self.phase = Phase::Ready;
            return;
        }
        for info in &infos {
            if let Some(id) = &info.id {
                self.in_flight.remove(id);
            }
        }
        let upstream = serde_json::json!({ "status": status, "message": message });
        self.reject(
            Held::new(frame, infos),
            UPSTREAM_PROTOCOL_ERROR,
            NOT_MCP,
            "upstream_protocol_error",
            Some(upstream),
        )
        .await;
    }

    /// The client is gone: answer what is left, stop the upstream within the exit budget.
    async fn finish(&mut self) {
        let data = jsonrpc::data("session_ended", None);
        let held: Vec<Held> = std::iter::from_fn(|| self.pop_front()).collect();
        let why = match &self.last_connect_error {
            Some(error) if self.link.is_none() => error.clone(),
            _ => format!("{} was not ready", self.describe),
        };
        let upstream = serde_json::json!({ "message": why });
        for held in held.into_iter().filter(|h| !h.control) {
            self.reject(
                held,
                UPSTREAM_UNREACHABLE,
                "the session ended before the upstream could be reached",
                "upstream_unreachable",
                Some(upstream.clone()),
            )
            .await;
        }
        let mut in_flight: Vec<Box<str>> = self.in_flight.drain().map(|(id, _)| id).collect();
        in_flight.sort();
        for id in in_flight {
            self.error_to(
                &id,
                UPSTREAM_EXITED,
                "the session ended before the upstream answered",
                data.clone(),
            )
            .await;
        }
        let eof = self.eof_at.unwrap_or_else(Instant::now);
        let budget = (eof + self.config.exit_budget)
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(100));
        self.connecting = None;
        if let Some(mut live) = self.link.take()
            && let Some(close) = live.close.take()
        {
            drop(live);
            if tokio::time::timeout(budget, close()).await.is_err() {
                tracing::debug!(
                    "{} did not stop in time; leaving it to the kill",
                    self.describe
                );
            }
        }
    }
}

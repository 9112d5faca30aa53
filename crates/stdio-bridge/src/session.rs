//! The session state machine between the client (stdio) and the upstream.
//!
//! One task (the core) owns all state; a reader task feeds it the client's lines and a writer task writes
//! its answers, so a slow client or upstream applies backpressure instead of growing memory.
//!
//! This module holds the session's state, its event loop and what the client sends; `hold` holds the
//! client's messages while the upstream is not ready, `relink` handles what the upstream link does, and
//! `resume` keeps what the client set up in its session (subscriptions, log level) to set it up again
//! after a re-initialization.

mod hold;
mod relink;
mod resume;

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

use crate::jsonrpc::Frame;
use crate::vocab::INITIALIZE;
use crate::{
    Error,
    jsonrpc::{
        Peek, error_frame,
        frame::{FrameReader, FrameWriter, InvalidLine, Message},
    },
    tap::{Direction, TapSender},
    upstream::{BoxFuture, Link, Upstream, UpstreamEvent},
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

/// What a request sent upstream is, for what its answer does.
enum Sent {
    Plain,
    /// The client's `initialize`.
    Initialize,
    /// A request that changes the session's state once the upstream accepts it.
    Change(resume::Change),
}

/// A client message waiting to be sent upstream.
struct Held {
    frame: Frame,
    /// What routing read from it; none for a message the bridge made.
    peek: Peek,
    since: Instant,
    /// Made by the bridge (re-initialization): sent before anything else, never expires.
    control: bool,
}

impl Held {
    fn new(frame: Frame, peek: Peek) -> Self {
        Self {
            frame,
            peek,
            since: Instant::now(),
            control: false,
        }
    }

    fn control(frame: Frame) -> Self {
        Self::control_with(frame, Peek::Batch(Vec::new()))
    }

    /// A request of the bridge's own, whose id is known when it is dropped.
    fn control_with(frame: Frame, peek: Peek) -> Self {
        Self {
            frame,
            peek,
            since: Instant::now(),
            control: true,
        }
    }

    fn requests(&self) -> impl Iterator<Item = &str> {
        self.peek
            .infos()
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
        resume: resume::Resume::default(),
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
    /// Requests sent upstream and not answered yet.
    in_flight: HashMap<Box<str>, Sent>,
    handshake: Option<Handshake>,
    /// What the client set up in its session, replayed after the handshake.
    resume: resume::Resume,
    /// Requests already re-sent once after a session expired.
    retried: HashSet<Box<str>>,
    /// Requests the upstream sent the client, on the current link.
    server_requests: HashSet<Box<str>>,
    counts: Counts,
    eof_at: Option<Instant>,
    waiting_logged: bool,
    last_connect_error: Option<String>,
}

/// The most client messages, or upstream events, taken in one wake of the session: a busy session
/// then pays for one wake per batch, and neither side waits long for the other.
const DRAIN: usize = 32;

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
        // One timer for the session, moved only when the next deadline moves.
        let timer_sleep = sleep_until(Instant::now() + Duration::from_secs(3600));
        tokio::pin!(timer_sleep);
        let mut armed = None;
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
            if let Some(at) = timer
                && armed != Some(at)
            {
                timer_sleep.as_mut().reset(at);
                armed = Some(at);
            }
            let accepting = self.accepting();
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
                () = &mut timer_sleep, if timer.is_some() => Wake::Timer,
            };
            match wake {
                Wake::Client(Some(input)) => {
                    self.on_client_input(input).await;
                    // What else is waiting, as further wakes would take it, without a wake each.
                    for _ in 0..DRAIN {
                        if !self.accepting() {
                            break;
                        }
                        let Ok(input) = client.try_recv() else { break };
                        self.on_client_input(input).await;
                    }
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
                Wake::Upstream(Some(event)) => {
                    self.on_upstream(event).await;
                    for _ in 0..DRAIN {
                        let Some(live) = &mut self.link else { break };
                        // Closed or empty: the next wake tells.
                        let Ok(event) = live.events.try_recv() else {
                            break;
                        };
                        self.on_upstream(event).await;
                    }
                }
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

    /// Whether the client's next message is taken now.
    fn accepting(&self) -> bool {
        self.eof_at.is_none()
            && !(self.sending() && self.pending.len() >= self.config.buffer_messages)
    }

    async fn on_client_input(&mut self, input: ClientInput) {
        match input {
            ClientInput::Message(message) => self.on_client(message).await,
            ClientInput::Invalid(invalid) => {
                self.send_to_client(invalid.error_frame()).await;
            }
        }
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
        if let Peek::One(info) = &message.peek {
            match info.method.as_deref() {
                Some(INITIALIZE) if info.id.is_some() => {
                    self.handshake = Some(Handshake {
                        initialize: message.frame.clone(),
                        id: info.id.clone(),
                        answered: false,
                        initialized: false,
                        list_changed: Vec::new(),
                    });
                    self.resume.clear();
                }
                Some(crate::vocab::INITIALIZED) => {
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
        }
        self.hold(Held::new(message.frame, message.peek)).await;
    }
}

//! The sessions of a legacy upstream that clients are served in: one per set of 2026-07-28 client
//! capabilities.
//!
//! A legacy server decides what it offers from the capabilities in its session's `initialize` (the
//! tools that need elicitation or sampling, for one), so a 2026-07-28 client whose `_meta` capabilities
//! differ from the session's gets a session of its own: a *lane*, with a translator and an upstream link
//! of its own, from [`Upstream::connect_apart`] (for a child, a process of its own). The link's own
//! session is lane 0: it takes legacy frames, frames of an upstream that holds one session, and the
//! first capabilities it sees (a legacy client's `initialize`, or a 2026-07-28 request's). A lane
//! claimed by a `server/discover` alone (a probe's, as often as not) is claimed again by the first other
//! request; `server/discover` never opens a lane, since its answer is the same in every session.
//!
//! At most [`MAX_SESSIONS`] sessions are open; a request that would need another is refused with
//! [`TOO_MANY_CAPABILITY_SESSIONS`](crate::TOO_MANY_CAPABILITY_SESSIONS). A lane that had no request
//! for [`IDLE`] and holds nothing in flight is closed, and a lane whose link ends answers what it held
//! with an error: either is forgotten, and the next request with its capabilities opens another.
//!
//! Nothing here waits to write: what a full channel cannot take yet waits in order (for the client
//! side, and per lane for its link), and the pump stops taking frames from the side that feeds a
//! queue while it holds [`WAITING`] of them, but goes on reading the other side. A link's child whose
//! stdout is full is thus always read, so it reads its stdin again, and the frames for it go.

#[cfg(test)]
mod tests;

use std::{
    collections::{HashMap, VecDeque},
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    task::Poll,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    sync::mpsc::{self, OwnedPermit, error::TrySendError},
    time::Instant,
};

use super::{Out, Translate, may_be_handshake, may_be_modern, modern_on_legacy::ModernOnLegacy};
use crate::jsonrpc::Frame;
use crate::vocab::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, METHOD_NOT_FOUND};
use crate::{
    TOO_MANY_CAPABILITY_SESSIONS, UPSTREAM_UNREACHABLE, jsonrpc,
    upstream::{BoxFuture, Link, Upstream, UpstreamEvent},
};

/// How many sessions of the upstream one link may hold at once, its own included.
pub(super) const MAX_SESSIONS: usize = crate::MAX_CAPABILITY_SESSIONS;
/// How long a lane (other than the link's own) may go without a request before it is closed, when it
/// holds nothing in flight.
pub(super) const IDLE: Duration = crate::CAPABILITY_SESSION_IDLE;
/// How soon a lane found busy at its idle time is looked at again.
const IDLE_RECHECK: Duration = Duration::from_secs(60);

/// How many frames wait for a lane's link.
const QUEUE: usize = 64;
/// How many frames (or events) may wait for a full channel before the side that feeds them is no
/// longer read.
pub(super) const WAITING: usize = 64;

/// Something for a lane's upstream (by lane key) or for the client side.
pub(super) type Sent = (u64, Out);

type CloseFn = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>;

/// The graceful stops of the lanes' links (lane 0's excepted: that is the link's own), shared by the
/// pump and the close of the link it hands the client side.
#[derive(Clone, Default)]
pub(super) struct Closes(Arc<Mutex<HashMap<u64, CloseFn>>>);

impl Closes {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, CloseFn>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn put(&self, key: u64, close: CloseFn) {
        self.map().insert(key, close);
    }

    fn take(&self, key: u64) -> Option<CloseFn> {
        self.map().remove(&key)
    }

    /// Stops every lane's link, all at once, and waits for them.
    pub(super) async fn close_all(&self) {
        let closes: Vec<CloseFn> = self.map().drain().map(|(_, close)| close).collect();
        let mut stops = tokio::task::JoinSet::new();
        for close in closes {
            stops.spawn(close());
        }
        while stops.join_next().await.is_some() {}
    }
}

/// One session of the upstream and its translator.
struct Lane {
    key: u64,
    translator: Box<dyn Translate>,
    to_upstream: mpsc::Sender<Frame>,
    /// The client capabilities it was claimed with.
    capabilities: Option<Value>,
    /// Claimed by a `server/discover` and nothing else yet.
    provisional: bool,
    /// Frames for its link that the link's channel could not take yet, in order.
    waiting: VecDeque<Frame>,
    /// When it is looked at for closing, if idle (lanes other than the link's own): [`IDLE`] after
    /// the client side last sent it a frame.
    due: Instant,
}

impl Lane {
    fn new(key: u64, translator: Box<dyn Translate>, to_upstream: mpsc::Sender<Frame>) -> Self {
        Self {
            key,
            translator,
            to_upstream,
            capabilities: None,
            provisional: false,
            waiting: VecDeque::new(),
            due: Instant::now() + IDLE,
        }
    }
}

/// Where a client frame goes.
enum Route {
    Lane(usize),
    Open(Value),
    /// Nowhere: every session is taken; the answer that says so.
    Refuse(Frame),
}

/// The channels to the lanes' links that are full while frames wait for them.
pub(super) struct Blocked(Vec<(u64, mpsc::Sender<Frame>)>);

/// Room in the channel to lane `key`'s link, or the link is gone.
type Ready = (u64, Result<OwnedPermit<Frame>, mpsc::error::SendError<()>>);

impl Blocked {
    /// Waits until one of the channels has room.
    pub(super) async fn ready(self) -> Ready {
        let mut waits: Vec<Pin<Box<dyn Future<Output = Ready> + Send>>> = self
            .0
            .into_iter()
            .map(|(key, tx)| {
                Box::pin(async move { (key, tx.reserve_owned().await) })
                    as Pin<Box<dyn Future<Output = Ready> + Send>>
            })
            .collect();
        std::future::poll_fn(|cx| {
            for wait in &mut waits {
                if let Poll::Ready(ready) = wait.as_mut().poll(cx) {
                    return Poll::Ready(ready);
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// Every lane of one link.
pub(super) struct Lanes {
    lanes: Vec<Lane>,
    next_key: u64,
    /// The upstream more sessions are opened from; `None`: lane 0 takes everything.
    upstream: Option<Arc<dyn Upstream>>,
    shown: String,
    events: mpsc::Sender<(u64, UpstreamEvent)>,
    closes: Closes,
    /// What a translator asks for, before it is tagged with its lane (kept for its capacity).
    scratch: Vec<Out>,
    /// Events for the client side that its channel could not take yet, in order.
    to_client: VecDeque<UpstreamEvent>,
    /// The frames waiting in every lane's `waiting`.
    upstream_waiting: usize,
}

impl Lanes {
    /// The link's own lane, with `translator` on `to_upstream`. With `upstream`, a 2026-07-28 client
    /// with other capabilities gets a lane of its own, whose events come on the receiver.
    pub(super) fn new(
        translator: Box<dyn Translate>,
        to_upstream: mpsc::Sender<Frame>,
        upstream: Option<Arc<dyn Upstream>>,
        shown: String,
        closes: Closes,
    ) -> (Self, mpsc::Receiver<(u64, UpstreamEvent)>) {
        let (events, events_rx) = mpsc::channel(QUEUE);
        let upstream = upstream.filter(|upstream| upstream.connect_apart().is_some());
        let lanes = Self {
            lanes: vec![Lane::new(0, translator, to_upstream)],
            next_key: 0,
            upstream,
            shown,
            events,
            closes,
            scratch: Vec::new(),
            to_client: VecDeque::new(),
            upstream_waiting: 0,
        };
        (lanes, events_rx)
    }

    /// A frame from the client side.
    pub(super) fn on_client(&mut self, frame: Frame, out: &mut Vec<Sent>) {
        let index = match self.route(&frame) {
            Route::Lane(index) => index,
            Route::Open(capabilities) => self.open(capabilities),
            Route::Refuse(answer) => {
                out.push((0, Out::Client(UpstreamEvent::Message(answer))));
                return;
            }
        };
        if index != 0 {
            self.lanes[index].due = Instant::now() + IDLE;
        }
        let mut outs = std::mem::take(&mut self.scratch);
        self.lanes[index].translator.on_client(frame, &mut outs);
        self.settle(index, &mut outs, out);
        self.scratch = outs;
    }

    /// An event from the upstream link of lane `key`; events of a lane that is gone are dropped.
    pub(super) fn on_upstream(&mut self, key: u64, event: UpstreamEvent, out: &mut Vec<Sent>) {
        let Some(index) = self.lanes.iter().position(|lane| lane.key == key) else {
            return;
        };
        let mut outs = std::mem::take(&mut self.scratch);
        self.lanes[index].translator.on_upstream(event, &mut outs);
        self.settle(index, &mut outs, out);
        self.scratch = outs;
    }

    /// Hands on what the translators asked for, without waiting: what a full channel cannot take yet
    /// waits in order behind what already waits. False once the client side or lane 0's link is gone.
    pub(super) fn dispatch(
        &mut self,
        out: &mut Vec<Sent>,
        to_client: &mpsc::Sender<UpstreamEvent>,
    ) -> bool {
        for (key, item) in out.drain(..) {
            match item {
                Out::Client(event) => {
                    if !self.to_client.is_empty() {
                        self.to_client.push_back(event);
                        continue;
                    }
                    match to_client.try_send(event) {
                        Ok(()) => {}
                        Err(TrySendError::Full(event)) => self.to_client.push_back(event),
                        Err(TrySendError::Closed(_)) => return false,
                    }
                }
                Out::Upstream(frame) => {
                    let Some(lane) = self.lanes.iter_mut().find(|lane| lane.key == key) else {
                        continue;
                    };
                    if !lane.waiting.is_empty() {
                        lane.waiting.push_back(frame);
                        self.upstream_waiting += 1;
                        continue;
                    }
                    match lane.to_upstream.try_send(frame) {
                        Ok(()) => {}
                        Err(TrySendError::Full(frame)) => {
                            lane.waiting.push_back(frame);
                            self.upstream_waiting += 1;
                        }
                        // A lane's link that ended says so with an event of its own.
                        Err(TrySendError::Closed(_)) if key == 0 => return false,
                        Err(TrySendError::Closed(_)) => {}
                    }
                }
            }
        }
        true
    }

    /// Whether the pump takes the client side's next frame: not while [`WAITING`] frames wait for the
    /// upstream.
    pub(super) fn takes_client(&self) -> bool {
        self.upstream_waiting < WAITING
    }

    /// Whether the pump takes the upstream's next event: not while [`WAITING`] events wait for the
    /// client side.
    pub(super) fn takes_upstream(&self) -> bool {
        self.to_client.len() < WAITING
    }

    /// Whether events wait for room in the client side's channel.
    pub(super) fn client_waits(&self) -> bool {
        !self.to_client.is_empty()
    }

    /// Room in the client side's channel: what waits goes, as much as the channel takes. False once
    /// the client side is gone.
    pub(super) fn client_ready(
        &mut self,
        permit: mpsc::Permit<'_, UpstreamEvent>,
        to_client: &mpsc::Sender<UpstreamEvent>,
    ) -> bool {
        let Some(event) = self.to_client.pop_front() else {
            return true;
        };
        permit.send(event);
        while let Some(event) = self.to_client.pop_front() {
            match to_client.try_send(event) {
                Ok(()) => {}
                Err(TrySendError::Full(event)) => {
                    self.to_client.push_front(event);
                    break;
                }
                Err(TrySendError::Closed(_)) => return false,
            }
        }
        true
    }

    /// The channels to links that are full while frames wait for them; `None` when no frame waits.
    pub(super) fn blocked(&self) -> Option<Blocked> {
        if self.upstream_waiting == 0 {
            return None;
        }
        let blocked = self
            .lanes
            .iter()
            .filter(|lane| !lane.waiting.is_empty())
            .map(|lane| (lane.key, lane.to_upstream.clone()))
            .collect();
        Some(Blocked(blocked))
    }

    /// Room in the channel to lane `key`'s link: what waits for it goes, as much as the channel takes.
    /// False once lane 0's link is gone.
    pub(super) fn upstream_ready(
        &mut self,
        key: u64,
        permit: Result<OwnedPermit<Frame>, mpsc::error::SendError<()>>,
    ) -> bool {
        let Some(lane) = self.lanes.iter_mut().find(|lane| lane.key == key) else {
            return true;
        };
        let before = lane.waiting.len();
        match permit {
            Ok(permit) => {
                if let Some(frame) = lane.waiting.pop_front() {
                    permit.send(frame);
                }
                while let Some(frame) = lane.waiting.pop_front() {
                    match lane.to_upstream.try_send(frame) {
                        Ok(()) => {}
                        Err(TrySendError::Full(frame)) => {
                            lane.waiting.push_front(frame);
                            break;
                        }
                        Err(TrySendError::Closed(_)) => lane.waiting.clear(),
                    }
                }
            }
            Err(_) => lane.waiting.clear(),
        }
        self.upstream_waiting -= before - lane.waiting.len();
        key != 0 || !lane.to_upstream.is_closed()
    }

    /// When the next lane other than the link's own falls idle; `None` when only the link's own is
    /// open.
    pub(super) fn idle_at(&self) -> Option<Instant> {
        self.lanes.iter().skip(1).map(|lane| lane.due).min()
    }

    /// Closes the lanes (other than the link's own) that had no request for [`IDLE`] and hold
    /// nothing in flight; one that still holds something is looked at again a minute later.
    pub(super) fn close_idle(&mut self, now: Instant) {
        let mut index = 1;
        while index < self.lanes.len() {
            let lane = &mut self.lanes[index];
            if lane.due > now {
                index += 1;
                continue;
            }
            if !lane.translator.idle() || !lane.waiting.is_empty() {
                lane.due = now + IDLE_RECHECK;
                index += 1;
                continue;
            }
            let lane = self.lanes.remove(index);
            tracing::info!(
                "closed the session of the upstream {} opened for other client capabilities: no \
                 request for {} s ({} open)",
                self.shown,
                IDLE.as_secs(),
                self.lanes.len()
            );
            if let Some(close) = self.closes.take(lane.key) {
                tokio::spawn(close());
            }
        }
    }

    /// Which lane takes `frame`, or the capabilities of a lane to open for it.
    fn route(&mut self, frame: &Frame) -> Route {
        if self.upstream.is_none() {
            return Route::Lane(0);
        }
        if !may_be_modern(frame) {
            self.claim_for_legacy(frame);
            return Route::Lane(0);
        }
        let Ok(message) = serde_json::from_slice::<Value>(frame) else {
            return Route::Lane(0);
        };
        let meta = message["params"]["_meta"].as_object();
        if !meta.is_some_and(|meta| meta.contains_key(META_PROTOCOL_VERSION)) {
            return Route::Lane(0);
        }
        let method = message["method"].as_str().unwrap_or_default();
        let is_request = message.get("id").is_some_and(|id| !id.is_null()) && !method.is_empty();
        let capabilities = meta.and_then(|meta| meta.get(META_CLIENT_CAPABILITIES));
        let discover = method == "server/discover";
        if let Some(capabilities) = capabilities
            && let Some(index) = self
                .lanes
                .iter()
                .position(|lane| lane.capabilities.as_ref() == Some(capabilities))
        {
            self.lanes[index].provisional &= discover;
            return Route::Lane(index);
        }
        let (Some(capabilities), true) = (capabilities, is_request) else {
            return Route::Lane(self.holder(&message));
        };
        let first = &mut self.lanes[0];
        if first.capabilities.is_none() || (first.provisional && !discover) {
            first.capabilities = Some(capabilities.clone());
            first.provisional = discover;
            return Route::Lane(0);
        }
        if discover {
            return Route::Lane(0);
        }
        if self.lanes.len() >= MAX_SESSIONS {
            return Route::Refuse(self.refusal(&message));
        }
        Route::Open(capabilities.clone())
    }

    /// The answer to a request that would need a session past [`MAX_SESSIONS`].
    fn refusal(&self, message: &Value) -> Frame {
        tracing::warn!(
            "refused a 2026-07-28 request: its client declares other capabilities than the {} \
             open sessions of the upstream {}, the most one link holds",
            self.lanes.len(),
            self.shown
        );
        let text = format!(
            "the upstream holds {MAX_SESSIONS} sessions for clients with other capabilities, the \
             most the bridge opens: send the request again once one has been idle for {} s and \
             closed, or declare the capabilities of a client already served",
            IDLE.as_secs()
        );
        let id = message["id"].to_string();
        let data = jsonrpc::limit_data("too_many_capability_sessions", MAX_SESSIONS);
        jsonrpc::error_frame(Some(&id), TOO_MANY_CAPABILITY_SESSIONS, &text, data)
    }

    /// The lane holding the request a notification (a cancellation) names; lane 0 when none does.
    fn holder(&self, message: &Value) -> usize {
        let named = &message["params"]["requestId"];
        self.lanes
            .iter()
            .position(|lane| lane.translator.holds(named))
            .unwrap_or(0)
    }

    /// A legacy client's `initialize` gives lane 0 its capabilities, when nothing did before.
    fn claim_for_legacy(&mut self, frame: &Frame) {
        let first = &mut self.lanes[0];
        if first.capabilities.is_some() || !may_be_handshake(frame) {
            return;
        }
        let Ok(message) = serde_json::from_slice::<Value>(frame) else {
            return;
        };
        if message["method"] == "initialize" && message.get("id").is_some() {
            first.capabilities = Some(message["params"]["capabilities"].clone());
        }
    }

    /// Opens a lane for `capabilities`: its link connects in the background, frames wait for it.
    fn open(&mut self, capabilities: Value) -> usize {
        let Some(upstream) = self.upstream.clone() else {
            return 0;
        };
        self.next_key += 1;
        let key = self.next_key;
        let (to_upstream, frames) = mpsc::channel(QUEUE);
        tokio::spawn(drive(
            key,
            upstream,
            frames,
            self.events.clone(),
            self.closes.clone(),
        ));
        let mut lane = Lane::new(key, Box::new(ModernOnLegacy::new()), to_upstream);
        lane.capabilities = Some(capabilities);
        self.lanes.push(lane);
        tracing::info!(
            "a 2026-07-28 client declares other capabilities than the open sessions of the upstream {}: \
             it gets a session of its own ({} open)",
            self.shown,
            self.lanes.len()
        );
        self.lanes.len() - 1
    }

    /// Hands on what lane `index`'s translator asked for. What a lane of its own hands the client side
    /// is settled here: its link's end closes the lane alone, a request it could not deliver is
    /// answered, and a server request with no client request to ride on is answered on the spot.
    fn settle(&mut self, index: usize, outs: &mut Vec<Out>, out: &mut Vec<Sent>) {
        let key = self.lanes[index].key;
        if key == 0 {
            out.extend(outs.drain(..).map(|item| (0, item)));
            return;
        }
        let mut ended = None;
        for item in outs.drain(..) {
            let event = match item {
                Out::Client(event) if key != 0 => event,
                item => {
                    out.push((key, item));
                    continue;
                }
            };
            match event {
                UpstreamEvent::Closed { reason } => ended = Some(reason),
                UpstreamEvent::Undelivered {
                    frame,
                    maybe_delivered: false,
                    reason,
                } => {
                    if let Some(answer) = undelivered(&frame, &reason) {
                        out.push((key, Out::Client(UpstreamEvent::Message(answer))));
                    }
                }
                UpstreamEvent::Message(frame) => match unasked(&frame) {
                    Some(answer) => out.push((key, Out::Upstream(answer))),
                    None => out.push((key, Out::Client(UpstreamEvent::Message(frame)))),
                },
                event => out.push((key, Out::Client(event))),
            }
        }
        if let Some(reason) = ended {
            let mut lane = self.lanes.remove(index);
            self.upstream_waiting -= lane.waiting.len();
            let mut outs = Vec::new();
            lane.translator.abandon(&reason, &mut outs);
            out.extend(outs.into_iter().map(|item| (key, item)));
            tracing::debug!(
                "a session of its own of the upstream {} ended: {reason}",
                self.shown
            );
            if let Some(close) = self.closes.take(key) {
                tokio::spawn(close());
            }
        }
    }
}

/// Connects lane `key`'s link, then moves its frames up and its events back, tagged with the key.
async fn drive(
    key: u64,
    upstream: Arc<dyn Upstream>,
    mut frames: mpsc::Receiver<Frame>,
    events: mpsc::Sender<(u64, UpstreamEvent)>,
    closes: Closes,
) {
    let connected = match upstream.connect_apart() {
        Some(connecting) => connecting.await,
        None => return,
    };
    let Link {
        outgoing,
        events: mut from_upstream,
        close,
    } = match connected {
        Ok(link) => link,
        Err(e) => {
            let reason = format!("cannot open another session: {e}");
            let _ = events.send((key, UpstreamEvent::Closed { reason })).await;
            return;
        }
    };
    closes.put(key, close);
    // What the link's channel could not take yet: the link's events are read meanwhile, so that its
    // child, writing to a full stdout, reads its stdin again.
    let mut waiting = VecDeque::new();
    loop {
        tokio::select! {
            permit = outgoing.reserve(), if !waiting.is_empty() => match permit {
                Ok(permit) => {
                    if let Some(frame) = waiting.pop_front() {
                        permit.send(frame);
                    }
                    relay(&outgoing, &mut waiting);
                }
                // A link that ended says so with an event.
                Err(_) => waiting.clear(),
            },
            frame = frames.recv(), if waiting.len() < WAITING => match frame {
                Some(frame) => {
                    waiting.push_back(frame);
                    relay(&outgoing, &mut waiting);
                }
                None => return,
            },
            event = from_upstream.recv() => {
                let end = event.is_none();
                let event = event.unwrap_or_else(|| UpstreamEvent::Closed {
                    reason: "the link ended".to_owned(),
                });
                if events.send((key, event)).await.is_err() || end {
                    return;
                }
            }
        }
    }
}

/// Sends what waits, in order, as far as the channel takes it; a channel whose link ended takes
/// nothing more (the link says so with an event).
fn relay(outgoing: &mpsc::Sender<Frame>, waiting: &mut VecDeque<Frame>) {
    while let Some(frame) = waiting.pop_front() {
        match outgoing.try_send(frame) {
            Ok(()) => {}
            Err(TrySendError::Full(frame)) => {
                waiting.push_front(frame);
                return;
            }
            Err(TrySendError::Closed(_)) => {
                waiting.clear();
                return;
            }
        }
    }
}

/// The answer to a request a lane's link could not deliver.
fn undelivered(frame: &Frame, reason: &str) -> Option<Frame> {
    let Ok(jsonrpc::Peek::One(info)) = jsonrpc::peek(frame) else {
        return None;
    };
    let id = info.id.as_deref().filter(|_| info.method.is_some())?;
    let message = format!(
        "the session the bridge opened for this client's capabilities could not take the request \
         ({reason}); send it again"
    );
    Some(jsonrpc::error_frame(
        Some(id),
        UPSTREAM_UNREACHABLE,
        &message,
        jsonrpc::data("upstream_unreachable", None),
    ))
}

/// The answer to a server request that no client request carries: a lane serves 2026-07-28 requests
/// alone, so it has no client to ask. `ping` is answered.
fn unasked(frame: &Frame) -> Option<Frame> {
    let Ok(jsonrpc::Peek::One(info)) = jsonrpc::peek(frame) else {
        return None;
    };
    if !info.is_request() {
        return None;
    }
    let id: Value = serde_json::from_str(info.id.as_deref()?).ok()?;
    let answer = if info.method.as_deref() == Some(crate::vocab::PING) {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    } else {
        let message = "no client can answer this request: the session serves 2026-07-28 requests, \
                       and none is waiting for it";
        crate::vocab::error_answer(&id, METHOD_NOT_FOUND, message)
    };
    Some(jsonrpc::to_frame(&answer))
}

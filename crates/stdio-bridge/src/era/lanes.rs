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
//! At most [`MAX_SESSIONS`] sessions are open; a client past that is served in lane 0 (and the
//! translator logs it). A lane whose link ends answers what it held with an error and is forgotten:
//! the next request with its capabilities opens another.

#[cfg(test)]
mod tests;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{
    Out, Translate, may_be_handshake, may_be_modern,
    to_legacy::{CAPABILITIES_KEY, ToLegacy, VERSION_KEY},
};
use crate::{
    UPSTREAM_UNREACHABLE, jsonrpc,
    upstream::{BoxFuture, Frame, Link, Upstream, UpstreamEvent},
};

/// How many sessions of the upstream one link may hold at once, its own included.
pub(super) const MAX_SESSIONS: usize = 8;

const METHOD_NOT_FOUND: i64 = -32601;
/// How many frames wait for a lane's link.
const QUEUE: usize = 64;

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
}

/// Where a client frame goes.
enum Route {
    Lane(usize),
    Open(Value),
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
        let first = Lane {
            key: 0,
            translator,
            to_upstream,
            capabilities: None,
            provisional: false,
        };
        let lanes = Self {
            lanes: vec![first],
            next_key: 0,
            upstream,
            shown,
            events,
            closes,
            scratch: Vec::new(),
        };
        (lanes, events_rx)
    }

    /// A frame from the client side.
    pub(super) fn on_client(&mut self, frame: Frame, out: &mut Vec<Sent>) {
        let index = match self.route(&frame) {
            Route::Lane(index) => index,
            Route::Open(capabilities) => self.open(capabilities),
        };
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

    /// Carries out what the translators asked for; false once the client side or lane 0's link is gone.
    pub(super) async fn flush(
        &mut self,
        out: &mut Vec<Sent>,
        to_client: &mpsc::Sender<UpstreamEvent>,
    ) -> bool {
        for (key, item) in out.drain(..) {
            match item {
                Out::Client(event) => {
                    if to_client.send(event).await.is_err() {
                        return false;
                    }
                }
                Out::Upstream(frame) => {
                    let Some(lane) = self.lanes.iter().find(|lane| lane.key == key) else {
                        continue;
                    };
                    // A lane's link that ended says so with an event of its own.
                    if lane.to_upstream.send(frame).await.is_err() && key == 0 {
                        return false;
                    }
                }
            }
        }
        true
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
        if !meta.is_some_and(|meta| meta.contains_key(VERSION_KEY)) {
            return Route::Lane(0);
        }
        let method = message["method"].as_str().unwrap_or_default();
        let is_request = message.get("id").is_some_and(|id| !id.is_null()) && !method.is_empty();
        let capabilities = meta.and_then(|meta| meta.get(CAPABILITIES_KEY));
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
        if discover || self.lanes.len() >= MAX_SESSIONS {
            return Route::Lane(0);
        }
        Route::Open(capabilities.clone())
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
        self.lanes.push(Lane {
            key,
            translator: Box::new(ToLegacy::new()),
            to_upstream,
            capabilities: Some(capabilities),
            provisional: false,
        });
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
    loop {
        tokio::select! {
            frame = frames.recv() => match frame {
                // A link that ended says so with an event.
                Some(frame) => { let _ = outgoing.send(frame).await; }
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
    let answer = if info.method.as_deref() == Some("ping") {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": METHOD_NOT_FOUND,
            "message": "no client can answer this request: the session serves 2026-07-28 requests, \
                        and none is waiting for it",
        }})
    };
    Some(jsonrpc::to_frame(&answer))
}

//! The task that sits between the client side and the upstream's link: it finds the upstream's era,
//! then feeds every frame through the era's translator.
//!
//! It never waits on a write while it could read: a child process that stops reading its stdin
//! because its stdout is full is unblocked only by reading its stdout. So what a full channel cannot
//! take waits in the lanes' queues, the pump goes on reading the other side, and it stops reading a
//! side only while the queue that side feeds is full (`lanes::WAITING`).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
    },
    time::Duration,
};

use tokio::sync::mpsc;

use super::{
    Era, Out, Protocol, Translate,
    lanes::{Closes, Lanes},
    legacy_on_modern::{self, Discovery, LegacyOnModern},
    modern_on_legacy::ModernOnLegacy,
};
use crate::jsonrpc::Frame;
use crate::upstream::{Link, Upstream, UpstreamEvent};

/// How many frames wait between the client side and the pump, and between the pump and the client side.
const QUEUE: usize = 64;
/// How long `server/discover` may take before an upstream counts as legacy. Servers of both eras answer
/// it at once (a result, or an error for a method they do not know); the wait covers a child that is
/// slow to start on a loaded machine, which must not be taken for the wrong era (a child of both eras
/// that answers late has become a 2026-07-28 server meanwhile).
const DISCOVER_TIMEOUT: Duration = Duration::from_secs(60);

/// The era last said at info level for one [`EraUpstream`](super::EraUpstream), so that a restart
/// that finds the same era says it only at debug level.
#[derive(Clone, Default)]
pub(super) struct Said(Arc<AtomicU8>);

impl Said {
    /// Logs the era found: at info level the first time and when it changes.
    fn era(&self, era: Era, shown: &str) {
        let code = match era {
            Era::Legacy => 1,
            Era::Modern => 2,
        };
        let name = match era {
            Era::Legacy => "the handshake era (initialize)",
            Era::Modern => "2026-07-28 (stateless)",
        };
        if self.0.swap(code, Ordering::Relaxed) == code {
            tracing::debug!("the upstream {shown} speaks {name}");
        } else {
            tracing::info!("the upstream {shown} speaks {name}");
        }
    }
}

/// What the pump knows of the upstream beyond its link.
pub(super) struct Context {
    pub(super) protocol: Protocol,
    /// The upstream's description, for logs.
    pub(super) shown: String,
    pub(super) said: Said,
    /// Where more sessions come from, for 2026-07-28 clients with other capabilities.
    pub(super) upstream: Option<Arc<dyn Upstream>>,
}

/// Starts the pump for one upstream link and returns the link the client side uses instead. Closing
/// it closes the sessions the pump opened beside the link's own.
pub(super) fn start(inner: Link, context: Context) -> Link {
    let (client_tx, client_rx) = mpsc::channel::<Frame>(QUEUE);
    let (event_tx, event_rx) = mpsc::channel::<UpstreamEvent>(QUEUE);
    let Link {
        outgoing,
        events,
        close,
    } = inner;
    let closes = Closes::default();
    let ends = Ends {
        from_client: client_rx,
        to_upstream: outgoing,
        from_upstream: events,
        to_client: event_tx,
        closes: closes.clone(),
    };
    tokio::spawn(run(context, ends));
    Link {
        outgoing: client_tx,
        events: event_rx,
        close: Box::new(move || {
            Box::pin(async move {
                tokio::join!(close(), closes.close_all());
            })
        }),
    }
}

/// The four ends the pump joins, and the stops of the sessions it opens.
struct Ends {
    from_client: mpsc::Receiver<Frame>,
    to_upstream: mpsc::Sender<Frame>,
    from_upstream: mpsc::Receiver<UpstreamEvent>,
    to_client: mpsc::Sender<UpstreamEvent>,
    closes: Closes,
}

async fn run(context: Context, ends: Ends) {
    let Context {
        protocol,
        shown,
        said,
        upstream,
    } = context;
    let Ends {
        mut from_client,
        to_upstream,
        mut from_upstream,
        to_client,
        closes,
    } = ends;
    let mut early = Vec::new();
    let found = match protocol {
        Protocol::Legacy => found(Era::Legacy),
        Protocol::Modern => found(Era::Modern),
        Protocol::Auto => {
            let found = legacy_on_modern::discover(
                &to_upstream,
                &mut from_upstream,
                &mut early,
                DISCOVER_TIMEOUT,
            )
            .await;
            if found.ended {
                tracing::debug!("the upstream {shown} went away before its era was found");
            } else if found.late {
                tracing::warn!(
                    "the upstream {shown} did not answer server/discover in {} s: taking it for a \
                     server of the handshake era (use --protocol legacy or --protocol modern to skip \
                     this probe)",
                    DISCOVER_TIMEOUT.as_secs()
                );
                said.era(found.era, &shown);
            } else {
                said.era(found.era, &shown);
            }
            found
        }
    };
    // An answer to detection that came too late is dropped, not handed to the client.
    let mut late = found.late;
    let (translator, upstream): (Box<dyn Translate>, _) = match found.era {
        Era::Legacy if protocol == Protocol::Legacy => {
            (Box::new(Told(ModernOnLegacy::new())), upstream)
        }
        Era::Legacy => (Box::new(ModernOnLegacy::new()), upstream),
        Era::Modern => (Box::new(LegacyOnModern::new(found.result)), None),
    };
    let (mut lanes, mut from_lanes) =
        Lanes::new(translator, to_upstream, upstream, shown, closes.clone());
    let mut out = Vec::new();
    for event in early {
        lanes.on_upstream(0, event, &mut out);
    }
    // The close of idle lanes, moved only when the next one's time moves.
    let idle = tokio::time::sleep(Duration::from_secs(86_400));
    tokio::pin!(idle);
    let mut armed = None;
    loop {
        if !lanes.dispatch(&mut out, &to_client) {
            break;
        }
        let blocked = lanes.blocked();
        let upstream_waits = blocked.is_some();
        let idle_at = lanes.idle_at();
        if let Some(at) = idle_at
            && armed != Some(at)
        {
            idle.as_mut().reset(at);
            armed = Some(at);
        }
        tokio::select! {
            permit = to_client.reserve(), if lanes.client_waits() => match permit {
                Ok(permit) => if !lanes.client_ready(permit, &to_client) {
                    break;
                },
                Err(_) => break,
            },
            (key, permit) = async move { blocked.expect("guarded").ready().await }, if upstream_waits => {
                if !lanes.upstream_ready(key, permit) {
                    break;
                }
            }
            frame = from_client.recv(), if lanes.takes_client() => match frame {
                Some(frame) => lanes.on_client(frame, &mut out),
                None => break,
            },
            event = from_upstream.recv(), if lanes.takes_upstream() => match event {
                Some(UpstreamEvent::Message(frame)) if late && legacy_on_modern::is_discover(&frame) => {
                    late = false;
                }
                Some(event) => lanes.on_upstream(0, event, &mut out),
                None => break,
            },
            Some((key, event)) = from_lanes.recv(), if lanes.takes_upstream() => {
                lanes.on_upstream(key, event, &mut out);
            }
            () = &mut idle, if idle_at.is_some() => lanes.close_idle(tokio::time::Instant::now()),
        }
    }
    // The link's own session is over: so are the ones opened beside it.
    closes.close_all().await;
}

fn found(era: Era) -> Discovery {
    Discovery {
        era,
        result: None,
        late: false,
        ended: false,
    }
}

/// The handshake era's translator, for an upstream the user said is legacy: an `initialize` the
/// upstream refuses because it speaks only 2026-07-28 is answered with an error that says so.
struct Told(ModernOnLegacy);

impl Translate for Told {
    fn on_client(&mut self, frame: Frame, out: &mut Vec<Out>) {
        self.0.on_client(frame, out);
    }

    fn abandon(&mut self, reason: &str, out: &mut Vec<Out>) {
        self.0.abandon(reason, out);
    }

    fn holds(&self, id: &serde_json::Value) -> bool {
        self.0.holds(id)
    }

    fn on_upstream(&mut self, event: UpstreamEvent, out: &mut Vec<Out>) {
        let start = out.len();
        self.0.on_upstream(event, out);
        for item in &mut out[start..] {
            if let Out::Client(UpstreamEvent::Message(frame)) = item
                && let Some(explained) = legacy_on_modern::explain_refused_handshake(frame)
            {
                *frame = explained;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn frame(message: &Value) -> Frame {
        Frame::from(serde_json::to_vec(message).unwrap())
    }

    fn parse(frame: &Frame) -> Value {
        serde_json::from_slice(frame).unwrap()
    }

    /// A pump over channels: the test plays the upstream on the far ends.
    fn pump(protocol: Protocol) -> (Link, mpsc::Receiver<Frame>, mpsc::Sender<UpstreamEvent>) {
        let (outgoing, sent) = mpsc::channel(8);
        let (events_tx, events) = mpsc::channel(8);
        let inner = Link {
            outgoing,
            events,
            close: Box::new(|| Box::pin(async {})),
        };
        let context = Context {
            protocol,
            shown: "test".into(),
            said: Said::default(),
            upstream: None,
        };
        let link = start(inner, context);
        (link, sent, events_tx)
    }

    async fn message(events: &mut mpsc::Receiver<UpstreamEvent>) -> Value {
        match events.recv().await {
            Some(UpstreamEvent::Message(frame)) => parse(&frame),
            other => panic!("expected a message, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_discover_answer_is_dropped_and_early_events_kept_in_order() {
        let (mut link, mut sent, upstream) = pump(Protocol::Auto);
        let asked = parse(&sent.recv().await.unwrap());
        assert_eq!(asked["method"], "server/discover");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "starting"}});
        upstream
            .send(UpstreamEvent::Message(frame(&note)))
            .await
            .unwrap();
        // No answer within the time: the handshake era, so initialize goes up as it is.
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
        link.outgoing.send(frame(&initialize)).await.unwrap();
        assert_eq!(parse(&sent.recv().await.unwrap()), initialize);
        assert_eq!(message(&mut link.events).await, note);
        let late = json!({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -32601, "message": "no"}});
        let answer =
            json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18"}});
        for message in [&late, &answer] {
            upstream
                .send(UpstreamEvent::Message(frame(message)))
                .await
                .unwrap();
        }
        assert_eq!(message(&mut link.events).await, answer);
    }

    #[tokio::test]
    async fn protocol_modern_asks_nothing_before_the_client_does() {
        let (link, mut sent, _upstream) = pump(Protocol::Modern);
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        link.outgoing.send(frame(&list)).await.unwrap();
        let first = parse(&sent.recv().await.unwrap());
        assert_eq!(first["method"], "tools/list", "{first}");
        assert_eq!(
            first["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }
}

//! The task that sits between the client side and the upstream's link: it finds the upstream's era,
//! then feeds every frame through the era's translator.

use std::time::Duration;

use tokio::sync::mpsc;

use super::{Era, Out, Protocol, Translate, to_legacy::ToLegacy, to_modern::ToModern};
use crate::upstream::{Frame, Link, UpstreamEvent};

/// How many frames wait between the client side and the pump, and between the pump and the client side.
const QUEUE: usize = 64;
/// How long `server/discover` may take before an upstream counts as legacy.
const DISCOVER_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts the pump for one upstream link and returns the link the client side uses instead.
pub(super) fn start(inner: Link, protocol: Protocol, shown: String) -> Link {
    let (client_tx, client_rx) = mpsc::channel::<Frame>(QUEUE);
    let (event_tx, event_rx) = mpsc::channel::<UpstreamEvent>(QUEUE);
    let Link {
        outgoing,
        events,
        close,
    } = inner;
    tokio::spawn(run(protocol, shown, client_rx, outgoing, events, event_tx));
    Link {
        outgoing: client_tx,
        events: event_rx,
        close,
    }
}

async fn run(
    protocol: Protocol,
    shown: String,
    mut from_client: mpsc::Receiver<Frame>,
    to_upstream: mpsc::Sender<Frame>,
    mut from_upstream: mpsc::Receiver<UpstreamEvent>,
    to_client: mpsc::Sender<UpstreamEvent>,
) {
    let mut early = Vec::new();
    let (era, discovered) = match protocol {
        Protocol::Legacy => (Era::Legacy, None),
        Protocol::Modern => (Era::Modern, None),
        Protocol::Auto => {
            super::to_modern::discover(
                &to_upstream,
                &mut from_upstream,
                &mut early,
                DISCOVER_TIMEOUT,
            )
            .await
        }
    };
    if protocol == Protocol::Auto {
        tracing::info!(upstream = %shown, era = ?era, "found the upstream's protocol era");
    }
    let mut translator: Box<dyn Translate> = match era {
        Era::Legacy => Box::new(ToLegacy::new()),
        Era::Modern => Box::new(ToModern::new(discovered)),
    };
    let mut out = Vec::new();
    for event in early {
        translator.on_upstream(event, &mut out);
    }
    loop {
        if !flush(&mut out, &to_upstream, &to_client).await {
            return;
        }
        tokio::select! {
            frame = from_client.recv() => match frame {
                Some(frame) => translator.on_client(frame, &mut out),
                None => return,
            },
            event = from_upstream.recv() => match event {
                Some(event) => translator.on_upstream(event, &mut out),
                None => return,
            },
        }
    }
}

/// Carries out what the translator asked for; false once either side is gone.
async fn flush(
    out: &mut Vec<Out>,
    to_upstream: &mpsc::Sender<Frame>,
    to_client: &mpsc::Sender<UpstreamEvent>,
) -> bool {
    for item in out.drain(..) {
        let sent = match item {
            Out::Upstream(frame) => to_upstream.send(frame).await.is_ok(),
            Out::Client(event) => to_client.send(event).await.is_ok(),
        };
        if !sent {
            return false;
        }
    }
    true
}

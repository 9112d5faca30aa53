//! Finding an upstream's era: `server/discover` first; an error, an answer that is not MCP, or no
//! answer in time means the handshake era.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::{sync::mpsc, time::Instant};

use super::{OWN_ID, wire};
use crate::jsonrpc::Frame;
use crate::vocab::SERVER_DISCOVER;
use crate::{era::Era, upstream::UpstreamEvent, vocab::MODERN_VERSION};

/// The id of the detection's `server/discover`: a string of the translator's own form, so it cannot
/// be taken for a client's numeric or other id.
pub(in crate::era) const DISCOVER_ID: &str = "calltape-era/detect";

/// What detection found.
#[derive(Debug)]
pub(in crate::era) struct Discovery {
    pub(in crate::era) era: Era,
    /// `server/discover`'s result, when the upstream speaks 2026-07-28.
    pub(in crate::era) result: Option<Value>,
    /// Whether the answer is still due (the time ran out): it is dropped when it comes.
    pub(in crate::era) late: bool,
    /// Whether the link ended before the era was found (nothing was found, nothing is said).
    pub(in crate::era) ended: bool,
}

/// The detection's request: the protocol version and empty client capabilities in `_meta`.
pub(in crate::era) fn discover_frame() -> Frame {
    debug_assert!(DISCOVER_ID.starts_with(OWN_ID));
    wire::request(
        DISCOVER_ID,
        SERVER_DISCOVER,
        json!({"_meta": wire::own_meta()}),
    )
}

/// Whether a frame is the detection's request, or its answer.
pub(in crate::era) fn is_discover(frame: &Frame) -> bool {
    wire::object(frame)
        .and_then(|m| m.get("id").cloned())
        .is_some_and(|id| id == DISCOVER_ID)
}

/// Asks the upstream for `server/discover` and says which era it speaks, with the result when modern.
/// Events that arrive meanwhile and are not the answer are kept in `early`, in order.
pub(in crate::era) async fn discover(
    to_upstream: &mpsc::Sender<Frame>,
    from_upstream: &mut mpsc::Receiver<UpstreamEvent>,
    early: &mut Vec<UpstreamEvent>,
    timeout: Duration,
) -> Discovery {
    let legacy = |late| Discovery {
        era: Era::Legacy,
        result: None,
        late,
        ended: false,
    };
    let ended = Discovery {
        ended: true,
        ..legacy(false)
    };
    if to_upstream.send(discover_frame()).await.is_err() {
        return ended;
    }
    let deadline = Instant::now() + timeout;
    loop {
        let event = match tokio::time::timeout_at(deadline, from_upstream.recv()).await {
            Ok(Some(event)) => event,
            Ok(None) => return ended,
            Err(_) => return legacy(true),
        };
        match event {
            UpstreamEvent::Message(frame) if is_discover(&frame) => {
                return match wire::object(&frame).and_then(|mut m| m.remove("result")) {
                    Some(result) if speaks_modern(&result) => Discovery {
                        era: Era::Modern,
                        result: Some(result),
                        late: false,
                        ended: false,
                    },
                    _ => legacy(false),
                };
            }
            UpstreamEvent::Undelivered { ref frame, .. }
            | UpstreamEvent::ProtocolError { ref frame, .. }
            | UpstreamEvent::SessionExpired { ref frame }
                if is_discover(frame) =>
            {
                return legacy(false);
            }
            UpstreamEvent::Closed { .. } => {
                early.push(event);
                return ended;
            }
            other => early.push(other),
        }
    }
}

/// Whether a `server/discover` result names 2026-07-28 among its versions.
fn speaks_modern(result: &Value) -> bool {
    result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|versions| versions.iter().any(|v| v == MODERN_VERSION))
}

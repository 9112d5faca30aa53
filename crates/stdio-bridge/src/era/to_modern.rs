//! A legacy client (or a legacy frame) on a 2026-07-28 upstream.

use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::{Era, Out, Translate};
use crate::upstream::{Frame, UpstreamEvent};

/// The translator for an upstream that speaks 2026-07-28.
pub(super) struct ToModern {
    /// `server/discover`'s result, when it was asked for while the era was found.
    #[allow(dead_code)]
    discovered: Option<Value>,
}

impl ToModern {
    pub(super) fn new(discovered: Option<Value>) -> Self {
        Self { discovered }
    }
}

impl Translate for ToModern {
    fn on_client(&mut self, frame: Frame, out: &mut Vec<Out>) {
        out.push(Out::Upstream(frame));
    }

    fn on_upstream(&mut self, event: UpstreamEvent, out: &mut Vec<Out>) {
        out.push(Out::Client(event));
    }
}

/// Asks the upstream for `server/discover` and says which era it speaks, with the result when modern.
/// Events that arrive meanwhile and are not the answer are kept in `early`, in order.
pub(super) async fn discover(
    _to_upstream: &mpsc::Sender<Frame>,
    _from_upstream: &mut mpsc::Receiver<UpstreamEvent>,
    _early: &mut Vec<UpstreamEvent>,
    _timeout: Duration,
) -> (Era, Option<Value>) {
    (Era::Legacy, None)
}

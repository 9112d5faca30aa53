//! A 2026-07-28 client (or a stateless frame) on a legacy upstream.

use super::{Out, Translate};
use crate::upstream::{Frame, UpstreamEvent};

/// The translator for an upstream that speaks the handshake era.
pub(super) struct ToLegacy {}

impl ToLegacy {
    pub(super) fn new() -> Self {
        Self {}
    }
}

impl Translate for ToLegacy {
    fn on_client(&mut self, frame: Frame, out: &mut Vec<Out>) {
        out.push(Out::Upstream(frame));
    }

    fn on_upstream(&mut self, event: UpstreamEvent, out: &mut Vec<Out>) {
        out.push(Out::Client(event));
    }
}

//! The recorder as the bridge's observer hook.

use calltape_stdio_bridge::{Direction, Tap, TapEvent};

use crate::mcp::SessionRecorder;

/// A session's recorder is a [`Tap`]: hand it to `calltape_stdio_bridge::BridgeBuilder::tap` (or to
/// a `serve` server, one per session) and every frame the client sends is a request, every frame it
/// receives an answer.
impl Tap for SessionRecorder {
    fn observe(&mut self, event: TapEvent) {
        match event.direction {
            Direction::FromClient => self.client_frame(&event.frame, event.at),
            Direction::ToClient => self.server_frame(&event.frame, event.at),
            _ => {}
        }
    }
}

//! The two MCP protocol eras, and the adapter that lets a client of one talk to a server of the other.
//!
//! - **legacy**: the handshake era (up to 2025-11-25): `initialize`, a session, server-to-client
//!   requests, `resources/subscribe`, `logging/setLevel`.
//! - **modern**: 2026-07-28, stateless: `server/discover`, the client's info and capabilities in each
//!   request's `_meta`, `subscriptions/listen`, `input_required` results, `resultType` on results.
//!
//! [`EraUpstream`] wraps any [`Upstream`]. On each connection it finds the upstream's era (or takes the
//! one it was told), then translates every frame of the other era, in both directions: a client may even
//! mix them on one link (as `serve`'s sessions do). Frames of the upstream's own era pass unchanged.

mod lanes;
mod legacy_on_modern;
mod modern_on_legacy;
mod pump;

use std::{
    fmt,
    str::FromStr,
    sync::{Arc, LazyLock},
};

use memchr::memmem::Finder;

use crate::jsonrpc::Frame;
use crate::{
    Error,
    upstream::{BoxFuture, Link, Upstream, UpstreamEvent},
};

/// Which era the upstream speaks, as the user asked: `--protocol auto|legacy|modern`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// Find out on each connection: `server/discover` first, the legacy handshake if that is refused.
    #[default]
    Auto,
    /// The upstream speaks the handshake era only.
    Legacy,
    /// The upstream speaks 2026-07-28 only.
    Modern,
}

impl FromStr for Protocol {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "auto" => Ok(Self::Auto),
            "legacy" => Ok(Self::Legacy),
            "modern" => Ok(Self::Modern),
            other => Err(Error::config(format!(
                "unknown protocol `{other}`: use auto, legacy or modern"
            ))),
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Legacy => "legacy",
            Self::Modern => "modern",
        })
    }
}

/// The era an upstream was found to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Era {
    Legacy,
    Modern,
}

/// The client info the adapter gives for itself where a request it makes needs one (its own
/// `server/discover`, or an `initialize` for a 2026-07-28 client that sent none).
fn own_client_info() -> serde_json::Value {
    serde_json::json!({"name": "calltape", "version": env!("CARGO_PKG_VERSION")})
}

/// Whether a frame may be of the 2026-07-28 era: it holds the prefix of the `_meta` keys every request of
/// that era carries, which a legacy frame almost never does. The searcher is built once.
fn may_be_modern(frame: &[u8]) -> bool {
    static MARK: LazyLock<Finder<'static>> =
        LazyLock::new(|| Finder::new(crate::vocab::META_PREFIX.as_bytes()));
    MARK.find(frame).is_some()
}

/// Whether a frame may be a handshake: it holds the word `initialize`.
fn may_be_handshake(frame: &[u8]) -> bool {
    static WORD: LazyLock<Finder<'static>> =
        LazyLock::new(|| Finder::new(crate::vocab::INITIALIZE.as_bytes()));
    WORD.find(frame).is_some()
}

/// What a translator wants done: a frame sent upstream, or an event handed to the client side.
#[derive(Debug)]
pub(crate) enum Out {
    Upstream(Frame),
    Client(UpstreamEvent),
}

/// One link's translation, as a state machine with no I/O: the pump feeds it every frame from the client
/// side and every event from the upstream, and carries out what it pushes onto `out`, in order.
pub(crate) trait Translate: Send + 'static {
    /// A frame from the client side (either era).
    fn on_client(&mut self, frame: Frame, out: &mut Vec<Out>);
    /// An event from the upstream.
    fn on_upstream(&mut self, event: UpstreamEvent, out: &mut Vec<Out>);
    /// The upstream's link ended for good (a session of its own that closed): every request still
    /// waiting for it is answered with an error that gives `reason`.
    fn abandon(&mut self, _reason: &str, _out: &mut Vec<Out>) {}
    /// Whether the client's request with this id is in flight here.
    fn holds(&self, _id: &serde_json::Value) -> bool {
        false
    }
    /// Whether nothing is in flight: no request of the client's or of its own waits for an answer, and
    /// no listen stream is open. An idle session opened for other capabilities may be closed.
    fn idle(&self) -> bool {
        true
    }
}

/// A failure event (undelivered, not MCP, session expired) about `frame` instead of the frame it named:
/// a translator reports the client's frame, not the one it sent upstream in its place.
fn with_frame(event: UpstreamEvent, frame: Frame) -> UpstreamEvent {
    match event {
        UpstreamEvent::Undelivered {
            maybe_delivered,
            reason,
            ..
        } => UpstreamEvent::Undelivered {
            frame,
            maybe_delivered,
            reason,
        },
        UpstreamEvent::ProtocolError {
            status, message, ..
        } => UpstreamEvent::ProtocolError {
            frame,
            status,
            message,
        },
        UpstreamEvent::SessionExpired { .. } => UpstreamEvent::SessionExpired { frame },
        other => other,
    }
}

/// An [`Upstream`] that speaks to clients of both eras, whatever era the wrapped upstream speaks.
///
/// ```
/// use calltape_stdio_bridge::{ChildUpstream, EraUpstream, Protocol, Upstream};
///
/// let upstream = EraUpstream::new(ChildUpstream::new(["python", "server.py"])?, Protocol::Auto);
/// assert_eq!(upstream.describe(), "child `python server.py`");
/// # Ok::<(), calltape_stdio_bridge::Error>(())
/// ```
#[derive(Clone)]
pub struct EraUpstream {
    inner: Arc<dyn Upstream>,
    protocol: Protocol,
    said: pump::Said,
}

impl EraUpstream {
    /// Wraps `inner`, whose era is `protocol` (or found on each connection with [`Protocol::Auto`]).
    pub fn new(inner: impl Upstream, protocol: Protocol) -> Self {
        Self::from_arc(Arc::new(inner), protocol)
    }

    /// Wraps an upstream that is already shared.
    pub fn from_arc(inner: Arc<dyn Upstream>, protocol: Protocol) -> Self {
        Self {
            inner,
            protocol,
            said: pump::Said::default(),
        }
    }
}

impl Upstream for EraUpstream {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn connect(&self) -> BoxFuture<'_, Result<Link, Error>> {
        Box::pin(async move {
            let link = self.inner.connect().await?;
            let context = pump::Context {
                protocol: self.protocol,
                shown: self.inner.describe(),
                said: self.said.clone(),
                upstream: Some(Arc::clone(&self.inner)),
            };
            Ok(pump::start(link, context))
        })
    }
}

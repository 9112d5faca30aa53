//! Streamable HTTP: the client protocol, written once over the [`Transport`] seam, and the upstreams
//! that carry it.
//!
//! - `protocol` ([`Core`]): POST per message, JSON and SSE answers, the session id and protocol version
//!   headers, the GET stream, session expiry, the 2026-07-28 mirrored headers, the DELETE that ends a
//!   session. It reads frames with the routing peeks of [`jsonrpc`](crate::jsonrpc).
//! - `transport`: what carries one request. reqwest over TCP carries it for `HttpUpstream` (`tcp`),
//!   hyper over a Unix socket for `UnixUpstream`, and the challenged connections of a shared server
//!   for `shared::SharedUpstream`.
//!
//! The protocol is built with `http` or `serve`; the upstreams over TCP and Unix sockets, their extra
//! headers and TLS, with `http` only.

/// `Upstream` for a public upstream that is a `core: Arc<Core<_>>` (`HttpUpstream`, `UnixUpstream`):
/// the protocol does the work, and another session of the same endpoint shares its transport.
#[cfg(feature = "http")]
macro_rules! upstream_over_core {
    ($upstream:ty) => {
        impl $crate::upstream::Upstream for $upstream {
            fn describe(&self) -> String {
                self.core.describe()
            }

            fn connect(
                &self,
            ) -> $crate::upstream::BoxFuture<'_, Result<$crate::upstream::Link, $crate::Error>>
            {
                self.core.connect()
            }

            /// A link with a session of its own on the same endpoint, with the same headers.
            #[cfg(feature = "era")]
            fn connect_apart(
                &self,
            ) -> Option<
                $crate::upstream::BoxFuture<'_, Result<$crate::upstream::Link, $crate::Error>>,
            > {
                Some(self.core.apart().connect())
            }
        }
    };
}
#[cfg(feature = "http")]
pub(crate) use upstream_over_core;

/// The HTTP path of the MCP endpoint when none is given.
#[cfg(feature = "http")]
pub const DEFAULT_HTTP_PATH: &str = "/mcp";

/// An error and its causes on one line (an HTTP client's own message alone says little), each cause
/// once.
#[cfg(feature = "http")]
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(feature = "http")]
mod auth;
#[cfg(feature = "http")]
mod headers;
mod protocol;
#[cfg(feature = "http")]
mod tcp;
mod transport;

#[cfg(feature = "http")]
pub use self::{
    auth::{AuthChallenge, Authorizer, MAX_AUTH_RETRIES},
    headers::ExtraHeaders,
    tcp::{HttpUpstream, tls_client_config},
};
pub(crate) use self::{
    protocol::Core,
    transport::{BodyStream, HttpRequest, HttpResponse, SendError, Transport},
};

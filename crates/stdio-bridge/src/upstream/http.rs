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

#[cfg(feature = "http")]
mod headers;
mod protocol;
#[cfg(feature = "http")]
mod tcp;
mod transport;

#[cfg(feature = "http")]
pub use self::{
    headers::ExtraHeaders,
    tcp::{HttpUpstream, tls_client_config},
};
pub(crate) use self::{
    protocol::Core,
    transport::{BodyStream, HttpRequest, HttpResponse, SendError, Transport},
};

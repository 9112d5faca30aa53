//! The seam between the Streamable HTTP protocol logic and the thing that carries HTTP requests
//! (reqwest over TCP, hyper over a Unix socket, a shared server's challenged connections).

use std::pin::Pin;

use bytes::Bytes;
use futures_core::Stream;
use http::{HeaderMap, Method, StatusCode};

use crate::upstream::BoxFuture;

/// A response body, chunk by chunk; an `Err` means the connection broke while it streamed.
pub(crate) type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, String>> + Send>>;

/// The next chunk of a body; `None` at its end.
pub(crate) async fn next_chunk(body: &mut BodyStream) -> Option<Result<Bytes, String>> {
    std::future::poll_fn(|cx| body.as_mut().poll_next(cx)).await
}

/// One HTTP request to the MCP endpoint.
#[derive(Debug)]
pub(crate) struct HttpRequest {
    pub(crate) method: Method,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Option<Bytes>,
}

/// The answer: status and headers at once, the body as it streams.
pub(crate) struct HttpResponse {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: BodyStream,
}

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SendError {
    /// Nothing reached the server: the connection could not be made (refused, no such host, TLS failed).
    NotSent(String),
    /// The connection broke after the request may have been written.
    MaybeSent(String),
}

impl SendError {
    /// Why, for logs and events.
    pub(crate) fn reason(&self) -> &str {
        match self {
            SendError::NotSent(reason) | SendError::MaybeSent(reason) => reason,
        }
    }
}

/// Carries HTTP requests to one MCP endpoint. Redirects are never followed.
pub(crate) trait Transport: Send + Sync + 'static {
    /// Sends one request and returns once the status and headers are in.
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, SendError>>;
    /// Checks that something accepts connections at the endpoint, sending nothing.
    fn probe(&self) -> BoxFuture<'_, Result<(), String>>;
    /// The endpoint, for logs and errors; never holds a secret.
    fn describe(&self) -> String;
}

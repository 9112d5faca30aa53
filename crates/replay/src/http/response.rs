//! The proxy's own responses: their type, and a whole body made of bytes. Every module that answers
//! a request builds on these; they import nothing of the modules that use them.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use super::ProxyBody;

/// A response the proxy sends.
pub(crate) type HttpResponse = hyper::Response<ProxyBody>;

/// A body of `bytes`, sent whole.
pub(crate) fn full(bytes: impl Into<Bytes>) -> ProxyBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

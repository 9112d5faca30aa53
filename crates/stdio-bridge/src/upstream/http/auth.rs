//! Sign-in for an HTTP upstream: the seam an OAuth client plugs into ([`Authorizer`]), and the transport
//! that asks it for each request's `Authorization` header and signs in again when the endpoint refuses
//! one.
//!
//! The bridge never stores a credential: the authorizer keeps its tokens where it wants (calltape-oauth
//! keeps them in its owner-only store), and the header it gives is sent and forgotten.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};

use super::{HttpRequest, HttpResponse, SendError, Transport};
use crate::upstream::BoxFuture;

/// How many times one request is sent again after the authorizer signed in anew, before the
/// endpoint's refusal is given to the caller.
pub const MAX_AUTH_RETRIES: u32 = 3;

/// How much of a refusal's body is kept to explain it.
const REFUSAL_BODY_LIMIT: usize = 16 << 10;

/// What an endpoint answered when it refused a request for its credentials: 401, or 403 with
/// `error="insufficient_scope"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    /// 401 or 403.
    pub status: u16,
    /// Every `WWW-Authenticate` value of the answer, in order (lossy UTF-8).
    pub www_authenticate: Vec<String>,
    /// The `Authorization` value the refused request carried, if any: the authorizer compares it with
    /// its current one to tell a stale token (another request already refreshed it) from a bad one.
    pub sent: Option<String>,
}

impl AuthChallenge {
    /// Whether this is a 403 asking for more scope (`error="insufficient_scope"`).
    pub fn is_insufficient_scope(&self) -> bool {
        self.status == StatusCode::FORBIDDEN.as_u16()
            && self
                .www_authenticate
                .iter()
                .any(|value| value.contains("insufficient_scope"))
    }
}

/// Gives an HTTP upstream the `Authorization` header of each request, and signs in (or refreshes, or
/// asks for more scope) when the endpoint refuses one.
///
/// [`HttpUpstream::with_authorizer`](crate::HttpUpstream::with_authorizer) takes one. Both methods may
/// take as long as a sign-in takes: the request waits, as requests wait for a restarting server.
/// An implementation shares one sign-in between the requests that wait for it.
pub trait Authorizer: Send + Sync + 'static {
    /// The `Authorization` value for the next request (`Bearer …`), or `None` to send none (no token
    /// yet: the endpoint's 401 starts the sign-in). Refreshing a token about to expire happens here.
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>, String>>;

    /// The endpoint refused a request. `Ok(true)`: new credentials are ready, send the request again;
    /// `Ok(false)`: give the refusal to the caller; `Err`: the sign-in failed, and why (shown to the
    /// client in the error answer and logged; never a secret).
    fn challenged(&self, challenge: AuthChallenge) -> BoxFuture<'_, Result<bool, String>>;

    /// What this authorizer signs in to, for logs (never a secret).
    fn describe(&self) -> String;
}

/// A transport whose requests carry the authorizer's `Authorization` header, sent again (at most
/// [`MAX_AUTH_RETRIES`] times) when the endpoint refuses them and the authorizer signed in anew.
/// With no authorizer, it is the transport itself.
pub(crate) struct Authorized<T> {
    inner: T,
    authorizer: Option<Arc<dyn Authorizer>>,
}

impl<T: Transport> Authorized<T> {
    pub(crate) fn new(inner: T, authorizer: Option<Arc<dyn Authorizer>>) -> Self {
        Self { inner, authorizer }
    }
}

impl<T: Transport> Transport for Authorized<T> {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, SendError>> {
        let Some(authorizer) = self.authorizer.clone() else {
            return self.inner.send(request);
        };
        Box::pin(async move {
            let mut retries = 0;
            loop {
                let mut attempt = HttpRequest {
                    method: request.method.clone(),
                    headers: request.headers.clone(),
                    body: request.body.clone(),
                };
                let sent = match authorizer.authorization().await {
                    Ok(Some(value)) => {
                        let header_value = HeaderValue::from_str(&value).map_err(|_| {
                            SendError::NotSent(
                                "the authorizer gave an Authorization value that cannot be sent"
                                    .to_owned(),
                            )
                        })?;
                        attempt.headers.insert(header::AUTHORIZATION, header_value);
                        Some(value)
                    }
                    Ok(None) => None,
                    Err(reason) => {
                        tracing::warn!(%reason, upstream = %authorizer.describe(), "sign-in failed");
                        None
                    }
                };
                let response = self.inner.send(attempt).await?;
                let challenge = AuthChallenge {
                    status: response.status.as_u16(),
                    www_authenticate: response
                        .headers
                        .get_all(header::WWW_AUTHENTICATE)
                        .iter()
                        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
                        .collect(),
                    sent,
                };
                let refused = response.status == StatusCode::UNAUTHORIZED
                    || challenge.is_insufficient_scope();
                if !refused {
                    return Ok(response);
                }
                if retries == MAX_AUTH_RETRIES {
                    tracing::warn!(
                        upstream = %authorizer.describe(),
                        status = %response.status,
                        "the upstream still refuses after {MAX_AUTH_RETRIES} sign-ins"
                    );
                    return Ok(response);
                }
                match authorizer.challenged(challenge).await {
                    Ok(true) => retries += 1,
                    Ok(false) => return Ok(response),
                    Err(reason) => {
                        tracing::warn!(%reason, upstream = %authorizer.describe(), "sign-in failed");
                        return Ok(explained(response, &reason).await);
                    }
                }
            }
        })
    }

    fn probe(&self) -> BoxFuture<'_, Result<(), String>> {
        self.inner.probe()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// The refusal with its body replaced by why the sign-in failed, which the protocol quotes in the
/// error answer it makes of it.
async fn explained(mut response: HttpResponse, reason: &str) -> HttpResponse {
    // Read what is left of the body so the connection can be reused; it is not shown.
    let mut read = 0;
    while let Some(Ok(chunk)) = super::transport::next_chunk(&mut response.body).await {
        read += chunk.len();
        if read > REFUSAL_BODY_LIMIT {
            break;
        }
    }
    response.headers.remove(header::CONTENT_TYPE);
    response.headers.remove(header::CONTENT_LENGTH);
    let text = Bytes::from(format!("sign-in failed: {reason}"));
    response.body = Box::pin(futures::stream::once(async move { Ok(text) }));
    response
}

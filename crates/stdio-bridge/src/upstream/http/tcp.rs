//! The Streamable HTTP upstream over TCP (reqwest, rustls with the ring provider, no OpenSSL).

use std::{fmt, sync::Arc, time::Duration};

use bytes::Bytes;
use reqwest::{Url, redirect::Policy};

use super::{
    Authorizer, BodyStream, Core, ExtraHeaders, HttpRequest, HttpResponse, SendError, Transport,
    auth::Authorized, error_chain,
};
use crate::{Error, upstream::BoxFuture};

/// How long making a connection (TCP and TLS) may take before the upstream counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A Streamable HTTP MCP endpoint, such as `http://127.0.0.1:3000/mcp`.
///
/// Each client message is POSTed with `Accept: application/json, text/event-stream`; JSON and
/// Server-Sent Events answers are both understood. The `Mcp-Session-Id` from the initialize answer and
/// the negotiated `MCP-Protocol-Version` go with every later request (the GET stream and the DELETE that
/// ends the session included). A session the server forgot (404, or 400 saying the session id is
/// missing or invalid) is reported as [`UpstreamEvent::SessionExpired`](crate::UpstreamEvent). Redirects
/// are refused on every request, so credentials in [`ExtraHeaders`] never follow one. Requests of the
/// stateless 2026-07-28 revision (a protocol version in `params._meta`) get `MCP-Protocol-Version`,
/// `Mcp-Method` and `Mcp-Name` and no session handling. When the endpoint refuses a connection, a
/// POST's or the GET stream's, the link closes and the bridge connects again.
///
/// ```
/// use calltape_stdio_bridge::{ExtraHeaders, HttpUpstream, Upstream};
///
/// let mut headers = ExtraHeaders::new();
/// headers.push_line("Authorization: Bearer abc123")?;
/// let upstream = HttpUpstream::new("http://user:pw@127.0.0.1:3000/mcp?key=abc", headers)?;
/// assert_eq!(upstream.describe(), "http://127.0.0.1:3000/mcp");
/// # Ok::<(), calltape_stdio_bridge::Error>(())
/// ```
#[derive(Clone)]
pub struct HttpUpstream {
    core: Arc<Core<Authorized<ReqwestTransport>>>,
}

impl HttpUpstream {
    /// An upstream at `url` (http or https) that sends `headers` with every request.
    ///
    /// Nothing is connected yet; [`Upstream::connect`](crate::Upstream::connect) does that.
    pub fn new(url: &str, headers: ExtraHeaders) -> Result<Self, Error> {
        Self::build(url, headers, None)
    }

    /// An upstream at `url` whose requests carry the `Authorization` header `authorizer` gives, and
    /// which asks it to sign in when the endpoint answers 401 (or 403 with `insufficient_scope`): the
    /// request waits for the sign-in and is sent again. `headers` go with every request too; an
    /// `Authorization` among them is replaced by the authorizer's.
    pub fn with_authorizer(
        url: &str,
        headers: ExtraHeaders,
        authorizer: Arc<dyn Authorizer>,
    ) -> Result<Self, Error> {
        Self::build(url, headers, Some(authorizer))
    }

    fn build(
        url: &str,
        headers: ExtraHeaders,
        authorizer: Option<Arc<dyn Authorizer>>,
    ) -> Result<Self, Error> {
        // The URL is not echoed: it may hold a password or a token.
        let url =
            Url::parse(url).map_err(|e| Error::config(format!("invalid upstream URL: {e}")))?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(Error::config(format!(
                "upstream URL scheme `{}` is not supported: use http:// or https://",
                url.scheme()
            )));
        }
        let client = reqwest::Client::builder()
            .redirect(Policy::none())
            .tls_backend_preconfigured(tls_client_config()?)
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| {
                Error::config(format!(
                    "cannot set up the HTTP client: {}",
                    error_chain(&e)
                ))
            })?;
        let transport = ReqwestTransport {
            shown: shown_url(&url),
            client,
            url,
        };
        Ok(Self {
            core: Arc::new(Core::new(
                Authorized::new(transport, authorizer),
                headers.map().clone(),
            )),
        })
    }
}

impl fmt::Debug for HttpUpstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpUpstream")
            .field("url", &self.core.describe())
            .finish_non_exhaustive()
    }
}

super::upstream_over_core!(HttpUpstream);

/// rustls with the ring provider and the operating system's certificate verifier, built here so the
/// crate never depends on a process-wide default provider.
/// The TLS set-up of calltape's HTTP clients: rustls with the *ring* provider, the platform's
/// certificate verifier, and HTTP/2 or HTTP/1.1 by ALPN. Give it to
/// `reqwest::ClientBuilder::tls_backend_preconfigured`: the workspace builds reqwest without a
/// provider of its own.
pub fn tls_client_config() -> Result<rustls::ClientConfig, Error> {
    use rustls_platform_verifier::BuilderVerifierExt as _;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::config(format!("cannot set up TLS: {e}")))?
        .with_platform_verifier()
        .map_err(|e| Error::config(format!("cannot load the system's TLS certificates: {e}")))?
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The URL without user info, query or fragment, which may hold secrets.
fn shown_url(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// HTTP over TCP with reqwest.
struct ReqwestTransport {
    client: reqwest::Client,
    url: Url,
    shown: String,
}

impl Transport for ReqwestTransport {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, SendError>> {
        Box::pin(async move {
            let mut builder = self
                .client
                .request(request.method, self.url.clone())
                .headers(request.headers);
            if let Some(body) = request.body {
                builder = builder.body(body);
            }
            match builder.send().await {
                Ok(response) => Ok(HttpResponse {
                    status: response.status(),
                    headers: response.headers().clone(),
                    body: body_stream(response),
                }),
                Err(err) => {
                    let err = err.without_url();
                    if err.is_connect() {
                        Err(SendError::NotSent(error_chain(&err)))
                    } else {
                        Err(SendError::MaybeSent(error_chain(&err)))
                    }
                }
            }
        })
    }

    fn probe(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            if proxy_configured() {
                // The endpoint is reached through a proxy; a direct probe would say nothing.
                return Ok(());
            }
            let host = self.url.host_str().unwrap_or("localhost");
            let port = self.url.port_or_known_default().unwrap_or(80);
            let connect = tokio::net::TcpStream::connect((host.trim_matches(['[', ']']), port));
            match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(err)) => Err(err.to_string()),
                Err(_) => Err(format!(
                    "no connection within {} s",
                    CONNECT_TIMEOUT.as_secs()
                )),
            }
        })
    }

    fn describe(&self) -> String {
        self.shown.clone()
    }
}

fn proxy_configured() -> bool {
    [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

fn body_stream(response: reqwest::Response) -> BodyStream {
    Box::pin(futures::stream::unfold(
        Some(response),
        |state| async move {
            let mut response = state?;
            match response.chunk().await {
                Ok(Some(chunk)) => Some((Ok::<Bytes, String>(chunk), Some(response))),
                Ok(None) => None,
                Err(err) => Some((Err(error_chain(&err.without_url())), None)),
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_secrets() {
        let cases = [
            ("http://127.0.0.1:3000/mcp", "http://127.0.0.1:3000/mcp"),
            (
                "https://u:p@example.com/mcp?token=x#frag",
                "https://example.com/mcp",
            ),
            ("http://[::1]:8080/", "http://[::1]:8080/"),
        ];
        for (input, expected) in cases {
            assert_eq!(shown_url(&Url::parse(input).unwrap()), expected);
        }
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_them() {
        let err = HttpUpstream::new("not a url secret", ExtraHeaders::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid upstream URL: relative URL without a base"
        );
        let err = HttpUpstream::new("ftp://host/x", ExtraHeaders::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "upstream URL scheme `ftp` is not supported: use http:// or https://"
        );
    }
}

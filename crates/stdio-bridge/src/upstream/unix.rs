//! The Streamable HTTP upstream over a Unix socket (hyper and hyperlocal), with the same protocol logic as
//! the TCP one. Unix only.

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
};

use bytes::Bytes;
use http::{HeaderValue, Request, header::HOST, uri::PathAndQuery};
use http_body_util::{BodyExt as _, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use hyperlocal::UnixConnector;

use super::http::{
    BodyStream, Core, DEFAULT_HTTP_PATH, ExtraHeaders, HttpRequest, HttpResponse, SendError,
    Transport, error_chain,
};
use crate::{Error, upstream::BoxFuture};

/// The longest socket path a Unix socket address holds (108 bytes on Linux, with the final NUL).
const MAX_SOCKET_PATH: usize = 107;

/// A Streamable HTTP MCP endpoint served on a Unix socket, with the same behaviour as
/// [`HttpUpstream`](crate::HttpUpstream). Unix only.
///
/// Requests carry `Host: localhost`: servers that guard against DNS rebinding refuse the hex-encoded
/// socket path an HTTP-over-Unix-socket client would otherwise put there.
///
/// ```
/// use calltape_stdio_bridge::{DEFAULT_HTTP_PATH, ExtraHeaders, Upstream, UnixUpstream};
///
/// let upstream = UnixUpstream::new("/run/user/1000/notes.sock", DEFAULT_HTTP_PATH, ExtraHeaders::new())?;
/// assert_eq!(upstream.describe(), "unix:/run/user/1000/notes.sock /mcp");
/// # Ok::<(), calltape_stdio_bridge::Error>(())
/// ```
#[derive(Clone)]
pub struct UnixUpstream {
    core: Arc<Core<UnixTransport>>,
}

impl UnixUpstream {
    /// An upstream at `http_path` (such as [`DEFAULT_HTTP_PATH`]) on the socket `socket`, sending
    /// `headers` with every request.
    pub fn new(
        socket: impl Into<PathBuf>,
        http_path: &str,
        headers: ExtraHeaders,
    ) -> Result<Self, Error> {
        let socket = socket.into();
        let length = socket.as_os_str().len();
        if length > MAX_SOCKET_PATH {
            return Err(Error::config(format!(
                "socket path {} is {length} bytes, over the {MAX_SOCKET_PATH}-byte limit of a Unix socket address; use a shorter path",
                socket.display()
            )));
        }
        if !http_path.starts_with('/') || http_path.parse::<PathAndQuery>().is_err() {
            return Err(Error::config(format!(
                "HTTP path `{}` is not valid: write an absolute path such as {DEFAULT_HTTP_PATH}",
                http_path.escape_debug()
            )));
        }
        let uri: http::Uri = hyperlocal::Uri::new(&socket, http_path).into();
        let client = Client::builder(TokioExecutor::new()).build(UnixConnector);
        let transport = UnixTransport {
            // The query is left out of logs: it may carry a token.
            shown: format!(
                "unix:{} {}",
                socket.display(),
                http_path.split('?').next().unwrap_or(http_path)
            ),
            client,
            socket,
            uri,
        };
        Ok(Self {
            core: Arc::new(Core::new(transport, headers.map().clone())),
        })
    }

    /// The socket's path.
    pub fn socket(&self) -> &Path {
        &self.core.transport().socket
    }
}

impl fmt::Debug for UnixUpstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixUpstream")
            .field("endpoint", &self.core.describe())
            .finish_non_exhaustive()
    }
}

super::http::upstream_over_core!(UnixUpstream);

/// HTTP/1.1 over a Unix socket with hyper's pooled client.
pub(crate) struct UnixTransport {
    client: Client<UnixConnector, Full<Bytes>>,
    socket: PathBuf,
    uri: http::Uri,
    shown: String,
}

impl Transport for UnixTransport {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, SendError>> {
        Box::pin(async move {
            let mut builder = Request::builder()
                .method(request.method)
                .uri(self.uri.clone());
            if let Some(headers) = builder.headers_mut() {
                *headers = request.headers;
                if !headers.contains_key(HOST) {
                    headers.insert(HOST, HeaderValue::from_static("localhost"));
                }
            }
            let body = Full::new(request.body.unwrap_or_default());
            let request = builder
                .body(body)
                .map_err(|e| SendError::NotSent(format!("cannot build the request: {e}")))?;
            match self.client.request(request).await {
                Ok(response) => {
                    let (parts, body) = response.into_parts();
                    Ok(HttpResponse {
                        status: parts.status,
                        headers: parts.headers,
                        body: body_stream(body),
                    })
                }
                Err(err) => {
                    let text = error_chain(&err);
                    if err.is_connect() {
                        Err(SendError::NotSent(text))
                    } else {
                        Err(SendError::MaybeSent(text))
                    }
                }
            }
        })
    }

    fn probe(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            tokio::net::UnixStream::connect(&self.socket)
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
    }

    fn describe(&self) -> String {
        self.shown.clone()
    }
}

fn body_stream(body: hyper::body::Incoming) -> BodyStream {
    Box::pin(futures::stream::unfold(Some(body), |state| async move {
        let mut body = state?;
        loop {
            match body.frame().await {
                None => return None,
                Some(Err(err)) => return Some((Err(error_chain(&err)), None)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data()
                        && !data.is_empty()
                    {
                        return Some((Ok(data), Some(body)));
                    }
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::Upstream as _;

    #[test]
    fn bad_paths_are_refused() {
        let long = format!("/tmp/{}.sock", "x".repeat(120));
        let err = UnixUpstream::new(&long, "/mcp", ExtraHeaders::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "socket path {long} is 130 bytes, over the 107-byte limit of a Unix socket address; use a shorter path"
            )
        );
        let err = UnixUpstream::new("/tmp/a.sock", "mcp", ExtraHeaders::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "HTTP path `mcp` is not valid: write an absolute path such as /mcp"
        );
        let ok = UnixUpstream::new("/tmp/a.sock", "/api/mcp?x=1", ExtraHeaders::new()).unwrap();
        assert_eq!(ok.describe(), "unix:/tmp/a.sock /api/mcp");
        assert_eq!(ok.socket(), Path::new("/tmp/a.sock"));
    }
}

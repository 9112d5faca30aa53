//! A small HTTP/1.1 client for a shared server's endpoint (connect, challenge, send), and the
//! [`ChallengedTransport`] that carries the Streamable HTTP client protocol of
//! [`upstream::http`](crate::upstream::http) over it.

use std::{
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use futures_core::Stream;
use http::{Request, Response, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::{
    body::{Body as _, Incoming},
    client::conn::http1::SendRequest,
};
use hyper_util::rt::TokioIo;
use tokio::time::Instant;

use super::{
    identity::{IDENTITY_PATH, Nonce, RETIRE_PATH, ServerKeys},
    launch::Attached,
};
use crate::serve::{Endpoint, Transport};
use crate::upstream::{
    BoxFuture,
    http::{BodyStream, HttpRequest, HttpResponse, SendError},
};

/// The longest answer to a challenge that is read; a longer one, or one without a length, is refused
/// unread, so a squatter cannot fill a session's memory.
pub(crate) const MAX_PROOF_ANSWER: u64 = 1024;
/// How long a challenge may take.
pub(crate) const CHALLENGE_TIMEOUT: Duration = Duration::from_secs(5);

/// One HTTP/1.1 connection to an endpoint.
pub(crate) struct Conn {
    sender: SendRequest<Full<Bytes>>,
    host: &'static str,
    host_port: Option<u16>,
}

impl Conn {
    /// Opens a connection; fails when nothing listens.
    pub(crate) async fn open(endpoint: &Endpoint) -> std::io::Result<Self> {
        macro_rules! handshake {
            ($stream:expr) => {{
                let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new($stream))
                    .await
                    .map_err(std::io::Error::other)?;
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::trace!("shared server connection ended: {e}");
                    }
                });
                sender
            }};
        }
        match endpoint {
            Endpoint::Http(addr) => {
                let stream = tokio::net::TcpStream::connect(addr).await?;
                let _ = stream.set_nodelay(true);
                Ok(Self {
                    sender: handshake!(stream),
                    host: "127.0.0.1",
                    host_port: Some(addr.port()),
                })
            }
            #[cfg(unix)]
            Endpoint::Unix(path) => {
                let stream = tokio::net::UnixStream::connect(path).await?;
                Ok(Self {
                    sender: handshake!(stream),
                    host: "localhost",
                    host_port: None,
                })
            }
            #[cfg(not(unix))]
            Endpoint::Unix(_) => Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "unix sockets are not available on windows; use the http transport",
            )),
        }
    }

    /// The value of the `Host` header for this endpoint.
    pub(crate) fn host(&self) -> String {
        match self.host_port {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.to_owned(),
        }
    }

    /// Whether the connection can take another request.
    pub(crate) fn is_usable(&self) -> bool {
        !self.sender.is_closed()
    }

    /// Sends one request (the `Host` header is added).
    pub(crate) async fn send(
        &mut self,
        mut req: Request<Full<Bytes>>,
    ) -> hyper::Result<Response<Incoming>> {
        if let Ok(host) = http::HeaderValue::from_str(&self.host()) {
            req.headers_mut().insert(header::HOST, host);
        }
        self.sender.ready().await?;
        self.sender.send_request(req).await
    }

    /// Challenges the process at the other end to prove it holds the secret `keys` derive from, for
    /// `endpoint` and a fresh nonce. Nothing but the nonce is sent. `Err` says why it was refused.
    pub(crate) async fn challenge(
        &mut self,
        endpoint: &Endpoint,
        keys: &ServerKeys,
    ) -> Result<(), String> {
        match tokio::time::timeout(CHALLENGE_TIMEOUT, self.challenge_inner(endpoint, keys)).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "no answer within {} s",
                CHALLENGE_TIMEOUT.as_secs()
            )),
        }
    }

    async fn challenge_inner(
        &mut self,
        endpoint: &Endpoint,
        keys: &ServerKeys,
    ) -> Result<(), String> {
        let nonce = Nonce::generate().map_err(|e| e.to_string())?;
        let body = serde_json::json!({"nonce": nonce.to_hex()}).to_string();
        let req = Request::post(IDENTITY_PATH)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let res = self
            .send(req)
            .await
            .map_err(|e| format!("the challenge failed: {e}"))?;
        if res.status() != StatusCode::OK {
            return Err(format!(
                "it answered the challenge with status {}",
                res.status().as_u16()
            ));
        }
        let length = res
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        match length {
            None => return Err("its answer does not state its length".into()),
            Some(n) if n > MAX_PROOF_ANSWER => {
                return Err(format!("its answer is {n} bytes, over 1 KiB"));
            }
            Some(_) => {}
        }
        let bytes = Limited::new(res.into_body(), MAX_PROOF_ANSWER as usize)
            .collect()
            .await
            .map_err(|_| "its answer could not be read".to_owned())?
            .to_bytes();
        #[derive(serde::Deserialize)]
        struct Answer {
            proof: String,
        }
        let answer: Answer =
            serde_json::from_slice(&bytes).map_err(|_| "its answer is not a proof".to_owned())?;
        if keys.verify(&endpoint.to_string(), &nonce, &answer.proof) {
            Ok(())
        } else {
            Err("its proof does not match the record's secret, this endpoint and this nonce".into())
        }
    }
}

impl Conn {
    /// Tells a server that just proved itself on this connection that it is replaced; `Err` when it
    /// did not say it stepped aside.
    pub(crate) async fn retire(&mut self, keys: &ServerKeys) -> Result<(), String> {
        let req = Request::post(RETIRE_PATH)
            .header(header::AUTHORIZATION, format!("Bearer {}", keys.token()))
            .body(Full::new(Bytes::new()))
            .map_err(|e| e.to_string())?;
        let res = self
            .send(req)
            .await
            .map_err(|e| format!("the request failed: {e}"))?;
        if res.status() == StatusCode::OK {
            Ok(())
        } else {
            Err(format!("it answered with status {}", res.status().as_u16()))
        }
    }
}

/// How long a connection to the socket is kept for another request.
const POOL_IDLE: Duration = Duration::from_secs(5);

/// Challenged connections, ready for another request, and since when.
type Pool = Arc<Mutex<Vec<(Conn, Instant)>>>;

/// Carries the Streamable HTTP client's requests to an attached shared server, with its bearer token,
/// only on connections whose other end has just proved its identity: over loopback HTTP each request
/// goes on a fresh connection challenged first, so a process that takes the port after the server
/// stops gets nothing; over the owner-only socket each connection is challenged once and then reused.
pub(crate) struct ChallengedTransport {
    attached: Attached,
    path: Uri,
    pool: Pool,
}

impl ChallengedTransport {
    /// The transport to `attached`; `Err` says why its record's MCP path is not a request target.
    pub(crate) fn new(attached: Attached) -> Result<Self, String> {
        let path = attached.path.parse::<Uri>().map_err(|e| {
            format!(
                "the shared server's record names the MCP path {:?}, which is not a request path: {e}",
                attached.path
            )
        })?;
        Ok(Self {
            attached,
            path,
            pool: Pool::default(),
        })
    }

    fn reusable(&self) -> bool {
        self.attached.endpoint.transport() == Transport::Unix
    }

    /// A connection whose other end has proved its identity; `Err` when nothing answered, or
    /// something answered that did not prove itself (it was sent nothing but the challenge).
    async fn conn(&self) -> Result<Conn, String> {
        if self.reusable() {
            let mut pool = lock(&self.pool);
            while let Some((conn, since)) = pool.pop() {
                // The server closes a connection that sends no request for 10 s: one idle half that
                // long is not worth the race with its closing.
                if conn.is_usable() && since.elapsed() < POOL_IDLE {
                    return Ok(conn);
                }
            }
        }
        let endpoint = &self.attached.endpoint;
        let mut conn = Conn::open(endpoint)
            .await
            .map_err(|e| format!("cannot connect to {endpoint}: {e}"))?;
        match conn.challenge(endpoint, &self.attached.keys).await {
            Ok(()) => Ok(conn),
            Err(reason) => {
                tracing::warn!(
                    "the process at {endpoint} did not prove it is the shared server ({reason}); it was not sent the token"
                );
                Err(format!(
                    "the process at {endpoint} did not prove it is the shared server: {reason}"
                ))
            }
        }
    }

    fn request(&self, request: HttpRequest) -> Result<Request<Full<Bytes>>, String> {
        let mut builder = Request::builder()
            .method(request.method)
            .uri(self.path.clone())
            .header(
                header::AUTHORIZATION,
                format!("Bearer {}", self.attached.keys.token()),
            );
        if let Some(headers) = builder.headers_mut() {
            headers.extend(request.headers);
        }
        builder
            .body(Full::new(request.body.unwrap_or_default()))
            .map_err(|e| format!("cannot build a request to the shared server: {e}"))
    }
}

impl crate::upstream::http::Transport for ChallengedTransport {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, SendError>> {
        Box::pin(async move {
            let request = self.request(request).map_err(SendError::NotSent)?;
            let mut conn = self.conn().await.map_err(SendError::NotSent)?;
            let response = conn.send(request).await.map_err(|e| {
                SendError::MaybeSent(format!("the shared server dropped the connection: {e}"))
            })?;
            let (parts, body) = response.into_parts();
            let body: BodyStream = Box::pin(PooledBody {
                body,
                conn: Some(conn),
                pool: self.reusable().then(|| Arc::clone(&self.pool)),
            });
            Ok(HttpResponse {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        })
    }

    /// The server proved itself when it was attached, and each connection proves it again.
    fn probe(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    fn describe(&self) -> String {
        format!("the shared server at {}", self.attached.endpoint)
    }
}

/// An answer's body; its connection goes back to the pool (over the socket) once the body is read
/// to its end, and is closed otherwise.
struct PooledBody {
    body: Incoming,
    conn: Option<Conn>,
    pool: Option<Pool>,
}

impl PooledBody {
    fn give_back(&mut self) {
        if let (Some(conn), Some(pool)) = (self.conn.take(), &self.pool)
            && conn.is_usable()
        {
            lock(pool).push((conn, Instant::now()));
        }
    }
}

impl Stream for PooledBody {
    type Item = Result<Bytes, String>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    this.give_back();
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(e))) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(e.to_string())));
                }
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
            }
        }
    }
}

impl Drop for PooledBody {
    fn drop(&mut self) {
        // An answer with no body (202) is whole without being read.
        if self.body.is_end_stream() {
            self.give_back();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::Secret;

    // The clock is paused and moves on whenever nothing is left to do: the 5 s pass at once.
    #[tokio::test(start_paused = true)]
    async fn silence_is_refused() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = Endpoint::Http(listener.local_addr().unwrap());
        let keys = Secret::generate().unwrap().keys();
        let mut conn = Conn::open(&endpoint).await.unwrap();
        let refused = conn.challenge(&endpoint, &keys).await.unwrap_err();
        assert_eq!(refused, "no answer within 5 s");
        drop(listener);
    }
}

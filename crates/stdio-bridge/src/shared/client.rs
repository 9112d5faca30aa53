//! A small HTTP/1.1 client for a shared server's endpoint: connect, challenge, send.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::{body::Incoming, client::conn::http1::SendRequest};
use hyper_util::rt::TokioIo;

use super::identity::{IDENTITY_PATH, Nonce, RETIRE_PATH, ServerKeys};
use crate::serve::Endpoint;

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
            Endpoint::Unix(path) => {
                let stream = tokio::net::UnixStream::connect(path).await?;
                Ok(Self {
                    sender: handshake!(stream),
                    host: "localhost",
                    host_port: None,
                })
            }
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

/// Splits Server-Sent Events into their data, for the answers of a shared server.
#[derive(Default)]
pub(crate) struct SseSplitter {
    buf: Vec<u8>,
}

impl SseSplitter {
    /// Feeds bytes; returns the data of each event they complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Bytes> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            let text = &self.buf;
            let end = text
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, 2))
                .or_else(|| {
                    text.windows(4)
                        .position(|w| w == b"\r\n\r\n")
                        .map(|i| (i, 4))
                });
            let Some((at, sep)) = end else { break };
            let event: Vec<u8> = self.buf.drain(..at + sep).collect();
            let mut data = Vec::new();
            for line in event.split(|b| *b == b'\n') {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if let Some(rest) = line.strip_prefix(b"data:") {
                    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
                    if !data.is_empty() {
                        data.push(b'\n');
                    }
                    data.extend_from_slice(rest);
                }
            }
            if !data.is_empty() {
                out.push(Bytes::from(data));
            }
        }
        out
    }
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

    #[test]
    fn splits_events() {
        let mut s = SseSplitter::default();
        assert!(s.feed(b"event: message\ndata: {\"a\"").is_empty());
        let out = s.feed(b":1}\n\n: comment\n\ndata: 1\ndata: 2\r\n\r\n");
        assert_eq!(out, vec![Bytes::from("{\"a\":1}"), Bytes::from("1\n2")]);
    }
}

//! The end of a browser sign-in: the loopback listener the authorization server redirects to, and
//! the opener that shows the user the sign-in page.
//!
//! The listener binds `127.0.0.1` (on the port the client registered, else any free one), answers
//! only `GET /callback`, runs the loopback guard on every request (a page in the browser cannot
//! reach it from another origin or by DNS rebinding), and takes exactly one redirect: the first
//! whose `state` is the sign-in's. Then it closes.

use std::{collections::HashMap, net::SocketAddr, process::Stdio, time::Duration};

use calltape_stdio_bridge::guard::LoopbackGuard;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use reqwest::Url;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
};

use crate::Error;

/// The path of the redirect URI.
pub(crate) const CALLBACK_PATH: &str = "/callback";
/// The most of a request's head that is read.
const HEAD_LIMIT: usize = 16 << 10;
/// How long one connection may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What the authorization server sent back.
#[derive(Debug)]
pub(crate) struct Redirect {
    /// `code`.
    pub(crate) code: String,
    /// `iss` (RFC 9207), when sent.
    pub(crate) iss: Option<String>,
}

/// The loopback listener of one sign-in.
pub(crate) struct Callback {
    listener: TcpListener,
    port: u16,
}

impl Callback {
    /// Binds `127.0.0.1:port` when `port` is given and free, else a free port.
    pub(crate) async fn bind(port: Option<u16>) -> Result<Self, Error> {
        // Loopback only, and every request it reads passes the bridge's `LoopbackGuard` first.
        let mut listener = None;
        if let Some(port) = port {
            listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
                .await
                .ok();
        }
        let listener = match listener {
            Some(listener) => listener,
            None => TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
                .await
                .map_err(|e| {
                    Error::sign_in(format!(
                        "cannot listen on 127.0.0.1 for the sign-in's redirect: {e}"
                    ))
                })?,
        };
        let port = listener
            .local_addr()
            .map_err(|e| Error::sign_in(format!("cannot read the redirect listener's port: {e}")))?
            .port();
        Ok(Self { listener, port })
    }

    /// The redirect URI: `http://127.0.0.1:PORT/callback`.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Waits (at most `timeout`) for the redirect that carries `state`, answers it, and closes.
    pub(crate) async fn wait(self, state: &str, timeout: Duration) -> Result<Redirect, Error> {
        let guard = LoopbackGuard::new(Some(self.port));
        let wait = async {
            loop {
                let Ok((stream, _)) = self.listener.accept().await else {
                    continue;
                };
                match tokio::time::timeout(REQUEST_TIMEOUT, serve(stream, &guard, state)).await {
                    Ok(Some(outcome)) => return outcome,
                    Ok(None) | Err(_) => continue,
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.map_err(|_| {
            Error::sign_in(format!(
                "no sign-in came back within {} s; run the command again to retry",
                timeout.as_secs()
            ))
        })?
    }
}

/// Answers one connection: `Some` when it was the sign-in's redirect (with its outcome), `None`
/// when it was refused or another request.
async fn serve(
    mut stream: TcpStream,
    guard: &LoopbackGuard,
    state: &str,
) -> Option<Result<Redirect, Error>> {
    let head = read_head(&mut stream).await?;
    let (target, headers) = parse_head(&head)?;
    if let Err(refusal) = guard.check(&headers) {
        respond(&mut stream, refusal.status(), refusal.message()).await;
        return None;
    }
    let url = Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    if url.path() != CALLBACK_PATH {
        respond(&mut stream, StatusCode::NOT_FOUND, "not found").await;
        return None;
    }
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    if query.get("state").map(String::as_str) != Some(state) {
        respond(
            &mut stream,
            StatusCode::BAD_REQUEST,
            "this is not the sign-in calltape is waiting for",
        )
        .await;
        return None;
    }
    if let Some(error) = query.get("error") {
        respond(
            &mut stream,
            StatusCode::OK,
            "The sign-in was refused. You can close this tab.",
        )
        .await;
        let description = query
            .get("error_description")
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Some(Err(Error::sign_in(format!(
            "the authorization server refused the sign-in ({error}{description})"
        ))));
    }
    let Some(code) = query.get("code").cloned() else {
        respond(
            &mut stream,
            StatusCode::BAD_REQUEST,
            "no code in the redirect",
        )
        .await;
        return Some(Err(Error::sign_in(
            "the authorization server's redirect carried no code",
        )));
    };
    respond(
        &mut stream,
        StatusCode::OK,
        "Signed in to calltape. You can close this tab.",
    )
    .await;
    Some(Ok(Redirect {
        code,
        iss: query.get("iss").cloned(),
    }))
}

async fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            return Some(head);
        }
        if head.len() > HEAD_LIMIT {
            return None;
        }
    }
}

/// The request target of a `GET` and its headers.
fn parse_head(head: &[u8]) -> Option<(String, HeaderMap)> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    if request_line.next()? != "GET" {
        return None;
    }
    let target = request_line.next()?.to_owned();
    if !target.starts_with('/') {
        return None;
    }
    let mut headers = HeaderMap::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':')?;
        headers.append(
            HeaderName::from_bytes(name.trim().as_bytes()).ok()?,
            HeaderValue::from_str(value.trim()).ok()?,
        );
    }
    Some((target, headers))
}

async fn respond(stream: &mut TcpStream, status: StatusCode, text: &str) {
    let response = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nconnection: close\r\n\r\n{text}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        text.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Opens `url` in the user's browser: `$BROWSER` (a program, given the URL as its one argument),
/// else the platform's opener. The child is not waited for; a failure to start it is only logged
/// (the URL is printed too).
pub(crate) fn open_browser(url: &str) {
    let program = std::env::var_os("BROWSER")
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                "open".into()
            } else if cfg!(windows) {
                "explorer".into()
            } else {
                "xdg-open".into()
            }
        });
    let started = tokio::process::Command::new(&program)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match started {
        // Reaped in the background, so no zombie stays behind.
        Ok(mut child) => {
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
        }
        Err(err) => tracing::warn!(
            program = %program.to_string_lossy(),
            %err,
            "cannot open the browser; open the sign-in URL printed above"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str, extra: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let request = format!("GET {target} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n{extra}\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn only_the_redirect_with_the_state_is_taken() {
        let callback = Callback::bind(None).await.unwrap();
        let port = callback.port;
        assert_eq!(
            callback.redirect_uri(),
            format!("http://127.0.0.1:{port}/callback")
        );
        let waiter =
            tokio::spawn(async move { callback.wait("s1", Duration::from_secs(60)).await });
        let other = get(port, "/other?state=s1&code=c", "").await;
        assert!(other.starts_with("HTTP/1.1 404"), "{other}");
        let wrong = get(port, "/callback?state=s2&code=c", "").await;
        assert!(wrong.starts_with("HTTP/1.1 400"), "{wrong}");
        let foreign = get(
            port,
            "/callback?state=s1&code=c",
            "origin: https://evil.example\r\n",
        )
        .await;
        assert!(foreign.starts_with("HTTP/1.1 403"), "{foreign}");
        let ok = get(
            port,
            "/callback?state=s1&code=the-code&iss=https%3A%2F%2Fas",
            "",
        )
        .await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        let redirect = waiter.await.unwrap().unwrap();
        assert_eq!(redirect.code, "the-code");
        assert_eq!(redirect.iss.as_deref(), Some("https://as"));
        // Closed after the one redirect.
        assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err());
    }

    #[tokio::test]
    async fn a_refused_sign_in_is_an_error() {
        let callback = Callback::bind(None).await.unwrap();
        let port = callback.port;
        let waiter = tokio::spawn(async move { callback.wait("s", Duration::from_secs(60)).await });
        get(port, "/callback?state=s&error=access_denied", "").await;
        let err = waiter.await.unwrap().unwrap_err();
        assert!(err.to_string().contains("access_denied"), "{err}");
    }
}

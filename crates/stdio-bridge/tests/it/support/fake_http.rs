//! A scriptable Streamable HTTP MCP server for tests, on loopback TCP or a Unix socket. It records every
//! request it receives and answers as a test's closure says, falling back to plain MCP behaviour.

use std::{
    collections::VecDeque,
    convert::Infallible,
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use futures::StreamExt as _;
use http::{HeaderMap, Method, Response, StatusCode};
use http_body_util::{BodyExt as _, StreamBody, combinators::BoxBody};
use hyper::{body::Frame, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::{
    net::{TcpListener, UnixListener},
    sync::Notify,
    task::{JoinHandle, JoinSet},
};

/// One request the server received.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    pub(super) method: Method,
    pub(super) path: String,
    pub(super) headers: HeaderMap,
    pub(super) body: String,
}

impl Seen {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    pub(super) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON-RPC method of a POST.
    pub(super) fn rpc(&self) -> String {
        self.json()["method"].as_str().unwrap_or("").to_owned()
    }
}

/// How the stream an answer is sent on ends.
#[derive(Debug, Clone)]
pub(super) enum End {
    /// The body ends normally.
    Close,
    /// The connection breaks after the chunks.
    Break,
    /// The stream stays open until the server stops.
    Hold,
}

/// An answer.
#[derive(Debug, Clone)]
pub(super) enum Reply {
    /// A status, headers and a whole body.
    Plain {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A `text/event-stream` body sent in these chunks.
    Sse {
        headers: Vec<(String, String)>,
        chunks: Vec<Bytes>,
        end: End,
    },
}

impl Reply {
    pub(super) fn status(status: u16, body: &str) -> Self {
        Reply::Plain {
            status,
            headers: vec![],
            body: body.to_owned(),
        }
    }

    pub(super) fn json(value: &Value) -> Self {
        Reply::Plain {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: value.to_string(),
        }
    }

    pub(super) fn sse(chunks: &[&str], end: End) -> Self {
        Reply::Sse {
            headers: vec![],
            chunks: chunks
                .iter()
                .map(|c| Bytes::copy_from_slice(c.as_bytes()))
                .collect(),
            end,
        }
    }
}

/// The server's memory, which closures may read and change.
#[derive(Debug)]
pub(super) struct State {
    /// Sessions issued so far; the current one is `session-<n>`.
    pub(super) sessions: u32,
    /// The live session, if any.
    pub(super) current: Option<String>,
    /// The version the initialize answer names.
    pub(super) version: String,
    /// Answer requests with an event stream rather than JSON.
    pub(super) sse: bool,
    /// What GET answers, in turn; 405 once this is empty.
    pub(super) gets: VecDeque<Reply>,
}

type Handler = dyn Fn(&Seen, &mut State) -> Option<Reply> + Send + Sync;

struct Shared {
    seen: Mutex<Vec<Seen>>,
    state: Mutex<State>,
    handler: Box<Handler>,
    arrived: Notify,
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// A running fake server; it stops when dropped.
pub(super) struct FakeServer {
    shared: Arc<Shared>,
    task: JoinHandle<()>,
    pub(super) addr: Option<SocketAddr>,
    pub(super) socket: Option<PathBuf>,
}

impl FakeServer {
    /// A server on a free loopback port that behaves as a plain MCP server except where `handler`
    /// returns an answer.
    pub(super) async fn tcp(
        handler: impl Fn(&Seen, &mut State) -> Option<Reply> + Send + Sync + 'static,
    ) -> Self {
        Self::tcp_on("127.0.0.1:0".parse().unwrap(), handler).await
    }

    /// The same on a given address (to come back on the port of a stopped server).
    pub(super) async fn tcp_on(
        addr: SocketAddr,
        handler: impl Fn(&Seen, &mut State) -> Option<Reply> + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut server = Self::start(Listener::Tcp(listener), Box::new(handler));
        server.addr = Some(addr);
        server
    }

    /// A server on a Unix socket at `path`.
    pub(super) fn unix(
        path: PathBuf,
        handler: impl Fn(&Seen, &mut State) -> Option<Reply> + Send + Sync + 'static,
    ) -> Self {
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        let mut server = Self::start(Listener::Unix(listener), Box::new(handler));
        server.socket = Some(path);
        server
    }

    fn start(listener: Listener, handler: Box<Handler>) -> Self {
        let shared = Arc::new(Shared {
            seen: Mutex::new(Vec::new()),
            state: Mutex::new(State {
                sessions: 0,
                current: None,
                version: "2025-06-18".to_owned(),
                sse: false,
                gets: VecDeque::new(),
            }),
            handler,
            arrived: Notify::new(),
        });
        let task = tokio::spawn(accept(listener, Arc::clone(&shared)));
        Self {
            shared,
            task,
            addr: None,
            socket: None,
        }
    }

    /// The MCP endpoint's URL (TCP servers).
    pub(super) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr.unwrap())
    }

    /// Every request received so far.
    pub(super) fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// Changes the server's state.
    pub(super) fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.shared.state.lock().unwrap())
    }

    /// Waits until `count` requests matched `pred`, and returns them.
    pub(super) async fn wait_for(&self, count: usize, pred: impl Fn(&Seen) -> bool) -> Vec<Seen> {
        let wait = async {
            loop {
                let notified = self.shared.arrived.notified();
                let found: Vec<Seen> = self.seen().into_iter().filter(|s| pred(s)).collect();
                if found.len() >= count {
                    return found;
                }
                notified.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(20), wait)
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the server did not receive the expected requests: {:#?}",
                    self.seen()
                )
            })
    }

    /// Stops listening and drops every open connection.
    pub(super) fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept(listener: Listener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        let shared = Arc::clone(&shared);
        let service = service_fn(move |request| {
            let shared = Arc::clone(&shared);
            async move { Ok::<_, Infallible>(serve(request, &shared).await) }
        });
        match &listener {
            Listener::Tcp(listener) => {
                let (stream, _) = listener.accept().await.unwrap();
                connections
                    .spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), service));
            }
            Listener::Unix(listener) => {
                let (stream, _) = listener.accept().await.unwrap();
                connections
                    .spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), service));
            }
        }
        while connections.try_join_next().is_some() {}
    }
}

type Body = BoxBody<Bytes, std::io::Error>;

async fn serve(request: hyper::Request<hyper::body::Incoming>, shared: &Shared) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let seen = Seen {
        method: parts.method,
        path: parts.uri.path().to_owned(),
        headers: parts.headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let reply = {
        let mut state = shared.state.lock().unwrap();
        (shared.handler)(&seen, &mut state).unwrap_or_else(|| standard(&seen, &mut state))
    };
    shared.seen.lock().unwrap().push(seen);
    shared.arrived.notify_waiters();
    respond(reply)
}

/// Plain MCP behaviour: sessions on initialize, 404 for an unknown session, 202 for notifications and
/// responses, an answer echoing the method for requests, 405 (or the scripted replies) for GET, 200 for
/// DELETE.
pub(super) fn standard(seen: &Seen, state: &mut State) -> Reply {
    match seen.method {
        Method::GET => state
            .gets
            .pop_front()
            .unwrap_or_else(|| Reply::status(405, "")),
        Method::DELETE => {
            if seen.header("mcp-session-id") == state.current.as_deref() {
                state.current = None;
            }
            Reply::status(200, "")
        }
        _ => {
            let message = seen.json();
            let method = message["method"].as_str().unwrap_or("");
            let stateless =
                message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].is_string();
            if method == "initialize" {
                state.sessions += 1;
                let id = format!("session-{}", state.sessions);
                state.current = Some(id.clone());
                let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "protocolVersion": state.version, "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "fake", "version": "1.0.0"}}});
                let mut reply = if state.sse {
                    Reply::sse(
                        &[&format!("event: message\ndata: {answer}\n\n")],
                        End::Close,
                    )
                } else {
                    Reply::json(&answer)
                };
                match &mut reply {
                    Reply::Plain { headers, .. } | Reply::Sse { headers, .. } => {
                        headers.push(("mcp-session-id".into(), id));
                    }
                }
                return reply;
            }
            if !stateless && seen.header("mcp-session-id") != state.current.as_deref() {
                return Reply::status(404, "Session not found");
            }
            if message.get("id").is_none() || message.get("method").is_none() {
                return Reply::status(202, "");
            }
            let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "method": method, "params": message["params"]}});
            if state.sse {
                Reply::sse(&[&format!("id: 1\ndata: {answer}\n\n")], End::Close)
            } else {
                Reply::json(&answer)
            }
        }
    }
}

fn respond(reply: Reply) -> Response<Body> {
    match reply {
        Reply::Plain {
            status,
            headers,
            body,
        } => {
            let mut response = Response::builder().status(StatusCode::from_u16(status).unwrap());
            for (name, value) in headers {
                response = response.header(name, value);
            }
            let body = http_body_util::Full::new(Bytes::from(body))
                .map_err(|never| match never {})
                .boxed();
            response.body(body).unwrap()
        }
        Reply::Sse {
            headers,
            chunks,
            end,
        } => {
            let mut response = Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .header("cache-control", "no-cache");
            for (name, value) in headers {
                response = response.header(name, value);
            }
            let chunks = futures::stream::iter(chunks).then(|chunk| async move {
                // Separate writes, so the client sees the chunks apart.
                tokio::task::yield_now().await;
                Ok::<_, std::io::Error>(Frame::data(chunk))
            });
            let body: Body = match end {
                End::Close => BoxBody::new(StreamBody::new(chunks)),
                End::Break => BoxBody::new(StreamBody::new(chunks.chain(futures::stream::once(
                    async {
                        // Let the chunks reach the client before the connection breaks.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        Err(std::io::Error::other("connection dropped on purpose"))
                    },
                )))),
                End::Hold => {
                    BoxBody::new(StreamBody::new(chunks.chain(futures::stream::pending())))
                }
            };
            response.body(body).unwrap()
        }
    }
}

//! POST on `/mcp`: the body read as messages, the session they go to (a new one for `initialize`, one
//! for this exchange alone for a stateless request), and the exchange that answers with one JSON body
//! or with an SSE stream that ends after the answers.

use std::{
    collections::HashSet,
    convert::Infallible,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame as BodyFrame, Incoming, SizeHint};
use serde_json::Value;
use tokio::{sync::mpsc, time::Instant};

use super::{
    Inner, MAX_BODY, ResBody, SESSION_HEADER, SessionEntry, StreamGuard, TAP_CAPACITY,
    VERSION_HEADER, lock,
    reply::{accepts, header_str, invalid_request, json_response, plain, rpc_error},
    routes::UnknownSession,
    stateless,
};
use crate::{
    Direction,
    jsonrpc::{self, id_of, method_of, request_ids, to_frame},
    serve::mux::{Command, Mux, SessionNo},
    shared::Nonce,
    tap::TapSender,
};

impl Inner {
    pub(super) async fn post(self: &Arc<Self>, req: Request<Incoming>) -> Response<ResBody> {
        let headers = req.headers().clone();
        if let Some(refused) = refuse_post_headers(&headers) {
            return refused;
        }
        let messages = match read_messages(req).await {
            Ok(messages) => messages,
            Err(refused) => return *refused,
        };
        let PostSession {
            session,
            minted,
            ephemeral,
        } = match self.post_session(&headers, &messages).await {
            Ok(found) => found,
            Err(refused) => return *refused,
        };
        if let Some(tap) = &session.tap {
            for m in &messages {
                tap.send(Direction::FromClient, &to_frame(m));
            }
        }
        let expected: HashSet<String> = messages
            .iter()
            .flat_map(request_ids)
            .map(Value::to_string)
            .collect();
        if expected.is_empty() {
            for message in messages {
                self.mux.send(Command::Message {
                    session: session.no,
                    message,
                    answers: None,
                    related: false,
                });
            }
            if ephemeral {
                self.mux.send(Command::Close {
                    session: session.no,
                });
            }
            let mut res = Response::new(Full::new(Bytes::new()).boxed_unsync());
            *res.status_mut() = StatusCode::ACCEPTED;
            return res;
        }
        let exchange = Exchange {
            session,
            messages,
            expected,
            ephemeral,
        };
        let Some(mut res) = self.exchange(exchange).await else {
            return plain(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
        };
        if let Some(id) = minted
            && let Ok(value) = HeaderValue::from_str(&id)
        {
            res.headers_mut().insert(SESSION_HEADER, value);
        }
        res
    }

    /// The session a POST goes to: a new one for `initialize`, the one its header names, or one for
    /// this exchange alone (a stateless request).
    async fn post_session(
        &self,
        headers: &HeaderMap,
        messages: &[Value],
    ) -> Result<PostSession, Box<Response<ResBody>>> {
        let is_initialize = messages.iter().any(|m| method_of(m) == Some("initialize"));
        let session = self
            .session_of(headers)
            .map_err(|UnknownSession| Box::new(UnknownSession.response()))?;
        // The version header without a session id makes a 2026-07-28 request, also an `initialize`.
        let stateless = session.is_none()
            && header_str(headers, VERSION_HEADER)
                .is_some_and(|v| stateless::is_stateless(v.trim()));
        if stateless && let Some(refused) = stateless::refuse(headers, messages) {
            return Err(refused);
        }
        if is_initialize {
            if messages.len() != 1 {
                let message = "initialize must be sent alone";
                return Err(invalid_request(message));
            }
            if session.is_some() {
                let message = "initialize must not carry an Mcp-Session-Id";
                return Err(invalid_request(message));
            }
            let (id, entry) = self
                .new_session()
                .await
                .map_err(|e| Box::new(self.no_session(e, &messages[0])))?;
            return Ok(PostSession {
                session: entry,
                minted: Some(id),
                ephemeral: false,
            });
        }
        if let Some(session) = session {
            return Ok(PostSession {
                session,
                minted: None,
                ephemeral: false,
            });
        }
        if !stateless {
            let message = "Mcp-Session-Id is required; initialize first";
            return Err(invalid_request(message));
        }
        // A stateless request: a session of its own for this one exchange, ids remapped as usual.
        let Some(no) = self.mux.open(true).await else {
            return Err(Box::new(plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is stopping",
            )));
        };
        Ok(PostSession {
            session: Arc::new(SessionEntry {
                no,
                open: AtomicUsize::new(0),
                last_seen: Mutex::new(Instant::now()),
                tap: None,
            }),
            minted: None,
            ephemeral: true,
        })
    }

    async fn new_session(&self) -> Result<(String, Arc<SessionEntry>), NoSession> {
        if self.retired.load(Ordering::SeqCst) {
            return Err(NoSession::Replaced);
        }
        if lock(&self.sessions).len() >= self.max_sessions {
            return Err(NoSession::Full);
        }
        let no = self.mux.open(false).await.ok_or(NoSession::Stopping)?;
        let Ok(id) = Nonce::generate().map(|n| n.to_hex()) else {
            self.mux.send(Command::Close { session: no });
            return Err(NoSession::Stopping);
        };
        let tap =
            self.tap
                .as_ref()
                .and_then(|factory| match TapSender::start(factory(), TAP_CAPACITY) {
                    Ok((tap, thread)) => {
                        let mut threads = lock(&self.tap_threads);
                        threads.retain(|t| !t.is_finished());
                        threads.push(thread);
                        Some(tap)
                    }
                    Err(e) => {
                        tracing::warn!("cannot start the session's observer: {e}");
                        None
                    }
                });
        let entry = Arc::new(SessionEntry {
            no,
            open: AtomicUsize::new(0),
            last_seen: Mutex::new(Instant::now()),
            tap,
        });
        {
            // Checked again: other sessions may have opened while the multiplexer answered.
            let mut sessions = lock(&self.sessions);
            if sessions.len() >= self.max_sessions {
                drop(sessions);
                self.mux.send(Command::Close { session: no });
                return Err(NoSession::Full);
            }
            sessions.insert(id.clone(), Arc::clone(&entry));
        }
        tracing::debug!(session = no, "session opened");
        Ok((id, entry))
    }

    /// The answer to an `initialize` that got no session.
    fn no_session(&self, why: NoSession, initialize: &Value) -> Response<ResBody> {
        match why {
            NoSession::Stopping => plain(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping"),
            NoSession::Replaced => plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "this shared server was replaced by one for another command; attach again",
            ),
            NoSession::Full => {
                tracing::warn!(
                    "refused a new session: {} are open, the most this server holds",
                    self.max_sessions
                );
                let id = initialize.get("id").cloned().unwrap_or(Value::Null);
                let message = format!(
                    "the server holds {} sessions, the most it may; end a session (DELETE) or wait for one to expire, then initialize again",
                    self.max_sessions
                );
                let data = jsonrpc::data("too_many_sessions", None);
                let answer = jsonrpc::error(&id, crate::TOO_MANY_SESSIONS, &message, data);
                json_response(StatusCode::SERVICE_UNAVAILABLE, &answer)
            }
        }
    }

    /// Sends a POST's messages and answers with its requests' answers: one JSON body, or an SSE
    /// stream that ends after them. `None` when the server stopped before any answer came.
    async fn exchange(self: &Arc<Self>, exchange: Exchange) -> Option<Response<ResBody>> {
        let Exchange {
            session,
            messages,
            mut expected,
            ephemeral,
        } = exchange;
        let batch = messages.len() > 1;
        let (tx, mut rx) = mpsc::unbounded_channel();
        // A `subscriptions/listen` request (2026-07-28) is answered by its events: always a stream.
        let listen = messages.iter().any(|m| method_of(m) == Some(LISTEN_METHOD));
        let sse = !self.json_response || listen;
        let related = sse;
        for message in messages {
            let is_request = !request_ids(&message).is_empty();
            self.mux.send(Command::Message {
                session: session.no,
                message,
                answers: is_request.then(|| tx.clone()),
                related,
            });
        }
        drop(tx);
        let guard = StreamGuard::new(self, (!ephemeral).then(|| Arc::clone(&session)));
        // A stateless request's session ends with its exchange, also when its client goes first.
        let close_after = CloseOnDrop(ephemeral.then(|| (self.mux.clone(), session.no)));
        if sse {
            let mut first = None;
            if ephemeral && !batch {
                // 2026-07-28: an error answer has an HTTP status of its own, so the first message
                // decides between that and a stream.
                let message = rx.recv().await?;
                if answer_key(&message).is_some_and(|key| expected.contains(&key))
                    && let Some(status) = stateless::error_status(&message)
                {
                    drop(guard);
                    drop(close_after);
                    return Some(json_response(status, &message));
                }
                first = Some(message);
            }
            let body = SseBody {
                first,
                rx,
                expected: Some(expected),
                done: false,
                tap: session.tap.clone(),
                _guard: guard,
                _close_after: close_after,
            };
            let mut res = Response::new(body.boxed_unsync());
            res.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            res.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            return Some(res);
        }
        let mut answers = Vec::new();
        while !expected.is_empty() {
            let Some(message) = rx.recv().await else {
                break;
            };
            if let Some(key) = answer_key(&message)
                && expected.remove(&key)
            {
                if let Some(tap) = &session.tap {
                    tap.send(Direction::ToClient, &to_frame(&message));
                }
                answers.push(message);
            }
        }
        drop(guard);
        drop(close_after);
        if answers.is_empty() {
            return None;
        }
        let status = match (ephemeral, batch) {
            (true, false) => stateless::error_status(&answers[0]).unwrap_or(StatusCode::OK),
            _ => StatusCode::OK,
        };
        let value = if batch {
            Value::Array(answers)
        } else {
            answers.remove(0)
        };
        Some(json_response(status, &value))
    }
}

/// The request of 2026-07-28 whose answer is a stream of events.
const LISTEN_METHOD: &str = "subscriptions/listen";

/// Why no session was opened.
enum NoSession {
    /// The multiplexer ended: the server is stopping.
    Stopping,
    /// As many sessions are open as the server may hold.
    Full,
    /// A shared server replaced by one for another command.
    Replaced,
}

/// Where a POST goes, and whether its session is for this exchange alone.
struct PostSession {
    session: Arc<SessionEntry>,
    /// The id of a session this POST (an `initialize`) opened, for the answer's header.
    minted: Option<String>,
    ephemeral: bool,
}

/// A POST that holds requests, on its way to the multiplexer.
struct Exchange {
    session: Arc<SessionEntry>,
    messages: Vec<Value>,
    /// The ids of its requests, as JSON text.
    expected: HashSet<String>,
    ephemeral: bool,
}

/// Why a POST's headers are refused (`Accept`, `Content-Type`), if they are.
fn refuse_post_headers(headers: &HeaderMap) -> Option<Response<ResBody>> {
    if !(accepts(headers, "application/json") && accepts(headers, "text/event-stream")) {
        return Some(plain(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must include application/json and text/event-stream",
        ));
    }
    let json_type = header_str(headers, "content-type").is_some_and(|t| {
        t.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("application/json")
    });
    (!json_type).then(|| {
        plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        )
    })
}

/// A POST's body as messages: one object or a batch of them, each with a valid id if any.
async fn read_messages(req: Request<Incoming>) -> Result<Vec<Value>, Box<Response<ResBody>>> {
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            return Err(Box::new(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the body is over 16 MiB or was cut short",
            )));
        }
    };
    let messages = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(items)) if !items.is_empty() && items.iter().all(Value::is_object) => items,
        Ok(value @ Value::Object(_)) => vec![value],
        Ok(_) => {
            let message = "a message must be a JSON object or a batch of them";
            return Err(invalid_request(message));
        }
        Err(_) => {
            let message = "parse error: the body is not JSON";
            return Err(Box::new(rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                message,
            )));
        }
    };
    if !messages.iter().all(has_valid_id) {
        let message = "invalid request: an id must be a string, a number or null";
        return Err(invalid_request(message));
    }
    Ok(messages)
}

/// Whether a message's `id`, if any, is one JSON-RPC allows: a string, a number or null.
fn has_valid_id(message: &Value) -> bool {
    matches!(
        message.get("id"),
        None | Some(Value::Null | Value::String(_) | Value::Number(_))
    )
}

/// The id of an answer (a message with an id and no method), as JSON text.
fn answer_key(message: &Value) -> Option<String> {
    if message.get("method").is_some() {
        return None;
    }
    id_of(message).map(Value::to_string)
}

/// An SSE body fed by the multiplexer. For a POST it ends after the answers to its requests.
struct SseBody {
    /// A message read before the stream was chosen, sent first.
    first: Option<Value>,
    rx: mpsc::UnboundedReceiver<Value>,
    expected: Option<HashSet<String>>,
    done: bool,
    tap: Option<TapSender>,
    _guard: StreamGuard,
    _close_after: CloseOnDrop,
}

/// Ends a stateless request's session in the multiplexer when dropped.
struct CloseOnDrop(Option<(Mux, SessionNo)>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some((mux, no)) = self.0.take() {
            mux.send(Command::Close { session: no });
        }
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let next = match self.first.take() {
            Some(message) => Poll::Ready(Some(message)),
            None => self.rx.poll_recv(cx),
        };
        match next {
            Poll::Ready(Some(message)) => {
                if let (Some(expected), Some(key)) = (self.expected.as_mut(), answer_key(&message))
                {
                    expected.remove(&key);
                    if expected.is_empty() {
                        self.done = true;
                    }
                }
                let frame = to_frame(&message);
                if let Some(tap) = &self.tap {
                    tap.send(Direction::ToClient, &frame);
                }
                let mut event = Vec::with_capacity(frame.len() + 24);
                event.extend_from_slice(b"event: message\ndata: ");
                event.extend_from_slice(&frame);
                event.extend_from_slice(b"\n\n");
                Poll::Ready(Some(Ok(BodyFrame::data(Bytes::from(event)))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

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
use tokio::time::Instant;

use super::{
    At, Inner, MAX_BODY, ResBody, SESSION_HEADER, SessionEntry, StreamGuard, TAP_CAPACITY,
    VERSION_HEADER, lock,
    reply::{accepts, header_str, invalid_request, json_body, json_response, plain, rpc_error},
    routes::UnknownSession,
    stateless,
};
use crate::vocab::{self, INITIALIZE, SUBSCRIPTIONS_LISTEN};
use crate::{
    ANSWERS_TOO_LARGE, Direction,
    jsonrpc::{self, Peek, method_of, request_ids, to_frame},
    serve::{
        conn::Conn,
        credential::Credential,
        mux::{Command, Mux, SessionNo},
        outbox::{Event, Inbox, MAX_QUEUED_BYTES, Outbox as StreamOutbox},
    },
    shared::Nonce,
    tap::TapSender,
};

impl Inner {
    pub(super) async fn post(
        self: &Arc<Self>,
        req: Request<Incoming>,
        conn: &Arc<Conn>,
        credential: Option<&Credential>,
        at: Option<&At>,
    ) -> Response<ResBody> {
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
        } = match self.post_session(&headers, &messages, credential, at).await {
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
                session.mux.send(Command::Message {
                    session: session.no,
                    message,
                    answers: None,
                    related: false,
                });
            }
            if ephemeral.is_some() {
                session.mux.send(Command::Close {
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
        let Some(mut res) = self.exchange(exchange, conn).await else {
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
        credential: Option<&Credential>,
        at: Option<&At>,
    ) -> Result<PostSession, Box<Response<ResBody>>> {
        let is_initialize = messages.iter().any(|m| method_of(m) == Some(INITIALIZE));
        let session = self
            .session_of(headers, credential, at)
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
                .new_session(credential, at)
                .await
                .map_err(|e| Box::new(self.no_session(e, &messages[0])))?;
            return Ok(PostSession {
                session: entry,
                minted: Some(id),
                ephemeral: None,
            });
        }
        if let Some(session) = session {
            return Ok(PostSession {
                session,
                minted: None,
                ephemeral: None,
            });
        }
        if !stateless {
            let message = "Mcp-Session-Id is required; initialize first";
            return Err(invalid_request(message));
        }
        // A stateless request: a session of its own for this one exchange, ids remapped as usual;
        // it counts as a session for as long as the exchange lasts.
        let slot = self
            .stateless_slot()
            .ok_or_else(|| Box::new(self.no_session(NoSession::Full, &messages[0])))?;
        let mux = self
            .mux_for(credential, at)
            .map_err(|e| Box::new(self.no_session(NoSession::Credential(e), &messages[0])))?;
        let Some(no) = mux.open(true).await else {
            return Err(Box::new(plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is stopping",
            )));
        };
        Ok(PostSession {
            session: Arc::new(SessionEntry {
                no,
                mux,
                credential: credential.map(Credential::digest),
                path_key: at.map(|at| at.key.clone()),
                open: AtomicUsize::new(0),
                last_seen: Mutex::new(Instant::now()),
                tap: self.start_tap(),
            }),
            minted: None,
            ephemeral: Some(slot),
        })
    }

    /// The multiplexer a new session goes to: its path's, else the one for its credential.
    fn mux_for(
        &self,
        credential: Option<&Credential>,
        at: Option<&At>,
    ) -> Result<Mux, crate::Error> {
        match at {
            Some(at) => Ok(at.mux.clone()),
            None => self.muxes.get(credential),
        }
    }

    /// A stateless request's place among the sessions, while the server holds fewer than it may.
    fn stateless_slot(&self) -> Option<Slot> {
        let sessions = lock(&self.sessions);
        if sessions.len() + self.stateless.load(Ordering::SeqCst) >= self.max_sessions {
            return None;
        }
        self.stateless.fetch_add(1, Ordering::SeqCst);
        Some(Slot(Arc::clone(&self.stateless)))
    }

    async fn new_session(
        &self,
        credential: Option<&Credential>,
        at: Option<&At>,
    ) -> Result<(String, Arc<SessionEntry>), NoSession> {
        if self.retired.load(Ordering::SeqCst) {
            return Err(NoSession::Replaced);
        }
        if self.sessions_full(lock(&self.sessions).len()) {
            return Err(NoSession::Full);
        }
        let mux = self
            .mux_for(credential, at)
            .map_err(NoSession::Credential)?;
        let no = mux.open(false).await.ok_or(NoSession::Stopping)?;
        let Ok(id) = Nonce::generate().map(|n| n.to_hex()) else {
            mux.send(Command::Close { session: no });
            return Err(NoSession::Stopping);
        };
        let tap = self.start_tap();
        let entry = Arc::new(SessionEntry {
            no,
            mux: mux.clone(),
            credential: credential.map(Credential::digest),
            path_key: at.map(|at| at.key.clone()),
            open: AtomicUsize::new(0),
            last_seen: Mutex::new(Instant::now()),
            tap,
        });
        {
            // Checked again: other sessions may have opened while the multiplexer answered.
            let mut sessions = lock(&self.sessions);
            if self.sessions_full(sessions.len()) {
                drop(sessions);
                mux.send(Command::Close { session: no });
                return Err(NoSession::Full);
            }
            sessions.insert(id.clone(), Arc::clone(&entry));
        }
        tracing::debug!(session = no, "session opened");
        Ok((id, entry))
    }

    /// A new session's observer, when sessions are observed; a stateless request's exchange is a
    /// session of its own to it.
    fn start_tap(&self) -> Option<TapSender> {
        let factory = self.tap.as_ref()?;
        match TapSender::start(factory(), TAP_CAPACITY) {
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
        }
    }

    /// Whether `sessions` and the stateless requests being answered are as many as the server holds.
    fn sessions_full(&self, sessions: usize) -> bool {
        sessions + self.stateless.load(Ordering::SeqCst) >= self.max_sessions
    }

    /// The answer to an `initialize` (or a stateless request) that got no session.
    fn no_session(&self, why: NoSession, request: &Value) -> Response<ResBody> {
        match why {
            NoSession::Credential(e) => {
                // The error names no value: the credential is not in it.
                tracing::debug!("cannot pass a client's Authorization on: {e}");
                plain(
                    StatusCode::BAD_REQUEST,
                    "the Authorization header cannot be passed on to the upstream",
                )
            }
            NoSession::Stopping => plain(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping"),
            NoSession::Replaced => plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "this shared server was replaced by one for another command; attach again",
            ),
            NoSession::Full => {
                tracing::warn!(
                    "refused a new session: {} are open (stateless requests being answered \
                     included), the most this server holds",
                    self.max_sessions
                );
                let id = request.get("id").cloned().unwrap_or(Value::Null);
                let message = if method_of(request) == Some(INITIALIZE) {
                    format!(
                        "the server holds {} sessions, the most it may; end a session (DELETE) or wait for one to expire, then initialize again",
                        self.max_sessions
                    )
                } else {
                    format!(
                        "the server holds {} sessions and stateless requests being answered, the most it may; send the request again once one has ended",
                        self.max_sessions
                    )
                };
                let data = jsonrpc::data("too_many_sessions", None);
                let answer =
                    vocab::error_answer_with_data(&id, crate::TOO_MANY_SESSIONS, &message, data);
                json_response(StatusCode::SERVICE_UNAVAILABLE, &answer)
            }
        }
    }

    /// Sends a POST's messages and answers with its requests' answers: one JSON body, or an SSE
    /// stream that ends after them. `None` when the server stopped before any answer came.
    ///
    /// The answers wait in an outbox bounded as a GET stream's is: a client that leaves too many
    /// unread has its stream closed. JSON answers are read as they come and sent together, up to
    /// 16 MiB; past that, each answer is replaced by an [`ANSWERS_TOO_LARGE`] error.
    async fn exchange(
        self: &Arc<Self>,
        exchange: Exchange,
        conn: &Arc<Conn>,
    ) -> Option<Response<ResBody>> {
        let Exchange {
            session,
            messages,
            mut expected,
            ephemeral,
        } = exchange;
        let batch = messages.len() > 1;
        let (tx, mut rx) = StreamOutbox::bounded(conn);
        // A `subscriptions/listen` request (2026-07-28) is answered by its events: always a stream.
        let listen = messages
            .iter()
            .any(|m| method_of(m) == Some(SUBSCRIPTIONS_LISTEN));
        let sse = !self.json_response || listen;
        let related = sse;
        for message in messages {
            let is_request = !request_ids(&message).is_empty();
            session.mux.send(Command::Message {
                session: session.no,
                message,
                answers: is_request.then(|| tx.clone()),
                related,
            });
        }
        drop(tx);
        let stateless = ephemeral.is_some();
        let guard = StreamGuard::new(self, (!stateless).then(|| Arc::clone(&session)));
        // A stateless request's session ends with its exchange, also when its client goes first.
        let close_after =
            CloseOnDrop(ephemeral.map(|slot| (session.mux.clone(), session.no, slot)));
        if sse {
            let mut first = None;
            if stateless && !batch {
                // 2026-07-28: an error answer has an HTTP status of its own, so the first message
                // decides between that and a stream.
                let message = rx.recv().await?;
                if answer_key(&message).is_some_and(|key| expected.contains(&key))
                    && let Some(status) = error_status(&message)
                {
                    drop(guard);
                    drop(close_after);
                    return Some(json_body(status, message));
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
        let mut answers: Vec<Bytes> = Vec::new();
        // The body's bytes: the answers, the commas and brackets of a batch.
        let mut size = 2;
        while !expected.is_empty() {
            let Some(message) = rx.recv().await else {
                break;
            };
            let Some(key) = answer_key(&message).filter(|key| expected.remove(key)) else {
                continue;
            };
            let message = if size + message.len() > MAX_QUEUED_BYTES {
                answers_too_large(&key)
            } else {
                message
            };
            size += message.len() + 1;
            if let Some(tap) = &session.tap {
                tap.send(Direction::ToClient, &message);
            }
            answers.push(message);
        }
        drop(guard);
        drop(close_after);
        if answers.is_empty() {
            return None;
        }
        let status = match (stateless, batch) {
            (true, false) => error_status(&answers[0]).unwrap_or(StatusCode::OK),
            _ => StatusCode::OK,
        };
        let body = if batch {
            let mut body = Vec::with_capacity(size);
            body.push(b'[');
            for (n, answer) in answers.iter().enumerate() {
                if n > 0 {
                    body.push(b',');
                }
                body.extend_from_slice(answer);
            }
            body.push(b']');
            Bytes::from(body)
        } else {
            answers.swap_remove(0)
        };
        Some(json_body(status, body))
    }
}

/// The error that replaces an answer past the 16 MiB a POST's JSON answers may come to; `id` is
/// raw JSON text.
fn answers_too_large(id: &str) -> Bytes {
    let message = format!(
        "the answers to this POST came to more than {} MiB, the most one JSON body holds; send \
         fewer requests in one batch, or ask for an event stream",
        MAX_QUEUED_BYTES >> 20
    );
    let data = jsonrpc::limit_data("answers_too_large", MAX_QUEUED_BYTES);
    jsonrpc::error_frame(Some(id), ANSWERS_TOO_LARGE, &message, data)
}

/// The HTTP status of a stateless request's error answer (see [`stateless::error_status`]).
fn error_status(answer: &[u8]) -> Option<StatusCode> {
    let answer: Value = serde_json::from_slice(answer).ok()?;
    stateless::error_status(&answer)
}

/// Why no session was opened.
enum NoSession {
    /// The multiplexer ended: the server is stopping.
    Stopping,
    /// As many sessions are open as the server may hold.
    Full,
    /// A shared server replaced by one for another command.
    Replaced,
    /// No upstream could be made for the client's own credential.
    Credential(crate::Error),
}

/// Where a POST goes, and whether its session is for this exchange alone.
struct PostSession {
    session: Arc<SessionEntry>,
    /// The id of a session this POST (an `initialize`) opened, for the answer's header.
    minted: Option<String>,
    /// A session for this exchange alone (a stateless request's), and its place among the sessions.
    ephemeral: Option<Slot>,
}

/// A stateless request's place among the sessions a server holds, given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A POST that holds requests, on its way to the multiplexer.
struct Exchange {
    session: Arc<SessionEntry>,
    messages: Vec<Value>,
    /// The ids of its requests, as JSON text.
    expected: HashSet<String>,
    ephemeral: Option<Slot>,
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
                crate::PARSE_ERROR,
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
fn answer_key(message: &[u8]) -> Option<String> {
    match jsonrpc::peek(message) {
        Ok(Peek::One(info)) if info.is_response() => info.id.map(String::from),
        _ => None,
    }
}

/// An SSE body fed by the multiplexer. For a POST it ends after the answers to its requests.
struct SseBody {
    /// A message read before the stream was chosen, sent first.
    first: Option<Bytes>,
    rx: Inbox,
    expected: Option<HashSet<String>>,
    done: bool,
    tap: Option<TapSender>,
    _guard: StreamGuard,
    _close_after: CloseOnDrop,
}

/// Ends a stateless request's session in the multiplexer when dropped, and gives back its place.
struct CloseOnDrop(Option<(Mux, SessionNo, Slot)>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some((mux, no, _slot)) = self.0.take() {
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
            None => self
                .rx
                .poll_recv(cx)
                .map(|event| event.map(Event::into_frame)),
        };
        match next {
            Poll::Ready(Some(frame)) => {
                if let (Some(expected), Some(key)) = (self.expected.as_mut(), answer_key(&frame)) {
                    expected.remove(&key);
                    if expected.is_empty() {
                        self.done = true;
                    }
                }
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

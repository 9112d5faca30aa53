//! What every request goes through: the loopback guard, the path and the bearer token, the protocol
//! version, then POST, GET or DELETE; a shared server's identity and retire endpoints; and the session
//! table (activity, expiry, lookup by `Mcp-Session-Id`).

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::json;
use tokio::time::Instant;

use super::{
    At, Inner, MAX_IDENTITY_BODY, ResBody, SESSION_HEADER, SUPPORTED_PROTOCOL_VERSIONS,
    SessionEntry, StreamGuard, VERSION_HEADER, lock,
    reply::{accepts, header_str, json_response, plain, rpc_error},
};
use crate::vocab::HEADER_LAST_EVENT_ID;
use crate::{
    guard::LoopbackGuard,
    serve::{
        conn::Conn,
        credential::{Credential, same_credential},
        mux::Command,
        outbox::Outbox as StreamOutbox,
        per_path::PathKey,
    },
    shared::{IDENTITY_PATH, MCP_PATH, Nonce, RETIRE_PATH, token_matches},
};

impl Inner {
    pub(super) fn touch(&self) {
        *lock(&self.last_activity) = Instant::now();
        self.activity.notify_waiters();
    }

    pub(super) fn idle_for(&self) -> Duration {
        if self.open.load(Ordering::SeqCst) > 0 {
            return Duration::ZERO;
        }
        lock(&self.last_activity).elapsed()
    }

    pub(super) fn expire_sessions(&self, timeout: Duration) {
        let mut expired = Vec::new();
        lock(&self.sessions).retain(|_, s| {
            let keep = s.open.load(Ordering::SeqCst) > 0 || lock(&s.last_seen).elapsed() < timeout;
            if !keep {
                expired.push(Arc::clone(s));
            }
            keep
        });
        for session in expired {
            tracing::debug!(session = session.no, "session expired");
            session.mux.send(Command::Close {
                session: session.no,
            });
        }
    }

    pub(super) async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
        conn: &Arc<Conn>,
    ) -> Response<ResBody> {
        let res = self.route(req, conn).await;
        tracing::trace!(status = res.status().as_u16(), "answered");
        res
    }

    async fn route(
        self: &Arc<Self>,
        req: Request<Incoming>,
        conn: &Arc<Conn>,
    ) -> Response<ResBody> {
        // This server serves no page: no other origin than its own is allowed, and none at all for a
        // shared server, which only calltape's sessions talk to.
        let guard = LoopbackGuard::new(self.port);
        let guard = match self.keys {
            Some(_) => guard,
            None => guard.allow_own_origin(),
        };
        if let Err(refusal) = guard.check(req.headers()) {
            return plain(refusal.status(), refusal.message());
        }
        let path = req.uri().path().to_owned();
        if path == IDENTITY_PATH && self.keys.is_some() {
            if req.method() != Method::POST {
                return plain(StatusCode::METHOD_NOT_ALLOWED, "use POST");
            }
            return self.identify(req).await;
        }
        let retire = path == RETIRE_PATH && self.keys.is_some();
        let key = match self.per_path.as_ref().and_then(|p| p.key_of(&path)) {
            Some(PathKey::Key(key)) => Some(key.to_owned()),
            Some(PathKey::Malformed) => return self.not_found(),
            None if path == MCP_PATH && !self.muxes.has_shared() => return self.not_found(),
            None if path != MCP_PATH && !retire => return self.not_found(),
            None => None,
        };
        if let Some(token) = &self.token {
            let presented = header_str(req.headers(), "authorization")
                .and_then(|v| {
                    v.strip_prefix("Bearer ")
                        .or_else(|| v.strip_prefix("bearer "))
                })
                .unwrap_or("");
            if !token_matches(token.as_bytes(), presented.as_bytes()) {
                let mut res = plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
                res.headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return res;
            }
        }
        if retire {
            if req.method() != Method::POST {
                return plain(StatusCode::METHOD_NOT_ALLOWED, "use POST");
            }
            return self.retire();
        }
        // A path's upstream is made only for a request that passed every check above.
        let at = match (key, &self.per_path) {
            (Some(key), Some(per_path)) => match per_path.mux(&key).await {
                Ok(mux) => Some(At { key, mux }),
                Err(e) => return plain(StatusCode::BAD_REQUEST, &e.to_string()),
            },
            _ => None,
        };
        let at = at.as_ref();
        // The client's own credential, when it is passed on (never with the server's own token).
        let credential = if self.muxes.passes_credentials() {
            match Credential::of(req.headers()) {
                Ok(credential) => credential,
                Err(()) => {
                    return plain(
                        StatusCode::BAD_REQUEST,
                        "the Authorization header holds characters that cannot be passed on \
                         (only visible ASCII can)",
                    );
                }
            }
        } else {
            None
        };
        let credential = credential.as_ref();
        // A POST without a session id is a stateless request when it names a version: `post` refuses
        // a version it does not speak by 2026-07-28's rules, with the request's id.
        let stateless_post =
            req.method() == Method::POST && !req.headers().contains_key(SESSION_HEADER);
        if let Some(version) = header_str(req.headers(), VERSION_HEADER)
            && !SUPPORTED_PROTOCOL_VERSIONS.contains(&version)
            && !stateless_post
        {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                crate::INVALID_REQUEST,
                &format!(
                    "unsupported MCP-Protocol-Version; supported: {}",
                    SUPPORTED_PROTOCOL_VERSIONS.join(", ")
                ),
            );
        }
        self.touch();
        match *req.method() {
            Method::POST => self.post(req, conn, credential, at).await,
            Method::GET => self.get(&req, conn, credential, at),
            Method::DELETE => self.delete(&req, credential, at),
            _ => {
                let mut res = plain(StatusCode::METHOD_NOT_ALLOWED, "use POST, GET or DELETE");
                res.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                res
            }
        }
    }

    /// A 404 for a path where no MCP is served, saying where it is.
    fn not_found(&self) -> Response<ResBody> {
        let message = match (&self.per_path, self.muxes.has_shared()) {
            (Some(per_path), true) => {
                format!("not found; MCP is served at /mcp and {}", per_path.shape())
            }
            (Some(per_path), false) => format!("not found; MCP is served at {}", per_path.shape()),
            (None, _) => "not found; MCP is served at /mcp".to_owned(),
        };
        plain(StatusCode::NOT_FOUND, &message)
    }

    /// Steps aside for a server that runs another command: lets go of what `on_retire` holds, takes no
    /// new session, and stops once the last one ends.
    fn retire(&self) -> Response<ResBody> {
        if !self.retired.swap(true, Ordering::SeqCst) {
            if let Some(f) = lock(&self.on_retire).take() {
                f();
            }
            tracing::info!(
                "replaced by a shared server for another command; serving the {} sessions open until they end",
                lock(&self.sessions).len()
            );
        }
        plain(StatusCode::OK, "retired")
    }

    async fn identify(&self, req: Request<Incoming>) -> Response<ResBody> {
        let Some(keys) = &self.keys else {
            return plain(StatusCode::NOT_FOUND, "not found");
        };
        let Ok(body) = Limited::new(req.into_body(), MAX_IDENTITY_BODY)
            .collect()
            .await
        else {
            return plain(
                StatusCode::BAD_REQUEST,
                "the body must be {\"nonce\":\"<64 hex digits>\"}",
            );
        };
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Challenge {
            nonce: String,
        }
        let nonce = serde_json::from_slice::<Challenge>(&body.to_bytes())
            .ok()
            .and_then(|c| Nonce::from_hex(&c.nonce));
        let Some(nonce) = nonce else {
            return plain(
                StatusCode::BAD_REQUEST,
                "the body must be {\"nonce\":\"<64 hex digits>\"}",
            );
        };
        json_response(
            StatusCode::OK,
            &json!({"proof": keys.prove(&self.endpoint_text, &nonce)}),
        )
    }

    /// The session a request's `Mcp-Session-Id` names; a session started with another credential
    /// than the request's, or at another path, is unknown to it.
    pub(super) fn session_of(
        &self,
        headers: &HeaderMap,
        credential: Option<&Credential>,
        at: Option<&At>,
    ) -> Result<Option<Arc<SessionEntry>>, UnknownSession> {
        let Some(id) = header_str(headers, SESSION_HEADER) else {
            return Ok(None);
        };
        match lock(&self.sessions).get(id) {
            Some(s) if s.reached(credential, at) => {
                *lock(&s.last_seen) = Instant::now();
                Ok(Some(Arc::clone(s)))
            }
            _ => Err(UnknownSession),
        }
    }

    fn get(
        self: &Arc<Self>,
        req: &Request<Incoming>,
        conn: &Arc<Conn>,
        credential: Option<&Credential>,
        at: Option<&At>,
    ) -> Response<ResBody> {
        if !accepts(req.headers(), "text/event-stream") {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "Accept must include text/event-stream",
            );
        }
        let session = match self.session_of(req.headers(), credential, at) {
            Ok(Some(session)) => session,
            Ok(None) => return plain(StatusCode::BAD_REQUEST, "Mcp-Session-Id is required"),
            Err(UnknownSession) => return UnknownSession.response(),
        };
        let last_event =
            header_str(req.headers(), HEADER_LAST_EVENT_ID).and_then(|v| v.parse().ok());
        let (outbox, body) = StreamOutbox::open(
            conn,
            session.tap.clone(),
            StreamGuard::new(self, Some(Arc::clone(&session))),
        );
        session.mux.send(Command::Stream {
            session: session.no,
            outbox,
            last_event,
        });
        let mut res = Response::new(body.boxed_unsync());
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        res
    }

    fn delete(
        &self,
        req: &Request<Incoming>,
        credential: Option<&Credential>,
        at: Option<&At>,
    ) -> Response<ResBody> {
        let Some(id) = header_str(req.headers(), SESSION_HEADER) else {
            return plain(StatusCode::BAD_REQUEST, "Mcp-Session-Id is required");
        };
        let entry = {
            let mut sessions = lock(&self.sessions);
            match sessions.get(id) {
                Some(s) if s.reached(credential, at) => sessions.remove(id),
                _ => None,
            }
        };
        let Some(entry) = entry else {
            return plain(StatusCode::NOT_FOUND, "unknown or expired session");
        };
        tracing::debug!(session = entry.no, "session deleted");
        entry.mux.send(Command::Close { session: entry.no });
        let mut res = Response::new(Full::new(Bytes::new()).boxed_unsync());
        *res.status_mut() = StatusCode::OK;
        res
    }
}

impl SessionEntry {
    /// Whether a request with `credential` at `at` reaches this session: the credential and the
    /// path it started with.
    fn reached(&self, credential: Option<&Credential>, at: Option<&At>) -> bool {
        same_credential(self.credential.as_ref(), credential)
            && self.path_key.as_deref() == at.map(|at| at.key.as_str())
    }
}

/// A session id that names no session (never minted, deleted or expired).
pub(super) struct UnknownSession;

impl UnknownSession {
    pub(super) fn response(self) -> Response<ResBody> {
        plain(
            StatusCode::NOT_FOUND,
            "unknown or expired session; initialize again",
        )
    }
}

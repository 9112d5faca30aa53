//! A 2026-07-28 client (or a stateless frame) on a legacy upstream.
//!
//! The upstream only knows sessions, so the bridge opens one itself, from the first 2026-07-28
//! request's `_meta` client info and capabilities, and sends every 2026-07-28 request in it without the
//! era's `_meta` keys (so an HTTP upstream sends it with the session's id). What comes back is made a
//! valid 2026-07-28 answer (`shape`); a server-to-client request becomes an `input_required` result
//! of the request in flight (`input`); `subscriptions/listen` becomes `resources/subscribe` and the
//! session's notifications (`subscriptions`). Legacy frames pass through, except a legacy `initialize` once
//! the bridge has opened the session: that one is answered from the session's result.
//!
//! A session opened for a `server/discover` alone (the era detection's, as often as not) is opened
//! again for the first other request whose client info or capabilities differ. A translator holds one
//! session: a client whose capabilities differ from it is given a session (and a translator) of its
//! own by `lanes`, and served here only when the upstream cannot open another (logged once).

mod input;
mod shape;
mod subscriptions;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

use serde_json::{Value, json};

use super::{Out, Translate, with_frame};
use crate::jsonrpc::Frame;
use crate::vocab::{self, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
use crate::{
    BUFFER_FULL, UPSTREAM_EXITED, UPSTREAM_PROTOCOL_ERROR, jsonrpc, upstream::UpstreamEvent,
};

/// How many frames may wait for the session the bridge opens, as many as the bridge holds while an
/// upstream starts; a request past that is refused.
pub(super) const MAX_WAITING: usize = crate::DEFAULT_BUFFER_MESSAGES;

/// The translator for an upstream that speaks the handshake era.
pub(super) struct ModernOnLegacy {
    /// The last number the bridge gave one of its own requests or exchanges.
    next: u64,
    session: Session,
    /// The bridge's own requests in flight upstream, by id (JSON text).
    own: HashMap<String, Own>,
    /// 2026-07-28 requests in flight upstream, by the id they were sent with (JSON text).
    modern: HashMap<String, Modern>,
    /// Server-to-client requests handed to a client as `input_required`, by `requestState`.
    exchanges: HashMap<String, input::Exchange>,
    listens: subscriptions::Listens,
    /// The log level last set on the session for a 2026-07-28 client.
    log_level: Option<String>,
    /// The id (JSON text) of a legacy client's `initialize` on its way upstream.
    legacy_initialize: Option<String>,
    /// A client with other capabilities than the session's was logged.
    told_capabilities: bool,
    /// A handshake-era client sent `initialize` on this link: the session's change notifications
    /// reach the client side as the server sent them, also when listen streams take copies (`serve`
    /// shares one link between sessions of both eras).
    legacy_client: bool,
    /// The session was opened for a `server/discover` (a probe's, as often as not) and nothing else
    /// was sent in it yet: the first other request opens it again with its own client info and
    /// capabilities, which are the ones the server should see.
    provisional: bool,
}

/// The upstream session, as far as 2026-07-28 clients are concerned.
enum Session {
    /// Nobody opened it yet.
    Closed,
    /// The bridge sent `initialize`; client frames wait for its answer.
    Opening {
        params: Value,
        waiting: Vec<Frame>,
        /// Frames already translated, sent again once the session is open (after it expired).
        resend: Vec<Frame>,
    },
    /// Open: `result` is the `initialize` result; `params` the bridge's `initialize` params, or `None`
    /// when a legacy client opened it.
    Open {
        result: Value,
        params: Option<Value>,
    },
}

/// What one of the bridge's own requests was for.
#[derive(Debug, PartialEq)]
enum Own {
    /// The session's `initialize`.
    Initialize,
    /// `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe` or an answer nobody awaits.
    Quiet,
}

/// A 2026-07-28 request in flight upstream.
struct Modern {
    /// The id its answer goes to; `None` while the client was handed `input_required` and has not
    /// retried yet.
    client: Option<Value>,
    method: String,
    /// `params.uri` of a `resources/read`, for the error of a resource that does not exist.
    uri: Option<String>,
    /// The order it was sent in: the oldest request in flight gets the server's requests.
    order: u64,
    /// The frame as the client sent it, handed back to the client side when the upstream did not
    /// take it, so that it is translated again wherever it is sent next.
    sent: Frame,
    /// The `requestState` of its open exchange.
    exchange: Option<String>,
}

impl ModernOnLegacy {
    pub(super) fn new() -> Self {
        Self {
            next: 0,
            session: Session::Closed,
            own: HashMap::new(),
            modern: HashMap::new(),
            exchanges: HashMap::new(),
            listens: subscriptions::Listens::default(),
            log_level: None,
            legacy_initialize: None,
            told_capabilities: false,
            legacy_client: false,
            provisional: false,
        }
    }

    /// A fresh id for one of the bridge's own requests, as a value and as JSON text.
    fn own_id(&mut self, what: Own) -> Value {
        self.next += 1;
        let id = Value::from(format!("calltape-era-{}", self.next));
        self.own.insert(id.to_string(), what);
        id
    }

    /// Sends one of the bridge's own requests upstream.
    fn request(&mut self, what: Own, method: &str, params: Value, out: &mut Vec<Out>) {
        let id = self.own_id(what);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        out.push(Out::Upstream(jsonrpc::to_frame(&message)));
    }

    /// The `initialize` result of the open session.
    fn initialized(&self) -> Option<&Value> {
        match &self.session {
            Session::Open { result, .. } => Some(result),
            _ => None,
        }
    }

    /// A frame of the handshake era from the client side: passed through, except the handshake of a
    /// session the bridge opened.
    fn on_legacy(&mut self, frame: Frame, out: &mut Vec<Out>) {
        if !super::may_be_handshake(&frame) {
            out.push(Out::Upstream(frame));
            return;
        }
        let Ok(jsonrpc::Peek::One(info)) = jsonrpc::peek(&frame) else {
            out.push(Out::Upstream(frame));
            return;
        };
        if info.method.as_deref() == Some("initialize") && info.id.is_some() {
            self.legacy_client = true;
        }
        match (info.method.as_deref(), &mut self.session) {
            (Some("initialize"), Session::Opening { waiting, .. }) if info.id.is_some() => {
                waiting.push(frame);
            }
            (
                Some("initialize"),
                Session::Open {
                    result,
                    params: Some(_),
                },
            ) if info.id.is_some() => {
                let Ok(message) = serde_json::from_slice::<Value>(&frame) else {
                    out.push(Out::Upstream(frame));
                    return;
                };
                let asked = message["params"]["protocolVersion"].as_str();
                let answer = shape::initialize_answer(&message["id"], asked, result);
                out.push(client(&answer));
            }
            (Some("initialize"), Session::Closed) if info.id.is_some() => {
                self.legacy_initialize = info.id.as_deref().map(str::to_owned);
                out.push(Out::Upstream(frame));
            }
            // The bridge sends the session's own `notifications/initialized`.
            (
                Some(vocab::INITIALIZED),
                Session::Opening { .. }
                | Session::Open {
                    params: Some(_), ..
                },
            ) if info.id.is_none() => {}
            _ => out.push(Out::Upstream(frame)),
        }
    }

    /// A 2026-07-28 frame from the client side.
    fn on_modern(&mut self, frame: Frame, message: Value, out: &mut Vec<Out>) {
        match &mut self.session {
            Session::Open { .. } => self.in_session(frame, message, out),
            Session::Opening { waiting, .. } if waiting.len() < MAX_WAITING => waiting.push(frame),
            Session::Opening { .. } => {
                if let Some(id) = message.get("id").filter(|id| !id.is_null()) {
                    let refusal = vocab::error_answer_with_data(
                        id,
                        BUFFER_FULL,
                        "too many requests are waiting for the legacy upstream to open the session \
                         the bridge asked for; send this one again once earlier ones are answered",
                        jsonrpc::data("buffer_full", None),
                    );
                    out.push(client(&refusal));
                }
            }
            Session::Closed => {
                self.provisional = message["method"] == "server/discover";
                self.open(&message, frame, out);
            }
        }
    }

    /// Opens the upstream's session with the client info and capabilities of `message`, whose frame
    /// waits for it.
    fn open(&mut self, message: &Value, frame: Frame, out: &mut Vec<Out>) {
        let params = shape::initialize_params(message);
        self.request(Own::Initialize, "initialize", params.clone(), out);
        self.session = Session::Opening {
            params,
            waiting: vec![frame],
            resend: Vec::new(),
        };
    }

    /// A 2026-07-28 frame once the session is open.
    fn in_session(&mut self, frame: Frame, mut message: Value, out: &mut Vec<Out>) {
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        if self.provisional && method != "server/discover" {
            self.provisional = false;
            if let Session::Open {
                params: Some(params),
                ..
            } = &self.session
                && shape::initialize_params(&message) != *params
            {
                return self.open(&message, frame, out);
            }
        }
        if method != "server/discover" {
            self.check_capabilities(&message);
        }
        let id = message.get("id").filter(|id| !id.is_null()).cloned();
        let Some(id) = id else {
            if method == "notifications/cancelled"
                && let Some(uris) = self.listens.cancel(&message)
            {
                for uri in uris {
                    self.request(
                        Own::Quiet,
                        "resources/unsubscribe",
                        json!({"uri": uri}),
                        out,
                    );
                }
                return;
            }
            if method == "notifications/cancelled" {
                self.cancelled_upstream(&mut message);
            }
            shape::strip(&mut message);
            out.push(Out::Upstream(jsonrpc::to_frame(&message)));
            return;
        };
        if let Some(level) = shape::meta(&message)
            .and_then(|meta| meta.get(vocab::META_LOG_LEVEL))
            .and_then(Value::as_str)
            && self.log_level.as_deref() != Some(level)
        {
            let level = level.to_owned();
            self.request(Own::Quiet, "logging/setLevel", json!({"level": level}), out);
            self.log_level = Some(level);
        }
        match method.as_str() {
            "server/discover" => {
                let initialized = self.initialized().cloned().unwrap_or_default();
                out.push(client(&shape::discover(&id, &initialized)));
                return;
            }
            "subscriptions/listen" => {
                self.open_listen(&id, &message, out);
                return;
            }
            _ => {}
        }
        if message["params"].get("requestState").is_some() {
            self.retry(id, &message, out);
            return;
        }
        self.next += 1;
        let uri = message["params"]["uri"].as_str().map(str::to_owned);
        self.modern.insert(
            id.to_string(),
            Modern {
                client: Some(id),
                method,
                uri,
                order: self.next,
                exchange: None,
                sent: frame,
            },
        );
        shape::strip(&mut message);
        out.push(Out::Upstream(jsonrpc::to_frame(&message)));
    }

    /// A cancellation names the request as the server knows it: a retried request is the one first
    /// sent.
    fn cancelled_upstream(&self, message: &mut Value) {
        let named = &message["params"]["requestId"];
        let sent = self
            .modern
            .iter()
            .find(|(_, modern)| modern.client.as_ref() == Some(named))
            .map(|(key, _)| key);
        if let Some(id) = sent.and_then(|key| serde_json::from_str::<Value>(key).ok()) {
            message["params"]["requestId"] = id;
        }
    }

    /// Logs once that a client's capabilities differ from those the session was opened with: the
    /// upstream could not open another session for it (see `lanes`).
    fn check_capabilities(&mut self, message: &Value) {
        let Session::Open {
            params: Some(params),
            ..
        } = &self.session
        else {
            return;
        };
        let theirs = shape::meta(message).and_then(|meta| meta.get(META_CLIENT_CAPABILITIES));
        if self.told_capabilities || theirs.is_none_or(|theirs| *theirs == params["capabilities"]) {
            return;
        }
        self.told_capabilities = true;
        tracing::warn!(
            "a 2026-07-28 client declares other capabilities than the upstream session was opened with; \
             it is served in that session, since the upstream holds one session only or {} are open \
             already",
            super::lanes::MAX_SESSIONS
        );
    }

    /// The answer to one of the bridge's own requests.
    fn on_own(&mut self, what: Own, message: &Value, out: &mut Vec<Out>) {
        if what == Own::Quiet {
            if let Some(error) = message.get("error") {
                tracing::debug!(%error, "the upstream refused a request the bridge sent");
            }
            return;
        }
        if !matches!(self.session, Session::Opening { .. }) {
            return;
        }
        let Session::Opening {
            params,
            waiting,
            resend,
        } = std::mem::replace(&mut self.session, Session::Closed)
        else {
            return;
        };
        match message.get("result").filter(|result| result.is_object()) {
            Some(result) => {
                self.session = Session::Open {
                    result: result.clone(),
                    params: Some(params),
                };
                out.push(Out::Upstream(jsonrpc::notification(vocab::INITIALIZED)));
                if let Some(level) = self.log_level.clone() {
                    self.request(Own::Quiet, "logging/setLevel", json!({"level": level}), out);
                }
                for uri in self.listens.uris() {
                    self.request(Own::Quiet, "resources/subscribe", json!({"uri": uri}), out);
                }
                out.extend(resend.into_iter().map(Out::Upstream));
                for frame in waiting {
                    self.on_client(frame, out);
                }
            }
            None => {
                let error = message.get("error").cloned().unwrap_or(Value::Null);
                let said = error["message"].as_str().unwrap_or("no reason given");
                let why = format!(
                    "the legacy upstream refused the initialize the bridge sent for this 2026-07-28 \
                     request ({said}); check that the server accepts the client's capabilities"
                );
                let code = error["code"].as_i64().unwrap_or(UPSTREAM_PROTOCOL_ERROR);
                self.fail_waiting(waiting, code, &why, Some(error), out);
            }
        }
    }

    /// Answers every waiting request with an error, after the session could not be opened.
    fn fail_waiting(
        &mut self,
        waiting: Vec<Frame>,
        code: i64,
        why: &str,
        upstream: Option<Value>,
        out: &mut Vec<Out>,
    ) {
        tracing::warn!("{why}");
        for frame in waiting {
            let Ok(jsonrpc::Peek::One(info)) = jsonrpc::peek(&frame) else {
                continue;
            };
            if let (Some(id), Some(_)) = (info.id.as_deref(), info.method.as_deref()) {
                let data = jsonrpc::data("handshake_failed", upstream.clone());
                out.push(Out::Client(UpstreamEvent::Message(jsonrpc::error_frame(
                    Some(id),
                    code,
                    why,
                    data,
                ))));
            }
        }
    }

    /// A message from the upstream.
    fn on_message(&mut self, frame: Frame, out: &mut Vec<Out>) {
        if self.own.is_empty()
            && self.modern.is_empty()
            && self.listens.is_empty()
            && self.legacy_initialize.is_none()
        {
            out.push(Out::Client(UpstreamEvent::Message(frame)));
            return;
        }
        let info = match jsonrpc::peek(&frame) {
            Ok(jsonrpc::Peek::One(info)) => info,
            _ => {
                out.push(Out::Client(UpstreamEvent::Message(frame)));
                return;
            }
        };
        let key = info.id.as_deref().unwrap_or_default();
        let mine = info.is_response()
            && (self.own.contains_key(key)
                || self.modern.contains_key(key)
                || self.legacy_initialize.as_deref() == Some(key));
        let server_request = info.is_request() && !self.modern.is_empty();
        let event = info.method.is_some()
            && info.id.is_none()
            && !self.listens.is_empty()
            && subscriptions::carries(info.method.as_deref().unwrap_or_default());
        if !(mine || server_request || event) {
            out.push(Out::Client(UpstreamEvent::Message(frame)));
            return;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&frame) else {
            out.push(Out::Client(UpstreamEvent::Message(frame)));
            return;
        };
        if let Some(what) = self.own.remove(key) {
            self.on_own(what, &message, out);
        } else if let Some(modern) = self.modern.remove(key) {
            self.on_answer(key, modern, message, out);
        } else if info.is_response() {
            self.legacy_initialize = None;
            if let Some(result) = message.get("result").filter(|r| r.is_object())
                && matches!(self.session, Session::Closed)
            {
                self.session = Session::Open {
                    result: result.clone(),
                    params: None,
                };
            }
            out.push(Out::Client(UpstreamEvent::Message(frame)));
        } else if server_request {
            if !self.on_server_request(&message, out) {
                out.push(Out::Client(UpstreamEvent::Message(frame)));
            }
        } else {
            let events = self.listens.deliver(&message);
            if events.is_empty() || self.legacy_client {
                out.push(Out::Client(UpstreamEvent::Message(frame)));
            }
            out.extend(events.iter().map(client));
        }
    }

    /// The upstream's answer to a 2026-07-28 request.
    fn on_answer(&mut self, key: &str, mut modern: Modern, message: Value, out: &mut Vec<Out>) {
        match modern.client.take() {
            Some(id) => {
                if let Some(state) = &modern.exchange {
                    self.exchanges.remove(state);
                }
                let answer = shape::answer(message, &id, &modern.method, modern.uri.as_deref());
                out.push(client(&answer));
            }
            None => {
                // The client was handed `input_required` and has not retried yet: the answer waits for it.
                if let Some(exchange) = modern
                    .exchange
                    .as_ref()
                    .and_then(|state| self.exchanges.get_mut(state))
                {
                    exchange.answer = Some(message);
                }
                self.modern.insert(key.to_owned(), modern);
            }
        }
    }

    /// An event other than a message, about a frame the bridge may have sent itself.
    fn on_trouble(&mut self, event: UpstreamEvent, out: &mut Vec<Out>) {
        let frame = match &event {
            UpstreamEvent::SessionExpired { frame }
            | UpstreamEvent::Undelivered { frame, .. }
            | UpstreamEvent::ProtocolError { frame, .. } => frame,
            UpstreamEvent::Closed { .. } | UpstreamEvent::Message(_) => {
                out.push(Out::Client(event));
                return;
            }
        };
        let id = match jsonrpc::peek(frame) {
            Ok(jsonrpc::Peek::One(info)) => info.id.map(String::from),
            _ => None,
        };
        let own = id.as_deref().and_then(|id| self.own.remove(id));
        match (event, own) {
            (UpstreamEvent::SessionExpired { frame }, own) => {
                self.reopen(frame, own, id, out);
            }
            (_, Some(Own::Quiet)) => {}
            (event, Some(Own::Initialize)) => {
                let reason = trouble_reason(&event);
                if let Session::Opening { waiting, .. } =
                    std::mem::replace(&mut self.session, Session::Closed)
                {
                    let why = format!(
                        "the bridge could not open a session of the legacy upstream for this 2026-07-28 \
                         request ({reason}); check that the server is running and speaks MCP"
                    );
                    self.fail_waiting(waiting, UPSTREAM_PROTOCOL_ERROR, &why, None, out);
                }
            }
            (event, None) => {
                let sent = id
                    .and_then(|id| self.modern.remove(&id))
                    .map(|modern| modern.sent);
                out.push(Out::Client(match sent {
                    Some(sent) => with_frame(event, sent),
                    None => event,
                }));
            }
        }
    }

    /// The upstream forgot the session the bridge opened: the bridge opens another, then sends the
    /// frame again (a session a legacy client opened is that client's to open again).
    fn reopen(&mut self, frame: Frame, own: Option<Own>, id: Option<String>, out: &mut Vec<Out>) {
        let params = match &mut self.session {
            Session::Open {
                params: Some(params),
                ..
            } => params.clone(),
            Session::Opening { resend, .. } => {
                if own != Some(Own::Initialize) {
                    resend.push(frame);
                }
                return;
            }
            _ => {
                let sent = id
                    .and_then(|id| self.modern.remove(&id))
                    .map(|modern| modern.sent);
                let frame = sent.unwrap_or(frame);
                out.push(Out::Client(UpstreamEvent::SessionExpired { frame }));
                return;
            }
        };
        self.request(Own::Initialize, "initialize", params.clone(), out);
        let resend = if own.is_some() {
            Vec::new()
        } else {
            vec![frame]
        };
        self.session = Session::Opening {
            params,
            waiting: Vec::new(),
            resend,
        };
    }
}

impl Translate for ModernOnLegacy {
    fn on_client(&mut self, frame: Frame, out: &mut Vec<Out>) {
        if !super::may_be_modern(&frame) {
            return self.on_legacy(frame, out);
        }
        let message = match serde_json::from_slice::<Value>(&frame) {
            Ok(message)
                if shape::meta(&message).is_some_and(|m| m.contains_key(META_PROTOCOL_VERSION)) =>
            {
                message
            }
            _ => return self.on_legacy(frame, out),
        };
        if let Some(refusal) = shape::refusal(&message) {
            out.push(client(&refusal));
            return;
        }
        self.on_modern(frame, message, out);
    }

    fn on_upstream(&mut self, event: UpstreamEvent, out: &mut Vec<Out>) {
        match event {
            UpstreamEvent::Message(frame) => self.on_message(frame, out),
            other => self.on_trouble(other, out),
        }
    }

    fn abandon(&mut self, reason: &str, out: &mut Vec<Out>) {
        let why = format!(
            "the session the bridge opened for this client's capabilities ended ({reason}); send the \
             request again to have one opened anew"
        );
        if let Session::Opening { waiting, .. } =
            std::mem::replace(&mut self.session, Session::Closed)
        {
            self.fail_waiting(waiting, UPSTREAM_EXITED, &why, None, out);
        }
        let data = jsonrpc::data("session_ended", None);
        let waiting = std::mem::take(&mut self.modern)
            .into_values()
            .filter_map(|modern| modern.client);
        for id in waiting.chain(self.listens.take_ids()) {
            out.push(client(&vocab::error_answer_with_data(
                &id,
                UPSTREAM_EXITED,
                &why,
                data.clone(),
            )));
        }
        self.exchanges.clear();
        self.own.clear();
    }

    fn idle(&self) -> bool {
        self.own.is_empty()
            && self.modern.is_empty()
            && self.exchanges.is_empty()
            && self.listens.is_empty()
            && self.legacy_initialize.is_none()
            && !matches!(self.session, Session::Opening { .. })
    }

    fn holds(&self, id: &Value) -> bool {
        self.listens.holds(id)
            || self
                .modern
                .values()
                .any(|modern| modern.client.as_ref().is_some_and(|client| client == id))
    }
}

/// A message for the client side.
fn client(message: &Value) -> Out {
    Out::Client(UpstreamEvent::Message(jsonrpc::to_frame(message)))
}

/// Why a frame did not get an answer, for a log line or an error.
fn trouble_reason(event: &UpstreamEvent) -> String {
    match event {
        UpstreamEvent::Undelivered { reason, .. } => reason.clone(),
        UpstreamEvent::ProtocolError { message, .. } => message.clone(),
        UpstreamEvent::SessionExpired { .. } => "the session expired".to_owned(),
        UpstreamEvent::Closed { reason } => reason.clone(),
        UpstreamEvent::Message(_) => String::new(),
    }
}

//! A legacy client (or a legacy frame) on a 2026-07-28 upstream.
//!
//! The translator answers the handshake itself (`initialize` from `server/discover`'s result, `ping`,
//! `logging/setLevel`, `resources/subscribe`), sends every other request stateless with the client's
//! info and capabilities in `_meta`, turns `input_required` results into the legacy server-to-client
//! requests and retries with their answers, and keeps one `subscriptions/listen` open for the
//! notifications the client expects. Frames that already carry a 2026-07-28 `_meta` pass unchanged.

mod calls;
mod detect;
mod subscriptions;
#[cfg(test)]
mod tests;
mod wire;

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::{Out, Translate, with_frame};
use crate::jsonrpc::Frame;
use crate::upstream::UpstreamEvent;
use crate::vocab::{
    self, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION,
};
pub(super) use detect::{Discovery, discover, is_discover};
pub(super) use wire::explain_refused_handshake;

/// The prefix of the ids of the requests the translator sends on its own; a client's ids are never
/// of this form in practice, and an answer is taken only for an id the translator has in flight.
const OWN_ID: &str = "calltape-era/";

/// The translator for an upstream that speaks 2026-07-28.
pub(super) struct LegacyOnModern {
    /// `server/discover`'s result, once known.
    discovered: Option<Value>,
    /// The id of the `server/discover` the translator asked, while it is in flight.
    discovering: Option<String>,
    /// `initialize` requests waiting for `server/discover`'s result.
    waiting: Vec<Map<String, Value>>,
    /// The client's `clientInfo` and `capabilities`, from its `initialize`.
    client_info: Option<Value>,
    client_capabilities: Value,
    /// The level `logging/setLevel` asked for.
    level: Option<String>,
    /// The client's requests in flight upstream, by id.
    calls: HashMap<String, calls::Call>,
    /// The translator's own requests to the client, by id: (the call's id, the input's key).
    asks: HashMap<String, (String, String)>,
    listen: subscriptions::Listen,
    next_id: u64,
}

impl LegacyOnModern {
    pub(super) fn new(discovered: Option<Value>) -> Self {
        Self {
            discovered,
            discovering: None,
            waiting: Vec::new(),
            client_info: None,
            client_capabilities: json!({}),
            level: None,
            calls: HashMap::new(),
            asks: HashMap::new(),
            listen: subscriptions::Listen::default(),
            next_id: 0,
        }
    }

    fn own_id(&mut self, what: &str) -> String {
        self.next_id += 1;
        format!("{OWN_ID}{what}/{}", self.next_id)
    }

    /// The `_meta` every translated request carries: the request's own keys, then the version, the
    /// client's capabilities and info, and the log level.
    fn meta(&self, own: Option<&Value>) -> Value {
        let mut meta = own.and_then(Value::as_object).cloned().unwrap_or_default();
        meta.insert(META_PROTOCOL_VERSION.into(), vocab::MODERN_VERSION.into());
        meta.insert(
            META_CLIENT_CAPABILITIES.into(),
            self.client_capabilities.clone(),
        );
        if let Some(info) = &self.client_info {
            meta.insert(META_CLIENT_INFO.into(), info.clone());
        }
        if let Some(level) = &self.level {
            meta.insert(META_LOG_LEVEL.into(), level.clone().into());
        }
        Value::Object(meta)
    }

    /// A legacy request's params with the stateless `_meta`.
    fn stateless_params(&self, params: Option<&Value>) -> Value {
        let mut params = params
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let meta = self.meta(params.get("_meta"));
        params.insert("_meta".into(), meta);
        Value::Object(params)
    }

    fn on_client_request(&mut self, message: Map<String, Value>, frame: Frame, out: &mut Vec<Out>) {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let params = message.get("params");
        match method {
            "initialize" => self.initialize(message, out),
            "ping" => reply(out, wire::answer(&id, json!({}))),
            "logging/setLevel" => {
                let level = params.and_then(|p| p.get("level")).and_then(Value::as_str);
                match level.filter(|l| wire::LEVELS.contains(l)) {
                    Some(level) => {
                        self.level = Some(level.to_owned());
                        reply(out, wire::answer(&id, json!({})));
                    }
                    None => {
                        let text = format!(
                            "logging/setLevel needs params.level, one of {}",
                            wire::LEVELS.join(", ")
                        );
                        reply(out, wire::error(&id, vocab::INVALID_PARAMS, &text));
                    }
                }
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                let uri = params.and_then(|p| p.get("uri")).and_then(Value::as_str);
                let Some(uri) = uri else {
                    let text = format!("{method} needs params.uri, the resource's URI");
                    return reply(out, wire::error(&id, vocab::INVALID_PARAMS, &text));
                };
                let subscribe = method == "resources/subscribe";
                if subscribe
                    && self.listen.uris.len() >= crate::MAX_SUBSCRIPTIONS
                    && !self.listen.uris.contains(uri)
                {
                    return reply(out, crate::jsonrpc::too_many_uris(&id.to_string()));
                }
                let changed = if subscribe {
                    self.listen.uris.insert(uri.to_owned())
                } else {
                    self.listen.uris.remove(uri)
                };
                reply(out, wire::answer(&id, json!({})));
                if changed {
                    self.relisten(out);
                }
            }
            _ => self.send_call(message, frame, out),
        }
    }

    fn initialize(&mut self, message: Map<String, Value>, out: &mut Vec<Out>) {
        let params = message.get("params");
        self.client_info = params.and_then(|p| p.get("clientInfo")).cloned();
        self.client_capabilities = params
            .and_then(|p| p.get("capabilities"))
            .filter(|c| c.is_object())
            .cloned()
            .unwrap_or_else(|| json!({}));
        if self.discovered.is_none() {
            self.waiting.push(message);
            if self.discovering.is_none() {
                let id = self.own_id("discover");
                let params = json!({"_meta": wire::own_meta()});
                out.push(Out::Upstream(wire::request(&id, "server/discover", params)));
                self.discovering = Some(id);
            }
            return;
        }
        self.answer_initialize(&message, out);
    }

    fn answer_initialize(&mut self, message: &Map<String, Value>, out: &mut Vec<Out>) {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let Some(discovered) = &self.discovered else {
            return;
        };
        let asked = message
            .get("params")
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        let result = wire::initialize_result(discovered, wire::handshake_version(asked));
        reply(out, wire::answer(&id, result));
        // A session initialized again (after a restart or an expiry) keeps its subscription.
        if !self.listen.is_open() {
            self.relisten(out);
        }
    }

    /// `server/discover`'s answer (or its failure) for the `initialize` requests waiting for it.
    fn discovered(&mut self, result: Result<Value, String>, out: &mut Vec<Out>) {
        self.discovering = None;
        let waiting = std::mem::take(&mut self.waiting);
        match result {
            Ok(result) => {
                self.discovered = Some(result);
                for message in &waiting {
                    self.answer_initialize(message, out);
                }
            }
            Err(why) => {
                let text = format!(
                    "cannot answer initialize: the upstream, which speaks 2026-07-28, did not answer server/discover ({why})"
                );
                for message in &waiting {
                    let id = message.get("id").cloned().unwrap_or(Value::Null);
                    reply(out, wire::error(&id, crate::UPSTREAM_PROTOCOL_ERROR, &text));
                }
            }
        }
    }

    fn on_client_notification(
        &mut self,
        message: Map<String, Value>,
        frame: Frame,
        out: &mut Vec<Out>,
    ) {
        match message.get("method").and_then(Value::as_str) {
            // The handshake is over when initialize is answered; roots are asked for on each request.
            Some("notifications/initialized" | "notifications/roots/list_changed") => {}
            Some("notifications/cancelled") => {
                // The request is over for the client: its answer and its questions are not awaited.
                let cancelled = message
                    .get("params")
                    .and_then(|p| p.get("requestId"))
                    .map(wire::key);
                if let Some(key) = cancelled {
                    self.calls.remove(&key);
                    self.asks.retain(|_, (call, _)| *call != key);
                }
                out.push(Out::Upstream(frame));
            }
            _ => out.push(Out::Upstream(frame)),
        }
    }

    /// The client's answer to a request of the translator's, or to one of the upstream's.
    fn on_client_response(
        &mut self,
        message: Map<String, Value>,
        frame: Frame,
        out: &mut Vec<Out>,
    ) {
        let key = message.get("id").map(wire::key).unwrap_or_default();
        match self.asks.remove(&key) {
            Some((call, input)) => self.input_answered(&call, &input, message, out),
            // An answer to a question of a request that is over: the upstream never asked it.
            None if message
                .get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| id.starts_with(OWN_ID)) => {}
            None => out.push(Out::Upstream(frame)),
        }
    }

    fn on_upstream_message(
        &mut self,
        message: Map<String, Value>,
        frame: Frame,
        out: &mut Vec<Out>,
    ) {
        let is_response = message.get("method").is_none();
        if is_response {
            let key = message.get("id").map(wire::key).unwrap_or_default();
            if self.discovering.as_deref().map(|id| wire::key(&id.into())) == Some(key.clone()) {
                let result = match (message.get("result"), message.get("error")) {
                    (Some(result), _) => Ok(result.clone()),
                    (None, Some(error)) => Err(error.to_string()),
                    (None, None) => Err("an answer with neither result nor error".into()),
                };
                return self.discovered(result, out);
            }
            if self.listen.is_listen(&key) {
                // The end of a subscription: the client never asked for it.
                self.listen.ended(&key);
                return;
            }
            if self.calls.contains_key(&key) {
                return self.call_answered(&key, message, out);
            }
            return out.push(Out::Client(UpstreamEvent::Message(frame)));
        }
        if message.get("id").is_some() {
            return out.push(Out::Client(UpstreamEvent::Message(frame)));
        }
        self.on_upstream_notification(message, frame, out);
    }

    fn on_upstream_notification(
        &mut self,
        mut message: Map<String, Value>,
        frame: Frame,
        out: &mut Vec<Out>,
    ) {
        let stream = message
            .get("params")
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(vocab::META_SUBSCRIPTION_ID))
            .map(wire::key);
        if stream.is_some_and(|key| !self.listen.is_listen(&key)) {
            // An event of a listen stream a 2026-07-28 client opened itself: its own era, unchanged.
            return out.push(Out::Client(UpstreamEvent::Message(frame)));
        }
        match message.get("method").and_then(Value::as_str) {
            Some("notifications/subscriptions/acknowledged") => {}
            Some("notifications/message") => {
                let level = message
                    .get("params")
                    .and_then(|p| p.get("level"))
                    .and_then(Value::as_str);
                if self
                    .level
                    .as_deref()
                    .is_none_or(|min| wire::level_passes(level, min))
                {
                    out.push(Out::Client(UpstreamEvent::Message(frame)));
                }
            }
            Some(
                "notifications/tools/list_changed"
                | "notifications/prompts/list_changed"
                | "notifications/resources/list_changed"
                | "notifications/resources/updated",
            ) => {
                if let Some(meta) = message
                    .get_mut("params")
                    .and_then(|p| p.get_mut("_meta"))
                    .and_then(Value::as_object_mut)
                {
                    meta.remove(vocab::META_SUBSCRIPTION_ID);
                    if meta.is_empty()
                        && let Some(params) =
                            message.get_mut("params").and_then(Value::as_object_mut)
                    {
                        params.remove("_meta");
                    }
                }
                let message = Value::Object(message);
                out.push(Out::Client(UpstreamEvent::Message(wire::frame(&message))));
            }
            _ => out.push(Out::Client(UpstreamEvent::Message(frame))),
        }
    }

    /// A frame the upstream could not take or answer: the translator's own ones stop here.
    fn on_failed(&mut self, frame: &Frame, event: UpstreamEvent, out: &mut Vec<Out>) {
        let id = wire::object(frame).and_then(|m| m.get("id").cloned());
        let key = id.as_ref().map(wire::key).unwrap_or_default();
        if self.discovering.as_deref().map(|id| wire::key(&id.into())) == Some(key.clone()) {
            return self.discovered(Err(describe(&event)), out);
        }
        if self.listen.is_listen(&key) {
            tracing::debug!(
                "the upstream's subscription stream failed: {}",
                describe(&event)
            );
            self.listen.ended(&key);
            return;
        }
        let event = match self.calls.remove(&key) {
            // The client side holds and re-sends what it sent, not its translation: the next link's
            // translator translates it again.
            Some(call) => with_frame(event, call.original),
            None => event,
        };
        out.push(Out::Client(event));
    }
}

impl Translate for LegacyOnModern {
    fn on_client(&mut self, frame: Frame, out: &mut Vec<Out>) {
        let Some(message) = wire::object(&frame) else {
            return out.push(Out::Upstream(frame));
        };
        if wire::is_modern(&message) {
            return out.push(Out::Upstream(frame));
        }
        match (message.contains_key("method"), message.contains_key("id")) {
            (true, true) => self.on_client_request(message, frame, out),
            (true, false) => self.on_client_notification(message, frame, out),
            (false, _) => self.on_client_response(message, frame, out),
        }
    }

    fn on_upstream(&mut self, event: UpstreamEvent, out: &mut Vec<Out>) {
        match event {
            UpstreamEvent::Message(frame) => match wire::object(&frame) {
                Some(message) => self.on_upstream_message(message, frame, out),
                None => out.push(Out::Client(UpstreamEvent::Message(frame))),
            },
            UpstreamEvent::Undelivered { ref frame, .. }
            | UpstreamEvent::ProtocolError { ref frame, .. }
            | UpstreamEvent::SessionExpired { ref frame } => {
                let frame = frame.clone();
                self.on_failed(&frame, event, out);
            }
            UpstreamEvent::Closed { .. } => out.push(Out::Client(event)),
        }
    }
}

fn reply(out: &mut Vec<Out>, frame: Frame) {
    out.push(Out::Client(UpstreamEvent::Message(frame)));
}

/// What went wrong with a frame, for a message.
fn describe(event: &UpstreamEvent) -> String {
    match event {
        UpstreamEvent::Undelivered { reason, .. } => reason.clone(),
        UpstreamEvent::ProtocolError { message, .. } => message.clone(),
        UpstreamEvent::SessionExpired { .. } => "the session expired".into(),
        UpstreamEvent::Closed { reason } => reason.clone(),
        UpstreamEvent::Message(_) => "an unexpected message".into(),
    }
}

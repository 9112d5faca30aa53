//! What sessions send, on its way upstream: request ids and progress tokens made unique, `initialize`
//! answered from the cache, subscriptions counted across sessions, `notifications/cancelled` mapped,
//! and what a session leaves behind when it ends.

use serde_json::{Value, json};

use super::{Init, Outbox, Route, SessionNo, State, Undo, id_key};
use crate::jsonrpc::{self, id_of, method_of};
use crate::vocab::{
    self, CANCELLED, INITIALIZE, INITIALIZED, RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE,
    SET_LOG_LEVEL, SUBSCRIPTIONS_LISTEN,
};

impl State {
    pub(super) fn close_session(&mut self, session: SessionNo) {
        if self.sessions.remove(&session).is_none() {
            return;
        }
        // What it sent that is still waiting for its turn never goes.
        self.forget_sent(session);
        // Its requests in flight are cancelled upstream; their answers would have nowhere to go.
        let ids: Vec<u64> = self
            .routes
            .iter()
            .filter(|(_, r)| r.session == session)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.routes.remove(&id);
            self.send_upstream(json!({"jsonrpc": "2.0", "method": CANCELLED,
                "params": {"requestId": id, "reason": "the session ended"}}));
        }
        self.tokens.retain(|_, (s, _, _)| *s != session);
        // Server-to-client requests it was asked get an error, so the upstream does not wait forever.
        let asked: Vec<String> = self
            .s2c
            .iter()
            .filter(|(_, s)| **s == session)
            .map(|(id, _)| id.clone())
            .collect();
        for key in asked {
            self.s2c.remove(&key);
            if let Ok(id) = serde_json::from_str::<Value>(&key) {
                let message = "the session this request went to has ended";
                self.send_upstream(vocab::error_answer(&id, vocab::INTERNAL_ERROR, message));
            }
        }
        let mut gone = Vec::new();
        for (uri, subscribers) in &mut self.subscriptions {
            if subscribers.remove(&session) && subscribers.is_empty() {
                gone.push(uri.clone());
            }
        }
        for uri in gone {
            self.subscriptions.remove(&uri);
            let id = self.internal_id();
            self.send_upstream(json!({"jsonrpc": "2.0", "id": id, "method": RESOURCES_UNSUBSCRIBE, "params": {"uri": uri}}));
        }
        if let Init::Pending { waiting } = &mut self.init {
            waiting.retain(|(s, _, _)| *s != session);
        }
    }

    pub(super) fn on_session_message(
        &mut self,
        session: SessionNo,
        mut message: Value,
        answers: Option<Outbox>,
        related: bool,
    ) {
        let method = method_of(&message).map(str::to_owned);
        let id = id_of(&message).cloned();
        match (method.as_deref(), id) {
            (Some(method), Some(client_id)) => {
                self.request(session, method, client_id, message, answers, related)
            }
            (Some(INITIALIZED), None) => {
                if !self.initialized_sent && matches!(self.init, Init::Done { .. }) {
                    self.initialized_sent = true;
                    self.send_from(session, message);
                }
            }
            (Some(CANCELLED), None) => {
                let wanted = message["params"]["requestId"].clone();
                let found = self
                    .routes
                    .iter()
                    .find(|(_, r)| r.session == session && r.client_id == wanted)
                    .map(|(id, _)| *id);
                if let Some(up) = found {
                    message["params"]["requestId"] = json!(up);
                    self.send_from(session, message);
                }
            }
            (Some(_), None) => self.send_from(session, message),
            (None, Some(client_id)) => {
                // An answer to a server-to-client request: back with the upstream's own id.
                let key = id_key(&client_id);
                if self.s2c.get(&key) == Some(&session) {
                    self.s2c.remove(&key);
                    self.send_from(session, message);
                }
            }
            (None, None) => {}
        }
    }

    fn request(
        &mut self,
        session: SessionNo,
        method: &str,
        client_id: Value,
        mut message: Value,
        answers: Option<Outbox>,
        related: bool,
    ) {
        let mut undo = None;
        match method {
            INITIALIZE => match &mut self.init {
                Init::Done { result, .. } => {
                    let frame = json!({"jsonrpc": "2.0", "id": client_id, "result": result});
                    self.deliver_answer(session, answers.as_ref(), frame);
                    return;
                }
                Init::Pending { waiting } => {
                    waiting.push((session, client_id, answers));
                    return;
                }
                Init::None => {
                    self.init = Init::Pending {
                        waiting: Vec::new(),
                    };
                }
            },
            RESOURCES_SUBSCRIBE | RESOURCES_UNSUBSCRIBE => {
                let uri = message["params"]["uri"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let subscribe = method == RESOURCES_SUBSCRIBE;
                let subscribers = self.subscriptions.entry(uri.clone()).or_default();
                let others = subscribers.iter().any(|s| *s != session);
                if subscribe {
                    if subscribers.insert(session) {
                        undo = Some(Undo::Subscribe(uri.clone()));
                    }
                } else {
                    subscribers.remove(&session);
                    if subscribers.is_empty() {
                        self.subscriptions.remove(&uri);
                    }
                }
                if others {
                    // The upstream already sends (or still must send) updates for this URI.
                    let frame = json!({"jsonrpc": "2.0", "id": client_id, "result": {}});
                    self.deliver_answer(session, answers.as_ref(), frame);
                    return;
                }
            }
            SET_LOG_LEVEL => {
                let level = message["params"]["level"].clone();
                let previous = self.log_level.replace(level.clone());
                undo = Some(Undo::SetLevel { level, previous });
            }
            SUBSCRIPTIONS_LISTEN => {
                if let Some(refusal) = self.refuse_listen(session, &client_id, &message) {
                    self.deliver_answer(session, answers.as_ref(), refusal);
                    return;
                }
            }
            _ => {}
        }
        let up = self.next_id;
        self.next_id += 1;
        message["id"] = json!(up);
        let mut token = None;
        if let Some(meta) = message.get_mut("params").and_then(|p| p.get_mut("_meta"))
            && let Some(client_token) = meta.get("progressToken").filter(|t| !t.is_null()).cloned()
        {
            let t = self.next_token;
            self.next_token += 1;
            meta["progressToken"] = json!(t);
            self.tokens.insert(t, (session, client_token, up));
            token = Some(t);
        }
        let initialize = (method == INITIALIZE).then(|| message["params"].clone());
        self.routes.insert(
            up,
            Route {
                session,
                client_id,
                answers,
                related,
                token,
                initialize,
                undo,
                listen: method == SUBSCRIPTIONS_LISTEN,
            },
        );
        self.send_from(session, message);
    }

    /// The refusal of a `subscriptions/listen` that names more than
    /// [`MAX_SUBSCRIPTIONS`](crate::MAX_SUBSCRIPTIONS) resources, or that the session asks for while
    /// it holds [`MAX_LISTENS`](crate::MAX_LISTENS) open; `None` when it may go upstream.
    fn refuse_listen(&self, session: SessionNo, id: &Value, message: &Value) -> Option<Value> {
        let uris = message["params"]["notifications"]["resourceSubscriptions"]
            .as_array()
            .map_or(0, Vec::len);
        if uris > crate::MAX_SUBSCRIPTIONS {
            let frame = jsonrpc::too_many_uris(&id.to_string());
            return serde_json::from_slice(&frame).ok();
        }
        let open = self
            .routes
            .values()
            .filter(|route| route.session == session && route.listen)
            .count();
        if open < crate::MAX_LISTENS {
            return None;
        }
        let limit = crate::MAX_LISTENS;
        let message = format!(
            "this session holds {limit} subscriptions/listen streams open, the most one may; \
             cancel one (or close its stream) first"
        );
        let data = jsonrpc::limit_data("too_many_listens", limit);
        Some(vocab::error_answer_with_data(
            id,
            crate::TOO_MANY_LISTENS,
            &message,
            data,
        ))
    }

    /// Takes back what a request answered with an error had changed.
    pub(super) fn undo(&mut self, session: SessionNo, undo: Undo) {
        match undo {
            Undo::Subscribe(uri) => {
                if let Some(subscribers) = self.subscriptions.get_mut(&uri) {
                    subscribers.remove(&session);
                    if subscribers.is_empty() {
                        self.subscriptions.remove(&uri);
                    }
                }
            }
            // Unless a later request set another level since.
            Undo::SetLevel { level, previous } => {
                if self.log_level.as_ref() == Some(&level) {
                    self.log_level = previous;
                }
            }
        }
    }
}

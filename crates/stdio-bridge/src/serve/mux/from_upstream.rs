//! What the upstream sends, on its way to sessions: answers with the client's own id, progress and
//! cancellations by the mapping, resource updates to subscribers, other notifications to everybody, and
//! server-to-client requests to the session whose request is in flight.

use serde_json::{Value, json};

use super::{Init, SessionNo, State, id_key};
use crate::jsonrpc::{id_of, method_of, to_frame};
use crate::vocab::{self, CANCELLED, META_SUBSCRIPTION_ID, PROGRESS, RESOURCES_UPDATED};

impl State {
    pub(super) fn on_upstream_frame(&mut self, frame: &[u8]) {
        // The upstream is alive and talking: the next restart starts without a pause.
        self.attempts = 0;
        let Ok(value) = serde_json::from_slice::<Value>(frame) else {
            tracing::debug!("the upstream sent a frame that is not JSON; dropped");
            return;
        };
        if let Value::Array(items) = value {
            for item in items {
                self.upstream_message(item);
            }
        } else {
            self.upstream_message(value);
        }
    }

    fn upstream_message(&mut self, message: Value) {
        let method = method_of(&message).map(str::to_owned);
        let id = id_of(&message).cloned();
        let mut message = match (&method, &id) {
            (Some(_), None) => match self.listen_event(message) {
                Some(message) => message,
                None => return,
            },
            _ => message,
        };
        match (method.as_deref(), id) {
            (None, Some(id)) => {
                let Some(up) = id.as_u64() else {
                    tracing::debug!("the upstream answered an id it was never sent; dropped");
                    return;
                };
                if self.internal.remove(&up) {
                    let replayed = self.link.as_ref().and_then(|l| l.replay_id) == Some(up);
                    if replayed {
                        if let Some(result) = message.get("result")
                            && let Init::Done { result: cached, .. } = &mut self.init
                        {
                            *cached = result.clone();
                        }
                        self.handshake_replayed();
                    }
                    return;
                }
                let Some(route) = self.routes.remove(&up) else {
                    return;
                };
                if let Some(t) = route.token {
                    self.tokens.remove(&t);
                }
                message["id"] = route.client_id.clone();
                self.answer(&route, message);
            }
            (Some(method), Some(id)) => self.server_request(method, id, message),
            (Some(PROGRESS), None) => {
                let Some(t) = message["params"]["progressToken"].as_u64() else {
                    return;
                };
                let Some((session, client_token, up)) = self.tokens.get(&t).cloned() else {
                    return;
                };
                message["params"]["progressToken"] = client_token;
                match self.routes.get(&up) {
                    Some(route) if route.related => {
                        let answers = route.answers.clone();
                        self.deliver_related(session, answers.as_ref(), message);
                    }
                    _ => self.deliver(session, message),
                }
            }
            (Some(CANCELLED), None) => {
                let key = id_key(&message["params"]["requestId"]);
                if let Some(session) = self.s2c.remove(&key) {
                    self.deliver(session, message);
                }
            }
            (Some(RESOURCES_UPDATED), None) => {
                let uri = message["params"]["uri"].as_str().unwrap_or_default();
                let subscribers: Vec<SessionNo> = self
                    .subscriptions
                    .get(uri)
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default();
                for session in subscribers {
                    self.deliver(session, message.clone());
                }
            }
            (Some(_), None) => self.broadcast(to_frame(&message)),
            (None, None) => {}
        }
    }

    /// A notification on a `subscriptions/listen` stream (2026-07-28) names the listen request in its
    /// `_meta`: it goes to that request's stream only, with the client's own id, and is dropped once
    /// that request ended. Any other message is handed back.
    fn listen_event(&mut self, mut message: Value) -> Option<Value> {
        let up = message["params"]["_meta"][META_SUBSCRIPTION_ID].as_u64();
        let Some(up) = up.filter(|up| !self.internal.contains(up)) else {
            return Some(message);
        };
        let Some(route) = self.routes.get(&up) else {
            tracing::debug!("an event of a listen stream that ended; dropped");
            return None;
        };
        let session = route.session;
        let answers = if route.related {
            route.answers.clone()
        } else {
            None
        };
        message["params"]["_meta"][META_SUBSCRIPTION_ID] = route.client_id.clone();
        self.deliver_related(session, answers.as_ref(), message);
        None
    }

    pub(super) fn initialized(&mut self, params: Value, answer: &Value) {
        let waiting = match std::mem::replace(&mut self.init, Init::None) {
            Init::Pending { waiting } => waiting,
            other => {
                self.init = other;
                return;
            }
        };
        if let Some(result) = answer.get("result") {
            self.init = Init::Done {
                params,
                result: result.clone(),
            };
            for (session, id, answers) in waiting {
                let frame = json!({"jsonrpc": "2.0", "id": id, "result": result});
                self.deliver_answer(session, answers.as_ref(), frame);
            }
        } else {
            // The first handshake failed: the waiting sessions get the same error with their own ids.
            for (session, id, answers) in waiting {
                let mut frame = answer.clone();
                frame["id"] = id;
                self.deliver_answer(session, answers.as_ref(), frame);
            }
        }
    }

    fn server_request(&mut self, method: &str, id: Value, message: Value) {
        // The session whose request is in flight, the most recent one if several; never a stateless
        // request's, which has no way to answer.
        let asked = |no: &SessionNo| self.sessions.get(no).is_some_and(|s| !s.stateless);
        let target = self
            .routes
            .iter()
            .filter(|(_, r)| asked(&r.session))
            .max_by_key(|(up, _)| **up)
            .map(|(_, r)| (r.session, if r.related { r.answers.clone() } else { None }));
        let target = target.or_else(|| {
            self.sessions
                .keys()
                .rev()
                .find(|no| asked(no))
                .map(|s| (*s, None))
        });
        let Some((session, answers)) = target else {
            let frame = if method == vocab::PING {
                json!({"jsonrpc": "2.0", "id": id, "result": {}})
            } else {
                let message = "no session is attached to answer this request";
                vocab::error_answer(&id, vocab::INTERNAL_ERROR, message)
            };
            self.send_upstream(frame);
            return;
        };
        self.s2c.insert(id_key(&id), session);
        self.deliver_related(session, answers.as_ref(), message);
    }
}

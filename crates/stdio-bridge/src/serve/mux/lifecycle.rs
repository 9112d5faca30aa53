//! The upstream's life: starting it (with a growing pause after failures), the link's writer task, the
//! cached handshake replayed to a fresh upstream, frames held until it is ready, and what happens to
//! the requests in flight when it exits or a frame is not delivered.

use std::{collections::HashSet, sync::Arc, time::Duration};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::{
    Init, LinkState, Route, SessionNo, State,
    fair::{self, Up},
};
use crate::vocab::{INITIALIZED, RESOURCES_SUBSCRIBE, SET_LOG_LEVEL, error_answer_with_data};
use crate::{
    UPSTREAM_EXITED, UPSTREAM_PROTOCOL_ERROR, UPSTREAM_UNREACHABLE, UpstreamEvent,
    jsonrpc::{self, CONNECTION_LOST, EXITED_IN_FLIGHT, NOT_MCP, data, id_of, method_of, to_frame},
    upstream::Link,
};

impl State {
    /// Starts (or restarts) the upstream, with a growing pause after failures.
    pub(super) fn connect(&mut self) {
        if self.connecting {
            return;
        }
        self.connecting = true;
        let delay = match self.attempts {
            0 => Duration::ZERO,
            n => Duration::from_millis(100u64 << n.min(5)),
        };
        self.attempts += 1;
        let upstream = Arc::clone(&self.upstream);
        let tx = self.conn_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(upstream.connect().await);
        });
    }

    pub(super) fn linked(&mut self, link: Link) -> mpsc::Receiver<UpstreamEvent> {
        let Link {
            outgoing,
            events,
            close,
        } = link;
        let (tx, rx) = mpsc::unbounded_channel();
        let (closed_tx, closed) = oneshot::channel();
        // A separate task writes to the upstream, so a slow reader never stalls routing, and it
        // gives the sessions turns (`fair`).
        tokio::spawn(async move {
            fair::write(rx, &outgoing).await;
            drop(outgoing);
            close().await;
            let _ = closed_tx.send(());
        });
        self.link = Some(LinkState {
            outgoing: tx,
            closed,
            ready: true,
            replay_id: None,
        });
        if matches!(self.init, Init::Done { .. }) {
            self.replay_handshake();
        } else {
            self.flush_held();
        }
        events
    }

    /// Sends the cached `initialize` (then `notifications/initialized`) to a fresh upstream, and holds
    /// everything else until it is answered.
    pub(super) fn replay_handshake(&mut self) {
        let Init::Done { params, .. } = &self.init else {
            return;
        };
        let id = self.next_id;
        self.next_id += 1;
        self.internal.insert(id);
        let frame = jsonrpc::initialize(&json!(id), params);
        if let Some(link) = &mut self.link {
            link.ready = false;
            link.replay_id = Some(id);
            let _ = link.outgoing.send(Up::Frame(None, to_frame(&frame)));
        }
    }

    pub(super) fn handshake_replayed(&mut self) {
        let mut frames = vec![json!({"jsonrpc": "2.0", "method": INITIALIZED})];
        // What is held goes to the upstream right after: never twice.
        let level_held = self
            .held
            .iter()
            .any(|f| method_of(f) == Some(SET_LOG_LEVEL));
        let level = if level_held {
            None
        } else {
            self.log_level.clone()
        };
        let held_uris: HashSet<&str> = self
            .held
            .iter()
            .filter(|f| method_of(f) == Some(RESOURCES_SUBSCRIBE))
            .filter_map(|f| f["params"]["uri"].as_str())
            .collect();
        let uris: Vec<String> = self
            .subscriptions
            .keys()
            .filter(|uri| !held_uris.contains(uri.as_str()))
            .cloned()
            .collect();
        if let Some(level) = level {
            let id = self.internal_id();
            frames.push(json!({"jsonrpc": "2.0", "id": id, "method": SET_LOG_LEVEL, "params": {"level": level}}));
        }
        for uri in uris {
            let id = self.internal_id();
            frames.push(json!({"jsonrpc": "2.0", "id": id, "method": RESOURCES_SUBSCRIBE, "params": {"uri": uri}}));
        }
        if let Some(link) = &mut self.link {
            link.ready = true;
            link.replay_id = None;
            for frame in &frames {
                let _ = link.outgoing.send(Up::Frame(None, to_frame(frame)));
            }
        }
        // The server may have changed while it was down: tell every session to list again.
        for method in self.list_changed_methods() {
            self.broadcast(jsonrpc::notification(method));
        }
        self.flush_held();
    }

    fn list_changed_methods(&self) -> Vec<&'static str> {
        let Init::Done { result, .. } = &self.init else {
            return Vec::new();
        };
        jsonrpc::list_changed(&result["capabilities"])
    }

    fn flush_held(&mut self) {
        let held = std::mem::take(&mut self.held);
        for frame in held {
            self.send_upstream(frame);
        }
    }

    /// Sends one of the multiplexer's own frames, before any session's; held while the upstream
    /// (re)starts.
    pub(super) fn send_upstream(&mut self, frame: Value) {
        self.send(None, frame);
    }

    /// Sends a session's frame, in its turn (`fair`); held while the upstream (re)starts.
    pub(super) fn send_from(&mut self, session: SessionNo, frame: Value) {
        self.send(Some(session), frame);
    }

    fn send(&mut self, from: Option<SessionNo>, frame: Value) {
        match &self.link {
            Some(link) if link.ready => {
                if link
                    .outgoing
                    .send(Up::Frame(from, to_frame(&frame)))
                    .is_err()
                {
                    self.held.push(frame);
                }
            }
            _ => self.held.push(frame),
        }
    }

    /// What a session that ended sent and the upstream did not get yet never goes.
    pub(super) fn forget_sent(&mut self, session: SessionNo) {
        if let Some(link) = &self.link {
            let _ = link.outgoing.send(Up::Forget(session));
        }
    }

    pub(super) fn crashed(&mut self, reason: &str) {
        tracing::warn!(
            "the upstream {} exited: {reason}; restarting it",
            self.upstream.describe()
        );
        self.link = None;
        self.internal.clear();
        let waiting = match std::mem::replace(&mut self.init, Init::None) {
            Init::Pending { waiting } => waiting,
            other => {
                self.init = other;
                Vec::new()
            }
        };
        if matches!(self.init, Init::None) {
            // The first handshake died with the upstream: the next initialize is forwarded afresh.
            self.initialized_sent = false;
        }
        // Every request in flight gets an error with its own id: its outcome is unknown, never replayed.
        // Requests still held (never sent) wait for the restarted upstream instead.
        let held: HashSet<u64> = self
            .held
            .iter()
            .filter_map(|f| id_of(f).and_then(Value::as_u64))
            .collect();
        let in_flight: Vec<u64> = self
            .routes
            .keys()
            .copied()
            .filter(|id| !held.contains(id))
            .collect();
        let routes: Vec<Route> = in_flight
            .into_iter()
            .filter_map(|id| self.routes.remove(&id))
            .collect();
        let upstream = json!({"message": format!("{} {reason}", self.upstream.describe())});
        let data = data("upstream_exited", Some(upstream));
        for route in routes {
            let frame = error_answer_with_data(
                &route.client_id,
                UPSTREAM_EXITED,
                EXITED_IN_FLIGHT,
                data.clone(),
            );
            self.answer(&route, frame);
        }
        for (session, id, answers) in waiting {
            let frame =
                error_answer_with_data(&id, UPSTREAM_EXITED, EXITED_IN_FLIGHT, data.clone());
            self.deliver_answer(session, answers.as_ref(), frame);
        }
        let routes = &self.routes;
        self.tokens.retain(|_, (_, _, up)| routes.contains_key(up));
        self.s2c.clear();
        self.connect();
    }

    /// The upstream could not be started: the requests held for it get an error now rather than wait for
    /// a start that may never come; it is retried for the requests that follow.
    pub(super) fn fail_held(&mut self, reason: &str) {
        let held = std::mem::take(&mut self.held);
        for frame in held {
            let Some(up) = id_of(&frame).and_then(Value::as_u64) else {
                continue;
            };
            if method_of(&frame).is_none() {
                continue;
            }
            if let Some(route) = self.routes.remove(&up) {
                if let Some(t) = route.token {
                    self.tokens.remove(&t);
                }
                let data = data("upstream_unreachable", Some(json!({"message": reason})));
                let frame = error_answer_with_data(
                    &route.client_id,
                    UPSTREAM_UNREACHABLE,
                    "upstream unreachable",
                    data,
                );
                if route.initialize.is_some() {
                    let waiting = match std::mem::replace(&mut self.init, Init::None) {
                        Init::Pending { waiting } => waiting,
                        other => {
                            self.init = other;
                            Vec::new()
                        }
                    };
                    for (session, id, answers) in waiting {
                        let mut copy = frame.clone();
                        copy["id"] = id;
                        self.deliver_answer(session, answers.as_ref(), copy);
                    }
                }
                self.answer(&route, frame);
            }
        }
    }

    pub(super) fn undelivered(&mut self, frame: &[u8], maybe_delivered: bool, reason: &str) {
        let Ok(value) = serde_json::from_slice::<Value>(frame) else {
            return;
        };
        if !maybe_delivered {
            self.held.push(value);
            return;
        }
        if let Some(route) = id_of(&value)
            .and_then(Value::as_u64)
            .and_then(|id| self.routes.remove(&id))
        {
            let data = data("connection_lost", Some(json!({"message": reason})));
            let frame =
                error_answer_with_data(&route.client_id, UPSTREAM_EXITED, CONNECTION_LOST, data);
            self.answer(&route, frame);
        }
    }

    pub(super) fn protocol_error(&mut self, frame: &[u8], status: Option<u16>, message: &str) {
        let Ok(value) = serde_json::from_slice::<Value>(frame) else {
            return;
        };
        if let Some(route) = id_of(&value)
            .and_then(Value::as_u64)
            .and_then(|id| self.routes.remove(&id))
        {
            let upstream = json!({"status": status, "message": message});
            let data = data("upstream_protocol_error", Some(upstream));
            let frame =
                error_answer_with_data(&route.client_id, UPSTREAM_PROTOCOL_ERROR, NOT_MCP, data);
            self.answer(&route, frame);
        }
    }
}

//! The one `subscriptions/listen` request kept open upstream, whose notifications reach the client
//! as the handshake era's, with `resources/subscribe` emulated as its filter.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::{LegacyOnModern, Out, wire};

use crate::vocab::{CANCELLED, SUBSCRIPTIONS_LISTEN};

/// The subscription state of one link.
#[derive(Default)]
pub(super) struct Listen {
    /// The resources the client subscribed to.
    pub(super) uris: BTreeSet<String>,
    /// The open `subscriptions/listen` request's id (as a key), and those it replaced.
    open: Option<String>,
    ended: BTreeSet<String>,
}

impl Listen {
    /// Whether an id is one of the translator's `subscriptions/listen` requests.
    pub(super) fn is_listen(&self, key: &str) -> bool {
        self.open.as_deref() == Some(key) || self.ended.contains(key)
    }

    /// Whether a `subscriptions/listen` request is open.
    pub(super) fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// A listen request that ended or failed: it is no longer open.
    pub(super) fn ended(&mut self, key: &str) {
        if self.open.as_deref() == Some(key) {
            self.open = None;
        }
        self.ended.remove(key);
    }
}

impl LegacyOnModern {
    /// Opens the subscription with the current filter, cancelling the one it replaces; with nothing
    /// to listen for, only cancels.
    pub(super) fn relisten(&mut self, out: &mut Vec<Out>) {
        let Some(discovered) = &self.discovered else {
            return;
        };
        let mut filter: Map<String, Value> = wire::list_flags(discovered);
        if let Some(old) = self.listen.open.take() {
            let id: Value = serde_json::from_str(&old).unwrap_or(Value::Null);
            let cancel = json!({"jsonrpc": "2.0", "method": CANCELLED,
                "params": {"requestId": id, "reason": "the subscription filter changed"}});
            out.push(Out::Upstream(wire::frame(&cancel)));
            self.listen.ended.insert(old);
        }
        if !self.listen.uris.is_empty() {
            let uris: Vec<Value> = self.listen.uris.iter().cloned().map(Value::from).collect();
            filter.insert("resourceSubscriptions".into(), Value::Array(uris));
        }
        if filter.is_empty() {
            return;
        }
        let id = self.own_id("listen");
        let params = json!({"_meta": self.meta(None), "notifications": filter});
        out.push(Out::Upstream(wire::request(
            &id,
            SUBSCRIPTIONS_LISTEN,
            params,
        )));
        self.listen.open = Some(wire::key(&id.into()));
    }
}

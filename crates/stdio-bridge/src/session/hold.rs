//! The hold queue: client messages waiting for the upstream, in order, within the buffer's limits;
//! sending them once it is ready, registering the requests in flight, and answering with errors what
//! cannot wait (a full buffer, the restart deadline).

use std::collections::VecDeque;

use serde_json::Value;
use tokio::{sync::mpsc, time::Instant};

use super::{Core, Held, Sent, resume::Change};
use crate::vocab::INITIALIZE;
use crate::{
    BUFFER_FULL, RESTART_DEADLINE,
    jsonrpc::Frame,
    jsonrpc::{self, Info, Peek},
};

impl Core {
    /// Sends a client message upstream, or holds it while the upstream is not ready.
    pub(super) async fn hold(&mut self, held: Held) {
        if self.sending() && self.pending.is_empty() {
            let link = self.link.as_ref().expect("sending");
            // Full or closed: hold it.
            if link.outgoing.try_send(held.frame.clone()).is_ok() {
                self.register(held);
                return;
            }
        } else if !self.sending()
            && (self.pending.len() >= self.config.buffer_messages
                || self.pending_bytes + held.frame.len() > self.config.buffer_bytes)
        {
            tracing::warn!(
                "the hold buffer is full ({} messages, {} bytes) while {} is not ready",
                self.pending.len(),
                self.pending_bytes,
                self.describe
            );
            self.reject(
                held,
                BUFFER_FULL,
                "the upstream is not ready and the hold buffer is full",
                "buffer_full",
                None,
            )
            .await;
            return;
        }
        self.push_back(held);
    }

    pub(super) fn push_back(&mut self, held: Held) {
        self.pending_bytes += held.frame.len();
        self.pending.push_back(held);
    }

    /// Puts messages back at the front of the queue, keeping their order.
    pub(super) fn push_front(&mut self, items: Vec<Held>) {
        for held in items.into_iter().rev() {
            self.pending_bytes += held.frame.len();
            self.pending.push_front(held);
        }
    }

    pub(super) fn pop_front(&mut self) -> Option<Held> {
        let held = self.pending.pop_front()?;
        self.pending_bytes -= held.frame.len();
        Some(held)
    }

    /// Answers every request in `held` with an error; notifications are dropped.
    pub(super) async fn reject(
        &mut self,
        held: Held,
        code: i64,
        message: &str,
        reason: &str,
        upstream: Option<Value>,
    ) {
        let data = jsonrpc::data(reason, upstream);
        let ids: Vec<Box<str>> = held.requests().map(Box::from).collect();
        for info in held.peek.infos().iter().filter(|i| !i.is_request()) {
            if let Some(method) = &info.method {
                tracing::warn!("dropped the client's notification {method} ({reason})");
            }
        }
        for id in ids {
            self.error_to(&id, code, message, data.clone()).await;
        }
    }

    /// Counts the requests of a message sent upstream as in flight, taking their ids.
    fn register(&mut self, held: Held) {
        if held.control {
            return;
        }
        let mut changes = Change::read(&held.frame, &held.peek);
        match held.peek {
            Peek::One(info) => self.register_one(info, &mut changes),
            Peek::Batch(infos) => infos
                .into_iter()
                .for_each(|info| self.register_one(info, &mut changes)),
        }
    }

    fn register_one(&mut self, info: Info, changes: &mut Vec<(Box<str>, Change)>) {
        let (true, Some(id)) = (info.is_request(), info.id) else {
            return;
        };
        let sent = if info.method.as_deref() == Some(INITIALIZE) {
            Sent::Initialize
        } else if let Some(at) = changes.iter().position(|(of, _)| *of == id) {
            Sent::Change(changes.swap_remove(at).1)
        } else {
            Sent::Plain
        };
        self.in_flight.insert(id, sent);
    }

    pub(super) fn dispatch(&mut self, permit: mpsc::OwnedPermit<Frame>) {
        if !self.can_dispatch() {
            return;
        }
        let Some(held) = self.pop_front() else {
            return;
        };
        permit.send(held.frame.clone());
        self.register(held);
    }

    /// Errors for held messages older than the restart deadline, while nothing is being sent.
    pub(super) async fn expire_held(&mut self, now: Instant) {
        if self.sending() {
            return;
        }
        let deadline = self.config.restart_deadline;
        if !self
            .pending
            .iter()
            .any(|h| !h.control && h.since + deadline <= now)
        {
            return;
        }
        let mut keep = VecDeque::with_capacity(self.pending.len());
        let mut expired = Vec::new();
        while let Some(held) = self.pop_front() {
            if !held.control && held.since + deadline <= now {
                expired.push(held);
            } else {
                keep.push_back(held);
            }
        }
        self.push_front(keep.into());
        tracing::warn!(
            "{} is still not ready after {deadline:?}; answering {} held messages with errors",
            self.describe,
            expired.len()
        );
        let upstream = serde_json::json!({ "message": format!("{} is not ready", self.describe) });
        for held in expired {
            self.reject(
                held,
                RESTART_DEADLINE,
                "the upstream did not come back before the restart deadline",
                "restart_deadline",
                Some(upstream.clone()),
            )
            .await;
        }
    }

    pub(super) fn drop_control(&mut self) {
        let before = self.pending.len();
        if self.pending.iter().any(|h| h.control) {
            let items: Vec<Held> = std::iter::from_fn(|| self.pop_front()).collect();
            for held in items {
                if held.control {
                    // One of the bridge's own requests never goes now: its answer is not awaited.
                    for id in held.requests() {
                        self.resume.take(id);
                    }
                } else {
                    self.push_back(held);
                }
            }
        }
        debug_assert!(self.pending.len() <= before);
    }
}

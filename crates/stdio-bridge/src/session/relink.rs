//! What the upstream link does to a session: connecting, replaying the client's handshake on a new
//! link, the upstream's messages and failures (a link gone, an expired session, an undelivered frame,
//! an answer that is not MCP), a restart, and the end of the session.

use std::{sync::Arc, time::Duration};

use serde_json::Value;
use tokio::time::Instant;

use super::{Core, Held, Live, Phase, Sent, backoff, resume};
use crate::jsonrpc::Frame;
use crate::{
    Error, UPSTREAM_EXITED, UPSTREAM_PROTOCOL_ERROR, UPSTREAM_UNREACHABLE,
    jsonrpc::{self, CONNECTION_LOST, EXITED_IN_FLIGHT, NOT_MCP, Peek, peek},
    upstream::{Link, UpstreamEvent},
};

impl Core {
    pub(super) fn on_connected(&mut self, result: Result<Link, Error>) {
        self.connecting = None;
        match result {
            Ok(link) => {
                self.counts.connects += 1;
                if self.waiting_logged {
                    tracing::info!("{} is up", self.describe);
                    self.waiting_logged = false;
                } else {
                    tracing::debug!("connected to {}", self.describe);
                }
                self.link = Some(Live {
                    outgoing: link.outgoing,
                    outgoing_closed: false,
                    events: link.events,
                    close: Some(link.close),
                });
                self.pause_until = None;
                self.server_requests.clear();
                self.resume.forget_sent();
                if self.handshake.as_ref().is_some_and(|h| h.answered) {
                    self.start_reinit();
                } else {
                    self.phase = Phase::Ready;
                }
            }
            Err(e) => {
                self.last_connect_error = Some(e.to_string());
                if self.waiting_logged {
                    tracing::debug!("{} is not reachable yet: {e}", self.describe);
                } else {
                    tracing::info!("waiting for {}: {e}", self.describe);
                    self.waiting_logged = true;
                }
                self.next_connect = Some(Instant::now() + backoff(self.attempts));
                self.attempts = self.attempts.saturating_add(1);
            }
        }
    }

    /// Sends the client's original `initialize` (under a bridge id) before anything else.
    fn start_reinit(&mut self) {
        let Some(handshake) = &self.handshake else {
            self.phase = Phase::Ready;
            return;
        };
        self.counts.reinitializations += 1;
        let id: Box<str> = format!("\"calltape-reinit-{}\"", self.counts.reinitializations).into();
        let frame = jsonrpc::with_id(&handshake.initialize, &id);
        self.drop_control();
        self.push_front(vec![Held::control(frame)]);
        tracing::debug!("re-initializing {}", self.describe);
        self.phase = Phase::Reinit { id };
    }

    async fn finish_reinit(&mut self, answer: &Frame) {
        if let Ok(value) = serde_json::from_slice::<Value>(answer)
            && let Some(error) = value.get("error")
        {
            tracing::warn!("the upstream refused the replayed initialize: {error}");
        }
        self.phase = Phase::Ready;
        let Some(handshake) = &self.handshake else {
            return;
        };
        let lists = handshake.list_changed.clone();
        let mut control = Vec::new();
        if handshake.initialized {
            let initialized = jsonrpc::notification(crate::vocab::INITIALIZED);
            control.push(Held::control(initialized));
        }
        // Then what the client set up in its session, before anything of the client's.
        control.extend(self.resume_requests());
        self.push_front(control);
        for method in lists {
            self.send_to_client(jsonrpc::notification(method)).await;
        }
        tracing::info!("{} is ready again", self.describe);
    }

    pub(super) async fn on_upstream(&mut self, event: UpstreamEvent) {
        match event {
            UpstreamEvent::Message(frame) => self.on_upstream_message(frame).await,
            UpstreamEvent::Closed { reason } => self.on_link_gone(&reason).await,
            UpstreamEvent::SessionExpired { frame } => self.on_session_expired(frame).await,
            UpstreamEvent::Undelivered {
                frame,
                maybe_delivered,
                reason,
            } => self.on_undelivered(frame, maybe_delivered, &reason).await,
            UpstreamEvent::ProtocolError {
                frame,
                status,
                message,
            } => self.on_protocol_error(frame, status, &message).await,
        }
    }

    async fn on_upstream_message(&mut self, frame: Frame) {
        let peek = match peek(&frame) {
            Ok(peek) => peek,
            Err(invalid) => {
                tracing::warn!(
                    "the upstream sent a message that is not JSON-RPC ({}); dropped it",
                    invalid.reason()
                );
                return;
            }
        };
        self.attempts = 0;
        for info in peek.infos() {
            let Some(id) = &info.id else { continue };
            if info.is_request() {
                self.server_requests.insert(id.clone());
                continue;
            }
            if let Phase::Reinit { id: reinit } = &self.phase
                && reinit == id
                && matches!(peek, Peek::One(_))
            {
                self.finish_reinit(&frame).await;
                return;
            }
            if matches!(peek, Peek::One(_))
                && let Some(method) = self.resume.take(id)
            {
                self.on_resume_answer(method, &frame);
                return;
            }
            if !self.retried.is_empty() {
                self.retried.remove(id);
            }
            match self.in_flight.remove(id) {
                Some(Sent::Initialize) => self.on_initialize_answer(id, &frame),
                Some(Sent::Change(change)) if resume::is_result(&frame, &peek, id) => {
                    self.resume.apply(change);
                }
                _ => {}
            }
        }
        self.send_to_client(frame).await;
    }

    fn on_initialize_answer(&mut self, id: &str, frame: &Frame) {
        let Some(handshake) = &mut self.handshake else {
            return;
        };
        if handshake.id.as_deref() != Some(id) {
            return;
        }
        let Ok(value) = serde_json::from_slice::<Value>(frame) else {
            return;
        };
        if value.get("result").is_none() {
            // The upstream refused it: nothing to replay.
            return;
        }
        handshake.answered = true;
        handshake.id = None;
        handshake.list_changed = jsonrpc::list_changed(&value["result"]["capabilities"]);
    }

    /// The link ended: in-flight requests get errors, unsent ones wait for the next link.
    pub(super) async fn on_link_gone(&mut self, reason: &str) {
        let Some(mut live) = self.link.take() else {
            return;
        };
        if let Some(close) = live.close.take() {
            tokio::spawn(close());
        }
        tracing::warn!("{} {reason}; restarting it", self.describe);
        self.fail_in_flight(reason, "upstream_exited").await;
        self.phase = Phase::Connecting;
        self.next_connect = Some(Instant::now() + backoff(self.attempts));
        self.attempts = self.attempts.saturating_add(1);
    }

    async fn fail_in_flight(&mut self, reason: &str, code_reason: &str) {
        self.drop_control();
        self.pause_until = None;
        self.server_requests.clear();
        let mut in_flight: Vec<(Box<str>, Sent)> = self.in_flight.drain().collect();
        in_flight.sort_by(|a, b| a.0.cmp(&b.0));
        let upstream = serde_json::json!({ "message": format!("{} {reason}", self.describe) });
        let data = jsonrpc::data(code_reason, Some(upstream));
        for (id, sent) in in_flight {
            let first_handshake = matches!(sent, Sent::Initialize)
                && self
                    .handshake
                    .as_ref()
                    .is_some_and(|h| !h.answered && h.id.as_ref() == Some(&id));
            if let (true, Some(handshake)) = (first_handshake, &self.handshake) {
                // Nothing has happened yet: the client's initialize can safely go to the next process.
                let frame = handshake.initialize.clone();
                let read = peek(&frame).unwrap_or(Peek::Batch(Vec::new()));
                self.push_front(vec![Held::new(frame, read)]);
                continue;
            }
            self.error_to(&id, UPSTREAM_EXITED, EXITED_IN_FLIGHT, data.clone())
                .await;
        }
    }

    pub(super) async fn restart(&mut self) {
        let Some(mut live) = self.link.take() else {
            // Not running: the next start picks up the change anyway.
            return;
        };
        tracing::info!("restarting {}", self.describe);
        self.fail_in_flight("was restarted", "upstream_restarted")
            .await;
        self.phase = Phase::Connecting;
        self.attempts = 0;
        let close = live.close.take();
        drop(live);
        let upstream = Arc::clone(&self.upstream);
        self.next_connect = None;
        self.connecting = Some(Box::pin(async move {
            if let Some(close) = close {
                close().await;
            }
            upstream.connect().await
        }));
    }

    async fn on_session_expired(&mut self, frame: Frame) {
        let Ok(peek) = peek(&frame) else { return };
        if let Phase::Reinit { id } = &self.phase
            && peek.infos().iter().any(|i| i.id.as_deref() == Some(&**id))
        {
            tracing::warn!("the upstream refused the replayed initialize as an expired session");
            self.phase = Phase::Ready;
            return;
        }
        if let Some(id) = self.resume.ours(&peek) {
            // Never a new re-initialization for it, which could loop: the client's next request
            // finds the session gone and brings the replay with it.
            self.forget_resume_request(id, "the session expired");
            return;
        }
        let mut retry = true;
        for info in peek.infos() {
            if let (true, Some(id)) = (info.is_request(), &info.id) {
                self.in_flight.remove(id);
                if !self.retried.insert(id.clone()) {
                    retry = false;
                }
            }
        }
        let notification = peek.infos().iter().all(|i| !i.is_request());
        if notification
            && peek
                .infos()
                .iter()
                .any(|i| i.method.as_deref() == Some(crate::vocab::INITIALIZED))
        {
            // The re-initialization sends it again.
            if !matches!(self.phase, Phase::Reinit { .. }) {
                self.start_reinit();
            }
            return;
        }
        if !retry {
            let held = Held::new(frame, peek);
            self.reject(
                held,
                UPSTREAM_UNREACHABLE,
                "the upstream forgot the session again right after it was re-initialized",
                "session_expired",
                None,
            )
            .await;
            return;
        }
        tracing::info!("{} forgot the session; re-initializing", self.describe);
        let after_control = self.pending.iter().take_while(|h| h.control).count();
        let mut rest: Vec<Held> = self.pending.drain(after_control..).collect();
        let rest_bytes: usize = rest.iter().map(|h| h.frame.len()).sum();
        self.pending_bytes -= rest_bytes;
        rest.insert(0, Held::new(frame, peek));
        for held in rest {
            self.push_back(held);
        }
        if !matches!(self.phase, Phase::Reinit { .. }) {
            self.start_reinit();
        }
    }

    async fn on_undelivered(&mut self, frame: Frame, maybe_delivered: bool, reason: &str) {
        let Ok(peek) = peek(&frame) else { return };
        let pause = Instant::now() + backoff(self.attempts);
        if let Phase::Reinit { id } = &self.phase
            && peek.infos().iter().any(|i| i.id.as_deref() == Some(&**id))
        {
            // Replaying initialize is safe whatever happened to it.
            tracing::debug!("the replayed initialize was not delivered ({reason}); retrying");
            self.push_front(vec![Held::control(frame)]);
            self.pause_until = Some(pause);
            self.attempts = self.attempts.saturating_add(1);
            return;
        }
        if let Some(id) = self.resume.ours(&peek) {
            if maybe_delivered {
                self.forget_resume_request(id, reason);
            } else {
                self.push_front(vec![Held::control_with(frame, peek)]);
                self.pause_until = Some(pause);
                self.attempts = self.attempts.saturating_add(1);
            }
            return;
        }
        for info in peek.infos() {
            if let Some(id) = &info.id {
                self.in_flight.remove(id);
            }
        }
        if maybe_delivered {
            let held = Held::new(frame, peek);
            let upstream = serde_json::json!({ "message": reason });
            self.reject(
                held,
                UPSTREAM_EXITED,
                CONNECTION_LOST,
                "connection_lost",
                Some(upstream),
            )
            .await;
        } else {
            tracing::debug!(
                "{} did not take a message ({reason}); holding it",
                self.describe
            );
            let after_control = self.pending.iter().take_while(|h| h.control).count();
            let mut held = Held::new(frame, peek);
            held.since = Instant::now();
            self.pending_bytes += held.frame.len();
            self.pending.insert(after_control, held);
            self.pause_until = Some(pause);
            self.attempts = self.attempts.saturating_add(1);
        }
    }

    async fn on_protocol_error(&mut self, frame: Frame, status: Option<u16>, message: &str) {
        let Ok(peek) = peek(&frame) else { return };
        tracing::warn!(
            "{} answered with something that is not MCP: {message}",
            self.describe
        );
        if let Phase::Reinit { id } = &self.phase
            && peek.infos().iter().any(|i| i.id.as_deref() == Some(&**id))
        {
            self.phase = Phase::Ready;
            return;
        }
        if let Some(id) = self.resume.ours(&peek) {
            self.forget_resume_request(id, message);
            return;
        }
        for info in peek.infos() {
            if let Some(id) = &info.id {
                self.in_flight.remove(id);
            }
        }
        let upstream = serde_json::json!({ "status": status, "message": message });
        self.reject(
            Held::new(frame, peek),
            UPSTREAM_PROTOCOL_ERROR,
            NOT_MCP,
            "upstream_protocol_error",
            Some(upstream),
        )
        .await;
    }

    /// The client is gone: answer what is left, stop the upstream within the exit budget.
    pub(super) async fn finish(&mut self) {
        let data = jsonrpc::data("session_ended", None);
        let held: Vec<Held> = std::iter::from_fn(|| self.pop_front()).collect();
        let why = match &self.last_connect_error {
            Some(error) if self.link.is_none() => error.clone(),
            _ => format!("{} was not ready", self.describe),
        };
        let upstream = serde_json::json!({ "message": why });
        for held in held.into_iter().filter(|h| !h.control) {
            self.reject(
                held,
                UPSTREAM_UNREACHABLE,
                "the session ended before the upstream could be reached",
                "upstream_unreachable",
                Some(upstream.clone()),
            )
            .await;
        }
        let mut in_flight: Vec<Box<str>> = self.in_flight.drain().map(|(id, _)| id).collect();
        in_flight.sort();
        for id in in_flight {
            self.error_to(
                &id,
                UPSTREAM_EXITED,
                "the session ended before the upstream answered",
                data.clone(),
            )
            .await;
        }
        let eof = self.eof_at.unwrap_or_else(Instant::now);
        let budget = (eof + self.config.exit_budget)
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(100));
        self.connecting = None;
        if let Some(mut live) = self.link.take()
            && let Some(close) = live.close.take()
        {
            drop(live);
            if tokio::time::timeout(budget, close()).await.is_err() {
                tracing::debug!(
                    "{} did not stop in time; leaving it to the kill",
                    self.describe
                );
            }
        }
    }
}

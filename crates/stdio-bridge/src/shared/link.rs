//! [`SharedUpstream`]: the key's shared server as an [`Upstream`] for a [`Bridge`](crate::Bridge).
//!
//! Every `connect` finds the key's server or starts one. Each link speaks Streamable HTTP to it with
//! the one client protocol of [`upstream::http`](crate::upstream::http) (sessions, SSE answers, the GET
//! stream, the 2026-07-28 requests without a session and their mirrored `Mcp-Method` and `Mcp-Name`),
//! carried by a [`ChallengedTransport`]: it sends the bearer token only on a connection whose other end
//! has just proved its identity. Over loopback HTTP every request (the GET stream and the DELETE
//! included) goes on a fresh connection that is challenged first, so a process that takes the port
//! after the server stops gets nothing; over the owner-only socket each connection is challenged once
//! and then reused.
//!
//! When no server can be attached (it cannot be started, it exits before it proves itself, or the
//! process at its endpoint cannot prove itself), the link says why on stderr and answers every request
//! at once with [`unavailable_answer`], instead of holding it until the bridge's restart deadline; it
//! tries again at the first message after a pause that doubles with each failure in a row.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use http::HeaderMap;
use serde_json::{Value, json};
use tokio::{sync::mpsc, time::Instant};

use super::{
    client::ChallengedTransport,
    launch::{Attached, DEFAULT_START_TIMEOUT, Launcher, attach_or_start},
    paths::SharedPaths,
};
use crate::serve::Transport;
use crate::vocab;
use crate::{
    BoxFuture, Error, Frame, FrameReader, FrameWriter, Link, UPSTREAM_UNREACHABLE, Upstream,
    UpstreamEvent,
    jsonrpc::{self, request_ids},
    upstream::http::Core,
};

/// How long a session that could not attach answers every request at once with the reason before it
/// tries again; it doubles with each failure in a row, up to [`MAX_RETRY_AFTER`]. Trying again starts
/// the server again, so a broken server command is not run in a tight loop.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// The longest wait between two attempts to attach.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// The answer to a request while the key's server cannot be attached: an error with the request's own
/// `id`, code [`UPSTREAM_UNREACHABLE`], `data.reason` `"shared_server_unavailable"` and the reason in
/// `data.upstream.message`.
///
/// ```
/// use calltape_stdio_bridge::shared::unavailable_answer;
///
/// let answer = unavailable_answer(&7.into(), "the shared server `k` did not start: it exited with status 2");
/// assert_eq!(answer["id"], 7);
/// assert_eq!(answer["error"]["data"]["reason"], "shared_server_unavailable");
/// ```
pub fn unavailable_answer(id: &Value, reason: &str) -> Value {
    let data = jsonrpc::data(
        "shared_server_unavailable",
        Some(json!({"message": reason})),
    );
    vocab::error_answer_with_data(
        id,
        UPSTREAM_UNREACHABLE,
        "the shared server is unavailable",
        data,
    )
}

/// Answers every request read from `input` with [`unavailable_answer`] on `output` (a batch with a
/// batch), until `input` ends or stays quiet for `quiet`; notifications and lines that are not
/// messages get nothing. For a session that could not attach and exits: its client hears why at
/// once instead of waiting for answers that never come.
pub async fn answer_held_requests<R, W>(input: R, output: W, reason: &str, quiet: Duration)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut reader = FrameReader::new(input);
    let mut writer = FrameWriter::new(output);
    while let Ok(Ok(Some(next))) = tokio::time::timeout(quiet, reader.next()).await {
        let crate::Incoming::Frame(frame) = next else {
            continue;
        };
        let Some(answers) = unavailable_answers(&frame, reason) else {
            continue;
        };
        if writer.write(&answers).await.is_err() || writer.flush().await.is_err() {
            return;
        }
    }
}

/// The key's shared server, reached as an upstream: started when none proves itself.
#[derive(Clone)]
pub struct SharedUpstream {
    paths: SharedPaths,
    transport: Transport,
    launcher: Launcher,
    timeout: Duration,
    first: Arc<Mutex<Option<Attached>>>,
    /// Attach attempts that failed in a row.
    failures: Arc<AtomicU32>,
}

impl std::fmt::Debug for SharedUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedUpstream")
            .field("key", self.paths.key())
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl SharedUpstream {
    /// The shared server of the key `paths` names, over `transport`, started with `launcher` when none
    /// proves itself.
    pub fn new(paths: SharedPaths, transport: Transport, launcher: Launcher) -> Self {
        Self {
            paths,
            transport,
            launcher,
            timeout: DEFAULT_START_TIMEOUT,
            first: Arc::new(Mutex::new(None)),
            failures: Arc::new(AtomicU32::new(0)),
        }
    }

    /// How long to wait for a server to prove itself (default 60 s).
    #[must_use]
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Finds the key's server or starts one. The next [`connect`](Upstream::connect) uses this server
    /// without asking again.
    pub async fn attach(&self) -> Result<Attached, Error> {
        let attached =
            attach_or_start(&self.paths, self.transport, &self.launcher, self.timeout).await?;
        *self
            .first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(attached.clone());
        Ok(attached)
    }

    async fn link(&self) -> Link {
        let cached = self
            .first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let attached = match cached {
            Some(attached) => Ok(attached),
            None => attach_or_start(&self.paths, self.transport, &self.launcher, self.timeout)
                .await
                .map_err(|e| e.to_string()),
        };
        let transport = attached.and_then(|attached| {
            tracing::debug!(
                pid = attached.pid,
                "attached to the shared server `{}` at {}",
                self.paths.key(),
                attached.endpoint
            );
            ChallengedTransport::new(attached)
        });
        let link = match transport {
            Ok(transport) => Arc::new(Core::new(transport, HeaderMap::new()))
                .connect()
                .await
                .map_err(|e| e.to_string()),
            Err(reason) => Err(reason),
        };
        match link {
            Ok(link) => {
                self.failures.store(0, Ordering::Relaxed);
                link
            }
            Err(reason) => {
                let failures = self.failures.fetch_add(1, Ordering::Relaxed).min(5);
                let retry_after = (RETRY_AFTER * (1 << failures)).min(MAX_RETRY_AFTER);
                tracing::error!(
                    "cannot attach to the shared server `{}`: {reason}; answering requests with this error, and trying again at the first one after {} s",
                    self.paths.key(),
                    retry_after.as_secs()
                );
                unavailable_link(reason, retry_after)
            }
        }
    }
}

impl Upstream for SharedUpstream {
    fn describe(&self) -> String {
        format!("shared server `{}`", self.paths.key())
    }

    /// Finds the key's server or starts one. This never fails: when no server can be attached, the
    /// link answers every request at once with [`unavailable_answer`] (and says why on stderr), and
    /// closes at the first message after a pause, so that the bridge holds it and tries again.
    fn connect(&self) -> BoxFuture<'_, Result<Link, Error>> {
        Box::pin(async move { Ok(self.link().await) })
    }
}

/// The answers of the requests in `frame` (one message or a batch) while no server can be attached.
fn unavailable_answers(frame: &[u8], reason: &str) -> Option<Frame> {
    let message = serde_json::from_slice::<Value>(frame).ok()?;
    let mut answers: Vec<Value> = request_ids(&message)
        .into_iter()
        .map(|id| unavailable_answer(id, reason))
        .collect();
    let answers = match message {
        Value::Array(_) if !answers.is_empty() => Value::Array(answers),
        Value::Object(_) if answers.len() == 1 => answers.remove(0),
        _ => return None,
    };
    Some(jsonrpc::to_frame(&answers))
}

/// A link for a session that could not attach: it answers every request at once with `reason`, and
/// the first message that comes after `retry_after` is handed back undelivered (the bridge holds it)
/// and the link closes, so that the bridge attaches again.
fn unavailable_link(reason: String, retry_after: Duration) -> Link {
    let (outgoing, mut outgoing_rx) = mpsc::channel::<Frame>(64);
    let (events_tx, events) = mpsc::channel(64);
    let until = Instant::now() + retry_after;
    let task = tokio::spawn(async move {
        while let Some(frame) = outgoing_rx.recv().await {
            if Instant::now() < until {
                if let Some(answers) = unavailable_answers(&frame, &reason)
                    && events_tx
                        .send(UpstreamEvent::Message(answers))
                        .await
                        .is_err()
                {
                    return;
                }
                continue;
            }
            let mut frames = vec![frame];
            outgoing_rx.close();
            while let Ok(frame) = outgoing_rx.try_recv() {
                frames.push(frame);
            }
            // The bridge puts each one back at the front of what it holds: last first keeps the order.
            for frame in frames.into_iter().rev() {
                let undelivered = UpstreamEvent::Undelivered {
                    frame,
                    maybe_delivered: false,
                    reason: reason.clone(),
                };
                if events_tx.send(undelivered).await.is_err() {
                    return;
                }
            }
            let _ = events_tx
                .send(UpstreamEvent::Closed {
                    reason: "could not be attached; attaching again".to_owned(),
                })
                .await;
            return;
        }
    });
    Link {
        outgoing,
        events,
        close: Box::new(move || {
            Box::pin(async move {
                task.abort();
            })
        }),
    }
}

#[cfg(test)]
mod tests;

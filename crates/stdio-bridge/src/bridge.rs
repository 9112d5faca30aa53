//! [`Bridge`]: a stdio MCP session in front of an [`Upstream`].

use std::{sync::Arc, time::Duration};

use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::mpsc,
};

use crate::{
    Error,
    jsonrpc::DEFAULT_MAX_FRAME,
    session::{self, Config},
    tap::{Tap, TapSender},
    upstream::{BoxFuture, Upstream},
};

/// Messages held while the upstream starts, by default.
pub const DEFAULT_BUFFER_MESSAGES: usize = 256;
/// Bytes held while the upstream starts, by default (64 MiB).
pub const DEFAULT_BUFFER_BYTES: usize = 64 * 1024 * 1024;
/// How long a held request waits for the upstream before it gets an error, by default.
pub const DEFAULT_RESTART_DEADLINE: Duration = Duration::from_secs(30);
/// Frames queued for a [`Tap`] before further ones are dropped, by default; the queue also holds at
/// most [`TAP_QUEUE_BYTES`](crate::TAP_QUEUE_BYTES) of them.
pub const DEFAULT_TAP_CAPACITY: usize = 16_384;

/// A stdio MCP session that survives restarts of its upstream.
///
/// Build one with [`Bridge::builder`], then [`run`](Bridge::run) it over the client's stdin and stdout.
pub struct Bridge {
    upstream: Arc<dyn Upstream>,
    config: Config,
    tap: Option<(std::sync::Mutex<Box<dyn Tap>>, usize)>,
    restart_tx: mpsc::Sender<()>,
    restart_rx: mpsc::Receiver<()>,
    shutdown: Option<std::sync::Mutex<BoxFuture<'static, ()>>>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("upstream", &self.upstream.describe())
            .field("config", &self.config)
            .field("tap", &self.tap.is_some())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Bridge`].
#[must_use]
pub struct BridgeBuilder {
    upstream: Option<Arc<dyn Upstream>>,
    config: Config,
    tap: Option<(Box<dyn Tap>, usize)>,
    shutdown: Option<BoxFuture<'static, ()>>,
}

impl std::fmt::Debug for BridgeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeBuilder")
            .field("upstream", &self.upstream.as_ref().map(|u| u.describe()))
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Asks a running [`Bridge`] to restart its upstream (stop it, start it again, re-initialize it and tell
/// the client its lists changed). Cheap to clone; requests made while one is pending are merged.
#[derive(Debug, Clone)]
pub struct RestartHandle {
    tx: mpsc::Sender<()>,
}

impl RestartHandle {
    /// Requests a restart. Does nothing once the bridge has ended.
    pub fn restart(&self) {
        // Full: a restart is already pending, which covers this one.
        let _ = self.tx.try_send(());
    }
}

/// What a finished session counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// How many times the upstream was connected (started).
    pub connects: u64,
    /// How many times the client's `initialize` was replayed to a restarted upstream.
    pub reinitializations: u64,
    /// Frames the tap missed because its queue was full.
    pub tap_dropped: u64,
}

impl Bridge {
    /// A builder with the defaults: hold 256 messages / 64 MiB, 30 s restart deadline, 16 MiB frames.
    pub fn builder() -> BridgeBuilder {
        BridgeBuilder {
            upstream: None,
            config: Config {
                buffer_messages: DEFAULT_BUFFER_MESSAGES,
                buffer_bytes: DEFAULT_BUFFER_BYTES,
                restart_deadline: DEFAULT_RESTART_DEADLINE,
                max_frame: DEFAULT_MAX_FRAME,
                drain: Duration::from_secs(1),
                exit_budget: Duration::from_millis(1900),
            },
            tap: None,
            shutdown: None,
        }
    }

    /// A handle that restarts the upstream while the bridge runs (a file watcher holds one).
    pub fn restart_handle(&self) -> RestartHandle {
        RestartHandle {
            tx: self.restart_tx.clone(),
        }
    }

    /// Runs the session until `stdin` ends: answers still in flight are awaited for up to 1 s, then the
    /// upstream is stopped. Returns within about 2 s of the end of `stdin`, plus the time a tap takes to
    /// see the frames still queued for it: it has seen the last one, and been dropped, when this returns.
    ///
    /// Only JSON-RPC is written to `stdout`; logs go through `tracing`.
    pub async fn run<R, W>(self, stdin: R, stdout: W) -> Result<Summary, Error>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let Self {
            upstream,
            config,
            tap,
            restart_tx,
            restart_rx,
            shutdown,
        } = self;
        let shutdown = shutdown.map(|s| {
            s.into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        });
        // Only the handles given out keep the restart channel open.
        drop(restart_tx);
        let (tap, tap_thread) = match tap {
            Some((tap, capacity)) => {
                let (sender, thread) = TapSender::start(
                    tap.into_inner()
                        .unwrap_or_else(std::sync::PoisonError::into_inner),
                    capacity,
                )
                .map_err(|e| Error::io("cannot start the tap thread", e))?;
                (Some(sender), Some(thread))
            }
            None => (None, None),
        };
        let counts = session::run(
            upstream,
            config,
            stdin,
            stdout,
            restart_rx,
            shutdown,
            tap.clone(),
        )
        .await;
        let tap_dropped = tap.map_or(0, |t| t.dropped());
        // The session's senders are gone with it, and this one was dropped just above: the thread
        // shows the tap the rest of the queue and ends.
        if let Some(thread) = tap_thread {
            thread.join().await;
        }
        Ok(Summary {
            connects: counts.connects,
            reinitializations: counts.reinitializations,
            tap_dropped,
        })
    }
}

impl BridgeBuilder {
    /// Where client messages go (required).
    pub fn upstream(mut self, upstream: impl Upstream) -> Self {
        self.upstream = Some(Arc::new(upstream));
        self
    }

    /// Like [`upstream`](Self::upstream), for an upstream already shared or chosen at run time.
    pub fn upstream_arc(mut self, upstream: Arc<dyn Upstream>) -> Self {
        self.upstream = Some(upstream);
        self
    }

    /// How many client messages are held while the upstream starts or restarts (default 256).
    pub fn buffer_messages(mut self, messages: usize) -> Self {
        self.config.buffer_messages = messages;
        self
    }

    /// How many bytes of client messages are held while the upstream starts (default 64 MiB).
    pub fn buffer_bytes(mut self, bytes: usize) -> Self {
        self.config.buffer_bytes = bytes;
        self
    }

    /// How long a held request waits for the upstream before it gets an error (default 30 s). The
    /// bridge keeps trying in the background after that.
    pub fn restart_deadline(mut self, deadline: Duration) -> Self {
        self.config.restart_deadline = deadline;
        self
    }

    /// Client lines longer than this are discarded unread and answered with `-32700` (default 16 MiB).
    pub fn max_frame(mut self, bytes: usize) -> Self {
        self.config.max_frame = bytes;
        self
    }

    /// Gives every frame in both directions to `tap`, on a thread of its own, through a queue of
    /// [`DEFAULT_TAP_CAPACITY`] frames.
    pub fn tap(self, tap: impl Tap) -> Self {
        self.tap_with_capacity(tap, DEFAULT_TAP_CAPACITY)
    }

    /// Like [`tap`](Self::tap) with a queue of `capacity` frames; frames beyond it are dropped and counted.
    pub fn tap_with_capacity(mut self, tap: impl Tap, capacity: usize) -> Self {
        self.tap = Some((Box::new(tap), capacity));
        self
    }

    /// Ends the session when `signal` completes, as if stdin had ended: answers in flight are awaited
    /// for up to 1 s, then the upstream is stopped. The `calltape` command passes SIGTERM and SIGINT.
    pub fn shutdown_on(mut self, signal: impl Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown = Some(Box::pin(signal));
        self
    }

    /// Checks the settings and builds the bridge.
    pub fn build(self) -> Result<Bridge, Error> {
        let upstream = self
            .upstream
            .ok_or_else(|| Error::config("no upstream: call BridgeBuilder::upstream"))?;
        if self.config.buffer_messages == 0 {
            return Err(Error::config(
                "the hold buffer must hold at least one message",
            ));
        }
        if self.config.max_frame == 0 {
            return Err(Error::config("the frame limit must be at least one byte"));
        }
        let (restart_tx, restart_rx) = mpsc::channel(1);
        Ok(Bridge {
            upstream,
            config: self.config,
            tap: self
                .tap
                .map(|(tap, capacity)| (std::sync::Mutex::new(tap), capacity)),
            restart_tx,
            restart_rx,
            shutdown: self.shutdown.map(std::sync::Mutex::new),
        })
    }
}

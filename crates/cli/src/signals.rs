//! The signals that end a command, listened for in one place: SIGTERM, SIGINT and SIGHUP.

use std::fmt;

use tokio::signal::unix::{SignalKind, signal};

/// A signal that ends a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// SIGTERM: asked to stop.
    Term,
    /// SIGINT: Ctrl-C at the terminal, which the terminal sends to the whole process group.
    Int,
    /// SIGHUP: the terminal went away.
    Hup,
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Term => "SIGTERM",
            Self::Int => "SIGINT",
            Self::Hup => "SIGHUP",
        })
    }
}

/// The three signals, caught from the moment this is made (inside the Tokio runtime).
pub(crate) struct Signals {
    streams: Option<[tokio::signal::unix::Signal; 3]>,
}

impl Signals {
    /// Catches SIGTERM, SIGINT and SIGHUP from now on. When they cannot be caught (said at debug
    /// level), [`next`](Self::next) never returns and the signals keep their default action.
    pub(crate) fn new() -> Self {
        let catch = |kind| signal(kind).map_err(|e| tracing::debug!("cannot catch signals: {e}"));
        let streams = (|| {
            Some([
                catch(SignalKind::terminate()).ok()?,
                catch(SignalKind::interrupt()).ok()?,
                catch(SignalKind::hangup()).ok()?,
            ])
        })();
        Self { streams }
    }

    /// The next of the three signals to arrive.
    pub(crate) async fn next(&mut self) -> Signal {
        let Some([term, int, hup]) = &mut self.streams else {
            return std::future::pending().await;
        };
        tokio::select! {
            Some(()) = term.recv() => Signal::Term,
            Some(()) = int.recv() => Signal::Int,
            Some(()) = hup.recv() => Signal::Hup,
            else => std::future::pending().await,
        }
    }
}

/// Returns at the first of SIGTERM, SIGINT and SIGHUP, saying which and `what` it does: what
/// ends a bridge, a server or a proxy without a command.
pub(crate) async fn termination(what: &str) {
    let signal = Signals::new().next().await;
    tracing::info!("{signal}: {what}");
}

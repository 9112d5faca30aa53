//! The signals that end a command, listened for in one place: SIGTERM, SIGINT and SIGHUP on Unix;
//! Ctrl-Break, Ctrl-C and the console closing on Windows.

use std::fmt;

/// A signal that ends a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// SIGTERM (Ctrl-Break on Windows): asked to stop.
    Term,
    /// SIGINT (Ctrl-C): Ctrl-C at the terminal, which the terminal sends to the whole process group.
    Int,
    /// SIGHUP (the console closing on Windows): the terminal went away.
    Hup,
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match (self, cfg!(windows)) {
            (Self::Term, false) => "SIGTERM",
            (Self::Int, false) => "SIGINT",
            (Self::Hup, false) => "SIGHUP",
            (Self::Term, true) => "Ctrl-Break",
            (Self::Int, true) => "Ctrl-C",
            (Self::Hup, true) => "console closed",
        })
    }
}

#[cfg(unix)]
type Streams = [tokio::signal::unix::Signal; 3];

#[cfg(windows)]
type Streams = (
    tokio::signal::windows::CtrlBreak,
    tokio::signal::windows::CtrlC,
    tokio::signal::windows::CtrlClose,
);

/// The three signals, caught from the moment this is made (inside the Tokio runtime).
pub(crate) struct Signals {
    streams: Option<Streams>,
}

impl Signals {
    /// Catches the three signals from now on. When they cannot be caught (said at debug level),
    /// [`next`](Self::next) never returns and the signals keep their default action.
    pub(crate) fn new() -> Self {
        Self { streams: catch() }
    }

    /// The next of the three signals to arrive.
    pub(crate) async fn next(&mut self) -> Signal {
        let Some(streams) = &mut self.streams else {
            return std::future::pending().await;
        };
        #[cfg(unix)]
        let [term, int, hup] = streams;
        #[cfg(windows)]
        let (term, int, hup) = streams;
        tokio::select! {
            Some(()) = term.recv() => Signal::Term,
            Some(()) = int.recv() => Signal::Int,
            Some(()) = hup.recv() => Signal::Hup,
            else => std::future::pending().await,
        }
    }
}

#[cfg(unix)]
fn catch() -> Option<Streams> {
    use tokio::signal::unix::{SignalKind, signal};
    let catch = |kind| signal(kind).map_err(|e| tracing::debug!("cannot catch signals: {e}"));
    Some([
        catch(SignalKind::terminate()).ok()?,
        catch(SignalKind::interrupt()).ok()?,
        catch(SignalKind::hangup()).ok()?,
    ])
}

#[cfg(windows)]
fn catch() -> Option<Streams> {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
    let failed = |e: std::io::Error| tracing::debug!("cannot catch console events: {e}");
    Some((
        ctrl_break().map_err(failed).ok()?,
        ctrl_c().map_err(failed).ok()?,
        ctrl_close().map_err(failed).ok()?,
    ))
}

/// Returns at the first of the three signals, saying which and `what` it does: what ends a bridge,
/// a server or a proxy without a command.
pub(crate) async fn termination(what: &str) {
    let signal = Signals::new().next().await;
    tracing::info!("{signal}: {what}");
}

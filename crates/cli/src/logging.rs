//! Logging to stderr, filtered by `CALLTAPE_LOG` or the verbosity flags, and everything else
//! calltape says there.
//!
//! Every line calltape writes on stderr (its log, its errors, a child's stderr when it goes to a
//! file) passes one writer: calltape-redact's `RedactingWriter`, which redacts it by the text rules,
//! hides the run's known secret values ([`known`]: filled values, header and `--auth` keys, the
//! values requests held under credential names), and passes each line through the final gate last;
//! a line the gate stops is not written but named, and [`refused_lines`] counts it.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

use calltape_redact::{Gate, KnownSecrets, RedactingWriter, Redactor, RefusedLines};
use calltape_stdio_bridge::{SharedWriter, Stderr};
use tracing_subscriber::EnvFilter;

/// Whether coloured output is wanted on the given stream: a terminal, and `NO_COLOR` unset or empty.
pub(crate) fn color_enabled(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The run's known secret values: commands add what they learn (filled values, header and `--auth`
/// keys), recorders what requests held under credential names. Hidden in every stderr line, and
/// watched by [`gate`].
pub(crate) fn known() -> &'static KnownSecrets {
    static KNOWN: OnceLock<KnownSecrets> = OnceLock::new();
    KNOWN.get_or_init(KnownSecrets::new)
}

/// Adds a secret value of the run under `name` (a field, a header, a variable: never the value),
/// when it is at least as long as the gate looks for: a shorter one would hide ordinary words in
/// every log line.
pub(crate) fn learn(name: &str, value: &str) {
    if value.len() >= calltape_redact::MIN_GATED {
        known().add(name, value);
    }
}

/// The final gate of this run: provider tokens and the run's known values.
pub(crate) fn gate() -> Gate {
    Gate::new().watch(known())
}

fn refused() -> &'static RefusedLines {
    static REFUSED: OnceLock<RefusedLines> = OnceLock::new();
    REFUSED.get_or_init(RefusedLines::new)
}

/// How many stderr lines the final gate refused in this run.
pub(crate) fn refused_lines() -> u64 {
    refused().count()
}

/// The writer every line calltape writes on stderr goes through.
pub(crate) fn stderr_writer() -> RedactingWriter<StderrOut> {
    RedactingWriter::new(Redactor::new(), StderrOut)
        .hiding(known().clone())
        .gated(gate(), refused().clone())
}

/// This process's stderr: on Unix file descriptor 2 (which `bridge --log` points at its log file);
/// on Windows the log file `log_to` set, else the standard error handle.
#[derive(Debug)]
pub(crate) struct StderrOut;

#[cfg(windows)]
static LOG_FILE: OnceLock<std::fs::File> = OnceLock::new();

/// From now on, every line [`stderr_writer`] writes goes to `file` (on Windows, where the standard
/// error handle is not replaced, `bridge --log`). A second call keeps the first file.
#[cfg(windows)]
pub(crate) fn log_to(file: std::fs::File) {
    let _ = LOG_FILE.set(file);
}

#[allow(
    clippy::disallowed_methods,
    reason = "the one place stderr is opened for writing"
)]
impl Write for StderrOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        #[cfg(windows)]
        if let Some(mut file) = LOG_FILE.get() {
            return file.write(buf);
        }
        std::io::stderr().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        #[cfg(windows)]
        if let Some(mut file) = LOG_FILE.get() {
            return file.flush();
        }
        std::io::stderr().flush()
    }
}

/// Installs the global subscriber. Logs never go to stdout: in bridge modes stdout carries the protocol.
/// Every line passes through [`stderr_writer`] on its way to stderr.
pub(crate) fn init(verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "info",
        (false, 1) => "debug",
        (false, _) => "trace",
    };
    let filter = std::env::var("CALLTAPE_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .and_then(|s| EnvFilter::try_new(s).ok())
        .unwrap_or_else(|| EnvFilter::new(default));
    // calltape's own lines are redacted too: one that quotes a child's command line or a peer's
    // message could hold a credential, and stderr may be a log file (`bridge --log`, `server.log`).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(stderr_writer)
        .with_target(false)
        .without_time()
        .with_ansi(color_enabled(stderr_is_terminal()))
        .try_init();
}

/// Whether stderr is a terminal (for color and progress; what is written goes through
/// [`stderr_writer`]).
#[allow(clippy::disallowed_methods, reason = "asks, writes nothing")]
pub(crate) fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// A child's stderr, redacted line by line on its way to this process's stderr: for a stderr that is a
/// log file (`bridge --log`, a shared server's `server.log`), where a server that logs its credentials
/// would otherwise put them on disk.
pub(crate) fn redacted_child_stderr() -> Stderr {
    Stderr::Writer(SharedWriter::new(stderr_writer()))
}

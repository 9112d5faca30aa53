//! Logging to stderr, filtered by `CALLTAPE_LOG` or the verbosity flags.

use std::io::IsTerminal;

use calltape_redact::{RedactingWriter, Redactor};
use calltape_stdio_bridge::{SharedWriter, Stderr};
use tracing_subscriber::EnvFilter;

/// Whether coloured output is wanted on the given stream: a terminal, and `NO_COLOR` unset or empty.
pub(crate) fn color_enabled(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Installs the global subscriber. Logs never go to stdout: in bridge modes stdout carries the protocol.
/// Every line passes through calltape-redact's `RedactingWriter` on its way to stderr.
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
    let redactor = Redactor::new();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(move || RedactingWriter::new(redactor.clone(), std::io::stderr()))
        .with_target(false)
        .without_time()
        .with_ansi(color_enabled(std::io::stderr().is_terminal()))
        .try_init();
}

/// A child's stderr, redacted line by line on its way to this process's stderr: for a stderr that is a
/// log file (`bridge --log`, a shared server's `server.log`), where a server that logs its credentials
/// would otherwise put them on disk.
pub(crate) fn redacted_child_stderr() -> Stderr {
    Stderr::Writer(SharedWriter::new(RedactingWriter::new(
        Redactor::new(),
        std::io::stderr(),
    )))
}

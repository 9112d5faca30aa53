//! What commands write to stdout and stderr themselves (reports, listings, the demo's steps).
//!
//! A reader that goes away (`calltape demo | head`) ends the writing quietly, as `rg` does: the
//! command writes nothing more to stdout, says nothing about it, and ends with its own status.
//! Any other failure to write stdout is said once, and the command then exits 2. `println!` would
//! panic on either, so the commands write through [`outln!`] and [`errln!`] instead.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use calltape_recorder::terminal::{LineBreaks, escape_controls};

use crate::error::Error;

/// stdout's reader went away, or writing it failed: nothing more is written to it.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// Writing stdout failed otherwise than on a closed pipe.
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// Writes to stdout, unless it is closed.
pub(crate) fn stdout(args: fmt::Arguments<'_>) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = io::stdout().lock().write_fmt(args) {
        stop(e);
    }
}

/// Flushes stdout, unless it is closed.
pub(crate) fn flush_stdout() {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = io::stdout().lock().flush() {
        stop(e);
    }
}

/// Whether writing stdout failed otherwise than on a closed pipe (it was said then).
pub(crate) fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}

fn stop(e: io::Error) {
    if STDOUT_CLOSED.swap(true, Ordering::Relaxed) || e.kind() == io::ErrorKind::BrokenPipe {
        return;
    }
    STDOUT_FAILED.store(true, Ordering::Relaxed);
    Error::Stdout(e).report();
}

/// A path or a recorded string on a line the CLI writes itself, its control characters escaped
/// (the libraries' reports escape their own).
pub(crate) fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    escape_controls(text, LineBreaks::Escape)
}

/// Writes to stderr through the one writer every stderr line passes (redacted, the run's known
/// values hidden, the final gate last: `logging::stderr_writer`); a stderr that cannot be written is
/// not written.
pub(crate) fn stderr(args: fmt::Arguments<'_>) {
    let mut stderr = crate::logging::stderr_writer();
    let _ = stderr.write_fmt(args);
    let _ = stderr.flush();
}

/// `println!` to stdout, quiet on a closed pipe (see the module).
macro_rules! outln {
    () => {
        $crate::output::stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` to stdout, quiet on a closed pipe (see the module).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::stdout(format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that never panics.
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::output::stderr(format_args!($($arg)*))
    };
}

pub(crate) use {err, errln, out, outln};

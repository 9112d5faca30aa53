//! `calltape redact`: redact text, JSON or JSONL from files or stdin to stdout.
//!
//! Every byte goes through calltape-redact's `RedactingWriter`, which is what the library's users
//! get: a private key block, an XML element or a YAML block over several lines is held until it
//! closes and redacted whole. The command only reads the inputs and says what failed.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::PathBuf;

use calltape_redact::{RedactingWriter, Redactor};
use clap::Args;

use crate::error::{Error, Outcome};
use crate::exit;

/// The longest line read whole (as JSON when it is JSON); a longer one is redacted as text in
/// chunks of this size, each read with the end of the one before.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// How many bytes of lines are held while a construct that spans lines is open: the bound
/// `redact_text` reads by, so that a text whose lines are within it comes out of the command as
/// it comes out of the library.
const MAX_HELD: usize = 64 * 1024;

const EXAMPLES: &str = "\
Examples:
  calltape redact server.log > server.redacted.log
  kubectl logs my-pod | calltape redact
  calltape redact ~/.ssh/id_ed25519 config.yaml
  calltape redact --keep pageToken --redact x-tenant calls.jsonl";

/// Redact credentials from text, JSON or JSONL files (or stdin) and write the result to stdout.
///
/// Each line that parses as JSON is redacted as JSON and stays one line of valid JSON; the lines
/// between are redacted as text, together: a private key block, an XML element or a YAML block
/// over several lines is held until it closes (up to 64 KiB of lines) and goes whole. Each file is
/// read on its own, streamed in bounded memory, so input of any size works; a line is read whole
/// up to 16 MiB, and a longer one in pieces with the context carried across.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct RedactArgs {
    /// Files to read; stdin when none is given or for `-`.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,

    #[command(flatten)]
    pub(crate) names: crate::args::RedactNames,
}

pub(crate) fn run(args: RedactArgs) -> Outcome {
    let redactor = Redactor::builder()
        .keep_names(args.names.keep)
        .redact_names(args.names.redact)
        .build()?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(256 * 1024, stdout.lock());

    let files = if args.files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.files
    };
    let total = files.len();
    let mut failed = 0;
    let mut warned_utf8 = false;
    for path in files {
        // A writer per file: a construct one file leaves open does not swallow the next.
        let mut writer = RedactingWriter::new(redactor.clone(), &mut out)
            .with_line_limit(MAX_LINE)
            .with_hold_limit(MAX_HELD);
        let result = if path.as_os_str() == "-" {
            copy(io::stdin().lock(), &mut writer)
        } else {
            File::open(&path)
                .map_err(StreamError::Read)
                .and_then(|file| copy(file, &mut writer))
        };
        // What the file left held (a last line without its line break, a block never closed),
        // also after a failed read: the lines read before it.
        let flushed = writer.flush().map_err(StreamError::Write);
        let result = result.and(flushed);
        if writer.replaced_invalid_utf8() && !warned_utf8 {
            warned_utf8 = true;
            tracing::warn!("input is not valid UTF-8; invalid bytes are written as U+FFFD");
        }
        match result {
            Ok(()) => {}
            // One unreadable file does not stop the others: it is said, and the exit says it.
            Err(StreamError::Read(source)) => {
                Error::Read { path, source }.report();
                failed += 1;
            }
            // The reader went away (`| head`): nothing more to write, and nothing to say.
            Err(StreamError::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => break,
            Err(StreamError::Write(e)) => return Err(Error::Stdout(e)),
        }
    }
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => return Err(Error::Stdout(e)),
        _ => {}
    }
    match failed {
        0 => Ok(exit::OK),
        failed => Err(Error::Partly {
            failed,
            total,
            what: "inputs could not be read",
        }),
    }
}

enum StreamError {
    Read(io::Error),
    Write(io::Error),
}

/// Copies `input` into `writer`, telling a failed read from a failed write.
fn copy(mut input: impl Read, writer: &mut impl Write) -> Result<(), StreamError> {
    let mut buf = vec![0; 256 * 1024];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(StreamError::Read(e)),
        };
        writer.write_all(&buf[..n]).map_err(StreamError::Write)?;
    }
}

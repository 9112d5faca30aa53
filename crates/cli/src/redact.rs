//! `calltape redact`: redact text, JSON or JSONL from files or stdin to stdout.
//!
//! Every input goes through calltape-redact's `redact_stream`, which is what the library's users
//! get: a private key block, an XML element or a YAML block over several lines is held until it
//! closes and redacted whole. The command only opens the inputs and says what failed.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

use calltape_redact::{Redactor, redact_stream};
use clap::Args;

use crate::error::{Error, Outcome};
use crate::exit;

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
        // A stream per file: a construct one file leaves open does not swallow the next.
        let streamed = if path.as_os_str() == "-" {
            redact_stream(&redactor, io::stdin().lock(), &mut out)
        } else {
            match File::open(&path) {
                Ok(file) => redact_stream(&redactor, file, &mut out),
                Err(source) => {
                    Error::Read { path, source }.report();
                    failed += 1;
                    continue;
                }
            }
        };
        match streamed {
            Ok(streamed) => {
                if streamed.replaced_invalid_utf8 && !warned_utf8 {
                    warned_utf8 = true;
                    tracing::warn!("input is not valid UTF-8; invalid bytes are written as U+FFFD");
                }
                // One unreadable file does not stop the others: it is said, and the exit says it.
                if let Some(source) = streamed.read_error {
                    Error::Read { path, source }.report();
                    failed += 1;
                }
            }
            // The reader went away (`| head`): nothing more to write, and nothing to say.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => break,
            Err(e) => return Err(Error::Stdout(e)),
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

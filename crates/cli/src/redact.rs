//! `calltape redact`: redact text, JSON or JSONL from files or stdin to stdout.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::PathBuf;

use calltape_redact::{RedactingWriter, Redactor};
use clap::Args;

use crate::error::{Error, Outcome};
use crate::exit;

/// The longest line redacted whole (as JSON when it is JSON); a longer one is redacted as text in
/// chunks of at most this size, with the context carried from one chunk to the next.
const MAX_LINE: usize = 16 * 1024 * 1024;

const EXAMPLES: &str = "\
Examples:
  calltape redact server.log > server.redacted.log
  kubectl logs my-pod | calltape redact
  calltape redact --keep pageToken --redact x-tenant calls.jsonl";

/// Redact credentials from text, JSON or JSONL files (or stdin) and write the result to stdout.
///
/// Each line that parses as JSON is redacted as JSON and stays one line of valid JSON; any other line is
/// redacted as text. Files are streamed line by line, so input of any size works in bounded memory.
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
    let mut stream = LineRedactor::new(&redactor);

    let files = if args.files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.files
    };
    let total = files.len();
    let mut failed = 0;
    for path in files {
        let result = if path.as_os_str() == "-" {
            stream.run(io::stdin().lock(), &mut out)
        } else {
            File::open(&path)
                .map_err(StreamError::Read)
                .and_then(|file| stream.run(file, &mut out))
        };
        match result {
            Ok(()) => {}
            // One unreadable file does not stop the others: it is said, and the exit says it.
            Err(StreamError::Read(source)) => {
                Error::Read { path, source }.report();
                failed += 1;
            }
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

/// Streams lines through a redactor, holding at most [`MAX_LINE`] bytes of one line at a time.
struct LineRedactor<'r> {
    redactor: &'r Redactor,
    buf: Vec<u8>,
    warned_utf8: bool,
}

impl<'r> LineRedactor<'r> {
    fn new(redactor: &'r Redactor) -> Self {
        LineRedactor {
            redactor,
            buf: Vec::new(),
            warned_utf8: false,
        }
    }

    fn run(&mut self, input: impl Read, out: &mut impl Write) -> Result<(), StreamError> {
        let mut reader = BufReader::with_capacity(256 * 1024, input);
        loop {
            self.buf.clear();
            // Read up to MAX_LINE bytes or the end of the line, whichever comes first.
            let limit = (MAX_LINE as u64) + 1;
            let n = (&mut reader)
                .take(limit)
                .read_until(b'\n', &mut self.buf)
                .map_err(StreamError::Read)?;
            if n == 0 {
                return Ok(());
            }
            let ended = self.buf.last() == Some(&b'\n');
            if ended {
                self.buf.pop();
            }
            if ended || self.buf.len() <= MAX_LINE {
                self.write_line(out, ended)?;
            } else {
                self.write_long_line(&mut reader, out)?;
            }
        }
    }

    fn text(&mut self) -> String {
        match String::from_utf8(std::mem::take(&mut self.buf)) {
            Ok(s) => s,
            Err(e) => {
                if !self.warned_utf8 {
                    self.warned_utf8 = true;
                    tracing::warn!("input is not valid UTF-8; invalid bytes are written as U+FFFD");
                }
                String::from_utf8_lossy(e.as_bytes()).into_owned()
            }
        }
    }

    fn write_line(&mut self, out: &mut impl Write, newline: bool) -> Result<(), StreamError> {
        let mut text = self.text();
        let cr = text.ends_with('\r');
        if cr {
            text.pop();
        }
        let redacted = self.redactor.redact_json_text(&text);
        out.write_all(redacted.as_bytes())
            .map_err(StreamError::Write)?;
        if cr {
            out.write_all(b"\r").map_err(StreamError::Write)?;
        }
        if newline {
            out.write_all(b"\n").map_err(StreamError::Write)?;
        }
        self.buf = text.into_bytes();
        Ok(())
    }

    /// A line longer than [`MAX_LINE`] (its first `MAX_LINE + 1` bytes are in `self.buf`): redacted as
    /// text by calltape-redact's `RedactingWriter`, in chunks of at most [`MAX_LINE`] bytes, each scanned
    /// with the end of the one before, so that a name and its value, `Bearer` and its token, or a token
    /// itself split by a chunk's end is still redacted. Memory stays bounded whatever the line's length.
    fn write_long_line(
        &mut self,
        reader: &mut impl BufRead,
        out: &mut impl Write,
    ) -> Result<(), StreamError> {
        let mut writer =
            RedactingWriter::new(self.redactor.clone(), &mut *out).with_line_limit(MAX_LINE);
        let mut piece = std::mem::take(&mut self.buf);
        loop {
            // A piece that ends the line ends the writer's line too, with its newline.
            writer.write_all(&piece).map_err(StreamError::Write)?;
            if piece.last() == Some(&b'\n') {
                break;
            }
            piece.clear();
            let n = reader
                .take(MAX_LINE as u64)
                .read_until(b'\n', &mut piece)
                .map_err(StreamError::Read)?;
            if n == 0 {
                break;
            }
        }
        writer.flush().map_err(StreamError::Write)?;
        self.buf = piece;
        Ok(())
    }
}

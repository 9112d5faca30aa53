//! One input redacted into one output: the loop a command that redacts files or stdin runs, over
//! the `Read` and `Write` its caller opened.
//!
//! The crate still does no I/O of its own: the function opens nothing, and reads and writes only
//! the two streams it is given, as [`RedactingWriter`] writes only to the writer it wraps.

use std::io::{self, Read, Write};

use crate::{RedactingWriter, Redactor};

/// The longest line [`redact_stream`] reads whole (as JSON when it is JSON): 16 MiB. A longer line
/// is redacted as text in chunks of this size, each read with the end of the one before.
pub const STREAM_LINE_LIMIT: usize = 16 * 1024 * 1024;

/// How many bytes of lines [`redact_stream`] holds while a construct that spans lines is open:
/// 64 KiB, the bound [`Redactor::redact_text`] reads by, so that a text whose lines are within it
/// comes out of the stream as it comes out of `redact_text`.
pub const STREAM_HOLD_LIMIT: usize = 64 * 1024;

/// What [`redact_stream`] read: whether reading ended early, and whether the input was UTF-8.
#[derive(Debug)]
#[non_exhaustive]
pub struct Streamed {
    /// The error that ended reading the input, if one did. What was read before it was redacted
    /// and written all the same.
    pub read_error: Option<io::Error>,
    /// Whether the input held bytes that are not UTF-8: each such sequence was written as U+FFFD.
    pub replaced_invalid_utf8: bool,
}

/// Redacts everything `input` holds into `output`, as [`Redactor::redact_text`] redacts a text,
/// in bounded memory: each line that is JSON as JSON (read whole up to [`STREAM_LINE_LIMIT`]), the
/// lines between as text, a construct over several lines (a private key block, an XML element, a
/// YAML block) held until it closes, up to [`STREAM_HOLD_LIMIT`].
///
/// The stream starts and ends on its own: a construct an earlier stream left open does not swallow
/// this one, and what this one leaves held (a last line without its line break, a block never
/// closed) is written before it returns, also when reading failed. `output` is flushed.
///
/// A failed read is not an error of the call: it ends the input, and [`Streamed::read_error`] says
/// it, so a caller can name the input and go on with the next. The error is a failed write or
/// flush of `output`.
///
/// ```
/// use calltape_redact::{Redactor, redact_stream};
///
/// let input = "token=sk-proj-abcdefghijklmnopqrstuvwx\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
/// let mut output = Vec::new();
/// let streamed = redact_stream(&Redactor::new(), input.as_bytes(), &mut output)?;
/// assert!(streamed.read_error.is_none());
/// assert_eq!(String::from_utf8(output).unwrap(), "token=[REDACTED]\n[REDACTED]\n");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn redact_stream(
    redactor: &Redactor,
    mut input: impl Read,
    output: impl Write,
) -> io::Result<Streamed> {
    let mut writer = RedactingWriter::new(redactor.clone(), output)
        .with_line_limit(STREAM_LINE_LIMIT)
        .with_hold_limit(STREAM_HOLD_LIMIT);
    let mut buf = vec![0; 256 * 1024];
    let read_error = loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break None,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => break Some(e),
        };
        writer.write_all(&buf[..n])?;
    };
    writer.flush()?;
    Ok(Streamed {
        read_error,
        replaced_invalid_utf8: writer.replaced_invalid_utf8(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `data`, then fails.
    struct FailingAfter<'a> {
        data: &'a [u8],
    }

    impl Read for FailingAfter<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.data.is_empty() {
                return Err(io::Error::other("disk gone"));
            }
            let n = buf.len().min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// Takes nothing.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn streamed(input: &str) -> String {
        let mut out = Vec::new();
        let streamed = redact_stream(&Redactor::new(), input.as_bytes(), &mut out).unwrap();
        assert!(streamed.read_error.is_none());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_stream_comes_out_as_redact_text_gives_it() {
        let cases = [
            "password: hunter2\nnext\n",
            "<apiToken>\nabc123\n</apiToken>\nafter",
            "{\"apiKey\": \"k-1\", \"n\": 1}\nplain Bearer abc123\n",
            "key: |\n  line one\n  line two\nother: 1\n",
        ];
        for input in cases {
            assert_eq!(
                streamed(input),
                Redactor::new().redact_text(input),
                "{input:?}"
            );
        }
    }

    #[test]
    fn what_was_read_before_a_failed_read_is_written() {
        let mut out = Vec::new();
        let input = FailingAfter {
            data: b"token=sk-proj-abcdefghijklmnopqrstuvwx\nlast line without break",
        };
        let streamed = redact_stream(&Redactor::new(), input, &mut out).unwrap();
        assert_eq!(streamed.read_error.unwrap().to_string(), "disk gone");
        assert_eq!(out, b"token=[REDACTED]\nlast line without break");
    }

    #[test]
    fn a_failed_write_is_the_error() {
        let err = redact_stream(&Redactor::new(), &b"a line\n"[..], Closed).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_said() {
        let mut out = Vec::new();
        let streamed = redact_stream(&Redactor::new(), &b"a \xff b\n"[..], &mut out).unwrap();
        assert!(streamed.replaced_invalid_utf8);
        assert_eq!(String::from_utf8(out).unwrap(), "a \u{FFFD} b\n");
        assert!(
            !redact_stream(&Redactor::new(), &b"ok\n"[..], Vec::new())
                .unwrap()
                .replaced_invalid_utf8
        );
    }

    #[test]
    fn a_block_one_stream_leaves_open_does_not_reach_the_next() {
        let mut out = Vec::new();
        redact_stream(
            &Redactor::new(),
            &b"-----BEGIN PRIVATE KEY-----\nMIIE\n"[..],
            &mut out,
        )
        .unwrap();
        redact_stream(&Redactor::new(), &b"visible\n"[..], &mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().ends_with("visible\n"));
    }
}

//! A `Write` adapter that redacts what passes through it, line by line.

use std::io::{self, Write};

use crate::Redactor;
use crate::context::{key_block_end, opens_key_block};
use crate::json::looks_like_json;
use crate::span;

/// The default bound on a buffered line: a longer line is redacted in chunks.
const DEFAULT_LINE_LIMIT: usize = 64 * 1024;
/// The smallest line limit accepted.
const MIN_LINE_LIMIT: usize = 256;
/// Bytes of the previous chunk that the next chunk is scanned with, so that a
/// name in one chunk still hides its value in the next.
const CONTEXT: usize = 256;

/// Wraps a log writer and redacts every line written through it.
///
/// Complete lines are redacted and written at once; a line that is JSON is
/// redacted as JSON, another line is scanned after the end of the line before
/// it (a value may sit on the line after its name), and the lines of a
/// private key block are dropped up to its end. A partial line waits for its end, up to a bound (64 KiB by
/// default): a longer line is redacted in chunks, cut at whitespace where
/// possible, each chunk scanned together with the end of the one before, and a
/// secret that runs over a chunk's end is hidden to its end. `flush` (and drop)
/// writes a partial line out, redacted.
///
/// With `tracing_subscriber`, wrap the writer per event (a closure is a
/// `MakeWriter`) or once behind a `Mutex`:
///
/// ```
/// use calltape_redact::{Redactor, RedactingWriter};
///
/// let redactor = Redactor::new();
/// let subscriber = tracing_subscriber::fmt()
///     .with_writer(move || RedactingWriter::new(redactor.clone(), std::io::stderr()))
///     .finish();
/// tracing::subscriber::with_default(subscriber, || {
///     tracing::info!("calling upstream with Authorization: Bearer abc123def456");
/// });
/// ```
pub struct RedactingWriter<W: Write> {
    redactor: Redactor,
    inner: W,
    buf: Vec<u8>,
    limit: usize,
    /// The end of the chunk before, redacted text already written.
    context: String,
    /// The chunk before ended inside a secret: drop the rest of it.
    carry: bool,
    /// A line before opened a private key block: drop lines up to its end.
    in_key: bool,
    /// The end of the line before (up to `CONTEXT` bytes), which the next
    /// line is scanned with: a value may sit on the line after its name.
    last_line: String,
}

impl<W: Write> std::fmt::Debug for RedactingWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedactingWriter")
            .field("redactor", &self.redactor)
            .field("buffered", &self.buf.len())
            .field("line_limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl<W: Write> RedactingWriter<W> {
    /// A writer that redacts with `redactor` and writes to `inner`.
    pub fn new(redactor: Redactor, inner: W) -> RedactingWriter<W> {
        RedactingWriter {
            redactor,
            inner,
            buf: Vec::new(),
            limit: DEFAULT_LINE_LIMIT,
            context: String::new(),
            carry: false,
            in_key: false,
            last_line: String::new(),
        }
    }

    /// Sets how many bytes of a line are buffered before it is redacted in
    /// chunks (at least 256; 64 KiB by default).
    pub fn with_line_limit(mut self, bytes: usize) -> RedactingWriter<W> {
        self.limit = bytes.max(MIN_LINE_LIMIT);
        self
    }

    /// The wrapped writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The wrapped writer; writing to it directly bypasses redaction.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Redacts and writes `self.buf[..cut]`; `line_end` says that the line ends
    /// there.
    fn emit(&mut self, cut: usize, line_end: bool) -> io::Result<()> {
        let chunk = String::from_utf8_lossy(&self.buf[..cut]).into_owned();
        let from = self.context.len();
        let mut text = std::mem::take(&mut self.context);
        text.push_str(&chunk);
        let mut skip = from;
        if self.carry {
            let rest = chunk.find(char::is_whitespace).unwrap_or(chunk.len());
            skip += rest;
            self.carry = rest == chunk.len();
        }
        let spans = self.redactor.text_spans(&text);
        let out = span::apply_from(&text, &spans, skip);
        self.carry |= spans.last().is_some_and(|s| s.end == text.len());
        if line_end {
            self.carry = false;
        } else {
            let mut keep = text.len().saturating_sub(CONTEXT);
            while !text.is_char_boundary(keep) {
                keep += 1;
            }
            self.context = text.split_off(keep);
        }
        self.inner.write_all(out.as_bytes())
    }

    /// Writes out the buffered complete line (it ends with `\n`).
    ///
    /// A private key block spans lines: the line that opens it is redacted
    /// from the block's start on, its line break included, and the lines
    /// after it are dropped up to the block's `END` marker, so that the output
    /// is what `redact_text` gives for the whole text.
    fn emit_line(&mut self) -> io::Result<()> {
        let mut end = self.buf.len() - 1;
        if end > 0 && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        if self.in_key {
            self.last_line.clear();
            let Some(after) = key_block_end(&self.buf[..end]) else {
                self.buf.clear();
                return Ok(());
            };
            self.buf.drain(..after);
            end -= after;
            self.in_key = false;
        }
        let opens = opens_key_block(&self.buf[..end]);
        let line = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        if !self.last_line.is_empty() && !looks_like_json(&line) {
            // Scanned after the line before, as in the whole text; a JSON
            // line is read on its own.
            self.context = std::mem::take(&mut self.last_line);
            self.context.push('\n');
        }
        let mut keep = line.len().saturating_sub(CONTEXT);
        while !line.is_char_boundary(keep) {
            keep += 1;
        }
        self.last_line = line[keep..].to_owned();
        let result = self.emit(end, true).and_then(|()| {
            if opens {
                Ok(())
            } else {
                self.inner.write_all(&self.buf[end..])
            }
        });
        self.in_key = opens;
        self.buf.clear();
        result
    }

    /// Writes out a chunk of an over-long line.
    fn emit_chunk(&mut self) -> io::Result<()> {
        let limit = self.limit.min(self.buf.len());
        let cut = match self.buf[limit / 2..limit]
            .iter()
            .rposition(u8::is_ascii_whitespace)
        {
            Some(p) => limit / 2 + p + 1,
            None => {
                let mut cut = limit;
                while cut > limit - 3 && cut < self.buf.len() && (self.buf[cut] & 0xC0) == 0x80 {
                    cut -= 1;
                }
                cut
            }
        };
        let result = self.emit(cut, false);
        self.buf.drain(..cut);
        result
    }
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut rest = data;
        while !rest.is_empty() {
            match memchr::memchr(b'\n', rest) {
                Some(pos) if self.buf.len() + pos <= self.limit => {
                    self.buf.extend_from_slice(&rest[..=pos]);
                    rest = &rest[pos + 1..];
                    self.emit_line()?;
                }
                _ => {
                    let room = (self.limit + 1).saturating_sub(self.buf.len()).max(1);
                    let take = room.min(rest.len());
                    self.buf.extend_from_slice(&rest[..take]);
                    rest = &rest[take..];
                    while self.buf.len() > self.limit {
                        self.emit_chunk()?;
                    }
                }
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.in_key {
            // A partial line inside a private key block: kept only after the
            // block's end.
            match key_block_end(&self.buf) {
                Some(after) => {
                    self.buf.drain(..after);
                    self.in_key = false;
                }
                None => self.buf.clear(),
            }
        }
        if !self.buf.is_empty() {
            let all = self.buf.len();
            let result = self.emit(all, false);
            self.buf.clear();
            result?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for RedactingWriter<W> {
    fn drop(&mut self) {
        // Errors cannot be reported from drop; a caller who cares flushes first.
        let _ = self.flush();
    }
}

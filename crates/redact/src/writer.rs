//! A `Write` adapter that redacts what passes through it as `redact_text`
//! redacts the whole text, line by line, and `redact_text`'s reading of a
//! text of several lines, which is the writer's.
//!
//! The text scan reports whether a construct that spans lines is open at the
//! end of the lines it is given (`Redactor::held_spans`):
//! while one is, the lines are held; once none is, no rule of the scan looks
//! back over the last line break or ahead past it, so the lines are written,
//! redacted, and what follows is scanned on its own.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::context::{key_block_end, opens_key_block};
use crate::json::{self, looks_like_json};
use crate::span::{self, Span};
use crate::stage::Stage;
use crate::text::{OPEN_BLOCK, OPEN_KEY, OPEN_PAIR, Open};
use crate::{Gate, KnownSecrets, Redactor, RefusedLines};

/// The default bound on a buffered line (a longer line is redacted in
/// chunks) and on held lines.
pub(crate) const DEFAULT_LINE_LIMIT: usize = 64 * 1024;
/// The smallest line limit accepted.
const MIN_LINE_LIMIT: usize = 256;
/// Bytes of the previous chunk that the next chunk is scanned with, so that a
/// name in one chunk still hides its value in the next.
const CONTEXT: usize = 256;

/// What the next chunk of a line drops when the chunk before ended inside a
/// secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carry {
    No,
    /// This many bytes: the secret ends there.
    Bytes(usize),
    /// Up to the next blank: the secret is one word.
    Word,
    /// Up to the end of the line: the secret holds blanks, so a blank does
    /// not end it (a quote left open, a header value).
    Line,
}

/// Wraps a log writer and redacts every line written through it.
///
/// What it writes equals [`Redactor::redact_text`] on the whole text written
/// through it, however the writes cut it, at any size with the default line
/// limit (64 KiB), whose bound `redact_text` applies too:
///
/// - A line is written when its line break arrives, unless a construct that
///   spans lines is open at its end (an XML element without its closing tag,
///   a YAML block scalar whose indented lines may go on, a private key block
///   without `END`, a pair's name waiting for its `value`): then the lines
///   from the one it starts on are held, and written, redacted together,
///   once a line closes it. A line that cannot change the first open
///   construct (no `<` after an element, no `-----END` in a key block, a line
///   indented under a YAML block, a blank line after a pair's name) is held
///   without scanning the held lines again; another line scans them again,
///   and the lines before the first construct still open are written.
/// - A line that looks like JSON (it starts with `{` or `[` and ends with `}`
///   or `]`) first settles the lines held before it, then is redacted on its
///   own, as JSON when it is; `redact_text` reads a text of several lines so
///   too.
/// - `flush` (and drop) writes out everything held, a partial line included;
///   what is written after it continues that line, but a construct open
///   before the flush is not reopened.
///
/// The line limit bounds memory, and so does the hold limit (the line limit
/// unless [`with_hold_limit`](Self::with_hold_limit) sets it apart). Lines
/// held for more than the hold limit from the line their construct starts on
/// are written out as the text rules read them then; what they leave open
/// goes on where it can without holding lines (a private key block drops the
/// lines up to its `END` marker, a YAML block the lines indented under its
/// key, and a pair's name stays the context of the lines after it). A line
/// longer than the line limit is redacted in chunks, each
/// scanned together with the end of the one before, cut at a blank that no
/// secret runs over where there is one in the second half of the limit;
/// else a secret that runs over the cut is hidden to its end (to the end of
/// the line when it holds blanks).
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
    /// The bound on held lines, when it is not `limit`.
    hold_limit: Option<usize>,
    /// Bytes that are not UTF-8 were written through (and replaced).
    replaced: bool,
    /// The end of the chunk before, redacted text already written.
    context: String,
    /// The chunk before ended inside a secret: what of the next to drop.
    carry: Carry,
    /// A line before opened a private key block: drop lines up to its end.
    in_key: bool,
    /// A YAML block was settled at the line limit with its key at this
    /// column: drop the lines indented under it.
    in_block: Option<usize>,
    /// The bytes at the start of `pending` already written: the line of a
    /// pair's name settled at the line limit, the context of the lines after.
    written: usize,
    /// Complete lines held while a construct that spans lines is open at
    /// their end (up to the line limit), from the line it starts on.
    pending: String,
    /// The constructs open at the end of the held lines when they were
    /// last scanned.
    waiting: Open,
    /// Known values hidden and the final gate, after the text rules.
    stage: Stage,
}

impl<W: Write> std::fmt::Debug for RedactingWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedactingWriter")
            .field("redactor", &self.redactor)
            .field("buffered", &self.buf.len())
            .field("held", &self.pending.len())
            .field("line_limit", &self.limit)
            .field("hold_limit", &self.hold_bound())
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
            hold_limit: None,
            replaced: false,
            context: String::new(),
            carry: Carry::No,
            in_key: false,
            in_block: None,
            written: 0,
            pending: String::new(),
            waiting: Open::default(),
            stage: Stage::default(),
        }
    }

    /// Also hides the values of `known` (those added to it later included) in what it writes, as
    /// written and as JSON, HTML and XML escape them: for values a program knows to be secret that
    /// have no form the text rules know (a key it was given, a value it filled in). A line is
    /// written once it ends, or once a value can no longer be cut at its end.
    pub fn hiding(mut self, known: KnownSecrets) -> RedactingWriter<W> {
        self.stage.hide(known);
        self
    }

    /// Passes each line it writes, last, through `gate`: a line the gate stops is not written, a
    /// notice naming what stopped it (never the value) is written in its place, and `refused`
    /// counts it. A line longer than 64 KiB is checked in pieces.
    pub fn gated(mut self, gate: Gate, refused: RefusedLines) -> RedactingWriter<W> {
        self.stage.gate(gate, refused);
        self
    }

    /// Sets how many bytes of a line are buffered before it is redacted in
    /// chunks (at least 256; 64 KiB by default), and, unless
    /// [`with_hold_limit`](Self::with_hold_limit) sets it apart, how many
    /// bytes of lines are held.
    pub fn with_line_limit(mut self, bytes: usize) -> RedactingWriter<W> {
        self.limit = bytes.max(MIN_LINE_LIMIT);
        self
    }

    /// Sets how many bytes of lines are held, from the line a construct that
    /// spans lines starts on, before they are written out as the text rules
    /// read them then (at least 256; the line limit by default).
    ///
    /// A writer whose line limit is raised, so that long JSON lines are read
    /// whole, keeps with this the bound `redact_text` reads by (64 KiB): a
    /// text whose lines are within 64 KiB then comes out as `redact_text`
    /// gives it, and held lines take no more memory than that.
    ///
    /// ```
    /// use std::io::Write;
    /// use calltape_redact::{Redactor, RedactingWriter};
    ///
    /// let mut out = Vec::new();
    /// let mut writer = RedactingWriter::new(Redactor::new(), &mut out)
    ///     .with_line_limit(16 << 20)
    ///     .with_hold_limit(64 << 10);
    /// writer.write_all(b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n-----END PRIVATE KEY-----\nnext\n")?;
    /// drop(writer);
    /// assert_eq!(out, b"[REDACTED]\nnext\n");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn with_hold_limit(mut self, bytes: usize) -> RedactingWriter<W> {
        self.hold_limit = Some(bytes.max(MIN_LINE_LIMIT));
        self
    }

    /// Whether bytes that are not UTF-8 were written through: each such
    /// sequence was written as U+FFFD.
    pub fn replaced_invalid_utf8(&self) -> bool {
        self.replaced
    }

    /// The bound on held lines.
    fn hold_bound(&self) -> usize {
        self.hold_limit.unwrap_or(self.limit)
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
    /// there. `then` is what the next chunk drops, when the caller knows; else
    /// the rest of a word when a secret runs to the cut.
    fn emit(&mut self, cut: usize, line_end: bool, then: Option<Carry>) -> io::Result<()> {
        let chunk = lossy(&self.buf[..cut], &mut self.replaced).into_owned();
        let from = self.context.len();
        let mut text = std::mem::take(&mut self.context);
        text.push_str(&chunk);
        let rest = match self.carry {
            Carry::No => 0,
            Carry::Bytes(n) => {
                let mut n = n.min(chunk.len());
                while !chunk.is_char_boundary(n) {
                    n += 1;
                }
                self.carry = if n < chunk.len() {
                    Carry::No
                } else {
                    Carry::Bytes(n - chunk.len())
                };
                n
            }
            Carry::Word => {
                let rest = chunk.find(char::is_whitespace).unwrap_or(chunk.len());
                if rest < chunk.len() {
                    self.carry = Carry::No;
                }
                rest
            }
            Carry::Line => chunk.len(),
        };
        let skip = from + rest;
        let spans = self.redactor.text_spans(&text);
        let out = span::apply_from(&text, &spans, skip);
        match then {
            Some(carry) => self.carry = carry,
            None if self.carry == Carry::No
                && spans.last().is_some_and(|s| s.end == text.len()) =>
            {
                self.carry = Carry::Word;
            }
            None => {}
        }
        if line_end {
            self.carry = Carry::No;
        } else {
            let mut keep = text.len().saturating_sub(CONTEXT);
            while !text.is_char_boundary(keep) {
                keep += 1;
            }
            self.context = text.split_off(keep);
        }
        self.stage.write(out.as_bytes(), &mut self.inner)
    }

    /// Takes the buffered complete line (it ends with `\n`).
    ///
    /// Inside a private key block that the lines before left open, the line
    /// is dropped up to the block's `END` marker. A line that ends an
    /// over-long line is redacted with the chunk before it. A line that looks
    /// like JSON settles the lines held before it, then is redacted on its
    /// own, as JSON when it is. Another line joins the held lines, which are
    /// written out as soon as no construct is open at their end.
    fn emit_line(&mut self) -> io::Result<()> {
        let mut end = self.buf.len() - 1;
        if end > 0 && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        // Lines dropped below are read once, as a scan would read them.
        crate::step!(self.buf.len());
        if let Some(column) = self.in_block {
            if block_goes_on(column, &self.buf) {
                self.buf.clear();
                return Ok(());
            }
            self.in_block = None;
        }
        if self.in_key {
            let Some(after) = key_block_end(&self.buf[..end]) else {
                self.buf.clear();
                return Ok(());
            };
            self.buf.drain(..after);
            end -= after;
            self.in_key = false;
        }
        let mid_line = !self.context.is_empty() || self.carry != Carry::No;
        if !mid_line {
            let line = lossy(&self.buf, &mut self.replaced);
            // The line break after `end` is ASCII: as long in the text.
            let body = line.len() - (self.buf.len() - end);
            if !looks_like_json(&line[..body]) {
                let from = self.pending.len();
                self.pending.push_str(&line);
                self.buf.clear();
                return self.hold(from);
            }
        }
        self.settle()?;
        let result = self
            .emit(end, true, None)
            .and_then(|()| self.stage.write(&self.buf[end..], &mut self.inner));
        self.buf.clear();
        result
    }

    /// Takes the complete line that joined the held lines at `from`.
    ///
    /// While the line surely leaves the first open construct open (no `<`
    /// after an element, no `-----END` in a key block, a line indented under
    /// a YAML block, a blank line after a pair's name), nothing the held
    /// lines decided can change, and they are not scanned again. Else they
    /// are, and what comes before the line the first construct still open
    /// starts on is written out: only the lines from there are held, and
    /// scanned again. Lines held for more than the line limit from there are
    /// written out as the text rules read them then (a private key block left
    /// open drops the lines after it up to its `END` marker).
    fn hold(&mut self, from: usize) -> io::Result<()> {
        let bound = self.hold_bound();
        let over = self.pending.len() > bound;
        if !over && self.waiting.stays_open(&self.pending.as_bytes()[from..]) {
            return Ok(());
        }
        let (spans, open) = self.redactor.held_spans(&self.pending);
        let all = self.pending.len();
        if open.kinds == 0 {
            return self.write_held(all, &spans, open);
        }
        let cut = open.cut;
        if all - cut > bound {
            return self.settle_at_limit(&spans, open);
        }
        if cut <= self.written {
            self.waiting = open;
            return Ok(());
        }
        let before = spans.partition_point(|s| s.start < cut);
        let result = self.write_held(cut, &spans[..before], Open::default());
        self.waiting = open;
        result
    }

    /// Writes out the held lines, open for more than the line limit, as the
    /// text rules read them now. What they leave open goes on where it can
    /// without holding lines: a private key block drops the lines up to its
    /// `END`, a YAML block the lines indented under its key, and the line of
    /// a pair's name stays as the context of the lines after it, which may
    /// hold its `value`.
    fn settle_at_limit(&mut self, spans: &[Span], open: Open) -> io::Result<()> {
        let all = self.pending.len();
        let name_line = (open.first == OPEN_PAIR).then(|| {
            let b = self.pending.as_bytes();
            let start = memchr::memrchr(b'\n', &b[..open.at]).map_or(0, |p| p + 1);
            let end = memchr::memchr(b'\n', &b[open.at..]).map_or(b.len(), |p| open.at + p + 1);
            self.pending[start..end].to_owned()
        });
        let result = self.write_held(all, spans, open);
        if open.kinds & OPEN_BLOCK != 0 {
            self.in_block = Some(open.column);
        }
        if let Some(line) = name_line {
            self.written = line.len();
            self.pending = line;
            self.waiting = open;
        }
        result
    }

    /// Writes out all the held lines, redacted as the text rules read them
    /// now, whatever is open at their end.
    fn settle(&mut self) -> io::Result<()> {
        if self.pending.len() == self.written {
            self.pending.clear();
            self.written = 0;
            return Ok(());
        }
        let (spans, open) = self.redactor.held_spans(&self.pending);
        let all = self.pending.len();
        self.write_held(all, &spans, open)
    }

    /// Writes out `pending[..upto]` with `spans` replaced, as `redact_text`
    /// reads it; `open` is what is open at `upto`. A private key block left
    /// open then drops the lines after it up to its `END`.
    fn write_held(&mut self, upto: usize, spans: &[Span], open: Open) -> io::Result<()> {
        let text = &self.pending[..upto];
        let mut out = if self.written > 0 {
            // After the context, which was written.
            Cow::Owned(span::apply_from(text, spans, self.written))
        } else {
            span::apply(text, spans)
        };
        if self.written == 0 && joins_lines(text, spans) {
            // As `redact_text` reads a value hidden over several lines.
            let again = line_spans(&self.redactor, &out);
            out = Cow::Owned(span::apply(&out, &again).into_owned());
        }
        if !text.ends_with('\n') {
            // A partial line, flushed: what comes next continues it, scanned
            // after its end, and the rest of a secret cut here is dropped.
            if spans.last().is_some_and(|s| s.end == text.len()) {
                self.carry = Carry::Word;
            }
            let line_start = text.rfind('\n').map_or(0, |p| p + 1);
            let mut keep = text.len().saturating_sub(CONTEXT).max(line_start);
            while !text.is_char_boundary(keep) {
                keep += 1;
            }
            self.context = text[keep..].to_owned();
        }
        let key_open = open.kinds & OPEN_KEY != 0 && opens_key_block(text.as_bytes());
        let result = self.stage.write(out.as_bytes(), &mut self.inner);
        self.in_key |= key_open;
        self.pending.drain(..upto);
        self.written = 0;
        self.waiting = Open::default();
        result
    }

    /// Writes out a chunk of an over-long line: up to the last blank in the
    /// second half of the limit that no secret runs over, as the rules read
    /// the whole limit's worth (so a secret goes whole into one chunk); when
    /// every such blank is inside a secret, up to the last blank there, or a
    /// UTF-8 boundary, and the next chunk drops the rest of the secret: to
    /// its end when the rules saw it, else to the end of the line when it
    /// holds blanks, or of its word.
    fn emit_chunk(&mut self) -> io::Result<()> {
        let limit = self.limit.min(self.buf.len());
        let fallback = match self.buf[limit / 2..limit]
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
        let (cut, then) = if self.carry == Carry::No {
            self.clean_cut_of_line(limit).unwrap_or((fallback, None))
        } else {
            (fallback, None)
        };
        let result = self.emit(cut, false, then);
        self.buf.drain(..cut);
        result
    }

    /// Whether the end of `piece` reads alone as it reads in a longer text
    /// where the rules found `spans` (those that start in `piece`): the
    /// spans found in its last bytes are the same.
    fn reads_alike(&self, piece: &str, spans: &[Span]) -> bool {
        let mut from = piece.len().saturating_sub(2 * CONTEXT);
        while !piece.is_char_boundary(from) {
            from += 1;
        }
        let tail_from = piece.len().saturating_sub(CONTEXT);
        let found = self.redactor.text_spans(&piece[from..]);
        found
            .iter()
            .filter(|s| from + s.start >= tail_from)
            .all(|s| {
                spans
                    .binary_search_by_key(&(from + s.start), |t| t.start)
                    .is_ok_and(|i| spans[i].end == from + s.end)
            })
            && spans
                .iter()
                .rev()
                .take_while(|t| t.start >= tail_from)
                .all(|t| found.iter().any(|s| from + s.start == t.start))
    }

    /// The cut of [`emit_chunk`](Self::emit_chunk) and what the next chunk
    /// drops, from the spans the rules find in the chunk before's end and
    /// `buf[..limit]`; `None` when those bytes are not UTF-8.
    fn clean_cut_of_line(&self, limit: usize) -> Option<(usize, Option<Carry>)> {
        let window = match std::str::from_utf8(&self.buf[..limit]) {
            Ok(w) => w,
            Err(e) if e.error_len().is_none() => {
                std::str::from_utf8(&self.buf[..e.valid_up_to()]).ok()?
            }
            Err(_) => return None,
        };
        let ctx = self.context.len();
        let mut text = String::with_capacity(ctx + window.len());
        text.push_str(&self.context);
        text.push_str(window);
        let spans = self.redactor.text_spans(&text);
        let b = window.as_bytes();
        // Blanks from the end of the window back to its middle, skipping the
        // spans that cover them (a span that reaches the end of the window
        // may go on after it). A few are tried: the piece before the cut
        // must read as the window reads it, so that a name is not cut off
        // its value (`Authorization: Digest` would read as a credential).
        let mut k = spans.len();
        let mut p = b.len();
        let mut tries = 0;
        while p > limit / 2 && tries < CUT_TRIES {
            p -= 1;
            if !b[p].is_ascii_whitespace() {
                continue;
            }
            let cut = p + 1;
            while k > 0 && spans[k - 1].start >= ctx + cut {
                k -= 1;
            }
            match spans[..k].last() {
                Some(span) if span.end > ctx + cut || span.end == text.len() => {
                    p = span.start.saturating_sub(ctx);
                }
                _ => {
                    tries += 1;
                    if self.reads_alike(&text[..ctx + cut], &spans[..k]) {
                        return Some((cut, Some(Carry::No)));
                    }
                }
            }
        }
        // Every blank is inside a secret: the one over the fallback cut
        // decides what the next chunk drops.
        let fallback = match b[limit / 2..].iter().rposition(u8::is_ascii_whitespace) {
            Some(p) => limit / 2 + p + 1,
            None => b.len(),
        };
        let over = spans.iter().find(|s| {
            s.start < ctx + fallback && (s.end > ctx + fallback || s.end == text.len())
        })?;
        let then = if over.end < text.len() {
            Carry::Bytes(over.end - ctx - fallback)
        } else if text[over.start..].contains(char::is_whitespace) {
            Carry::Line
        } else {
            Carry::Word
        };
        Some((fallback, Some(then)))
    }
}

/// `redact_text` on a text of several lines, by the writer's rules: a line
/// that looks like JSON is redacted on its own (as JSON when it is), and the
/// runs of other lines between such lines are read by the text rules
/// together, as the writer reads the lines it holds. A private key block left
/// open at the end of a run drops the lines after the JSON line that ended
/// it, up to its `END` marker, as the writer does.
///
/// A value hidden over several lines joins them into one, which may then look
/// like JSON: the result is then read once more, as redacting it again would
/// read it (redacting stays idempotent).
pub(crate) fn redact_lines<'a>(redactor: &Redactor, text: &'a str) -> Cow<'a, str> {
    let spans = line_spans(redactor, text);
    let out = span::apply(text, &spans);
    if !joins_lines(text, &spans) {
        return out;
    }
    let again = line_spans(redactor, &out);
    Cow::Owned(span::apply(&out, &again).into_owned())
}

/// Whether a text span replaces a line break and the line it joins may look
/// like JSON once redacted (a span that drops lines leaves the lines around
/// it apart). Spans are in order; a line that two such spans join counts as
/// one that may.
fn joins_lines(text: &str, spans: &[Span]) -> bool {
    let b = text.as_bytes();
    let is_blank = |c: u8| matches!(c, b' ' | b'\t' | b'\r');
    let mut joined_to = 0;
    for span in spans {
        if span.rewrite.is_some() || memchr::memchr(b'\n', &b[span.start..span.end]).is_none() {
            continue;
        }
        let line_start = memchr::memrchr(b'\n', &b[..span.start]).map_or(0, |p| p + 1);
        let line_end = memchr::memchr(b'\n', &b[span.end..]).map_or(b.len(), |p| span.end + p);
        crate::step!(line_end - line_start + 1);
        if line_start < joined_to {
            return true;
        }
        joined_to = line_end;
        let mut first = line_start;
        while first < span.start && is_blank(b[first]) {
            first += 1;
        }
        let mut last = line_end;
        while last > span.end && is_blank(b[last - 1]) {
            last -= 1;
        }
        // The placeholder starts with `[` and ends with `]`, as may a span
        // at either end of the line.
        let opens = first == span.start
            || matches!(b[first], b'{' | b'[')
            || spans.binary_search_by_key(&first, |s| s.start).is_ok();
        let closes = last == span.end
            || matches!(b[last - 1], b'}' | b']')
            || spans.binary_search_by_key(&last, |s| s.end).is_ok();
        if opens && closes {
            return true;
        }
    }
    false
}

/// The spans of [`redact_lines`], read once.
fn line_spans(redactor: &Redactor, text: &str) -> Vec<Span> {
    let b = text.as_bytes();
    let mut spans: Vec<Span> = Vec::new();
    let mut run = 0;
    let mut in_key = false;
    let mut i = 0;
    while i < b.len() {
        let next = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |p| i + p + 1);
        if in_key {
            let line_end = if b[next - 1] == b'\n' { next - 1 } else { next };
            match key_block_end(&b[i..line_end]) {
                Some(after) => {
                    spans.push(Span::deleted(i, i + after));
                    in_key = false;
                    i += after;
                    run = i;
                }
                None => {
                    spans.push(Span::deleted(i, next));
                    i = next;
                    run = i;
                    continue;
                }
            }
        }
        let mut end = next;
        if b[end - 1] == b'\n' {
            end -= 1;
            if end > i && b[end - 1] == b'\r' {
                end -= 1;
            }
        }
        if looks_like_json(&text[i..end]) {
            in_key = redact_run(redactor, text, run, i, &mut spans);
            let mark = spans.len();
            json::scan_any(redactor.inner(), &text[i..end], 0, false, &mut spans);
            for span in &mut spans[mark..] {
                span.start += i;
                span.end += i;
            }
            run = next;
        }
        i = next;
    }
    redact_run(redactor, text, run, b.len(), &mut spans);
    spans
}

/// Pushes the spans the text rules find in the run of lines `text[from..to]`;
/// whether it leaves a private key block open.
fn redact_run(
    redactor: &Redactor,
    text: &str,
    from: usize,
    to: usize,
    spans: &mut Vec<Span>,
) -> bool {
    if from >= to {
        return false;
    }
    let run = &text[from..to];
    let (found, open) = redactor.held_spans(run);
    spans.extend(found.into_iter().map(|mut span| {
        span.start += from;
        span.end += from;
        span
    }));
    open.kinds & OPEN_KEY != 0 && opens_key_block(run.as_bytes())
}

/// How many blanks [`RedactingWriter::clean_cut_of_line`] tries as the cut of
/// a long line.
const CUT_TRIES: usize = 8;

/// `bytes` as text, invalid UTF-8 replaced, which sets `replaced`
/// (validating first: most text is valid, and the check is faster than the
/// replacing walk).
fn lossy<'b>(bytes: &'b [u8], replaced: &mut bool) -> Cow<'b, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => {
            *replaced = true;
            String::from_utf8_lossy(bytes)
        }
    }
}

/// Whether `line` goes on a YAML block whose key is at `column`.
fn block_goes_on(column: usize, line: &[u8]) -> bool {
    let block = Open {
        kinds: OPEN_BLOCK,
        first: OPEN_BLOCK,
        at: 0,
        column,
        cut: 0,
    };
    block.stays_open(line)
}

/// `redact_text` on a text longer than the line limit: what a writer with
/// the default limit writes for it, so that the two agree at any size.
pub(crate) fn redact_bounded(redactor: &Redactor, text: &str) -> String {
    let mut writer = RedactingWriter::new(redactor.clone(), Vec::with_capacity(text.len()));
    // Writing to a `Vec` does not fail.
    let _ = writer.write_all(text.as_bytes());
    let _ = writer.flush();
    let out = std::mem::take(&mut writer.inner);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
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
                        self.settle()?;
                        self.emit_chunk()?;
                    }
                }
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Some(column) = self.in_block {
            if block_goes_on(column, &self.buf) {
                self.buf.clear();
            } else if !self.buf.is_empty() {
                self.in_block = None;
            }
        }
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
        // A partial line that looks like JSON is redacted on its own, as a
        // complete one is.
        if self.context.is_empty()
            && self.carry == Carry::No
            && !looks_like_json(&lossy(&self.buf, &mut self.replaced))
        {
            self.pending.push_str(&lossy(&self.buf, &mut self.replaced));
            self.buf.clear();
        }
        self.settle()?;
        if !self.buf.is_empty() {
            let all = self.buf.len();
            let result = self.emit(all, false, None);
            self.buf.clear();
            result?;
        }
        self.stage.flush(&mut self.inner)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for RedactingWriter<W> {
    fn drop(&mut self) {
        // Errors cannot be reported from drop; a caller who cares flushes first.
        let _ = self.flush();
    }
}

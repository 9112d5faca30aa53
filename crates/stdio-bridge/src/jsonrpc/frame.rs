//! Newline-delimited JSON-RPC framing over any `AsyncRead` / `AsyncWrite`.
//!
//! The reader strips one trailing `\r`, skips lines that are empty or only whitespace, and survives frames
//! split at any byte. A line longer than the frame limit is discarded while it streams in, never held
//! whole. A line that is not a JSON object or array comes back as [`Incoming::Invalid`], which the bridge
//! answers with a `-32700` error; reading goes on with the next line.

use std::io;

use bytes::Bytes;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};

use super::{Peek, check, error_frame, peek};
use crate::vocab::{INVALID_REQUEST, PARSE_ERROR};

/// One JSON-RPC message (an object or a batch array) as raw JSON bytes, without the newline.
pub type Frame = Bytes;

/// What an [`InvalidLine::InvalidRequest`] answer says.
pub(crate) const INVALID_REQUEST_MESSAGE: &str = "invalid request: a batch must hold at least one message and only objects, and an id must be a string, a number or null";

/// The default frame limit: 16 MiB.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// Once a line buffer grew past this, it is given back to the allocator after the line.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// Why a line was not a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidLine {
    /// Not JSON (`data.reason = "parse_error"`).
    ParseError,
    /// JSON, but neither an object nor an array (`data.reason = "not_object"`).
    NotObject,
    /// Longer than the frame limit; discarded unread (`data.reason = "frame_too_large"`).
    TooLarge,
    /// JSON, but not a request to forward: an empty batch, a batch item that is not an object, or an
    /// `id` that is an object, an array or a boolean (`data.reason = "invalid_request"`, code -32600).
    InvalidRequest,
}

impl InvalidLine {
    /// The `data.reason` the bridge answers with.
    pub fn reason(self) -> &'static str {
        match self {
            Self::ParseError => "parse_error",
            Self::NotObject => "not_object",
            Self::TooLarge => "frame_too_large",
            Self::InvalidRequest => "invalid_request",
        }
    }

    /// The JSON-RPC error answer for this line: code `-32700` (`-32600` for
    /// [`InvalidRequest`](Self::InvalidRequest)), `id: null`, `data.reason`.
    pub fn error_frame(self) -> Frame {
        let message = match self {
            Self::ParseError => "parse error: the line is not JSON",
            Self::NotObject => "parse error: the line is JSON but not an object or array",
            Self::TooLarge => "parse error: the line is longer than the frame limit",
            Self::InvalidRequest => INVALID_REQUEST_MESSAGE,
        };
        let code = match self {
            Self::InvalidRequest => INVALID_REQUEST,
            _ => PARSE_ERROR,
        };
        error_frame(
            None,
            code,
            message,
            serde_json::json!({ "reason": self.reason() }),
        )
    }
}

/// One line read by a [`FrameReader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// A JSON object or array, without its line ending.
    Frame(Frame),
    /// A line that is not a message.
    Invalid(InvalidLine),
}

/// Reads newline-delimited JSON-RPC messages.
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: BufReader<R>,
    max_frame: usize,
    line: Vec<u8>,
    discarding: bool,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader with the default frame limit (16 MiB).
    pub fn new(inner: R) -> Self {
        Self::with_max_frame(inner, DEFAULT_MAX_FRAME)
    }

    /// A reader that discards lines longer than `max_frame` bytes (line ending excluded).
    pub fn with_max_frame(inner: R, max_frame: usize) -> Self {
        Self {
            inner: BufReader::with_capacity(64 * 1024, inner),
            max_frame: max_frame.max(1),
            line: Vec::new(),
            discarding: false,
        }
    }

    /// The next message or invalid line; `None` at the end of the stream.
    pub async fn next(&mut self) -> io::Result<Option<Incoming>> {
        loop {
            let Some(line) = self.next_line().await? else {
                return Ok(None);
            };
            if let Some(incoming) = incoming(line) {
                return Ok(Some(incoming));
            }
        }
    }

    /// Like [`next`](Self::next), with what routing needs already read from the frame.
    pub(crate) async fn next_message(
        &mut self,
    ) -> io::Result<Option<Result<Message, InvalidLine>>> {
        loop {
            let Some(line) = self.next_line().await? else {
                return Ok(None);
            };
            match line {
                Err(invalid) => return Ok(Some(Err(invalid))),
                Ok(bytes) => {
                    if let Some(result) = classify(bytes) {
                        return Ok(Some(result));
                    }
                }
            }
        }
    }

    /// The next raw line (without `\n`, `\r` stripped), or `TooLarge`.
    async fn next_line(&mut self) -> io::Result<Option<Result<Bytes, InvalidLine>>> {
        // One byte of slack for a `\r` that is stripped afterwards.
        let limit = self.max_frame + 1;
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                if self.discarding {
                    self.discarding = false;
                    return Ok(Some(Err(InvalidLine::TooLarge)));
                }
                if self.line.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(take(&mut self.line, self.max_frame)));
            }
            match memchr::memchr(b'\n', available) {
                Some(end) => {
                    let result = if self.discarding || self.line.len() + end > limit {
                        self.discarding = false;
                        release(&mut self.line);
                        Err(InvalidLine::TooLarge)
                    } else if self.line.is_empty() {
                        // The common case: the whole line is in the buffer.
                        whole_line(&available[..end], self.max_frame)
                    } else {
                        self.line.extend_from_slice(&available[..end]);
                        take(&mut self.line, self.max_frame)
                    };
                    self.inner.consume(end + 1);
                    return Ok(Some(result));
                }
                None => {
                    let n = available.len();
                    if !self.discarding {
                        if self.line.len() + n > limit {
                            self.discarding = true;
                            release(&mut self.line);
                        } else {
                            self.line.extend_from_slice(available);
                        }
                    }
                    self.inner.consume(n);
                }
            }
        }
    }
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// The next line when a whole one is already buffered, read as [`next`](Self::next) reads it;
    /// `None` when more must be read first. A reader that loops over what one read brought in pays
    /// for one wake per read rather than one per line.
    pub(crate) fn next_buffered(&mut self) -> Option<Incoming> {
        loop {
            if self.discarding || !self.line.is_empty() {
                return None;
            }
            let available = self.inner.buffer();
            let end = memchr::memchr(b'\n', available)?;
            let line = whole_line(&available[..end], self.max_frame);
            self.inner.consume(end + 1);
            if let Some(incoming) = incoming(line) {
                return Some(incoming);
            }
        }
    }
}

/// A line that came whole in the buffer (without its `\n`), `\r` stripped, or `TooLarge`.
fn whole_line(mut line: &[u8], max_frame: usize) -> Result<Bytes, InvalidLine> {
    if let [head @ .., b'\r'] = line {
        line = head;
    }
    if line.len() > max_frame {
        Err(InvalidLine::TooLarge)
    } else {
        Ok(Bytes::copy_from_slice(line))
    }
}

fn take(line: &mut Vec<u8>, max_frame: usize) -> Result<Bytes, InvalidLine> {
    let mut line = std::mem::take(line);
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.len() > max_frame {
        return Err(InvalidLine::TooLarge);
    }
    Ok(Bytes::from(line))
}

fn release(line: &mut Vec<u8>) {
    line.clear();
    if line.capacity() > KEEP_CAPACITY {
        *line = Vec::new();
    }
}

/// Writes newline-delimited JSON-RPC messages. Writes are buffered; [`flush`](Self::flush) sends them.
/// Both wait while the other side does not read (backpressure).
#[derive(Debug)]
pub struct FrameWriter<W: AsyncWrite> {
    inner: BufWriter<W>,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    /// A writer over `inner`.
    pub fn new(inner: W) -> Self {
        Self {
            inner: BufWriter::with_capacity(64 * 1024, inner),
        }
    }

    /// Buffers one message and its newline.
    pub async fn write(&mut self, frame: &[u8]) -> io::Result<()> {
        self.inner.write_all(frame).await?;
        self.inner.write_all(b"\n").await
    }

    /// Sends everything buffered.
    pub async fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().await
    }

    /// Flushes and shuts the stream down (closes a pipe).
    pub async fn shutdown(&mut self) -> io::Result<()> {
        self.inner.shutdown().await
    }
}

/// A message and what routing needs from it.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    pub(crate) frame: Frame,
    pub(crate) peek: Peek,
}

/// `None` for a blank line, else the message or why it is not one.
fn classify(line: Bytes) -> Option<Result<Message, InvalidLine>> {
    if is_blank(&line) {
        return None;
    }
    Some(peek(&line).map(|peek| Message { frame: line, peek }))
}

/// [`classify`] for a reader that only passes messages on: `None` for a blank line, else the line
/// as [`Incoming`], checked as `classify` checks it but with nothing read from it.
fn incoming(line: Result<Bytes, InvalidLine>) -> Option<Incoming> {
    Some(match line {
        Err(invalid) => Incoming::Invalid(invalid),
        Ok(line) if is_blank(&line) => return None,
        Ok(line) => match check(&line) {
            Ok(()) => Incoming::Frame(line),
            Err(invalid) => Incoming::Invalid(invalid),
        },
    })
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out one byte per read, to split frames everywhere.
    struct Trickle(Vec<u8>, usize);

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            if self.1 < self.0.len() {
                let byte = self.0[self.1];
                buf.put_slice(&[byte]);
                self.1 += 1;
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    async fn read_all<R: AsyncRead + Unpin>(mut reader: FrameReader<R>) -> Vec<Incoming> {
        let mut out = Vec::new();
        while let Some(item) = reader.next().await.unwrap() {
            out.push(item);
        }
        out
    }

    fn frame(s: &str) -> Incoming {
        Incoming::Frame(Bytes::copy_from_slice(s.as_bytes()))
    }

    const INPUT: &str = "{\"id\":1}\r\n\n   \n[1]\nnope\n42\n\"s\"\r\n{\"a\":\n{\"last\":true}";

    fn expected() -> Vec<Incoming> {
        vec![
            frame("{\"id\":1}"),
            frame("[1]"),
            Incoming::Invalid(InvalidLine::ParseError),
            Incoming::Invalid(InvalidLine::NotObject),
            Incoming::Invalid(InvalidLine::NotObject),
            Incoming::Invalid(InvalidLine::ParseError),
            frame("{\"last\":true}"),
        ]
    }

    #[tokio::test]
    async fn lines_are_classified() {
        let got = read_all(FrameReader::new(INPUT.as_bytes())).await;
        assert_eq!(got, expected());
    }

    #[tokio::test]
    async fn frames_split_at_every_byte_read_the_same() {
        let got = read_all(FrameReader::new(Trickle(INPUT.as_bytes().to_vec(), 0))).await;
        assert_eq!(got, expected());
    }

    /// Lines taken from the buffer without a read come out as `next` gives them; a line cut by the
    /// buffer's end waits for the read.
    #[tokio::test]
    async fn buffered_lines_read_as_next_reads_them() {
        let at_limit = format!("{{\"x\":\"{}\"}}", "b".repeat(90));
        let two = format!("{{\"id\":1}}\n{at_limit}\r\n \n{at_limit}\n[]");
        let cases = [
            (INPUT.to_owned(), DEFAULT_MAX_FRAME, expected(), 5),
            (
                two.clone(),
                at_limit.len(),
                vec![
                    frame("{\"id\":1}"),
                    frame(&at_limit),
                    frame(&at_limit),
                    frame("[]"),
                ],
                2,
            ),
            (
                two,
                at_limit.len() - 1,
                vec![
                    frame("{\"id\":1}"),
                    Incoming::Invalid(InvalidLine::TooLarge),
                    Incoming::Invalid(InvalidLine::TooLarge),
                    frame("[]"),
                ],
                2,
            ),
        ];
        for (input, max_frame, want, buffered) in cases {
            let mut reader = FrameReader::with_max_frame(input.as_bytes(), max_frame);
            let (mut got, mut from_buffer) = (Vec::new(), 0);
            while let Some(item) = reader.next().await.unwrap() {
                got.push(item);
                while let Some(item) = reader.next_buffered() {
                    got.push(item);
                    from_buffer += 1;
                }
            }
            assert_eq!(got, want, "{input:?}");
            assert_eq!(from_buffer, buffered, "{input:?}");
        }
    }

    #[tokio::test]
    async fn a_long_line_is_discarded_and_the_next_one_read() {
        let long = format!("{{\"x\":\"{}\"}}", "a".repeat(300_000));
        let input = format!("{long}\n{{\"id\":2}}\n{long}");
        let mut reader = FrameReader::with_max_frame(input.as_bytes(), 1000);
        assert_eq!(
            reader.next().await.unwrap(),
            Some(Incoming::Invalid(InvalidLine::TooLarge))
        );
        // The buffer never grew past the limit: the line was dropped while it streamed in.
        assert!(reader.line.capacity() <= 64 * 1024 + 1001);
        assert_eq!(reader.next().await.unwrap(), Some(frame("{\"id\":2}")));
        assert_eq!(
            reader.next().await.unwrap(),
            Some(Incoming::Invalid(InvalidLine::TooLarge))
        );
        assert_eq!(reader.next().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_line_exactly_at_the_limit_passes_with_or_without_cr() {
        let line = format!("{{\"x\":\"{}\"}}", "b".repeat(90));
        let input = format!("{line}\r\n{line}\n");
        let got = read_all(FrameReader::with_max_frame(input.as_bytes(), line.len())).await;
        assert_eq!(got, vec![frame(&line), frame(&line)]);
        let got = read_all(FrameReader::with_max_frame(
            input.as_bytes(),
            line.len() - 1,
        ))
        .await;
        assert_eq!(
            got,
            vec![
                Incoming::Invalid(InvalidLine::TooLarge),
                Incoming::Invalid(InvalidLine::TooLarge)
            ]
        );
    }

    #[test]
    fn error_frames_are_json_rpc() {
        let frame = InvalidLine::TooLarge.error_frame();
        let value: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(value["id"], serde_json::Value::Null);
        assert_eq!(value["error"]["code"], -32700);
        assert_eq!(value["error"]["data"]["reason"], "frame_too_large");
        let frame = error_frame(
            Some("\"x\""),
            -32001,
            "gone",
            serde_json::json!({"reason": "r"}),
        );
        let value: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(value["id"], "x");
    }
}

//! An incremental Server-Sent Events parser, as the HTML standard defines the `text/event-stream` format.
//!
//! Bytes go in as they arrive, split anywhere (even inside a CRLF pair or a UTF-8 sequence); whole events
//! come out. Lines end with CRLF, LF or CR; a line starting with `:` is a comment; `data:` lines are joined
//! with `\n`; `event:`, `id:` and `retry:` are kept; unknown fields are ignored; a leading byte order mark is
//! dropped. An event that is still open when the stream ends is discarded, as the standard says.

use bytes::Bytes;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The event type: `message` unless an `event:` field said otherwise.
    pub(crate) event: String,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: Bytes,
    /// The last event id at the time of dispatch (empty when none was ever set or it was reset).
    pub(crate) id: String,
}

impl SseEvent {
    /// Whether this event carries a message (type `message`, the default).
    pub(crate) fn is_message(&self) -> bool {
        self.event == "message"
    }
}

/// The stream broke the parser's size limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooLarge {
    /// The limit in bytes.
    pub(crate) limit: usize,
}

/// The parser state between chunks.
#[derive(Debug)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    /// The previous chunk ended with CR: a LF at the start of the next one belongs to that line end.
    after_cr: bool,
    /// No line has been completed yet, so the first line may start with a byte order mark.
    at_start: bool,
    data: Vec<u8>,
    event: String,
    id_buffer: String,
    last_event_id: String,
    retry_ms: Option<u64>,
    limit: usize,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A parser that refuses lines and events larger than `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            data: Vec::new(),
            event: String::new(),
            id_buffer: String::new(),
            last_event_id: String::new(),
            retry_ms: None,
            limit,
        }
    }

    /// The id of the last event dispatched (or seen with an empty payload); empty when none.
    pub(crate) fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time the server asked for with `retry:`, in milliseconds.
    pub(crate) fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Feeds the next bytes of the stream, pushing every event they complete onto `out`.
    pub(crate) fn feed(
        &mut self,
        mut chunk: &[u8],
        out: &mut Vec<SseEvent>,
    ) -> Result<(), TooLarge> {
        if chunk.is_empty() {
            return Ok(());
        }
        if self.after_cr {
            self.after_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        while let Some(i) = memchr::memchr2(b'\r', b'\n', chunk) {
            self.push_line_bytes(&chunk[..i])?;
            let was_cr = chunk[i] == b'\r';
            chunk = &chunk[i + 1..];
            if was_cr {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            self.end_line(out)?;
        }
        self.push_line_bytes(chunk)
    }

    fn push_line_bytes(&mut self, bytes: &[u8]) -> Result<(), TooLarge> {
        if self.line.len() + bytes.len() > self.limit {
            return Err(TooLarge { limit: self.limit });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), TooLarge> {
        let mut line = std::mem::take(&mut self.line);
        let mut body: &[u8] = &line;
        if self.at_start {
            self.at_start = false;
            body = body.strip_prefix(BOM).unwrap_or(body);
        }
        if body.is_empty() {
            self.dispatch(out);
        } else if body[0] != b':' {
            let (field, value) = match memchr::memchr(b':', body) {
                Some(colon) => {
                    let value = &body[colon + 1..];
                    (&body[..colon], value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (body, &[][..]),
            };
            self.field(field, value)?;
        }
        line.clear();
        self.line = line;
        Ok(())
    }

    fn field(&mut self, field: &[u8], value: &[u8]) -> Result<(), TooLarge> {
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(TooLarge { limit: self.limit });
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            b"id" if !value.contains(&0) => {
                self.id_buffer = String::from_utf8_lossy(value).into_owned();
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value.iter().fold(0u64, |acc, d| {
                    acc.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                });
                self.retry_ms = Some(ms);
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        self.last_event_id.clone_from(&self.id_buffer);
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        out.push(SseEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data: Bytes::from(data),
            id: self.last_event_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> (Vec<SseEvent>, SseParser) {
        let mut parser = SseParser::new(1 << 20);
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut out).unwrap();
        }
        (out, parser)
    }

    fn ev(event: &str, data: &str, id: &str) -> SseEvent {
        SseEvent {
            event: event.to_owned(),
            data: Bytes::copy_from_slice(data.as_bytes()),
            id: id.to_owned(),
        }
    }

    /// (stream, expected events as (type, data, id), last event id, retry)
    #[allow(clippy::type_complexity)]
    const CASES: &[(&str, &[(&str, &str, &str)], &str, Option<u64>)] = &[
        ("data: a\n\n", &[("message", "a", "")], "", None),
        ("data: a\r\n\r\n", &[("message", "a", "")], "", None),
        (
            "data: a\r\rdata: b\r\r",
            &[("message", "a", ""), ("message", "b", "")],
            "",
            None,
        ),
        (
            "data: line1\ndata: line2\n\n",
            &[("message", "line1\nline2", "")],
            "",
            None,
        ),
        (
            "data:no-space\n\n",
            &[("message", "no-space", "")],
            "",
            None,
        ),
        (
            "data:  two spaces\n\n",
            &[("message", " two spaces", "")],
            "",
            None,
        ),
        (
            ": comment\ndata: x\n: another\n\n",
            &[("message", "x", "")],
            "",
            None,
        ),
        ("event: ping\ndata: {}\n\n", &[("ping", "{}", "")], "", None),
        (
            "id: 7\ndata: x\n\ndata: y\n\n",
            &[("message", "x", "7"), ("message", "y", "7")],
            "7",
            None,
        ),
        ("id: 1\n\n", &[], "1", None),
        (
            "id: 1\ndata: x\n\nid\ndata: y\n\n",
            &[("message", "x", "1"), ("message", "y", "")],
            "",
            None,
        ),
        ("id: a\0b\ndata: x\n\n", &[("message", "x", "")], "", None),
        (
            "retry: 2500\ndata: x\n\n",
            &[("message", "x", "")],
            "",
            Some(2500),
        ),
        ("retry: 25x\n\n", &[], "", None),
        ("data\n\n", &[("message", "", "")], "", None),
        ("data:\ndata:\n\n", &[("message", "\n", "")], "", None),
        ("\n\n\n", &[], "", None),
        ("event: x\n\ndata: y\n\n", &[("message", "y", "")], "", None),
        (
            "unknown: field\ndata: x\n\n",
            &[("message", "x", "")],
            "",
            None,
        ),
        ("\u{FEFF}data: bom\n\n", &[("message", "bom", "")], "", None),
        (
            "data: \u{FEFF}kept\n\n",
            &[("message", "\u{FEFF}kept", "")],
            "",
            None,
        ),
        ("data: unterminated", &[], "", None),
        (
            "data: a\n\ndata: unterminated\n",
            &[("message", "a", "")],
            "",
            None,
        ),
        ("data: a:b: c\n\n", &[("message", "a:b: c", "")], "", None),
        (
            "data: {\"jsonrpc\":\"2.0\"}\r\nid: 42\r\nevent: message\r\n\r\n",
            &[("message", "{\"jsonrpc\":\"2.0\"}", "42")],
            "42",
            None,
        ),
    ];

    #[test]
    fn every_case_parses_whole_and_split_at_every_offset() {
        for (stream, expected, last_id, retry) in CASES {
            let expected: Vec<SseEvent> = expected.iter().map(|(e, d, i)| ev(e, d, i)).collect();
            let bytes = stream.as_bytes();
            let (whole, parser) = parse_all(&[bytes]);
            assert_eq!(whole, expected, "stream {stream:?} in one chunk");
            assert_eq!(parser.last_event_id(), *last_id, "stream {stream:?}");
            assert_eq!(parser.retry_ms(), *retry, "stream {stream:?}");
            for cut in 0..=bytes.len() {
                let (split, _) = parse_all(&[&bytes[..cut], &bytes[cut..]]);
                assert_eq!(split, expected, "stream {stream:?} split at {cut}");
            }
            let singles: Vec<&[u8]> = bytes.chunks(1).collect();
            let (bytewise, _) = parse_all(&singles);
            assert_eq!(bytewise, expected, "stream {stream:?} byte by byte");
        }
    }

    #[test]
    fn every_pair_of_cuts_gives_the_same_events() {
        let stream = b"id: 1\r\ndata: {\"a\":1}\r\ndata: {\"b\":2}\r\n\r\n: keepalive\r\rretry: 10\nevent: x\ndata: y\n\n";
        let (expected, _) = parse_all(&[stream]);
        assert_eq!(expected.len(), 2);
        for a in 0..=stream.len() {
            for b in a..=stream.len() {
                let (got, parser) = parse_all(&[&stream[..a], &stream[a..b], &stream[b..]]);
                assert_eq!(got, expected, "cuts at {a} and {b}");
                assert_eq!(parser.retry_ms(), Some(10));
            }
        }
    }

    #[test]
    fn a_line_over_the_limit_is_refused() {
        let mut parser = SseParser::new(16);
        let mut out = Vec::new();
        assert_eq!(parser.feed(b"data: 0123456789", &mut out), Ok(()));
        assert_eq!(
            parser.feed(b"abcdef\n\n", &mut out),
            Err(TooLarge { limit: 16 })
        );
        assert!(out.is_empty());
    }

    #[test]
    fn data_growing_over_the_limit_is_refused() {
        // Each line fits; together they do not.
        let mut parser = SseParser::new(12);
        let mut out = Vec::new();
        assert_eq!(parser.feed(b"data: 12345\n", &mut out), Ok(()));
        assert_eq!(
            parser.feed(b"data: 678901\n", &mut out),
            Err(TooLarge { limit: 12 })
        );
    }

    #[test]
    fn crlf_split_between_chunks_is_one_line_end() {
        let (events, _) = parse_all(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
        assert_eq!(events, vec![ev("message", "a\nb", "")]);
    }

    #[test]
    fn empty_chunks_change_nothing() {
        let (events, _) = parse_all(&[b"data: a\r", b"", b"\n", b"", b"\n"]);
        assert_eq!(events, vec![ev("message", "a", "")]);
    }
}

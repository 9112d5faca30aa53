//! Streams: splitting upstream bytes into events while teeing them, and replaying recorded events.

use std::time::Instant;

use bytes::Bytes;
use calltape_recorder::http::{Stream, StreamEnd, StreamEvent, StreamFormat, bucket_delay};

use super::options::RecordTiming;

/// The stream format of a response, from its content type, or `None` for a whole body.
pub(crate) fn stream_format(content_type: Option<&str>) -> Option<StreamFormat> {
    let m = super::capture::mime(content_type.unwrap_or(""));
    match m.as_str() {
        "text/event-stream" => Some(StreamFormat::Sse),
        "application/x-ndjson"
        | "application/ndjson"
        | "application/jsonl"
        | "application/x-jsonlines"
        | "application/jsonlines" => Some(StreamFormat::Ndjson),
        _ => None,
    }
}

/// Cuts a byte stream into events as the bytes arrive, stamping each with the delay since the previous
/// one.
pub(crate) struct Splitter {
    format: StreamFormat,
    timing: RecordTiming,
    buf: Vec<u8>,
    scan_from: usize,
    last: Instant,
    events: Vec<StreamEvent>,
    bytes: u64,
}

impl Splitter {
    pub(crate) fn new(format: StreamFormat, timing: RecordTiming, start: Instant) -> Self {
        Self {
            format,
            timing,
            buf: Vec::new(),
            scan_from: 0,
            last: start,
            events: Vec::new(),
            bytes: 0,
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8], now: Instant) {
        self.bytes += chunk.len() as u64;
        self.buf.extend_from_slice(chunk);
        while let Some(end) = self.next_boundary() {
            let raw: Vec<u8> = self.buf.drain(..end).collect();
            self.scan_from = 0;
            self.emit(&raw, now);
        }
        // A boundary may straddle the next chunk: rescan the last few bytes.
        self.scan_from = self.buf.len().saturating_sub(3);
    }

    fn next_boundary(&self) -> Option<usize> {
        let b = &self.buf;
        match self.format {
            StreamFormat::Ndjson => memchr_from(b, self.scan_from, b'\n').map(|i| i + 1),
            StreamFormat::Sse => {
                let mut i = self.scan_from;
                while i < b.len() {
                    match b[i] {
                        b'\n' if b.get(i + 1) == Some(&b'\n') => return Some(i + 2),
                        b'\r' if b[i + 1..].starts_with(b"\n\r\n") => return Some(i + 4),
                        b'\r' if b.get(i + 1) == Some(&b'\r') => return Some(i + 2),
                        _ => {}
                    }
                    i += 1;
                }
                None
            }
        }
    }

    fn emit(&mut self, raw: &[u8], now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_millis();
        let elapsed = u64::try_from(elapsed).unwrap_or(u64::MAX);
        self.last = now;
        let delay = match self.timing {
            RecordTiming::Bucketed => bucket_delay(elapsed),
            RecordTiming::Full => elapsed,
            RecordTiming::Off => 0,
        };
        let text = String::from_utf8_lossy(raw);
        self.events
            .push(StreamEvent::from_raw(self.format, &text, delay));
    }

    /// Ends the stream: `error` is set when the upstream connection failed.
    pub(crate) fn finish(mut self, now: Instant, failed: bool) -> Stream {
        let partial = !self.buf.is_empty();
        if partial {
            let raw = std::mem::take(&mut self.buf);
            self.emit(&raw, now);
        }
        let end = if failed {
            StreamEnd::Reset {
                after_bytes: self.bytes,
            }
        } else if partial {
            StreamEnd::Truncated
        } else {
            StreamEnd::Clean
        };
        Stream {
            format: self.format,
            events: self.events,
            end,
        }
    }
}

fn memchr_from(b: &[u8], from: usize, needle: u8) -> Option<usize> {
    b.get(from..)?
        .iter()
        .position(|&c| c == needle)
        .map(|i| i + from)
}

/// Splits `data` at positions drawn from a xorshift generator seeded with `seed`: the same seed always
/// gives the same cuts.
pub(crate) fn rechunk(data: &Bytes, seed: u64) -> Vec<Bytes> {
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    if state == 0 {
        state = 1;
    }
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let len = 1 + usize::try_from(state % 61).unwrap_or(0);
        let end = (at + len).min(data.len());
        out.push(data.slice(at..end));
        at = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(format: StreamFormat, chunks: &[&[u8]]) -> Stream {
        let t = Instant::now();
        let mut s = Splitter::new(format, RecordTiming::Bucketed, t);
        for c in chunks {
            s.push(c, t);
        }
        s.finish(t, false)
    }

    #[test]
    fn events_split_across_chunks_rebuild_the_bytes() {
        let wire = b"event: a\ndata: 1\n\ndata: 2\r\n\r\n: ping\n\ndata: [DONE]\n\n";
        for size in [1, 2, 3, 5, 64] {
            let chunks: Vec<&[u8]> = wire.chunks(size).collect();
            let s = split(StreamFormat::Sse, &chunks);
            assert_eq!(s.events.len(), 4, "chunk size {size}");
            assert_eq!(s.end, StreamEnd::Clean);
            let back: Vec<u8> = s.events.iter().flat_map(|e| e.to_bytes(s.format)).collect();
            assert_eq!(back, wire);
        }
    }

    #[test]
    fn delays_are_stored_as_the_timing_says() {
        let t = Instant::now();
        let table = [
            (RecordTiming::Bucketed, [10, 30]),
            (RecordTiming::Full, [13, 27]),
            (RecordTiming::Off, [0, 0]),
        ];
        for (timing, expected) in table {
            let mut s = Splitter::new(StreamFormat::Sse, timing, t);
            s.push(b"data: 1\n\n", t + std::time::Duration::from_millis(13));
            s.push(b"data: 2\n\n", t + std::time::Duration::from_millis(40));
            let got: Vec<u64> = s
                .finish(t, false)
                .events
                .iter()
                .map(|e| e.delay_ms)
                .collect();
            assert_eq!(got, expected, "{timing:?}");
        }
    }

    #[test]
    fn a_stream_cut_mid_event_is_truncated() {
        let s = split(StreamFormat::Sse, &[b"data: 1\n\ndata: par"]);
        assert_eq!(s.end, StreamEnd::Truncated);
        assert_eq!(s.events[1].raw.as_deref(), Some("data: par"));
        let n = split(StreamFormat::Ndjson, &[b"{\"a\":1}\n{\"b\"", b":2}\n"]);
        assert_eq!(n.events.len(), 2);
        assert_eq!(n.events[1].data.as_deref(), Some("{\"b\":2}"));
    }

    #[test]
    fn rechunking_is_reproducible_and_lossless() {
        let data = Bytes::from((0..=255).collect::<Vec<u8>>());
        let a = rechunk(&data, 7);
        assert_eq!(a, rechunk(&data, 7));
        assert_ne!(a, rechunk(&data, 8));
        assert_eq!(a.concat(), data);
    }
}

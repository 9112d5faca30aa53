//! What routing reads from a frame: its id and method, or those of each message of a batch
//! ([`peek`], on every frame the bridge forwards); and, in `route`, the little more the Streamable HTTP
//! client routes by (the `_meta` protocol version, the name a request acts on, an answer's id and
//! `protocolVersion`), read with the same scanner.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::InvalidLine;
use super::{
    is_null,
    scanner::{Scan, fill},
    string,
};

#[cfg(any(feature = "http", feature = "serve"))]
mod route;
#[cfg(any(feature = "http", feature = "serve"))]
pub(crate) use route::{IncomingPeek, OutgoingPeek};

/// What routing needs from one JSON-RPC message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Info {
    /// The id as raw JSON text (`1`, `"a"`), when present and not null.
    pub id: Option<Box<str>>,
    /// The method, for requests and notifications.
    pub method: Option<Box<str>>,
    /// Not an object, or its `id` is an object, an array or a boolean: never forwarded.
    pub malformed: bool,
}

impl Info {
    /// A request: a method and an id.
    pub fn is_request(&self) -> bool {
        self.method.is_some() && self.id.is_some()
    }

    /// A response: an id and no method.
    pub fn is_response(&self) -> bool {
        self.method.is_none() && self.id.is_some()
    }

    /// A batch item that is not an object.
    const MALFORMED: Self = Self {
        id: None,
        method: None,
        malformed: true,
    };

    /// The info of a message with this raw `id` and `method`.
    fn of(id: Option<&str>, method: Option<&str>) -> Self {
        let raw_id = id.filter(|id| !is_null(id));
        // Only a string or a number identifies a request.
        let malformed = raw_id.is_some_and(|id| {
            !id.starts_with(|c: char| c == '"' || c == '-' || c.is_ascii_digit())
        });
        Self {
            id: raw_id.filter(|_| !malformed).map(Box::from),
            method: method.and_then(string).map(Box::from),
            malformed,
        }
    }
}

/// A single message or a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peek {
    /// One message.
    One(Info),
    /// A batch, item by item.
    Batch(Vec<Info>),
}

impl Peek {
    /// Whether it is not a request to forward: an empty batch, or a message that is malformed.
    pub fn is_invalid_request(&self) -> bool {
        match self {
            Self::One(info) => info.malformed,
            Self::Batch(infos) => infos.is_empty() || infos.iter().any(|i| i.malformed),
        }
    }

    /// Every message in it.
    pub fn infos(&self) -> &[Info] {
        match self {
            Self::One(info) => std::slice::from_ref(info),
            Self::Batch(infos) => infos,
        }
    }
}

/// Reads what routing needs from a frame, checking that all of it is JSON and that it is an object
/// or an array: [`InvalidLine::ParseError`] or [`InvalidLine::NotObject`] otherwise.
///
/// It reads the frame in one pass of the [scanner](super::Message::parse), building no value; a frame
/// the scanner leaves to `serde_json` (a repeated `id` or `method`, a key with an escape, an `id` or
/// `method` or batch that is not UTF-8) is read the same way by `serde_json`.
///
/// ```
/// use calltape_stdio_bridge::jsonrpc::{Peek, peek};
///
/// let peek = peek(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#).unwrap();
/// let Peek::One(info) = peek else { unreachable!("one message") };
/// assert_eq!((info.id.as_deref(), info.method.as_deref()), (Some("7"), Some("tools/call")));
/// assert!(info.is_request());
/// ```
pub fn peek(frame: &[u8]) -> Result<Peek, InvalidLine> {
    match scan_peek(frame) {
        Some(peek) => Ok(peek),
        None => serde_peek(frame),
    }
}

/// The scanner's reading of a frame; `None` when it does not cover the frame exactly.
fn scan_peek(frame: &[u8]) -> Option<Peek> {
    let mut scan = Scan::bytes(frame);
    scan.blanks();
    let peek = match scan.peek()? {
        b'{' => Peek::One(read_info(&mut scan)?),
        b'[' => {
            // `serde_json` reads each item of a batch as text, so all of it must be UTF-8.
            std::str::from_utf8(frame).ok()?;
            let mut infos = Vec::new();
            scan.items(|scan| {
                infos.push(if scan.peek()? == b'{' {
                    read_info(scan)?
                } else {
                    scan.skip()?;
                    Info::MALFORMED
                });
                Some(())
            })?;
            Peek::Batch(infos)
        }
        _ => return None,
    };
    scan.finish().then_some(peek)
}

/// Reads a message's `id` and `method` from its opening bracket, skipping the rest as `serde_json`
/// skips what it does not read; `None` when either is repeated or is not UTF-8, or a key holds an
/// escape or is not UTF-8.
fn read_info(scan: &mut Scan<'_>) -> Option<Info> {
    let (id, method) = read_raw(scan)?;
    Some(Info::of(id, method))
}

/// [`read_info`]'s reading of the raw `id` and `method`, before anything is made of them.
fn read_raw<'a>(scan: &mut Scan<'a>) -> Option<(Option<&'a str>, Option<&'a str>)> {
    let (mut id, mut method) = (None, None);
    scan.message_members(|scan, key| {
        let slot = match key {
            b"id" => &mut id,
            b"method" => &mut method,
            // `serde_json` reads every key of the message as text, skipped ones included.
            _ => {
                std::str::from_utf8(key).ok()?;
                return scan.skip().map(drop);
            }
        };
        fill(slot, scan.span()?)
    })?;
    Some((utf8(id)?, utf8(method)?))
}

/// Whether [`peek`] takes `frame` for a message, with the same error when not; for a reader that
/// only checks the frame, a single message costs no allocation.
pub(crate) fn check(frame: &[u8]) -> Result<(), InvalidLine> {
    let mut scan = Scan::bytes(frame);
    scan.blanks();
    if scan.peek() == Some(b'{') && read_raw(&mut scan).is_some() && scan.finish() {
        return Ok(());
    }
    peek(frame).map(drop)
}

/// A span as text: `Some(None)` when there is none, `None` when it is not UTF-8.
fn utf8(span: Option<&[u8]>) -> Option<Option<&str>> {
    span.map(std::str::from_utf8).transpose().ok()
}

#[derive(Deserialize)]
struct RawFields<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
}

fn info_of(fields: RawFields<'_>) -> Info {
    Info::of(
        fields.id.map(RawValue::get),
        fields.method.map(RawValue::get),
    )
}

/// The `serde_json` reading of a frame, for what the scanner leaves.
fn serde_peek(frame: &[u8]) -> Result<Peek, InvalidLine> {
    let first = frame.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        Some(b'{') => serde_json::from_slice::<RawFields<'_>>(frame)
            .map(|fields| Peek::One(info_of(fields)))
            .map_err(|_| InvalidLine::ParseError),
        Some(b'[') => {
            let items: Vec<&RawValue> =
                serde_json::from_slice(frame).map_err(|_| InvalidLine::ParseError)?;
            Ok(Peek::Batch(
                items
                    .into_iter()
                    .map(|item| {
                        if item.get().starts_with('{') {
                            serde_json::from_str::<RawFields<'_>>(item.get())
                                .map(info_of)
                                .unwrap_or(Info::MALFORMED)
                        } else {
                            Info::MALFORMED
                        }
                    })
                    .collect(),
            ))
        }
        _ => match serde_json::from_slice::<serde::de::IgnoredAny>(frame) {
            Ok(_) => Err(InvalidLine::NotObject),
            Err(_) => Err(InvalidLine::ParseError),
        },
    }
}

/// Peeks at `frame` with the scanner and with `serde_json`, and panics where both read it and
/// disagree; whether the scanner read it.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn check_peek(frame: &[u8]) -> bool {
    let Some(ours) = scan_peek(frame) else {
        return false;
    };
    let theirs = serde_peek(frame);
    assert_eq!(
        Ok(&ours),
        theirs.as_ref(),
        "{}",
        String::from_utf8_lossy(frame)
    );
    true
}

#[cfg(test)]
mod tests {
    use super::super::agreement::random_messages;
    use super::*;

    #[test]
    fn peek_reads_ids_and_methods() {
        let cases: &[(&str, Option<&str>, Option<&str>)] = &[
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#,
                Some("7"),
                Some("tools/list"),
            ),
            (r#"{"id":"a\"b","result":{}}"#, Some(r#""a\"b""#), None),
            (
                r#"{"method":"notifications/initialized"}"#,
                None,
                Some("notifications/initialized"),
            ),
            (r#"{"id":null,"error":{}}"#, None, None),
            (r#"{"id":1,"method":5}"#, Some("1"), None),
        ];
        for (input, id, method) in cases {
            let Peek::One(info) = peek(input.as_bytes()).unwrap() else {
                panic!("{input} is not one message");
            };
            assert_eq!(info.id.as_deref(), *id, "{input}");
            assert_eq!(info.method.as_deref(), *method, "{input}");
        }
        let Peek::Batch(infos) = peek(br#"[{"id":1,"method":"a"},3,{"method":"b"}]"#).unwrap()
        else {
            panic!("not a batch");
        };
        assert_eq!(infos.len(), 3);
        assert!(infos[0].is_request());
        assert!(infos[1].malformed);
        assert!(!infos[0].malformed && !infos[2].malformed);
        assert_eq!(infos[2].method.as_deref(), Some("b"));
    }

    /// What a peek reads: one message's (id, method, malformed), each of a batch's, or why the frame
    /// is no message.
    #[derive(Debug, Clone, PartialEq)]
    enum Read {
        One(Option<&'static str>, Option<&'static str>, bool),
        Batch(Vec<(Option<&'static str>, Option<&'static str>, bool)>),
        Invalid(InvalidLine),
    }

    fn read(peek: Result<Peek, InvalidLine>) -> Read {
        let fields = |info: &Info| {
            let leak = |s: &Option<Box<str>>| s.clone().map(|s| &*Box::leak(s));
            (leak(&info.id), leak(&info.method), info.malformed)
        };
        match peek {
            Ok(Peek::One(info)) => {
                let (id, method, malformed) = fields(&info);
                Read::One(id, method, malformed)
            }
            Ok(Peek::Batch(infos)) => Read::Batch(infos.iter().map(fields).collect()),
            Err(why) => Read::Invalid(why),
        }
    }

    fn nested(depth: usize, open: &str, close: &str) -> String {
        format!("{}1{}", open.repeat(depth), close.repeat(depth))
    }

    /// Hostile frames: the peek reads each as `serde_json` does (the table holds what both give), and
    /// the scanner takes those it covers exactly. One table of rows, over 120 lines: a case is a row.
    #[test]
    fn hostile_frames_are_read_as_serde_json_reads_them() {
        // One piece: a table of rows, a case per row.
        use InvalidLine::{NotObject, ParseError};
        let deep = 100_000;
        let huge = "x".repeat(4 << 20);
        let request = Read::One(Some("1"), Some("a"), false);
        // (frame, what a peek reads, whether the scanner covers it)
        let cases: Vec<(Vec<u8>, Read, bool)> = vec![
            // Deep nesting, in a member routing skips and as a batch item.
            (
                format!(
                    r#"{{"id":1,"method":"a","params":{{"x":{}}}}}"#,
                    nested(deep, "[", "]")
                )
                .into_bytes(),
                request.clone(),
                true,
            ),
            (
                format!(
                    r#"{{"id":1,"method":"a","x":{}}}"#,
                    nested(deep, r#"{"k":"#, "}")
                )
                .into_bytes(),
                request.clone(),
                true,
            ),
            (
                format!(r#"{{"id":1,"method":"a","x":{}"#, "[".repeat(deep)).into_bytes(),
                Read::Invalid(ParseError),
                false,
            ),
            (
                format!(r#"{{"id":1,"method":"a","x":{}]}}"#, nested(deep, "[", "}")).into_bytes(),
                Read::Invalid(ParseError),
                false,
            ),
            (
                nested(deep, "[", "]").into_bytes(),
                Read::Batch(vec![(None, None, true)]),
                true,
            ),
            // Huge strings, whole or cut.
            (
                format!(r#"{{"id":1,"method":"a","params":{{"text":"{huge}"}}}}"#).into_bytes(),
                request.clone(),
                true,
            ),
            (
                format!(r#"{{"id":"{huge}","method":"a"}}"#).into_bytes(),
                Read::One(
                    Some(Box::leak(format!("\"{huge}\"").into_boxed_str())),
                    Some("a"),
                    false,
                ),
                true,
            ),
            (
                format!(r#"{{"id":1,"method":"a","params":{{"text":"{huge}}}}}"#).into_bytes(),
                Read::Invalid(ParseError),
                false,
            ),
            // Bytes that are not UTF-8: where `serde_json` reads only past them, they pass.
            (
                b"{\"id\":1,\"method\":\"a\",\"x\":\"\xff\xfe\"}".to_vec(),
                request.clone(),
                true,
            ),
            (
                b"{\"id\":\"\xff\",\"method\":\"a\"}".to_vec(),
                Read::Invalid(ParseError),
                false,
            ),
            (
                b"{\"id\":1,\"method\":\"\xc3\"}".to_vec(),
                Read::Invalid(ParseError),
                false,
            ),
            (
                b"[{\"id\":1,\"x\":\"\xed\xa0\x80\"}]".to_vec(),
                Read::Invalid(ParseError),
                false,
            ),
            (
                b"{\"id\":1,\xff}".to_vec(),
                Read::Invalid(ParseError),
                false,
            ),
            (
                b"{\"id\":1,\"\x89\x89password\":2}".to_vec(),
                Read::Invalid(ParseError),
                false,
            ),
            // Duplicate keys: a repeated id or method is no message, a repeated other key is.
            (
                br#"{"id":1,"id":2,"method":"a"}"#.to_vec(),
                Read::Invalid(ParseError),
                false,
            ),
            (
                br#"{"id":1,"method":"a","method":"b"}"#.to_vec(),
                Read::Invalid(ParseError),
                false,
            ),
            (
                br#"{"id":1,"method":"a","x":1,"x":2}"#.to_vec(),
                request.clone(),
                true,
            ),
            (
                br#"{"id":1,"method":"a","params":{},"params":[]}"#.to_vec(),
                request.clone(),
                true,
            ),
            (
                br#"{"id":1,"result":1,"result":2}"#.to_vec(),
                Read::One(Some("1"), None, false),
                true,
            ),
            (
                br#"[{"id":1,"id":2,"method":"a"},{"id":3,"method":"b"}]"#.to_vec(),
                Read::Batch(vec![(None, None, true), (Some("3"), Some("b"), false)]),
                false,
            ),
            // Keys and methods written with escapes.
            (
                br#"{"\u0069d":1,"method":"a"}"#.to_vec(),
                request.clone(),
                false,
            ),
            (
                br#"{"id":1,"method":"\u0061"}"#.to_vec(),
                request.clone(),
                true,
            ),
            (
                br#"{"id":1,"method":"\ud800"}"#.to_vec(),
                Read::One(Some("1"), None, false),
                true,
            ),
            // Ids of every kind.
            (
                br#"{"id":true,"method":"a"}"#.to_vec(),
                Read::One(None, Some("a"), true),
                true,
            ),
            (
                br#"{"id":[1],"method":"a"}"#.to_vec(),
                Read::One(None, Some("a"), true),
                true,
            ),
            (
                br#"{"id":{"a":1},"method":"a"}"#.to_vec(),
                Read::One(None, Some("a"), true),
                true,
            ),
            (
                br#"{"id":-1e400,"method":"a"}"#.to_vec(),
                Read::One(Some("-1e400"), Some("a"), false),
                true,
            ),
            (
                br#"{"id":01,"method":"a"}"#.to_vec(),
                Read::Invalid(ParseError),
                false,
            ),
            // Params that are not an object, blanks, batches and what is no message.
            (
                br#"{"id":1,"method":"a","params":[1,2]}"#.to_vec(),
                request.clone(),
                true,
            ),
            (
                b" \t{ \"id\" : 1 ,\r\n\"method\":\"a\" }\n".to_vec(),
                request.clone(),
                true,
            ),
            (
                b"\x0c{\"id\":1,\"method\":\"a\"}".to_vec(),
                Read::Invalid(ParseError),
                false,
            ),
            (b"[]".to_vec(), Read::Batch(vec![]), true),
            (
                b"[1,\"a\",null]".to_vec(),
                Read::Batch(vec![(None, None, true); 3]),
                true,
            ),
            (b"[{},]".to_vec(), Read::Invalid(ParseError), false),
            (b"42".to_vec(), Read::Invalid(NotObject), false),
            (b"\"{}\"".to_vec(), Read::Invalid(NotObject), false),
            (b"{}{}".to_vec(), Read::Invalid(ParseError), false),
            (b"{\"id\":1} x".to_vec(), Read::Invalid(ParseError), false),
            (b"{\"id\":1,}".to_vec(), Read::Invalid(ParseError), false),
            (
                b"{\"id\":1,\"method\":\"a\nb\"}".to_vec(),
                Read::Invalid(ParseError),
                false,
            ),
        ];
        for (frame, expected, scanned) in cases {
            let shown = String::from_utf8_lossy(&frame[..frame.len().min(80)]).into_owned();
            assert_eq!(read(peek(&frame)), expected, "{shown}");
            assert_eq!(read(serde_peek(&frame)), expected, "serde_json: {shown}");
            assert_eq!(check_peek(&frame), scanned, "scanned: {shown}");
            assert_eq!(check(&frame), peek(&frame).map(drop), "check: {shown}");
        }
    }

    /// Random messages, alone and in batches: where the scanner reads one, it reads what
    /// `serde_json` reads.
    #[test]
    fn random_frames_peek_as_serde_json_peeks_them() {
        let mut previous = String::from("{}");
        let mut scanned = 0;
        random_messages(20_000, |text| {
            for frame in [
                text.to_owned(),
                format!("[{previous},{text}]"),
                format!("[{text}]"),
            ] {
                scanned += usize::from(check_peek(frame.as_bytes()));
                let frame = frame.as_bytes();
                assert_eq!(check(frame), peek(frame).map(drop), "check: {text}");
            }
            previous = text.to_owned();
        });
        assert!(scanned > 20_000, "too few frames were scanned: {scanned}");
    }
}

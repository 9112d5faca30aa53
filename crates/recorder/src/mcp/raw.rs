//! Reading JSON-RPC messages as borrowed JSON text, without building `Value` trees: how the recorder
//! keeps up with a busy session.
//!
//! Each part the recorder needs (`id`, `method`, `params`, `result`, `error`, a tool's `arguments`) is
//! taken as the exact text the peer sent, in one pass of a strict scanner that checks the whole
//! message as `serde_json` would. Anything this reading does not cover exactly (a message that is not
//! an object, a repeated key, a key written with escapes, `params` that are not an object) makes the
//! caller fall back to the `Value` reading, which covers every case.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON-RPC message with the parts the recorder reads left as raw JSON text. A part that is present
/// is `Some`, even when it is `null`.
#[derive(Debug, Default)]
pub(crate) struct Message<'a> {
    pub(crate) id: Option<&'a str>,
    pub(crate) method: Option<&'a str>,
    /// Read in the same pass; `None` when absent or `null`.
    pub(crate) params: Option<CallParams<'a>>,
    pub(crate) result: Option<Json<'a>>,
    pub(crate) error: Option<&'a str>,
}

/// The parts of a request's `params` that `tools/call`, `prompts/get` and `resources/read` are
/// recorded from.
#[derive(Debug, Default)]
pub(crate) struct CallParams<'a> {
    pub(crate) name: Option<&'a str>,
    pub(crate) uri: Option<&'a str>,
    pub(crate) arguments: Option<Json<'a>>,
    pub(crate) meta: Option<&'a str>,
}

/// A value's JSON text, and whether it has no blank between its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Json<'a> {
    pub(crate) text: &'a str,
    pub(crate) compact: bool,
}

impl<'a> Message<'a> {
    /// Reads one message in a single pass over its text, checking that all of it is JSON.
    ///
    /// `None` (read it as a `Value` instead) when the text is not JSON, is not an object, has
    /// `params` that are neither an object nor `null`, repeats one of the keys read here, or spells a
    /// key of the message or of its `params` with an escape.
    pub(crate) fn parse(text: &'a str) -> Option<Self> {
        let mut message = Message::default();
        let mut params_seen = false;
        let mut scan = Scan::new(text);
        let each = |scan: &mut Scan<'a>, key: &[u8]| {
            let slot = match key {
                b"id" => &mut message.id,
                b"method" => &mut message.method,
                b"error" => &mut message.error,
                b"result" => return fill(&mut message.result, scan.value()?),
                b"params" => {
                    if std::mem::replace(&mut params_seen, true) {
                        return None;
                    }
                    if scan.literal(b"null") {
                        return Some(());
                    }
                    message.params = Some(CallParams::read(scan)?);
                    return Some(());
                }
                _ => return scan.value().map(drop),
            };
            fill(slot, scan.value()?.text)
        };
        // Nearly every message opens with its version, a member whose value is not needed: it is
        // taken in one comparison.
        if text.as_bytes().starts_with(VERSION) {
            scan.at = VERSION.len();
            scan.blanks();
            scan.more_members(each)?;
        } else {
            scan.blanks();
            scan.members(each)?;
        }
        scan.blanks();
        scan.at_end().then_some(message)
    }
}

impl<'a> CallParams<'a> {
    fn read(scan: &mut Scan<'a>) -> Option<Self> {
        let mut params = CallParams::default();
        scan.members(|scan, key| {
            let slot = match key {
                b"name" => &mut params.name,
                b"uri" => &mut params.uri,
                b"_meta" => &mut params.meta,
                b"arguments" => return fill(&mut params.arguments, scan.value()?),
                _ => return scan.value().map(drop),
            };
            fill(slot, scan.value()?.text)
        })?;
        Some(params)
    }
}

/// How a message nearly always opens.
const VERSION: &[u8] = br#"{"jsonrpc":"2.0","#;

/// The bytes of eight (read little-endian) that end a plain run inside a JSON string: a quote, a
/// backslash or a control byte. Each such byte has its high bit set in the result; the lowest set bit
/// is exact (borrows only reach bytes above a match).
#[inline(always)]
pub(crate) fn string_stops(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    (quote.wrapping_sub(ONES) & !quote
        | backslash.wrapping_sub(ONES) & !backslash
        | w.wrapping_sub(ONES * 0x20) & !w)
        & HIGHS
}

/// Sets a part read once; `None` when it was already set (a repeated key).
fn fill<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

/// The brackets open around a point of a value: one bit per bracket, set for an object.
#[derive(Default)]
struct Nesting {
    /// The innermost 64 brackets, the innermost in the lowest bit.
    bits: u64,
    depth: usize,
    /// The bits of brackets pushed out of `bits`, innermost last.
    outer: Vec<u64>,
}

impl Nesting {
    fn push(&mut self, object: bool) {
        if self.depth.is_multiple_of(64) && self.depth > 0 {
            self.outer.push(self.bits);
            self.bits = 0;
        }
        self.bits = self.bits << 1 | u64::from(object);
        self.depth += 1;
    }

    fn pop(&mut self) {
        self.depth -= 1;
        self.bits >>= 1;
        if self.depth.is_multiple_of(64) && self.depth > 0 {
            self.bits = self.outer.pop().unwrap_or(0);
        }
    }

    /// Whether the innermost open bracket is an object's; `None` when none is open.
    fn innermost(&self) -> Option<bool> {
        (self.depth > 0).then_some(self.bits & 1 == 1)
    }
}

/// A strict JSON reader over one text, as `serde_json` reads it: any byte it does not expect ends
/// the reading with `None`.
struct Scan<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn at_end(&self) -> bool {
        self.at == self.bytes.len()
    }

    /// Skips blanks; whether there were any.
    #[inline(always)]
    fn blanks(&mut self) -> bool {
        // Most tokens follow one another with no blank.
        if self.peek().is_none_or(|b| b > b' ') {
            return false;
        }
        let start = self.at;
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
        self.at != start
    }

    /// Takes `byte`, or fails.
    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Takes `word` when the text goes on with it.
    fn literal(&mut self, word: &[u8]) -> bool {
        let found = self.bytes[self.at..].starts_with(word);
        if found {
            self.at += word.len();
        }
        found
    }

    /// Reads an object's members, handing each unescaped key to `each`, which reads the value; blanks
    /// around keys, colons and values are skipped here.
    fn members(&mut self, each: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.expect(b'{')?;
        self.blanks();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        self.more_members(each)
    }

    /// [`members`](Self::members) from the first key after a comma.
    fn more_members(
        &mut self,
        mut each: impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        loop {
            let start = self.at + 1;
            if self.string()? {
                return None;
            }
            let key = &self.bytes[start..self.at - 1];
            self.blanks();
            self.expect(b':')?;
            self.blanks();
            each(self, key)?;
            self.blanks();
            match self.peek()? {
                b',' => {
                    self.at += 1;
                    self.blanks();
                }
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Reads any value, checking all of it.
    fn value(&mut self) -> Option<Json<'a>> {
        let start = self.at;
        let compact = match self.peek()? {
            b'{' | b'[' => self.nested()?,
            _ => {
                self.scalar()?;
                true
            }
        };
        Some(Json {
            text: &self.text[start..self.at],
            compact,
        })
    }

    /// A string, a number or a literal.
    #[inline(always)]
    fn scalar(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b't' if self.literal(b"true") => Some(()),
            b'f' if self.literal(b"false") => Some(()),
            b'n' if self.literal(b"null") => Some(()),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An object or an array, from its opening bracket; whether it has no blank between tokens.
    fn nested(&mut self) -> Option<bool> {
        let mut compact = true;
        let mut open = Nesting::default();
        loop {
            // At a value.
            match self.peek()? {
                bracket @ (b'{' | b'[') => {
                    let object = bracket == b'{';
                    open.push(object);
                    self.at += 1;
                    compact &= !self.blanks();
                    if self.peek()? != if object { b'}' } else { b']' } {
                        if object {
                            compact &= self.member_key()?;
                        }
                        continue;
                    }
                    self.at += 1;
                    open.pop();
                }
                _ => self.scalar()?,
            }
            // After a value: the brackets it closes, then a comma and the next member's key.
            loop {
                let Some(object) = open.innermost() else {
                    return Some(compact);
                };
                compact &= !self.blanks();
                match (self.peek()?, object) {
                    (b',', _) => {
                        self.at += 1;
                        compact &= !self.blanks();
                        if object {
                            compact &= self.member_key()?;
                        }
                        break;
                    }
                    (b'}', true) | (b']', false) => {
                        self.at += 1;
                        open.pop();
                    }
                    _ => return None,
                }
            }
        }
    }

    /// Inside an object: a key, its colon and the blanks up to the value; whether there were none.
    fn member_key(&mut self) -> Option<bool> {
        if self.peek()? != b'"' {
            return None;
        }
        self.string()?;
        let mut compact = !self.blanks();
        self.expect(b':')?;
        compact &= !self.blanks();
        Some(compact)
    }

    /// Reads a string from its opening quote; whether it holds an escape.
    #[inline(always)]
    fn string(&mut self) -> Option<bool> {
        let bytes = self.bytes;
        if bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let mut i = self.at + 1;
        let mut escaped = false;
        loop {
            // Eight bytes at a time up to a quote, a backslash or a control byte.
            while let Some(chunk) = bytes.get(i..i + 8) {
                let mut word = [0; 8];
                word.copy_from_slice(chunk);
                let found = string_stops(u64::from_le_bytes(word));
                if found != 0 {
                    i += (found.trailing_zeros() / 8) as usize;
                    break;
                }
                i += 8;
            }
            match *bytes.get(i)? {
                b'"' => {
                    self.at = i + 1;
                    return Some(escaped);
                }
                b'\\' => {
                    escaped = true;
                    match *bytes.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        b'u' => {
                            let hex = bytes.get(i + 2..i + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            i += 6;
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => i += 1,
            }
        }
    }

    /// Reads a number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        let rest = &self.bytes[self.at..];
        self.at += rest
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(rest.len());
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }
}

/// The top-level `isError` of a tool result, spelled in any way JSON allows.
#[derive(Deserialize)]
struct ResultHead<'a> {
    #[serde(default, borrow, rename = "isError", deserialize_with = "present")]
    is_error: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

/// The string a raw JSON text holds; `None` when it is not a string.
pub(crate) fn string(text: &str) -> Option<Cow<'_, str>> {
    let inner = text.strip_prefix('"')?;
    // A string without escapes is its own content (a valid string holds no raw control byte).
    if let Some(content) = inner.strip_suffix('"')
        && !content.contains(['\\', '"'])
    {
        return Some(Cow::Borrowed(content));
    }
    serde_json::from_str(text).ok()
}

/// Whether a raw JSON text is `null`.
pub(crate) fn is_null(text: &str) -> bool {
    text.trim() == "null"
}

/// A request id as a map key: a plain whole number as itself, any other id as its JSON text the way
/// `Value::to_string` writes it, so `1` and `"1"` stay apart and both readings of a message agree.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum IdKey {
    Number(u64),
    Text(String),
}

impl IdKey {
    /// The key of an id given as raw JSON.
    pub(crate) fn of_raw(text: &str) -> Self {
        let text = text.trim();
        if !text.is_empty()
            && text.len() <= 19
            && text.bytes().all(|b| b.is_ascii_digit())
            && (text == "0" || !text.starts_with('0'))
            && let Ok(n) = text.parse()
        {
            return Self::Number(n);
        }
        if text.len() >= 2 && text.starts_with('"') && !text.contains('\\') {
            return Self::Text(text.to_owned());
        }
        match serde_json::from_str::<Value>(text) {
            Ok(id) => Self::of_value(&id),
            Err(_) => Self::Text(text.to_owned()),
        }
    }

    /// The key of an id given as a `Value`.
    pub(crate) fn of_value(id: &Value) -> Self {
        match id {
            Value::Number(n) if n.is_u64() => n
                .as_u64()
                .map_or_else(|| Self::Text(id.to_string()), Self::Number),
            _ => Self::Text(id.to_string()),
        }
    }
}

/// Hashes request ids: they come from the session's own client, so a hash built for speed, not for
/// resisting chosen keys, is enough.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A map keyed by request id.
pub(crate) type IdMap<V> =
    std::collections::HashMap<IdKey, V, std::hash::BuildHasherDefault<IdHasher>>;

/// Whether a `result` may be a tool result with `isError` set (when it is, the answer is recorded as
/// an error and the `Value` reading takes over).
pub(crate) fn may_be_tool_error(result: &str) -> bool {
    if result.contains("isError") {
        return true;
    }
    if !result.contains("\\u") {
        return false;
    }
    // A key may spell `isError` with escapes: read the top-level keys.
    match serde_json::from_str::<ResultHead<'_>>(result) {
        Ok(head) => head.is_error.is_some(),
        Err(_) => true,
    }
}

/// `json` without the blanks between its tokens, so that a recorded input or answer fits on its line
/// and is as short as the peer could have sent it. Strings are left exactly as they were.
pub(crate) fn compact(json: &str) -> Cow<'_, str> {
    let bytes = json.as_bytes();
    let Some(first) = first_blank(bytes) else {
        return Cow::Borrowed(json);
    };
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&bytes[..first]);
    let mut in_string = false;
    let mut i = first;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            out.push(b);
            if b == b'\\' {
                if let Some(&next) = bytes.get(i + 1) {
                    out.push(next);
                }
                i += 2;
                continue;
            }
            in_string = b != b'"';
        } else if b == b'"' {
            in_string = true;
            out.push(b);
        } else if !is_blank(b) {
            out.push(b);
        }
        i += 1;
    }
    // Only ASCII blanks were taken out of valid UTF-8, so this always holds.
    match String::from_utf8(out) {
        Ok(out) => Cow::Owned(out),
        Err(_) => Cow::Borrowed(json),
    }
}

/// A redactor's output (borrowed when nothing was redacted), compacted.
pub(crate) fn compact_redacted(redacted: Cow<'_, str>) -> Cow<'_, str> {
    match redacted {
        Cow::Borrowed(text) => compact(text),
        Cow::Owned(text) => Cow::Owned(compact(&text).into_owned()),
    }
}

/// Where the first blank outside a string is.
fn first_blank(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    loop {
        // Between tokens: up to the next string or blank.
        loop {
            let b = *bytes.get(i)?;
            if b == b'"' {
                break;
            }
            if is_blank(b) {
                return Some(i);
            }
            i += 1;
        }
        // Inside a string: to its closing quote.
        i += 1;
        loop {
            i += memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
            if bytes[i] == b'"' {
                i += 1;
                break;
            }
            i += 2;
        }
    }
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The `serde_json` reading the scanner stands for, and the check that both agree: for the tests and
/// the fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod agreement {
    use std::borrow::Cow;

    use serde::Deserialize;
    use serde_json::value::RawValue;

    use super::{CallParams, Json, Message, compact, present};

    /// How the scanner took a text that it read as `serde_json` does.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Reading {
        /// Both read it, to the same parts.
        Read,
        /// `serde_json` reads it; the scanner leaves it to the `Value` reading (a key with an
        /// escape).
        LeftToValue,
        /// Neither reads it.
        Refused,
    }

    /// Reads `text` both ways and panics where they disagree.
    pub(crate) fn check_message_reading(text: &str) -> Reading {
        match (Message::parse(text), reference(text)) {
            (Some(ours), Some(theirs)) => {
                assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{text}");
                Reading::Read
            }
            (None, Some(_)) => {
                assert!(
                    text.contains('\\'),
                    "the scanner refused what serde_json reads: {text}"
                );
                Reading::LeftToValue
            }
            (Some(_), None) => panic!("the scanner read what serde_json refuses: {text}"),
            (None, None) => Reading::Refused,
        }
    }

    /// The `serde_json` reading the scanner stands for.
    #[derive(Deserialize)]
    struct Reference<'a> {
        #[serde(default, borrow, deserialize_with = "present")]
        id: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        method: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        params: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        result: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        error: Option<&'a RawValue>,
    }

    #[derive(Deserialize)]
    struct ReferenceParams<'a> {
        #[serde(default, borrow, deserialize_with = "present")]
        name: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        uri: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        arguments: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present", rename = "_meta")]
        meta: Option<&'a RawValue>,
    }

    /// The message as `serde_json` reads it, in the scanner's terms.
    fn reference(text: &str) -> Option<Message<'_>> {
        fn get(raw: Option<&RawValue>) -> Option<&str> {
            raw.map(RawValue::get)
        }
        fn json(raw: Option<&RawValue>) -> Option<Json<'_>> {
            raw.map(|raw| Json {
                text: raw.get(),
                compact: matches!(compact(raw.get()), Cow::Borrowed(_)),
            })
        }
        if !text.trim_start().starts_with('{') {
            return None;
        }
        let m: Reference<'_> = serde_json::from_str(text).ok()?;
        let params = match m.params.map(RawValue::get) {
            None | Some("null") => None,
            Some(params) if params.starts_with('{') => {
                let p: ReferenceParams<'_> = serde_json::from_str(params).ok()?;
                Some(CallParams {
                    name: get(p.name),
                    uri: get(p.uri),
                    arguments: json(p.arguments),
                    meta: get(p.meta),
                })
            }
            Some(_) => return None,
        };
        Some(Message {
            id: get(m.id),
            method: get(m.method),
            params,
            result: json(m.result),
            error: get(m.error),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::agreement::{Reading, check_message_reading};
    use super::*;

    fn raw(text: &str) -> &str {
        assert!(serde_json::from_str::<&RawValue>(text).is_ok(), "{text}");
        text
    }

    #[test]
    fn messages_keep_present_nulls_and_refuse_what_is_not_an_object() {
        let m = Message::parse(r#"{"jsonrpc":"2.0","id":null,"result":null}"#).unwrap();
        assert_eq!(m.id, Some("null"));
        assert_eq!(m.result.map(|r| r.text), Some("null"));
        assert!(m.error.is_none() && m.method.is_none() && m.params.is_none());
        assert!(Message::parse(r#"[1,"tools/call"]"#).is_none());
        assert!(Message::parse(r#"{"id":1,"id":2}"#).is_none());
        assert!(Message::parse(r#"{"id":1"#).is_none());
        assert!(Message::parse(r#"{"id":1,"params":["x"]}"#).is_none());
        assert!(Message::parse(r#"{"id":1,"params":{"name":"a","name":"b"}}"#).is_none());
        assert!(Message::parse(r#"{"id":1,"params":null,"params":{}}"#).is_none());
        assert!(Message::parse(r#"{"\u0069d":1}"#).is_none());
        let m = Message::parse(
            r#" {"id":1,"params":{"name":"a","x":[{}],"arguments": {"k" :[1, {}]}}} "#,
        )
        .unwrap();
        let params = m.params.unwrap();
        assert_eq!(params.name, Some(r#""a""#));
        let arguments = params.arguments.unwrap();
        assert_eq!(arguments.text, r#"{"k" :[1, {}]}"#);
        assert!(!arguments.compact);
        assert!(params.uri.is_none() && params.meta.is_none());
        let m = Message::parse(r#"{"id":"a","result":{"s":"x y","n":[-0.5e+3,true]}}"#).unwrap();
        assert_eq!(m.result.map(|r| r.compact), Some(true));
    }

    #[test]
    fn deep_values_are_read_whole_and_a_wrong_bracket_at_any_depth_is_refused() {
        for depth in [1, 63, 64, 65, 128, 129, 300] {
            let mut value = String::new();
            for level in 0..depth {
                value.push_str(if level % 3 == 0 { "{\"k\":" } else { "[1," });
            }
            value.push_str("null");
            for level in (0..depth).rev() {
                value.push(if level % 3 == 0 { '}' } else { ']' });
            }
            let text = format!(r#"{{"id":1,"result":{value}}}"#);
            let m = Message::parse(&text).unwrap_or_else(|| panic!("depth {depth}"));
            assert_eq!(
                m.result.map(|r| r.text),
                Some(value.as_str()),
                "depth {depth}"
            );
            for wrong in [1, depth / 2, depth - 1] {
                // The bracket that closes level `wrong` (counted from the outside) swapped.
                let at = text.len() - 1 - wrong - 1;
                let mut bytes = text.clone().into_bytes();
                bytes[at] = if bytes[at] == b'}' { b']' } else { b'}' };
                let broken = String::from_utf8(bytes).unwrap();
                assert!(Message::parse(&broken).is_none(), "{broken}");
                assert!(serde_json::from_str::<Value>(&broken).is_err());
            }
        }
    }

    /// Texts built from JSON-RPC pieces, blanks and stray bytes: the scanner reads each exactly as
    /// `serde_json` does, or leaves it to the `Value` reading when a key is written with an escape.
    #[test]
    fn random_messages_read_as_serde_json_reads_them() {
        const KEYS: [&str; 11] = [
            "id",
            "method",
            "params",
            "result",
            "error",
            "jsonrpc",
            "name",
            "uri",
            "arguments",
            "_meta",
            "x",
        ];
        const SCALARS: [&str; 16] = [
            "1",
            "-0",
            "0.5",
            "2e-3",
            "-1.5E+2",
            "01",
            "1.",
            "true",
            "false",
            "null",
            "nul",
            r#""a b""#,
            r#""\"q\u00e9\n""#,
            r#""é\/""#,
            r#""\x""#,
            r#""\u12""#,
        ];
        const STRAY: [&str; 12] = [
            "{", "}", "[", "]", ",", ":", "\"", "\\", " ", "\n", "x", "\u{1}",
        ];
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |n: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize % n
        };
        fn value(next: &mut dyn FnMut(usize) -> usize, depth: usize, out: &mut String) {
            let blank = |next: &mut dyn FnMut(usize) -> usize, out: &mut String| {
                if next(4) == 0 {
                    out.push_str([" ", "\n", "\t ", "\r\n"][next(4)]);
                }
            };
            // A message is an object; deeper values are anything.
            match if depth == 0 {
                0
            } else if depth > 3 {
                2
            } else {
                next(4)
            } {
                0 => {
                    out.push('{');
                    for k in 0..next(4) {
                        if k > 0 {
                            out.push(',');
                        }
                        blank(next, out);
                        out.push_str(&format!("\"{}\"", KEYS[next(KEYS.len())]));
                        blank(next, out);
                        out.push(':');
                        blank(next, out);
                        value(next, depth + 1, out);
                        blank(next, out);
                    }
                    out.push('}');
                }
                1 => {
                    out.push('[');
                    for k in 0..next(3) {
                        if k > 0 {
                            out.push(',');
                        }
                        blank(next, out);
                        value(next, depth + 1, out);
                    }
                    out.push(']');
                }
                _ => out.push_str(SCALARS[next(SCALARS.len())]),
            }
        }
        let (mut read, mut left) = (0, 0);
        for _ in 0..30_000 {
            let mut text = String::new();
            value(&mut next, 0, &mut text);
            for _ in 0..next(3).saturating_sub(1) {
                let at = next(text.len() + 1);
                if text.is_char_boundary(at) {
                    text.insert_str(at, STRAY[next(STRAY.len())]);
                }
            }
            match check_message_reading(&text) {
                Reading::Read => read += 1,
                Reading::LeftToValue => left += 1,
                Reading::Refused => {}
            }
        }
        assert!(read > 10_000, "too few messages were read: {read}");
        assert!(
            left < read / 10,
            "too many left to the Value reading: {left}"
        );
    }

    #[test]
    fn ids_key_the_same_read_raw_or_as_values() {
        for id in [
            "1",
            "0",
            "\"1\"",
            "\"a\\u0062\"",
            "1.0",
            "-5",
            "1e2",
            "18446744073709551616",
            "null",
        ] {
            let value: Value = serde_json::from_str(id).unwrap();
            assert_eq!(IdKey::of_raw(raw(id)), IdKey::of_value(&value), "{id}");
        }
        assert_eq!(IdKey::of_raw(raw("12")), IdKey::Number(12));
        assert_ne!(IdKey::of_raw(raw("12")), IdKey::of_raw(raw("\"12\"")));
        assert_eq!(
            IdKey::of_raw(raw("\"a\\u0062\"")),
            IdKey::Text("\"ab\"".into())
        );
    }

    #[test]
    fn strings_are_decoded_and_other_values_are_not_strings() {
        assert_eq!(string(raw(r#""a\/b""#)).as_deref(), Some("a/b"));
        assert!(matches!(
            string(raw(r#""tools/call""#)),
            Some(Cow::Borrowed("tools/call"))
        ));
        assert_eq!(string(raw(r#""""#)).as_deref(), Some(""));
        assert_eq!(string(raw(r#""\"""#)).as_deref(), Some("\""));
        assert_eq!(string(raw("12")), None);
        assert!(is_null(raw("null")) && !is_null(raw("\"null\"")));
    }

    #[test]
    fn tool_errors_are_spotted_however_the_key_is_spelled() {
        assert!(may_be_tool_error(r#"{"isError":true}"#));
        assert!(may_be_tool_error(r#"{"is\u0045rror":true}"#));
        assert!(!may_be_tool_error(r#"{"text":"caf\u00e9"}"#));
        assert!(!may_be_tool_error(r#"{"content":[]}"#));
    }

    #[test]
    fn compacting_removes_blanks_between_tokens_only() {
        assert!(matches!(compact(r#"{"a":[1,2]}"#), Cow::Borrowed(_)));
        assert_eq!(
            compact("{ \"a b\" : [ 1 ,\t2 ],\r\n \"c\\\" d\": \" x \" }"),
            r#"{"a b":[1,2],"c\" d":" x "}"#
        );
        let cases = [
            r#" {"k": "v \\", "n": null} "#,
            "[\"é ü\", {\"x\": \"\\u00e9 \"}]",
        ];
        for case in cases {
            let a: Value = serde_json::from_str(case).unwrap();
            let b: Value = serde_json::from_str(&compact(case)).unwrap();
            assert_eq!(a, b, "{case}");
            assert!(!compact(case).contains(": "), "{case}");
        }
    }
}

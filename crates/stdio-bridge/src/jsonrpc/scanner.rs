//! The strict one-pass JSON reader behind [`Message::parse`](super::Message::parse) and the bridge's
//! routing peeks.
//!
//! The bridge reads every frame it routes, and the recorder every message of a session it records:
//! both must keep up with a busy session without building a `serde_json::Value` per frame. So a
//! message is read as borrowed JSON text: a strict scanner checks the whole message as `serde_json`
//! would and takes `id`, `method`, `params` (its `name`, `uri`, `arguments` and `_meta`), `result` and
//! `error` as raw spans in the same pass, noting whether each has blanks ([`Json::compact`]). It reads
//! a string eight bytes at a time up to a quote, a backslash or a control byte, and keeps the brackets
//! open around a point as one bit each, so a deep value costs neither recursion nor a stack per level.
//!
//! The routing peeks (the session's [`peek`](super::peek), the HTTP upstream's) take the id, the method
//! and the few `params` they route by from those spans. The session's peek reads a frame as bytes, as
//! `serde_json::from_slice` does: it checks the UTF-8 of the id and method it takes (and of a batch,
//! whose items `serde_json` reads as text), not of the strings it skips. The recorder redacts arguments and answers
//! with `Redactor::redact_json_text`, drops the blanks between tokens, and writes the line without
//! building a `serde_json::Value`, so a recorded input or answer keeps the key order the peer sent.
//!
//! Any message this reading does not cover exactly goes through a `serde_json` reading instead, which
//! covers every case: one that is not UTF-8, repeats a key the scanner reads, spells a key with an
//! escape, or has `params` that are neither an object nor `null`. The recorder also reads that way
//! `initialize`, methods it records beyond the default ones, tool errors, and answers that may echo a
//! secret of their input. The tests, and the fuzz target `frame_scanner`, read the same texts both
//! ways: the scanner reads what `serde_json` reads to the same parts, or leaves it to `serde_json`
//! (only when a key holds an escape), and never reads what `serde_json` refuses.

use std::borrow::Cow;

/// A value's JSON text, exactly as the peer wrote it, and whether it has no blank between its
/// tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Json<'a> {
    /// The value's text, from its first byte to its last (no blank around it).
    pub text: &'a str,
    /// No blank between its tokens: the text is as short as the value can be written.
    pub compact: bool,
}

/// The bytes of eight (read little-endian) that end a plain run inside a JSON string: a quote, a
/// backslash or a control byte. Each such byte has its high bit set in the result; the lowest set bit
/// is exact (borrows only reach bytes above a match).
#[inline(always)]
fn string_stops(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    (quote.wrapping_sub(ONES) & !quote
        | backslash.wrapping_sub(ONES) & !backslash
        | w.wrapping_sub(ONES * 0x20) & !w)
        & HIGHS
}

/// Whether `text` can stand between quotes in JSON as it is: it holds no quote, backslash or control
/// character, so writing it as a JSON string needs no escape.
pub fn is_plain(text: &str) -> bool {
    let mut words = text.as_bytes().chunks_exact(8);
    words.all(|word| {
        let mut w = [0; 8];
        w.copy_from_slice(word);
        string_stops(u64::from_le_bytes(w)) == 0
    }) && words
        .remainder()
        .iter()
        .all(|&b| b >= 0x20 && b != b'"' && b != b'\\')
}

/// The string a raw JSON text holds, decoded (borrowed when it has no escape); `None` when the text is
/// not a JSON string.
pub fn string(text: &str) -> Option<Cow<'_, str>> {
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
pub fn is_null(text: &str) -> bool {
    text.trim() == "null"
}

/// Sets a part read once; `None` when it was already set (a repeated key).
pub(crate) fn fill<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

/// How a message nearly always opens.
const VERSION: &[u8] = br#"{"jsonrpc":"2.0","#;

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
pub(crate) struct Scan<'a> {
    /// The text, when it is known to be UTF-8: [`value`](Self::value) hands out spans of it.
    text: Option<&'a str>,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Self {
            text: Some(text),
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    /// A reader over bytes not checked as UTF-8, as `serde_json::from_slice` reads them: it checks
    /// the JSON, not the UTF-8 of the strings it skips. [`span`](Self::span) hands out byte spans;
    /// [`value`](Self::value) always fails.
    pub(crate) fn bytes(bytes: &'a [u8]) -> Self {
        Self {
            text: None,
            bytes,
            at: 0,
        }
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn at_end(&self) -> bool {
        self.at == self.bytes.len()
    }

    /// Skips blanks; whether there were any.
    #[inline(always)]
    pub(crate) fn blanks(&mut self) -> bool {
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
    pub(crate) fn literal(&mut self, word: &[u8]) -> bool {
        let found = self.bytes[self.at..].starts_with(word);
        if found {
            self.at += word.len();
        }
        found
    }

    /// Reads an object's members, handing each unescaped key to `each`, which reads the value; blanks
    /// around keys, colons and values are skipped here.
    pub(crate) fn members(
        &mut self,
        each: impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        self.expect(b'{')?;
        self.blanks();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        self.more_members(each)
    }

    /// [`members`](Self::members) from the first key after a comma.
    pub(crate) fn more_members(
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

    /// [`members`](Self::members) of a message: nearly every message opens with its version, a
    /// member whose value no reader needs, so it is taken in one comparison.
    pub(crate) fn message_members(
        &mut self,
        each: impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        if self.literal(VERSION) {
            self.blanks();
            self.more_members(each)
        } else {
            self.members(each)
        }
    }

    /// Reads an array's items, handing each to `each`, which reads it; blanks around items are
    /// skipped here.
    pub(crate) fn items(&mut self, mut each: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.expect(b'[')?;
        self.blanks();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            each(self)?;
            self.blanks();
            match self.peek()? {
                b',' => {
                    self.at += 1;
                    self.blanks();
                }
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Whether only blanks are left.
    pub(crate) fn finish(&mut self) -> bool {
        self.blanks();
        self.at_end()
    }

    /// Reads any value, checking all of it.
    pub(crate) fn value(&mut self) -> Option<Json<'a>> {
        let start = self.at;
        let compact = self.skip()?;
        Some(Json {
            text: self.text?.get(start..self.at)?,
            compact,
        })
    }

    /// Reads any value, checking all of it; its bytes.
    pub(crate) fn span(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.skip()?;
        self.bytes.get(start..self.at)
    }

    /// Reads any value, checking all of it; whether it has no blank between tokens.
    pub(crate) fn skip(&mut self) -> Option<bool> {
        match self.peek()? {
            b'{' | b'[' => self.nested(),
            _ => {
                self.scalar()?;
                Some(true)
            }
        }
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

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;

    fn raw(text: &str) -> &str {
        assert!(serde_json::from_str::<&RawValue>(text).is_ok(), "{text}");
        text
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
    fn plain_texts_need_no_escape() {
        // (text, whether it is plain), long enough to cross the eight-byte words
        let cases = [
            ("", true),
            ("tools/call", true),
            ("caf\u{e9} \u{1f600} a longer plain text", true),
            ("a quote \" past the first word", false),
            ("a backslash \\ past the first word", false),
            ("a tab\t", false),
            ("\u{1}", false),
            ("\u{7f} is no control byte to JSON", true),
            ("seven b\"", false),
        ];
        for (text, plain) in cases {
            assert_eq!(is_plain(text), plain, "{text:?}");
            let written = serde_json::to_string(text).unwrap();
            assert_eq!(written == format!("\"{text}\""), plain, "{text:?}");
        }
    }
}

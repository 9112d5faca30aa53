//! What the recorder does with the JSON text the bridge's scanner
//! ([`Message::parse`](calltape_stdio_bridge::jsonrpc::Message::parse)) hands it: request ids as map
//! keys, the tool-error check, and the compaction of redacted inputs and answers.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// The top-level `isError` of a tool result, spelled in any way JSON allows.
#[derive(Deserialize)]
struct ResultHead<'a> {
    #[serde(default, borrow, rename = "isError", deserialize_with = "present")]
    is_error: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> &str {
        assert!(serde_json::from_str::<&RawValue>(text).is_ok(), "{text}");
        text
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

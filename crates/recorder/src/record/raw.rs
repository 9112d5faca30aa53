//! Reading JSON-RPC messages as borrowed JSON text, without building `Value` trees: how the recorder
//! keeps up with a busy session.
//!
//! Each part the recorder needs (`id`, `method`, `params`, `result`, `error`, a tool's `arguments`) is
//! taken as the exact text the peer sent. Anything this reading does not cover exactly (a message that
//! is not an object, a duplicate key, a field of an unexpected type) makes the caller fall back to the
//! `Value` reading, which covers every case.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON-RPC message with the parts the recorder reads left as raw JSON. A part that is present is
/// `Some`, even when it is `null`.
#[derive(Deserialize)]
pub(crate) struct Message<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) method: Option<&'a RawValue>,
    /// Read in the same pass; `None` when absent or `null`.
    #[serde(default, borrow)]
    pub(crate) params: Option<CallParams<'a>>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) error: Option<&'a RawValue>,
}

impl<'a> Message<'a> {
    /// Reads one message, which must be a JSON object whose `params`, when present, is an object.
    pub(crate) fn parse(text: &'a str) -> Option<Self> {
        if !text.trim_start().starts_with('{') {
            return None;
        }
        serde_json::from_str(text).ok()
    }
}

/// The parts of a request's `params` that `tools/call`, `prompts/get` and `resources/read` are
/// recorded from. Only an object reads as params.
#[derive(Default)]
pub(crate) struct CallParams<'a> {
    pub(crate) name: Option<&'a RawValue>,
    pub(crate) uri: Option<&'a RawValue>,
    pub(crate) arguments: Option<&'a RawValue>,
    pub(crate) meta: Option<&'a RawValue>,
}

impl<'de: 'a, 'a> Deserialize<'de> for CallParams<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Params<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Params<'a> {
            type Value = CallParams<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut params = CallParams::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    let slot = match &*key {
                        "name" => &mut params.name,
                        "uri" => &mut params.uri,
                        "arguments" => &mut params.arguments,
                        "_meta" => &mut params.meta,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    if slot.is_some() {
                        return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
                    }
                    *slot = Some(map.next_value()?);
                }
                Ok(params)
            }
        }
        d.deserialize_map(Params(PhantomData))
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

/// The string a raw JSON value holds; `None` when it is not a string.
pub(crate) fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?;
    // A string without escapes is its own content (a valid string holds no raw control byte).
    if let Some(content) = inner.strip_suffix('"')
        && !content.contains(['\\', '"'])
    {
        return Some(Cow::Borrowed(content));
    }
    serde_json::from_str(text).ok()
}

/// Whether a raw value is JSON `null`.
pub(crate) fn is_null(raw: &RawValue) -> bool {
    raw.get().trim() == "null"
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
    pub(crate) fn of_raw(raw: &RawValue) -> Self {
        let text = raw.get().trim();
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

/// `text` (valid JSON that `original` was turned into) as a raw value: `original` itself when the text
/// is unchanged, else the new text, checked.
pub(crate) fn owned<'a>(original: &'a RawValue, text: Cow<'_, str>) -> Option<Cow<'a, RawValue>> {
    match text {
        Cow::Borrowed(t) if std::ptr::eq(t, original.get()) => Some(Cow::Borrowed(original)),
        other => RawValue::from_string(other.into_owned())
            .ok()
            .map(Cow::Owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> &RawValue {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn messages_keep_present_nulls_and_refuse_what_is_not_an_object() {
        let m = Message::parse(r#"{"jsonrpc":"2.0","id":null,"result":null}"#).unwrap();
        assert_eq!(m.id.map(RawValue::get), Some("null"));
        assert_eq!(m.result.map(RawValue::get), Some("null"));
        assert!(m.error.is_none() && m.method.is_none() && m.params.is_none());
        assert!(Message::parse(r#"[1,"tools/call"]"#).is_none());
        assert!(Message::parse(r#"{"id":1,"id":2}"#).is_none());
        assert!(Message::parse(r#"{"id":1"#).is_none());
        assert!(Message::parse(r#"{"id":1,"params":["x"]}"#).is_none());
        assert!(Message::parse(r#"{"id":1,"params":{"name":"a","name":"b"}}"#).is_none());
        let m = Message::parse(r#"{"id":1,"params":{"name":"a","x":[{}],"arguments":{"k":1}}}"#)
            .unwrap();
        let params = m.params.unwrap();
        assert_eq!(params.name.map(RawValue::get), Some(r#""a""#));
        assert_eq!(params.arguments.map(RawValue::get), Some(r#"{"k":1}"#));
        assert!(params.uri.is_none() && params.meta.is_none());
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

    #[test]
    fn owning_reuses_an_unchanged_text_and_checks_a_new_one() {
        let original = raw(r#"{"a":1}"#);
        assert_eq!(
            owned(original, Cow::Borrowed(original.get()))
                .unwrap()
                .get(),
            r#"{"a":1}"#
        );
        assert_eq!(
            owned(original, Cow::Owned(r#"{"a":2}"#.into()))
                .unwrap()
                .get(),
            r#"{"a":2}"#
        );
        assert!(owned(original, Cow::Owned("{".into())).is_none());
    }
}

//! The `serde_json` reading the scanner stands for, and the check that both agree: for the tests and
//! the fuzz target.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::{CallParams, Json, Message};

/// How the scanner took a text that it read as `serde_json` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// Both read it, to the same parts.
    Read,
    /// `serde_json` reads it; the scanner leaves it to `serde_json` (a key with an escape).
    LeftToSerde,
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
            Reading::LeftToSerde
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
            compact: !has_blank(raw.get()),
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

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

/// Whether a JSON text has a blank outside its strings.
fn has_blank(text: &str) -> bool {
    let mut in_string = false;
    let mut escaped = false;
    for b in text.bytes() {
        if in_string {
            in_string = escaped || b != b'"';
            escaped = !escaped && b == b'\\';
        } else if b == b'"' {
            in_string = true;
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            return true;
        }
    }
    false
}

/// Texts built from JSON-RPC pieces, blanks and stray bytes, from a fixed seed: `count` of them, each
/// handed to `each`.
#[cfg(test)]
pub(crate) fn random_messages(count: usize, mut each: impl FnMut(&str)) {
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
    for _ in 0..count {
        let mut text = String::new();
        value(&mut next, 0, &mut text);
        for _ in 0..next(3).saturating_sub(1) {
            let at = next(text.len() + 1);
            if text.is_char_boundary(at) {
                text.insert_str(at, STRAY[next(STRAY.len())]);
            }
        }
        each(&text);
    }
}

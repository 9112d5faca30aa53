//! A JSON-RPC message read as borrowed JSON text, in one pass of the [scanner](super::scan).

use super::scanner::{Json, Scan, fill};

/// A JSON-RPC message with the parts routing and recording read left as raw JSON text, borrowed from
/// the message. A part that is present is `Some`, even when it is `null`.
///
/// ```
/// use calltape_stdio_bridge::jsonrpc::{Message, string};
///
/// let text = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
/// let message = Message::parse(text).expect("a message the scanner reads");
/// assert_eq!(message.id, Some("7"));
/// assert_eq!(message.method.and_then(string).as_deref(), Some("tools/call"));
/// let params = message.params.expect("params");
/// assert_eq!(params.arguments.map(|a| a.text), Some(r#"{"text":"hi"}"#));
/// ```
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Message<'a> {
    /// `id`.
    pub id: Option<&'a str>,
    /// `method`.
    pub method: Option<&'a str>,
    /// `params`, read in the same pass; `None` when absent or `null`.
    pub params: Option<CallParams<'a>>,
    /// `result`.
    pub result: Option<Json<'a>>,
    /// `error`.
    pub error: Option<&'a str>,
}

/// The parts of a request's `params` that routing and recording read: a `tools/call` or `prompts/get`
/// names what it calls, a `resources/read` its URI.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct CallParams<'a> {
    /// `name`.
    pub name: Option<&'a str>,
    /// `uri`.
    pub uri: Option<&'a str>,
    /// `arguments`.
    pub arguments: Option<Json<'a>>,
    /// `_meta`.
    pub meta: Option<&'a str>,
}

impl<'a> Message<'a> {
    /// Reads one message in a single pass over its text, checking that all of it is JSON.
    ///
    /// `None` (read it with `serde_json` instead) when the text is not JSON, is not an object, has
    /// `params` that are neither an object nor `null`, repeats one of the keys read here, or spells a
    /// key of the message or of its `params` with an escape.
    pub fn parse(text: &'a str) -> Option<Self> {
        let mut scan = Scan::new(text);
        scan.blanks();
        let message = Self::read(&mut scan)?;
        scan.finish().then_some(message)
    }

    /// Reads a message from an object's opening bracket.
    pub(crate) fn read(scan: &mut Scan<'a>) -> Option<Self> {
        let mut message = Message::default();
        let mut params_seen = false;
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
                _ => return scan.skip().map(drop),
            };
            fill(slot, scan.value()?.text)
        };
        scan.message_members(each)?;
        Some(message)
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
                _ => return scan.skip().map(drop),
            };
            fill(slot, scan.value()?.text)
        })?;
        Some(params)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::super::agreement::{Reading, check_message_reading, random_messages};
    use super::*;

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
    /// `serde_json` does, or leaves it to `serde_json` when a key is written with an escape.
    #[test]
    fn random_messages_read_as_serde_json_reads_them() {
        let (mut read, mut left) = (0, 0);
        random_messages(30_000, |text| match check_message_reading(text) {
            Reading::Read => read += 1,
            Reading::LeftToSerde => left += 1,
            Reading::Refused => {}
        });
        assert!(read > 10_000, "too few messages were read: {read}");
        assert!(left < read / 10, "too many left to serde_json: {left}");
    }
}

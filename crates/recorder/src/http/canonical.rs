//! Canonical JSON: object keys sorted by their UTF-8 bytes, no whitespace, serde_json's escaping and
//! number formatting. Whatever order a map was built in, the text is the same.

use serde_json::Value;

/// Serializes `value` canonically.
pub fn to_canonical_string(value: &Value) -> String {
    let mut out = String::with_capacity(64);
    write_value(&mut out, value);
    out
}

pub(crate) fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write_value(out, v);
            }
            out.push('}');
        }
    }
}

pub(crate) fn write_str(out: &mut String, s: &str) {
    // serde_json's escaping of a plain string cannot fail.
    match serde_json::to_string(s) {
        Ok(escaped) => out.push_str(&escaped),
        Err(_) => out.push_str("\"\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_depth() {
        let v = json!({"b": 1, "a": {"z": [3, {"y": true, "x": null}], "c": "é\n"}});
        assert_eq!(
            to_canonical_string(&v),
            r#"{"a":{"c":"é\n","z":[3,{"x":null,"y":true}]},"b":1}"#
        );
    }

    #[test]
    fn reparsing_canonical_text_gives_the_same_text() {
        let v = json!({"k": 1.5, "n": -3, "s": "\u{1}quote\"", "e": {}, "l": []});
        let once = to_canonical_string(&v);
        let again = to_canonical_string(&serde_json::from_str(&once).unwrap());
        assert_eq!(once, again);
    }
}

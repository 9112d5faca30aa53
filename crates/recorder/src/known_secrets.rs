//! Values a request held under credential names, looked for again in what comes back.
//!
//! A server may echo a credential it was sent (`"you said sk-…"`, `{"cards": {"<token>": …}}`), in a
//! place whose name says nothing. Both halves of the crate remember such values from the request, in
//! calltape-redact's [`KnownSecrets`], and act on them in the answer: the MCP recorder hides them in
//! the recorded answer and error, the cassette scrubber in the recorded response, object keys
//! included, and the final gate refuses a line or a sidecar blob that still holds one.

use calltape_redact::KnownSecrets;
use serde_json::Value;

/// The shortest value remembered: shorter ones would hide ordinary words.
pub(crate) const MIN_ECHOED_SECRET: usize = 6;

/// Remembers `value` (trimmed), seen under `name`, unless it is shorter than
/// [`MIN_ECHOED_SECRET`] or `[REDACTED]`.
pub(crate) fn learn(known: &KnownSecrets, name: &str, value: &str) {
    let value = value.trim();
    if value.len() >= MIN_ECHOED_SECRET {
        known.add(name, value);
    }
}

/// Remembers every string `value` holds, at any depth, under a name `is_secret_name` accepts.
pub(crate) fn learn_named(
    known: &KnownSecrets,
    value: &Value,
    is_secret_name: &dyn Fn(&str) -> bool,
) {
    // An explicit stack: a request nested thousands of levels deep is walked as any other.
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                for (name, item) in map {
                    match item {
                        Value::String(s) if is_secret_name(name) => learn(known, name, s),
                        other => stack.push(other),
                    }
                }
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn learnt(input: Value) -> KnownSecrets {
        let known = KnownSecrets::new();
        learn_named(&known, &input, &|name| {
            name == "token" || name == "password"
        });
        known
    }

    #[test]
    fn values_under_credential_names_are_hidden_longest_first_keys_included() {
        let known = learnt(json!({
            "token": "abcdef",
            "nested": [{"password": " abcdef-longer "}],
            "other": "abcdef-longer-but-not-secret",
        }));
        let mut answer = json!({"echo": ["you sent abcdef-longer and abcdef"], "n": 1,
                                "cards": {"abcdef-longer": "stored"}});
        known.hide_in_value(&mut answer);
        assert_eq!(
            answer,
            json!({"echo": ["you sent [REDACTED] and [REDACTED]"], "n": 1,
                   "cards": {"[REDACTED]": "stored"}})
        );
        assert_eq!(
            known.find(b"..abcdef-longer"),
            Some(("password".to_owned(), 2))
        );
        assert_eq!(known.find(b"nothing here"), None);
    }

    #[test]
    fn short_redacted_and_repeated_values_are_not_remembered() {
        let known = learnt(json!({"token": "abcde", "password": "[REDACTED]"}));
        assert!(known.is_empty());
        let known = learnt(json!([{"token": "abcdef"}, {"password": "abcdef"}]));
        assert_eq!(known.len(), 1);
    }
}

//! Values a request held under credential names, looked for again in what comes back.
//!
//! A server may echo a credential it was sent (`"you said sk-…"`), in a place whose name says
//! nothing. Both halves of the crate remember such values from the request and act on them in the
//! answer: the MCP recorder hides them in the recorded answer, the cassette scrubber in the recorded
//! response, and it refuses a sidecar blob that holds one. This is the one list both use.

use serde_json::Value;

use calltape_redact::REDACTED;

/// The shortest value remembered: shorter ones would hide ordinary words.
pub(crate) const MIN_ECHOED_SECRET: usize = 6;

/// Values seen under credential names, each with the name it was seen under (for reports, never the
/// value). Longest first, so a value that contains another is hidden whole.
#[derive(Debug, Default, Clone)]
pub(crate) struct EchoedSecrets {
    values: Vec<(String, String)>,
}

impl EchoedSecrets {
    /// Whether no value is remembered.
    pub(crate) fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Remembers `value` (trimmed), seen under `name`, unless it is shorter than
    /// [`MIN_ECHOED_SECRET`], already `[REDACTED]` or already known.
    pub(crate) fn learn(&mut self, name: &str, value: &str) {
        let value = value.trim();
        if value.len() < MIN_ECHOED_SECRET {
            return;
        }
        self.learn_known(name, value);
    }

    /// Remembers `value` whatever its length, unless it is empty, `[REDACTED]` or already known: a
    /// value the caller knows to be secret (one it sent itself), not one guessed from a name.
    pub(crate) fn learn_known(&mut self, name: &str, value: &str) {
        if value.is_empty() || value == REDACTED || self.values.iter().any(|(_, v)| v == value) {
            return;
        }
        let at = self.values.partition_point(|(_, v)| v.len() >= value.len());
        self.values.insert(at, (name.to_owned(), value.to_owned()));
    }

    /// Remembers every value `other` remembers.
    #[cfg(feature = "mcp")]
    pub(crate) fn extend(&mut self, other: &EchoedSecrets) {
        for (name, value) in &other.values {
            self.learn_known(name, value);
        }
    }

    /// Remembers every string `value` holds, at any depth, under a name `is_secret_name` accepts.
    pub(crate) fn learn_named(&mut self, value: &Value, is_secret_name: &dyn Fn(&str) -> bool) {
        match value {
            Value::Object(map) => {
                for (name, item) in map {
                    match item {
                        Value::String(s) if is_secret_name(name) => self.learn(name, s),
                        other => self.learn_named(other, is_secret_name),
                    }
                }
            }
            Value::Array(items) => items
                .iter()
                .for_each(|v| self.learn_named(v, is_secret_name)),
            _ => {}
        }
    }

    /// Replaces every occurrence of each remembered value in `text` with `[REDACTED]`.
    pub(crate) fn hide_in(&self, text: &mut String) {
        for (_, secret) in &self.values {
            if text.contains(secret.as_str()) {
                *text = text.replace(secret.as_str(), REDACTED);
            }
        }
    }

    /// [`hide_in`](Self::hide_in) for every string of a JSON value, at any depth.
    pub(crate) fn hide_in_value(&self, value: &mut Value) {
        match value {
            Value::String(s) => self.hide_in(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.hide_in_value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.hide_in_value(v)),
            _ => {}
        }
    }

    /// The name the first remembered value found in `data` was seen under, and its byte offset.
    #[cfg(feature = "http")]
    pub(crate) fn find_in_bytes(&self, data: &[u8]) -> Option<(&str, usize)> {
        self.values.iter().find_map(|(name, value)| {
            memchr::memmem::find(data, value.as_bytes()).map(|at| (name.as_str(), at))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn learnt(input: Value) -> EchoedSecrets {
        let mut secrets = EchoedSecrets::default();
        secrets.learn_named(&input, &|name| name == "token" || name == "password");
        secrets
    }

    #[test]
    fn values_under_credential_names_are_hidden_longest_first_and_found_in_bytes() {
        let secrets = learnt(json!({
            "token": "abcdef",
            "nested": [{"password": " abcdef-longer "}],
            "other": "abcdef-longer-but-not-secret",
        }));
        let mut answer = json!({"echo": ["you sent abcdef-longer and abcdef"], "n": 1});
        secrets.hide_in_value(&mut answer);
        assert_eq!(
            answer,
            json!({"echo": ["you sent [REDACTED] and [REDACTED]"], "n": 1})
        );
        #[cfg(feature = "http")]
        {
            assert_eq!(
                secrets.find_in_bytes(b"..abcdef-longer"),
                Some(("password", 2))
            );
            assert_eq!(secrets.find_in_bytes(b"nothing here"), None);
        }
    }

    #[test]
    fn short_redacted_and_repeated_values_are_not_remembered() {
        let secrets = learnt(json!({"token": "abcde", "password": "[REDACTED]"}));
        assert!(secrets.is_empty());
        let secrets = learnt(json!([{"token": "abcdef"}, {"password": "abcdef"}]));
        assert_eq!(secrets.values.len(), 1);
    }
}

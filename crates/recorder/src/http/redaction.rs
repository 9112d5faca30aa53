//! The one place that talks to calltape-redact, so the rest of the cassette code does not depend on
//! how the redaction rules are configured.

use std::borrow::Cow;

use calltape_redact::Redactor;
use serde_json::Value;

pub(crate) use calltape_redact::REDACTED;

/// Redaction rules: calltape-redact's defaults plus extra and kept field names.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rules {
    redactor: Redactor,
    description: String,
}

impl Rules {
    pub(crate) fn new(
        extra_names: Vec<String>,
        keep_names: Vec<String>,
    ) -> Result<Self, calltape_redact::Error> {
        let sorted = |v: &[String]| {
            let mut v: Vec<String> = v.iter().map(|s| s.to_ascii_lowercase()).collect();
            v.sort();
            v.dedup();
            v.join(",")
        };
        let description = format!(
            "calltape-redact;extra={};keep={}",
            sorted(&extra_names),
            sorted(&keep_names)
        );
        let redactor = Redactor::builder()
            .redact_names(extra_names)
            .keep_names(keep_names)
            .build()?;
        Ok(Self {
            redactor,
            description,
        })
    }

    /// A stable description of the configuration, hashed into the cassette's meta line.
    pub(crate) fn describe(&self) -> &str {
        if self.description.is_empty() {
            "calltape-redact;extra=;keep="
        } else {
            &self.description
        }
    }

    pub(crate) fn is_secret_name(&self, name: &str) -> bool {
        self.redactor.is_redacted_name(name)
    }

    pub(crate) fn redact_value(&self, value: &mut Value) {
        self.redactor.redact_value(value);
    }

    /// Redacts text; JSON text keeps every byte that is not a secret, so stream events stay
    /// byte-faithful.
    pub(crate) fn redact_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redactor.redact_json_text(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn extra_and_kept_names_reach_the_redactor() {
        let r = Rules::new(vec!["x-tenant".into()], vec!["pageToken".into()]).unwrap();
        let mut v = json!({"x-tenant": "acme", "pageToken": "p2", "api_key": "k", "model": "m"});
        r.redact_value(&mut v);
        assert_eq!(
            v,
            json!({"x-tenant": REDACTED, "pageToken": "p2", "api_key": REDACTED, "model": "m"})
        );
        assert_eq!(
            Rules::default().describe(),
            Rules::new(vec![], vec![]).unwrap().describe()
        );
    }

    #[test]
    fn json_text_keeps_its_bytes_apart_from_secrets() {
        let r = Rules::default();
        let text = r#"{"type": "x",  "api_key":"abc", "n":1}"#;
        assert_eq!(
            r.redact_text(text),
            r#"{"type": "x",  "api_key":"[REDACTED]", "n":1}"#
        );
        let clean = r#"{"type": "ping"}"#;
        assert!(matches!(r.redact_text(clean), Cow::Borrowed(_)));
    }
}

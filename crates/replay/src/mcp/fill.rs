//! Filling redacted inputs back in: a recorded `"[REDACTED]"` at a field of a given name is sent
//! with a value the user supplies through an environment variable or a file.
//!
//! The values never reach a report, a log or a rewritten recording: [`Fills`] shows only names when
//! printed, and a replay hides each value in the server's answers before anything compares or keeps
//! them.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use calltape_redact::{KnownSecrets, REDACTED};
use serde_json::Value;

use crate::error::{Error, ErrorKind};

/// Where a fill's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FillSource {
    /// An environment variable of this name.
    Env(String),
    /// A file at this path; one trailing line break is not part of the value.
    File(PathBuf),
}

/// One fill as written, `NAME=env:VAR` or `NAME=file:PATH`: the field name and where its value is.
///
/// ```
/// use calltape_replay::mcp::{FillSource, FillSpec};
///
/// let spec: FillSpec = "cardToken=env:CARD".parse()?;
/// assert_eq!(spec.name, "cardToken");
/// assert_eq!(spec.source, FillSource::Env("CARD".into()));
/// assert!("cardToken=tok_live_123".parse::<FillSpec>().is_err());
/// # Ok::<(), calltape_replay::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FillSpec {
    /// The field name whose recorded `"[REDACTED]"` is filled.
    pub name: String,
    /// Where the value is read from.
    pub source: FillSource,
}

impl FromStr for FillSpec {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let Some((name, source)) = text.split_once('=') else {
            return Err(ErrorKind::FillSpec { name: None }.into());
        };
        let name = name.trim();
        let refused = || -> Error {
            ErrorKind::FillSpec {
                name: (!name.is_empty()).then(|| name.to_owned()),
            }
            .into()
        };
        if name.is_empty() {
            return Err(refused());
        }
        let source = if let Some(var) = source.strip_prefix("env:") {
            FillSource::Env(var.to_owned())
        } else if let Some(path) = source.strip_prefix("file:") {
            FillSource::File(PathBuf::from(path))
        } else {
            return Err(refused());
        };
        match &source {
            FillSource::Env(var) if var.is_empty() => return Err(refused()),
            FillSource::File(path) if path.as_os_str().is_empty() => return Err(refused()),
            _ => {}
        }
        Ok(Self {
            name: name.to_owned(),
            source,
        })
    }
}

/// The values sent in place of recorded `"[REDACTED]"` inputs, by field name.
///
/// Printing it (`Debug`) shows the names only.
///
/// ```
/// use calltape_replay::mcp::Fills;
///
/// let fills = Fills::new().value("cardToken", "tok_test_4242");
/// assert_eq!(format!("{fills:?}"), "Fills([\"cardToken\"])");
/// ```
#[derive(Clone, Default)]
pub struct Fills {
    /// (name, value); a handful at most, so a list.
    values: Vec<(String, String)>,
}

impl fmt::Debug for Fills {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Fills")
            .field(&self.values.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .finish()
    }
}

impl Fills {
    /// No fill.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the value of each spec from its environment variable or file. Fails, naming the field
    /// and the variable or file (never a value), when one is unset, unreadable or empty.
    pub fn resolve<'a>(specs: impl IntoIterator<Item = &'a FillSpec>) -> Result<Self, Error> {
        let mut fills = Self::new();
        for spec in specs {
            let name = spec.name.clone();
            let (value, from) = match &spec.source {
                FillSource::Env(var) => match std::env::var(var) {
                    Ok(value) => (value, format!("the environment variable {var}")),
                    Err(_) => {
                        return Err(ErrorKind::FillEnv {
                            name,
                            var: var.clone(),
                        }
                        .into());
                    }
                },
                FillSource::File(path) => match std::fs::read_to_string(path) {
                    Ok(text) => {
                        let value = text
                            .strip_suffix('\n')
                            .map(|t| t.strip_suffix('\r').unwrap_or(t))
                            .unwrap_or(&text)
                            .to_owned();
                        (value, format!("the file {}", path.display()))
                    }
                    Err(source) => {
                        return Err(ErrorKind::FillFile {
                            name,
                            path: path.clone(),
                            source,
                        }
                        .into());
                    }
                },
            };
            if value.is_empty() {
                return Err(ErrorKind::FillEmpty { name, from }.into());
            }
            fills = fills.value(name, value);
        }
        Ok(fills)
    }

    /// Fills `name` with `value`, a value already in hand; a later value for the same name wins.
    pub fn value(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let (name, value) = (name.into(), value.into());
        self.values.retain(|(n, _)| *n != name);
        self.values.push((name, value));
        self
    }

    /// Whether there is no fill.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The field names filled.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.iter().map(|(n, _)| n.as_str())
    }

    /// The values, for hiding them in what the server answers.
    pub(crate) fn values(&self) -> impl Iterator<Item = &str> {
        self.values.iter().map(|(_, v)| v.as_str())
    }

    /// The values as known secrets, each named by its field (`cardToken`): for a log writer or a
    /// final gate to hide or refuse them.
    pub fn known(&self) -> KnownSecrets {
        let known = KnownSecrets::new();
        for (name, value) in &self.values {
            known.add(name, value);
        }
        known
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Replaces every `"[REDACTED]"` string of `input` held at a field of a filled name (or in an
    /// array at that field) with its value. Returns the names of the fields still holding
    /// `"[REDACTED]"`, sorted, each once.
    pub(crate) fn apply(&self, input: &mut Value) -> Vec<String> {
        let mut unfilled = Vec::new();
        self.walk(input, "input", &mut unfilled);
        unfilled.sort();
        unfilled.dedup();
        unfilled
    }

    fn walk(&self, value: &mut Value, name: &str, unfilled: &mut Vec<String>) {
        match value {
            Value::String(text) if text == REDACTED => match self.get(name) {
                Some(fill) => *text = fill.to_owned(),
                None => unfilled.push(name.to_owned()),
            },
            Value::Array(items) => {
                for item in items {
                    self.walk(item, name, unfilled);
                }
            }
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    self.walk(item, key, unfilled);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn specs_parse_and_refuse_a_value_on_the_command_line_without_repeating_it() {
        let spec: FillSpec = "apiKey=file:/run/secrets/key".parse().unwrap();
        assert_eq!(spec.source, FillSource::File("/run/secrets/key".into()));
        let cases = [
            (
                "cardToken=tok_live_4242424242",
                "a fill for `cardToken` is written",
            ),
            ("tok_live_4242424242", "a fill is written"),
            ("=env:CARD", "a fill is written"),
            ("cardToken=env:", "a fill for `cardToken` is written"),
            ("cardToken=file:", "a fill for `cardToken` is written"),
        ];
        for (text, want) in cases {
            let message = text.parse::<FillSpec>().unwrap_err().to_string();
            assert!(message.starts_with(want), "{text}: {message}");
            assert!(!message.contains("4242"), "{message}");
        }
    }

    #[test]
    fn redacted_fields_of_filled_names_are_filled_anywhere_and_the_rest_reported() {
        let fills = Fills::new()
            .value("cardToken", "tok_1")
            .value("pin", "1234");
        let mut input = json!({
            "cardToken": "[REDACTED]",
            "nested": [{"cardToken": "[REDACTED]", "apiKey": "[REDACTED]"}],
            "pin": ["[REDACTED]", "kept"],
            "note": "Bearer [REDACTED]",
            "password": "[REDACTED]",
        });
        let unfilled = fills.apply(&mut input);
        assert_eq!(unfilled, ["apiKey", "password"]);
        assert_eq!(
            input,
            json!({
                "cardToken": "tok_1",
                "nested": [{"cardToken": "tok_1", "apiKey": "[REDACTED]"}],
                "pin": ["1234", "kept"],
                "note": "Bearer [REDACTED]",
                "password": "[REDACTED]",
            })
        );
    }

    #[test]
    fn values_come_from_files_and_the_environment_with_errors_naming_where() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("card");
        std::fs::write(&file, "tok_from_file\n").unwrap();
        let spec = FillSpec {
            name: "cardToken".into(),
            source: FillSource::File(file.clone()),
        };
        let fills = Fills::resolve([&spec]).unwrap();
        assert_eq!(fills.get("cardToken"), Some("tok_from_file"));

        let missing = FillSpec {
            name: "cardToken".into(),
            source: FillSource::File(dir.path().join("missing")),
        };
        let error = Fills::resolve([&missing]).unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::FillFile { .. }));
        assert!(
            error
                .to_string()
                .starts_with("cannot fill `cardToken`: cannot read "),
            "{error}"
        );
        std::fs::write(&file, "").unwrap();
        let error = Fills::resolve([&spec]).unwrap_err();
        assert!(error.to_string().contains("is empty"), "{error}");

        let unset = FillSpec {
            name: "apiKey".into(),
            source: FillSource::Env("CALLTAPE_TEST_SURELY_UNSET_VARIABLE".into()),
        };
        let error = Fills::resolve([&unset]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot fill `apiKey`: the environment variable CALLTAPE_TEST_SURELY_UNSET_VARIABLE \
             is not set (or not UTF-8); set it to the value to send"
        );
    }
}

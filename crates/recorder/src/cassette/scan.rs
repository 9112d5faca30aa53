//! `scan`: the writer's final check, run over cassettes already on disk (for pre-commit hooks and CI).

use std::fmt;
use std::fs;
use std::path::Path;

use serde_json::Value;

use super::redaction::REDACTED;
use super::scrub::Scrubber;
use crate::error::{Error, Result};

/// Something a scan found that should not be in a committed cassette.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The 1-based line number.
    pub line: usize,
    /// Where in the line: a JSON path such as `body.json.api_key`, or a byte offset.
    pub location: String,
    /// What was found, never the secret itself.
    pub what: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {} at {}: {}", self.line, self.location, self.what)
    }
}

/// Scans a cassette file line by line: the literal secrets `scrubber` knows, credential-named fields
/// that hold a value, and text that the redaction rules would change.
pub fn scan_file(path: &Path, scrubber: &Scrubber) -> Result<Vec<Finding>> {
    let text = fs::read_to_string(path).map_err(|e| Error::io(path, "cannot read", e))?;
    Ok(scan_text(&text, scrubber))
}

/// [`scan_file`] over text already in memory.
pub fn scan_text(text: &str, scrubber: &Scrubber) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let line_no = idx + 1;
        if let Some((name, column)) = scrubber.check_line(line) {
            findings.push(Finding {
                line: line_no,
                location: format!("byte {column}"),
                what: format!("the value of {name}"),
            });
            continue;
        }
        if let Ok(value) = serde_json::from_str::<Value>(line) {
            walk(
                &value,
                &mut String::new(),
                false,
                scrubber,
                line_no,
                &mut findings,
            );
        }
    }
    findings
}

fn walk(
    value: &Value,
    path: &mut String,
    in_json: bool,
    scrubber: &Scrubber,
    line: usize,
    out: &mut Vec<Finding>,
) {
    match value {
        Value::String(s) if scrubber.scrub_text(s) != *s => {
            out.push(Finding {
                line,
                location: display_path(path),
                what: "text that looks like a credential".to_owned(),
            });
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, path, in_json, scrubber, line, out);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                let named_secret = in_json
                    && scrubber.is_secret_name(k)
                    && !v.is_null()
                    && v.as_str() != Some(REDACTED);
                if named_secret {
                    out.push(Finding {
                        line,
                        location: display_path(path),
                        what: format!("a value in the credential-named field {k:?}"),
                    });
                } else {
                    walk(v, path, in_json || k == "json", scrubber, line, out);
                }
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn display_path(path: &str) -> String {
    if path.is_empty() {
        "the line".to_owned()
    } else {
        path.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_literal_named_and_patterned_secrets() {
        let s = Scrubber::builder()
            .secret("MY_API_KEY", "literal-secret-1")
            .build()
            .unwrap();
        let text = concat!(
            "{\"t\":\"meta\",\"v\":1}\n",
            "{\"body\":{\"json\":{\"x\":\"literal-secret-1\"}}}\n",
            "{\"body\":{\"json\":{\"api_key\":\"abc\",\"ok\":\"[REDACTED]\"}},\"key\":\"0011\"}\n",
            "{\"body\":{\"text\":\"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlXzEyMw\"}}\n",
            "{\"body\":{\"json\":{\"password\":\"[REDACTED]\"}}}\n",
        );
        let found = scan_text(text, &s);
        let lines: Vec<usize> = found.iter().map(|f| f.line).collect();
        assert_eq!(lines, vec![2, 3, 4]);
        assert_eq!(found[1].location, "body.json.api_key");
        assert!(
            !found
                .iter()
                .any(|f| f.to_string().contains("literal-secret-1"))
        );
    }
}

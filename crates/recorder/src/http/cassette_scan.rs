//! The writer's final check, run over cassettes and their sidecar blobs already on disk (for
//! pre-commit hooks and CI); [`crate::scan`] runs it, and its counterpart for call recordings, over
//! files and folders.

use std::fs;
use std::path::Path;

use serde_json::Value;

use super::file::{is_blob_file_name, read_blob};
use super::redaction::REDACTED;
use super::scrub::Scrubber;
use crate::error::{Error, Result};
use crate::scan::{Finding, display_path};

/// Scans a cassette file line by line: what the scrubber's final gate stops (provider tokens and
/// JWTs anywhere, object keys included, and the literal secrets `scrubber` knows), credential-named
/// fields that hold a value, and strings and keys that the redaction rules would change. The
/// sidecar blobs its lines reference are scanned too: one that is UTF-8 as text, any other for the
/// literal secrets' bytes and the provider token formats.
pub fn scan_file(path: &Path, scrubber: &Scrubber) -> Result<Vec<Finding>> {
    let text = fs::read_to_string(path).map_err(|e| Error::io(path, "cannot read", e))?;
    let mut findings = scan_text(&text, scrubber);
    for (idx, line) in text.lines().enumerate() {
        let Some((folder, name)) = blob_reference(line) else {
            continue;
        };
        let file = path
            .parent()
            .unwrap_or(Path::new(""))
            .join(folder)
            .join(&name);
        let data = read_blob(&file)?;
        if let Some((what, offset)) = scan_blob(&data, scrubber) {
            findings.push(Finding {
                line: idx + 1,
                location: format!("blob {name} byte {offset}"),
                what,
            });
        }
    }
    findings.sort_by_key(|f| f.line);
    Ok(findings)
}

/// The sidecar folder and file name a line's body references (`<cassette>.blobs/<sha256>.<ext>`,
/// relative to the cassette's folder), when it is a well-formed reference.
fn blob_reference(line: &str) -> Option<(String, String)> {
    if !line.contains("\"blob\"") {
        return None;
    }
    let value: Value = serde_json::from_str(line).ok()?;
    let reference = value.get("body")?.get("blob")?.as_str()?;
    let (folder, name) = reference.split_once('/')?;
    let folder_ok = folder.len() > ".blobs".len() && folder.ends_with(".blobs");
    (folder_ok && is_blob_file_name(name)).then(|| (folder.to_owned(), name.to_owned()))
}

/// What a blob holds that should not be committed, and where.
fn scan_blob(data: &[u8], scrubber: &Scrubber) -> Option<(String, usize)> {
    let Ok(text) = std::str::from_utf8(data) else {
        return scrubber
            .check_bytes(data)
            .map(|hit| (hit.to_string(), hit.at()));
    };
    if let Some(hit) = scrubber.check_line(text) {
        return Some((hit.to_string(), hit.at()));
    }
    let redacted = scrubber.scrub_text(text);
    if redacted != text {
        let at = text
            .bytes()
            .zip(redacted.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        return Some(("text that looks like a credential".to_owned(), at));
    }
    None
}

/// [`scan_file`] over text already in memory.
pub fn scan_text(text: &str, scrubber: &Scrubber) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let line_no = idx + 1;
        if let Some(hit) = scrubber.check_line(line) {
            findings.push(Finding {
                line: line_no,
                location: format!("byte {}", hit.at()),
                what: hit.to_string(),
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
                if scrubber.scrub_text(k) != *k {
                    // The key itself: its name is not said, only where it is.
                    path.truncate(len);
                    out.push(Finding {
                        line,
                        location: display_path(path),
                        what: "an object key that looks like a credential".to_owned(),
                    });
                    continue;
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Blob, blobs_dir};

    #[test]
    fn blobs_are_scanned_as_text_or_as_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("c.jsonl");
        let s = Scrubber::builder()
            .secret("MY_API_KEY", "literal-secret-1")
            .build()
            .unwrap();
        let blobs = [
            // (content type, bytes, what the scan says)
            (
                "audio/wav",
                b"RIFF\x00\x01\x02 clean samples \xff".to_vec(),
                None,
            ),
            (
                "audio/wav",
                b"RIFF\x00\x01ghp_0123456789abcdefghijklmnopqrstuvwxyz\xff".to_vec(),
                Some("a github-pat token"),
            ),
            (
                "application/octet-stream",
                b"\x00\x01literal-secret-1\xfe".to_vec(),
                Some("the value of MY_API_KEY"),
            ),
            (
                "text/plain",
                b"log: Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123".to_vec(),
                Some("text that looks like a credential"),
            ),
        ];
        let mut text = String::from("{\"t\":\"meta\",\"v\":1}\n");
        fs::create_dir(blobs_dir(&cassette)).unwrap();
        for (ct, data, _) in &blobs {
            let blob = Blob::new(*ct, data.clone());
            let name = blob.file_name();
            fs::write(blobs_dir(&cassette).join(&name), data).unwrap();
            text.push_str(&format!(
                "{{\"body\":{{\"blob\":\"c.jsonl.blobs/{name}\",\"size\":{},\"type\":\"{ct}\"}},\"t\":\"res\"}}\n",
                data.len()
            ));
        }
        fs::write(&cassette, &text).unwrap();
        let found = scan_file(&cassette, &s).unwrap();
        let expected: Vec<(usize, &str)> = blobs
            .iter()
            .enumerate()
            .filter_map(|(i, (_, _, what))| what.map(|w| (i + 2, w)))
            .collect();
        let got: Vec<(usize, &str)> = found.iter().map(|f| (f.line, f.what.as_str())).collect();
        assert_eq!(got, expected, "{found:?}");
        assert!(
            found.iter().all(|f| f.location.starts_with("blob ")),
            "{found:?}"
        );
        assert!(
            !found
                .iter()
                .any(|f| f.to_string().contains("literal-secret-1"))
        );
    }

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

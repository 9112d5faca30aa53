//! A cassette named under a cassette folder, as the LLM proxy and the mock take one per test.

use std::path::{Path, PathBuf};

/// The file of cassette `name` under `dir`: `dir/NAME.jsonl` (`.jsonl` added unless `name` ends with
/// it). A name holds letters, digits, `.`, `_`, `-`, and `/` between non-empty segments, never `..`;
/// any other is refused, saying so.
pub fn cassette_file(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let ok = !name.is_empty()
        && !name.starts_with('/')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
        && !name
            .split('/')
            .any(|seg| seg.is_empty() || seg == "." || seg == "..");
    if !ok {
        return Err(format!(
            "cassette name {name:?} is not allowed: use letters, digits, `.`, `_`, `-` and `/` between non-empty segments, never `..`"
        ));
    }
    let mut file = name.to_owned();
    if !file.ends_with(".jsonl") {
        file.push_str(".jsonl");
    }
    Ok(dir.join(file))
}

//! A cassette named under a cassette folder, as the LLM proxy and the mock take one per test.

use std::borrow::Cow;
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

/// A cassette name as one segment of a URL path carries it, as in the `/_cassette/NAME/` prefix of
/// the LLM proxy and of `serve --mock`: a `/` of the name is written `%2F` (`suite%2Ftest` is
/// `suite/test`); nothing else is decoded, and [`cassette_file`] then refuses what is not a name.
pub fn cassette_name_in_path(segment: &str) -> Cow<'_, str> {
    if segment.contains('%') {
        segment.replace("%2F", "/").replace("%2f", "/").into()
    } else {
        segment.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_segment_carries_the_slashes_of_a_cassette_name_as_2f() {
        let table = [
            ("t1", "t1"),
            ("suite%2Ftest", "suite/test"),
            ("a%2fb%2Fc", "a/b/c"),
            ("%2E%2E%2Fescape", "%2E%2E/escape"),
            ("..%2Fescape", "../escape"),
            ("100%25", "100%25"),
        ];
        for (raw, name) in table {
            assert_eq!(cassette_name_in_path(raw), name, "{raw}");
        }
    }
}

//! Finding a credential of a fixed-prefix format in bytes that are not text (an audio file, a zstd
//! frame the caller could not decode, a body that is not UTF-8).

use std::ops::Range;
use std::sync::OnceLock;

use crate::{Redactor, step};

/// Shortest word worth a look: no fixed-prefix format is shorter (`xoxb-` and 10 more).
const MIN_WORD: usize = 15;

/// The byte range of the first provider token (`sk-…`, `ghp_…`, `AKIA…`, `xoxb-…`, …) or JWT in
/// `data`, which may be any bytes; `None` when there is none.
///
/// Binary data holds runs of printable bytes by chance, so only the formats a fixed prefix makes
/// unmistakable are looked for, never `name=value` forms. A token is found when it stands as a word
/// of its own (the letters, digits, `-`, `_` and `.` around it, between other bytes), which is how
/// text inside a binary file is laid out. Linear in `data.len()`; no I/O.
///
/// ```
/// let mut wav = b"RIFF\x24\x00\x00\x00WAVE".to_vec();
/// wav.extend_from_slice(b"\x00ghp_0123456789abcdefghijklmnopqrstuvwxyz\x00\x01");
/// assert_eq!(calltape_redact::find_token_in_bytes(&wav), Some(13..53));
/// assert_eq!(calltape_redact::find_token_in_bytes(b"RIFF\x00WAVEfmt "), None);
/// ```
pub fn find_token_in_bytes(data: &[u8]) -> Option<Range<usize>> {
    find_token(data, Words::Binary)
}

/// How [`find_token`] cuts its input into words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Words {
    /// Any bytes: a word may also be tried without its first byte, which may be a length byte of
    /// a binary format stuck to the token.
    Binary,
    /// A line of text, maybe JSON: a JSON escape (`\n`, `\"`, `\u00e9`, …) ends a word as a blank
    /// does, so the `n` of a `\n` before a token is no part of it; a word is tried whole only, so a
    /// slug such as `ask-questions-about-the-weather` is not read as an `sk-` key.
    Text,
}

/// The byte range of the first fixed-prefix token or JWT in `data`, its words cut as `words` says.
/// Linear in `data.len()`.
pub(crate) fn find_token(data: &[u8], words: Words) -> Option<Range<usize>> {
    static REDACTOR: OnceLock<Redactor> = OnceLock::new();
    let redactor = REDACTOR.get_or_init(Redactor::new);
    let is_word = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    let mut i = 0;
    while i < data.len() {
        step!(1);
        if words == Words::Text && data[i] == b'\\' {
            i += json_escape_len(&data[i..]);
            continue;
        }
        if !is_word(data[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < data.len() && is_word(data[i]) {
            step!(1);
            i += 1;
        }
        if i - start < MIN_WORD {
            continue;
        }
        // Word bytes are ASCII, so the word is text; alone, only the word rules can match it. A
        // length byte that happens to be a letter or digit (protobuf, say) may stick to the front
        // of a token, so in binary data the word is also tried without its first byte.
        let froms: &[usize] = match words {
            Words::Binary => &[start, start + 1],
            Words::Text => &[start],
        };
        for &from in froms {
            let word = std::str::from_utf8(&data[from..i]).unwrap_or_default();
            let redacted = redactor.redact_text(word);
            if let Some(at) = redacted.find(crate::REDACTED) {
                // The first span's length, from what replacing it changed.
                let tail = redacted.len() - at - crate::REDACTED.len();
                return Some(from + at..i - tail);
            }
        }
    }
    None
}

/// How many bytes the JSON escape at the start of `data` (which starts with a backslash) takes: 6 for
/// `\uXXXX`, 2 for the others, 1 for a backslash that starts no escape.
fn json_escape_len(data: &[u8]) -> usize {
    match data.get(1) {
        Some(b'u') if data.len() >= 6 && data[2..6].iter().all(u8::is_ascii_hexdigit) => 6,
        Some(b'n' | b'r' | b't' | b'b' | b'f' | b'"' | b'\\' | b'/') => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_in_binary_table() {
        const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlXzEyMw";
        // (bytes, the token found in them)
        let table: Vec<(Vec<u8>, Option<&str>)> = vec![
            (
                b"\x00\x01ghp_0123456789abcdefghijklmnopqrstuvwxyz\xff".to_vec(),
                Some("ghp_0123456789abcdefghijklmnopqrstuvwxyz"),
            ),
            (
                b"\x89PNG\r\n\x1a\nsk-proj-abcdefghijklmnopqrstuvwx\x00".to_vec(),
                Some("sk-proj-abcdefghijklmnopqrstuvwx"),
            ),
            (
                b"xx AKIAIOSFODNN7EXAMPLE yy".to_vec(),
                Some("AKIAIOSFODNN7EXAMPLE"),
            ),
            (format!("\x00{JWT}\x00").into_bytes(), Some(JWT)),
            (
                b"\x0a3sk-proj-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW\x12".to_vec(),
                Some("sk-proj-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"),
            ),
            (
                b"\xfe\xffxoxb-1234567890-abcdefghij".to_vec(),
                Some("xoxb-1234567890-abcdefghij"),
            ),
            // Not tokens: a name=value form, a short prefix, sample-like runs, nothing at all.
            (b"\x00api_key=abcdefghijklmnop1234\x00".to_vec(), None),
            (b"\x00sk-short\x00".to_vec(), None),
            ((0..2000u32).map(|i| (i % 251) as u8).collect(), None),
            (Vec::new(), None),
        ];
        for (data, expected) in table {
            let found = find_token_in_bytes(&data).map(|r| &data[r]);
            assert_eq!(
                found,
                expected.map(str::as_bytes),
                "{:?}",
                String::from_utf8_lossy(&data)
            );
        }
    }

    #[test]
    fn the_search_is_linear() {
        let mut data = Vec::new();
        while data.len() < 1 << 20 {
            data.extend_from_slice(b"abcdefghijklmnopqrstu\x00sk-\x01ghp_\xffAKIA-");
        }
        let steps = crate::steps_of(|| {
            find_token_in_bytes(&data);
        });
        // Each byte is looked at by the word split and at most a few times by the text scan.
        assert!(
            steps < 64 * data.len() as u64,
            "{steps} steps for {} bytes",
            data.len()
        );
    }
}

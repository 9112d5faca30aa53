//! Shared-server keys: the name that picks one server among the user's.

use std::fmt;

use crate::{Error, ErrorKind};

/// The longest key, in bytes.
pub const MAX_KEY_LEN: usize = 64;

/// Names Windows reserves for devices. A key never takes one, so a folder named after it works everywhere.
const DEVICE_NAMES: &[&str] = &["con", "prn", "aux", "nul"];

/// A validated shared-server key: 1 to 64 of `a-z 0-9 . _ -`, starting and ending with a letter or digit,
/// not a Windows device name.
///
/// Lowercase only, so two keys that differ in case never share one folder on a case-insensitive file
/// system; no trailing dot, which Windows drops.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SharedKey(String);

impl SharedKey {
    /// Checks `key` against every rule and returns the first one it breaks.
    pub fn new(key: &str) -> Result<Self, Error> {
        match broken_rule(key) {
            None => Ok(Self(key.to_owned())),
            Some(rule) => Err(ErrorKind::InvalidKey {
                key: key.escape_debug().to_string(),
                rule,
            }
            .into()),
        }
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SharedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn broken_rule(key: &str) -> Option<&'static str> {
    if key.is_empty() {
        return Some("a key must not be empty; use 1 to 64 characters");
    }
    if key.len() > MAX_KEY_LEN {
        return Some("a key is at most 64 characters long");
    }
    if key.bytes().any(|b| b.is_ascii_uppercase()) {
        return Some("a key is lowercase: use a-z, 0-9, '.', '_' and '-'");
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Some("a key may only hold a-z, 0-9, '.', '_' and '-'");
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !alnum(key.as_bytes()[0]) {
        return Some("a key must start with a letter or digit");
    }
    if !alnum(key.as_bytes()[key.len() - 1]) {
        return Some("a key must end with a letter or digit");
    }
    if is_device_name(key) {
        return Some(
            "a key must not be a name Windows reserves for a device (con, prn, aux, nul, com0-9, lpt0-9)",
        );
    }
    None
}

/// Windows also reserves a device name followed by an extension (`nul.txt`).
fn is_device_name(key: &str) -> bool {
    let stem = key.split('.').next().unwrap_or(key);
    if DEVICE_NAMES.contains(&stem) {
        return true;
    }
    let bytes = stem.as_bytes();
    bytes.len() == 4
        && (stem.starts_with("com") || stem.starts_with("lpt"))
        && bytes[3].is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_keys() {
        for key in [
            "a",
            "notes",
            "my-server.v2",
            "a_b",
            "0",
            "x".repeat(64).as_str(),
            "com10",
            "console",
            "nul1",
        ] {
            assert_eq!(SharedKey::new(key).unwrap().as_str(), key, "{key}");
        }
    }

    #[test]
    fn rejects_each_rule_with_its_message() {
        let long = "x".repeat(65);
        let table: &[(&str, &str)] = &[
            ("", "must not be empty"),
            (&long, "at most 64"),
            ("Notes", "lowercase"),
            ("no tes", "may only hold"),
            ("a/b", "may only hold"),
            ("../x", "may only hold"),
            ("/abs", "may only hold"),
            ("a\0b", "may only hold"),
            ("é", "may only hold"),
            (".hidden", "start with"),
            ("-x", "start with"),
            ("x.", "end with"),
            ("x_", "end with"),
            ("con", "Windows"),
            ("nul", "Windows"),
            ("com1", "Windows"),
            ("lpt9", "Windows"),
            ("aux.txt", "Windows"),
            ("prn", "Windows"),
        ];
        for (key, rule) in table {
            let err = SharedKey::new(key).unwrap_err();
            assert!(matches!(err.kind(), ErrorKind::InvalidKey { .. }), "{key}");
            let message = err.to_string();
            assert!(message.contains(rule), "{key:?}: {message}");
            assert!(message.starts_with("invalid key `"), "{message}");
        }
    }
}

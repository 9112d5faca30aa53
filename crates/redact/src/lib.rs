//! Credential redaction by field name and in free text.
#![forbid(unsafe_code)]

/// The placeholder that replaces every redacted value.
pub const REDACTED: &str = "[REDACTED]";

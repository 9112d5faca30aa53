//! `redact_text` never panics, is idempotent, and never lets a planted secret
//! through. The first byte picks the form of the planted secret.
#![no_main]

#[path = "../../crates/redact/tests/it/checks.rs"]
#[allow(dead_code)] // each target uses one of the checks
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_text(data));

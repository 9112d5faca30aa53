//! `redact_text` never panics, is idempotent, and never lets a planted secret
//! through. The first byte picks the form of the planted secret.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| calltape_redact::fuzzing::check_text(data));

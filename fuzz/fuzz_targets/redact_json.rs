//! `redact_json_text` turns valid JSON into valid JSON of the same shape, as the
//! value walk does, and never panics on anything else.
#![no_main]

#[path = "../../crates/redact/tests/it/checks.rs"]
#[allow(dead_code)] // each target uses one of the checks
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_json(data));

//! `redact_json_text` turns valid JSON into valid JSON of the same shape, as the
//! value walk does, and never panics on anything else.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| calltape_redact::fuzzing::check_json(data));

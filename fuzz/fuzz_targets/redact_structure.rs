//! A JSON document built from the fuzz bytes holds a real-looking provider
//! token, JWT or password in a URL at a key, at a value, in prose, or in JSON
//! written into a string (several levels deep); the secret survives none of
//! `redact_json_text`, `redact_text`, the value walks and `RedactingWriter`
//! fed the text in chunks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| calltape_redact::fuzzing::check_structure(data));

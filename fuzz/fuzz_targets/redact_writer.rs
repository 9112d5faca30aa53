//! `RedactingWriter` fed a text in chunks of random sizes writes what one write
//! of the whole text gives, wherever the chunks end, and that is what
//! `redact_text` gives on the whole text, at any size (past the line limit,
//! both apply its bound). The first bytes pick the chunk sizes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| calltape_redact::fuzzing::check_writer(data));

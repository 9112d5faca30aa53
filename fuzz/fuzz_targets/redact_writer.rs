//! `RedactingWriter` fed a text in chunks of random sizes writes what one write
//! of the whole text gives (for a text of one line, what `redact_text` gives),
//! wherever the chunks end. The first bytes pick the chunk
//! sizes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| calltape_redact::fuzzing::check_writer(data));

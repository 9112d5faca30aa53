//! `RedactingWriter` fed a text in chunks of random sizes writes what redacting
//! each line on its own gives (with no line of JSON, what `redact_text` gives on
//! the whole input), wherever the chunks end. The first bytes pick the chunk
//! sizes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| calltape_redact::fuzzing::check_writer(data));

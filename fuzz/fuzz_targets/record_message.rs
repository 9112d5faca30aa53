//! The recorder's one-pass reading of a JSON-RPC message agrees with `serde_json` on every text:
//! it reads the same parts, or leaves to the `Value` reading a message whose keys hold escapes, and
//! never panics.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        calltape_recorder::fuzzing::check_message_reading(text);
    }
});

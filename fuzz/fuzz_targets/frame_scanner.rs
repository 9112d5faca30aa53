//! The bridge's one-pass reading of a JSON-RPC message agrees with `serde_json` on every text: it
//! reads the same parts, or leaves to `serde_json` a message whose keys hold escapes, and never
//! panics; and its routing peek reads every frame the scanner covers as `serde_json` does.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| calltape_stdio_bridge::fuzzing::check_frame(data));

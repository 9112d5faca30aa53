//! Integration tests of calltape-redact.

mod api;
mod checks;
mod fuzz_replay;
mod providers;
mod table;
mod value;
mod writer;

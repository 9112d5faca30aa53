//! Integration tests of calltape-redact.

mod api;
mod baseline;
mod bound;
// The bench's inputs and `regex` baseline, which `baseline` checks.
#[path = "../../benches/support/mod.rs"]
mod bench_support;
mod forms;
mod fuzz_replay;
mod providers;
mod table;
mod table_context;
mod table_json;
mod tables;
mod value;
mod writer;

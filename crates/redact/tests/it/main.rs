//! Integration tests of calltape-redact.

mod api;
mod checks;
mod forms;
mod fuzz_replay;
mod table;
mod table_context;
mod value;
mod writer;

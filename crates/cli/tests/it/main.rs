//! End-to-end tests of the `calltape` binary.

mod redact;
mod support;

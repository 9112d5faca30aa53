//! Inputs and baselines shared by calltape's benches.
#![forbid(unsafe_code)]

pub mod instructions;
pub mod paired;
pub mod stdio_peer;

//! Integration tests of calltape-replay.

mod mcp;
mod proxy;

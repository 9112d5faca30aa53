//! Integration tests of calltape-replay, one module per protocol (each built with its feature).

#[cfg(feature = "http")]
mod http;
#[cfg(feature = "mcp")]
mod mcp;

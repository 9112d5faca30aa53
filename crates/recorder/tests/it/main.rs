//! Integration tests of calltape-recorder, one module per protocol (each built with its feature).

#[cfg(feature = "http")]
mod http;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(all(unix, feature = "http"))]
mod private_files;

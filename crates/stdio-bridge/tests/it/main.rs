//! Integration tests of calltape-stdio-bridge.

mod child;
mod fake;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "serve")]
mod serve;
mod session;
#[cfg(feature = "serve")]
mod shared;
mod support;

//! Integration tests of calltape-stdio-bridge.

mod child;
mod fake;
mod http;
mod serve;
mod session;
mod shared;
mod support;

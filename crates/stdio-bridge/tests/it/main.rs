//! Integration tests of calltape-stdio-bridge.

mod child;
mod fake;
mod http;
mod serve;
mod serve_limits;
mod session;
mod shared;
mod shared_bound;
mod support;

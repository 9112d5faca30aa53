//! Integration tests of calltape-stdio-bridge.

mod child;
#[cfg(feature = "serve")]
mod era_serve;
#[cfg(feature = "serve")]
mod era_serve_rules;
mod fake;
mod fuzz_replay;
#[cfg(feature = "http")]
mod http;
mod layers;
mod resume;
#[cfg(feature = "serve")]
mod serve;
#[cfg(feature = "serve")]
mod serve_flood;
#[cfg(feature = "serve")]
mod serve_limits;
#[cfg(feature = "serve")]
mod serve_resume;
mod session;
#[cfg(feature = "serve")]
mod shared;
#[cfg(feature = "serve")]
mod shared_bound;
mod support;
mod vocab;

//! End-to-end tests of the `calltape` binary.

mod bridge;
mod bridge_http;
mod conformance;
mod demo;
mod era_bridge;
mod era_legacy;
mod era_replay;
mod era_serve;
mod era_sessions;
mod errors;
mod fill_follow;
mod html;
mod http;
mod http_ci;
mod private_files;
mod pytest_plugin;
mod record;
mod redact;
mod replay;
mod serve;
mod serve_flood;
mod shared;
mod support;
mod tasks;
mod vitest_helper;

//! End-to-end tests of the `calltape` binary.

// `clippy.toml` keeps the binary's stderr on its redacting writer; a test's own notes go to the test
// harness.
#![allow(clippy::disallowed_macros)]

mod architecture;
mod asks;
mod bridge;
mod bridge_http;
mod closed_pipe;
mod config;
mod conformance;
mod demo;
mod drift;
mod era_bridge;
mod era_legacy;
mod era_replay;
mod era_serve;
mod era_sessions;
mod errors;
mod escapes;
mod fill_follow;
mod gate;
mod html;
mod http;
mod http_ci;
mod http_import;
mod http_tape;
mod private_files;
mod pytest_plugin;
mod record;
mod redact;
mod redact_keys;
mod redact_tables;
mod replay;
mod replay_rules;
mod serve;
mod serve_flood;
mod shared;
mod support;
mod surface;
mod tasks;
mod userinfo;
mod vitest_helper;

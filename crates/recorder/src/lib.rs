//! calltape's recording formats, one module per protocol.
//!
//! This crate turns observed traffic into redacted, deterministic records. It has two halves, each
//! behind a cargo feature of its name (none is on by default, so a user pulls one protocol):
//!
//! - `mcp` (feature `mcp`): the MCP call record (one line per answered `tools/call`,
//!   `resources/read`, `prompts/get`, and one per list of the server's surface a session read), its
//!   strict `Recording` reader, and the
//!   `Recorder` that pairs a session's requests with their answers, redacts them and
//!   appends them to a JSONL file without ever blocking the traffic.
//! - `http` (feature `http`): the HTTP cassette used by `calltape http`, its canonical JSONL
//!   serialisation with binary sidecars, the request `Normalizer` that computes
//!   match keys, and the `Scrubber` that removes credentials and refuses to write a
//!   line that still holds one.
//!
//! Both halves share the crate's [`Error`], the dot-path [`glob`]s, [`inspect`], which tells the
//! two formats apart by a file's first line ([`inspect::sniff`], with no feature), finds the
//! cassettes under a folder ([`inspect::find_cassettes`]) and summarises a file of either, and
//! [`terminal`], which makes recorded text safe to show ([`terminal::escape_controls`]).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
pub mod glob;
#[cfg(feature = "http")]
pub mod http;
pub mod inspect;
#[cfg(any(feature = "mcp", feature = "http"))]
mod known_secrets;
#[cfg(feature = "mcp")]
pub mod mcp;
mod refusal;
#[cfg(any(feature = "mcp", feature = "http"))]
pub mod scan;
pub mod terminal;

pub use error::{Error, ErrorKind, Result};
pub use refusal::{Refusal, admit};

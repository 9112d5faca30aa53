//! calltape's replay side, one module per protocol.
//!
//! This crate reads recordings back. It has two halves, each behind a cargo feature of its name (none
//! is on by default, so a user pulls one protocol):
//!
//! - `mcp` (feature `mcp`): reads a call recording (see `calltape-recorder`'s `mcp` module),
//!   replays each recorded session through a fresh upstream link of `calltape-stdio-bridge`, compares
//!   every answer with the recorded one, and reports what changed as text, JSON, JUnit or HTML.
//! - `http` (feature `http`): the HTTP record/replay proxy for LLM APIs, a local reverse proxy that
//!   a test points its SDK at. It answers from a cassette (see `calltape-recorder`'s `http` module),
//!   or forwards to the real API and records the answer, with every credential scrubbed before a
//!   byte reaches disk.
//!
//! With `mcp`, the `mock` module serves a call recording to an MCP client as if it were the server
//! (`calltape mock`): answers matched by method, name and input, every miss named with the closest
//! recorded call.
//!
//! With `mcp`, the `config` module reads the rules a replay compares by from `calltape.toml` or
//! `pyproject.toml`'s `[tool.calltape]`.
//!
//! With `demo`, the `demo` module holds the two peers of `calltape demo`: a small MCP server in two
//! versions and a scripted client session.
//!
//! Both halves share the crate's one [`Error`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(any(feature = "http", feature = "mcp"))]
mod cassette;
#[cfg(feature = "mcp")]
pub mod config;
#[cfg(feature = "demo")]
pub mod demo;
mod error;
#[cfg(any(feature = "http", feature = "mcp"))]
mod html_page;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "mcp")]
pub mod mock;
#[cfg(any(feature = "http", feature = "mcp"))]
mod mode;
#[cfg(any(feature = "http", feature = "mcp"))]
mod xml;

#[cfg(any(feature = "http", feature = "mcp"))]
pub use cassette::{cassette_file, cassette_name_in_path};
pub use error::{Error, ErrorKind, Result};
#[cfg(any(feature = "http", feature = "mcp"))]
pub use html_page::ReportContext;
#[cfg(any(feature = "http", feature = "mcp"))]
pub use mode::Mode;

//! Append-only JSONL files that are owner-only, size-capped and crash-safe, written without ever
//! blocking or failing the caller.
//!
//! A recording must never slow or break the traffic it observes, never grow past its cap, be readable
//! by nobody else, and survive a crash with at most its last partial line lost. This crate keeps those
//! promises, and stores what it is given: deciding what is secret is the caller's job.
//!
//! - [`JsonlWriter`] (async): `append` enqueues and returns at once; a background thread gathers
//!   queued lines into batches and writes them. The queue holds at most `max_bytes` of lines; a full
//!   queue drops lines. [`SyncJsonlWriter`] does the same from the calling thread, for programs
//!   without a runtime.
//! - Files are opened append + create + no-follow: a symbolic link is refused, a new file is created
//!   with [`Options::mode`] (`0o600`), and an existing file is set to that mode before its first line.
//!   A file owned by another user than this process's effective user, or whose mode cannot be set (a
//!   read-only mount), is never written to. The refusal is in the report. When a crash left half a
//!   line at the end, the writer ends it before writing, so its own first line stays whole. On
//!   Windows the same rules hold with an access list for a mode: every file is owner-only (a
//!   protected access list granting this process's user alone), whatever [`Options::mode`] says, and
//!   any reparse point at the path (a symbolic link, a junction) is refused.
//! - `max_bytes` counts the file's size on disk, read before each write, so lines appended by other
//!   processes count too. Lines go to the file whole, in `write` calls on an append-mode descriptor,
//!   so writers in several processes never interleave inside a line.
//! - Nothing is returned as an error: each kind of trouble (queue full, size cap, write failure, file
//!   refused, invalid line) is logged once through `tracing` and counted in the [`WriterReport`].
//! - [`rewrite`] replaces a file whole and atomically (temporary file, `fsync`, rename, `fsync` of the
//!   folder).
//! - [`fs`] opens, replaces and reads other files (a log, a token, a small file written whole) and
//!   creates folders under the same rules: owner-only, never through a symbolic link.
//! - [`JsonlReader`] reads lines back as `(line_number, T)` with a bounded buffer. Errors name
//!   `file:line:column`; a cut last line is the recoverable [`ErrorKind::TruncatedTail`].
//!
//! # Example
//!
//! ```
//! use calltape_jsonl_store::{JsonlReader, JsonlWriter, Options};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Debug, PartialEq)]
//! struct Call {
//!     method: String,
//!     ms: f64,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), calltape_jsonl_store::Error> {
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("calls.jsonl");
//!
//! let writer = JsonlWriter::open(&path, Options::default()).await;
//! writer.append(&Call { method: "tools/call".into(), ms: 12.5 });
//! writer.append_line(r#"{"method":"prompts/get","ms":3.0}"#);
//! let report = writer.close().await;
//! assert_eq!(report.lines_written, 2);
//! assert!(report.is_complete());
//!
//! let calls: Vec<(usize, Call)> = JsonlReader::open(&path)?.collect::<Result<_, _>>()?;
//! assert_eq!(calls[1], (2, Call { method: "prompts/get".into(), ms: 3.0 }));
//! # Ok(())
//! # }
//! ```
// The only unsafe code is the Windows system calls of `sys/windows.rs`, which allows it for itself.
#![cfg_attr(not(windows), forbid(unsafe_code))]
#![cfg_attr(windows, deny(unsafe_code))]
#![deny(missing_docs)]

mod engine;
mod error;
pub mod fs;
mod options;
mod reader;
mod rewrite;
mod sink;
mod sync_writer;
mod sys;
mod writer;

pub use engine::{Dropped, WriterReport};
pub use error::{Error, ErrorKind};
pub use options::{DEFAULT_MAX_BYTES, DEFAULT_MODE, Fsync, Options};
pub use reader::{DEFAULT_MAX_LINE, JsonlReader};
#[doc(hidden)]
pub use rewrite::rewrite_with_hook;
pub use rewrite::{rewrite, rewrite_values};
pub use sink::Sink;
pub use sync_writer::SyncJsonlWriter;
pub use writer::JsonlWriter;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

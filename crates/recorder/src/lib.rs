//! calltape's recording formats.
//!
//! This crate turns observed traffic into redacted, deterministic records. Today it holds the HTTP
//! cassette used by `calltape http`: the [`cassette`] types, their canonical JSONL serialisation with
//! binary sidecars, the request [`Normalizer`] that computes match keys, and the [`Scrubber`] that
//! removes credentials and refuses to write a line that still holds one.
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeMap;
//! use calltape_recorder::{
//!     Body, Cassette, Content, Interaction, Meta, Normalizer, Request, Response, SaveOutcome, Scrubber,
//! };
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("chat.jsonl");
//! let scrubber = Scrubber::builder().secret("OPENAI_API_KEY", "sk-test-0123456789abcdef").build()?;
//! let normalizer = Normalizer::new();
//!
//! let mut request = Request {
//!     method: "POST".into(),
//!     upstream: "openai".into(),
//!     path: "/v1/chat/completions".into(),
//!     query: vec![],
//!     headers: BTreeMap::from([("content-type".into(), "application/json".into())]),
//!     body: Body::Json(json!({"model": "gpt-4o", "api_key": "sk-test-0123456789abcdef"})),
//!     key: String::new(),
//!     seq: 0,
//! };
//! scrubber.scrub_request(&mut request);
//! request.key = normalizer.key(&request);
//! let response = Response {
//!     status: 200,
//!     headers: vec![("content-type".into(), "application/json".into())],
//!     content: Content::Body(Body::Json(json!({"id": "chatcmpl-1"}))),
//! };
//! let meta = Meta { normalizer: normalizer.fingerprint().into(), redaction: scrubber.fingerprint() };
//! let mut cassette = Cassette::new(meta);
//! cassette.interactions.push(Interaction { request, response });
//! assert_eq!(cassette.save(&path, &scrubber)?, SaveOutcome::Written);
//! assert_eq!(cassette.save(&path, &scrubber)?, SaveOutcome::Unchanged);
//!
//! let text = std::fs::read_to_string(&path)?;
//! assert!(!text.contains("sk-test-0123456789abcdef"));
//! assert_eq!(Cassette::load(&path)?, cassette);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod cassette;
mod echo;
mod error;
pub mod glob;
pub mod inspect;
pub mod record;

pub use cassette::{
    Blob, Body, Cassette, Content, Finding, Interaction, Meta, Normalizer, Request, Response,
    SaveOutcome, Scrubber, ScrubberBuilder, Stream, StreamEnd, StreamEvent, StreamFormat,
};
pub use error::{Error, ErrorKind, Result};

/// Entry points for the fuzz targets (feature `fuzzing`); not a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    /// Reads `text` as a JSON-RPC message with the recorder's one-pass scanner and with
    /// `serde_json`, and panics where they disagree.
    pub fn check_message_reading(text: &str) {
        crate::record::check_message_reading(text);
    }
}

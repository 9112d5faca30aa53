//! The HTTP cassette, format version 1.
//!
//! A cassette is a JSONL file, one canonical JSON record per line (keys sorted, no whitespace):
//!
//! - a `meta` line: format version and the fingerprints of the normaliser and redaction rules (no
//!   wall-clock time, so re-recording the same traffic changes nothing);
//! - per interaction, a `req` line (method, upstream name, path, sorted query, allow-listed headers,
//!   body, match key, sequence number among requests with the same key), then either a `res` line with
//!   the whole body, or a `res` line naming the stream format followed by one `ev` line per event (with
//!   its delay in 10 ms buckets) and an `end` line saying how the stream ended.
//!
//! Bodies are stored decoded: JSON as JSON, text as text, binary content in content-addressed sidecar
//! files in `<cassette>.blobs/`, referenced by a path relative to the cassette's folder. Interactions are
//! written in a canonical order, so concurrent recording gives the same bytes as sequential recording.
//!
//! A server reads a cassette with [`CassetteIndex`], which checks every line in one pass but builds an
//! interaction (and parses its bodies) only when it is asked for. A run that re-records a cassette
//! appends each interaction to a [`Journal`] beside it as it completes, and replaces the cassette only
//! when it ends cleanly: a run that dies leaves the previous cassette whole and its own work in the
//! journal. A run that records an interaction again keeps the stored one when the two are
//! [the same apart from noise](Interaction::same_apart_from_noise) (timing, and the
//! [volatile response headers](VOLATILE_RESPONSE_HEADERS) such as request ids and rate-limit
//! counters), so re-recording a real API does not churn its cassette.
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeMap;
//! use calltape_recorder::http::{
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
//! assert_eq!(cassette.save(&path, &scrubber)?.outcome, SaveOutcome::Written);
//! assert_eq!(cassette.save(&path, &scrubber)?.outcome, SaveOutcome::Unchanged);
//!
//! let text = std::fs::read_to_string(&path)?;
//! assert!(!text.contains("sk-test-0123456789abcdef"));
//! assert_eq!(Cassette::load(&path)?, cassette);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod canonical;
mod cassette_scan;
mod file;
mod import;
mod index;
mod journal;
mod manage;
mod model;
mod normalize;
mod redaction;
mod scrub;
mod url;
mod volatile;

pub use canonical::to_canonical_string;
pub use cassette_scan::{scan_file, scan_text};
pub use file::{SaveOutcome, Saved, blobs_dir};
pub use import::{
    Imported, KEPT_RESPONSE_HEADERS, MAX_IMPORT_ARTIFACT, MAX_IMPORT_FILE, import_mastra,
    is_kept_response_header,
};
pub use index::CassetteIndex;
pub use journal::{Journal, journal_path};
pub use manage::{
    ImportedDir, ImportedFile, Listed, import_mastra_dir, list_cassettes, remove_cassette,
};
pub use model::{
    Blob, Body, Cassette, Content, FORMAT_VERSION, Interaction, Meta, Request, Response, Stream,
    StreamEnd, StreamEvent, StreamFormat, bucket_delay,
};
pub use normalize::Normalizer;
pub use scrub::{Scrubber, ScrubberBuilder, is_secret_env_name};
pub use url::without_userinfo;
pub use volatile::{VOLATILE_RESPONSE_HEADERS, is_volatile_response_header};

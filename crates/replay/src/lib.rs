//! calltape's replay side.
//!
//! Today this crate holds the HTTP record/replay [`proxy`] for LLM APIs: a local reverse proxy that a
//! test points its SDK at. It answers from a cassette (see `calltape-recorder`), or forwards to the real
//! API and records the answer, with every credential scrubbed before a byte reaches disk.
//!
//! # Example
//!
//! ```no_run
//! use calltape_replay::{Mode, Proxy};
//!
//! # async fn demo() -> Result<(), calltape_replay::Error> {
//! let proxy = Proxy::builder()
//!     .upstream("openai", "https://api.openai.com")
//!     .cassette("tests/cassettes/chat.jsonl")
//!     .mode(Mode::Replay)
//!     .start()
//!     .await?;
//! // Point the client at the proxy, e.g. OPENAI_BASE_URL=<this>/v1
//! let base = proxy.base_url("openai");
//! assert!(base.starts_with("http://127.0.0.1:"));
//! let report = proxy.shutdown().await?;
//! assert_eq!(report.misses.len(), 0);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
pub mod mcp;
pub mod proxy;

pub use error::{Error, ErrorKind, Result};
pub use proxy::{
    Exhaustion, Mode, Proxy, ProxyBuilder, ProxyHandle, RecordTiming, ReplayTiming, Report,
};

//! MCP replay: read a call recording, replay each recorded session against a server through a fresh
//! connection, compare every answer with the recorded one, and report what changed.
//!
//! [`replay`] drives the sessions through any [`Upstream`](calltape_stdio_bridge::Upstream) (a child
//! process, a Streamable HTTP endpoint), answering what the server asks the client from the
//! recording ([`AskNote`]s say where that differed); [`Comparer`] decides what differs, after a
//! [`Mask`] and [`CallRules`] set aside what varies per run; [`classify`] sorts the changes of the
//! server's surface (its tool, prompt and resource lists) into breaking and compatible;
//! [`ReplayReport`] renders text, JSON, JUnit or HTML, and [`FailOn`] says whether it fails;
//! [`update_recording`] accepts the new answers.
//!
//! # Example
//!
//! ```
//! use calltape_recorder::mcp::Outcome;
//! use calltape_replay::mcp::{Comparer, Status};
//! use serde_json::json;
//!
//! let comparer = Comparer::builder().ignore(["**.quotedAt"]).build()?;
//! let recorded = Outcome::Answer(json!({"structuredContent": {"price": 12, "quotedAt": "09:00", "key": "[REDACTED]"}}));
//! let replayed = Outcome::Answer(json!({"structuredContent": {"price": 15, "quotedAt": "09:05", "key": "[REDACTED]"}}));
//! let comparison = comparer.compare(&recorded, &replayed);
//! assert_eq!(comparison.status, Status::Changed);
//! assert_eq!(comparison.differences.len(), 1);
//! assert_eq!(comparison.differences[0].path, "structuredContent.price");
//! # Ok::<(), calltape_replay::Error>(())
//! ```

mod asks;
pub(crate) mod compare;
mod fill;
mod follow;
mod lists;
mod mask;
mod replayed_session;
mod report;
mod surface;
mod task;
mod update;

pub use asks::{AskNote, AskNoteKind, MAX_INPUT_ROUNDS, NOT_RECORDED};
pub use compare::{Comparer, ComparerBuilder, Comparison, Difference, Status};
pub use fill::{FillSource, FillSpec, Fills};
pub use follow::{MIN_FOLLOWED, Substitution};
pub use mask::{CallRule, CallRules, CallRulesBuilder, MASKED, Mask, PRESETS};
pub use replayed_session::{
    DEFAULT_PROTOCOL_VERSION, DEFAULT_TIMEOUT, Progress, ReplayOptions, Replayed, compare_outcomes,
    replay,
};
pub use report::{CallReport, Format, REPORT_VERSION, ReplayReport, Summary, TextOptions};
pub use surface::{FailOn, Severity, SurfaceChange, SurfaceSummary, classify};
pub use update::update_recording;

//! MCP call records: the format (version 1), the strict reader, and the recorder that turns a
//! session's traffic into redacted records.
//!
//! A call record is one JSON object per line:
//!
//! ```json
//! {"v":1,"at":"2026-11-29T20:46:45.123Z","session":"3f9a1c2e","client":{"name":"claude-code","version":"1.2.0"},
//!  "method":"tools/call","name":"quote","input":{"symbol":"ACME"},"answer":{"content":[]},"durationMs":12.4}
//! ```
//!
//! A line may also hold the client's declared `capabilities` and, as `asks`, each request the server
//! sent the client during the call with the client's answer ([`Ask`]), which replay answers from.
//!
//! A [`Recorder`] is shown the frames of a client session (by the bridge's observer hook, which a
//! [`SessionRecorder`] is: it implements `calltape_stdio_bridge::Tap`, or by any proxy) and writes one redacted line per answered call, without ever blocking the traffic,
//! and, when the session ends, one line per list of the server's surface it read
//! ([`LIST_METHODS`]: all pages in one line, see [`ListPages`]). It reads
//! each message as JSON text rather than building a tree, so an input or answer is recorded with the
//! key order the peer sent, without the blanks between tokens. The
//! [`Recording`] reader is strict: an unknown field or a wrong type is an error naming the line and the
//! field, so a recording that replays is a recording that was understood.
//!
//! # Example
//!
//! ```
//! use calltape_recorder::mcp::{Outcome, Recorder, RecorderOptions, Recording};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("calls.jsonl");
//! let recorder = Recorder::open(&path, RecorderOptions::default()).await?;
//! let session = recorder.session();
//! let now = std::time::SystemTime::now();
//! session.client_frame(
//!     br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"user":"ada","password":"hunter2"}}}"#,
//!     now,
//! );
//! session.server_frame(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#, now);
//! drop(session);
//! let report = recorder.close().await;
//! assert_eq!(report.recorded, 1);
//!
//! let recording = Recording::read(&path)?;
//! let call = &recording.calls[0].record;
//! assert_eq!((call.method.as_str(), call.name.as_str()), ("tools/call", "login"));
//! assert_eq!(call.input, Some(json!({"user": "ada", "password": "[REDACTED]"})));
//! assert_eq!(call.outcome, Outcome::Answer(json!({"content": []})));
//! # Ok(())
//! # }
//! ```

mod asks;
mod format;
mod input_required;
mod json_text;
mod lists;
mod options;
mod params;
mod read;
mod recorder;
mod redaction;
mod tap;
mod tasks;
mod time;
mod unanswered;

pub use asks::{Ask, MAX_ASKS};
pub use format::{CallError, CallRecord, ErrorCode, FORMAT_VERSION, INTERNAL_ERROR, Outcome};
pub use lists::{CURSOR, LIST_METHODS, ListPages, NEXT_CURSOR, list_items_key};
pub use options::{DEFAULT_METHODS, RecorderOptions, RecorderReport};
pub use params::{name_and_input, request_params};
pub(crate) use read::describe_problems;
pub use read::{LineProblem, MAX_PROBLEMS, RecordedCall, Recording};
pub use recorder::{Recorder, SessionRecorder};
pub use redaction::{hide_known, hide_sent_values, redact_name, redact_outcome};
pub use tasks::{RELATED_TASK_META, TASKS_RESULT, strip_related_task};
pub use time::{new_session_id, timestamp};
pub use unanswered::UnansweredCall;

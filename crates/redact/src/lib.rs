//! Credential redaction by field name and in free text.
//!
//! `calltape-redact` hides credentials before anything reaches a log or a
//! recording. It depends only on `serde_json` and `memchr`, does no I/O of its
//! own (it reads and writes only the streams a caller hands it), never fails
//! and never panics (only building a configuration can be wrong, and a stream
//! it is handed can fail), and works in time linear in the length of its input, whatever the
//! input.
//!
//! **By name.** A field whose name is a credential name
//! ([`is_credential_name`]: `apiKey`, `x-api-key`, `access_token`, `passWord`,
//! `set-cookie`, …) or a session id name ([`is_session_id_name`]) has its value
//! replaced by [`REDACTED`]: a string, a number, a list or an object alike.
//! Arrays and objects are walked at any depth with an explicit stack, so a
//! secret nested thousands of levels deep is still found and the output stays
//! valid JSON.
//!
//! **The JSON type stays where nothing is secret.** A value replaced whole
//! that is `null`, `true`, `false` or `""` stays as it is
//! (`{"prompt_cache_key": null}` is unchanged), so a replayed SDK object keeps
//! its `None`.
//!
//! **A JSON Schema is a definition, not a value.** Under a credential name, an
//! object that is a JSON Schema definition is walked instead of replaced, so a
//! `tools/list` answer keeps `"apiKey": {"type": "string", "description": …}`:
//! every key is a JSON Schema keyword, one of them is `type`, `$ref`, `anyOf`,
//! `oneOf`, `allOf`, `enum` or `const`, a `type` names JSON types and a `$ref`
//! holds `#` or `/`. Inside it everything stays under the credential name: a
//! `default`, `const`, `examples` or `enum` is replaced whole (but for
//! `null`, booleans and `""`), a subschema must be a definition in turn, and
//! any other object is replaced whole. `{"id": 7}` or `{"value": "hunter2"}`
//! are values, replaced whole.
//!
//! **Keys.** An object key goes through the text rules as a string value
//! does; a key they change is replaced whole (the words around a secret would
//! say what it was for): the first such key of an object becomes
//! `"[REDACTED]"`, the next ones `"[REDACTED:2]"`, `"[REDACTED:3]"`, …,
//! skipping a placeholder the object holds already, so no two members merge
//! ([`is_redacted_placeholder`] tells these keys). A key that was one text
//! twice gets one placeholder. The numbers follow the order of the members:
//! the text's for JSON text, the map's for a `serde_json::Value`.
//!
//! **In text.** Any string value, and any text given to
//! [`Redactor::redact_text`], loses `Bearer` and `Basic` credentials, whatever
//! follows the scheme of an `Authorization` header, the value of every cookie,
//! JWTs, private key blocks, the `user:password@` of URLs and connection
//! strings, the value given to a credential name (`?access_token=…`, `TOKEN=…`,
//! `"password": "…"`, `password: hunter2`, `API_KEY := …`, `-H "X-Api-Key: …"`,
//! `--password hunter2`, `<apiToken>…</apiToken>`, `name="apiToken" value="…"`),
//! and tokens known by their form (`sk-…`, `sk_live_…`, `ghp_…`, `github_pat_…`,
//! `glpat-…`, `xoxb-…`, `AKIA…`, `AIza…`, `ya29.…`, `SG.…`, `npm_…`, `hf_…` and
//! the other fixed-prefix formats of gitleaks' rules, webhook URLs' secret
//! paths, Azure's `sig=`), also when written with JSON escapes. A string that
//! is itself JSON is redacted as JSON. Prose such as "a Bearer token goes in
//! the header" or "The key: it is simple", code such as
//! `let token = get_token();`, e-mail addresses and URLs without a password are
//! left as they are.
//!
//! Redacting is idempotent: redacting redacted output changes nothing.
//!
//! # Example
//!
//! ```
//! use calltape_redact::{REDACTED, Redactor};
//! use serde_json::json;
//!
//! let redactor = Redactor::new();
//!
//! let mut call = json!({
//!     "headers": {"Authorization": "Bearer abc123", "Accept": "application/json"},
//!     "params": {"query": "weather", "apiKey": {"id": 7}, "maxTokens": 256},
//! });
//! redactor.redact_value(&mut call);
//! assert_eq!(call["headers"]["Authorization"], REDACTED);
//! assert_eq!(call["params"]["apiKey"], REDACTED);
//! assert_eq!(call["params"]["maxTokens"], 256);
//!
//! // A secret as a key, a null under a credential name, a schema definition.
//! let mut answer = json!({
//!     "cards": {"ghp_0123456789abcdefghijklmnopqrstuvwxyz": "stored"},
//!     "prompt_cache_key": null,
//!     "inputSchema": {"properties": {"apiKey": {"type": "string", "default": "k-1"}}},
//! });
//! redactor.redact_value(&mut answer);
//! assert_eq!(
//!     answer,
//!     json!({
//!         "cards": {"[REDACTED]": "stored"},
//!         "prompt_cache_key": null,
//!         "inputSchema": {"properties": {"apiKey": {"type": "string", "default": REDACTED}}},
//!     }),
//! );
//!
//! assert_eq!(
//!     redactor.redact_text("curl -H 'Authorization: Bearer abc123' https://bob:pw@db.example.com"),
//!     "curl -H 'Authorization: Bearer [REDACTED]' https://[REDACTED]@db.example.com",
//! );
//! // Nothing found: the text comes back borrowed.
//! assert!(matches!(redactor.redact_text("a Bearer token goes in the header"), std::borrow::Cow::Borrowed(_)));
//!
//! // JSON text keeps its formatting: only secret bytes change.
//! assert_eq!(
//!     redactor.redact_json_text(r#"{ "user": "bob",  "password": "hunter2" }"#),
//!     r#"{ "user": "bob",  "password": "[REDACTED]" }"#,
//! );
//! ```
//!
//! # Configuration
//!
//! ```
//! use calltape_redact::Redactor;
//!
//! let redactor = Redactor::builder()
//!     .keep_names(["pageToken"]) // a cursor, not a secret
//!     .redact_names(["internalRef"])
//!     .name_test(|name| name.ends_with("_pin"))
//!     .build()?;
//! assert!(!redactor.is_redacted_name("pageToken"));
//! assert!(redactor.is_redacted_name("card_pin"));
//! # Ok::<(), calltape_redact::Error>(())
//! ```
//!
//! # Logging
//!
//! [`RedactingWriter`] wraps any `std::io::Write` and redacts line by line, so
//! a `tracing_subscriber` or `env_logger` output never carries a credential:
//!
//! ```
//! use std::sync::Mutex;
//! use calltape_redact::{Redactor, RedactingWriter};
//!
//! let writer = RedactingWriter::new(Redactor::new(), std::io::stderr());
//! let subscriber = tracing_subscriber::fmt().with_writer(Mutex::new(writer)).finish();
//! tracing::subscriber::with_default(subscriber, || {
//!     tracing::warn!("retrying with api_key=sk-proj-abcdefghijklmnopqrstuvwx");
//! });
//! ```
//!
//! [`redact_stream`] runs one `Read` through such a writer into one `Write`,
//! bounded in memory, telling a failed read (it ends the input) from a failed
//! write (the error): the loop of a command that redacts files or stdin. It
//! opens nothing; its caller opens the streams.
//!
//! # Known values and the final gate
//!
//! [`KnownSecrets`] holds literal values a program knows to be secret (a key it
//! was given, a value it filled in) and hides them in text, in JSON strings and
//! object keys, and in log lines ([`RedactingWriter::hiding`]). [`Gate`] is the
//! last check before a line is stored: provider tokens and JWTs anywhere in the
//! line, keys included, and the values of the sets it watches; it names what it
//! found ([`GateHit`]), never the value.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod assign;
mod byte_text;
mod context;
mod error;
mod gate;
mod json;
mod keys;
mod known;
mod name_cache;
mod names;
mod pairs;
mod pipe;
mod provider;
mod redactor;
mod schema;
mod span;
mod stage;
mod text;
mod writer;

#[cfg(test)]
mod linear;

pub use byte_text::find_token_in_bytes;
pub use error::{Error, ErrorKind, NameList};
pub use gate::{Gate, GateHit, MIN_GATED, RefusedLines};
pub use keys::is_redacted_placeholder;
pub use known::KnownSecrets;
pub use names::{is_credential_name, is_session_id_name};
pub use pipe::{STREAM_HOLD_LIMIT, STREAM_LINE_LIMIT, Streamed, redact_stream};
pub use redactor::{Redactor, RedactorBuilder};
pub use writer::RedactingWriter;

/// Entry points for the fuzz targets and the tests that replay their inputs
/// (feature `fuzzing`); not a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

// The README's examples are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The placeholder that replaces every redacted value.
pub const REDACTED: &str = "[REDACTED]";

#[cfg(test)]
thread_local! {
    /// Work done by the scanners on this thread, counted in bytes looked at.
    static STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `n` steps of work in tests (the linear-time tests read the count);
/// compiles to nothing otherwise.
macro_rules! step {
    ($n:expr) => {{
        #[cfg(test)]
        {
            let n = ($n) as u64;
            $crate::STEPS.with(|s| s.set(s.get() + n));
        }
        #[cfg(not(test))]
        if false {
            let _ = $n;
        }
    }};
}
pub(crate) use step;

#[cfg(test)]
fn steps_of(f: impl FnOnce()) -> u64 {
    STEPS.with(|s| s.set(0));
    f();
    STEPS.with(std::cell::Cell::get)
}

//! A stdio MCP session that survives server restarts.
//!
//! An MCP client (an editor, an agent host) starts a stdio server and speaks newline-delimited JSON-RPC
//! to it. A [`Bridge`] is that server from the client's point of view, and forwards every message to the
//! real one: a child process ([`ChildUpstream`]), a Streamable HTTP endpoint ([`HttpUpstream`]) or HTTP
//! over a Unix socket ([`UnixUpstream`], Unix only). When the server restarts, starts late or forgets the session,
//! the client sees no error and no hang.
//!
//! # What the bridge does
//!
//! - **Framing** ([`FrameReader`], [`FrameWriter`]): one message per line; a trailing `\r` is stripped,
//!   blank lines are skipped, a line longer than the frame limit is discarded while it streams in. A line
//!   that is not a message is answered with `-32700` and the session goes on.
//! - **Holding**: while the upstream starts or restarts, the client's messages are held in order
//!   (256 messages / 64 MiB by default) and sent once it is ready. A held request gets an error when the
//!   buffer is full or after the restart deadline (30 s by default); the bridge keeps trying.
//! - **Restarts**: a request in flight when the upstream dies gets an error with its own id. The next
//!   upstream receives the client's original `initialize` (and `notifications/initialized`), then the log
//!   level and the resource subscriptions the old one accepted (at most 1,024 URIs), all of whose answers
//!   the client never sees, and the client receives `notifications/{tools,resources,prompts}/list_changed`
//!   for each list the server said can change. An HTTP session the server forgot is re-initialized the
//!   same way and the request retried once.
//! - **Observing** ([`Tap`]): every frame in both directions, with a timestamp, on a thread of its own;
//!   a slow tap loses frames (counted in [`Summary::tap_dropped`]), never slows the session, and
//!   [`Bridge::run`] returns once the tap has seen the last frame.
//! - **Hot reload** ([`Watcher`], [`RestartHandle`]): restart the upstream when files change.
//! - **Reading messages** ([`jsonrpc`]): a JSON-RPC message as borrowed JSON text, in one pass of a
//!   strict scanner that builds no value ([`jsonrpc::Message`]), and what routing reads from a frame
//!   ([`jsonrpc::peek`]).
//! - **The MCP vocabulary** ([`vocab`]): protocol versions, method names, Streamable HTTP header names,
//!   `_meta` keys, error codes and the error answer, spelled once for every calltape crate.
//!
//! # Features
//!
//! None is on by default: a child-process bridge needs calltape-jsonl-store (for the files it writes),
//! tokio, serde, serde_json, rustix (Unix) or windows-sys (Windows), bytes, memchr, thiserror and
//! tracing. Turn on what the tool uses (`calltape` turns on all four):
//!
//! | feature | brings | built on |
//! |---|---|---|
//! | `http` | [`HttpUpstream`], [`UnixUpstream`] (Unix only), [`tls_client_config`] | reqwest, rustls, the hyper client (and hyperlocal on Unix) |
//! | `era` | [`EraUpstream`], [`Protocol`] and `Upstream::connect_apart`: translation between the protocol eras | nothing more |
//! | `serve` | the [`serve`] and [`shared`] modules (and `era`, for their clients of either era) | the hyper server, HKDF and HMAC-SHA-256 |
//! | `watch` | [`Watcher`] | notify |
//!
//! The bridge parses only what routing needs (`id`, `method`, and the capabilities in the answer to
//! `initialize`), but for the frames the era adapter (feature `era`) translates, which it parses whole; it never
//! records, and its one calltape dependency is calltape-jsonl-store, whose `fs` rules every file it
//! writes follows.
//!
//! # Layers
//!
//! The modules form layers, bottom up; a module imports only from its own layer and those below it
//! (a test reads every source file and fails on an import that points up):
//!
//! | layer | modules | holds |
//! |---|---|---|
//! | wire | [`jsonrpc`] (with the framing), [`vocab`], the error type | JSON-RPC messages and lines, the MCP words, [`Error`] |
//! | upstream | the upstreams, `guard` | [`Upstream`], [`Link`], [`ChildUpstream`], [`HttpUpstream`], [`UnixUpstream`], the loopback guard |
//! | session | the session, [`Bridge`], [`Tap`], [`Watcher`], [`stdio`] | held requests, restarts, resume, observing |
//! | era | the era adapter | [`EraUpstream`]: a client of one protocol era meets a server of the other |
//! | serve | [`serve`], [`shared`] | one upstream behind a loopback endpoint; one server per key |
//!
//! # Error codes
//!
//! Every error the bridge makes carries `data.reason` (snake_case) and, where known, `data.upstream`
//! (`{ "status": …, "message": … }`). Bridge failures use -32000…-32019 only: the MCP specification
//! reserves -32020…-32099.
//!
//! | code | constant | `data.reason` | when |
//! |---|---|---|---|
//! | -32700 | [`PARSE_ERROR`] | `parse_error`, `not_object`, `frame_too_large` | a line that is not a message (`id: null`) |
//! | -32600 | [`INVALID_REQUEST`] | `invalid_request` | an empty batch, a batch item that is not an object, or an `id` that is an object, an array or a boolean (`id: null`, never forwarded) |
//! | -32000 | [`UPSTREAM_UNREACHABLE`] | `upstream_unreachable`, `session_expired`, `shared_server_unavailable` | the client left before the upstream could be reached, or the upstream forgot the session again right after a replay, or the key's shared server could not be attached ([`shared::unavailable_answer`]), or the session of its own a 2026-07-28 client was given could not take its request |
//! | -32001 | [`UPSTREAM_EXITED`] | `upstream_exited`, `upstream_restarted`, `connection_lost`, `session_ended` | the request was in flight when the upstream died or the connection dropped, or the session of its own a 2026-07-28 client was given ended; never replayed |
//! | -32002 | [`BUFFER_FULL`] | `buffer_full` | the upstream is not ready and the hold buffer is full |
//! | -32003 | [`RESTART_DEADLINE`] | `restart_deadline` | the request was held longer than the restart deadline |
//! | -32004 | [`UPSTREAM_PROTOCOL_ERROR`] | `upstream_protocol_error` | the upstream answered with something that is not MCP |
//! | -32005 | [`TOO_MANY_SESSIONS`] | `too_many_sessions` | [`serve`] holds as many sessions as it may, stateless requests' included (HTTP 503); one must end or expire first |
//! | -32006 | [`TOO_MANY_URIS`] | `too_many_uris` | a `subscriptions/listen` names more than [`MAX_SUBSCRIPTIONS`] resources, or a subscription would take a session past that many |
//! | -32007 | [`TOO_MANY_LISTENS`] | `too_many_listens` | a session of [`serve`] holds [`MAX_LISTENS`] `subscriptions/listen` streams open |
//! | -32008 | [`TOO_MANY_CAPABILITY_SESSIONS`] | `too_many_capability_sessions` | a 2026-07-28 client needs a session of its own for its capabilities while [`MAX_CAPABILITY_SESSIONS`] are open; an idle one closes after [`CAPABILITY_SESSION_IDLE`] |
//! | -32009 | [`ANSWERS_TOO_LARGE`] | `answers_too_large` | the JSON answers to one POST of [`serve`] came to more than 16 MiB: the ones past that |
//!
//! # Example
//!
//! A hot-reload dev tool: `devtool src -- cargo run -q` as the server command in an editor's MCP
//! configuration restarts the server whenever `src` changes, and the editor's session carries on.
//!
//! ```no_run
//! # #[cfg(not(feature = "watch"))]
//! # fn main() {}
//! # #[cfg(feature = "watch")]
//! use std::time::Duration;
//!
//! # #[cfg(feature = "watch")]
//! use calltape_stdio_bridge::{Bridge, ChildUpstream, Watcher};
//!
//! # #[cfg(feature = "watch")]
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let args: Vec<String> = std::env::args().skip(1).collect();
//!     let split = args.iter().position(|a| a == "--").ok_or("usage: devtool PATH... -- CMD...")?;
//!     let (watched, command) = (&args[..split], &args[split + 1..]);
//!
//!     let bridge = Bridge::builder()
//!         .upstream(ChildUpstream::new(command)?)
//!         .restart_deadline(Duration::from_secs(60))
//!         .build()?;
//!     // Restart the server 200 ms after the last change; dropping the watcher stops watching.
//!     let _watcher = Watcher::start(watched, Duration::from_millis(200), bridge.restart_handle())?;
//!
//!     // Logs go to stderr: stdout belongs to the protocol.
//!     let summary = bridge.run(tokio::io::stdin(), tokio::io::stdout()).await?;
//!     eprintln!("the server was restarted {} times", summary.reinitializations);
//!     Ok(())
//! }
//! ```
#![cfg_attr(
    not(feature = "http"),
    doc = "[`HttpUpstream`]: #features\n[`UnixUpstream`]: #features\n[`tls_client_config`]: #features"
)]
#![cfg_attr(
    not(feature = "serve"),
    doc = "[`serve`]: #features\n[`shared`]: #features\n[`shared::unavailable_answer`]: #features"
)]
#![cfg_attr(all(feature = "http", not(unix)), doc = "[`UnixUpstream`]: #features")]
#![cfg_attr(not(feature = "watch"), doc = "[`Watcher`]: #features")]
#![cfg_attr(
    not(feature = "era"),
    doc = "[`EraUpstream`]: #features\n[`Protocol`]: #features\n[`TOO_MANY_URIS`]: #features\n[`TOO_MANY_CAPABILITY_SESSIONS`]: #features\n[`MAX_CAPABILITY_SESSIONS`]: #features\n[`CAPABILITY_SESSION_IDLE`]: #features"
)]
#![cfg_attr(
    not(feature = "serve"),
    doc = "[`TOO_MANY_SESSIONS`]: #features\n[`TOO_MANY_LISTENS`]: #features\n[`MAX_LISTENS`]: #features\n[`ANSWERS_TOO_LARGE`]: #features"
)]
#![deny(unsafe_code)]
#![deny(missing_docs)]

// The layers, bottom up (see "Layers" above; `tests/it/layers.rs` keeps imports pointing down).

// Wire: JSON-RPC, its framing, the MCP vocabulary, the error type.
mod error;
pub mod jsonrpc;
pub mod vocab;

// Upstream: what the client's messages are forwarded to.
#[cfg(any(feature = "http", feature = "serve"))]
pub mod guard;
mod upstream;

// Session: one client's session over restarting upstreams.
mod bridge;
mod session;
pub mod stdio;
mod tap;
#[cfg(feature = "watch")]
mod watch;

// Era: translation between the protocol eras.
#[cfg(feature = "era")]
mod era;

// Serve and shared: the serving side.
#[cfg(feature = "serve")]
pub mod serve;
#[cfg(feature = "serve")]
pub mod shared;

pub use bridge::{
    Bridge, BridgeBuilder, DEFAULT_BUFFER_BYTES, DEFAULT_BUFFER_MESSAGES, DEFAULT_RESTART_DEADLINE,
    DEFAULT_TAP_CAPACITY, RestartHandle, Summary,
};
#[cfg(feature = "era")]
pub use era::{EraUpstream, Protocol};
#[cfg(feature = "serve")]
pub use error::{ANSWERS_TOO_LARGE, MAX_LISTENS, TOO_MANY_LISTENS, TOO_MANY_SESSIONS};
pub use error::{
    BUFFER_FULL, Error, ErrorKind, MAX_SUBSCRIPTIONS, RESTART_DEADLINE, UPSTREAM_EXITED,
    UPSTREAM_PROTOCOL_ERROR, UPSTREAM_UNREACHABLE,
};
#[cfg(feature = "era")]
pub use error::{
    CAPABILITY_SESSION_IDLE, MAX_CAPABILITY_SESSIONS, TOO_MANY_CAPABILITY_SESSIONS, TOO_MANY_URIS,
};
pub use jsonrpc::frame::{
    DEFAULT_MAX_FRAME, Frame, FrameReader, FrameWriter, Incoming, InvalidLine,
};
pub use tap::{Direction, TAP_QUEUE_BYTES, Tap, TapEvent};
#[cfg(all(feature = "http", unix))]
pub use upstream::UnixUpstream;
#[cfg(feature = "http")]
pub use upstream::{
    AuthChallenge, Authorizer, DEFAULT_HTTP_PATH, ExtraHeaders, HttpUpstream, MAX_AUTH_RETRIES,
    error_chain, tls_client_config,
};
pub use upstream::{BoxFuture, ChildUpstream, Link, SharedWriter, Stderr, Upstream, UpstreamEvent};
pub use vocab::{INVALID_REQUEST, MODERN_VERSION, PARSE_ERROR};
#[cfg(feature = "watch")]
pub use watch::{DEFAULT_DEBOUNCE, Watcher};

/// Entry points for the fuzz targets (feature `fuzzing`); not a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    /// Reads `text` as a JSON-RPC message with the one-pass scanner ([`Message::parse`]) and with
    /// `serde_json`, and panics where they disagree.
    ///
    /// [`Message::parse`]: crate::jsonrpc::Message::parse
    pub fn check_message_reading(text: &str) {
        crate::jsonrpc::agreement::check_message_reading(text);
    }

    /// Peeks at `frame` ([`peek`]) with the scanner and with `serde_json`, and panics where both read
    /// it and disagree.
    ///
    /// [`peek`]: crate::jsonrpc::peek
    pub fn check_peek(frame: &[u8]) {
        crate::jsonrpc::check_peek(frame);
    }

    /// The check of the `frame_scanner` fuzz target, which the tests also run on every saved input:
    /// [`check_peek`] on the bytes, and [`check_message_reading`] on them if they are UTF-8.
    pub fn check_frame(frame: &[u8]) {
        check_peek(frame);
        if let Ok(text) = std::str::from_utf8(frame) {
            check_message_reading(text);
        }
    }
}

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

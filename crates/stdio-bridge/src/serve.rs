//! `calltape serve`: one stdio MCP server behind a Streamable HTTP endpoint that any number of sessions
//! share.
//!
//! [`ServerBuilder`] builds the server: it listens on 127.0.0.1 or on an owner-only Unix socket, hardens loopback
//! HTTP (no `Origin` but the listener's own, none at all for a shared server; no request a browser
//! marks as sent by another site's page; loopback `Host` only; no CORS; an optional bearer token
//! compared in constant time),
//! and multiplexes every session onto one upstream:
//!
//! - the upstream is reached through an [`EraUpstream`](crate::EraUpstream) ([`ServerBuilder::protocol`],
//!   by default found each time it starts), so sessions of the handshake era and stateless 2026-07-28
//!   requests share one endpoint whatever era the upstream speaks: what it lacks is translated;
//! - the first session's `initialize` is forwarded and its answer cached; later sessions are answered
//!   from the cache with their own ids;
//! - request ids and progress tokens are rewritten to unique ones upstream and mapped back;
//!   `notifications/cancelled` follows the mapping;
//! - list changes and `notifications/message` go to every session, `notifications/resources/updated`
//!   only to the sessions that subscribed to that URI;
//! - an event of a `subscriptions/listen` stream goes to that request's stream only, with the id the
//!   client gave the request (an SSE stream, also with [`ServerBuilder::json_response`]);
//! - a stateless 2026-07-28 request (a POST with that `MCP-Protocol-Version` and no `Mcp-Session-Id`)
//!   is held to its era's HTTP rules, and every refusal carries its id: `_meta` must name its protocol
//!   version and client capabilities (else HTTP 400 with -32602), `MCP-Protocol-Version`, `Mcp-Method`
//!   and `Mcp-Name` must be sent and say what its body says (else HTTP 400 with -32020), a version
//!   serve does not speak gets HTTP 400 with -32022 and `supported` / `requested`, `initialize` and the
//!   other methods 2026-07-28 removed get HTTP 404 with -32601, and an error answer has the status its
//!   code calls for (404 for -32601; 400 for -32602, -32020, -32021, -32022);
//! - a server-to-client request (roots, sampling, elicitation, ping) goes to the session whose request is
//!   in flight (the most recent one if several), and its answer back with the upstream's own id;
//! - a session's GET stream carries event ids; a client that leaves 1,024 messages or 16 MiB of it
//!   unread has the stream closed, and resumes with `Last-Event-ID` from the session's last 1,024
//!   events (16 MiB), which it retains; older ones are dropped;
//! - a POST's answer stream is bounded the same way: past 1,024 messages or 16 MiB unread it is
//!   closed, and the answers after that go to the session's GET stream; JSON answers
//!   ([`ServerBuilder::json_response`]) past 16 MiB are each replaced by an
//!   [`ANSWERS_TOO_LARGE`](crate::ANSWERS_TOO_LARGE) error with their own ids;
//! - no client stalls the others: what the sessions send goes to the upstream one session at a time,
//!   in turn, so a batch of thousands of requests does not put another session's request behind them
//!   all; the multiplexer never waits on a write to the upstream while the upstream's output waits
//!   to be read; a session holds at most [`MAX_LISTENS`](crate::MAX_LISTENS) `subscriptions/listen`
//!   streams open, each naming at most [`MAX_SUBSCRIPTIONS`](crate::MAX_SUBSCRIPTIONS) resources;
//!   a stateless request counts as a session while it is answered;
//! - when the upstream exits, in-flight requests of every session get an error with their own ids
//!   (code [`UPSTREAM_EXITED`](crate::UPSTREAM_EXITED)), and the upstream is started again and
//!   re-initialized from the cached handshake.
//!
//! With [`ServerBuilder::client_authorization`], a client's own `Authorization` header is passed on:
//! the sessions that send one are multiplexed as above onto an upstream made for that value (one per
//! distinct value, never shared between values), and a session answers only requests that carry the
//! value it started with. The serving side keeps no copy of the value and logs none.
//!
//! With [`ServerBuilder::upstream_per_path`] (or [`ServerBuilder::per_path_only`]), `{prefix}KEY/mcp`
//! is an endpoint of its own for each KEY: its sessions are multiplexed as above onto an upstream
//! made for that KEY on its first request, and a session answers only at the path it started at.
//!
//! # What cannot be shared
//!
//! The upstream sees one client. `logging/setLevel` sets the level for every session (the last one to set
//! it wins), and roots that differ between sessions cannot be told apart: a `roots/list` request goes to
//! one session only.
//!
//! A stateless 2026-07-28 request (no session id) is an exchange of its own: its ids are remapped and
//! it is never asked a server-to-client request, which it could not answer. On an upstream of the
//! handshake era it goes through the upstream's one session (which the adapter initializes when no
//! session did), so it shares that session's log level and what the upstream was told of the client.
//!
//! # Example
//!
//! ```no_run
//! use calltape_stdio_bridge::{ChildUpstream, serve::ServerBuilder};
//!
//! # async fn run() -> Result<(), calltape_stdio_bridge::Error> {
//! let server = ServerBuilder::new(ChildUpstream::new(["python", "server.py"])?)
//!     .bearer_token("a long random token")
//!     .listen_tcp(([127, 0, 0, 1], 8808).into())
//!     .await?;
//! // Sessions now POST to http://127.0.0.1:8808/mcp.
//! server
//!     .run_until(async {
//!         let _ = tokio::signal::ctrl_c().await;
//!     })
//!     .await?;
//! # Ok(())
//! # }
//! ```

mod conn;
mod credential;
mod endpoint;
mod listen;
mod mux;
mod outbox;
mod per_path;

pub use endpoint::{Endpoint, Transport};
pub use listen::{SUPPORTED_PROTOCOL_VERSIONS, Server, ServerBuilder, StopReason};

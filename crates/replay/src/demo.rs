//! The demo's two peers (feature `demo`): a small MCP server in two versions and a scripted client
//! session, on JSON lines over any `Read` and `Write`.
//!
//! `calltape demo` records the client's session against version 1 of the server, then replays it
//! against both versions to show a replay report, and serves the recording back to the same client
//! through `mock`: they are the fixtures of that walk-through,
//! kept out of the command's source, and a test can drive the same pair. Version 2 changes three
//! answers and the tool surface (two breaking changes, three compatible ones).

mod client;
mod server;

pub use client::run_script;
pub use server::serve;

/// The card token the scripted client sends in `pay`'s input: a recording must not hold it.
pub const CARD_TOKEN: &str = "tok_live_4eC39HqLyjWDarjtT1zdp7dc";

/// The fields of the demo server's quotes that vary per call, as `--ignore` globs: `**.quotedAt`
/// and `**.quoteId`, comma-separated.
pub const VOLATILE_FIELDS: &str = "**.quotedAt,**.quoteId";

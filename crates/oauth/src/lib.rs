//! The OAuth client of the MCP authorization specification, for calltape's HTTP upstreams.
//!
//! When an MCP server answers 401, [`calltape_stdio_bridge::HttpUpstream`] asks its
//! [`Authorizer`](calltape_stdio_bridge::Authorizer) to sign in. This crate is that authorizer:
//! it finds the authorization server (RFC 9728 protected resource metadata, RFC 8414 and OpenID
//! discovery), registers or names a client, signs in with the authorization code flow and PKCE (or
//! client credentials, without a browser), refreshes tokens, and keeps them in an owner-only
//! [`TokenStore`] that several calltape processes share: one sign-in and one refresh per server
//! however many start at once.
//!
//! Tokens and client secrets never reach a log, an error message or a recording: the bridge sends
//! the header it is given and forgets it, and the recorder never sees request headers.

mod error;
mod store;

pub use error::{Error, ErrorKind};
pub use store::{Credentials, RegisteredClient, StoreKey, StoreLock, TokenStore};

//! The OAuth client of the MCP authorization specification, for calltape's HTTP upstreams.
//!
//! When an MCP server answers 401, [`calltape_stdio_bridge::HttpUpstream`] asks its
//! [`Authorizer`](calltape_stdio_bridge::Authorizer) to sign in. This crate is that authorizer,
//! [`OAuthSession`]: it finds the authorization server (RFC 9728 protected resource metadata, RFC
//! 8414 and OpenID discovery), registers or names a client, signs in with the authorization code
//! flow and PKCE (or client credentials, without a browser), refreshes tokens, and keeps them in an
//! owner-only [`TokenStore`] that several calltape processes share: one sign-in and one refresh per
//! server however many start at once.
//!
//! Tokens and client secrets never reach a log, an error message or a recording: the bridge sends
//! the header it is given and forgets it, and the recorder never sees request headers.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use calltape_oauth::{OAuthOptions, OAuthSession, TokenStore};
//! use calltape_stdio_bridge::{ExtraHeaders, HttpUpstream};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let url = "https://mcp.example.com/mcp";
//! let session = OAuthSession::new(url, OAuthOptions::default(), TokenStore::from_env()?)?;
//! let upstream = HttpUpstream::with_authorizer(url, ExtraHeaders::new(), Arc::new(session))?;
//! # let _ = upstream;
//! # Ok(())
//! # }
//! ```

mod callback;
mod discovery;
mod error;
mod options;
mod pkce;
mod registration;
mod session;
mod store;
mod token;
mod web;

pub use error::{Error, ErrorKind};
pub use options::{OAuthOptions, SecretNotice, SignInNotice};
pub use session::{OAuthSession, REFRESH_MARGIN};
pub use store::{Credentials, RegisteredClient, StoreKey, StoreLock, TokenStore};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

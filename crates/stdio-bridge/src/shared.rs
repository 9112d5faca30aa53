//! Shared servers: one server process per key that every stdio session of the user attaches to, safe from
//! other local users.
//!
//! The pieces, in the order a session uses them:
//! - [`SharedKey`]: the validated key, checked before any file is touched.
//! - [`SharedPaths`]: the key's folder `$CALLTAPE_HOME/shared/<key>/` (0700) and its files, with the owner
//!   and mode checks of the folder, every folder above it, the record and the socket (on Windows: the
//!   home, `shared` and the key's folder made owner-only, and no Unix socket: the server listens on
//!   127.0.0.1).
//! - [`ServerRecord`]: `server.json`, written by a server once it listens (0600, renamed into place).
//! - [`Secret`], [`Nonce`], [`ServerKeys`]: the identity proof a server gives before a session sends it the
//!   bearer token.
//! - OS file locks (`flock`; calltape-jsonl-store's `FileLock` on Windows) make one server per key
//!   without leases.
//! - [`attach_or_start`]: finds the key's server or starts exactly one ([`Launcher`]).
//! - [`serve_shared`]: the server's side: lock, listen, write the record, serve, clean up.
//! - [`SharedUpstream`]: the key's server as an [`Upstream`](crate::Upstream) for a
//!   [`Bridge`](crate::Bridge), which is what `calltape shared` runs. It passes frames of either
//!   protocol era through: the server translates for its child (its [`ServerBuilder`](crate::serve::ServerBuilder)
//!   reaches the child through an [`EraUpstream`](crate::EraUpstream)).
//! - [`answer_held_requests`]: when no server can be attached, each request the client sent gets
//!   [`unavailable_answer`] with its own id before the session exits.
//!
//! # Example
//!
//! ```
//! use std::path::Path;
//! use calltape_stdio_bridge::shared::{Secret, Nonce, SharedKey, SharedPaths};
//!
//! let key = SharedKey::new("notes")?;
//! let paths = SharedPaths::under("/run/user/1000/calltape", &key);
//! assert_eq!(paths.record(), Path::new("/run/user/1000/calltape/shared/notes/server.json"));
//! assert!(SharedKey::new("Notes").is_err(), "keys are lowercase");
//!
//! // A server proves it holds the record's secret, for its own endpoint and a fresh nonce.
//! let keys = Secret::generate()?.keys();
//! let nonce = Nonce::generate()?;
//! let proof = keys.prove("http://127.0.0.1:4000", &nonce);
//! assert!(keys.verify("http://127.0.0.1:4000", &nonce, &proof));
//! assert!(!keys.verify("http://127.0.0.1:4001", &nonce, &proof));
//! # Ok::<(), calltape_stdio_bridge::Error>(())
//! ```

mod client;
mod identity;
mod key;
mod launch;
mod link;
mod lock;
mod paths;
mod server;
mod server_record;

pub use identity::{IDENTITY_PATH, Nonce, Secret, ServerKeys};
pub use key::{MAX_KEY_LEN, SharedKey};
pub use launch::{Attached, DEFAULT_START_TIMEOUT, Launcher, SERVE_KEY_ENV, attach_or_start};
pub use link::{SharedUpstream, answer_held_requests, unavailable_answer};
pub use paths::{MAX_SOCKET_PATH, SharedPaths};
pub use server::serve_shared;
pub use server_record::{MCP_PATH, ServerRecord};

pub(crate) use identity::{RETIRE_PATH, token_matches};
#[cfg(unix)]
pub(crate) use paths::check_socket_len;

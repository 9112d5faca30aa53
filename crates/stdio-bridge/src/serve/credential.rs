//! A client's own `Authorization`, passed on to the upstream: the multiplexer that each client
//! credential's sessions go to.
//!
//! Sessions that sent no credential of their own share the server's upstream, as every session does
//! when nothing is passed on. Sessions that sent one go to an upstream made for that value, one per
//! distinct value, so two clients with different credentials never share an upstream session (which
//! would hand one user's access to the other). Such an upstream lives while a session or a stateless
//! request holds it: the last one to end stops it, and an HTTP upstream ends its session then.
//!
//! The value is kept by the upstream that sends it and nowhere else here: the table holds a digest of
//! it, and nothing logs it.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use http::HeaderMap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::mux::{Mux, WeakMux};
use crate::{EraUpstream, Error, Protocol, Upstream};

/// Makes the upstream of the sessions that sent this `Authorization` value.
pub(crate) type UpstreamFor = Arc<dyn Fn(&str) -> Result<Arc<dyn Upstream>, Error> + Send + Sync>;

/// A client's `Authorization` value and its digest, which names it in the tables.
pub(crate) struct Credential {
    value: String,
    digest: [u8; 32],
}

impl Credential {
    /// The `Authorization` a request carries. `Err` when it holds bytes that cannot be sent on
    /// (not visible ASCII).
    pub(crate) fn of(headers: &HeaderMap) -> Result<Option<Self>, ()> {
        let Some(value) = headers.get(http::header::AUTHORIZATION) else {
            return Ok(None);
        };
        let value = value.to_str().map_err(|_| ())?.trim();
        if value.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self {
            digest: Sha256::digest(value.as_bytes()).into(),
            value: value.to_owned(),
        }))
    }

    pub(crate) fn digest(&self) -> [u8; 32] {
        self.digest
    }
}

/// Whether a request's credential is the one its session started with, in time that does not
/// depend on where they differ.
pub(crate) fn same_credential(session: Option<&[u8; 32]>, request: Option<&Credential>) -> bool {
    match (session, request) {
        (None, None) => true,
        (Some(a), Some(b)) => bool::from(a.ct_eq(&b.digest)),
        _ => false,
    }
}

/// The server's multiplexers: the one every session without a credential of its own shares (none
/// for a server whose upstreams are all per path), and one per client credential while a session
/// holds it.
pub(crate) struct Muxes {
    shared: Option<Mux>,
    protocol: Protocol,
    upstream_for: Option<UpstreamFor>,
    by_credential: Mutex<HashMap<[u8; 32], WeakMux>>,
}

impl Muxes {
    pub(crate) fn new(
        upstream: Option<Arc<dyn Upstream>>,
        protocol: Protocol,
        upstream_for: Option<UpstreamFor>,
    ) -> Self {
        Self {
            shared: upstream
                .map(|upstream| Mux::start(Arc::new(EraUpstream::from_arc(upstream, protocol)))),
            protocol,
            upstream_for,
            by_credential: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the server has an upstream of its own, at `/mcp`.
    pub(crate) fn has_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Whether a client's `Authorization` is passed on.
    pub(crate) fn passes_credentials(&self) -> bool {
        self.upstream_for.is_some()
    }

    /// The multiplexer for a session with this credential: the shared one without, else the one
    /// of that value, started when none holds it.
    pub(crate) fn get(&self, credential: Option<&Credential>) -> Result<Mux, Error> {
        let (Some(credential), Some(upstream_for)) = (credential, &self.upstream_for) else {
            return self
                .shared
                .clone()
                .ok_or_else(|| Error::config("this server has no upstream at /mcp"));
        };
        let mut table = lock(&self.by_credential);
        if let Some(mux) = table.get(&credential.digest).and_then(WeakMux::upgrade) {
            return Ok(mux);
        }
        table.retain(|_, mux| mux.upgrade().is_some());
        let upstream = upstream_for(&credential.value)?;
        let mux = Mux::start(Arc::new(EraUpstream::from_arc(upstream, self.protocol)));
        table.insert(credential.digest, mux.downgrade());
        tracing::debug!(
            upstreams = table.len(),
            "a client credential got an upstream of its own"
        );
        Ok(mux)
    }

    /// Stops every upstream gracefully.
    pub(crate) async fn shutdown(&self) {
        let live: Vec<Mux> = lock(&self.by_credential)
            .drain()
            .filter_map(|(_, mux)| mux.upgrade())
            .collect();
        for mux in live {
            mux.shutdown().await;
        }
        if let Some(shared) = &self.shared {
            shared.shutdown().await;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credential(value: &str) -> Option<Credential> {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, value.parse().unwrap());
        Credential::of(&headers).unwrap()
    }

    #[test]
    fn a_session_is_reached_only_with_the_credential_it_started_with() {
        let a = credential("Bearer a").unwrap();
        let b = credential("Bearer b");
        assert!(same_credential(Some(&a.digest()), Some(&a)));
        assert!(!same_credential(Some(&a.digest()), b.as_ref()));
        assert!(!same_credential(Some(&a.digest()), None));
        assert!(!same_credential(None, Some(&a)));
        assert!(same_credential(None, None));
    }

    #[test]
    fn an_empty_header_is_no_credential_and_a_binary_one_is_refused() {
        assert!(credential("  ").is_none());
        assert!(Credential::of(&HeaderMap::new()).unwrap().is_none());
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_bytes(b"Bearer \xff").unwrap(),
        );
        assert!(Credential::of(&headers).is_err());
    }
}

//! Upstreams chosen by the request's path: `{prefix}KEY/mcp` is an MCP endpoint of its own for each
//! one-segment KEY, its sessions multiplexed onto an upstream made for that KEY on the first request
//! that names it and kept until the server stops. A mock serving one recording per test plugs in
//! here, the KEY naming the test's recording.

use std::{collections::HashMap, sync::Arc};

use super::mux::Mux;
use crate::{BoxFuture, EraUpstream, Error, Protocol, Upstream, shared::MCP_PATH};

/// Makes the upstream of the sessions at one KEY.
pub(crate) type UpstreamAt =
    Arc<dyn Fn(&str) -> BoxFuture<'static, Result<Arc<dyn Upstream>, Error>> + Send + Sync>;

/// The endpoints under one path prefix and the multiplexer of each KEY asked for so far.
pub(crate) struct PerPath {
    prefix: String,
    upstream_at: UpstreamAt,
    protocol: Protocol,
    muxes: tokio::sync::Mutex<HashMap<String, Mux>>,
}

/// Where a request under the prefix goes.
pub(crate) enum PathKey<'p> {
    /// `{prefix}KEY/mcp`.
    Key(&'p str),
    /// Under the prefix, but not of that shape.
    Malformed,
}

impl PerPath {
    pub(crate) fn new(prefix: String, upstream_at: UpstreamAt, protocol: Protocol) -> Self {
        Self {
            prefix,
            upstream_at,
            protocol,
            muxes: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The KEY of a path under the prefix; `None` for a path elsewhere.
    pub(crate) fn key_of<'p>(&self, path: &'p str) -> Option<PathKey<'p>> {
        let rest = path.strip_prefix(&self.prefix)?;
        Some(match rest.strip_suffix(MCP_PATH) {
            Some(key) if !key.is_empty() && !key.contains('/') => PathKey::Key(key),
            _ => PathKey::Malformed,
        })
    }

    /// Where MCP is served, for a refusal: `{prefix}<KEY>/mcp`.
    pub(crate) fn shape(&self) -> String {
        format!("{}NAME{MCP_PATH}", self.prefix)
    }

    /// The multiplexer at `key`, started (its upstream made) on the first request that names it.
    /// The table stays locked while the upstream is made, so that two first requests for a KEY
    /// never make two upstreams.
    pub(crate) async fn mux(&self, key: &str) -> Result<Mux, Error> {
        let mut muxes = self.muxes.lock().await;
        if let Some(mux) = muxes.get(key) {
            return Ok(mux.clone());
        }
        let upstream = (self.upstream_at)(key).await?;
        let mux = Mux::start(Arc::new(EraUpstream::from_arc(upstream, self.protocol)));
        muxes.insert(key.to_owned(), mux.clone());
        tracing::debug!(endpoints = muxes.len(), "a path got an upstream of its own");
        Ok(mux)
    }

    /// Stops every upstream gracefully.
    pub(crate) async fn shutdown(&self) {
        let muxes: Vec<Mux> = self.muxes.lock().await.drain().map(|(_, m)| m).collect();
        for mux in muxes {
            mux.shutdown().await;
        }
    }
}

//! The HTTP record/replay proxy for LLM APIs.
//!
//! A test points its SDK's base URL at `http://127.0.0.1:PORT/<upstream>/…`; the proxy serves the
//! answer from a cassette, or forwards the request to the named upstream and records the answer,
//! depending on the [`Mode`]. Streams (server-sent events, NDJSON) are teed to the client as they
//! arrive and stored one event per line; replay gives back the same bytes.
//!
//! A test may pick its own cassette with the `x-calltape-cassette: NAME` header or the path prefix
//! `/_cassette/NAME/` (a `/` of the name written `%2F` there), resolved under the
//! [`cassette_dir`](ProxyBuilder::cassette_dir), so one proxy serves a parallel test run. `GET /_calltape/cassette/NAME` answers, as JSON, what the run did so
//! far with that cassette (hits, misses with their closest recordings, fuzzy hits, drift, and the
//! failure text), so a test runner's plugin can fail the very test whose request missed.
//!
//! The proxy listens on loopback only and refuses what a web page could send it: a request with an
//! `Origin` header (403) unless that origin was [allowed](ProxyBuilder::allow_origin), a request
//! without one that the browser marks as sent by another site's page (`Sec-Fetch-Site: cross-site`
//! or `same-site`, 403), and a `Host` that does not name the listener (421), as `serve` does
//! (`calltape_stdio_bridge::guard::LoopbackGuard`). A proxy that adds a key itself
//! ([`auth`](ProxyBuilder::auth), [`auth_key`](ProxyBuilder::auth_key)) also serves only under a random per-run path prefix
//! (`/ct-<32 hex digits>/`), which its [`url`](ProxyHandle::url) and
//! [`base_url`](ProxyHandle::base_url) include: a request without it gets 404 and never goes
//! upstream. The prefix is never stored in a cassette.
//!
//! # Example
//!
//! ```no_run
//! use calltape_replay::http::{Mode, Proxy};
//!
//! # async fn demo() -> Result<(), calltape_replay::Error> {
//! let proxy = Proxy::builder()
//!     .upstream("openai", "https://api.openai.com")
//!     .cassette("tests/cassettes/chat.jsonl")
//!     .mode(Mode::Replay)
//!     .start()
//!     .await?;
//! // Point the client at the proxy, e.g. OPENAI_BASE_URL=<this>/v1
//! let base = proxy.base_url("openai");
//! assert!(base.starts_with("http://127.0.0.1:"));
//! let report = proxy.shutdown().await?;
//! assert_eq!(report.misses.len(), 0);
//! # Ok(())
//! # }
//! ```

mod access;
mod capture;
mod cassette_choice;
mod events;
mod exchange;
mod flush;
mod miss;
mod options;
mod reply;
mod report;
mod report_html;
mod response;
mod server;
mod status;
mod tape;
mod verify;

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use calltape_recorder::http::{Normalizer, Scrubber, without_userinfo};
use calltape_redact::KnownSecrets;
use calltape_stdio_bridge::guard::LoopbackGuard;
use http::{HeaderName, HeaderValue};
use http_body_util::combinators::UnsyncBoxBody;
use tokio::sync::{Notify, watch};

pub use crate::mode::Mode;
pub use options::{Exhaustion, RecordTiming, ReplayTiming};
pub use report::{CassetteReport, Closest, Drift, FuzzyHit, Miss, Report};

use crate::error::{ErrorKind, Result};
use miss::Provider;
use tape::Tape;

pub(crate) type ProxyBody = UnsyncBoxBody<Bytes, io::Error>;

/// The header a request uses to choose its cassette under the cassette folder.
pub const CASSETTE_HEADER: &str = "x-calltape-cassette";

/// Entry point: `Proxy::builder()`.
#[derive(Debug)]
pub struct Proxy;

impl Proxy {
    /// A builder with the defaults: loopback on a free port, mode resolved from the environment
    /// ([`Mode::resolve`]), fast replay, 10 ms delay buckets, `error` on exhaustion, no fuzzy matching.
    pub fn builder() -> ProxyBuilder {
        ProxyBuilder::default()
    }
}

/// Configures and starts a [`Proxy`].
#[derive(Debug)]
pub struct ProxyBuilder {
    upstreams: Vec<(String, String)>,
    listen: SocketAddr,
    cassette: Option<PathBuf>,
    cassette_dir: Option<PathBuf>,
    mode: Option<Mode>,
    replay_timing: ReplayTiming,
    record_timing: RecordTiming,
    exhaustion: Exhaustion,
    fuzzy: Option<f32>,
    allow_fuzzy: bool,
    ignore_body: Vec<String>,
    ignore_query: Vec<String>,
    /// (upstream, header or `None` for the provider's, value).
    auth: Vec<(String, Option<String>, String)>,
    redact_names: Vec<String>,
    keep_names: Vec<String>,
    drop_headers: Vec<String>,
    keep_headers: Vec<String>,
    secrets_from_env: bool,
    rerecord_hint: Option<String>,
    allowed_origins: Vec<String>,
    path_token: Option<bool>,
    path_token_file: Option<PathBuf>,
    known: Option<KnownSecrets>,
}

impl Default for ProxyBuilder {
    fn default() -> Self {
        Self {
            upstreams: Vec::new(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            cassette: None,
            cassette_dir: None,
            mode: None,
            replay_timing: ReplayTiming::Fast,
            record_timing: RecordTiming::Bucketed,
            exhaustion: Exhaustion::Error,
            fuzzy: None,
            allow_fuzzy: false,
            ignore_body: Vec::new(),
            ignore_query: Vec::new(),
            auth: Vec::new(),
            redact_names: Vec::new(),
            keep_names: Vec::new(),
            drop_headers: Vec::new(),
            keep_headers: Vec::new(),
            secrets_from_env: true,
            rerecord_hint: None,
            allowed_origins: Vec::new(),
            path_token: None,
            path_token_file: None,
            known: None,
        }
    }
}

impl ProxyBuilder {
    /// Routes `/<name>/…` to `url` (e.g. `openai` → `https://api.openai.com`).
    pub fn upstream(mut self, name: impl Into<String>, url: impl Into<String>) -> Self {
        self.upstreams.push((name.into(), url.into()));
        self
    }

    /// The loopback address to listen on (default `127.0.0.1:0`, a free port).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// The cassette used by requests that do not choose one.
    pub fn cassette(mut self, path: impl Into<PathBuf>) -> Self {
        self.cassette = Some(path.into());
        self
    }

    /// The folder in which per-test cassette names are resolved.
    pub fn cassette_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cassette_dir = Some(dir.into());
        self
    }

    /// The mode; without it, [`Mode::resolve`] decides from the environment.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// How replayed streams are paced.
    pub fn replay_timing(mut self, timing: ReplayTiming) -> Self {
        self.replay_timing = timing;
        self
    }

    /// How recorded delays are stored.
    pub fn record_timing(mut self, timing: RecordTiming) -> Self {
        self.record_timing = timing;
        self
    }

    /// What replay does once every recording of a key has been served.
    pub fn exhaustion(mut self, policy: Exhaustion) -> Self {
        self.exhaustion = policy;
        self
    }

    /// Enables fuzzy matching for misses, with a similarity threshold between 0 and 1.
    pub fn fuzzy(mut self, threshold: f32) -> Self {
        self.fuzzy = Some(threshold);
        self
    }

    /// Lets a fuzzy hit be served in `replay` mode (otherwise it fails there).
    pub fn allow_fuzzy(mut self, yes: bool) -> Self {
        self.allow_fuzzy = yes;
        self
    }

    /// Drops body fields matching a dot-path glob before keying.
    pub fn ignore_body(mut self, glob: impl Into<String>) -> Self {
        self.ignore_body.push(glob.into());
        self
    }

    /// Drops a query parameter before keying.
    pub fn ignore_query(mut self, name: impl Into<String>) -> Self {
        self.ignore_query.push(name.into());
        self
    }

    /// Sends `header: value` to the upstream `name` on every forwarded request, so the client never holds
    /// the key. The value is scrubbed from everything recorded.
    pub fn auth(
        mut self,
        upstream: impl Into<String>,
        header: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        self.auth
            .push((upstream.into(), Some(header.into()), value.into()));
        self
    }

    /// Sends `key` to the upstream `name` on every forwarded request in the header its provider's
    /// API reads: `x-api-key: <key>` for Anthropic's (an upstream whose name or URL says
    /// `anthropic`, or whose name says `claude`), `Authorization: Bearer <key>` for any other. As
    /// with [`auth`](Self::auth), the client never holds the key and it is scrubbed from everything
    /// recorded.
    pub fn auth_key(mut self, upstream: impl Into<String>, key: impl Into<String>) -> Self {
        self.auth.push((upstream.into(), None, key.into()));
        self
    }

    /// Extra field names to redact.
    pub fn redact_names<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.redact_names.extend(names.into_iter().map(Into::into));
        self
    }

    /// Field names never redacted by name.
    pub fn keep_names<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.keep_names.extend(names.into_iter().map(Into::into));
        self
    }

    /// A response header to drop from recordings although it is on the default keep list
    /// (`calltape_recorder::http::KEPT_RESPONSE_HEADERS`; `prefix*` allowed), such as
    /// `x-request-id`, which differs on every call.
    pub fn drop_response_header(mut self, pattern: impl Into<String>) -> Self {
        self.drop_headers.push(pattern.into().to_ascii_lowercase());
        self
    }

    /// Another response header to keep in recordings (`prefix*` allowed); every header that is not
    /// on the default keep list or named here is dropped. Its value is still redacted, a URL as a
    /// URL.
    pub fn keep_response_header(mut self, name: impl Into<String>) -> Self {
        self.keep_headers.push(name.into().to_ascii_lowercase());
        self
    }

    /// Whether to scrub the values of environment variables named like `*_API_KEY`, `*_TOKEN`,
    /// `*_SECRET` (default on).
    pub fn secrets_from_env(mut self, yes: bool) -> Self {
        self.secrets_from_env = yes;
        self
    }

    /// Keeps the secret values the proxy knows (the keys it sends upstream, the environment's) in
    /// `known`, a set the caller shares (with its log writer, say): they are hidden there too. The
    /// final gate before every cassette line looks for them, and for the values requests held
    /// under credential names, whatever this says.
    pub fn known_secrets(mut self, known: KnownSecrets) -> Self {
        self.known = Some(known);
        self
    }

    /// The command shown in miss messages to re-record.
    pub fn rerecord_hint(mut self, hint: impl Into<String>) -> Self {
        self.rerecord_hint = Some(hint.into());
        self
    }

    /// Serves requests that carry exactly this `Origin` (repeatable; for a browser app under test).
    /// Any other request with an `Origin` header gets 403.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Whether to serve only under a random per-run path prefix (`/ct-<32 hex digits>/`). On by
    /// default when an [`auth`](Self::auth) or [`auth_key`](Self::auth_key) key or a [`path_token_file`](Self::path_token_file) is
    /// configured, off otherwise.
    pub fn path_token(mut self, yes: bool) -> Self {
        self.path_token = Some(yes);
        self
    }

    /// Writes the path prefix's token (`ct-<32 hex digits>`, no slashes, one line) to this file when
    /// the proxy starts: an owner-only file, replaced atomically; a symbolic link at the path is an
    /// error. Turns the path prefix on unless [`path_token(false)`](Self::path_token) says otherwise.
    pub fn path_token_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.path_token_file = Some(path.into());
        self
    }

    /// Refuses settings that cannot work together, and warns of those that do not apply.
    fn check(&self, mode: Mode) -> Result<()> {
        if !self.listen.ip().is_loopback() {
            return Err(ErrorKind::NotLoopback(self.listen).into());
        }
        if self.upstreams.is_empty() {
            return Err(ErrorKind::Config(
                "no upstream configured; add one such as openai=https://api.openai.com".into(),
            )
            .into());
        }
        if mode != Mode::Live && self.cassette.is_none() && self.cassette_dir.is_none() {
            return Err(ErrorKind::Config(
                "no cassette: give a cassette file or a cassette folder for per-test cassettes"
                    .into(),
            )
            .into());
        }
        if let Some(t) = self.fuzzy.filter(|t| !(0.0..=1.0).contains(t)) {
            return Err(
                ErrorKind::Config(format!("fuzzy threshold {t} is not between 0 and 1")).into(),
            );
        }
        if mode == Mode::Append && (self.fuzzy.is_some() || self.exhaustion != Exhaustion::Error) {
            tracing::warn!(
                "append mode records every request without an exact unused recording; the fuzzy and exhaustion settings do not apply"
            );
        }
        Ok(())
    }

    /// Binds the listener and starts serving.
    pub async fn start(self) -> Result<ProxyHandle> {
        let mode = Mode::resolve(self.mode).map_err(ErrorKind::Config)?;
        self.check(mode)?;
        let upstreams = upstream_table(&self.upstreams)?;
        let mut scrubber = Scrubber::builder()
            .redact_names(self.redact_names)
            .keep_names(self.keep_names)
            .secrets_from_env(self.secrets_from_env);
        if let Some(known) = self.known {
            scrubber = scrubber.known_secrets(known);
        }
        let scrubber = scrubber.build()?;
        let normalizer = Normalizer::with_rules(&self.ignore_body, &self.ignore_query)?;
        let auth = auth_headers(self.auth, &upstreams, &scrubber)?;
        // Replay mode never talks to an upstream, so it builds no client at all.
        let client = if mode.forwards() {
            Some(client()?)
        } else {
            None
        };
        let listener = tokio::net::TcpListener::bind(self.listen)
            .await
            .map_err(|source| ErrorKind::Bind {
                addr: self.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ErrorKind::Bind {
            addr: self.listen,
            source,
        })?;
        let mut state = State {
            mode,
            upstreams,
            cassette: self.cassette,
            cassette_dir: self.cassette_dir,
            normalizer,
            scrubber,
            client,
            tapes: Mutex::new(HashMap::new()),
            report: Mutex::new(Report::new(mode)),
            inflight: AtomicUsize::new(0),
            idle: Notify::new(),
            replay_timing: self.replay_timing,
            record_timing: self.record_timing,
            exhaustion: self.exhaustion,
            fuzzy: self.fuzzy,
            allow_fuzzy: self.allow_fuzzy,
            drop_headers: self.drop_headers,
            keep_headers: self.keep_headers,
            auth,
            rerecord_hint: self.rerecord_hint.unwrap_or_else(|| {
                "run the tests again with CALLTAPE_MODE=record and the upstream reachable"
                    .to_owned()
            }),
            guard: LoopbackGuard::default(),
            path_token: None,
        };
        let wanted = !state.auth.is_empty() || self.path_token_file.is_some();
        let path_token = if self.path_token.unwrap_or(wanted) {
            let token = access::random_path_token()?;
            if let Some(file) = &self.path_token_file {
                calltape_jsonl_store::fs::write_atomic(file, format!("{token}\n"))
                    .map_err(ErrorKind::Store)?;
            }
            Some(token)
        } else {
            None
        };
        let mut guard = LoopbackGuard::new(Some(addr.port()));
        for origin in self.allowed_origins {
            guard = guard.allow_origin(origin);
        }
        state.guard = guard;
        state.path_token = path_token;
        let state = Arc::new(state);
        let (stop_tx, stop_rx) = watch::channel(false);
        let task = tokio::spawn(server::serve(listener, Arc::clone(&state), stop_rx));
        tracing::debug!(%addr, %mode, "proxy listening");
        Ok(ProxyHandle {
            addr,
            state,
            stop: stop_tx,
            task: Some(task),
            finished: false,
        })
    }
}

/// The upstreams by name, each URL checked: `http` or `https` with a host, each name once.
fn upstream_table(upstreams: &[(String, String)]) -> Result<HashMap<String, UpstreamCfg>> {
    let mut table = HashMap::new();
    for (name, url) in upstreams {
        if name.is_empty() || name.contains('/') || name.starts_with('_') {
            return Err(ErrorKind::Upstream {
                name: name.clone(),
                reason: "names must be non-empty, without `/`, and not start with `_`".into(),
            }
            .into());
        }
        // The URL as a message shows it: its user info may hold a password or a token.
        let shown = without_userinfo(url);
        let parsed: http::Uri = url.parse().map_err(|e| ErrorKind::Upstream {
            name: name.clone(),
            reason: format!("{shown:?} is not a URL: {e}"),
        })?;
        if !matches!(parsed.scheme_str(), Some("http" | "https")) || parsed.host().is_none() {
            return Err(ErrorKind::Upstream {
                name: name.clone(),
                reason: format!("{shown:?} must be an http:// or https:// URL with a host"),
            }
            .into());
        }
        let base = url.trim_end_matches('/').to_owned();
        let provider = Provider::guess(name, &base);
        if table
            .insert(name.clone(), UpstreamCfg { base, provider })
            .is_some()
        {
            return Err(ErrorKind::Upstream {
                name: name.clone(),
                reason: "given twice".into(),
            }
            .into());
        }
    }
    Ok(table)
}

/// Each upstream's key as the header its provider expects; every key becomes a secret the scrubber
/// hides wherever it appears.
fn auth_headers(
    keys: Vec<(String, Option<String>, String)>,
    upstreams: &HashMap<String, UpstreamCfg>,
    scrubber: &Scrubber,
) -> Result<HashMap<String, (HeaderName, HeaderValue)>> {
    let mut auth = HashMap::new();
    for (up, header, value) in keys {
        let Some(upstream) = upstreams.get(&up) else {
            return Err(ErrorKind::Upstream {
                name: up,
                reason: "auth given for an upstream that is not configured".into(),
            }
            .into());
        };
        let (header, value) = match header {
            Some(header) => (header, value),
            None => upstream.provider.key_header(&value),
        };
        scrubber.add_header_secret(&header, &value);
        let name =
            HeaderName::from_bytes(header.to_ascii_lowercase().as_bytes()).map_err(|_| {
                ErrorKind::Config(format!(
                    "auth header name {header:?} is not a valid header name"
                ))
            })?;
        let mut v = HeaderValue::from_str(&value).map_err(|_| {
            ErrorKind::Config(format!(
                "the auth value for {up:?} is not a valid header value"
            ))
        })?;
        v.set_sensitive(true);
        auth.insert(up, (name, v));
    }
    Ok(auth)
}

/// The HTTP client for forwarding modes: no redirects followed, no proxy from the environment, the
/// bridge's TLS settings.
fn client() -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .tls_backend_preconfigured(
            calltape_stdio_bridge::tls_client_config()
                .map_err(|e| ErrorKind::Client(Box::new(e)))?,
        )
        .build()
        .map_err(|e| ErrorKind::Client(Box::new(e)))?)
}

#[derive(Debug)]
pub(crate) struct UpstreamCfg {
    pub(crate) base: String,
    pub(crate) provider: Provider,
}

pub(crate) struct State {
    pub(crate) mode: Mode,
    pub(crate) upstreams: HashMap<String, UpstreamCfg>,
    pub(crate) cassette: Option<PathBuf>,
    pub(crate) cassette_dir: Option<PathBuf>,
    pub(crate) normalizer: Normalizer,
    pub(crate) scrubber: Scrubber,
    pub(crate) client: Option<reqwest::Client>,
    pub(crate) tapes: Mutex<HashMap<PathBuf, Arc<Mutex<Tape>>>>,
    pub(crate) report: Mutex<Report>,
    pub(crate) inflight: AtomicUsize,
    pub(crate) idle: Notify,
    pub(crate) replay_timing: ReplayTiming,
    pub(crate) record_timing: RecordTiming,
    pub(crate) exhaustion: Exhaustion,
    pub(crate) fuzzy: Option<f32>,
    pub(crate) allow_fuzzy: bool,
    pub(crate) drop_headers: Vec<String>,
    pub(crate) keep_headers: Vec<String>,
    pub(crate) auth: HashMap<String, (HeaderName, HeaderValue)>,
    pub(crate) rerecord_hint: String,
    /// Who may send requests: no foreign origin or host.
    pub(crate) guard: LoopbackGuard,
    /// `ct-<hex>`: the first path segment every request must start with, when the proxy holds a key.
    pub(crate) path_token: Option<String>,
}

impl State {
    pub(crate) fn report(&self) -> std::sync::MutexGuard<'_, Report> {
        self.report.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tape for a cassette path, loading it on first use.
    pub(crate) fn tape(&self, path: &Path) -> calltape_recorder::Result<Arc<Mutex<Tape>>> {
        let mut tapes = self.tapes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = tapes.get(path) {
            return Ok(Arc::clone(t));
        }
        let tape = Tape::open(path, self.mode, &self.normalizer, &self.scrubber)?;
        tracing::debug!(cassette = %path.display(), recordings = tape.len(), "cassette opened");
        let tape = Arc::new(Mutex::new(tape));
        tapes.insert(path.to_path_buf(), Arc::clone(&tape));
        Ok(tape)
    }

    /// Reports interactions the final gate refused: each is said on stderr and counted.
    pub(crate) fn refused(&self, refused: Vec<calltape_recorder::Error>) {
        if refused.is_empty() {
            return;
        }
        let mut report = self.report();
        for e in refused {
            tracing::error!("{e}");
            report.refused.push(e.to_string());
        }
    }

    /// Saves every tape with unsaved recordings; failures go to the report.
    fn save_all(&self) {
        let tapes: Vec<Arc<Mutex<Tape>>> = self
            .tapes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for t in tapes {
            let mut tape = t.lock().unwrap_or_else(|e| e.into_inner());
            if !tape.is_dirty() {
                continue;
            }
            match tape.finish(&self.scrubber) {
                Ok(refused) => self.refused(refused),
                Err(e) => {
                    tracing::error!("{e}");
                    self.report().errors.push(e.to_string());
                }
            }
        }
    }
}

/// A running proxy. Dropping it stops the listener and saves what was recorded; prefer
/// [`shutdown`](Self::shutdown), which also waits for streams still being recorded.
#[derive(Debug)]
pub struct ProxyHandle {
    addr: SocketAddr,
    state: Arc<State>,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
    finished: bool,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl ProxyHandle {
    /// The address the proxy listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, the proxy's root URL, with its path prefix when it has one
    /// (`http://ADDR/ct-<hex>`).
    pub fn url(&self) -> String {
        match &self.state.path_token {
            Some(token) => format!("http://{}/{token}", self.addr),
            None => format!("http://{}", self.addr),
        }
    }

    /// The base URL a client of upstream `name` should use: `http://ADDR/name`, or
    /// `http://ADDR/ct-<hex>/name` when the proxy serves under a path prefix.
    pub fn base_url(&self, name: &str) -> String {
        format!("{}/{name}", self.url())
    }

    /// The token of the per-run path prefix (`ct-<32 hex digits>`), when the proxy serves under one.
    pub fn path_token(&self) -> Option<&str> {
        self.state.path_token.as_deref()
    }

    /// The mode in effect.
    pub fn mode(&self) -> Mode {
        self.state.mode
    }

    /// Loads a cassette now instead of at its first request, so a broken file fails before any test
    /// runs, and returns how many recordings it holds (0 for a cassette that does not exist yet, and in
    /// the modes that start from an empty cassette).
    pub fn load_cassette(&self, path: impl AsRef<Path>) -> Result<usize> {
        let tape = self.state.tape(path.as_ref())?;
        let n = tape.lock().unwrap_or_else(|e| e.into_inner()).len();
        Ok(n)
    }

    /// What happened so far.
    pub fn report(&self) -> Report {
        self.state.report().clone()
    }

    /// Stops accepting requests, waits (up to 30 s) for answers still being recorded, writes the
    /// cassettes, and returns the report.
    pub async fn shutdown(mut self) -> Result<Report> {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let wait = async {
            loop {
                let notified = self.state.idle.notified();
                if self.state.inflight.load(Ordering::SeqCst) == 0 {
                    break;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(Duration::from_secs(30), wait)
            .await
            .is_err()
        {
            self.state
                .report()
                .errors
                .push("gave up waiting for answers still being recorded after 30 s".into());
        }
        let state = Arc::clone(&self.state);
        tokio::task::spawn_blocking(move || state.save_all())
            .await
            .map_err(ErrorKind::SavePanicked)?;
        self.finished = true;
        Ok(self.state.report().clone())
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let _ = self.stop.send(true);
        self.state.save_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_types_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<ProxyHandle>();
        check::<ProxyBuilder>();
        check::<Report>();
        check::<Mode>();
    }

    #[test]
    fn an_upstream_url_is_quoted_in_an_error_without_its_user_info() {
        for url in [
            "https://bob:s3cr3t-t0k3n@api example.com",
            "ftp://s3cr3t-t0k3n@files.example.com",
        ] {
            let Err(err) = upstream_table(&[("openai".into(), url.into())]) else {
                panic!("{url} was accepted");
            };
            let message = err.to_string();
            assert!(message.contains("example.com"), "{message}");
            assert!(!message.contains("s3cr3t-t0k3n"), "{message}");
        }
    }
}

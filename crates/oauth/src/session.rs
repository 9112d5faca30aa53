//! [`OAuthSession`]: the authorizer of one MCP server's HTTP upstream. It keeps the current tokens,
//! refreshes them before they expire, and signs in when the server refuses them, one sign-in at a
//! time in the process and, through the store's lock, across processes.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use calltape_stdio_bridge::{AuthChallenge, Authorizer, BoxFuture};
use reqwest::Url;
use tokio::sync::Mutex;

use crate::{
    Credentials, Error, OAuthOptions, StoreKey, TokenStore,
    callback::{Callback, open_browser},
    discovery::{Challenge, Discovery, OFFLINE_ACCESS, ServerMetadata, shown_url, union},
    pkce::{Pkce, random_token},
    registration::{self, known_client},
    store::{FORMAT, now_secs},
    token::{self, Grant, Tokens},
    web::{Web, form_encode},
};

/// A token expiring within this margin is refreshed before it is sent.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// The OAuth client of one MCP server: give it to
/// [`HttpUpstream::with_authorizer`](calltape_stdio_bridge::HttpUpstream::with_authorizer).
///
/// It reads the server's tokens from the [`TokenStore`] on first use, refreshes them when they
/// are within [`REFRESH_MARGIN`] of expiring (and once when the server refuses them), and signs in
/// when the server answers 401, or 403 `insufficient_scope` with scopes it has not asked for yet.
/// Requests wait while it works; the requests refused meanwhile use the new tokens without signing
/// in again.
pub struct OAuthSession {
    server_url: String,
    server: Url,
    options: OAuthOptions,
    store: TokenStore,
    web: Web,
    state: Mutex<State>,
    /// How many sign-ins were tried: a request that sees it change while it waits knows a sign-in
    /// ran for it.
    attempts: AtomicU64,
}

impl std::fmt::Debug for OAuthSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthSession")
            .field("server_url", &self.server_url)
            .field("options", &self.options)
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// What the session knows, behind its one lock.
#[derive(Default)]
struct State {
    /// Whether the store was read for this server yet.
    loaded: bool,
    /// The current tokens.
    credentials: Option<Credentials>,
    /// The last discovery, reused by a scope step-up.
    discovery: Option<Discovery>,
    /// The scopes the last sign-in asked for.
    requested_scope: Option<String>,
    /// The access token last given to `on_secret`.
    announced: Option<String>,
    /// The access token a refresh was already tried for after a refusal.
    refreshed_after_refusal: Option<String>,
    /// Why the last sign-in failed, if it did.
    last_failure: Option<String>,
    /// The client this session registered (with the issuer it registered at) for a sign-in that did
    /// not finish: the next attempt reuses it, and its redirect port, rather than register again.
    registered: Option<(String, crate::RegisteredClient)>,
}

impl OAuthSession {
    /// The session for the MCP endpoint `server_url`, signing in with `options` and keeping its
    /// tokens in `store`. Nothing is sent yet.
    pub fn new(server_url: &str, options: OAuthOptions, store: TokenStore) -> Result<Self, Error> {
        let mut server = Url::parse(server_url)
            .map_err(|e| Error::config(format!("the server URL is not a URL: {e}")))?;
        if server.scheme() != "http" && server.scheme() != "https" {
            return Err(Error::config(format!(
                "the server URL's scheme `{}` cannot sign in: use http:// or https://",
                server.scheme()
            )));
        }
        // The store's key and the messages name the server without user info, query or fragment.
        let _ = server.set_username("");
        let _ = server.set_password(None);
        server.set_query(None);
        server.set_fragment(None);
        if let Some(url) = &options.client_metadata_url {
            let valid = Url::parse(url)
                .is_ok_and(|u| u.scheme() == "https" && !u.path().is_empty() && u.path() != "/");
            if !valid {
                return Err(Error::config(format!(
                    "the client ID metadata document URL {url} must be an https URL with a path"
                )));
            }
        }
        if options.client_credentials && options.client_id.is_none() {
            return Err(Error::config(
                "the client credentials grant needs a pre-registered client ID and secret",
            ));
        }
        if options.client_secret.is_some() && options.client_id.is_none() {
            return Err(Error::config("a client secret needs its client ID"));
        }
        Ok(Self {
            server_url: server.to_string(),
            server,
            options,
            store,
            web: Web::new()?,
            state: Mutex::new(State::default()),
            attempts: AtomicU64::new(0),
        })
    }

    /// Signs in now, unless the store holds tokens that are not about to expire (or can be
    /// refreshed): probes the server for its challenge, then signs in as a refusal would. Returns
    /// what is stored.
    pub async fn sign_in(&self) -> Result<Credentials, Error> {
        let mut state = self.state.lock().await;
        self.load(&mut state)?;
        if let Some(credentials) = &state.credentials {
            if !credentials.expires_within(REFRESH_MARGIN) {
                return Ok(credentials.clone());
            }
            if credentials.refresh_token.is_some() && self.refresh(&mut state).await.is_ok() {
                return state
                    .credentials
                    .clone()
                    .ok_or_else(|| Error::sign_in("no tokens"));
            }
        }
        let challenge = Challenge::parse(&self.web.probe(&self.server_url).await?);
        self.sign_in_locked(&mut state, &challenge, None, None)
            .await?;
        state
            .credentials
            .clone()
            .ok_or_else(|| Error::sign_in("the sign-in stored no tokens"))
    }

    /// The server this session signs in to.
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// Reads the store once: the entry of this server and client, whatever its resource.
    fn load(&self, state: &mut State) -> Result<(), Error> {
        if state.loaded {
            return Ok(());
        }
        let client = self.options.client_label();
        state.credentials = self
            .store
            .list()?
            .into_iter()
            .filter(|c| c.key.server_url == self.server_url && c.key.client == client)
            .max_by_key(|c| c.updated_at);
        state.loaded = true;
        Ok(())
    }

    async fn authorization_now(&self) -> Result<Option<String>, Error> {
        let mut state = self.state.lock().await;
        self.load(&mut state)?;
        let Some(credentials) = &state.credentials else {
            return Ok(None);
        };
        if credentials.expires_within(REFRESH_MARGIN)
            && credentials.refresh_token.is_some()
            && let Err(err) = self.refresh(&mut state).await
        {
            // The refusal that follows signs in anew.
            tracing::warn!(%err, server = %self.server_url, "token refresh failed; signing in again");
            state.credentials = None;
            return Ok(None);
        }
        let credentials = state.credentials.as_ref();
        if let (Some(notice), Some(credentials)) = (&self.options.on_secret, credentials)
            && state.announced.as_deref() != Some(credentials.access_token.as_str())
        {
            notice("access_token", &credentials.access_token);
            if let Some(refresh) = &credentials.refresh_token {
                notice("refresh_token", refresh);
            }
            if let Some(secret) = &credentials.client.client_secret {
                notice("client_secret", secret);
            }
            state.announced = Some(credentials.access_token.clone());
        }
        Ok(state.credentials.as_ref().map(Credentials::authorization))
    }

    async fn challenged_now(&self, refusal: AuthChallenge) -> Result<bool, Error> {
        let attempts_seen = self.attempts.load(Ordering::SeqCst);
        let mut state = self.state.lock().await;
        self.load(&mut state)?;
        let current = state.credentials.as_ref().map(Credentials::authorization);
        // Tokens newer than the refused ones came while this request waited: use them.
        if current.is_some() && current != refusal.sent {
            return Ok(true);
        }
        // A sign-in failed while this request waited for it: the request fails with it, rather
        // than start another (the user would see as many browser tabs as requests were held).
        if self.attempts.load(Ordering::SeqCst) != attempts_seen
            && let Some(reason) = &state.last_failure
        {
            return Err(Error::sign_in(reason.clone()));
        }
        let challenge = Challenge::parse(&refusal.www_authenticate);
        if refusal.is_insufficient_scope() {
            let asked = union(
                state.requested_scope.as_deref(),
                state.credentials.as_ref().and_then(|c| c.scope.as_deref()),
            );
            let wanted = union(asked.as_deref(), challenge.scope.as_deref());
            if wanted == asked {
                // Nothing more to ask for: signing in again would be refused again.
                tracing::warn!(server = %self.server_url, "the server wants a scope already granted; giving up");
                return Ok(false);
            }
            self.attempt(&mut state, &challenge, wanted, refusal.sent.as_deref())
                .await?;
            return Ok(true);
        }
        if let Some(credentials) = &state.credentials
            && credentials.refresh_token.is_some()
            && state.refreshed_after_refusal.as_deref() != Some(credentials.access_token.as_str())
        {
            state.refreshed_after_refusal = Some(credentials.access_token.clone());
            match self.refresh(&mut state).await {
                Ok(()) => return Ok(true),
                Err(err) => {
                    tracing::warn!(%err, server = %self.server_url, "token refresh failed; signing in again");
                }
            }
        }
        self.attempt(&mut state, &challenge, None, refusal.sent.as_deref())
            .await?;
        Ok(true)
    }

    /// [`sign_in_locked`](Self::sign_in_locked), counted, its failure kept for the requests that
    /// waited for it.
    async fn attempt(
        &self,
        state: &mut State,
        challenge: &Challenge,
        scope: Option<String>,
        sent: Option<&str>,
    ) -> Result<(), Error> {
        let outcome = self.sign_in_locked(state, challenge, scope, sent).await;
        state.last_failure = outcome.as_ref().err().map(ToString::to_string);
        self.attempts.fetch_add(1, Ordering::SeqCst);
        outcome
    }

    /// Refreshes the current tokens under the store's lock (or takes the ones another process
    /// stored meanwhile).
    async fn refresh(&self, state: &mut State) -> Result<(), Error> {
        let Some(credentials) = state.credentials.clone() else {
            return Err(Error::sign_in("no tokens to refresh"));
        };
        let Some(refresh_token) = credentials.refresh_token.as_deref() else {
            return Err(Error::sign_in("no refresh token"));
        };
        let _turn = self.store.lock_async(&credentials.key).await?;
        if let Some(stored) = self.store.load(&credentials.key)?
            && stored.access_token != credentials.access_token
            && !stored.expires_within(REFRESH_MARGIN)
        {
            state.credentials = Some(stored);
            return Ok(());
        }
        let tokens = token::request(
            &self.web,
            &credentials.token_endpoint,
            &credentials.client,
            Grant::Refresh(refresh_token),
            &credentials.key.resource,
        )
        .await?;
        let mut fresh = credentials.clone();
        fresh.access_token = tokens.access_token;
        fresh.token_type = tokens.token_type;
        fresh.expires_at = tokens.expires_in.map(|s| now_secs().saturating_add(s));
        if tokens.refresh_token.is_some() {
            fresh.refresh_token = tokens.refresh_token;
        }
        if tokens.scope.is_some() {
            fresh.scope = tokens.scope;
        }
        fresh.updated_at = now_secs();
        self.store.save(&fresh)?;
        tracing::info!(server = %self.server_url, "access token refreshed");
        state.credentials = Some(fresh);
        Ok(())
    }

    /// Discovers the authorization server and signs in under the store's lock, unless another
    /// process stored tokens other than `sent` meanwhile. `scope` overrides the scope choice (a
    /// step-up's union).
    async fn sign_in_locked(
        &self,
        state: &mut State,
        challenge: &Challenge,
        scope: Option<String>,
        sent: Option<&str>,
    ) -> Result<(), Error> {
        let step_up = scope.is_some();
        let discovery = match (&state.discovery, step_up) {
            (Some(discovery), true) => discovery.clone(),
            _ => Discovery::run(&self.web, &self.server_url, challenge).await?,
        };
        let key = StoreKey {
            server_url: self.server_url.clone(),
            resource: discovery.resource.clone(),
            client: self.options.client_label(),
        };
        let _turn = self.store.lock_async(&key).await?;
        let stored = self.store.load(&key)?;
        if let Some(stored) = &stored
            && Some(stored.authorization().as_str()) != sent
            && state.credentials.as_ref() != Some(stored)
            && usable(stored)
            && stored.issuer == discovery.server.issuer
            && (!step_up || covers(stored.scope.as_deref(), scope.as_deref()))
        {
            tracing::info!(server = %self.server_url, "using the tokens another calltape stored");
            state.credentials = Some(stored.clone());
            state.discovery = Some(discovery);
            return Ok(());
        }
        let scope = scope
            .or_else(|| self.options.scope.clone())
            .or_else(|| discovery.scope(challenge));
        // A client registered with another authorization server is not reused there, nor one whose
        // secret has expired.
        let registered = state
            .registered
            .as_ref()
            .filter(|(issuer, _)| *issuer == discovery.server.issuer)
            .map(|(_, client)| client.clone());
        let previous_client = stored
            .as_ref()
            .or(state.credentials.as_ref())
            .filter(|c| c.issuer == discovery.server.issuer)
            .map(|c| c.client.clone())
            .or(registered)
            .filter(|c| c.client_secret_expires_at.is_none_or(|at| at > now_secs()));
        let server = &discovery.server;
        let token_endpoint = server.token_endpoint.clone().ok_or_else(|| {
            Error::sign_in(format!(
                "the authorization server {} names no token endpoint",
                server.issuer
            ))
        })?;
        let known = known_client(
            self.options.client_id.as_deref(),
            self.options.client_secret.as_deref(),
            self.options.client_metadata_url.as_deref(),
            server,
        );
        let (client, tokens) = if self.options.client_credentials {
            let client = known.ok_or_else(|| {
                Error::config("the client credentials grant needs a pre-registered client ID")
            })?;
            let tokens = token::request(
                &self.web,
                &token_endpoint,
                &client,
                Grant::ClientCredentials {
                    scope: scope.as_deref(),
                },
                &discovery.resource,
            )
            .await?;
            (client, tokens)
        } else {
            self.browser_sign_in(
                &discovery,
                &token_endpoint,
                known,
                previous_client,
                scope.as_deref(),
                &mut state.registered,
            )
            .await?
        };
        let credentials = Credentials {
            format: FORMAT,
            key,
            issuer: server.issuer.clone(),
            token_endpoint,
            client,
            expires_at: tokens.expires_at(),
            access_token: tokens.access_token,
            token_type: tokens.token_type,
            refresh_token: tokens.refresh_token,
            // RFC 6749 §5.1: an omitted scope is the one asked for.
            scope: tokens.scope.or_else(|| scope.clone()),
            updated_at: now_secs(),
        };
        self.store.save(&credentials)?;
        tracing::info!(server = %self.server_url, "signed in");
        state.credentials = Some(credentials);
        state.discovery = Some(discovery);
        state.requested_scope = scope;
        state.refreshed_after_refusal = None;
        Ok(())
    }

    /// The authorization code flow: the loopback listener, the client (registered now when no other
    /// is usable), the browser, the redirect and its checks, and the code's exchange.
    async fn browser_sign_in(
        &self,
        discovery: &Discovery,
        token_endpoint: &str,
        known: Option<crate::RegisteredClient>,
        previous: Option<crate::RegisteredClient>,
        scope: Option<&str>,
        registered: &mut Option<(String, crate::RegisteredClient)>,
    ) -> Result<(crate::RegisteredClient, Tokens), Error> {
        let server = &discovery.server;
        if let Some(methods) = &server.code_challenge_methods_supported
            && !methods.iter().any(|m| m == "S256")
        {
            return Err(Error::sign_in(format!(
                "the authorization server {} does not support PKCE with S256; calltape cannot sign in to it safely",
                server.issuer
            )));
        }
        let authorization_endpoint = server.authorization_endpoint.as_deref().ok_or_else(|| {
            Error::sign_in(format!(
                "the authorization server {} names no authorization endpoint",
                server.issuer
            ))
        })?;
        let previous_port = previous
            .as_ref()
            .and_then(|c| c.redirect_uri.as_deref())
            .and_then(|u| Url::parse(u).ok())
            .and_then(|u| u.port());
        let callback = Callback::bind(previous_port).await?;
        let redirect_uri = callback.redirect_uri();
        let client = match (known, previous) {
            (Some(client), _) => client,
            (None, Some(previous)) if previous.redirect_uri.as_deref() == Some(&redirect_uri) => {
                previous
            }
            (None, _) => {
                let client = registration::register(
                    &self.web,
                    server,
                    &self.options.client_name,
                    &redirect_uri,
                    scope,
                )
                .await?;
                *registered = Some((server.issuer.clone(), client.clone()));
                client
            }
        };
        let pkce = Pkce::new()?;
        let state = random_token()?;
        let mut params = vec![
            ("response_type", "code"),
            ("client_id", client.client_id.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("state", state.as_str()),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", discovery.resource.as_str()),
        ];
        if let Some(scope) = scope {
            params.push(("scope", scope));
            // OpenID Connect grants offline_access only with the user's consent asked for.
            if scope.split(' ').any(|s| s == OFFLINE_ACCESS) {
                params.push(("prompt", "consent"));
            }
        }
        let separator = if authorization_endpoint.contains('?') {
            '&'
        } else {
            '?'
        };
        let url = format!(
            "{authorization_endpoint}{separator}{}",
            form_encode(&params)
        );
        self.options.announce(&shown_url(&self.server), &url);
        if self.options.open_browser {
            open_browser(&url);
        }
        let redirect = callback.wait(&state, self.options.sign_in_timeout).await?;
        check_iss(redirect.iss.as_deref(), server)?;
        let tokens = token::request(
            &self.web,
            token_endpoint,
            &client,
            Grant::Code {
                code: &redirect.code,
                verifier: &pkce.verifier,
                redirect_uri: &redirect_uri,
            },
            &discovery.resource,
        )
        .await?;
        Ok((client, tokens))
    }
}

/// Whether stored tokens can be taken as they are: not about to expire, or about to but with no
/// refresh token (which `authorization` would try, and which a refresh that just failed rules out)
/// and not expired yet.
fn usable(credentials: &Credentials) -> bool {
    !credentials.expires_within(REFRESH_MARGIN)
        || (credentials.refresh_token.is_none() && !credentials.expires_within(Duration::ZERO))
}

/// Whether `granted` holds every scope of `wanted`.
fn covers(granted: Option<&str>, wanted: Option<&str>) -> bool {
    let granted: Vec<&str> = granted.unwrap_or_default().split(' ').collect();
    wanted
        .unwrap_or_default()
        .split(' ')
        .filter(|s| !s.is_empty())
        .all(|s| granted.contains(&s))
}

/// RFC 9207: the redirect's `iss` must be the authorization server's issuer, compared as strings,
/// whenever it is present, and must be present when the server says it sends one.
pub(crate) fn check_iss(iss: Option<&str>, server: &ServerMetadata) -> Result<(), Error> {
    match iss {
        Some(iss) if iss != server.issuer => Err(Error::sign_in(format!(
            "the sign-in's redirect names the issuer {iss}, not {}; it may come from another \
             authorization server, so it is not used",
            server.issuer
        ))),
        Some(_) => Ok(()),
        None if server.authorization_response_iss_parameter_supported => {
            Err(Error::sign_in(format!(
                "the sign-in's redirect has no iss, which the authorization server {} says it sends; it is not used",
                server.issuer
            )))
        }
        None => Ok(()),
    }
}

impl Authorizer for OAuthSession {
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>, String>> {
        Box::pin(async move { self.authorization_now().await.map_err(|e| e.to_string()) })
    }

    fn challenged(&self, challenge: AuthChallenge) -> BoxFuture<'_, Result<bool, String>> {
        Box::pin(async move {
            self.challenged_now(challenge)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn describe(&self) -> String {
        format!("OAuth sign-in to {}", shown_url(&self.server))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redirect_issuer_is_compared_as_a_string() {
        let mut server = ServerMetadata {
            issuer: "https://as.example".to_owned(),
            ..ServerMetadata::default()
        };
        let cases: &[(bool, Option<&str>, bool)] = &[
            (true, Some("https://as.example"), true),
            (true, Some("https://as.example/"), false),
            (true, Some("https://evil.example"), false),
            (true, None, false),
            (false, None, true),
            (false, Some("https://evil.example"), false),
            (false, Some("https://as.example"), true),
        ];
        for (advertised, iss, ok) in cases {
            server.authorization_response_iss_parameter_supported = *advertised;
            assert_eq!(
                check_iss(*iss, &server).is_ok(),
                *ok,
                "{advertised} {iss:?}"
            );
        }
    }

    #[test]
    fn granted_scopes_cover_the_wanted_ones() {
        assert!(covers(Some("a b"), Some("b")));
        assert!(covers(None, None));
        assert!(!covers(Some("a"), Some("a b")));
    }

    #[test]
    fn options_are_checked() {
        let store = TokenStore::at("/nonexistent");
        let bad = [
            OAuthOptions {
                client_credentials: true,
                ..OAuthOptions::default()
            },
            OAuthOptions {
                client_metadata_url: Some("http://app.example/c.json".into()),
                ..OAuthOptions::default()
            },
            OAuthOptions {
                client_metadata_url: Some("https://app.example/".into()),
                ..OAuthOptions::default()
            },
        ];
        for options in bad {
            assert!(OAuthSession::new("https://mcp.example/mcp", options, store.clone()).is_err());
        }
        assert!(OAuthSession::new("ftp://x/", OAuthOptions::default(), store.clone()).is_err());
        let session = OAuthSession::new(
            "https://user:pw@mcp.example/mcp?k=v#f",
            OAuthOptions::default(),
            store,
        )
        .unwrap();
        assert_eq!(session.server_url(), "https://mcp.example/mcp");
    }

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let options = OAuthOptions {
            client_id: Some("the-id".into()),
            client_secret: Some("s3cret-value".into()),
            ..OAuthOptions::default()
        };
        let session =
            OAuthSession::new("https://mcp.example/mcp", options, TokenStore::at("/x")).unwrap();
        let shown = format!("{session:?}");
        assert!(shown.contains("the-id"), "{shown}");
        assert!(!shown.contains("s3cret-value"), "{shown}");
    }

    fn stored(store: &TokenStore, token: &str, expires_in: Option<u64>) -> Credentials {
        let credentials = Credentials {
            format: FORMAT,
            key: StoreKey::new("https://mcp.example/mcp", "dynamic"),
            issuer: "https://as.example".into(),
            // Nothing listens here: a test that reached the network would fail.
            token_endpoint: "http://127.0.0.1:9/token".into(),
            client: crate::RegisteredClient {
                client_id: "c".into(),
                client_secret: None,
                token_endpoint_auth_method: "none".into(),
                client_secret_expires_at: None,
                redirect_uri: None,
            },
            access_token: token.into(),
            token_type: "bearer".into(),
            refresh_token: None,
            expires_at: expires_in.map(|s| now_secs() + s),
            scope: None,
            updated_at: now_secs(),
        };
        store.save(&credentials).unwrap();
        credentials
    }

    fn session(store: &TokenStore) -> OAuthSession {
        OAuthSession::new(
            "https://mcp.example/mcp",
            OAuthOptions::default(),
            store.clone(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn stored_tokens_are_used_without_a_sign_in() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::at(dir.path());
        assert_eq!(session(&store).authorization().await.unwrap(), None);
        stored(&store, "at-1", Some(3600));
        let session = session(&store);
        assert_eq!(
            session.authorization().await.unwrap().as_deref(),
            Some("Bearer at-1")
        );
        // A request refused with an older token is sent again with the current one, without a
        // sign-in (which would fail here: nothing answers).
        let refusal = AuthChallenge {
            status: 401,
            www_authenticate: vec![],
            sent: Some("Bearer at-0".into()),
        };
        assert_eq!(session.challenged(refusal).await, Ok(true));
        assert_eq!(session.sign_in().await.unwrap().access_token, "at-1");
    }

    #[tokio::test]
    async fn a_refusal_of_the_current_token_signs_in_and_says_why_it_failed() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::at(dir.path());
        stored(&store, "at-secret-value", Some(3600));
        let session = OAuthSession::new(
            "http://127.0.0.1:9/mcp",
            OAuthOptions::default(),
            store.clone(),
        )
        .unwrap();
        let refusal = AuthChallenge {
            status: 401,
            www_authenticate: vec!["Bearer error=\"invalid_token\"".into()],
            sent: None,
        };
        let err = session.challenged(refusal).await.unwrap_err();
        assert!(err.contains("127.0.0.1:9"), "{err}");
        assert!(!err.contains("at-secret-value"), "{err}");
    }

    #[tokio::test]
    async fn an_expiring_token_without_a_refresh_token_is_still_sent() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::at(dir.path());
        stored(&store, "at-2", Some(10));
        assert_eq!(
            session(&store).authorization().await.unwrap().as_deref(),
            Some("Bearer at-2")
        );
    }

    #[test]
    fn public_types_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<OAuthSession>();
        check::<OAuthOptions>();
    }
}

//! The token store: one owner-only folder of small JSON files, one per server, resource and client,
//! each with a lock file beside it that the processes signing in to that server take in turn.
//!
//! The folder is `$CALLTAPE_HOME/auth`, else `$XDG_STATE_HOME/calltape/auth`, else
//! `~/.local/state/calltape/auth` (on Windows, where `HOME` is seldom set, else
//! `%LOCALAPPDATA%\calltape\auth`): a place that outlives a reboot and does not move with calltape's
//! version. An entry's file name is derived from its [`StoreKey`] by a fixed rule (the first 32 hex
//! digits of the SHA-256 of the key's three parts, each ended by a zero byte), so a later calltape
//! finds what an earlier one stored. Every file goes through calltape-jsonl-store's `fs`: created
//! `0o600` in a `0o700` folder, never through a symbolic link, replaced whole and atomically.

use std::{
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use calltape_jsonl_store::{ErrorKind as StoreErrorKind, fs};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Error;

/// The format of an entry this build writes and reads.
pub(crate) const FORMAT: u32 = 1;
const ENTRY_EXT: &str = "json";
const LOCK_EXT: &str = "lock";

/// What an entry is stored under: the MCP server's URL, the resource the tokens are for (RFC 8707,
/// the protected resource metadata's `resource`, usually the same URL), and the client calltape signs
/// in as (a pre-registered client ID, a client ID metadata document URL, or `dynamic` for a client
/// registered with the authorization server on first sign-in).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StoreKey {
    /// The MCP endpoint, without user info, query or fragment.
    pub server_url: String,
    /// The resource indicator the tokens are bound to.
    pub resource: String,
    /// The client: a client ID, a metadata document URL, or `dynamic`.
    pub client: String,
}

impl StoreKey {
    /// The key of `server_url`'s tokens for `client`, with the server URL as the resource.
    pub fn new(server_url: impl Into<String>, client: impl Into<String>) -> Self {
        let server_url = server_url.into();
        Self {
            resource: server_url.clone(),
            server_url,
            client: client.into(),
        }
    }

    /// The stem of the entry's file names: stable across calltape versions.
    pub fn file_stem(&self) -> String {
        let mut hash = Sha256::new();
        for part in [&self.server_url, &self.resource, &self.client] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        hash.finalize()
            .iter()
            .take(16)
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// The client calltape signed in as.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredClient {
    /// The client ID.
    pub client_id: String,
    /// The client secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint: `client_secret_basic`,
    /// `client_secret_post` or `none`.
    pub token_endpoint_auth_method: String,
    /// When a client secret given by dynamic registration expires (seconds since the epoch; `None`:
    /// never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<u64>,
    /// The redirect URI a dynamically registered client was registered with: the next sign-in
    /// listens on its port when it is free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

impl std::fmt::Debug for RegisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .finish()
    }
}

/// One stored sign-in: the tokens, what they are for, and what refreshing them takes.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The entry format (1: what this build writes and reads).
    pub format: u32,
    /// The key it is stored under.
    pub key: StoreKey,
    /// The authorization server's issuer.
    pub issuer: String,
    /// Its token endpoint, where the tokens are refreshed.
    pub token_endpoint: String,
    /// The client the tokens were issued to.
    pub client: RegisteredClient,
    /// The access token.
    pub access_token: String,
    /// The token type (`Bearer`).
    pub token_type: String,
    /// The refresh token, if the authorization server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the epoch), if the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted, space-separated, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// When the tokens were obtained or last refreshed (seconds since the epoch).
    pub updated_at: u64,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("key", &self.key)
            .field("issuer", &self.issuer)
            .field("client", &self.client)
            .field("scope", &self.scope)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Whether the access token expires within `margin` of now (never, when no expiry is known).
    pub fn expires_within(&self, margin: Duration) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now_secs().saturating_add(margin.as_secs()))
    }

    /// The `Authorization` header value of the access token.
    pub fn authorization(&self) -> String {
        // The token type is case-insensitive; servers expect the `Bearer` spelling.
        let kind = if self.token_type.eq_ignore_ascii_case("bearer") {
            "Bearer"
        } else {
            &self.token_type
        };
        format!("{kind} {}", self.access_token)
    }
}

/// Seconds since the epoch, now.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The owner-only folder of stored sign-ins.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
}

/// The lock of one entry, held while a process signs in or refreshes; dropped, it lets the next one
/// in (which then finds the fresh tokens and reuses them).
#[derive(Debug)]
pub struct StoreLock {
    _lock: fs::FileLock,
}

impl TokenStore {
    /// The store named by the environment (see the module docs).
    pub fn from_env() -> Result<Self, Error> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let dir = if let Some(home) = var("CALLTAPE_HOME") {
            PathBuf::from(home).join("auth")
        } else if let Some(state) = var("XDG_STATE_HOME") {
            PathBuf::from(state).join("calltape").join("auth")
        } else if let Some(home) = var("HOME") {
            PathBuf::from(home)
                .join(".local")
                .join("state")
                .join("calltape")
                .join("auth")
        } else if cfg!(windows)
            && let Some(local) = var("LOCALAPPDATA")
        {
            PathBuf::from(local).join("calltape").join("auth")
        } else {
            return Err(crate::ErrorKind::NoHome.into());
        };
        Ok(Self::at(dir))
    }

    /// The store in the folder `dir` (created on first write).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &StoreKey, ext: &str) -> PathBuf {
        self.dir.join(format!("{}.{ext}", key.file_stem()))
    }

    fn prepare(&self) -> Result<(), Error> {
        fs::private_dir(&self.dir).map_err(|e| store_error(&self.dir, "cannot create", e))
    }

    /// Takes `key`'s lock, waiting while another process (or task) holds it. It blocks the thread:
    /// [`lock_async`](Self::lock_async) waits on a blocking thread instead.
    pub fn lock(&self, key: &StoreKey) -> Result<StoreLock, Error> {
        self.prepare()?;
        let path = self.path(key, LOCK_EXT);
        let lock =
            fs::FileLock::acquire(&path).map_err(|e| store_error(&path, "cannot lock", e))?;
        Ok(StoreLock { _lock: lock })
    }

    /// [`lock`](Self::lock), waiting on a blocking thread.
    pub async fn lock_async(&self, key: &StoreKey) -> Result<StoreLock, Error> {
        let store = self.clone();
        let key = key.clone();
        tokio::task::spawn_blocking(move || store.lock(&key))
            .await
            .map_err(|e| Error::sign_in(format!("the token store's lock was abandoned: {e}")))?
    }

    /// The entry stored under `key`, if any.
    pub fn load(&self, key: &StoreKey) -> Result<Option<Credentials>, Error> {
        let path = self.path(key, ENTRY_EXT);
        match fs::read(&path) {
            Ok(bytes) => parse_entry(&path, &bytes).map(Some),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(store_error(&path, "cannot read", e)),
        }
    }

    /// Stores `credentials` under their key, replacing what was there.
    pub fn save(&self, credentials: &Credentials) -> Result<(), Error> {
        self.prepare()?;
        let path = self.path(&credentials.key, ENTRY_EXT);
        let mut bytes = serde_json::to_vec_pretty(credentials)
            .map_err(|e| Error::store(&path, format!("cannot encode the entry: {e}")))?;
        bytes.push(b'\n');
        fs::write_atomic(&path, bytes).map_err(|e| store_error(&path, "cannot write", e))
    }

    /// Every entry, ordered by server URL. An entry that cannot be read is skipped with a warning.
    pub fn list(&self) -> Result<Vec<Credentials>, Error> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&self.dir, "cannot list", e)),
        };
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&self.dir, "cannot list", e))?;
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some(ENTRY_EXT) {
                continue;
            }
            let loaded = fs::read(&path)
                .map_err(|e| store_error(&path, "cannot read", e))
                .and_then(|bytes| parse_entry(&path, &bytes));
            match loaded {
                Ok(credentials) => found.push(credentials),
                Err(err) => tracing::warn!(%err, "skipping a token store entry"),
            }
        }
        found.sort_by(|a, b| {
            (&a.key.server_url, &a.key.client).cmp(&(&b.key.server_url, &b.key.client))
        });
        Ok(found)
    }

    /// Removes the entries of `server_url` (every entry, with `None`), each under its lock; returns
    /// the keys removed.
    pub fn remove(&self, server_url: Option<&str>) -> Result<Vec<StoreKey>, Error> {
        let mut removed = Vec::new();
        for credentials in self.list()? {
            if server_url.is_some_and(|url| url != credentials.key.server_url) {
                continue;
            }
            let _lock = self.lock(&credentials.key)?;
            let path = self.path(&credentials.key, ENTRY_EXT);
            match std::fs::remove_file(&path) {
                Ok(()) => removed.push(credentials.key),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&path, "cannot remove", e)),
            }
        }
        Ok(removed)
    }
}

fn parse_entry(path: &Path, bytes: &[u8]) -> Result<Credentials, Error> {
    #[derive(Deserialize)]
    struct Format {
        format: u32,
    }
    let format: Format = serde_json::from_slice(bytes)
        .map_err(|e| Error::store(path, format!("not a token store entry: {e}")))?;
    if format.format != FORMAT {
        return Err(Error::store(
            path,
            format!(
                "entry format {} is not supported (this build reads {FORMAT})",
                format.format
            ),
        ));
    }
    // serde's message names the field at fault and never quotes a value.
    serde_json::from_slice(bytes)
        .map_err(|e| Error::store(path, format!("not a token store entry: {e}")))
}

fn is_missing(err: &calltape_jsonl_store::Error) -> bool {
    match err.kind() {
        StoreErrorKind::Open { source, .. } | StoreErrorKind::Read { source, .. } => {
            source.kind() == std::io::ErrorKind::NotFound
        }
        _ => false,
    }
}

fn store_error(path: &Path, action: &'static str, err: calltape_jsonl_store::Error) -> Error {
    // The jsonl-store error names the path and says why (a link, another user's file).
    Error::io(path, action, std::io::Error::other(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(key: StoreKey) -> Credentials {
        Credentials {
            format: FORMAT,
            key,
            issuer: "https://as.example".into(),
            token_endpoint: "https://as.example/token".into(),
            client: RegisteredClient {
                client_id: "abc".into(),
                client_secret: Some("s3cret-client".into()),
                token_endpoint_auth_method: "client_secret_basic".into(),
                client_secret_expires_at: None,
                redirect_uri: None,
            },
            access_token: "at-123".into(),
            token_type: "bearer".into(),
            refresh_token: Some("rt-456".into()),
            expires_at: Some(now_secs() + 3600),
            scope: Some("read write".into()),
            updated_at: now_secs(),
        }
    }

    #[test]
    fn file_names_are_fixed_by_the_key() {
        // A later calltape must find what this one stored: the rule never changes.
        let key = StoreKey::new("https://mcp.example/mcp", "dynamic");
        assert_eq!(key.file_stem().len(), 32);
        let mut hash = Sha256::new();
        hash.update(b"https://mcp.example/mcp\0https://mcp.example/mcp\0dynamic\0");
        let expected: String = hash.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(key.file_stem(), expected);
        assert_ne!(
            key.file_stem(),
            StoreKey::new("https://mcp.example/mcp", "other").file_stem()
        );
    }

    #[test]
    fn entries_round_trip_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path().join("auth"));
        let key = StoreKey::new("https://mcp.example/mcp", "dynamic");
        assert!(store.load(&key).unwrap().is_none());
        let saved = credentials(key.clone());
        store.save(&saved).unwrap();
        assert_eq!(store.load(&key).unwrap().unwrap(), saved);
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let dir_mode = std::fs::metadata(store.dir()).unwrap().mode() & 0o777;
            assert_eq!(dir_mode, 0o700);
            let file = store.dir().join(format!("{}.json", key.file_stem()));
            assert_eq!(std::fs::metadata(file).unwrap().mode() & 0o777, 0o600);
        }
        assert_eq!(store.list().unwrap(), vec![saved]);
        assert_eq!(store.remove(Some("https://other")).unwrap(), vec![]);
        assert_eq!(
            store.remove(Some(&key.server_url)).unwrap(),
            vec![key.clone()]
        );
        assert!(store.load(&key).unwrap().is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_in_place_of_an_entry_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path().join("auth"));
        let key = StoreKey::new("https://mcp.example/mcp", "dynamic");
        store.save(&credentials(key.clone())).unwrap();
        let file = store.dir().join(format!("{}.json", key.file_stem()));
        let elsewhere = tmp.path().join("elsewhere.json");
        std::fs::rename(&file, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
        let err = store.load(&key).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let err = store.save(&credentials(key)).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
    }

    #[test]
    fn secrets_stay_out_of_debug_output_and_errors() {
        let saved = credentials(StoreKey::new("https://mcp.example/mcp", "dynamic"));
        let shown = format!("{saved:?}");
        for secret in ["at-123", "rt-456", "s3cret-client"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.json");
        let err = parse_entry(&path, br#"{"format":1,"access_token":"at-123"}"#).unwrap_err();
        assert!(!err.to_string().contains("at-123"), "{err}");
        let err = parse_entry(&path, br#"{"format":9}"#).unwrap_err();
        assert!(err.to_string().contains("format 9"), "{err}");
    }

    #[test]
    fn expiry_and_header() {
        let mut saved = credentials(StoreKey::new("u", "c"));
        assert!(!saved.expires_within(Duration::from_secs(60)));
        saved.expires_at = Some(now_secs() + 30);
        assert!(saved.expires_within(Duration::from_secs(60)));
        saved.expires_at = None;
        assert!(!saved.expires_within(Duration::from_secs(60)));
        assert_eq!(saved.authorization(), "Bearer at-123");
    }

    #[test]
    fn the_lock_is_one_holder_at_a_time() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path().join("auth"));
        let key = StoreKey::new("https://mcp.example/mcp", "dynamic");
        let held = store.lock(&key).unwrap();
        let lock_path = store.dir().join(format!("{}.lock", key.file_stem()));
        assert!(fs::FileLock::try_acquire(&lock_path).unwrap().is_none());
        drop(held);
        assert!(fs::FileLock::try_acquire(&lock_path).unwrap().is_some());
    }
}

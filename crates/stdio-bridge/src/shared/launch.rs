//! Start-or-attach: find the key's server, or start exactly one.
//!
//! Two OS file locks in the key's folder replace leases:
//! - `server.lock` is held by the server for its whole life. The session that starts a server takes it
//!   first and hands it over as the server's standard input, so there is no instant in which a starting
//!   server does not hold it, even if that session is killed right after. The server then moves it to a
//!   close-on-exec descriptor ([`FileLock::take_over_stdin`]), so no program it starts inherits it.
//! - Every lock file is opened close-on-exec, and a lock is unlocked explicitly when dropped: a process
//!   forked at that instant (which holds a copy of every descriptor until it execs) cannot keep it.
//! - `start.lock` is held by the session that is starting a server; sessions started together queue on
//!   it and find the new server's record once they get it.
//!
//! A server is bound to what it runs: its record holds the [`Launcher::fingerprint`] of the command
//! that started it, of the folder it runs in and of calltape's version, and a session attaches only
//! to a server with its own.
//! A session with another one retires the running server (it lets go of `server.lock` and its record,
//! takes no new session, serves the ones it has and exits after the last one) and starts its own, on a
//! socket of its own while the retired one still listens.
//!
//! On Windows a lock belongs to the process that took it and cannot be handed over: the session that
//! starts a server lets go of `server.lock` just before it starts the server, and the server takes it
//! itself ([`serve_shared`](super::serve_shared)). The session still holds `start.lock` until the
//! server proved itself, so no other session starts one in between, and a second server that got past
//! that would find the first one holding `server.lock` and exit. The server is started detached from
//! the session's console and its process group (`DETACHED_PROCESS`, `CREATE_NEW_PROCESS_GROUP`), and in
//! no job of the session's, so it outlives the session.

#[cfg(unix)]
use std::os::unix::process::CommandExt;
#[cfg(windows)]
use std::os::windows::process::CommandExt;
use std::{
    ffi::{OsStr, OsString},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use tokio::time::Instant;

#[cfg(unix)]
use super::paths::check_private_file;
use super::{
    client::Conn, identity::ServerKeys, lock::FileLock, paths::SharedPaths,
    server_record::ServerRecord,
};
use crate::{
    Error, ErrorKind,
    serve::{Endpoint, Transport},
};

/// The environment variable that tells `calltape serve` it is the shared server of this key.
pub const SERVE_KEY_ENV: &str = "CALLTAPE_SHARED_SERVE";

/// The environment variable that hands a starting shared server its [`Launcher::fingerprint`].
pub(crate) const COMMAND_ENV: &str = "CALLTAPE_SHARED_COMMAND";
/// The environment variable that names the socket (in the key's folder) a replacing server listens on.
pub(crate) const SOCKET_ENV: &str = "CALLTAPE_SHARED_SOCKET";

/// How long a session waits for a server to prove itself, by default.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(60);

/// How a session starts the key's server: a program (usually its own binary), the arguments that
/// make it `calltape serve` for this key, and the folder it runs in. The key goes in its environment
/// ([`SERVE_KEY_ENV`]); its standard input is the server lock (on Windows: nothing, and the server
/// takes the lock itself); its stderr goes to the key's `server.log`.
///
/// ```
/// use calltape_stdio_bridge::shared::Launcher;
///
/// let here = Launcher::new("/usr/bin/calltape", ["serve", "--", "node", "dist/index.js"])?;
/// let there = here.clone().in_dir("/")?;
/// // `dist/index.js` of another checkout is another server.
/// assert_ne!(here.fingerprint(), there.fingerprint());
/// # Ok::<(), calltape_stdio_bridge::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The folder the server runs in, canonical: a command's relative paths (`dist/index.js`) name
    /// files of this folder.
    pub current_dir: PathBuf,
}

impl Launcher {
    /// A launcher of `program` with `args`, in this process's working folder (canonicalized). Fails
    /// when the working folder cannot be read (it was removed, say).
    pub fn new<I, S>(program: impl Into<PathBuf>, args: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let here =
            std::env::current_dir().map_err(|e| Error::io("cannot read the working folder", e))?;
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            current_dir: PathBuf::new(),
        }
        .in_dir(here)
    }

    /// The same launcher in `dir` (canonicalized: a link to a folder is the folder).
    pub fn in_dir(mut self, dir: impl AsRef<Path>) -> Result<Self, Error> {
        let dir = dir.as_ref();
        self.current_dir = dir
            .canonicalize()
            .map_err(|e| Error::io(format!("cannot resolve the folder {}", dir.display()), e))?;
        Ok(self)
    }

    /// What a server started by this launcher runs: a hash of the program, its arguments, the folder
    /// it runs in and calltape's version, as hex. A session attaches only to a server with its own
    /// fingerprint. The environment is not part of it: a session whose environment variables differ
    /// attaches to the server another session started, which keeps that session's environment.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        let mut part = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_be_bytes());
            hash.update(bytes);
        };
        part(env!("CARGO_PKG_VERSION").as_bytes());
        part(&os_bytes(self.current_dir.as_os_str()));
        part(&os_bytes(self.program.as_os_str()));
        for arg in &self.args {
            part(&os_bytes(arg));
        }
        hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The bytes of an OS string as the system holds them.
#[cfg(unix)]
fn os_bytes(text: &OsStr) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(text.as_bytes())
}

/// The bytes of an OS string as the system holds them: its UTF-16 code units, little-endian.
#[cfg(windows)]
fn os_bytes(text: &OsStr) -> std::borrow::Cow<'_, [u8]> {
    use std::os::windows::ffi::OsStrExt;
    std::borrow::Cow::Owned(text.encode_wide().flat_map(u16::to_le_bytes).collect())
}

/// A server that proved its identity.
#[derive(Clone)]
pub struct Attached {
    /// Where it listens.
    pub endpoint: Endpoint,
    /// Its MCP path.
    pub path: String,
    /// Its process id.
    pub pid: u32,
    /// Whether this session started it.
    pub started: bool,
    /// The fingerprint of what it runs, from its record.
    pub command: String,
    pub(crate) keys: ServerKeys,
}

impl std::fmt::Debug for Attached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attached")
            .field("endpoint", &self.endpoint)
            .field("pid", &self.pid)
            .field("started", &self.started)
            .finish_non_exhaustive()
    }
}

/// Reads the record and challenges the endpoint it names; `Ok(None)` when nothing proves itself.
pub(crate) async fn probe(paths: &SharedPaths) -> Result<Option<Attached>, Error> {
    let Some(record) = ServerRecord::read(&paths.record())? else {
        return Ok(None);
    };
    #[cfg(not(unix))]
    if let Endpoint::Unix(_) = &record.endpoint {
        tracing::debug!("the record names a unix socket, which windows cannot reach; ignoring it");
        return Ok(None);
    }
    #[cfg(unix)]
    if let Endpoint::Unix(socket) = &record.endpoint {
        if !is_server_socket(paths, socket) {
            tracing::debug!("the record names a socket outside the key's folder; ignoring it");
            return Ok(None);
        }
        if !check_private_file(socket, true)? {
            return Ok(None);
        }
    }
    let keys = record.secret.keys();
    let mut conn = match Conn::open(&record.endpoint).await {
        Ok(conn) => conn,
        Err(e) => {
            tracing::debug!("nothing answers at {}: {e}", record.endpoint);
            return Ok(None);
        }
    };
    match conn.challenge(&record.endpoint, &keys).await {
        Ok(()) => Ok(Some(Attached {
            endpoint: record.endpoint,
            path: record.path,
            pid: record.pid,
            started: false,
            command: record.command,
            keys,
        })),
        Err(reason) => {
            tracing::warn!(
                "the process at {} did not prove it is the shared server `{}` ({reason}); it was not sent the token",
                record.endpoint,
                paths.key()
            );
            Ok(None)
        }
    }
}

/// `server.sock` in the key's folder, or the socket of a server that replaced another one there.
#[cfg(unix)]
pub(crate) fn is_server_socket(paths: &SharedPaths, socket: &Path) -> bool {
    if socket == paths.socket() {
        return true;
    }
    let name = socket.file_name().and_then(|n| n.to_str()).unwrap_or("");
    socket.parent() == Some(paths.dir())
        && name.len() == REPLACEMENT_SOCKET_LEN
        && name.starts_with("server.")
        && name.ends_with(".sock")
        && name.as_bytes()[7..15].iter().all(u8::is_ascii_hexdigit)
}

/// `server.<8 hex digits>.sock`.
#[cfg(unix)]
const REPLACEMENT_SOCKET_LEN: usize = 20;

/// A fresh name for the socket of a server that replaces one which may still listen.
fn replacement_socket() -> Result<String, Error> {
    let nonce = super::identity::Nonce::generate()?.to_hex();
    Ok(format!("server.{}.sock", &nonce[..8]))
}

fn start_error(paths: &SharedPaths, reason: String) -> Error {
    ErrorKind::SharedStart {
        key: paths.key().to_string(),
        reason,
    }
    .into()
}

/// Finds the key's server or starts one, waiting up to `timeout` for it to prove itself.
pub async fn attach_or_start(
    paths: &SharedPaths,
    transport: Transport,
    launcher: &Launcher,
    timeout: Duration,
) -> Result<Attached, Error> {
    #[cfg(not(unix))]
    transport.check_available()?;
    paths.prepare()?;
    if transport == Transport::Unix {
        paths.check_socket_len()?;
    }
    let fingerprint = launcher.fingerprint();
    let ours = |attached: &Attached| attached.command == fingerprint;
    if let Some(attached) = probe(paths).await?
        && ours(&attached)
    {
        return Ok(attached);
    }
    let deadline = Instant::now() + timeout;
    // The socket of a server that replaces one: the retired one may listen on its own a while longer.
    let mut socket = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(start_lock) = FileLock::acquire_within(&paths.start_lock(), left).await? else {
            return Err(start_error(
                paths,
                format!(
                    "another session is starting it and no server proved its identity within {} s",
                    timeout.as_secs()
                ),
            ));
        };
        // Another session may have started it while this one waited for the lock.
        match probe(paths).await? {
            Some(attached) if ours(&attached) => return Ok(attached),
            Some(running) => {
                retire(paths, &running).await;
                socket = Some(replacement_socket()?);
            }
            None => {}
        }
        match FileLock::try_acquire(&paths.server_lock())? {
            None => {
                // A server holds its lock but has not proved itself yet: it is starting. Wait for it
                // without holding the start lock; if it dies, go round and start one.
                drop(start_lock);
                tracing::debug!("a server of `{}` is starting; waiting for it", paths.key());
                if let Some(attached) = wait_for_server(paths, deadline, None, &fingerprint).await?
                {
                    return Ok(attached);
                }
            }
            Some(server_lock) => {
                let child = spawn_server(paths, launcher, server_lock, socket.as_deref())?;
                let attached = wait_for_server(paths, deadline, Some(child), &fingerprint).await?;
                drop(start_lock);
                if let Some(mut attached) = attached {
                    attached.started = true;
                    return Ok(attached);
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(start_error(
                paths,
                format!(
                    "no server proved its identity within {} s",
                    timeout.as_secs()
                ),
            ));
        }
    }
}

/// Tells the key's running server, which runs another command, folder or calltape version, that it is replaced.
/// It answers once it let go of `server.lock` and its record; a server that cannot be told keeps its
/// lock, and this session waits for it as for a server that is starting.
async fn retire(paths: &SharedPaths, running: &Attached) {
    let told = async {
        let mut conn = Conn::open(&running.endpoint).await.ok()?;
        conn.challenge(&running.endpoint, &running.keys)
            .await
            .ok()?;
        conn.retire(&running.keys).await.ok()
    };
    match tokio::time::timeout(Duration::from_secs(5), told).await {
        Ok(Some(())) => tracing::warn!(
            "the shared server `{}` (pid {}) runs another command, folder or calltape version: starting one for this command; the old one serves its sessions and exits after the last",
            paths.key(),
            running.pid
        ),
        _ => tracing::warn!(
            "the shared server `{}` (pid {}) runs another command, folder or calltape version and did not step aside; waiting for it",
            paths.key(),
            running.pid
        ),
    }
}

fn spawn_server(
    paths: &SharedPaths,
    launcher: &Launcher,
    server_lock: FileLock,
    socket: Option<&str>,
) -> Result<Child, Error> {
    // Owner-only, emptied for this server, and never through a link planted at the path.
    let log = calltape_jsonl_store::fs::truncate(paths.log()).map_err(ErrorKind::File)?;
    let mut command = Command::new(&launcher.program);
    if let Some(socket) = socket {
        command.env(SOCKET_ENV, socket);
    } else {
        command.env_remove(SOCKET_ENV);
    }
    command
        .args(&launcher.args)
        .current_dir(&launcher.current_dir)
        .env(SERVE_KEY_ENV, paths.key().as_str())
        .env(COMMAND_ENV, launcher.fingerprint())
        // The server keeps its files exactly where this session looks for them.
        .env("CALLTAPE_HOME", paths.home())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    #[cfg(unix)]
    command
        // The server lock, already taken: the server holds it from its first instant.
        .stdin(Stdio::from(server_lock.into_file()))
        // Detached from the session's process group, so a Ctrl-C or a client that kills the
        // session's group leaves the shared server running.
        .process_group(0);
    #[cfg(windows)]
    {
        use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, DETACHED_PROCESS};
        // A lock cannot be handed to another process here: the server takes it itself, and this
        // session keeps `start.lock` until it proved itself.
        drop(server_lock);
        command
            .stdin(Stdio::null())
            // Without the session's console and out of its process group, so closing the
            // session's console or a Ctrl-C leaves the shared server running.
            .creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
    }
    let child = command
        .spawn()
        .map_err(|e| start_error(paths, format!("it could not be started ({e})")))?;
    tracing::debug!(
        pid = child.id(),
        "started the shared server of `{}`",
        paths.key()
    );
    Ok(child)
}

/// The last line the server wrote to its log, which says why it stopped.
fn last_log_line(paths: &SharedPaths) -> Option<String> {
    let bytes = calltape_jsonl_store::fs::read(paths.log()).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_owned())
}

async fn wait_for_server(
    paths: &SharedPaths,
    deadline: Instant,
    mut child: Option<Child>,
    fingerprint: &str,
) -> Result<Option<Attached>, Error> {
    loop {
        if let Some(attached) = probe(paths).await?
            && attached.command == fingerprint
        {
            if let Some(mut child) = child {
                // Reap it whenever it exits, so it never lingers as a zombie of this session.
                std::thread::spawn(move || child.wait());
            }
            return Ok(Some(attached));
        }
        match &mut child {
            Some(c) => {
                if let Ok(Some(status)) = c.try_wait() {
                    #[cfg(unix)]
                    let how = match (
                        status.code(),
                        std::os::unix::process::ExitStatusExt::signal(&status),
                    ) {
                        (Some(code), _) => format!("it exited with status {code}"),
                        (None, Some(signal)) => format!("it was killed by signal {signal}"),
                        _ => "it exited".to_owned(),
                    };
                    #[cfg(not(unix))]
                    let how = match status.code() {
                        Some(code) => format!("it exited with status {code}"),
                        None => "it exited".to_owned(),
                    };
                    let why = last_log_line(paths)
                        .map(|l| format!(": {l}"))
                        .unwrap_or_default();
                    return Err(start_error(
                        paths,
                        format!("{how}{why} (log: {})", paths.log().display()),
                    ));
                }
            }
            None => {
                if !FileLock::is_held(&paths.server_lock())? {
                    // The server that was starting is gone.
                    return Ok(None);
                }
            }
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::SharedKey;

    #[test]
    fn server_sockets_are_in_the_key_folder_and_named_like_one() {
        let paths = SharedPaths::under("/h", &SharedKey::new("k").unwrap());
        let cases: &[(&str, bool)] = &[
            ("/h/shared/k/server.sock", true),
            ("/h/shared/k/server.0123abcd.sock", true),
            ("/h/shared/k/server.0123abcg.sock", false),
            ("/h/shared/k/server.0123abc.sock", false),
            ("/h/shared/k/server.0123abcd.sock.x", false),
            ("/h/shared/k/client.0123abcd.sock", false),
            ("/h/shared/other/server.0123abcd.sock", false),
            ("/tmp/server.0123abcd.sock", false),
            ("/h/shared/k/sub/server.0123abcd.sock", false),
            ("/h/shared/k/server.0123ab\u{e9}.sock", false),
        ];
        for (path, ok) in cases {
            assert_eq!(is_server_socket(&paths, Path::new(path)), *ok, "{path}");
        }
        let fresh = replacement_socket().unwrap();
        assert!(
            is_server_socket(&paths, &paths.dir().join(&fresh)),
            "{fresh}"
        );
    }

    #[test]
    fn fingerprints_differ_with_the_command_and_the_folder() {
        let launcher =
            |args: &[&str]| Launcher::new("/bin/calltape", args.iter().copied()).unwrap();
        let v1 = launcher(&["serve", "--", "server", "v1"]).fingerprint();
        assert_eq!(v1, launcher(&["serve", "--", "server", "v1"]).fingerprint());
        assert_eq!(v1.len(), 64);
        assert_ne!(v1, launcher(&["serve", "--", "server", "v2"]).fingerprint());
        // Arguments are told apart from one another, not only joined.
        assert_ne!(
            launcher(&["a b", "c"]).fingerprint(),
            launcher(&["a", "b c"]).fingerprint()
        );
        // The same command in another folder is another server; a link to a folder is the folder.
        let tmp = tempfile::tempdir().unwrap();
        let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
        std::fs::create_dir(&one).unwrap();
        std::fs::create_dir(&two).unwrap();
        std::os::unix::fs::symlink(&one, tmp.path().join("link")).unwrap();
        let command = launcher(&["serve", "--", "node", "dist/index.js"]);
        let in_dir = |dir: &Path| command.clone().in_dir(dir).unwrap().fingerprint();
        assert_ne!(in_dir(&one), in_dir(&two));
        assert_eq!(in_dir(&one), in_dir(&tmp.path().join("link")));
        assert_eq!(in_dir(&one), in_dir(&tmp.path().join("two/../one")));
    }
}

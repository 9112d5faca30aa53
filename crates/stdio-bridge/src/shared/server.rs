//! The shared server's own side: hold the key's lock, listen, write the record, serve, clean up.

use std::{
    future::Future,
    sync::{Arc, Mutex},
};

#[cfg(unix)]
use super::launch::{SOCKET_ENV, is_server_socket};
use super::{
    launch::COMMAND_ENV,
    lock::FileLock,
    paths::SharedPaths,
    server_record::{MCP_PATH, ServerRecord},
};
use crate::{
    Error,
    serve::{ServerBuilder, StopReason, Transport},
    shared::identity::Secret,
};

/// How long a shared server waits for its lock on Windows, where the session that starts it cannot
/// hand the lock over.
#[cfg(not(unix))]
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs `serve` as the shared server of the key `paths` names, until `shutdown` completes or the idle
/// period set on `serve` passes with no session.
///
/// It holds the key's server lock for its whole life (taken over from its standard input when the
/// session that started it passed it there, which then becomes `/dev/null`; else taken here; refused
/// when another server holds it; on Windows always taken here, waiting up to 2 s for a holder that
/// is not a server to let go),
/// generates a fresh secret, listens (an owner-only socket in the key's folder, or a free port of
/// 127.0.0.1), and only then writes the record. On the way out it removes the record, if the record
/// still names this process, and the socket.
pub async fn serve_shared(
    paths: &SharedPaths,
    transport: Transport,
    serve: ServerBuilder,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<StopReason, Error> {
    #[cfg(not(unix))]
    transport.check_available()?;
    paths.prepare()?;
    let lock_path = paths.server_lock();
    let held_elsewhere = || {
        Error::from(crate::ErrorKind::SharedStart {
            key: paths.key().to_string(),
            reason: format!("another server holds {}", lock_path.display()),
        })
    };
    #[cfg(unix)]
    let lock = match FileLock::take_over_stdin(&lock_path)? {
        Some(lock) => lock,
        None => FileLock::try_acquire(&lock_path)?.ok_or_else(held_elsewhere)?,
    };
    // The session that started this server let go of the lock just before; a session that checks
    // whether a server holds it holds it for an instant. A server holds it for its whole life.
    #[cfg(not(unix))]
    let lock = FileLock::acquire_within(&lock_path, LOCK_WAIT)
        .await?
        .ok_or_else(held_elsewhere)?;
    // What the session that started it runs, and, when it replaces a server that may still listen,
    // the socket to listen on.
    let command = std::env::var(COMMAND_ENV)
        .ok()
        .filter(|c| c.len() == 64 && c.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_default();
    #[cfg(unix)]
    let socket = std::env::var_os(SOCKET_ENV)
        .map(|name| paths.dir().join(name))
        .filter(|path| is_server_socket(paths, path))
        .unwrap_or_else(|| paths.socket());
    let pid = std::process::id();
    // Replaced by a server for another command: the lock and the record go at once, so that the new
    // server takes the key, and this one serves its sessions until they end.
    let lock = Arc::new(Mutex::new(Some(lock)));
    let held = Arc::clone(&lock);
    let record_path = paths.record();
    let secret = Secret::generate()?;
    let serve = serve.shared_keys(secret.keys()).on_retire(move || {
        ServerRecord::remove_if_pid(&record_path, pid);
        drop(
            held.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        );
    });
    let server = match transport {
        #[cfg(unix)]
        Transport::Unix => {
            super::paths::check_socket_len(&socket)?;
            serve.listen_unix(&socket).await?
        }
        #[cfg(not(unix))]
        Transport::Unix => unreachable!("refused on the way in"),
        Transport::Http => serve.listen_tcp(([127, 0, 0, 1], 0).into()).await?,
    };
    let record = ServerRecord {
        endpoint: server.endpoint().clone(),
        path: MCP_PATH.to_owned(),
        pid,
        secret,
        command,
    };
    record.write(&paths.record())?;
    tracing::info!(
        pid,
        "shared server `{}` listening at {}",
        paths.key(),
        server.endpoint()
    );
    let result = server.run_until(shutdown).await;
    ServerRecord::remove_if_pid(&paths.record(), pid);
    drop(
        lock.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take(),
    );
    if let Ok(reason) = &result {
        tracing::info!("shared server `{}` stopped ({reason:?})", paths.key());
    }
    result
}

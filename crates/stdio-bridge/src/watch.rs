//! Restarting the upstream when files change.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
    sync::mpsc as std_mpsc,
    time::Duration,
};

use notify::{EventKind, RecursiveMode, Watcher as _};

use crate::{Error, ErrorKind, bridge::RestartHandle};

/// The quiet time after a change before the restart, by default: editors and compilers write in bursts.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);

/// Watches files and folders and restarts the upstream after they change. Dropping it stops watching.
pub struct Watcher {
    _watcher: notify::RecommendedWatcher,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}

impl Watcher {
    /// Watches `paths` (folders recursively) and calls [`RestartHandle::restart`] once changes stop for
    /// `debounce`. Fails when a path does not exist or cannot be watched.
    pub fn start<I, P>(paths: I, debounce: Duration, restart: RestartHandle) -> Result<Self, Error>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let (tx, rx) = std_mpsc::channel();
        let mut watcher =
            notify::recommended_watcher(tx).map_err(|e| watch_error(Path::new("."), &e))?;
        // A watched file is watched through its folder: editors replace files, which ends a watch on the
        // file itself.
        let mut files = HashSet::new();
        let mut whole_folders = Vec::new();
        for path in paths {
            let path = path.as_ref();
            let absolute = std::path::absolute(path).map_err(|e| watch_error(path, &e))?;
            let metadata = std::fs::metadata(&absolute).map_err(|e| watch_error(path, &e))?;
            if metadata.is_dir() {
                watcher
                    .watch(&absolute, RecursiveMode::Recursive)
                    .map_err(|e| watch_error(path, &e))?;
                whole_folders.push(absolute);
            } else {
                let parent = absolute.parent().unwrap_or(Path::new("/")).to_path_buf();
                watcher
                    .watch(&parent, RecursiveMode::NonRecursive)
                    .map_err(|e| watch_error(path, &e))?;
                files.insert(absolute);
            }
        }
        std::thread::Builder::new()
            .name("calltape-watch".to_owned())
            .spawn(move || debounce_loop(&rx, debounce, &files, &whole_folders, &restart))
            .map_err(|e| Error::io("cannot start the watch thread", e))?;
        Ok(Self { _watcher: watcher })
    }
}

fn watch_error(path: &Path, error: &dyn std::fmt::Display) -> Error {
    ErrorKind::Watch {
        path: path.to_path_buf(),
        message: error.to_string(),
    }
    .into()
}

fn relevant(
    event: &notify::Result<notify::Event>,
    files: &HashSet<PathBuf>,
    folders: &[PathBuf],
) -> bool {
    let Ok(event) = event else {
        return false;
    };
    if !matches!(
        event.kind,
        EventKind::Any | EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
    ) {
        return false;
    }
    event
        .paths
        .iter()
        .any(|p| files.contains(p) || folders.iter().any(|f| p.starts_with(f)))
}

fn debounce_loop(
    rx: &std_mpsc::Receiver<notify::Result<notify::Event>>,
    debounce: Duration,
    files: &HashSet<PathBuf>,
    folders: &[PathBuf],
    restart: &RestartHandle,
) {
    while let Ok(event) = rx.recv() {
        if !relevant(&event, files, folders) {
            continue;
        }
        if let Ok(event) = &event {
            tracing::debug!("changed: {:?}", event.paths);
        }
        // Wait for a quiet period; every further event starts it again.
        loop {
            match rx.recv_timeout(debounce) {
                Ok(_) => {}
                Err(std_mpsc::RecvTimeoutError::Timeout) => break,
                Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
        tracing::info!("files changed; restarting the upstream");
        restart.restart();
    }
}

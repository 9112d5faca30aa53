//! OS file locks (`flock`): the kernel releases them when their holder dies, so no lease has to be
//! renewed and no crashed process can keep a key locked.

use std::{
    fs::{File, OpenOptions},
    io,
    os::{fd::AsFd, unix::fs::OpenOptionsExt},
    path::{Path, PathBuf},
    time::Duration,
};

use rustix::fs::{FlockOperation, flock};

use super::paths::check_private_file;
use crate::Error;

/// An exclusive lock on a file, held until dropped (or until the process that holds it dies).
#[derive(Debug)]
pub struct FileLock {
    file: File,
    path: PathBuf,
}

fn open_lock_file(path: &Path) -> Result<File, Error> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .map_err(|e| Error::io(format!("cannot open the lock file {}", path.display()), e))?;
    check_private_file(path, false)?;
    Ok(file)
}

impl FileLock {
    /// Takes the lock at `path` (creating the file 0600) if nobody holds it; `Ok(None)` if somebody does.
    pub fn try_acquire(path: &Path) -> Result<Option<Self>, Error> {
        let file = open_lock_file(path)?;
        match flock(file.as_fd(), FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(Self {
                file,
                path: path.to_owned(),
            })),
            Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(Error::io(
                format!("cannot lock {}", path.display()),
                io::Error::from(e),
            )),
        }
    }

    /// Waits up to `timeout` for the lock at `path`.
    pub async fn acquire_within(path: &Path, timeout: Duration) -> Result<Option<Self>, Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(lock) = Self::try_acquire(path)? {
                return Ok(Some(lock));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether somebody holds the lock at `path` right now.
    pub fn is_held(path: &Path) -> Result<bool, Error> {
        Ok(Self::try_acquire(path)?.is_none())
    }

    /// The locked file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file that holds the lock. A child process that inherits it (as its stdin, say) shares
    /// the lock: it stays held while either process keeps the file open.
    pub fn into_file(self) -> File {
        self.file
    }
}

/// Whether this process's standard input is the lock file at `path` and holds its lock: how a server
/// started by a session takes over the server lock that session took for it, with no gap in between.
pub fn stdin_holds_lock(path: &Path) -> bool {
    let stdin = io::stdin();
    let fd = stdin.as_fd();
    let (Ok(ours), Ok(theirs)) = (rustix::fs::fstat(fd), rustix::fs::stat(path)) else {
        return false;
    };
    if ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino {
        return false;
    }
    // Locking again through the same open file succeeds only if that open file holds the lock already
    // or nobody does; either way this process holds it afterwards.
    flock(fd, FlockOperation::NonBlockingLockExclusive).is_ok()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn one_holder_at_a_time_and_released_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("start.lock");
        let first = FileLock::try_acquire(&path).unwrap().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        assert!(FileLock::is_held(&path).unwrap());
        drop(first);
        // Another test's child process forked at this instant shares the open file until it execs (the
        // descriptor is close-on-exec), so the release is awaited, not assumed to be instant.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while FileLock::is_held(&path).unwrap() {
            assert!(
                std::time::Instant::now() < deadline,
                "the lock was never released"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(FileLock::try_acquire(&path).unwrap().is_some());
    }

    #[tokio::test]
    async fn waits_for_a_holder_to_let_go() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("start.lock");
        let first = FileLock::try_acquire(&path).unwrap().unwrap();
        assert!(
            FileLock::acquire_within(&path, Duration::from_millis(60))
                .await
                .unwrap()
                .is_none()
        );
        let releaser = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(first);
        });
        assert!(
            FileLock::acquire_within(&path, Duration::from_secs(10))
                .await
                .unwrap()
                .is_some()
        );
        releaser.await.unwrap();
    }

    #[test]
    fn a_child_process_that_inherits_the_file_keeps_the_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("server.lock");
        let lock = FileLock::try_acquire(&path).unwrap().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .stdin(lock.into_file())
            .spawn()
            .unwrap();
        // This process closed its copy: the child alone holds the lock now.
        assert!(FileLock::is_held(&path).unwrap());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!FileLock::is_held(&path).unwrap());
    }

    #[test]
    fn refuses_a_lock_file_that_is_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, "").unwrap();
        let path = tmp.path().join("start.lock");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(FileLock::try_acquire(&path).is_err());
    }
}

//! OS file locks (`flock`): the kernel releases them when their holder dies, so no lease has to be
//! renewed and no crashed process can keep a key locked.
//!
//! On Windows they are calltape-jsonl-store's [`FileLock`](calltape_jsonl_store::fs::FileLock), which
//! the system releases too when their holder dies; such a lock belongs to the process that took it and
//! cannot be handed to another one, so there is no `into_file` nor `take_over_stdin` there.

#[cfg(unix)]
use std::{fs::File, io, os::fd::AsFd};
use std::{path::Path, time::Duration};

#[cfg(unix)]
use rustix::fs::{FlockOperation, flock};

use crate::{Error, error::ErrorKind};

/// An exclusive lock on a file, held until dropped (or until the process that holds it dies).
///
/// Dropping it unlocks the file explicitly before closing it: a process that another thread forks at
/// that instant holds a copy of the descriptor until it execs, and closing this copy alone would leave
/// the lock held by that one for a while.
#[derive(Debug)]
pub(crate) struct FileLock {
    /// `None` only once [`FileLock::into_file`] handed the open file over.
    #[cfg(unix)]
    file: Option<File>,
    /// Held until dropped.
    #[cfg(not(unix))]
    _lock: calltape_jsonl_store::fs::FileLock,
}

impl FileLock {
    /// Takes the lock at `path` (creating the file 0600) if nobody holds it; `Ok(None)` if somebody does.
    /// The file is opened under calltape-jsonl-store's file rules: no link followed, another user's
    /// file refused, never emptied.
    pub(crate) fn try_acquire(path: &Path) -> Result<Option<Self>, Error> {
        let lock =
            calltape_jsonl_store::fs::FileLock::try_acquire(path).map_err(ErrorKind::File)?;
        #[cfg(unix)]
        let lock = lock.map(|lock| Self {
            file: Some(lock.into_file()),
        });
        #[cfg(not(unix))]
        let lock = lock.map(|lock| Self { _lock: lock });
        Ok(lock)
    }

    /// Waits up to `timeout` for the lock at `path`.
    pub(crate) async fn acquire_within(
        path: &Path,
        timeout: Duration,
    ) -> Result<Option<Self>, Error> {
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
    pub(crate) fn is_held(path: &Path) -> Result<bool, Error> {
        Ok(Self::try_acquire(path)?.is_none())
    }

    /// Takes over the lock at `path` that this process's standard input holds: how a server started by
    /// a session keeps the server lock that session took for it, with no gap in between.
    ///
    /// `None` when standard input is not that lock file, or another open file holds its lock. On
    /// success the lock moves to a close-on-exec descriptor and standard input becomes `/dev/null`, so
    /// no program this process starts (which would inherit standard input) can keep the lock after it.
    #[cfg(unix)]
    pub(crate) fn take_over_stdin(path: &Path) -> Result<Option<Self>, Error> {
        let stdin = io::stdin();
        let fd = stdin.as_fd();
        let (Ok(ours), Ok(theirs)) = (rustix::fs::fstat(fd), rustix::fs::stat(path)) else {
            return Ok(None);
        };
        if ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino {
            return Ok(None);
        }
        // Locking again through the same open file succeeds only if that open file holds the lock
        // already or nobody does; either way this process holds it afterwards.
        if flock(fd, FlockOperation::NonBlockingLockExclusive).is_err() {
            return Ok(None);
        }
        let moving = |e: io::Error| {
            Error::io(
                format!("cannot move the lock {} off standard input", path.display()),
                e,
            )
        };
        let held = rustix::io::fcntl_dupfd_cloexec(fd, 3).map_err(|e| moving(e.into()))?;
        let null = File::open("/dev/null").map_err(moving)?;
        // The duplicate shares the open file, and with it the lock: replacing standard input keeps it.
        rustix::stdio::dup2_stdin(&null).map_err(|e| moving(e.into()))?;
        Ok(Some(Self {
            file: Some(File::from(held)),
        }))
    }

    /// The open file that holds the lock, without unlocking it. A child process that inherits it (as
    /// its stdin, say) shares the lock: it stays held while either process keeps the file open.
    #[cfg(unix)]
    pub(crate) fn into_file(mut self) -> File {
        self.file
            .take()
            .expect("the file is there until handed over")
    }
}

#[cfg(unix)]
impl Drop for FileLock {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            let _ = flock(file.as_fd(), FlockOperation::Unlock);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{os::unix::fs::MetadataExt, process::Command};

    use super::*;

    /// Runs the test `name` again in a process of its own and checks that it passed there; `true` when
    /// this is that process. Its assertions about who holds a lock then cannot be upset by another
    /// test's child process, forked at the wrong instant with a copy of every open descriptor.
    fn alone(name: &str) -> bool {
        const ALONE: &str = "CALLTAPE_LOCK_TEST_ALONE";
        if std::env::var_os(ALONE).is_some() {
            return true;
        }
        let output = Command::new(std::env::current_exe().unwrap())
            .args([name, "--exact", "--test-threads=1"])
            .env(ALONE, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{name}: {stdout}");
        assert!(stdout.contains("1 passed"), "{name} ran: {stdout}");
        false
    }

    #[test]
    fn one_holder_at_a_time_and_released_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("start.lock");
        let first = FileLock::try_acquire(&path).unwrap().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        assert!(FileLock::is_held(&path).unwrap());
        drop(first);
        assert!(!FileLock::is_held(&path).unwrap());
        assert!(FileLock::try_acquire(&path).unwrap().is_some());
    }

    #[test]
    fn a_dropped_lock_is_released_even_while_another_process_has_the_file_open() {
        // What a process forked by another thread holds until it execs: a copy of the descriptor.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("start.lock");
        let lock = FileLock::try_acquire(&path).unwrap().unwrap();
        let copy = lock.file.as_ref().unwrap().try_clone().unwrap();
        let mut child = Command::new("sleep").arg("30").stdin(copy).spawn().unwrap();
        drop(lock);
        let released = !FileLock::is_held(&path).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(released, "the other process's copy kept the lock");
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
        if !alone("shared::lock::tests::a_child_process_that_inherits_the_file_keeps_the_lock") {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("server.lock");
        let lock = FileLock::try_acquire(&path).unwrap().unwrap();
        let mut child = Command::new("sleep")
            .arg("30")
            .stdin(lock.into_file())
            .spawn()
            .unwrap();
        // This process closed its copy without unlocking: the child alone holds the lock now.
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

//! Unix: `O_NOFOLLOW` opens, modes set through the open descriptor, `openat` walks and `flock`.

use std::ffi::OsStr;
use std::fs::{DirBuilder, File, Metadata, OpenOptions, Permissions};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{
    DirBuilderExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt,
};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, fcntl_getfl, fcntl_setfl};

use super::Access;
use crate::error::{Error, ErrorKind};
use crate::fs::DIR_MODE;
use crate::options::DEFAULT_MODE;

/// This process's effective user id: the owner a written file must have.
fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Opens `path` with `access` under the crate's file rules, or says why it is refused; every file
/// this crate writes is opened here.
///
/// The open adds no-follow (and non-blocking for the open itself, so that a named pipe without a
/// reader is refused rather than waited for) and `mode` for a new file: a symbolic link is refused.
/// The file must be a regular file (or a named pipe, when `fifo_ok`) owned by this process's
/// effective user, and its mode is set to `mode` through the open descriptor before anything is
/// written, so a file that cannot be made owner-only is never written to.
pub(crate) fn open_checked(
    path: &Path,
    access: Access,
    mode: u32,
    fifo_ok: bool,
) -> Result<(File, Metadata), Error> {
    let mut how = OpenOptions::new();
    match access {
        Access::CreateNew => how.write(true).create_new(true),
        Access::Append => how.append(true).create(true),
        Access::Write => how.write(true).create(true),
        Access::ReadWrite => how.read(true).write(true).create(true),
    };
    let file = how
        .mode(mode)
        // O_NONBLOCK only for the open: a named pipe with no reader is refused at once (ENXIO)
        // instead of blocking the open until one comes. It is cleared below.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| open_error(path, e))?;
    let meta = file.metadata().map_err(|e| Error::open(path, e))?;
    let file_type = meta.file_type();
    if !(file_type.is_file() || (fifo_ok && file_type.is_fifo())) {
        return Err(ErrorKind::NotAFile {
            path: path.to_owned(),
        }
        .into());
    }
    own_with_mode(&file, &meta, path, mode)?;
    let flags = fcntl_getfl(&file).map_err(|e| Error::open(path, e.into()))?;
    fcntl_setfl(&file, flags - OFlags::NONBLOCK).map_err(|e| Error::open(path, e.into()))?;
    Ok((file, meta))
}

/// Checks that the open `file` at `path` (whose metadata is `meta`) belongs to this process's
/// effective user, and sets its mode to `mode` when it differs. The mode is changed through the open
/// descriptor, so the file checked is the file changed.
fn own_with_mode(file: &File, meta: &Metadata, path: &Path, mode: u32) -> Result<(), Error> {
    let euid = euid();
    if meta.uid() != euid {
        return Err(ErrorKind::NotOwner {
            path: path.to_owned(),
            owner: format!("uid {}", meta.uid()),
            user: format!("uid {euid}"),
        }
        .into());
    }
    if meta.mode() & 0o7777 != mode {
        file.set_permissions(Permissions::from_mode(mode))
            .map_err(|e| ErrorKind::SetMode {
                path: path.to_owned(),
                mode,
                source: e.into(),
            })?;
    }
    Ok(())
}

/// Whether the file at `path` (not followed if it is a link) is owned by this process's effective
/// user and grants nothing to its group or to others.
pub(crate) fn is_owner_only(path: &Path) -> Result<bool, Error> {
    let meta = path.symlink_metadata().map_err(|e| Error::open(path, e))?;
    Ok(meta.uid() == euid() && meta.mode() & 0o077 == 0)
}

/// The error for a failed no-follow open of `path`: a symbolic link there is named as such (`ELOOP`,
/// or `EEXIST` when the open asked for a new file).
pub(crate) fn open_error(path: &Path, e: io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::ELOOP | libc::EEXIST) if is_symlink(path) => ErrorKind::Symlink {
            path: path.to_owned(),
        }
        .into(),
        Some(libc::ENXIO) => ErrorKind::PipeWithoutReader {
            path: path.to_owned(),
        }
        .into(),
        _ => Error::open(path, e),
    }
}

/// Whether `meta`, read without following a link, is a symbolic link's.
pub(crate) fn is_link(meta: &Metadata) -> bool {
    meta.file_type().is_symlink()
}

/// Whether `meta` is a named pipe's: nothing to measure or sync.
pub(crate) fn is_fifo(meta: &Metadata) -> bool {
    meta.file_type().is_fifo()
}

fn is_symlink(path: &Path) -> bool {
    path.symlink_metadata()
        .map(|m| is_link(&m))
        .unwrap_or(false)
}

/// Whether the file checked as `meta` is non-empty and its last byte is not a newline. Read through a
/// second, read-only descriptor (the writer's is write-only), trusted only when it is the same file.
pub(crate) fn ends_in_a_cut_line(path: &Path, _file: &File, meta: &Metadata) -> bool {
    if meta.len() == 0 {
        return false;
    }
    let Ok(reader) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    let Ok(now) = reader.metadata() else {
        return false;
    };
    if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) || now.len() == 0 {
        return false;
    }
    let mut last = [0u8];
    matches!(reader.read_at(&mut last, now.len() - 1), Ok(1)) && last[0] != b'\n'
}

/// Opens `path` to read without following a symbolic link there. What it is (a file, a folder) is the
/// caller's to check.
pub(crate) fn open_read(path: &Path) -> Result<File, Error> {
    OpenOptions::new()
        .read(true)
        // Non-blocking for the open: a named pipe at the path is refused by the caller, not waited on.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| open_error(path, e))
}

/// Opens `folders` then `last` below the folder `dir`, each below the one before without following a
/// link (`openat`), and returns the last one open with its path for messages. A link anywhere below
/// `dir` is [`ErrorKind::Symlink`], something that is not a folder where one was wanted
/// [`ErrorKind::NotAFolder`]. The folder `dir` itself is opened as given, links and all.
pub(crate) fn open_within(
    dir: &Path,
    folders: &[&OsStr],
    last: &OsStr,
) -> Result<(File, PathBuf), Error> {
    let mut at = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::open(dir, e.into()))?;
    let mut path = dir.to_path_buf();
    for name in folders {
        path.push(name);
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        at = rustix::fs::openat(&at, *name, flags, Mode::empty())
            .map_err(|e| opened_below(&at, name, &path, e))?;
    }
    path.push(last);
    // Non-blocking for the open: a named pipe is refused by the caller, not waited on.
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&at, last, flags, Mode::empty())
        .map_err(|e| opened_below(&at, last, &path, e))?;
    Ok((File::from(fd), path))
}

/// The error of opening `name` below the folder `at` (`path` for the message): a symbolic link
/// there is [`ErrorKind::Symlink`], something that is not a folder where one was wanted
/// [`ErrorKind::NotAFolder`].
fn opened_below(at: &OwnedFd, name: &OsStr, path: &Path, e: rustix::io::Errno) -> Error {
    let found = rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW)
        .map(|stat| FileType::from_raw_mode(stat.st_mode));
    match found {
        Ok(FileType::Symlink) => ErrorKind::Symlink {
            path: path.to_owned(),
        }
        .into(),
        Ok(_) if e == rustix::io::Errno::NOTDIR => ErrorKind::NotAFolder {
            path: path.to_owned(),
        }
        .into(),
        _ => Error::open(path, e.into()),
    }
}

/// Creates the folder at `path` and any missing folder above it, each [`DIR_MODE`]; an existing
/// folder is left as it is.
pub(crate) fn make_dirs(path: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
}

/// Makes the existing folder at `path` owner-only ([`DIR_MODE`]), refusing one another user owns.
pub(crate) fn make_private(path: &Path) -> Result<(), Error> {
    // The mode is set through a descriptor opened without following a link, so the folder checked is
    // the folder changed.
    let dir = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_DIRECTORY)
        .open(path)
        .map_err(|e| open_error(path, e))?;
    let meta = dir.metadata().map_err(|e| Error::open(path, e))?;
    own_with_mode(&dir, &meta, path, DIR_MODE)
}

/// Creates the temporary file `temp` of a rewrite of `path`: new (`O_EXCL`, no-follow) and
/// owner-only.
pub(crate) fn create_temp(path: &Path, temp: &Path) -> Result<File, Error> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(DEFAULT_MODE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(temp)
        .map_err(|e| Error::rewrite(path, "creating the temporary file", e))?;
    // The umask may have taken bits off the mode; owner-only is what it must be, no more, no less.
    file.set_permissions(Permissions::from_mode(DEFAULT_MODE))
        .map_err(|e| Error::rewrite(path, "setting the temporary file's mode", e))?;
    Ok(file)
}

/// `fsync`s the folder `dir`, so that a rename in it survives a power cut.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir).and_then(|d| d.sync_all())
}

/// Takes an exclusive `flock` on `file`, waiting for it when `wait`; `Ok(false)` when another holds
/// it and `wait` is false.
pub(crate) fn lock(file: &File, wait: bool) -> io::Result<bool> {
    let how = if wait {
        rustix::fs::FlockOperation::LockExclusive
    } else {
        rustix::fs::FlockOperation::NonBlockingLockExclusive
    };
    loop {
        match rustix::fs::flock(file, how) {
            Ok(()) => return Ok(true),
            Err(rustix::io::Errno::WOULDBLOCK) => return Ok(false),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Asserts that what is at `path` is owner-only.
#[cfg(test)]
pub(crate) fn assert_owner_only(path: &Path) {
    assert!(is_owner_only(path).unwrap(), "{}", path.display());
}

/// Releases the lock [`lock`] took on `file`.
pub(crate) fn unlock(file: &File) {
    let _ = rustix::fs::flock(file, rustix::fs::FlockOperation::Unlock);
}

//! Files other than JSONL lines under the same rules: a log, a token, a small file replaced whole, a
//! private folder.
//!
//! A program that keeps its recordings owner-only must keep its other files so too, or a log or a
//! report becomes the way round. Every function here follows the crate's file rules:
//!
//! - the path is opened without following a symbolic link: a link at the path, even one pointing
//!   nowhere, is [`ErrorKind::Symlink`], naming the path, and its target is left untouched (on
//!   Windows, any reparse point at the path, a junction too);
//! - a file is created owner-only (`0o600`), and an existing one is set to that mode through its
//!   open descriptor before anything is written; a file another user owns is refused
//!   ([`ErrorKind::NotOwner`]);
//! - a folder is created `0o700`;
//! - descriptors are close-on-exec, so no program the caller starts inherits one by accident.
//!
//! On Windows, owner-only is an access list rather than a mode: a file or folder is created with a
//! protected access list that grants the user this process runs as full access and nobody else
//! anything, an existing one is given that list through its open handle once its owner is checked,
//! and handles are not inheritable.
//!
//! ```
//! use std::io::Write;
//!
//! use calltape_jsonl_store::{ErrorKind, fs};
//!
//! # fn main() -> Result<(), calltape_jsonl_store::Error> {
//! let dir = tempfile::tempdir().unwrap();
//! let logs = dir.path().join("logs");
//! fs::create_dir_all(&logs)?;
//! let mut log = fs::append(logs.join("server.log"))?;
//! writeln!(log, "started").unwrap();
//! assert!(fs::is_owner_only(logs.join("server.log"))?);
//! #[cfg(unix)]
//! {
//!     use std::os::unix::fs::MetadataExt;
//!     assert_eq!(logs.join("server.log").metadata().unwrap().mode() & 0o777, 0o600);
//! }
//!
//! fs::write_atomic(dir.path().join("token"), b"abc")?;
//! assert_eq!(fs::read(dir.path().join("token"))?, b"abc");
//!
//! #[cfg(unix)]
//! {
//!     std::os::unix::fs::symlink(dir.path().join("token"), dir.path().join("link")).unwrap();
//!     let err = fs::append(dir.path().join("link")).unwrap_err();
//!     assert!(matches!(err.kind(), ErrorKind::Symlink { .. }));
//! }
//! # Ok(())
//! # }
//! ```

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, ErrorKind};
use crate::options::DEFAULT_MODE;
use crate::rewrite::replace;
use crate::sys::{self, Access};

/// The mode of a folder this module creates: the owner's only. On Windows every folder this module
/// creates or makes private is owner-only through its access list, whatever this value.
pub const DIR_MODE: u32 = 0o700;

/// Creates a new owner-only file at `path` for writing; anything already at the path (a file, a
/// link) is an error.
pub fn create_new(path: impl AsRef<Path>) -> Result<File, Error> {
    let (file, _) = sys::open_checked(path.as_ref(), Access::CreateNew, DEFAULT_MODE, false)?;
    Ok(file)
}

/// Opens the file at `path` for appending, creating it when missing, under the module's rules. On
/// Unix a named pipe that a process reads is accepted too, as the writers accept one; on Windows only
/// a regular file is.
pub fn append(path: impl AsRef<Path>) -> Result<File, Error> {
    let (file, _) = sys::open_checked(path.as_ref(), Access::Append, DEFAULT_MODE, true)?;
    Ok(file)
}

/// Opens the file at `path` for writing from its start, creating it when missing or emptying it. It
/// is emptied only once it passed the module's checks: a file another user owns keeps its content.
pub fn truncate(path: impl AsRef<Path>) -> Result<File, Error> {
    let path = path.as_ref();
    let (file, _) = sys::open_checked(path, Access::Write, DEFAULT_MODE, false)?;
    file.set_len(0).map_err(|e| Error::write(path, e))?;
    Ok(file)
}

/// Replaces the file at `path` with `data` atomically, owner-only: the way [`rewrite`](crate::rewrite)
/// replaces a file (a new temporary file in the same folder, `fsync`, rename, `fsync` of the folder),
/// for bytes that are not JSONL lines. A crash leaves the old file or the new one, never a mix.
pub fn write_atomic(path: impl AsRef<Path>, data: impl AsRef<[u8]>) -> Result<(), Error> {
    let path = path.as_ref();
    let data = data.as_ref();
    replace(
        path,
        |out| {
            out.write_all(data)
                .map_err(|e| Error::rewrite(path, "writing the temporary file", e))
        },
        |_| {},
    )
}

/// Reads the regular file at `path` whole, without following a symbolic link at the path.
pub fn read(path: impl AsRef<Path>) -> Result<Vec<u8>, Error> {
    let path = path.as_ref();
    let mut file = sys::open_read(path)?;
    let meta = file.metadata().map_err(|e| Error::read(path, e))?;
    if !meta.file_type().is_file() {
        return Err(ErrorKind::NotAFile {
            path: path.to_owned(),
        }
        .into());
    }
    let mut data = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut data)
        .map_err(|e| Error::read(path, e))?;
    Ok(data)
}

/// Whether the file or folder at `path` is owner-only: owned by this process's user and closed to
/// everyone else (on Unix, no permission bit for the group or others; on Windows, a protected access
/// list with one entry, granting that user full access). A symbolic link at the path is not
/// followed, and is not owner-only.
pub fn is_owner_only(path: impl AsRef<Path>) -> Result<bool, Error> {
    sys::is_owner_only(path.as_ref())
}

/// Reads the regular file at `rel` inside the folder `dir`, whole, when it holds at most `max` bytes.
///
/// For a file that someone else's tree names (an artifact a recording points at): every name of
/// `rel` is opened below the one before it without following a symbolic link, so a link anywhere
/// under `dir`, to a file outside it, a folder or a device, is [`ErrorKind::Symlink`], naming the
/// path, and is never read through. What is not a regular file (a folder, a named pipe, a device) is
/// [`ErrorKind::NotAFile`], a file of more than `max` bytes [`ErrorKind::TooLarge`], and a `rel`
/// that is not a relative path of plain names (`..`, `.`, an absolute path, a Windows drive or
/// prefix) [`ErrorKind::OutsideFolder`]. The folder `dir` itself is opened as given, links and all.
/// On Windows a junction counts as a link, and every folder of the walk is held open, so that none
/// can be renamed or replaced until the file is open.
///
/// ```
/// use calltape_jsonl_store::{ErrorKind, fs};
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("audio")).unwrap();
/// std::fs::write(dir.path().join("audio/a.wav"), b"RIFF").unwrap();
/// assert_eq!(fs::read_within(dir.path(), "audio/a.wav", 1024).unwrap(), b"RIFF");
///
/// #[cfg(unix)]
/// {
///     std::os::unix::fs::symlink("/dev/zero", dir.path().join("audio/zero.wav")).unwrap();
///     let err = fs::read_within(dir.path(), "audio/zero.wav", 1024).unwrap_err();
///     assert!(matches!(err.kind(), ErrorKind::Symlink { .. }));
/// }
/// let err = fs::read_within(dir.path(), "audio/a.wav", 3).unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::TooLarge { .. }));
/// let err = fs::read_within(dir.path(), "../audio/a.wav", 1024).unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::OutsideFolder { .. }));
/// ```
pub fn read_within(
    dir: impl AsRef<Path>,
    rel: impl AsRef<Path>,
    max: u64,
) -> Result<Vec<u8>, Error> {
    let (dir, rel) = (dir.as_ref(), rel.as_ref());
    let outside = || -> Error {
        ErrorKind::OutsideFolder {
            path: rel.to_owned(),
            folder: dir.to_owned(),
        }
        .into()
    };
    let mut names: Vec<&OsStr> = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => names.push(name),
            _ => return Err(outside()),
        }
    }
    let Some((last, folders)) = names.split_last() else {
        return Err(outside());
    };
    let (file, path) = sys::open_within(dir, folders, last)?;
    let meta = file.metadata().map_err(|e| Error::read(&path, e))?;
    if !meta.file_type().is_file() {
        return Err(ErrorKind::NotAFile { path }.into());
    }
    let too_large = |path: PathBuf| -> Error { ErrorKind::TooLarge { path, max }.into() };
    if meta.len() > max {
        return Err(too_large(path));
    }
    let mut data = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte past the cap tells a file that grew while it was read.
    file.take(max.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(|e| Error::read(&path, e))?;
    if data.len() as u64 > max {
        return Err(too_large(path));
    }
    Ok(data)
}

/// Creates the folder at `path` and any missing folder above it, each `0o700` (on Windows, each with
/// an owner-only access list from its creation). An existing folder is kept as it is; a symbolic link
/// (on Windows, any reparse point, a junction too) at `path` is refused, and so is anything there that
/// is not a folder.
pub fn create_dir_all(path: impl AsRef<Path>) -> Result<(), Error> {
    let path = path.as_ref();
    if path.as_os_str().is_empty() {
        return Ok(());
    }
    match path.symlink_metadata() {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            sys::make_dirs(path).map_err(|e| Error::create_dir(path, e))?;
        }
        Err(e) => return Err(Error::create_dir(path, e)),
    }
    // Checked after the creation too: a link planted in between is refused all the same.
    let meta = path
        .symlink_metadata()
        .map_err(|e| Error::create_dir(path, e))?;
    if sys::is_link(&meta) {
        return Err(ErrorKind::Symlink {
            path: path.to_owned(),
        }
        .into());
    }
    if !meta.is_dir() {
        return Err(ErrorKind::NotAFolder {
            path: path.to_owned(),
        }
        .into());
    }
    Ok(())
}

/// Creates the folder at `path` as [`create_dir_all`] does, and makes the folder itself owner-only
/// (`0o700`; on Windows, an owner-only access list) when it exists already: for a folder that belongs
/// to the caller's program alone, such as the sidecar folder of a recording. A folder another user
/// owns is refused.
pub fn private_dir(path: impl AsRef<Path>) -> Result<(), Error> {
    let path = path.as_ref();
    create_dir_all(path)?;
    sys::make_private(path)
}

/// An exclusive lock on a file (`flock` on Unix, `LockFileEx` on Windows), held until dropped or
/// until the process that holds it dies: the system releases it then, so no crashed process keeps
/// it.
///
/// The lock file is opened under the module's rules (no link followed, created owner-only, another
/// user's file refused) and never emptied. Dropping the lock unlocks the file before closing it, so a
/// process another thread forks at that instant cannot keep it held.
///
/// ```
/// use calltape_jsonl_store::fs::FileLock;
///
/// # fn main() -> Result<(), calltape_jsonl_store::Error> {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("entry.lock");
/// let held = FileLock::try_acquire(&path)?.expect("nobody holds it");
/// assert!(FileLock::try_acquire(&path)?.is_none());
/// drop(held);
/// assert!(FileLock::try_acquire(&path)?.is_some());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct FileLock {
    /// `None` only once [`FileLock::into_file`] handed the open file over.
    file: Option<File>,
}

impl FileLock {
    /// Takes the lock at `path` (creating the file) if nobody holds it; `Ok(None)` if somebody does.
    pub fn try_acquire(path: impl AsRef<Path>) -> Result<Option<Self>, Error> {
        Self::lock(path.as_ref(), false)
    }

    /// Takes the lock at `path` (creating the file), waiting for as long as another holds it. This
    /// blocks the thread: from async code, call it on a blocking thread.
    pub fn acquire(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        Self::lock(path, true)?
            .ok_or_else(|| Error::open(path, std::io::ErrorKind::WouldBlock.into()))
    }

    fn lock(path: &Path, wait: bool) -> Result<Option<Self>, Error> {
        let (file, _) = sys::open_checked(path, Access::ReadWrite, DEFAULT_MODE, false)?;
        match sys::lock(&file, wait) {
            Ok(true) => Ok(Some(Self { file: Some(file) })),
            Ok(false) => Ok(None),
            Err(e) => Err(Error::open(path, e)),
        }
    }
}

impl FileLock {
    /// The open file that holds the lock, without unlocking it: the lock stays held while the file
    /// is open, in this process or in a child that inherits it (as its standard input, say), and
    /// whoever holds the file unlocks it or lets the system do so when the last copy closes.
    pub fn into_file(mut self) -> File {
        self.file
            .take()
            .expect("the file is there until handed over")
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            sys::unlock(file);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::fs::Permissions;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::process::Command;

    type Step = fn(&Path) -> Result<(), Error>;

    /// Every way into a file, each with a symbolic link planted at its path.
    const STEPS: [(&str, Step); 6] = [
        ("create_new", |p| create_new(p).map(drop)),
        ("append", |p| append(p).map(drop)),
        ("truncate", |p| truncate(p).map(drop)),
        ("write_atomic", |p| write_atomic(p, b"new")),
        ("read", |p| read(p).map(drop)),
        ("private_dir", |p| private_dir(p)),
    ];

    #[test]
    fn a_lock_handed_over_as_its_file_stays_held_until_the_file_closes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry.lock");
        let file = FileLock::try_acquire(&path).unwrap().unwrap().into_file();
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        drop(file);
        assert!(FileLock::try_acquire(&path).unwrap().is_some());
    }

    #[test]
    fn a_symlink_at_the_path_is_refused_by_name_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        std::fs::set_permissions(&target, Permissions::from_mode(0o644)).unwrap();
        for (name, step) in STEPS {
            for points_at in [target.clone(), dir.path().join("nowhere")] {
                let link = dir.path().join(format!("{name}.link"));
                let _ = std::fs::remove_file(&link);
                std::os::unix::fs::symlink(&points_at, &link).unwrap();
                let err = step(&link).unwrap_err();
                assert!(
                    matches!(err.kind(), ErrorKind::Symlink { .. }),
                    "{name}: {err}"
                );
                assert!(
                    err.to_string().starts_with(&link.display().to_string()),
                    "{name}: {err}"
                );
            }
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep", "{name}");
            let mode = target.metadata().unwrap().mode() & 0o777;
            assert_eq!(mode, 0o644, "{name}");
            assert!(!dir.path().join("nowhere").exists(), "{name}");
        }
        let err = create_dir_all(dir.path().join("private_dir.link")).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Symlink { .. }), "{err}");
    }

    #[test]
    fn files_are_owner_only_and_folders_0700() {
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path| p.metadata().unwrap().mode() & 0o7777;
        let folder = dir.path().join("a/b");
        create_dir_all(&folder).unwrap();
        assert_eq!(mode(&folder), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);

        let cases: [(&str, Step); 4] = [
            ("new", |p| {
                create_new(p)?
                    .write_all(b"x")
                    .map_err(|e| Error::write(p, e))
            }),
            ("appended", |p| {
                append(p)?.write_all(b"x").map_err(|e| Error::write(p, e))
            }),
            ("truncated", |p| {
                truncate(p)?.write_all(b"x").map_err(|e| Error::write(p, e))
            }),
            ("replaced", |p| write_atomic(p, b"x")),
        ];
        for (name, step) in cases {
            let path = folder.join(name);
            if name != "new" {
                std::fs::write(&path, "old ").unwrap();
                std::fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
            }
            step(&path).unwrap();
            assert_eq!(mode(&path), 0o600, "{name}");
            let want = if name == "appended" { "old x" } else { "x" };
            assert_eq!(std::fs::read_to_string(&path).unwrap(), want, "{name}");
        }
        let left = std::fs::read_dir(&folder).unwrap().count();
        assert_eq!(left, 4, "no temporary file is left behind");

        let err = create_new(folder.join("new")).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Open { .. }), "{err}");

        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, Permissions::from_mode(0o755)).unwrap();
        create_dir_all(&shared).unwrap();
        assert_eq!(mode(&shared), 0o755, "an existing folder is kept as it is");
        private_dir(&shared).unwrap();
        assert_eq!(mode(&shared), 0o700);
    }

    #[test]
    fn what_is_not_a_file_or_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = read(dir.path()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::NotAFile { .. }), "{err}");
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let err = create_dir_all(&file).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::NotAFolder { .. }), "{err}");
        assert!(err.to_string().starts_with(&file.display().to_string()));
    }

    #[test]
    fn read_within_reads_only_regular_files_inside_the_folder_never_through_a_link() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("recordings");
        std::fs::create_dir_all(dir.join("audio")).unwrap();
        std::fs::write(dir.join("audio/a.wav"), "RIFF").unwrap();
        std::fs::write(root.path().join("outside.txt"), "secret").unwrap();
        std::fs::create_dir(root.path().join("elsewhere")).unwrap();
        std::fs::write(root.path().join("elsewhere/b.wav"), "RIFF").unwrap();
        let link =
            |target: &Path, at: &str| std::os::unix::fs::symlink(target, dir.join(at)).unwrap();
        link(&root.path().join("outside.txt"), "outside.wav");
        link(Path::new("/dev/zero"), "zero.wav");
        link(&root.path().join("elsewhere"), "linked");
        link(Path::new("audio/a.wav"), "audio/relative.wav");
        let made = Command::new("mkfifo")
            .arg(dir.join("pipe.wav"))
            .status()
            .unwrap();
        assert!(made.success());
        std::fs::write(dir.join("big.wav"), vec![b'x'; 1025]).unwrap();

        assert_eq!(read_within(&dir, "audio/a.wav", 1024).unwrap(), b"RIFF");
        type Kind = fn(&ErrorKind) -> bool;
        let symlink: Kind = |k| matches!(k, ErrorKind::Symlink { .. });
        let cases: [(&str, Kind); 10] = [
            ("outside.wav", symlink),
            ("zero.wav", symlink),
            ("linked/b.wav", symlink),
            ("audio/relative.wav", symlink),
            ("audio", |k| matches!(k, ErrorKind::NotAFile { .. })),
            ("pipe.wav", |k| matches!(k, ErrorKind::NotAFile { .. })),
            ("big.wav", |k| {
                matches!(k, ErrorKind::TooLarge { max: 1024, .. })
            }),
            ("audio/a.wav/x", |k| {
                matches!(k, ErrorKind::NotAFolder { .. })
            }),
            ("../outside.txt", |k| {
                matches!(k, ErrorKind::OutsideFolder { .. })
            }),
            ("/etc/passwd", |k| {
                matches!(k, ErrorKind::OutsideFolder { .. })
            }),
        ];
        for (rel, kind) in cases {
            let err = read_within(&dir, rel, 1024).unwrap_err();
            assert!(kind(err.kind()), "{rel}: {err}");
        }
        let err = read_within(&dir, "zero.wav", 1024).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&dir.join("zero.wav").display().to_string()),
            "{err}"
        );
    }
}

//! Where a key's files live, and the owner and mode checks that make them trustworthy.
//!
//! The record is the root of trust: a proof only shows that a server holds the record's secret, so what
//! keeps another local user from planting a record of their own is that nobody else can write to the
//! folder it is in, nor to any folder above it (unless that folder is sticky, like `/tmp`).
//!
//! On Windows the home, its `shared` folder and the key's folder are made owner-only (an access list
//! that grants the current user alone) by calltape-jsonl-store's
//! [`fs::private_dir`](calltape_jsonl_store::fs::private_dir), which refuses a folder another user
//! owns; the mode and owner checks below are Unix only.

#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::{
    fs,
    path::{Path, PathBuf},
};

use super::key::SharedKey;
use crate::{Error, ErrorKind};

/// The longest Unix socket path the platform's socket address holds, in bytes (without the NUL).
#[cfg(any(
    target_os = "macos",
    target_os = "ios",
    target_os = "freebsd",
    target_os = "openbsd",
    target_os = "netbsd"
))]
pub const MAX_SOCKET_PATH: usize = 103;
/// The longest Unix socket path the platform's socket address holds, in bytes (without the NUL).
#[cfg(not(any(
    target_os = "macos",
    target_os = "ios",
    target_os = "freebsd",
    target_os = "openbsd",
    target_os = "netbsd"
)))]
pub const MAX_SOCKET_PATH: usize = 107;

#[cfg(unix)]
const FOLDER_HINT: &str = "set CALLTAPE_HOME to a folder only you can write to";
const RECORD_HINT: &str = "remove it; the next session starts a fresh server";

/// The files of one key under `$CALLTAPE_HOME/shared/<key>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedPaths {
    key: SharedKey,
    home: PathBuf,
    dir: PathBuf,
}

impl SharedPaths {
    /// The key's files under the home named by the environment: `CALLTAPE_HOME`, else
    /// `$XDG_RUNTIME_DIR/calltape`, else `~/.calltape`. On Windows: `CALLTAPE_HOME`, else
    /// `%LOCALAPPDATA%\calltape`, else `%USERPROFILE%\.calltape`.
    pub fn from_env(key: &SharedKey) -> Result<Self, Error> {
        let home = default_home().ok_or_else(|| Error::config(NO_HOME))?;
        Ok(Self::under(home, key))
    }

    /// The key's files under `home` (the folder `CALLTAPE_HOME` would name).
    pub fn under(home: impl AsRef<Path>, key: &SharedKey) -> Self {
        Self {
            key: key.clone(),
            home: home.as_ref().to_owned(),
            dir: home.as_ref().join("shared").join(key.as_str()),
        }
    }

    /// The key.
    pub fn key(&self) -> &SharedKey {
        &self.key
    }

    /// The home folder (what `CALLTAPE_HOME` names).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The key's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `server.json`, the record a running server writes.
    pub fn record(&self) -> PathBuf {
        self.dir.join("server.json")
    }

    /// `server.sock`, the server's Unix socket (a shared server on Windows listens on loopback TCP
    /// and has none).
    pub fn socket(&self) -> PathBuf {
        self.dir.join("server.sock")
    }

    /// `server.lock`, held by the server for its whole life.
    pub fn server_lock(&self) -> PathBuf {
        self.dir.join("server.lock")
    }

    /// `start.lock`, held by the session that is starting a server.
    pub fn start_lock(&self) -> PathBuf {
        self.dir.join("start.lock")
    }

    /// `server.log`, the server's stderr.
    pub fn log(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// Creates the key's folder (0700) if needed and checks it and every folder above it.
    ///
    /// On Windows: creates the home, its `shared` folder and the key's folder if needed, each made
    /// owner-only, and refuses any of them that another user owns.
    #[cfg(unix)]
    pub fn prepare(&self) -> Result<(), Error> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| Error::io(format!("cannot create {}", self.dir.display()), e))?;
        check_folder(&self.dir)
    }

    /// Creates the key's folder (0700) if needed and checks it and every folder above it.
    ///
    /// On Windows: creates the home, its `shared` folder and the key's folder if needed, each made
    /// owner-only, and refuses any of them that another user owns.
    #[cfg(not(unix))]
    pub fn prepare(&self) -> Result<(), Error> {
        for dir in [
            self.home.clone(),
            self.home.join("shared"),
            self.dir.clone(),
        ] {
            calltape_jsonl_store::fs::private_dir(&dir).map_err(ErrorKind::File)?;
        }
        Ok(())
    }

    /// Refuses a socket path the platform cannot bind, before anything is started.
    pub fn check_socket_len(&self) -> Result<(), Error> {
        check_socket_len(&self.socket())
    }
}

/// Why [`default_home`] found none, and what to set.
#[cfg(unix)]
const NO_HOME: &str =
    "cannot find a home for shared servers: set CALLTAPE_HOME, XDG_RUNTIME_DIR or HOME";
/// Why [`default_home`] found none, and what to set.
#[cfg(not(unix))]
const NO_HOME: &str =
    "cannot find a home for shared servers: set CALLTAPE_HOME, LOCALAPPDATA or USERPROFILE";

/// The home for shared servers named by the environment, if any.
pub(crate) fn default_home() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    #[cfg(unix)]
    let home = var("CALLTAPE_HOME")
        .or_else(|| var("XDG_RUNTIME_DIR").map(|d| d.join("calltape")))
        .or_else(|| var("HOME").map(|d| d.join(".calltape")));
    #[cfg(not(unix))]
    let home = var("CALLTAPE_HOME")
        .or_else(|| var("LOCALAPPDATA").map(|d| d.join("calltape")))
        .or_else(|| var("USERPROFILE").map(|d| d.join(".calltape")));
    home
}

/// Refuses a socket path longer than [`MAX_SOCKET_PATH`].
pub(crate) fn check_socket_len(path: &Path) -> Result<(), Error> {
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        return Err(ErrorKind::SocketPathTooLong {
            path: path.to_owned(),
            len,
            max: MAX_SOCKET_PATH,
        }
        .into());
    }
    Ok(())
}

/// The effective user id of this process.
#[cfg(unix)]
pub(crate) fn my_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn unsafe_path(path: &Path, reason: String, hint: &'static str) -> Error {
    ErrorKind::UnsafePath {
        path: path.to_owned(),
        reason,
        hint,
    }
    .into()
}

/// Checks that `dir` is a real folder of this user that nobody else can write to, and that no folder
/// above it lets the group or others replace it (a sticky folder is fine: only its owners rename in it).
#[cfg(unix)]
pub(crate) fn check_folder(dir: &Path) -> Result<(), Error> {
    let me = my_uid();
    let meta = fs::symlink_metadata(dir)
        .map_err(|e| Error::io(format!("cannot inspect {}", dir.display()), e))?;
    let mode = meta.mode() & 0o7777;
    if !meta.file_type().is_dir() {
        return Err(unsafe_path(dir, "it is not a folder".into(), FOLDER_HINT));
    }
    if meta.uid() != me {
        return Err(unsafe_path(
            dir,
            format!("it belongs to another user (uid {})", meta.uid()),
            FOLDER_HINT,
        ));
    }
    if mode & 0o022 != 0 {
        return Err(unsafe_path(
            dir,
            format!("mode {mode:04o}: the group or others can write to it"),
            FOLDER_HINT,
        ));
    }
    let real = fs::canonicalize(dir)
        .map_err(|e| Error::io(format!("cannot resolve {}", dir.display()), e))?;
    for ancestor in real.ancestors().skip(1) {
        let meta = fs::metadata(ancestor)
            .map_err(|e| Error::io(format!("cannot inspect {}", ancestor.display()), e))?;
        let mode = meta.mode() & 0o7777;
        let sticky = mode & 0o1000 != 0;
        if mode & 0o022 != 0 && !sticky {
            return Err(unsafe_path(
                ancestor,
                format!(
                    "mode {mode:04o}: the group or others can write to this folder above {}",
                    dir.display()
                ),
                FOLDER_HINT,
            ));
        }
        if meta.uid() != me && meta.uid() != 0 {
            return Err(unsafe_path(
                ancestor,
                format!(
                    "this folder above {} belongs to another user (uid {})",
                    dir.display(),
                    meta.uid()
                ),
                FOLDER_HINT,
            ));
        }
    }
    Ok(())
}

/// Checks a file the server wrote (record or socket): not a link, this user's, nothing for the group or
/// others. `Ok(false)` when it does not exist.
#[cfg(unix)]
pub(crate) fn check_private_file(path: &Path, want_socket: bool) -> Result<bool, Error> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(format!("cannot inspect {}", path.display()), e)),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Err(unsafe_path(
            path,
            "it is a symbolic link".into(),
            RECORD_HINT,
        ));
    }
    use std::os::unix::fs::FileTypeExt;
    let right_type = if want_socket {
        ft.is_socket()
    } else {
        ft.is_file()
    };
    if !right_type {
        let what = if want_socket {
            "a socket"
        } else {
            "a regular file"
        };
        return Err(unsafe_path(path, format!("it is not {what}"), RECORD_HINT));
    }
    if meta.uid() != my_uid() {
        return Err(unsafe_path(
            path,
            format!("it belongs to another user (uid {})", meta.uid()),
            RECORD_HINT,
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(unsafe_path(
            path,
            format!("mode {mode:04o}: the group or others can read or write it"),
            RECORD_HINT,
        ));
    }
    Ok(true)
}

/// Checks the record a server wrote: not a link, a regular file. `Ok(false)` when it does not exist.
/// Who may write it is up to the key's folder, which [`SharedPaths::prepare`] made owner-only.
#[cfg(not(unix))]
pub(crate) fn check_private_file(path: &Path) -> Result<bool, Error> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(format!("cannot inspect {}", path.display()), e)),
    };
    if meta.file_type().is_symlink() {
        return Err(unsafe_path(
            path,
            "it is a symbolic link".into(),
            RECORD_HINT,
        ));
    }
    if !meta.file_type().is_file() {
        return Err(unsafe_path(
            path,
            "it is not a regular file".into(),
            RECORD_HINT,
        ));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn key(k: &str) -> SharedKey {
        SharedKey::new(k).unwrap()
    }

    fn private_tmp() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o700)).unwrap();
        tmp
    }

    #[test]
    fn paths_sit_under_the_key_folder() {
        let paths = SharedPaths::under("/h", &key("notes"));
        assert_eq!(paths.dir(), Path::new("/h/shared/notes"));
        assert_eq!(paths.record(), Path::new("/h/shared/notes/server.json"));
        assert_eq!(paths.socket(), Path::new("/h/shared/notes/server.sock"));
        assert_eq!(
            paths.server_lock(),
            Path::new("/h/shared/notes/server.lock")
        );
        assert_eq!(paths.start_lock(), Path::new("/h/shared/notes/start.lock"));
    }

    #[test]
    fn prepare_creates_an_owner_only_folder() {
        let tmp = private_tmp();
        let paths = SharedPaths::under(tmp.path().join("home"), &key("k"));
        paths.prepare().unwrap();
        let mode = fs::metadata(paths.dir()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let shared = fs::metadata(tmp.path().join("home/shared")).unwrap().mode() & 0o777;
        assert_eq!(shared, 0o700);
        // A second prepare of the same folder is fine.
        paths.prepare().unwrap();
    }

    #[test]
    fn refuses_folders_the_group_or_others_can_write() {
        for mode in [0o777, 0o770, 0o720, 0o702] {
            let tmp = private_tmp();
            let paths = SharedPaths::under(tmp.path(), &key("k"));
            paths.prepare().unwrap();
            fs::set_permissions(paths.dir(), fs::Permissions::from_mode(mode)).unwrap();
            let err = paths.prepare().unwrap_err();
            let message = err.to_string();
            assert!(
                matches!(err.kind(), ErrorKind::UnsafePath { .. }),
                "{message}"
            );
            assert!(
                message.contains(&paths.dir().display().to_string()),
                "{message}"
            );
            assert!(message.contains(&format!("{mode:04o}")), "{message}");
            assert!(message.contains("CALLTAPE_HOME"), "{message}");
        }
    }

    #[test]
    fn refuses_a_writable_ancestor_unless_sticky() {
        let tmp = private_tmp();
        let open = tmp.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let paths = SharedPaths::under(open.join("home"), &key("k"));
        let message = paths.prepare().unwrap_err().to_string();
        assert!(message.contains(&open.display().to_string()), "{message}");
        assert!(message.contains("above"), "{message}");

        fs::set_permissions(&open, fs::Permissions::from_mode(0o1777)).unwrap();
        paths.prepare().unwrap();
    }

    #[test]
    fn refuses_a_folder_that_is_a_link() {
        let tmp = private_tmp();
        let real = tmp.path().join("real");
        fs::create_dir(&real).unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
        fs::create_dir_all(tmp.path().join("home/shared")).unwrap();
        std::os::unix::fs::symlink(&real, tmp.path().join("home/shared/k")).unwrap();
        let paths = SharedPaths::under(tmp.path().join("home"), &key("k"));
        let message = paths.prepare().unwrap_err().to_string();
        assert!(message.contains("not a folder"), "{message}");
    }

    #[test]
    fn private_file_checks() {
        let tmp = private_tmp();
        let file = tmp.path().join("server.json");
        assert!(!check_private_file(&file, false).unwrap());
        fs::write(&file, "{}").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(check_private_file(&file, false).unwrap());
        for mode in [0o644, 0o640, 0o604, 0o660] {
            fs::set_permissions(&file, fs::Permissions::from_mode(mode)).unwrap();
            let message = check_private_file(&file, false).unwrap_err().to_string();
            assert!(
                message.contains("the group or others can read"),
                "{message}"
            );
        }
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
        let link = tmp.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let message = check_private_file(&link, false).unwrap_err().to_string();
        assert!(message.contains("symbolic link"), "{message}");
        // A regular file where a socket is expected.
        let message = check_private_file(&file, true).unwrap_err().to_string();
        assert!(message.contains("not a socket"), "{message}");
    }

    #[test]
    fn refuses_another_users_record() {
        // Only root can give a file away; elsewhere the check is covered by the uid comparison itself.
        if my_uid() != 0 {
            return;
        }
        let tmp = private_tmp();
        let file = tmp.path().join("server.json");
        fs::write(&file, "{}").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        let message = check_private_file(&file, false).unwrap_err().to_string();
        assert!(message.contains("another user (uid 65534)"), "{message}");
    }

    #[test]
    fn refuses_another_users_folder() {
        if my_uid() != 0 {
            return;
        }
        let tmp = private_tmp();
        let paths = SharedPaths::under(tmp.path(), &key("k"));
        paths.prepare().unwrap();
        std::os::unix::fs::chown(paths.dir(), Some(65534), Some(65534)).unwrap();
        let message = paths.prepare().unwrap_err().to_string();
        assert!(message.contains("another user (uid 65534)"), "{message}");
    }

    #[test]
    fn socket_path_limit() {
        let short = Path::new("/tmp/x/server.sock");
        check_socket_len(short).unwrap();
        let long = PathBuf::from(format!("/{}/server.sock", "d".repeat(120)));
        let err = check_socket_len(&long).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&format!("{} bytes", long.as_os_str().len())),
            "{message}"
        );
        assert!(message.contains("loopback HTTP transport"), "{message}");
        let exact = PathBuf::from(format!("/{}", "s".repeat(MAX_SOCKET_PATH - 1)));
        check_socket_len(&exact).unwrap();
    }
}

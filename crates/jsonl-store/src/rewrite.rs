//! Replacing a file whole, atomically.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::error::{Error, ErrorKind};
use crate::sys;

/// Replaces the file at `path` with `lines`, so that a crash at any moment leaves either the old file
/// or the new one, never a mix.
///
/// The lines (each with or without its newline; one holding a newline of its own is an error) go to a
/// new temporary file in the same folder, owner-only (`0o600`, whatever the old file's mode was),
/// which is `fsync`ed and renamed over the old file; then the folder is `fsync`ed so the rename itself
/// survives a power cut. A symbolic link at `path` is refused, and its target left alone. On an error the temporary file is
/// removed and the old file is unchanged; after a crash a `.<name>.*.tmp` file may be left beside it.
///
/// On Windows the temporary file is owner-only through its access list from its creation, the
/// rename replaces the old file (`MoveFileExW` with `MOVEFILE_REPLACE_EXISTING`, which fails while
/// another program holds the old file open without sharing delete access), and the folder is not
/// synced, which Windows does not offer; any reparse point at `path`, a junction too, is refused.
pub fn rewrite<I>(path: impl AsRef<Path>, lines: I) -> Result<(), Error>
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    rewrite_with_hook(path, lines, |_| {})
}

/// Like [`rewrite`], serializing each of `values` as one JSON line.
pub fn rewrite_values<T, I>(path: impl AsRef<Path>, values: I) -> Result<(), Error>
where
    T: Serialize,
    I: IntoIterator<Item = T>,
{
    let path = path.as_ref();
    let lines = values
        .into_iter()
        .map(|v| {
            serde_json::to_vec(&v).map_err(|e| {
                Error::from(ErrorKind::Serialize {
                    path: path.to_owned(),
                    message: e.to_string(),
                })
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    rewrite(path, lines)
}

/// [`rewrite`], calling `before_rename` with the temporary file's path once it is written and synced:
/// lets a test stop the process at the one moment that matters.
#[doc(hidden)]
pub fn rewrite_with_hook<I>(
    path: impl AsRef<Path>,
    lines: I,
    before_rename: impl FnOnce(&Path),
) -> Result<(), Error>
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    let path = path.as_ref();
    replace(
        path,
        |out| {
            for line in lines {
                let line = crate::engine::check_line(path, line.as_ref())?;
                out.write_all(line)
                    .and_then(|()| out.write_all(b"\n"))
                    .map_err(|e| Error::rewrite(path, "writing the temporary file", e))?;
            }
            Ok(())
        },
        before_rename,
    )
}

/// Replaces the file at `path` with what `fill` writes, atomically: the one way this crate replaces
/// a file. The temporary file is new (`O_EXCL`, no-follow) and owner-only ([`sys::create_temp`]); a
/// symbolic link at `path` is refused.
pub(crate) fn replace(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<(), Error>,
    before_rename: impl FnOnce(&Path),
) -> Result<(), Error> {
    match path.symlink_metadata() {
        Ok(meta) if sys::is_link(&meta) => {
            return Err(ErrorKind::Symlink {
                path: path.to_owned(),
            }
            .into());
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::rewrite(path, "reading the old file's type", e)),
    }
    let temp = temp_path(path);
    let result = write_temp(path, &temp, fill).and_then(|()| {
        before_rename(&temp);
        std::fs::rename(&temp, path)
            .map_err(|e| Error::rewrite(path, "renaming the temporary file into place", e))
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
        return result;
    }
    // The folder's fsync makes the rename itself durable; Windows offers none, so there it does nothing.
    sys::sync_dir(parent_dir(path))
        .map_err(|e| Error::rewrite(path, "syncing the folder after the rename", e))
}

fn write_temp(
    path: &Path,
    temp: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<(), Error>,
) -> Result<(), Error> {
    let file = sys::create_temp(path, temp)?;
    let mut out = BufWriter::with_capacity(256 * 1024, file);
    fill(&mut out)?;
    let file = out
        .into_inner()
        .map_err(|e| Error::rewrite(path, "writing the temporary file", e.into_error()))?;
    file.sync_all()
        .map_err(|e| Error::rewrite(path, "syncing the temporary file", e))
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn temp_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    parent_dir(path).join(format!(".{name}.{}.{nanos}.{n}.tmp", std::process::id()))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::fs::Permissions;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn replaces_the_file_and_makes_it_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, "old\n").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o640)).unwrap();
        rewrite(&path, ["{\"a\":1}", "{\"b\":2}\n"]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n"
        );
        assert_eq!(path.metadata().unwrap().mode() & 0o777, 0o600);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn a_new_file_is_owner_only_and_values_are_serialized() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.jsonl");
        rewrite_values(&path, [serde_json::json!({"x": 1}), serde_json::json!([2])]).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"x\":1}\n[2]\n");
        assert_eq!(path.metadata().unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_bad_line_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, "old\n").unwrap();
        let err = rewrite(&path, ["{}", "{\n}"]).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::NewlineInLine { .. }),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.jsonl");
        std::fs::write(&target, "old\n").unwrap();
        let link = dir.path().join("l.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = rewrite(&link, ["{}"]).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Symlink { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old\n");
    }
}

//! File rules: owner-only mode, no symbolic links, no files of other users, the size cap on disk.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use calltape_jsonl_store::{ErrorKind, JsonlWriter, Options, SyncJsonlWriter};

use crate::{Rec, capture_logs, warnings};

/// Gives `path` the Unix mode `mode`. On Windows the file keeps the access list it inherited from its
/// folder, which lets others in just as well.
fn loosen(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
}

/// Asserts that `path` is owner-only: on Unix, that its mode is `mode` exactly; on Windows, that its
/// access list grants this user alone.
fn assert_owner_only(path: &Path, mode: u32) {
    assert!(
        calltape_jsonl_store::fs::is_owner_only(path).unwrap(),
        "{}",
        path.display()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::metadata(path).unwrap();
        // A folder may inherit the setgid bit of the one above; only its permission bits count.
        let bits = if meta.is_dir() { 0o777 } else { 0o7777 };
        assert_eq!(meta.mode() & bits, mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
}

#[tokio::test]
async fn a_new_file_is_created_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.jsonl");
    let writer = JsonlWriter::open(&path, Options::default()).await;
    writer.append(&Rec::new(1, 1, 3));
    let report = writer.close().await;
    assert_eq!(report.lines_written, 1);
    assert_owner_only(&path, 0o600);
}

#[tokio::test]
async fn an_existing_0644_file_is_0600_after_the_first_line_and_keeps_its_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.jsonl");
    fs::write(&path, "{\"old\":true}\n").unwrap();
    loosen(&path, 0o644);
    let writer = JsonlWriter::open(&path, Options::default()).await;
    writer.append_line("{\"new\":true}");
    writer.close().await;
    assert_owner_only(&path, 0o600);
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"old\":true}\n{\"new\":true}\n"
    );
}

#[test]
fn the_sync_writer_sets_the_mode_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.jsonl");
    fs::write(&path, "").unwrap();
    loosen(&path, 0o666);
    let writer = SyncJsonlWriter::open(&path, Options::default());
    writer.append(&Rec::new(0, 0, 0));
    assert_eq!(writer.close().lines_written, 1);
    assert_owner_only(&path, 0o600);
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_is_refused_and_its_target_untouched() {
    use std::fs::Permissions;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    capture_logs();
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.jsonl");
    fs::write(&target, "{\"keep\":1}\n").unwrap();
    fs::set_permissions(&target, Permissions::from_mode(0o644)).unwrap();
    let dangling = dir.path().join("dangling-target.jsonl");
    for (name, points_at) in [("link.jsonl", &target), ("dangling.jsonl", &dangling)] {
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(points_at, &link).unwrap();
        let writer = JsonlWriter::open(&link, Options::default()).await;
        writer.append_line("{}");
        writer.append_line("{}");
        let report = writer.close().await;
        assert_eq!(
            (report.lines_written, report.dropped.refused),
            (0, 2),
            "{report}"
        );
        let error = report.first_error.expect("the refusal is in the report");
        assert!(matches!(error.kind(), ErrorKind::Symlink { .. }), "{error}");
        assert_eq!(warnings(&link, "file_refused"), 1);
    }
    assert_eq!(fs::read_to_string(&target).unwrap(), "{\"keep\":1}\n");
    assert_eq!(fs::metadata(&target).unwrap().mode() & 0o7777, 0o644);
    assert!(
        !dangling.exists(),
        "no file was created through the dangling link"
    );
}

/// The rule: a file not owned by this process's effective user is refused, whatever its mode, even
/// for root (who could change it). Without root, a file this user cannot open for writing stands in.
#[cfg(unix)]
#[tokio::test]
async fn a_file_of_another_user_is_refused_and_left_untouched() {
    use std::fs::Permissions;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    capture_logs();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("theirs.jsonl");
    fs::write(&path, "{\"theirs\":1}\n").unwrap();
    fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
    let as_root = std::os::unix::fs::chown(&path, Some(65534), Some(65534)).is_ok();
    if !as_root {
        fs::set_permissions(&path, Permissions::from_mode(0o444)).unwrap();
    }
    let before = fs::metadata(&path).unwrap();

    let writer = JsonlWriter::open(&path, Options::default()).await;
    for i in 0..10 {
        writer.append(&Rec::new(0, i, 10));
    }
    let report = writer.close().await;
    let sync_report = {
        let writer = SyncJsonlWriter::open(&path, Options::default());
        writer.append(&Rec::new(0, 0, 10));
        writer.close()
    };

    for report in [&report, &sync_report] {
        assert_eq!(report.lines_written, 0, "{report}");
        assert_eq!(report.dropped.refused, report.dropped.total());
        let error = report.first_error.as_ref().expect("the refusal is named");
        if as_root {
            assert!(
                matches!(
                    error.kind(),
                    ErrorKind::NotOwner { owner, user, .. }
                        if owner == "uid 65534" && user == "uid 0"
                ),
                "{error}"
            );
            assert!(error.to_string().contains("owned by uid 65534"), "{error}");
        } else {
            assert!(matches!(error.kind(), ErrorKind::Open { .. }), "{error}");
        }
    }
    assert_eq!(report.dropped.refused, 10);
    let after = fs::metadata(&path).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "{\"theirs\":1}\n");
    assert_eq!(
        (after.mode(), after.uid(), after.len()),
        (before.mode(), before.uid(), before.len())
    );
    assert_eq!(warnings(&path, "file_refused"), 2, "once per writer");
}

#[tokio::test]
async fn a_missing_folder_is_refused_unless_create_dirs_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/calls.jsonl");
    let writer = JsonlWriter::open(&path, Options::default()).await;
    writer.append_line("{}");
    let report = writer.close().await;
    assert_eq!(report.dropped.refused, 1);
    assert!(matches!(
        report.first_error.unwrap().kind(),
        ErrorKind::Open { .. }
    ));

    let writer = JsonlWriter::open(&path, Options::default().create_dirs(true)).await;
    writer.append_line("{}");
    assert_eq!(writer.close().await.lines_written, 1);
    assert_owner_only(&dir.path().join("a"), 0o700);
}

/// `max_bytes` counts the file's size on disk, so lines another writer appended count too.
#[tokio::test]
async fn the_size_cap_counts_lines_of_another_writer() {
    capture_logs();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.jsonl");
    let mut other = OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .unwrap();
    let other_line = |n: usize| format!("{}\n", "o".repeat(n - 1));
    other.write_all(other_line(3000).as_bytes()).unwrap();

    let line = "w".repeat(100); // 101 bytes with its newline
    let writer = JsonlWriter::open(&path, Options::default().max_bytes(10_000)).await;
    for _ in 0..20 {
        writer.append_line(line.clone());
    }
    let report = writer.flush().await;
    assert_eq!((report.lines_written, report.bytes_on_disk), (20, 5020));

    other.write_all(other_line(3000).as_bytes()).unwrap();
    for _ in 0..50 {
        writer.append_line(line.clone());
    }
    let report = writer.close().await;
    // 8020 bytes were on disk: room for 19 more lines (1919 bytes), the 20th would cross 10,000.
    assert_eq!(report.lines_written, 39, "{report}");
    assert_eq!(report.dropped.size_cap, 31, "{report}");
    assert_eq!(report.bytes_on_disk, 9939);
    assert_eq!(fs::metadata(&path).unwrap().len(), 9939);
    assert!(report.first_error.is_none(), "reaching the cap is no error");
    assert_eq!(warnings(&path, "size_cap"), 1);
}

#[test]
fn the_sync_writer_keeps_the_cap_against_another_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared-sync.jsonl");
    let writer = SyncJsonlWriter::open(&path, Options::default().max_bytes(500));
    let mut other = OpenOptions::new().append(true).open(&path).unwrap();
    let mut written_by_other = 0;
    for i in 0..40 {
        writer.append_line(format!("{{\"i\":{i:04}}}")); // 11 bytes with its newline
        if i % 2 == 0 {
            written_by_other += other.write(b"{\"other\":1}\n").unwrap();
        }
    }
    let report = writer.close();
    let size = fs::metadata(&path).unwrap().len();
    assert!(report.dropped.size_cap > 0, "{report}");
    assert_eq!(report.lines_written + report.dropped.size_cap, 40);
    assert_eq!(report.lines_written * 11 + written_by_other as u64, size);
}

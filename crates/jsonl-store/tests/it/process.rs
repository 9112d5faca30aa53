//! Several processes, and processes killed with SIGKILL: real children (this binary, re-run).

use std::fs::{self, OpenOptions};
use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use calltape_jsonl_store::{JsonlReader, JsonlWriter, Options, SyncJsonlWriter, rewrite_with_hook};

use crate::{Rec, child_role, spawn_child, wait_for};

const LINES_PER_PROCESS: usize = 10_000;

fn child_path() -> PathBuf {
    PathBuf::from(std::env::var_os("CALLTAPE_JSONL_PATH").expect("CALLTAPE_JSONL_PATH is set"))
}

/// Sleeps until the parent kills this child; exits on its own after two minutes, should the parent
/// have died first.
fn wait_to_be_killed() -> ! {
    std::thread::sleep(Duration::from_secs(120));
    std::process::exit(3);
}

fn ready_marker(path: &Path) -> PathBuf {
    path.with_extension("ready")
}

/// Four processes append 10,000 lines each to one file, two through the async writer and two through
/// the sync one; lines vary from about 40 bytes to 2 KB so that some writes are large.
#[test]
fn four_processes_append_without_interleaving_inside_a_line() {
    if let Some(role) = child_role() {
        let id: usize = role.strip_prefix("append-").unwrap().parse().unwrap();
        let path = child_path();
        let options = Options::default()
            .max_bytes(1 << 30)
            .fsync(calltape_jsonl_store::Fsync::Never);
        let pad = |seq: usize| (seq * 7919 + id * 31) % 2000;
        let report = if id.is_multiple_of(2) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let writer = JsonlWriter::open(&path, options).await;
                for seq in 0..LINES_PER_PROCESS {
                    writer.append(&Rec::new(id, seq, pad(seq)));
                    if seq % 500 == 0 {
                        // Keep the queue well under its budget so no line is dropped.
                        writer.flush().await;
                    }
                }
                writer.close().await
            })
        } else {
            let writer = SyncJsonlWriter::open(&path, options);
            for seq in 0..LINES_PER_PROCESS {
                writer.append(&Rec::new(id, seq, pad(seq)));
            }
            writer.close()
        };
        assert!(report.is_complete(), "{report}");
        assert_eq!(report.lines_written, LINES_PER_PROCESS as u64);
        return;
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("four.jsonl");
    let children: Vec<_> = (0..4)
        .map(|id| {
            spawn_child(
                "process::four_processes_append_without_interleaving_inside_a_line",
                &format!("append-{id}"),
                &path,
            )
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child failed");
    }

    let mut next_seq = [0usize; 4];
    let mut count = 0;
    for item in JsonlReader::<Rec>::open(&path).unwrap() {
        let (line, rec) = item.unwrap_or_else(|e| panic!("every line parses: {e}"));
        assert_eq!(
            rec.seq, next_seq[rec.id],
            "line {line}: each process's lines keep their order"
        );
        assert_eq!(rec.pad.len(), (rec.seq * 7919 + rec.id * 31) % 2000);
        next_seq[rec.id] += 1;
        count += 1;
    }
    assert_eq!(count, 4 * LINES_PER_PROCESS);
    assert_eq!(next_seq, [LINES_PER_PROCESS; 4]);
    assert!(calltape_jsonl_store::fs::is_owner_only(&path).unwrap());
    #[cfg(unix)]
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
}

/// A child streaming lines is killed with SIGKILL at a moment of the OS's choosing: every line on
/// disk is complete and in order, and a cut last line, if any, reads as a truncated tail.
#[test]
fn sigkill_mid_stream_leaves_only_complete_lines() {
    if let Some(role) = child_role() {
        assert_eq!(role, "stream");
        let path = child_path();
        let writer = SyncJsonlWriter::open(&path, Options::default().max_bytes(1 << 30));
        // Bounded, so a child whose parent died does not fill the disk.
        for seq in 0..2_000_000 {
            writer.append(&Rec::new(0, seq, seq % 300));
            if seq == 2000 {
                fs::write(ready_marker(&path), "").unwrap();
            }
        }
        return;
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stream.jsonl");
    let mut child = spawn_child(
        "process::sigkill_mid_stream_leaves_only_complete_lines",
        "stream",
        &path,
    );
    wait_for("the child to write 2000 lines", || {
        ready_marker(&path).exists()
    });
    std::thread::sleep(Duration::from_millis(20));
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success());

    let mut seq = 0;
    let mut tail = None;
    for item in JsonlReader::<Rec>::open(&path).unwrap() {
        match item {
            Ok((line, rec)) => {
                assert_eq!((line, rec.seq), (seq + 1, seq));
                seq += 1;
            }
            Err(e) => {
                assert!(e.is_truncated_tail(), "only the last line may be cut: {e}");
                tail = Some(e);
            }
        }
    }
    assert!(seq > 2000, "{seq} complete lines");
    if let Some(e) = tail {
        assert!(
            e.to_string()
                .contains(&format!(":{}: the last line is cut short", seq + 1)),
            "{e}"
        );
    }
}

/// A child is killed in the middle of a line (it has written part of one, as a write cut short by a
/// crash does): the reader returns every complete line and then `TruncatedTail`.
#[test]
fn a_child_killed_mid_line_reads_as_complete_lines_then_truncated_tail() {
    if let Some(role) = child_role() {
        assert_eq!(role, "torn");
        let path = child_path();
        let writer = SyncJsonlWriter::open(&path, Options::default());
        for seq in 0..1000 {
            writer.append(&Rec::new(0, seq, 150));
        }
        drop(writer);
        let half = serde_json::to_string(&Rec::new(0, 1000, 150)).unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(&half.as_bytes()[..half.len() / 2]).unwrap();
        fs::write(ready_marker(&path), "").unwrap();
        wait_to_be_killed();
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("torn.jsonl");
    let mut child = spawn_child(
        "process::a_child_killed_mid_line_reads_as_complete_lines_then_truncated_tail",
        "torn",
        &path,
    );
    wait_for("the child to cut a line", || ready_marker(&path).exists());
    child.kill().unwrap();
    child.wait().unwrap();

    let items: Vec<_> = JsonlReader::<Rec>::open(&path).unwrap().collect();
    assert_eq!(items.len(), 1001);
    for (i, item) in items[..1000].iter().enumerate() {
        let (line, rec) = item.as_ref().unwrap();
        assert_eq!((*line, rec.seq), (i + 1, i));
    }
    let tail = items[1000].as_ref().unwrap_err();
    assert!(tail.is_truncated_tail(), "{tail}");
    let message = tail.to_string();
    assert!(
        message.starts_with(&format!(
            "{}:1001: the last line is cut short",
            path.display()
        )),
        "{message}"
    );

    // A writer opened after the crash ends the cut line first, so its own lines stay whole.
    let writer = SyncJsonlWriter::open(&path, Options::default());
    writer.append(&Rec::new(1, 0, 5));
    assert_eq!(writer.close().lines_written, 1);
    let items: Vec<_> = JsonlReader::<Rec>::open(&path).unwrap().collect();
    assert_eq!(items.len(), 1002);
    let cut = items[1000].as_ref().unwrap_err();
    assert!(
        !cut.is_truncated_tail() && cut.to_string().contains(":1001:"),
        "{cut}"
    );
    assert_eq!(items[1001].as_ref().unwrap(), &(1002, Rec::new(1, 0, 5)));
}

/// A rewrite killed after writing and syncing its temporary file but before the rename leaves the old
/// file exactly as it was.
#[test]
fn a_rewrite_killed_before_its_rename_leaves_the_old_file_intact() {
    if let Some(role) = child_role() {
        assert_eq!(role, "rewrite");
        let path = child_path();
        let lines: Vec<String> = (0..5000).map(|i| format!("{{\"new\":{i}}}")).collect();
        rewrite_with_hook(&path, &lines, |temp| {
            fs::write(ready_marker(&path), temp.as_os_str().as_encoded_bytes()).unwrap();
            wait_to_be_killed();
        })
        .unwrap();
        return;
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cassette.jsonl");
    let old: String = (0..100).map(|i| format!("{{\"old\":{i}}}\n")).collect();
    fs::write(&path, &old).unwrap();
    #[cfg(unix)]
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();

    let mut child = spawn_child(
        "process::a_rewrite_killed_before_its_rename_leaves_the_old_file_intact",
        "rewrite",
        &path,
    );
    let marker = ready_marker(&path);
    wait_for("the child to reach the rename", || {
        fs::read(&marker).map(|b| !b.is_empty()).unwrap_or(false)
    });
    let temp = PathBuf::from(String::from_utf8(fs::read(&marker).unwrap()).unwrap());
    child.kill().unwrap();
    child.wait().unwrap();

    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        old,
        "the old file is intact"
    );
    #[cfg(unix)]
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o640);
    let written = fs::read_to_string(&temp).unwrap();
    assert_eq!(
        written.lines().count(),
        5000,
        "the new content was complete, only the rename was missing"
    );
    assert!(
        calltape_jsonl_store::fs::is_owner_only(&temp).unwrap(),
        "the temporary file is owner-only, whatever the old file's mode"
    );
    #[cfg(unix)]
    assert_eq!(
        fs::metadata(&temp).unwrap().mode() & 0o777,
        0o600,
        "the temporary file is owner-only, whatever the old file's mode"
    );

    // A later rewrite still works, and leaves the killed one's leftover alone.
    calltape_jsonl_store::rewrite(&path, ["{\"new\":0}"]).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "{\"new\":0}\n");
}

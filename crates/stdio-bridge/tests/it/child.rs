//! The child-process upstream on its own: stopping, process groups, startup failures.

use std::time::Duration;

use calltape_stdio_bridge::{ChildUpstream, ErrorKind, Stderr, Upstream, UpstreamEvent};
use rustix::process::{Pid, test_kill_process_group};

fn group_alive(pid: u32) -> bool {
    let pid = Pid::from_raw(i32::try_from(pid).expect("pid")).expect("nonzero pid");
    test_kill_process_group(pid).is_ok()
}

async fn child_pid(events: &mut tokio::sync::mpsc::Receiver<UpstreamEvent>) -> u32 {
    let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("the child wrote its pid")
        .expect("an event");
    let UpstreamEvent::Message(frame) = event else {
        panic!("expected a message, got {event:?}");
    };
    let value: serde_json::Value = serde_json::from_slice(&frame).expect("json");
    u32::try_from(value["pid"].as_u64().expect("pid")).expect("pid fits")
}

#[tokio::test]
async fn close_kills_a_group_that_ignores_stdin_and_sigterm() {
    // The shell ignores SIGTERM and keeps a grandchild in its group, which must go too.
    let upstream = ChildUpstream::new([
        "sh",
        "-c",
        r#"trap '' TERM; sleep 300 & echo "{\"pid\":$$}"; while :; do sleep 1; done"#,
    ])
    .expect("argv");
    let link = upstream.connect().await.expect("spawned");
    let mut events = link.events;
    let pid = child_pid(&mut events).await;
    assert!(group_alive(pid));
    (link.close)().await;
    // Killed members may linger as zombies for a moment until init reaps them.
    let mut alive = group_alive(pid);
    for _ in 0..100 {
        if !alive {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        alive = group_alive(pid);
    }
    assert!(!alive, "the child's process group survived close");
}

#[tokio::test]
async fn a_child_that_exits_reports_closed_with_its_status() {
    let upstream = ChildUpstream::new([
        "sh",
        "-c",
        r#"echo '{"jsonrpc":"2.0","method":"hi"}'; exit 7"#,
    ])
    .expect("argv")
    .stderr(Stderr::Null);
    let link = upstream.connect().await.expect("spawned");
    let mut events = link.events;
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        seen.push(event);
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(matches!(&seen[0], UpstreamEvent::Message(f) if f.starts_with(b"{\"jsonrpc\"")));
    assert!(
        matches!(&seen[1], UpstreamEvent::Closed { reason } if reason == "exited with status 7"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn stderr_goes_to_the_log_file_and_lines_that_are_not_json_are_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("child.log");
    let upstream = ChildUpstream::new([
        "sh",
        "-c",
        r#"echo 'starting up' >&2; echo 'not json'; echo '{"id":1,"result":{}}'"#,
    ])
    .expect("argv")
    .stderr(Stderr::File(log.clone()));
    let link = upstream.connect().await.expect("spawned");
    let mut events = link.events;
    let mut messages = Vec::new();
    while let Some(event) = events.recv().await {
        if let UpstreamEvent::Message(frame) = event {
            messages.push(frame);
        }
    }
    assert_eq!(
        messages,
        vec![bytes::Bytes::from_static(b"{\"id\":1,\"result\":{}}")]
    );
    assert_eq!(std::fs::read_to_string(&log).expect("log"), "starting up\n");
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error_naming_it() {
    let upstream = ChildUpstream::new(["/nonexistent/calltape-test-server"]).expect("argv");
    let error = upstream.connect().await.expect_err("nothing to run");
    assert!(matches!(error.kind(), ErrorKind::Spawn { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with("cannot start `/nonexistent/calltape-test-server`"),
        "{error}"
    );
    assert!(ChildUpstream::new(Vec::<String>::new()).is_err());
    assert_eq!(
        ChildUpstream::new(["node", "server.js"])
            .expect("argv")
            .describe(),
        "child `node server.js`"
    );
}

#[tokio::test]
async fn a_stderr_file_is_owner_only_and_never_opened_through_a_link() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("target.txt");
    std::fs::write(&target, "the user's own file\n").expect("target");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).expect("mode");
    let link = dir.path().join("child.log");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let upstream = ChildUpstream::new(["sh", "-c", "echo 'Bearer sk-from-the-child' >&2"])
        .expect("argv")
        .stderr(Stderr::File(link.clone()));
    let Err(err) = upstream.connect().await else {
        panic!("a log file planted as a link was opened");
    };
    let message = err.to_string();
    assert!(
        message.contains(&link.display().to_string()) && message.contains("symbolic link"),
        "{message}"
    );
    assert_eq!(
        std::fs::read_to_string(&target).expect("target"),
        "the user's own file\n"
    );
    assert_eq!(
        std::fs::metadata(&target).expect("meta").mode() & 0o777,
        0o644
    );

    let log = dir.path().join("new.log");
    let upstream = ChildUpstream::new(["sh", "-c", "echo started >&2"])
        .expect("argv")
        .stderr(Stderr::File(log.clone()));
    let link = upstream.connect().await.expect("spawned");
    let mut events = link.events;
    while events.recv().await.is_some() {}
    assert_eq!(std::fs::metadata(&log).expect("log").mode() & 0o777, 0o600);
}

/// A writer that keeps what it is given, and counts its flushes.
#[derive(Clone, Default)]
struct Kept(std::sync::Arc<std::sync::Mutex<(Vec<u8>, usize)>>);

impl std::io::Write for Kept {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().expect("lock").1 += 1;
        Ok(())
    }
}

#[tokio::test]
async fn stderr_reaches_a_shared_writer_whole_before_the_exit_is_reported() {
    let kept = Kept::default();
    let writer = calltape_stdio_bridge::SharedWriter::new(kept.clone());
    // Two children in turn write through the same writer, the second one's last line unended.
    for (n, script) in [
        "i=0; while [ $i -lt 2000 ]; do echo \"first $i\" >&2; i=$((i+1)); done",
        "echo second >&2; printf 'no newline' >&2; exit 3",
    ]
    .into_iter()
    .enumerate()
    {
        let upstream = ChildUpstream::new(["sh", "-c", script])
            .expect("argv")
            .stderr(Stderr::Writer(writer.clone()));
        let link = upstream.connect().await.expect("spawned");
        let mut events = link.events;
        let mut closed = false;
        while let Some(event) = events.recv().await {
            closed |= matches!(event, UpstreamEvent::Closed { .. });
        }
        assert!(closed);
        let (text, flushes) = kept.0.lock().expect("lock").clone();
        let text = String::from_utf8(text).expect("utf-8");
        assert_eq!(flushes, n + 1, "each child's copy ends with a flush");
        assert!(text.starts_with("first 0\nfirst 1\n"), "{text}");
        assert!(text.contains("first 1999\n"), "{}", text.len());
        if n == 1 {
            assert!(text.ends_with("first 1999\nsecond\nno newline"), "{text}");
        }
    }
}

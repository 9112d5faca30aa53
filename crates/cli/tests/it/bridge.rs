//! `calltape bridge` against real peers: the official Python MCP SDK as the client and the reference
//! `mcp-server-everything` as the stdio server.

use std::{
    io::Write,
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

use serde_json::Value;

use crate::support::{calltape, everything, peer_script, python};

fn calltape_bin() -> &'static str {
    env!("CARGO_BIN_EXE_calltape")
}

/// Runs the Python client's `scenario` against `command` and returns what it printed.
fn client(scenario: &str, args: &[&str], command: &[&Path]) -> Value {
    let script = peer_script("bridge_client.py");
    let output = Command::new(python())
        .arg(script)
        .arg(scenario)
        .args(args)
        .arg("--")
        .args(command)
        .env_remove("CALLTAPE_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python client failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("the client printed no JSON ({e}):\n{stdout}\n{stderr}"))
}

fn bridged(server: &Path) -> Vec<&Path> {
    vec![
        Path::new(calltape_bin()),
        Path::new("bridge"),
        Path::new("--"),
        server,
        Path::new("stdio"),
    ]
}

#[test]
fn the_four_calls_answer_the_same_through_the_bridge() {
    let server = everything();
    let direct = client("calls", &[], &[&server, Path::new("stdio")]);
    let through = client("calls", &[], &bridged(&server));
    assert_eq!(through["server"], direct["server"]);
    assert!(
        through["tools"]
            .as_array()
            .expect("tools")
            .contains(&Value::from("echo")),
        "{through}"
    );
    assert_eq!(
        through["echo"]["content"][0]["text"],
        "Echo: hello through the bridge"
    );
    assert!(
        through["resource"]["contents"][0]["text"]
            .as_str()
            .expect("resource text")
            .contains("Architecture")
    );
    assert_eq!(through, direct);
}

#[test]
fn a_killed_server_is_restarted_and_the_next_calls_succeed() {
    let server = everything();
    let result = client("killed", &[], &bridged(&server));
    assert_eq!(result["before"], "Echo: before");
    assert_eq!(
        result["after"],
        serde_json::json!(["Echo: after 0", "Echo: after 1", "Echo: after 2"]),
        "{result}"
    );
    assert_eq!(result["errors"], serde_json::json!([]));
    assert_ne!(result["killed"], result["restarted"]);
    let notes: Vec<&str> = result["notifications"]
        .as_array()
        .expect("notifications")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // server-everything declares listChanged for all three lists.
    for list in ["tools", "resources", "prompts"] {
        let method = format!("notifications/{list}/list_changed");
        assert!(
            notes.contains(&method.as_str()),
            "{method} missing: {notes:?}"
        );
    }
}

#[test]
fn a_server_that_appears_three_seconds_late_answers_the_first_call() {
    let server = everything();
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("server.sh");
    let placed = script.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(3));
        let staging = placed.with_extension("tmp");
        let mut file = std::fs::File::create(&staging).expect("create");
        writeln!(file, "#!/bin/sh\nexec '{}' stdio", server.display()).expect("write");
        drop(file);
        let mut permissions = std::fs::metadata(&staging).expect("metadata").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&staging, permissions).expect("chmod");
        std::fs::rename(&staging, &placed).expect("rename");
    });
    let result = client(
        "late",
        &[],
        &[
            Path::new(calltape_bin()),
            Path::new("bridge"),
            Path::new("--"),
            &script,
        ],
    );
    writer.join().expect("writer");
    assert_eq!(result["first"], "Echo: first", "{result}");
    assert!(result["server"].as_str().is_some_and(|s| !s.is_empty()));
}

#[test]
fn a_watched_file_change_restarts_the_server_and_announces_the_change() {
    let server = everything();
    let dir = tempfile::tempdir().expect("tempdir");
    let touched = dir.path().join("src.txt");
    std::fs::write(&touched, "v1").expect("write");
    let watch = dir.path().to_path_buf();
    let result = client(
        "watch",
        &[touched.to_str().expect("utf-8 path")],
        &[
            Path::new(calltape_bin()),
            Path::new("bridge"),
            Path::new("--watch"),
            &watch,
            Path::new("--"),
            &server,
            Path::new("stdio"),
        ],
    );
    assert_eq!(result["before"], "Echo: before");
    assert_eq!(result["after"], "Echo: after", "{result}");
    assert_eq!(result["errors"], serde_json::json!([]));
    let notes: Vec<&str> = result["notifications"]
        .as_array()
        .expect("notifications")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes.contains(&"notifications/tools/list_changed"),
        "{notes:?}"
    );
}

#[test]
fn malformed_lines_and_a_100_mb_line_are_answered_and_memory_stays_bounded() {
    let server = everything();
    let result = client("malformed", &[], &bridged(&server));
    assert_eq!(
        result["reasons"],
        serde_json::json!({ "parse_error": 500, "not_object": 500, "frame_too_large": 1 }),
        "{result}"
    );
    assert_eq!(result["initialize"], true);
    assert_eq!(result["call"], "Echo: still alive");
    assert_eq!(
        result["big_answered"], false,
        "the oversized request got an id-less error only"
    );
    assert_eq!(result["exit"], 0);
    let peak = result["peak_rss_kib"].as_u64().expect("peak RSS");
    assert!(peak < 100 * 1024, "the bridge's peak RSS was {peak} KiB");
}

#[test]
fn the_child_dies_with_the_bridge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("child.pid");
    let mut bridge = calltape()
        .args(["bridge", "--", "sh", "-c"])
        .arg(format!(
            "echo $$ > '{}'; exec sleep 300",
            pid_file.display()
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start the bridge");
    let pid = wait_for_pid(&pid_file);
    assert!(!gone_now(pid));
    bridge.kill().expect("SIGKILL the bridge");
    bridge.wait().expect("reap the bridge");
    assert!(gone(pid), "the child {pid} outlived the bridge");
}

#[test]
fn stdin_ending_stops_the_child_and_exits_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("child.pid");
    let mut bridge = calltape()
        .args(["bridge", "--", "sh", "-c"])
        .arg(format!(
            "echo $$ > '{}'; trap '' TERM; while read line; do :; done; sleep 300",
            pid_file.display()
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the bridge");
    let pid = wait_for_pid(&pid_file);
    drop(bridge.stdin.take());
    let status = bridge.wait().expect("the bridge exits");
    assert!(status.success(), "{status}");
    // The child ignored both its stdin closing and SIGTERM; it is gone all the same.
    assert!(gone(pid), "the child {pid} outlived the bridge");
}

#[test]
fn sigterm_stops_the_child_and_exits_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("child.pid");
    let mut bridge = calltape()
        .args(["bridge", "--", "sh", "-c"])
        .arg(format!(
            "echo $$ > '{}'; while read line; do :; done",
            pid_file.display()
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the bridge");
    let pid = wait_for_pid(&pid_file);
    let status = Command::new("kill")
        .args(["-TERM", &bridge.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    // stdin is still open: the signal alone ends the session.
    let status = bridge.wait().expect("the bridge exits");
    assert!(status.success(), "{status}");
    assert!(gone(pid), "the child {pid} outlived the bridge");
}

fn wait_for_pid(pid_file: &Path) -> u32 {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(pid_file)
            && let Ok(found) = text.trim().parse::<u32>()
        {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the child never wrote {}", pid_file.display());
}

fn gone_now(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether the process is gone (waiting a while for it to be reaped).
fn gone(pid: u32) -> bool {
    for _ in 0..200 {
        if gone_now(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let output = calltape()
        .args(["bridge", "--header", "A: b", "--", "true"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("--header and --header-file apply to --url and --socket"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = calltape()
        .args(["bridge", "--restart-deadline", "soon", "--", "true"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid duration `soon`"));
    assert!(output.stdout.is_empty(), "stdout is for JSON-RPC only");
}

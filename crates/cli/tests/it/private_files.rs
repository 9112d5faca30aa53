//! Every file the `calltape` binary writes beside a recording (logs, reports, token files, the demo's
//! folder, the shared server's log): owner-only, never written through a symbolic link planted at its
//! path, and for logs, redacted.

use std::{
    io::{BufRead, BufReader, Write},
    os::unix::fs::{MetadataExt, PermissionsExt, symlink},
    path::{Path, PathBuf},
    process::{Output, Stdio},
    time::{Duration, Instant},
};

use calltape_stdio_bridge::shared::{SharedKey, SharedPaths};

use crate::support::{calltape, peer_script, python, stop_shared_server};

const BEARER: &str = "Bearer tok-Zq8vLw3nRt6yUe2pXa9sDf4g";
const KEY: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz012345";

/// A shell script that logs a server's credentials on stderr, as a careless server does.
fn leaky_script() -> String {
    format!(
        "echo 'GET /v1/models Authorization: {BEARER}' >&2; echo 'using key {KEY}' >&2; \
         echo 'secrets logged' >&2"
    )
}

fn assert_redacted(log: &str) {
    assert!(log.contains("secrets logged"), "{log}");
    assert!(log.contains("[REDACTED]"), "{log}");
    assert!(!log.contains("tok-Zq8vLw3nRt6yUe2pXa9sDf4g"), "{log}");
    assert!(!log.contains("abcdefghijklmnopqrstuvwxyz012345"), "{log}");
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

/// A file the user owns that a planted link points at: every test checks it is left as it was.
fn target(dir: &Path) -> PathBuf {
    let target = dir.join("target.txt");
    std::fs::write(&target, "the user's own file\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    target
}

fn assert_untouched(target: &Path) {
    assert_eq!(
        std::fs::read_to_string(target).unwrap(),
        "the user's own file\n"
    );
    assert_eq!(mode(target), 0o644);
}

/// Checks that a run refused the link at `link` by name, with a usage error, and left its target.
fn assert_refused(output: &Output, link: &Path, target: &Path) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&link.display().to_string()) && stderr.contains("symbolic link"),
        "{stderr}"
    );
    assert_untouched(target);
}

fn bridge_with_log(log: &Path) -> Output {
    calltape()
        // At debug level the bridge logs the child's command line, credentials and all.
        .env("CALLTAPE_LOG", "debug")
        .args(["bridge", "--log"])
        .arg(log)
        .args(["--", "sh", "-c"])
        .arg(leaky_script())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn bridge_log_holds_the_childs_stderr_redacted_and_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bridge.log");
    let output = bridge_with_log(&log);
    assert!(output.status.success(), "{output:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("started child `sh -c"), "{text}");
    assert_redacted(&text);
    assert_eq!(mode(&log), 0o600);
}

#[test]
fn bridge_log_is_never_written_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = target(dir.path());
    let log = dir.path().join("bridge.log");
    symlink(&target, &log).unwrap();
    assert_refused(&bridge_with_log(&log), &log, &target);
}

fn private_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    home
}

/// Starts a `calltape shared` session whose server logs credentials, and returns the first answer.
fn shared_session(home: &Path, stderr: Stdio) -> (std::process::Child, String) {
    let server = peer_script("shared_server.py");
    let mut session = calltape()
        .args(["shared", "--key", "k", "--", "sh", "-c"])
        .arg(format!("{}; exec \"$0\" \"$1\"", leaky_script()))
        .arg(python())
        .arg(server)
        .env("CALLTAPE_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut stdin = session.stdin.take().unwrap();
    stdin
        .write_all(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        )
        .unwrap();
    stdin.write_all(b"\n").unwrap();
    let mut line = String::new();
    BufReader::new(session.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    (session, line)
}

#[test]
fn the_shared_servers_log_holds_its_childs_stderr_redacted() {
    let home = private_home();
    let paths = SharedPaths::under(home.path(), &SharedKey::new("k").unwrap());
    let (mut session, answer) = shared_session(home.path(), Stdio::null());
    let _ = session.wait();
    assert!(answer.contains("serverInfo"), "{answer}");
    // The copy runs beside the server: wait for the last line the child logged before its start.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut log = String::new();
    while !log.contains("secrets logged") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(25));
        log = std::fs::read_to_string(paths.log()).unwrap_or_default();
    }
    stop_shared_server(&paths);
    assert_redacted(&log);
    assert_eq!(mode(&paths.log()), 0o600);
}

#[test]
fn no_file_of_the_shared_server_is_written_through_a_link() {
    for name in ["server.log", "server.json", "server.lock", "start.lock"] {
        let home = private_home();
        let paths = SharedPaths::under(home.path(), &SharedKey::new("k").unwrap());
        paths.prepare().unwrap();
        let target = target(home.path());
        let link = paths.dir().join(name);
        symlink(&target, &link).unwrap();
        let stderr_path = home.path().join("session.stderr");
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let (mut session, answer) = shared_session(home.path(), stderr.into());
        let _ = session.wait();
        stop_shared_server(&paths);
        let stderr = std::fs::read_to_string(&stderr_path).unwrap();
        assert!(
            answer.contains("shared_server_unavailable"),
            "{name}: {answer}"
        );
        assert!(
            stderr.contains(&link.display().to_string()) && stderr.contains("symbolic link"),
            "{name}: {stderr}"
        );
        assert_untouched(&target);
    }
}

/// A recording of one call to the built-in demo server.
fn recording(dir: &Path) -> PathBuf {
    let path = dir.join("calls.jsonl");
    std::fs::write(
        &path,
        r#"{"v":1,"at":"2026-11-29T20:47:00.000Z","session":"77aa0b1c","method":"resources/read","name":"demo://terms","answer":{"contents":[{"uri":"demo://terms","mimeType":"text/plain","text":"Quotes are valid for 15 minutes. Payments settle the next day."}]},"durationMs":0.5}
"#,
    )
    .unwrap();
    path
}

fn replay(file: &Path, extra: &[&std::ffi::OsStr]) -> Output {
    calltape()
        .arg("replay")
        .arg(file)
        .args(extra)
        .args(["--", env!("CARGO_BIN_EXE_calltape"), "demo-server", "1"])
        .output()
        .unwrap()
}

#[test]
fn replay_output_is_owner_only_and_never_written_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let file = recording(dir.path());
    let report = dir.path().join("report.txt");
    let out = replay(&file, &["--output".as_ref(), report.as_ref()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(std::fs::read_to_string(&report).unwrap().contains("1 same"));
    assert_eq!(mode(&report), 0o600);

    let target = target(dir.path());
    let link = dir.path().join("link.txt");
    symlink(&target, &link).unwrap();
    assert_refused(
        &replay(&file, &["--output".as_ref(), link.as_ref()]),
        &link,
        &target,
    );
}

#[test]
fn replay_update_never_rewrites_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let file = recording(dir.path());
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::read_to_string(&file).unwrap();
    let link = dir.path().join("link.jsonl");
    symlink(&file, &link).unwrap();
    let out = replay(&link, &["--update".as_ref()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&link.display().to_string()) && stderr.contains("symbolic link"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
    assert_eq!(mode(&file), 0o644, "the link's target keeps its mode");
}

/// Runs `calltape serve` with `--token-file token`; returns its output, and whether it was still
/// serving after a few seconds (then it is stopped).
fn serve_with_token_file(token: &Path) -> (Output, bool) {
    let mut serve = calltape()
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(token)
        .args(["--", "sh", "-c", "while read line; do :; done"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while serve.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(25));
    }
    let serving = serve.try_wait().unwrap().is_none();
    if serving {
        let _ = serve.kill();
    }
    (serve.wait_with_output().unwrap(), serving)
}

#[test]
fn serve_token_file_is_never_written_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = target(dir.path());
    let token = dir.path().join("token");
    symlink(&target, &token).unwrap();
    let (output, serving) = serve_with_token_file(&token);
    assert!(!serving, "serve went on with a link at its token file");
    assert_refused(&output, &token, &target);
    assert!(
        std::fs::symlink_metadata(&token)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was left for the user to look at"
    );
}

#[test]
fn the_demos_folder_is_owner_only_and_never_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let link = dir.path().join("demo");
    symlink(&elsewhere, &link).unwrap();
    let out = calltape()
        .arg("demo")
        .arg("--dir")
        .arg(&link)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&link.display().to_string()) && stderr.contains("symbolic link"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);

    let fresh = dir.path().join("new/demo");
    let out = calltape()
        .arg("demo")
        .arg("--dir")
        .arg(&fresh)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(mode(&fresh), 0o700);
    assert_eq!(mode(&fresh.join("calls.jsonl")), 0o600);
}

//! Helpers shared by the end-to-end tests.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A command for the `calltape` binary under test, with a quiet, colourless environment.
pub(crate) fn calltape() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_calltape"));
    cmd.env_remove("CALLTAPE_LOG").env("NO_COLOR", "1");
    cmd
}

/// The folder `.ci/install-peers` installed the real MCP peers into. Fails the test when it is missing:
/// a missing peer is a setup error, never a reason to skip.
pub(crate) fn peers() -> PathBuf {
    let dir = std::env::var_os("CALLTAPE_PEERS").map(PathBuf::from).unwrap_or_else(|| {
        panic!("CALLTAPE_PEERS is not set: run `eval \"$(.ci/install-peers --env)\"` first (.ci/run does)")
    });
    assert!(
        dir.join("venv/bin/python").exists(),
        "{} holds no Python peers: run .ci/install-peers",
        dir.display()
    );
    dir
}

/// The repository's root folder.
pub(crate) fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// Busy-loop child processes that keep the machine's cores busy while a test runs, as a loaded CI
/// runner would: one per core (at least two). Killed when dropped.
pub(crate) struct CpuLoad(Vec<Child>);

impl CpuLoad {
    pub(crate) fn start() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
        let children = (0..cores)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("start a busy-loop process")
            })
            .collect();
        Self(children)
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

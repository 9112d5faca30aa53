//! Helpers shared by the end-to-end tests.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use calltape_stdio_bridge::shared::{ServerRecord, SharedPaths};

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

/// The Python of the SDK 1.x peers, the handshake era's client and servers.
pub(crate) fn python() -> PathBuf {
    peers().join("venv/bin/python")
}

/// The Python of the SDK 2.x peers, which speak 2026-07-28. Fails the test when it is missing.
pub(crate) fn modern_python() -> PathBuf {
    installed(peers().join("venv2/bin/python"))
}

/// The reference "everything" server. Fails the test when it is missing.
pub(crate) fn everything() -> PathBuf {
    installed(peers().join("node/node_modules/.bin/mcp-server-everything"))
}

/// A published release of a reference server, as `.ci/install-peers` pins it side by side with
/// another (`filesystem-old`, `filesystem-new`, `everything-new`, …): the script `node` runs.
pub(crate) fn published_server(name: &str) -> PathBuf {
    installed(
        peers()
            .join("servers/node_modules")
            .join(name)
            .join("dist/index.js"),
    )
}

pub(crate) fn installed(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run .ci/install-peers",
        path.display()
    );
    path
}

/// A script of the repository's own peers, in `crates/cli/tests/peers`.
pub(crate) fn peer_script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(name)
}

/// The repository's root folder.
pub(crate) fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// A free TCP port on 127.0.0.1, for a peer to listen on. The port is free again when this returns, so
/// another process could take it first; the peer that is given it binds it within moments.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind a loopback port")
        .local_addr()
        .expect("the bound port")
        .port()
}

/// How long a peer may take to listen on its port: a minute, for a loaded machine starting Python or
/// Node.
const PEER_START: Duration = Duration::from_secs(60);

/// A child process that is killed and reaped when dropped, unless it has exited already, so that a
/// failed assertion leaves no peer running. Derefs to the [`Child`].
pub(crate) struct KillOnDrop {
    child: Child,
    sigterm: bool,
}

impl KillOnDrop {
    /// Killed with SIGKILL.
    pub(crate) fn new(child: Child) -> Self {
        Self {
            child,
            sigterm: false,
        }
    }

    /// Stopped with SIGTERM, and waited for: for `calltape serve`, which then stops its own child.
    pub(crate) fn with_sigterm(child: Child) -> Self {
        Self {
            child,
            sigterm: true,
        }
    }
}

impl Deref for KillOnDrop {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.child
    }
}

impl DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.child
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // A reaped process's id may be another process's by now: only a running one is signalled.
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        if self.sigterm {
            let _ = Command::new("kill")
                .arg(self.child.id().to_string())
                .stderr(Stdio::null())
                .status();
        } else {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A peer that listens on a loopback port, such as an MCP server over Streamable HTTP; killed when
/// dropped.
pub(crate) struct HttpPeer {
    _process: KillOnDrop,
    port: u16,
}

impl HttpPeer {
    /// Starts `command`, which must listen on 127.0.0.1:`port`, and waits until that port accepts a
    /// connection. Fails the test, naming `what`, when the peer exits first or does not listen within a
    /// minute.
    pub(crate) fn start(command: &mut Command, port: u16, what: &str) -> Self {
        let mut process = KillOnDrop::new(
            command
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {what}: {e}")),
        );
        let deadline = Instant::now() + PEER_START;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = process.try_wait().expect("the peer's status") {
                panic!("{what} exited ({status}) before it listened on port {port}");
            }
            assert!(
                Instant::now() < deadline,
                "{what} did not listen on port {port} within {PEER_START:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            _process: process,
            port,
        }
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// The peer's MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// The "everything" server in its Streamable HTTP mode on `port`; killed when dropped.
pub(crate) fn http_everything(port: u16) -> HttpPeer {
    HttpPeer::start(
        Command::new(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        port,
        "the everything server",
    )
}

/// The session id an `initialize`'s whole HTTP response names in its `Mcp-Session-Id` header.
pub(crate) fn session_id_of(response: &str) -> Option<String> {
    response.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("mcp-session-id: ")
            .map(str::to_owned)
    })
}

/// The resident memory of process `pid`, in MiB.
pub(crate) fn resident_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kib / 1024
}

/// The `IP:PORT` of the URL `calltape serve` prints when it listens on TCP (`http://IP:PORT/mcp`).
pub(crate) fn served_addr(url: &str) -> String {
    url.strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("a URL on stdout, got {url:?}"))
        .to_owned()
}

/// The first line `child` prints on its stdout (piped), trimmed: where `calltape serve` and `calltape
/// http` say their address once they listen, and the fake API its port. Empty when the child exits
/// first.
pub(crate) fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("the child's stdout is piped"))
        .read_line(&mut line)
        .expect("read the child's stdout");
    line.trim().to_owned()
}

/// Waits for `child` for `deadline` at most; kills and reaps it past that. Its exit status, or `None`
/// when it was killed.
pub(crate) fn wait_or_kill(child: &mut Child, deadline: Duration) -> Option<ExitStatus> {
    let end = Instant::now() + deadline;
    loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            return Some(status);
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stops the shared server of `paths`, if one runs, with SIGTERM, and waits (ten seconds at most) until
/// it has removed its record.
pub(crate) fn stop_shared_server(paths: &SharedPaths) {
    if let Ok(Some(record)) = ServerRecord::read(&paths.record()) {
        let _ = Command::new("kill").arg(record.pid.to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while paths.record().exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Busy-loop child processes that keep the machine's cores busy while a test runs, as a loaded CI
/// runner would: one per core (at least two). Killed when dropped.
pub(crate) struct CpuLoad {
    _busy: Vec<KillOnDrop>,
}

impl CpuLoad {
    pub(crate) fn start() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
        let busy = (0..cores)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .spawn()
                    .map(KillOnDrop::new)
                    .expect("start a busy-loop process")
            })
            .collect();
        Self { _busy: busy }
    }
}

/// Runs one line of a README through `sh -e` in `project`, as a user would type it, as
/// [`run_runner`] runs a command.
pub(crate) fn sh(
    project: &std::path::Path,
    upstream: &str,
    line: &str,
    env: &[(&str, &str)],
) -> (std::process::Output, String) {
    let mut cmd = Command::new("sh");
    cmd.args(["-e", "-c", line]);
    run_runner(cmd, project, upstream, env)
}

/// Runs a test runner's command in `project` with the integrations' environment: calltape the
/// binary under test, the `openai` and `anthropic` upstreams at `upstream`, no mode, base URL or
/// API key of the caller's environment, and `env` on top; returns its output (stdout then stderr).
pub(crate) fn run_runner(
    mut cmd: Command,
    project: &std::path::Path,
    upstream: &str,
    env: &[(&str, &str)],
) -> (std::process::Output, String) {
    cmd.current_dir(project)
        .env("CALLTAPE_BIN", env!("CARGO_BIN_EXE_calltape"))
        .env("CALLTAPE_UPSTREAM_OPENAI", upstream)
        .env("CALLTAPE_UPSTREAM_ANTHROPIC", upstream)
        .env("NO_COLOR", "1")
        .env_remove("CALLTAPE_LOG");
    for var in [
        "CI",
        "CALLTAPE_MODE",
        "LLM_TEST_MODE",
        "UPDATE_RECORDINGS",
        "RECORD_LLM",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "PYTEST_ADDOPTS",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the test runner");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

/// The quick start of an integration's README (its first `sh` block after `## Quick start`), cut
/// where a test stands in for a step: the install lines (offline, the test installs from the
/// repository itself), the lines that write the project, and its last two commands, which record
/// and then replay in CI.
pub(crate) struct QuickStart {
    /// The install lines, as the README writes them.
    pub(crate) install: Vec<String>,
    /// The lines that write the project's files, for `sh -e`.
    pub(crate) files: String,
    /// The command that records.
    pub(crate) record: String,
    /// The command that replays in CI.
    pub(crate) replay: String,
}

impl QuickStart {
    pub(crate) fn read(readme: &std::path::Path) -> Self {
        let text = std::fs::read_to_string(readme).expect("the README");
        let block = text
            .split_once("## Quick start")
            .and_then(|(_, rest)| rest.split_once("```sh\n"))
            .and_then(|(_, rest)| rest.split_once("\n```"))
            .map(|(block, _)| block)
            .unwrap_or_else(|| panic!("{} has no quick start block", readme.display()));
        let mut lines: Vec<&str> = block.lines().collect();
        let replay = lines.pop().expect("a replay line").to_owned();
        let record = lines.pop().expect("a record line").to_owned();
        let (install, files): (Vec<&str>, Vec<&str>) = lines.into_iter().partition(|l| {
            ["cargo install ", "pip install ", "npm install "]
                .iter()
                .any(|p| l.starts_with(p))
        });
        Self {
            install: install.into_iter().map(str::to_owned).collect(),
            files: files.join("\n") + "\n",
            record,
            replay,
        }
    }
}

/// Runs a client peer script's `command` (colourless, stderr kept for the failure message) and
/// returns the JSON it prints; fails the test when it fails.
pub(crate) fn client_result(command: &mut Command) -> serde_json::Value {
    let out = command
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .output()
        .expect("run the client");
    client_output(&out)
}

/// The JSON a client peer printed; fails the test when the client failed.
pub(crate) fn client_output(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "client failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("client output is JSON")
}

/// The `field` of each item of a recorded list answer's `key`: the tool names of `tools`, the URIs
/// of `resources`.
pub(crate) fn list_names(answer: &serde_json::Value, key: &str, field: &str) -> Vec<String> {
    answer[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {answer}"))
        .iter()
        .map(|item| item[field].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts that a test runner's output shows why the `get-sum` call of the MCP fixtures' tests
/// missed: the closest recorded call and where it differs (recorded with `b` 40, asked with 41).
pub(crate) fn assert_shows_the_closest_get_sum(text: &str) {
    assert!(
        text.contains("closest recorded call: tools/call get-sum (line "),
        "{text}"
    );
    assert!(
        text.contains("differing at b: recorded 40, asked 41"),
        "{text}"
    );
}

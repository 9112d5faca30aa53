//! A command that fails says why in one line, `calltape: …`, whatever the log level, and exits with
//! the code of its kind of failure.

use crate::support::calltape;

/// (arguments, exit code, what the line says).
const CASES: &[(&[&str], i32, &str)] = &[
    (
        &["bridge", "--header", "A: b", "--", "true"],
        2,
        "--header and --header-file apply to --url and --socket, not to a child command",
    ),
    (
        &["bridge", "--watch", ".", "--url", "http://127.0.0.1:9/mcp"],
        2,
        "--watch restarts a child command: give one after `--`",
    ),
    (
        &["http", "--cassette", "c.jsonl"],
        2,
        "give at least one --upstream NAME=URL, e.g. --upstream openai=https://api.openai.com",
    ),
    (
        &["http", "--upstream", "openai", "--cassette", "c.jsonl"],
        2,
        "--upstream \"openai\" is not NAME=VALUE, e.g. openai=https://api.openai.com",
    ),
    (
        &["replay", "/nonexistent/calls.jsonl", "--", "true"],
        2,
        "/nonexistent/calls.jsonl: cannot read",
    ),
    (&["show", "/nonexistent/calls.jsonl"], 2, "cannot read"),
    (
        &["mock", "/nonexistent/calls.jsonl"],
        2,
        "/nonexistent/calls.jsonl: cannot read",
    ),
    (
        &["serve", "--mock", "/nonexistent/calls.jsonl"],
        2,
        "/nonexistent/calls.jsonl: cannot read",
    ),
    (
        &["shared", "--key", "Bad Key", "--", "true"],
        2,
        "invalid key `Bad Key`",
    ),
    (
        &[
            "record", "-o", "a.jsonl", "--record", "b.jsonl", "--", "true",
        ],
        2,
        "give the recording once: -o FILE or --record FILE, not both",
    ),
    (
        &[
            "http",
            "--mode",
            "record",
            "--upstream",
            "a=http://127.0.0.1:9",
            "--auth",
            "a=sk-1",
        ],
        2,
        "the key for upstream `a` in --auth: give it as env:VAR, or HEADER:env:VAR",
    ),
    (
        &[
            "http",
            "--mode",
            "record",
            "--upstream",
            "a=http://127.0.0.1:9",
            "--auth",
            "a=env:CALLTAPE_UNSET_IN_TESTS",
        ],
        2,
        "the key for upstream `a` in --auth: environment variable CALLTAPE_UNSET_IN_TESTS is not set",
    ),
    (
        &["http", "rm", "/nonexistent/c.jsonl"],
        2,
        "/nonexistent/c.jsonl is not a cassette (its first line is not a cassette meta record)",
    ),
    (
        &[
            "http",
            "import",
            "--from",
            "mastra",
            "/nonexistent/recordings",
        ],
        2,
        "/nonexistent/recordings: cannot read",
    ),
];

#[test]
fn a_failure_is_one_line_on_stderr_at_every_log_level_with_its_exit_code() {
    for (args, code, needle) in CASES {
        for (quiet, log) in [(false, None), (true, None), (false, Some("off"))] {
            let mut cmd = calltape();
            if quiet {
                cmd.arg("--quiet");
            }
            if let Some(filter) = log {
                cmd.env("CALLTAPE_LOG", filter);
            }
            let out = cmd.args(*args).output().expect("run");
            let stderr = String::from_utf8_lossy(&out.stderr);
            let context = format!("{args:?} quiet={quiet} CALLTAPE_LOG={log:?}:\n{stderr}");
            assert_eq!(out.status.code(), Some(*code), "{context}");
            let lines: Vec<&str> = stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{context}");
            assert!(lines[0].starts_with("calltape: "), "{context}");
            assert!(lines[0].contains(needle), "{context}");
            assert!(out.stdout.is_empty(), "{context}");
        }
    }
}

/// Made-up credentials in well-known provider formats.
const GHP: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
const ANTHROPIC: &str = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQr";

/// (arguments, where `{}` is a credential, what the usage error still says).
const USAGE_CASES: &[(&[&str], &str)] = &[
    (
        &["record", "--max-bytes", "{}", "-o", "c.jsonl", "--", "true"],
        "invalid value '[REDACTED]' for '--max-bytes <BYTES>'",
    ),
    (
        &["http", "--mode", "{}", "--cassette", "c.jsonl"],
        "invalid value '[REDACTED]' for '--mode <MODE>'",
    ),
    (
        &["show", "c.jsonl", "{}"],
        "unexpected argument '[REDACTED]' found",
    ),
    (&["{}"], "unrecognized subcommand '[REDACTED]'"),
];

#[test]
fn a_usage_error_quoting_a_credential_says_it_redacted_and_exits_2() {
    for secret in [GHP, ANTHROPIC] {
        for (args, needle) in USAGE_CASES {
            let args: Vec<String> = args.iter().map(|a| a.replace("{}", secret)).collect();
            let out = calltape().args(&args).output().expect("run");
            let stderr = String::from_utf8_lossy(&out.stderr);
            let context = format!("{args:?}:\n{stderr}");
            assert_eq!(out.status.code(), Some(2), "{context}");
            assert!(!stderr.contains(secret), "{context}");
            assert!(stderr.starts_with("error: "), "{context}");
            assert!(stderr.contains(needle), "{context}");
            assert!(out.stdout.is_empty(), "{context}");
        }
    }
}

#[test]
fn each_unreadable_input_is_said_and_the_run_exits_2_after_the_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good.log");
    std::fs::write(&good, "password=hunter2\n").expect("write");
    let out = calltape()
        .args(["--quiet", "redact", "/nonexistent/a.log"])
        .arg(&good)
        .arg("/nonexistent/b.log")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "calltape: cannot read /nonexistent/a.log: no such file\n\
         calltape: cannot read /nonexistent/b.log: no such file\n\
         calltape: 2 of 3 inputs could not be read; see the lines above\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "password=[REDACTED]\n"
    );
}

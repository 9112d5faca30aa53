//! The `calltape` command: argument parsing and composition of the calltape crates.
//!
//! Every behaviour lives in a library crate; this binary only wires them together.
#![forbid(unsafe_code)]
// What commands write on stderr goes through `output` and the redacting writer: `clippy.toml` refuses
// `eprintln!`, `eprint!`, `std::io::stderr` and clap's printing `parse`.
// Doc comments here are `--help` text, where a URL must stay plain.
#![allow(rustdoc::bare_urls)]

mod args;
mod auth;
mod bridge;
mod config;
mod demo;
mod error;
mod http;
mod logging;
mod mock;
mod output;
mod record;
mod redact;
mod replay;
mod scan;
mod serve;
mod shared;
mod show;
mod signals;
mod units;

use std::process::ExitCode;

#[cfg(test)]
use clap::CommandFactory;
use clap::{Parser, Subcommand};

use crate::error::Error;

/// Exit codes shared by every subcommand.
pub(crate) mod exit {
    /// Success.
    pub(crate) const OK: u8 = 0;
    /// A comparison found differences.
    pub(crate) const DIFFERENCES: u8 = 1;
    /// Bad usage or unreadable / invalid input.
    pub(crate) const USAGE: u8 = 2;
    /// The upstream server could not be started or stopped answering.
    pub(crate) const UPSTREAM: u8 = 3;
}

/// The async runtime of a command that runs child processes: one thread, because children are
/// forked from it and their parent-death signal is tied to that thread.
pub(crate) fn single_thread_runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

/// The async runtime of a command that serves or replays on its own: two worker threads.
pub(crate) fn multi_thread_runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

const AFTER_HELP: &str = "\
Examples:
  calltape record -o calls.jsonl -- node server.js
  calltape replay calls.jsonl -- node server.js
  calltape mock calls.jsonl
  calltape bridge --watch src -- cargo run -q
  calltape http --upstream openai=https://api.openai.com --cassette chat.jsonl -- pytest
  calltape scan tests/cassettes calls.jsonl
  calltape demo
  calltape config cursor -- node server.js

Exit codes:
  0  success
  1  differences found (replay), a request the recording holds no answer for (mock), or something refused because it held a credential
  2  usage error, or unreadable or invalid input
  3  upstream failure: the server could not be started or stopped answering

Environment:
  CALLTAPE_LOG   log filter for stderr, e.g. debug or calltape_stdio_bridge=trace
  NO_COLOR       disable colour in all output";

/// Record MCP and LLM API calls with credentials redacted, replay them against the
/// next build, and keep MCP sessions alive through server restarts.
#[derive(Debug, Parser)]
#[command(name = "calltape", version, about, after_help = AFTER_HELP)]
struct Cli {
    /// More log output on stderr (-v debug, -vv trace); CALLTAPE_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    /// Only errors on stderr.
    #[arg(short, long, global = true)]
    quiet: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Sign in to a remote MCP server ahead of time, list stored sign-ins, sign out.
    #[command(after_help = auth::EXAMPLES)]
    Auth(auth::AuthArgs),
    /// Run an MCP server behind a stdio session that survives its restarts.
    #[command(long_about = bridge::LONG_ABOUT, after_help = bridge::EXAMPLES)]
    Bridge(bridge::BridgeArgs),
    /// Record and replay LLM API calls through a local proxy (cassettes with credentials scrubbed).
    #[command(after_help = http::EXAMPLES)]
    Http(http::HttpArgs),
    /// Answer an MCP client on stdio from a call recording, with no server running (exit 1 on a miss).
    #[command(after_help = mock::EXAMPLES)]
    Mock(mock::MockArgs),
    /// Redact credentials from text, JSON or JSONL (files or stdin) to stdout.
    Redact(redact::RedactArgs),
    /// Record an MCP client's calls, redacted, while bridging it to the server.
    Record(record::RecordArgs),
    /// Replay a call recording against a server and report what changed (exit 1 on a difference).
    Replay(replay::ReplayArgs),
    /// Serve one stdio MCP server over Streamable HTTP to many sessions.
    #[command(after_help = serve::EXAMPLES)]
    Serve(serve::ServeArgs),
    /// Attach this stdio session to the key's shared server, starting it if none proves itself.
    #[command(after_help = shared::EXAMPLES)]
    Shared(shared::SharedArgs),
    /// Summarise and validate a call recording or an HTTP cassette.
    Show(show::ShowArgs),
    /// Check call recordings and cassettes (their blobs included) for credentials; exit 1 on one.
    #[command(after_help = scan::EXAMPLES)]
    Scan(scan::ScanArgs),
    /// Record a session against a built-in demo server v1, replay it against v2, print the report.
    Demo(demo::DemoArgs),
    /// Print the configuration snippet that runs a server through calltape in an MCP client.
    Config(config::ConfigArgs),
    /// The demo's MCP server on stdio (versions 1 and 2).
    #[command(hide = true)]
    DemoServer(demo::DemoServerArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    logging::init(cli.verbose, cli.quiet);
    let outcome = match cli.command {
        Command::Auth(args) => auth::run(args),
        Command::Bridge(args) => bridge::run(args),
        Command::Http(args) => http::run(args),
        Command::Mock(args) => mock::run(args),
        Command::Redact(args) => redact::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Shared(args) => shared::run(args),
        Command::Record(args) => record::run(args),
        Command::Replay(args) => replay::run(args, cli.verbose > 0),
        Command::Show(args) => show::run(args),
        Command::Scan(args) => scan::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Config(args) => config::run(args),
        Command::DemoServer(args) => demo::run_server(args),
    };
    let code = outcome.unwrap_or_else(|error| {
        error.report();
        error.exit_code()
    });
    // What is still buffered; a closed pipe is no failure, another failure to write is.
    output::flush_stdout();
    if output::stdout_failed() && code == exit::OK {
        return ExitCode::from(exit::USAGE);
    }
    // A line the final gate kept from stderr (and from a log file there) fails the run, as a
    // refused call or report does.
    if code == exit::OK && logging::refused_lines() > 0 {
        Error::RefusedSome(format!("{} stderr line(s)", logging::refused_lines())).report();
        return ExitCode::from(exit::DIFFERENCES);
    }
    ExitCode::from(code)
}

/// What clap says when it does not run a command: `--help` and `--version` as clap prints them, on
/// stdout; a usage error, which quotes the argument it refused (perhaps a credential given to the
/// wrong flag), through the redacting writer every stderr line passes, without color.
fn usage_error(e: &clap::Error) -> ExitCode {
    if e.use_stderr() {
        output::stderr(format_args!("{}", e.render()));
    } else {
        // A reader that went away is no failure here either (see `output`).
        let _ = e.print();
    }
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(exit::USAGE))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The redaction names of a command line, for every command that takes them.
    fn names(argv: &[&str]) -> args::RedactNames {
        let cli = Cli::try_parse_from(std::iter::once("calltape").chain(argv.iter().copied()))
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        match cli.command {
            Command::Bridge(args) => args.recording.names,
            Command::Http(args) => args.names().clone(),
            Command::Record(args) => args.bridge.recording.names,
            Command::Redact(args) => args.names,
            Command::Replay(args) => args.names,
            Command::Serve(args) => args.recording.names,
            Command::Mock(args) => args.recording.names,
            other => panic!("{other:?} takes no redaction names"),
        }
    }

    #[test]
    fn every_command_that_redacts_takes_redact_and_keep_and_its_old_spellings() {
        // (the command line before the names, after them, the command's earlier spellings)
        let commands: &[(&[&str], &[&str], &[&str])] = &[
            (&["bridge"], &["--", "srv"], &[]),
            (&["record", "-o", "c.jsonl"], &["--", "srv"], &[]),
            (&["replay", "c.jsonl"], &["--", "srv"], &[]),
            (&["serve", "--record", "c.jsonl"], &["--", "srv"], &[]),
            (&["mock", "c.jsonl"], &[], &[]),
            (&["redact"], &[], &["--name", "a", "--keep", "b"]),
            (
                &["http", "--upstream", "a=http://127.0.0.1:9"],
                &[],
                &["--redact-name", "a", "--keep-name", "b"],
            ),
        ];
        let want = args::RedactNames {
            redact: vec!["a".into()],
            keep: vec!["b".into()],
        };
        for (before, after, old) in commands {
            let spellings: &[&[&str]] = &[&["--redact", "a", "--keep", "b"], old];
            for spelling in spellings.iter().filter(|s| !s.is_empty()) {
                let argv = [*before, *spelling, *after].concat();
                assert_eq!(names(&argv), want, "{argv:?}");
            }
        }
    }

    /// The help's width: clap wraps to the terminal, and to at most this many columns.
    const WIDTH: usize = 100;

    /// Every command's `--help` as clap prints it at [`WIDTH`] columns, with its path.
    fn every_help() -> Vec<(String, String)> {
        let mut root = Cli::command().term_width(WIDTH);
        root.build();
        let mut helps = Vec::new();
        let mut stack = vec![("calltape".to_owned(), root)];
        while let Some((path, mut command)) = stack.pop() {
            helps.push((path.clone(), command.render_long_help().to_string()));
            for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
                stack.push((format!("{path} {}", sub.get_name()), sub.clone()));
            }
        }
        helps
    }

    #[test]
    fn every_help_fits_in_100_columns_shows_an_example_and_wraps_prose_only_where_full() {
        let helps = every_help();
        assert!(helps.len() > 10, "{helps:?}");
        for (path, help) in &helps {
            let lines: Vec<&str> = help.lines().collect();
            for line in &lines {
                assert!(
                    line.chars().count() <= WIDTH,
                    "{path}: over {WIDTH}: {line:?}"
                );
            }
            if path != "calltape demo-server" {
                assert!(
                    help.contains("\nExample"),
                    "{path} shows no example:\n{help}"
                );
            }
            // Two lines of prose in a row are one paragraph wrapped: the first must be full, that
            // is the next word would not have fitted on it. A line broken by hand before then
            // reads as a sentence broken mid-phrase once clap wraps it again.
            for pair in lines.windows(2) {
                let prose = |l: &str| l.starts_with(|c: char| !c.is_whitespace());
                if prose(pair[0]) && prose(pair[1]) {
                    let next = pair[1].split(' ').next().unwrap_or("");
                    assert!(
                        pair[0].chars().count() + 1 + next.chars().count() > WIDTH,
                        "{path}: a line broken before it was full:\n{}\n{}",
                        pair[0],
                        pair[1]
                    );
                }
            }
        }
    }

    #[test]
    fn scan_help_names_its_first_spelling_as_an_alias() {
        let help = Cli::command()
            .find_subcommand_mut("scan")
            .expect("scan")
            .render_long_help()
            .to_string();
        assert!(
            help.contains(
                "`calltape http scan PATH…` is this command's first spelling and stays an alias"
            ),
            "{help}"
        );
    }

    #[test]
    fn the_old_spellings_are_hidden_from_help() {
        for command in ["redact", "http"] {
            let help = Cli::command()
                .find_subcommand_mut(command)
                .expect(command)
                .render_long_help()
                .to_string();
            assert!(help.contains("--redact <NAME>"), "{command}:\n{help}");
            for old in ["--name", "--redact-name", "--keep-name"] {
                assert!(!help.contains(old), "{command} shows {old}:\n{help}");
            }
        }
    }
}

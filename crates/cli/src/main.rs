//! The `calltape` command: argument parsing and composition of the calltape crates.
//!
//! Every behaviour lives in a library crate; this binary only wires them together.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout)]

mod logging;
mod redact;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit codes shared by every subcommand.
pub(crate) mod exit {
    /// Success.
    pub(crate) const OK: u8 = 0;
    /// A comparison found differences.
    #[allow(dead_code)]
    pub(crate) const DIFFERENCES: u8 = 1;
    /// Bad usage or unreadable / invalid input.
    pub(crate) const USAGE: u8 = 2;
    /// The upstream server could not be started or stopped answering.
    #[allow(dead_code)]
    pub(crate) const UPSTREAM: u8 = 3;
}

const AFTER_HELP: &str = "\
Exit codes:
  0  success
  1  differences found (replay)
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
    /// Redact credentials from text, JSON or JSONL (files or stdin) to stdout.
    Redact(redact::RedactArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.verbose, cli.quiet);
    let code: u8 = match cli.command {
        Command::Redact(args) => redact::run(args),
    };
    ExitCode::from(code)
}

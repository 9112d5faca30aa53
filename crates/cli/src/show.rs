//! `calltape show`: summarise and validate a call recording or an HTTP cassette.

use std::path::{Path, PathBuf};

use calltape_recorder::http::Cassette;
use calltape_recorder::inspect::{FileKind, cassette_summary, recording_summary, sniff};
use calltape_recorder::mcp::Recording;
use clap::Args;

use crate::exit;

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape show calls.jsonl
  calltape show tests/cassettes/chat.jsonl

Prints the calls per method and name (with their errors), the sessions and clients, and the time
span of an MCP call recording; or the fingerprints, interactions and models of an HTTP cassette
(`calltape http show` is the same command). Exit 2 when the file is neither, or not valid, each bad
line named as FILE:LINE.";

/// The arguments of `calltape show`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct ShowArgs {
    /// The call recording or HTTP cassette to summarise.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

pub(crate) fn run(args: ShowArgs) -> u8 {
    show(&args.file)
}

/// Summarises and validates `path`, whichever of calltape's formats it is.
pub(crate) fn show(path: &Path) -> u8 {
    let summary = match sniff(path) {
        Ok(FileKind::Cassette) => {
            Cassette::load(path).map(|cassette| cassette_summary(path, &cassette))
        }
        Ok(FileKind::Recording) => Recording::read(path).map(|r| recording_summary(&r)),
        Ok(FileKind::Neither { reason }) => {
            eprintln!(
                "calltape: {} is neither an MCP call recording nor an HTTP cassette: {reason}",
                path.display()
            );
            return exit::USAGE;
        }
        Ok(_) => {
            eprintln!(
                "calltape: {}: a format this calltape cannot show",
                path.display()
            );
            return exit::USAGE;
        }
        Err(e) => Err(e),
    };
    match summary {
        Ok(summary) => {
            print!("{summary}");
            exit::OK
        }
        Err(e) => {
            eprintln!("calltape: {e}");
            exit::USAGE
        }
    }
}

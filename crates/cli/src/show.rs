//! `calltape show`: summarise and validate a call recording or an HTTP cassette.

use std::path::{Path, PathBuf};

use calltape_recorder::http::Cassette;
use calltape_recorder::inspect::{FileKind, cassette_summary, recording_summary, sniff};
use calltape_recorder::mcp::Recording;
use clap::Args;

use crate::error::{Error, Outcome};
use crate::exit;
use crate::output::out;

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape show calls.jsonl
  calltape show tests/cassettes/chat.jsonl

Prints the calls per method and name (with their errors), the sessions and clients, and the time \
span of an MCP call recording; or the fingerprints, interactions and models of an HTTP cassette \
(`calltape http show` is the same command). Exit 2 when the file is neither, or not valid, each \
bad line named as FILE:LINE.";

/// The arguments of `calltape show`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct ShowArgs {
    /// The call recording or HTTP cassette to summarise.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

pub(crate) fn run(args: ShowArgs) -> Outcome {
    show(&args.file)
}

/// Summarises and validates `path`, whichever of calltape's formats it is.
pub(crate) fn show(path: &Path) -> Outcome {
    let summary = match sniff(path)? {
        FileKind::Cassette => cassette_summary(path, &Cassette::load(path)?),
        FileKind::Recording => recording_summary(&Recording::read(path)?),
        FileKind::Neither { reason } => {
            return Err(Error::NeitherFormat {
                path: path.to_owned(),
                reason,
            });
        }
        _ => {
            return Err(Error::UnknownFormat(path.to_owned()));
        }
    };
    out!("{summary}");
    Ok(exit::OK)
}

//! `calltape scan` (and its first spelling, `calltape http scan`): look for credentials in call
//! recordings and cassettes already on disk.

use std::path::PathBuf;

use calltape_recorder::scan::{scan, secrets_from_env};
use clap::Args;

use crate::error::{Error, Outcome};
use crate::exit;
use crate::output::{errln, outln};

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape scan calls.jsonl
  calltape scan tests/cassettes tests/recordings
  git diff --cached --name-only -- '*.jsonl' | xargs calltape scan

Each file is read as what its first line says it is: an MCP call recording or an HTTP cassette \
(a folder is searched for both, *.jsonl). Every line is checked as calltape checks a line before \
it stores it: provider tokens and JWTs anywhere in it, object keys included, and the values of \
this environment's variables named like *_API_KEY, *_TOKEN or *_SECRET; then what redaction would \
still change (a value under a credential name, text that holds a credential). A cassette's sidecar \
blobs are read too. Each finding is printed on stdout as FILE:LINE: WHERE: WHAT, naming what was \
found (the rule, or the variable), never the value.

`calltape http scan PATH…` is this command's first spelling and stays an alias of it.

Exit codes: 0 nothing found, 1 something found, 2 a file could not be read or is neither a \
recording nor a cassette.";

/// The arguments of `calltape scan`.
#[derive(Debug, Args)]
pub(crate) struct ScanArgs {
    /// Call recordings, cassettes, or folders that hold them (searched recursively for *.jsonl).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

pub(crate) fn run(args: ScanArgs) -> Outcome {
    let report = scan(&args.paths, &secrets_from_env());
    for finding in &report.findings {
        outln!("{finding}");
    }
    let files = report.files.len();
    let failed = report.failures.len();
    let summary = report.summary();
    for e in report.failures {
        Error::from(e).report();
    }
    if failed > 0 {
        return Err(Error::Partly {
            failed,
            total: files + failed,
            what: "files could not be scanned",
        });
    }
    if !report.findings.is_empty() {
        errln!("calltape scan: {summary}");
        return Ok(exit::DIFFERENCES);
    }
    tracing::info!("calltape scan: {summary}");
    Ok(exit::OK)
}

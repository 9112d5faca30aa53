//! `calltape mock`: a call recording served to an MCP client on stdio, with no server running.

use std::{path::PathBuf, time::Duration};

use calltape_recorder::mcp::Recording;
use calltape_redact::Redactor;
use calltape_replay::mock::Mock;
use calltape_stdio_bridge::{Bridge, EraUpstream, Protocol, stdio};
use clap::Args;

use crate::output::errln;
use crate::{
    args::RedactNames,
    error::{Error, Outcome},
    exit,
};

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape mock calls.jsonl
  calltape mock --allow-misses tests/cassettes/search.jsonl
  calltape serve --mock calls.jsonl --listen 127.0.0.1:8808

Record once against the real server (calltape record -o calls.jsonl -- CMD, in the client's \
configuration or a test), then put `calltape mock calls.jsonl` where the server's command was: the \
client gets the recorded answers, offline, and no server runs. `calltape serve --mock FILE` serves \
the same over Streamable HTTP, under every rule of `calltape serve`.

What it answers:
  initialize   the recorded server info and protocol version (else the version the client asks
               for); capabilities for what the recording holds
  lists        tools/list, prompts/list, resources/list and resources/templates/list: the last
               recorded listing, every page in one answer
  calls        the recorded call of the same method, name and input: a recorded \"[REDACTED]\"
               matches any value at its place, the order of keys never matters, and the same call
               asked again gets its next recorded answer, then the last one again
  asks         what the server asked the client during a recorded call (sampling, elicitation,
               roots) is asked again, and the client's answer compared with the recorded one
Clients of the 2026-07-28 era are answered too: their requests are translated.

A request the recording holds no answer for gets a JSON-RPC error (-32602, or -32601 for a method \
it holds no call of) naming the closest recorded call and where the request differs from it. When \
stdin ends, stderr lists every miss (and every ask answered unlike the recording) and the exit \
status is 1, unless --allow-misses.

Exit codes: 0 every request answered from the recording (or --allow-misses), 1 a miss, 2 the \
recording cannot be read or is not valid.";

/// The arguments of `calltape mock`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct MockArgs {
    /// The call recording to answer from, as `calltape record`, `bridge --record` or `serve
    /// --record` wrote it.
    #[arg(value_name = "FILE")]
    recording: PathBuf,

    /// Exit 0 even when a request missed the recording (the misses are still listed on stderr).
    #[arg(long)]
    allow_misses: bool,

    /// The names the recording was made with, so that each request's input is redacted alike
    /// before it is compared and shown.
    #[command(flatten)]
    pub(crate) names: RedactNames,
}

pub(crate) fn run(args: MockArgs) -> Outcome {
    let mock = read(&args.recording, &args.names)?;
    let runtime = crate::single_thread_runtime()?;
    let bridge = Bridge::builder()
        .upstream(EraUpstream::new(mock.clone(), Protocol::Legacy))
        .shutdown_on(crate::signals::termination("ending the session"))
        .build()?;
    let result = runtime.block_on(async { bridge.run(stdio::stdin(), stdio::stdout()).await });
    // A blocked stdin read must not hold the process open.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result.map_err(Error::upstream)?;
    Ok(finish(&mock, args.allow_misses))
}

/// Reads the recording a mock answers from, made with the redaction `names`.
pub(crate) fn read(path: &PathBuf, names: &RedactNames) -> Result<Mock, Error> {
    let redactor = Redactor::builder()
        .redact_names(names.redact.iter().map(String::as_str))
        .keep_names(names.keep.iter().map(String::as_str))
        .build()?;
    Ok(Mock::with_redactor(Recording::read(path)?, redactor))
}

/// Says what the mock did (every miss on stderr) and gives the exit status: 1 on a miss, unless
/// `allow_misses`.
pub(crate) fn finish(mock: &Mock, allow_misses: bool) -> u8 {
    if mock.misses().is_empty() {
        tracing::info!("{}", mock.summary());
        return exit::OK;
    }
    errln!("{}", mock.summary());
    if allow_misses {
        exit::OK
    } else {
        exit::DIFFERENCES
    }
}

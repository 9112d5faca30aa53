//! `calltape replay`: replay a recording against a server and report what changed.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use calltape_recorder::mcp::Recording;
use calltape_redact::Redactor;
use calltape_replay::ReportContext;
use calltape_replay::mcp::{
    Comparer, FailOn, FillSpec, Fills, Format, ReplayOptions, replay, update_recording,
};
use calltape_stdio_bridge::Stderr;
use clap::Args;

use crate::{
    args::{ProtocolArg, UpstreamArgs},
    error::{Error, Outcome},
    exit,
    units::duration,
};

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape replay calls.jsonl -- node server.js
  calltape replay calls.jsonl --ignore '**.quotedAt,**.requestId' -- python -m my_server
  calltape replay calls.jsonl --format junit --output replay.xml --url http://127.0.0.1:3000/mcp
  calltape replay calls.jsonl --format html --output report.html -- node server.js
  calltape replay calls.jsonl --update -- node server.js     # accept the new answers
  calltape replay calls.jsonl --fill cardToken=env:CARD --fill apiKey=file:key.txt -- node server.js
  calltape replay calls.jsonl --fail-on breaking -- node server.js   # a tool added is no failure

Each recorded session is replayed through a fresh connection (a new child process, a new HTTP \
session) with the recorded client info, its calls in recorded order. A call is same, changed \
(with each differing path), new-error or gone-error. A recorded \"[REDACTED]\" matches any value.

--fill sends a value in place of a recorded \"[REDACTED]\" at a field of that name, anywhere in \
an input; the value comes from an environment variable or a file and appears in no report. A call \
that still holds \"[REDACTED]\" is sent as recorded, noted \"unfilled: NAME\".

A string of 6 characters or more that an earlier answer created (a payment id) and a later input \
uses is sent as the replayed answer holds it, noted \"input.PATH: old → new (from call N, \
PATH)\"; answers that echo the new value compare equal to the recorded one. --no-follow turns \
this off.

A recorded list (tools/list, prompts/list, resources/list, resources/templates/list) is fetched \
again page by page, its items matched by name (resources by uri, templates by uriTemplate), and \
each change classified: breaking (a tool, prompt or resource removed, a required input property or \
argument added, an input property removed or its type narrowed, an output-schema property removed \
or its type changed) or compatible (added, optional, described differently). The report lists each \
with its list and counts them: \"surface: 2 breaking, 5 compatible\". --fail-on breaking exits 0 \
when every difference is a compatible surface change.

A task-augmented call was recorded as a plain one with its result; when the server runs the tool \
only as a task, the replay runs it as one and polls it to its end within --timeout.

Calls are sent as the recorded client sent them: a session of the handshake era initializes with \
the recorded client info first, a session recorded with 2026-07-28 puts that info in each request's \
_meta. A server of the other era (--protocol, found on each connection by default) gets them \
translated, and the comparison sets aside only what the eras write differently at the top of an \
answer: resultType, the server-info stamp in _meta, and the cache hints of resources/read and lists. \
The server's ping is answered; its sampling, elicitation and roots requests get an error, and an \
input_required result is the call's answer, since a replay has no client to ask.

Exit codes: 0 no difference (or --update rewrote the recording; with --fail-on breaking, only \
compatible surface changes), 1 differences, 2 unreadable or invalid recording or bad arguments, 3 the server could not be started or stopped answering.";

/// The arguments of `calltape replay`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct ReplayArgs {
    /// The recording to replay.
    #[arg(value_name = "FILE")]
    file: PathBuf,

    /// Skip these dot paths (repeatable, comma-separated): * is one key or index, ** any number,
    /// e.g. '**.quotedAt', 'content.*.text', 'error.message'.
    #[arg(long = "ignore", value_name = "GLOB")]
    ignore: Vec<String>,

    /// Compare structure only: keys, types and array element shapes, not values.
    #[arg(long)]
    shape: bool,

    // The help is an attribute, not a doc comment: rustdoc would read `[REDACTED]` as a link.
    #[arg(
        long = "fill",
        value_name = "NAME=env:VAR|NAME=file:PATH",
        help = "Send a value where the recording holds \"[REDACTED]\" at a field named NAME (repeatable): \
                NAME=env:VAR or NAME=file:PATH, never the value itself."
    )]
    fill: Vec<String>,

    /// Send every input as recorded: do not follow ids that earlier answers created.
    #[arg(long)]
    no_follow: bool,

    /// Which differences exit 1: any (the default), or breaking, which lets a list whose every
    /// change is a compatible surface change (a tool added, a description reworded) pass.
    #[arg(long, value_name = "RULE", default_value = "any", value_parser = ["any", "breaking"])]
    fail_on: String,

    /// Rewrite the recording with the new answers (atomically, redacted, same order) and exit 0.
    #[arg(long)]
    update: bool,

    /// The report's format: html is one self-contained page to open in a browser.
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json", "junit", "html"])]
    format: String,

    /// Write the report to FILE (0600, replaced whole, never through a symbolic link) instead of stdout.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Sessions replayed at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    jobs: usize,

    /// The longest one call may take, e.g. 30s or 500ms.
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = duration)]
    timeout: Duration,

    /// The names the recording was made with, so that the replayed answers are redacted alike.
    #[command(flatten)]
    pub(crate) names: crate::args::RedactNames,

    #[command(flatten)]
    protocol: ProtocolArg,

    #[command(flatten)]
    upstream: UpstreamArgs,
}

/// The values of `--fill`, parsed here rather than by clap, whose error would repeat a value put on
/// the command line.
fn fills(specs: &[String]) -> Result<Fills, calltape_replay::Error> {
    let specs = specs
        .iter()
        .map(|spec| spec.parse::<FillSpec>())
        .collect::<Result<Vec<_>, _>>()?;
    Fills::resolve(&specs)
}

pub(crate) fn run(args: ReplayArgs) -> Outcome {
    let recording = Recording::read(&args.file)?;
    let comparer = Comparer::builder()
        .ignore(&args.ignore)
        .shape(args.shape)
        .build()
        .map_err(|e| Error::context("--ignore", e))?;
    let redactor = Redactor::builder()
        .redact_names(args.names.redact.iter().map(String::as_str))
        .keep_names(args.names.keep.iter().map(String::as_str))
        .build()?;
    let fills = fills(&args.fill)?;
    let context = ReportContext::new()
        .server(redactor.redact_text(&args.upstream.describe()))
        .date(calltape_recorder::mcp::timestamp(
            std::time::SystemTime::now(),
        ))
        .ignore(
            args.ignore
                .iter()
                .flat_map(|arg| arg.split(','))
                .map(str::trim)
                .filter(|g| !g.is_empty()),
        )
        .fills(fills.names());
    let upstream = args.upstream.upstream(Stderr::Inherit)?;
    let format: Format = args.format.parse().unwrap_or_default();
    let mut options = ReplayOptions::default()
        .comparer(comparer)
        .redactor(redactor)
        .jobs(args.jobs)
        .timeout(args.timeout)
        .fills(fills)
        .follow(!args.no_follow)
        .protocol(args.protocol.protocol);
    if std::io::stderr().is_terminal() {
        options = options.progress(progress_bar());
    }
    let runtime = crate::multi_thread_runtime()?;
    let result = runtime.block_on(replay(&recording, upstream, &options));
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K");
    }
    let replayed = result.map_err(Error::upstream)?;
    let report = &replayed.report;
    if args.update {
        update_recording(&recording, &replayed.outcomes)?;
        eprintln!(
            "calltape: {}: rewritten with the replayed answers ({})",
            args.file.display(),
            report.summary()
        );
        return Ok(exit::OK);
    }
    let to_terminal = args.output.is_none() && std::io::stdout().is_terminal();
    let text = match format {
        Format::Html => report.to_html(&context),
        _ => report.render(format, crate::logging::color_enabled(to_terminal)),
    };
    match &args.output {
        Some(path) => {
            // Replaced whole and owner-only, never through a link at the path: a report quotes
            // answers, redacted as the recording is, but still nobody else's to read.
            calltape_jsonl_store::fs::write_atomic(path, &text)
                .map_err(|e| Error::context("cannot write the report", e))?;
            eprintln!("calltape: {}", report.summary());
        }
        None => print!("{text}"),
    }
    let fail_on: FailOn = args.fail_on.parse().unwrap_or_default();
    if fail_on.fails(report) {
        Ok(exit::DIFFERENCES)
    } else {
        Ok(exit::OK)
    }
}

/// A one-line progress bar on stderr, shown once the replay has run for a second.
fn progress_bar() -> calltape_replay::mcp::Progress {
    let started = Instant::now();
    Arc::new(move |done: usize, total: usize| {
        if started.elapsed() < Duration::from_secs(1) || total == 0 {
            return;
        }
        let width = 30;
        let filled = done * width / total;
        eprint!(
            "\r\x1b[2K[{}{}] {done}/{total} calls",
            "#".repeat(filled),
            " ".repeat(width - filled)
        );
    })
}

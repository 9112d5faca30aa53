//! `calltape replay`: replay a recording against a server and report what changed.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use calltape_recorder::mcp::Recording;
use calltape_recorder::terminal::{LineBreaks, escape_controls};
use calltape_redact::Redactor;
use calltape_replay::ReportContext;
use calltape_replay::config::{Config, Origin, Sourced};
use calltape_replay::mcp::{
    CallRule, FailOn, FillSpec, Format, ReplayOptions, TextOptions, replay, update_recording,
};
use calltape_stdio_bridge::Stderr;
use clap::Args;

use crate::output::{err, errln, out, shown};
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
  calltape replay calls.jsonl --ignore 'tools[*].description' -- node server.js
  calltape replay calls.jsonl --format junit --output replay.xml --url http://127.0.0.1:3000/mcp
  calltape replay calls.jsonl --format html --output report.html -- node server.js
  calltape replay calls.jsonl --update -- node server.js     # accept the new answers
  calltape replay calls.jsonl --fill cardToken=env:CARD --fill apiKey=file:key.txt -- node server.js
  calltape replay calls.jsonl --mask timestamp --mask 'req-[0-9]+' -- node server.js
  calltape replay calls.jsonl --mask-in get_file_info timestamp -- node dist/index.js /srv/data
  calltape replay calls.jsonl --ignore-in 'file:///tmp/*' 'contents.*.text' -- node server.js
  calltape replay --print-config --mask uuid     # what is in force, and where each rule came from
  calltape replay calls.jsonl --fail-on breaking -- node server.js   # a tool added is no failure

Each recorded session is replayed through a fresh connection (a new child process, a new HTTP \
session) with the recorded client info, its calls in recorded order. A call is same, changed \
(with each differing path), new-error or gone-error (with the answer of the other side). A \
recorded \"[REDACTED]\" matches any value. Calls that changed the same way are shown once, \
\"price: 12 → 15 in 10,000 calls of quote\".

A list whose items have a name, uri, uriTemplate or id (tools, resources, prompts, a prompt's \
arguments) is compared item by item by it, whatever the order: \"tools[add]: removed\", \
\"tools[get-sum]: added\", \"tools[echo].description: ... → ...\". --ignore reads the same \
notation: 'tools[*].description', 'tools[echo].inputSchema'; a position still names an item too \
('tools.0').

--mask replaces what a regular expression (the regex crate's syntax) matches by [MASKED] in \
copies of the recorded and the replayed answer alike, in every string at any depth (inside JSON \
held in a text too), before they are compared: the rest of the text is still compared. Presets: \
timestamp (RFC 3339 / ISO 8601 date and time, HTTP dates, JavaScript's Date.toString() as Node \
servers print it: \"Tue Dec 01 2026 10:15:30 GMT+0000 (Coordinated Universal Time)\") and uuid. \
Reports show masked texts. --ignore-in and --mask-in hold for the calls whose tool or prompt name, \
or resource URI, matches NAME (a glob: * any text, ? one character), on top of the rules for \
every call; they take two values, since URIs and regular expressions hold colons.

The rules may also live in a file, calltape.toml (or [tool.calltape] in pyproject.toml), found \
from the working folder upward to the repository's root (the folder holding .git), or given with \
--config; flags add to it (a --fill of the same name replaces the file's):

  [replay]
  ignore = [\"**.requestId\"]
  mask = [\"uuid\"]
  fill = { cardToken = \"env:CARD\" }     # where the value comes from, never the value

  [[replay.call]]
  name = \"get_file_info\"
  mask = [\"timestamp\"]

The same file may hold the settings of the pytest and Vitest integrations (cassette_dir, \
[upstreams]), which they find the same way; a replay checks and shows them. --print-config shows what is in force and where each rule came from (file and line, or flag).

--fill sends a value in place of a recorded \"[REDACTED]\" at a field of that name, anywhere in \
an input; the value comes from an environment variable or a file and appears in no report. A call \
that still holds \"[REDACTED]\" is sent as recorded, noted \"unfilled: NAME\".

A string of 6 characters or more that an earlier answer created (a payment id) and a later input \
uses is sent as the replayed answer holds it, noted \"input.PATH: old → new (from call N, \
PATH)\" with the whole value sent; answers that echo the new value compare equal to the recorded \
one. Only what a call created is followed: never an entry of a list answer (tools/list, \
resources/list, ...) nor a string an earlier input held. Same calls sent with followed ids are \
counted on one line; -v lists each. --no-follow turns this off.

A recorded list (tools/list, prompts/list, resources/list, resources/templates/list) is fetched \
again page by page, its items matched by name (resources by uri, templates by uriTemplate), and \
each change classified: breaking (a tool, prompt or resource removed, a required input property or \
argument added, an input property removed or its type narrowed, an output-schema property removed \
or its type widened or changed) or compatible (added, optional, an output type narrowed, described \
differently). The report lists each \
with its list and counts them: \"surface: 2 breaking, 5 compatible\". --fail-on breaking exits 0 \
when every difference is a compatible surface change.

A task-augmented call was recorded as a plain one with its result; when the server runs the tool \
only as a task, the replay runs it as one and polls it to its end within --timeout.

Calls are sent as the recorded client sent them: a session of the handshake era initializes with \
the recorded client info first, a session recorded with 2026-07-28 puts that info in each request's \
_meta. A server of the other era (--protocol, found on each connection by default) gets them \
translated, and the comparison sets aside only what the eras write differently at the top of an \
answer: resultType, the server-info stamp in _meta, and the cache hints of resources/read and lists.

Each session declares the recorded client's capabilities. The server's ping is answered; what it \
asks the client during a call (sampling, elicitation, roots; in 2026-07-28 an input_required \
result) is answered from the call's recorded asks, by method and then params, a difference of \
params noted \"ask N METHOD: answered as recorded, though the request differs: …\". A request \
nothing recorded answers gets error -32601 (data.reason not_recorded) and is a difference \
\"asks.N\" of its call.

Before a report is printed or written, and before --update writes a line, it passes calltape's \
final check: one that would still hold a provider token or a filled or known secret value (in an \
object key too) is refused, named on stderr (never the value): the whole report, or the call's line.

A recording may hold calls written by hand, with no answer yet: one line each with the method, \
the tool or prompt name or resource URI, and the arguments, as a recorded line names them, e.g. \
{\"method\":\"tools/call\",\"name\":\"echo\",\"input\":{\"message\":\"hi\"}} or \
{\"method\":\"resources/read\",\"name\":\"file:///notes.txt\"}. --update sends them to the \
server in order, in a session of their own, and writes each as a full record, redacted as \
calltape record writes it; then calltape mock answers them. Without --update such a recording is \
refused (exit 2), naming the lines.

Exit codes: 0 no difference (or --update rewrote the recording; with --fail-on breaking, only \
compatible surface changes), 1 differences, or something refused, 2 unreadable or invalid \
recording or bad arguments, 3 the server could not be started or stopped answering.";

/// The arguments of `calltape replay`.
#[derive(Debug, Args)]
// `--print-config` needs no server: the upstream group is checked when a replay runs instead.
#[command(after_help = EXAMPLES, mut_group("upstream", |g| g.required(false)))]
pub(crate) struct ReplayArgs {
    /// The recording to replay.
    #[arg(value_name = "FILE", required_unless_present = "print_config")]
    file: Option<PathBuf>,

    // The help is an attribute, not a doc comment: rustdoc would read `[NAME]` as a link.
    #[arg(
        long = "ignore",
        value_name = "GLOB",
        help = "Skip these dot paths (repeatable, comma-separated): * is one key or index, ** any \
                number, [NAME] a list item by its name, e.g. '**.quotedAt', 'content.*.text', \
                'tools[*].description'."
    )]
    ignore: Vec<String>,

    /// Compare what a regular expression matches as equal, in every string (repeatable); the
    /// presets timestamp and uuid name common ones, e.g. --mask timestamp, --mask 'req-[0-9]+'.
    #[arg(long = "mask", value_name = "REGEX|PRESET")]
    mask: Vec<String>,

    /// Skip a dot path in the calls whose tool or prompt name, or resource URI, matches the glob
    /// NAME (repeatable), e.g. --ignore-in get_file_info 'content.*.text'.
    #[arg(long = "ignore-in", num_args = 2, value_names = ["NAME", "GLOB"])]
    ignore_in: Vec<String>,

    /// Mask in the calls whose tool or prompt name, or resource URI, matches the glob NAME
    /// (repeatable), e.g. --mask-in get_file_info timestamp.
    #[arg(long = "mask-in", num_args = 2, value_names = ["NAME", "REGEX|PRESET"])]
    mask_in: Vec<String>,

    /// Read the rules from FILE instead of the calltape.toml (or pyproject.toml) found from the
    /// working folder upward.
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    config: Option<PathBuf>,

    /// Read no configuration file: only the flags' rules hold.
    #[arg(long)]
    no_config: bool,

    /// Print the rules in force and where each came from (file and line, or flag), then exit 0.
    #[arg(long)]
    print_config: bool,

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

/// The configuration file's rules (unless turned off) with the flags' added.
fn config(args: &ReplayArgs) -> Result<Config, Error> {
    let mut config = match (&args.config, args.no_config) {
        (Some(path), _) => Config::read(path)?,
        (None, true) => Config::default(),
        (None, false) => {
            let here = std::env::current_dir().map_err(|source| Error::Read {
                path: PathBuf::from("."),
                source,
            })?;
            Config::load(&here)?
        }
    };
    let r = &mut config.replay;
    let flag = Origin::given;
    r.ignore.extend(
        args.ignore
            .iter()
            .map(|g| Sourced::new(g.as_str(), flag("--ignore"))),
    );
    r.mask.extend(
        args.mask
            .iter()
            .map(|m| Sourced::new(m.as_str(), flag("--mask"))),
    );
    for spec in &args.fill {
        // Parsed here rather than by clap, whose error would repeat a value put on the command line.
        let spec: FillSpec = spec.parse()?;
        r.fill.push(Sourced::new(spec, flag("--fill")));
    }
    for (pairs, label) in [
        (&args.ignore_in, "--ignore-in"),
        (&args.mask_in, "--mask-in"),
    ] {
        // Two values a flag, so the pairs are in order.
        for pair in pairs.chunks(2) {
            let [name, rule] = pair else {
                continue;
            };
            let rule = match label {
                "--ignore-in" => CallRule::new(name).ignore([rule]),
                _ => CallRule::new(name).mask([rule]),
            };
            r.calls.push(Sourced::new(rule, flag(label)));
        }
    }
    Ok(config)
}

/// Runs `calltape replay`; `verbose` (`-v`) lists each same call sent with followed ids.
pub(crate) fn run(args: ReplayArgs, verbose: bool) -> Outcome {
    let config = config(&args)?;
    let rules = &config.replay;
    // Compiled before anything is printed, so that --print-config also checks every rule (the
    // fills' values are read only for a replay).
    let comparer = rules.comparer()?.shape(args.shape).build()?;
    let (mask, call_rules) = (rules.mask()?, rules.call_rules()?);
    if args.print_config {
        // A rule from a file may hold control characters: they reach the terminal escaped.
        let described = config.describe();
        out!("{}", escape_controls(&described, LineBreaks::Keep));
        return Ok(exit::OK);
    }
    let Some(file) = &args.file else {
        return Err(Error::NoRecording);
    };
    let recording = Recording::read(file)?;
    if !args.update && !recording.unanswered.is_empty() {
        return Err(Error::Unanswered {
            path: file.clone(),
            lines: recording.unanswered.iter().map(|c| c.line).collect(),
        });
    }
    let redactor = Redactor::builder()
        .redact_names(args.names.redact.iter().map(String::as_str))
        .keep_names(args.names.keep.iter().map(String::as_str))
        .build()?;
    let fills = rules.fills()?;
    // Hidden in every line said on stderr, and refused by the final gate in reports and rewrites.
    crate::logging::known().extend(&fills.known());
    let context = ReportContext::new()
        .server(args.upstream.describe())
        .redactor(redactor.clone())
        .date(calltape_recorder::mcp::timestamp(
            std::time::SystemTime::now(),
        ))
        .ignore(ignored(rules))
        .fills(fills.names());
    let upstream = args.upstream.upstream(Stderr::Inherit)?;
    let format: Format = args.format.parse().unwrap_or_default();
    let mut options = ReplayOptions::default()
        .comparer(comparer)
        .mask(mask)
        .call_rules(call_rules)
        .redactor(redactor)
        .jobs(args.jobs)
        .timeout(args.timeout)
        .fills(fills)
        .follow(!args.no_follow)
        .protocol(args.protocol.protocol)
        .known_secrets(crate::logging::known().clone());
    if crate::logging::stderr_is_terminal() {
        options = options.progress(progress_bar());
    }
    let runtime = crate::multi_thread_runtime()?;
    let result = runtime.block_on(replay(&recording, upstream, &options));
    if crate::logging::stderr_is_terminal() {
        err!("\r\x1b[2K");
    }
    let replayed = result.map_err(Error::upstream)?;
    let report = &replayed.report;
    let gate = crate::logging::gate();
    if args.update {
        let refused = update_recording(&recording, &replayed, &gate)?;
        for refusal in &refused {
            errln!(
                "calltape: {}: {refusal}",
                shown(&file.display().to_string())
            );
        }
        let mut said = Vec::new();
        if !recording.calls.is_empty() {
            said.push(report.summary().to_string());
        }
        match replayed.filled.len() {
            0 => {}
            1 => said.push("1 call answered for the first time".to_owned()),
            n => said.push(format!("{n} calls answered for the first time")),
        }
        errln!(
            "calltape: {}: rewritten with the replayed answers ({})",
            file.display(),
            said.join(", ")
        );
        if !refused.is_empty() {
            return Err(Error::RefusedSome(format!(
                "{} call(s) of {}",
                refused.len(),
                file.display()
            )));
        }
        return Ok(exit::OK);
    }
    let to_terminal = args.output.is_none() && std::io::stdout().is_terminal();
    let color = crate::logging::color_enabled(to_terminal);
    let text = match format {
        Format::Html => report.to_html(&context),
        Format::Text => report.to_text_with(TextOptions::new().color(color).verbose(verbose)),
        _ => report.render(format, color),
    };
    // The last check before a report is shown or stored: one that would hold a token or a known
    // value is refused whole.
    calltape_recorder::admit(&gate, [text.as_bytes()], || {
        format!("the {} report", args.format)
    })
    .map_err(Error::Refused)?;
    match &args.output {
        Some(path) => {
            // Replaced whole and owner-only, never through a link at the path: a report quotes
            // answers, redacted as the recording is, but still nobody else's to read.
            calltape_jsonl_store::fs::write_atomic(path, &text)
                .map_err(|e| Error::context("cannot write the report", e))?;
            errln!("calltape: {}", report.summary());
        }
        None => out!("{text}"),
    }
    let fail_on: FailOn = args.fail_on.parse().unwrap_or_default();
    if fail_on.fails(report) {
        Ok(exit::DIFFERENCES)
    } else {
        Ok(exit::OK)
    }
}

/// The ignore globs as the HTML report lists them: each of every call's, then each of some calls'
/// as `NAME: GLOB`.
fn ignored(rules: &calltape_replay::config::ReplayConfig) -> Vec<String> {
    let every = rules
        .ignore
        .iter()
        .flat_map(|g| g.value.split(','))
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_owned);
    let some = rules.calls.iter().flat_map(|call| {
        let rule = &call.value;
        rule.ignore
            .iter()
            .map(move |g| format!("{}: {g}", rule.name))
    });
    every.chain(some).collect()
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
        err!(
            "\r\x1b[2K[{}{}] {done}/{total} calls",
            "#".repeat(filled),
            " ".repeat(width - filled)
        );
    })
}

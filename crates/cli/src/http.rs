//! `calltape http`: the record/replay proxy for LLM APIs, and its cassette management commands.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use calltape_recorder::http::{Normalizer, Scrubber, without_userinfo};
use calltape_recorder::http::{import_mastra_dir, list_cassettes, remove_cassette};
use calltape_redact::Redactor;
use calltape_replay::ReportContext;
use calltape_replay::http::{Exhaustion, Mode, Proxy, RecordTiming, ReplayTiming, Report};
use clap::{Args, Subcommand, ValueEnum};

use crate::error::{Error, Outcome};
use crate::exit;
use crate::output::{errln, outln, shown};
#[cfg(unix)]
use crate::signals::Signal;
use crate::signals::Signals;

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape http --upstream openai=https://api.openai.com --cassette tests/cassettes/chat.jsonl \\
      --env OPENAI_BASE_URL=openai/v1 -- pytest
  calltape http --upstream anthropic=https://api.anthropic.com --cassette-dir tests/cassettes \\
      --env ANTHROPIC_BASE_URL=anthropic -- npm test
  calltape http --mode replay --upstream openai=https://api.openai.com --cassette chat.jsonl
  calltape scan tests/cassettes
  calltape http show tests/cassettes/chat.jsonl

Requests to http://127.0.0.1:PORT/<name>/<rest> go to that upstream's <rest>. A test can choose \
its own cassette under --cassette-dir with the header `x-calltape-cassette: NAME` or the path \
prefix /_cassette/NAME/ (a / in NAME written %2F); GET /_calltape/cassette/NAME answers, as JSON, \
what the run did with that cassette so far.

Loopback only: a request with an Origin header gets 403 unless --allow-origin names that \
origin, so does a request without one that a browser marks as sent by a page of another site \
(Sec-Fetch-Site: cross-site or same-site, as an <img> or a form sends it), and a Host that is not \
127.0.0.1, localhost or [::1] with the proxy's port gets 421. Without --auth or --path-token any \
local user can use the proxy, which it says once on stderr. With --auth the proxy holds a real \
key, so it serves only under a random \
per-run path prefix, http://127.0.0.1:PORT/ct-<32 hex digits>/<name>/<rest>: the URLs --env and \
CALLTAPE_PROXY_URL give the command, and the URLs printed on stdout without a command, include it \
(--path-token FILE also writes it to an owner-only file). A request without it gets 404 and never \
goes upstream.

Modes (--mode, else CALLTAPE_MODE, else LLM_TEST_MODE / UPDATE_RECORDINGS=true, else replay when \
CI is set to anything but empty, 0 or false, else auto):
  auto     the local default: replay what the cassette holds, record the rest. A request gets an
           unused recording of it, then what --exhaustion and --fuzzy allow; the rest is
           forwarded and added
  replay   strict: a miss is a 404 and no upstream is ever contacted (the default when CI is set)
  record   re-record every cassette the run touches from scratch (alias: update); the previous
           cassette stays whole until a clean exit replaces it, and an interaction whose answer
           is the same (request ids, rate-limit counters, dates and timing aside) keeps its line
  append   keep every recording and add misses: each recording answers its exact request once;
           anything else (new, repeated beyond the recorded count, near match) is recorded
  live     forward only, write nothing
  verify   forward, compare each answer's structure with the recording, report drift; write
           nothing

A miss answers 404 in the provider's error shape with `x-should-retry: false`; stderr names the \
closest recordings with a diff. The exit status is the command's, with two exceptions when it \
succeeded: in replay and verify modes a miss, a refused fuzzy match or drift exits 1, even when the \
application swallowed the 404 (--allow-misses keeps the command's status), and any mode exits 1 \
when an interaction was refused because a line or blob of it still held a credential (nothing of \
it is stored; the interactions after it are).

--report FILE writes what the run did per cassette (hits, misses with their closest recordings, \
fuzzy hits, drift) as JSON, with --report-format junit as one testcase per cassette, or with \
--report-format html as one self-contained page to open in a browser.";

/// The arguments of `calltape http`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES, args_conflicts_with_subcommands = true)]
pub(crate) struct HttpArgs {
    #[command(subcommand)]
    action: Option<HttpAction>,

    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum HttpAction {
    /// List the cassettes under a folder (default: the current one).
    #[command(after_help = "Examples:\n  calltape http ls\n  calltape http ls tests/cassettes")]
    Ls {
        /// The folder to search, recursively.
        dir: Option<PathBuf>,
    },
    /// Summarise and validate a cassette: interactions, models, sizes (the same as `calltape show`).
    #[command(after_help = "Example:\n  calltape http show tests/cassettes/chat.jsonl")]
    Show {
        /// The cassette file.
        cassette: PathBuf,
    },
    /// Delete a cassette and its sidecar blobs.
    #[command(after_help = "Example:\n  calltape http rm tests/cassettes/chat.jsonl")]
    Rm {
        /// The cassette file.
        cassette: PathBuf,
    },
    /// Check call recordings, cassettes and their sidecar blobs for credentials (the same as
    /// `calltape scan`).
    #[command(after_help = crate::scan::EXAMPLES)]
    Scan(crate::scan::ScanArgs),
    /// Convert another recorder's recordings into cassettes.
    #[command(after_help = "\
Examples:
  calltape http import --from mastra src/__recordings__
  calltape http import --from mastra src/__recordings__ --out tests/cassettes

Each *.json file becomes a cassette of the same name. Only regular files inside the folder are \
read, never through a symbolic link: a recordings file of at most 256 MiB, a binary artifact of at \
most 64 MiB. A URL's user info (https://user:token@host) is dropped. A recording that cannot be \
imported (its artifact missing, a link or too large) is named on stderr and left out, the others \
are imported, and the run exits 1; a file that cannot be read at all exits 2.")]
    Import {
        /// The format to read.
        #[arg(long, value_enum)]
        from: ImportFormat,
        /// The folder holding the recordings (for mastra: its __recordings__ folder).
        dir: PathBuf,
        /// Where to write the cassettes (default: the same folder).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ImportFormat {
    /// The `{meta, recordings}` JSON files of Mastra's LLM recorder.
    Mastra,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Pace {
    /// One write per event, no delay.
    Fast,
    /// The recorded delays, capped by --max-delay.
    Realtime,
    /// Events split at reproducible arbitrary byte positions (--seed), to test client parsers.
    Rechunk,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Timing {
    /// Delays rounded to 10 ms buckets, so re-recording does not churn.
    Bucketed,
    /// Exact delays in milliseconds.
    Full,
    /// No delays (all 0): timing never changes a re-recorded cassette.
    #[value(alias = "none")]
    Off,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// An upstream API: NAME=URL (repeatable), e.g. openai=https://api.openai.com.
    #[arg(long = "upstream", value_name = "NAME=URL")]
    upstreams: Vec<String>,

    /// The cassette for requests that do not choose one.
    #[arg(long, value_name = "PATH")]
    cassette: Option<PathBuf>,

    /// The folder for per-test cassettes (chosen with the x-calltape-cassette header or /_cassette/NAME/).
    #[arg(long, value_name = "DIR")]
    cassette_dir: Option<PathBuf>,

    /// The loopback address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    listen: SocketAddr,

    /// auto, replay, record (or update), append, live or verify.
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    mode: Option<Mode>,

    /// An environment variable for the command, pointing into the proxy: NAME=PATH gives
    /// NAME=http://127.0.0.1:PORT/PATH (repeatable), e.g. OPENAI_BASE_URL=openai/v1.
    #[arg(long = "env", value_name = "NAME=PATH")]
    envs: Vec<String>,

    /// A key the proxy sends upstream itself, so the command never holds it (record-side modes):
    /// NAME=env:VAR sends it the way the upstream's provider reads it (x-api-key for Anthropic,
    /// Authorization: Bearer for others), NAME=HEADER:env:VAR in HEADER (repeatable).
    #[arg(long = "auth", value_name = "NAME=env:VAR")]
    auth: Vec<String>,

    /// Drop body fields matching a dot-path glob before matching (repeatable), e.g. metadata.run_id.
    #[arg(long = "ignore-body", value_name = "GLOB")]
    ignore_body: Vec<String>,

    /// Drop a query parameter before matching (repeatable).
    #[arg(long = "ignore-query", value_name = "NAME")]
    ignore_query: Vec<String>,

    /// Serve the closest recording when nothing matches exactly, if at least this similar (0..1).
    #[arg(long, value_name = "THRESHOLD", num_args = 0..=1, default_missing_value = "0.8")]
    fuzzy: Option<f32>,

    /// Accept fuzzy hits in replay mode too.
    #[arg(long)]
    allow_fuzzy: bool,

    /// What to do once every recording of a request was served.
    #[arg(long, value_name = "POLICY", default_value = "error", value_parser = parse_exhaustion)]
    exhaustion: Exhaustion,

    /// How replayed streams are paced.
    #[arg(long = "replay-timing", value_enum, default_value = "fast")]
    replay_timing: Pace,

    /// The longest pause between two events with --replay-timing realtime, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    max_delay: u64,

    /// The seed for --replay-timing rechunk.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,

    /// How recorded delays between stream events are stored.
    #[arg(long, value_enum, default_value = "bucketed")]
    timing: Timing,

    #[command(flatten)]
    names: crate::args::RedactNames,

    /// A response header to drop from recordings although it is kept by default (repeatable;
    /// `prefix*` allowed), e.g. x-request-id.
    #[arg(long = "drop-header", value_name = "NAME")]
    drop_headers: Vec<String>,

    /// Another response header to keep in recordings (repeatable; `prefix*` allowed). Only
    /// content-type, retry-after, x-ratelimit-*, anthropic-ratelimit-* and the request-id headers
    /// are kept by default; a kept value is still redacted.
    #[arg(
        long = "keep-response-header",
        visible_alias = "keep-header",
        value_name = "NAME"
    )]
    keep_headers: Vec<String>,

    /// Serve requests from this browser origin (repeatable), e.g. http://localhost:5173; any other
    /// request with an Origin header gets 403.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,

    /// Write the per-run path prefix's token (`ct-<hex>`) to this owner-only file; the proxy then
    /// serves under the prefix even without --auth.
    #[arg(long = "path-token", value_name = "FILE")]
    path_token: Option<PathBuf>,

    /// Keep the command's exit status when a request missed, a fuzzy match was refused or an
    /// answer drifted (replay and verify modes exit 1 on these otherwise).
    #[arg(long)]
    allow_misses: bool,

    /// Write what the run did, per cassette, to this owner-only file.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,

    /// The format of --report.
    #[arg(long, value_enum, default_value = "json", requires = "report")]
    report_format: ReportFormat,

    /// The command to run against the proxy; the exit status is its own (see the exit rules below).
    #[arg(last = true, value_name = "CMD")]
    command: Vec<OsString>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ReportFormat {
    /// JSON: per cassette, its hits, its misses with their closest recordings, fuzzy hits and drift.
    Json,
    /// JUnit XML: one testcase per cassette, one failure per miss, refused fuzzy match or drift.
    Junit,
    /// One self-contained HTML page: a row per cassette, each miss with its closest recording.
    Html,
}

pub(crate) fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

fn parse_exhaustion(s: &str) -> Result<Exhaustion, String> {
    s.parse()
}

impl HttpArgs {
    /// The redaction names given to the proxy.
    #[cfg(test)]
    pub(crate) fn names(&self) -> &crate::args::RedactNames {
        &self.serve.names
    }
}

pub(crate) fn run(args: HttpArgs) -> Outcome {
    match args.action {
        Some(HttpAction::Ls { dir }) => ls(dir.as_deref().unwrap_or(Path::new("."))),
        Some(HttpAction::Show { cassette }) => crate::show::show(&cassette),
        Some(HttpAction::Rm { cassette }) => rm(&cassette),
        Some(HttpAction::Scan(args)) => crate::scan::run(args),
        Some(HttpAction::Import {
            from: ImportFormat::Mastra,
            dir,
            out,
        }) => import_from_mastra(&dir, out.as_deref().unwrap_or(&dir)),
        None => serve(args.serve),
    }
}

/// `NAME=VALUE` → (name, value); `example` ends the message when it is not that.
fn split_pair<'a>(
    s: &'a str,
    flag: &'static str,
    example: &'static str,
) -> Result<(&'a str, &'a str), Error> {
    s.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| Error::NotAPair {
            flag,
            value: s.to_owned(),
            example,
        })
}

/// `--upstream NAME=URL` as a hint or a report shows it: the URL without its user info.
fn shown_upstream(spec: &str) -> String {
    match spec.split_once('=') {
        Some((name, url)) => format!("{name}={}", without_userinfo(url)),
        None => spec.to_owned(),
    }
}

/// `NAME=env:VAR` or `NAME=HEADER:env:VAR` → (upstream, the header if named, the variable's value).
fn resolve_auth(spec: &str) -> Result<(&str, Option<&str>, String), Error> {
    let (name, rest) = split_pair(spec, "--auth", "")?;
    let (header, var) = match rest.split_once("env:") {
        Some(("", var)) => (None, var),
        Some((h, var)) => (Some(h.trim_end_matches(':')), var),
        None => {
            return Err(Error::AuthNotFromEnv {
                upstream: name.to_owned(),
            });
        }
    };
    let value = std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| Error::AuthVarUnset {
            upstream: name.to_owned(),
            var: var.to_owned(),
        })?;
    // Hidden in every stderr line and refused in every report, under the variable's name.
    crate::logging::learn(var, &value);
    Ok((name, header, value))
}

fn serve(args: ServeArgs) -> Outcome {
    if args.upstreams.is_empty() {
        return Err(Error::NoUpstreamApi);
    }
    let mode = Mode::resolve(args.mode).map_err(Error::Mode)?;
    let mut builder = Proxy::builder()
        .listen(args.listen)
        .mode(mode)
        .exhaustion(args.exhaustion)
        .allow_fuzzy(args.allow_fuzzy)
        .redact_names(args.names.redact.clone())
        .keep_names(args.names.keep.clone())
        // The keys the proxy knows (the environment's, --auth's) are hidden on stderr too.
        .known_secrets(crate::logging::known().clone())
        .replay_timing(match args.replay_timing {
            Pace::Fast => ReplayTiming::Fast,
            Pace::Realtime => ReplayTiming::Realtime {
                max_delay: Duration::from_millis(args.max_delay),
            },
            Pace::Rechunk => ReplayTiming::Rechunk { seed: args.seed },
        })
        .record_timing(match args.timing {
            Timing::Bucketed => RecordTiming::Bucketed,
            Timing::Full => RecordTiming::Full,
            Timing::Off => RecordTiming::Off,
        });
    for spec in &args.upstreams {
        let (name, url) = split_pair(spec, "--upstream", ", e.g. openai=https://api.openai.com")?;
        builder = builder.upstream(name, url);
    }
    let mut hint = String::from("calltape http --mode record");
    for u in &args.upstreams {
        hint.push_str(&format!(" --upstream {}", shown_upstream(u)));
    }
    if let Some(c) = &args.cassette {
        builder = builder.cassette(c);
        hint.push_str(&format!(" --cassette {}", c.display()));
    }
    if let Some(d) = &args.cassette_dir {
        builder = builder.cassette_dir(d);
        hint.push_str(&format!(" --cassette-dir {}", d.display()));
    }
    hint.push_str(" -- <your test command> (or set CALLTAPE_MODE=record)");
    builder = builder.rerecord_hint(hint);
    if let Some(t) = args.fuzzy {
        builder = builder.fuzzy(t);
    }
    for g in &args.ignore_body {
        builder = builder.ignore_body(g.clone());
    }
    for q in &args.ignore_query {
        builder = builder.ignore_query(q.clone());
    }
    for h in &args.drop_headers {
        builder = builder.drop_response_header(h.clone());
    }
    for h in &args.keep_headers {
        builder = builder.keep_response_header(h.clone());
    }
    for origin in &args.allow_origins {
        builder = builder.allow_origin(origin.clone());
    }
    if let Some(file) = &args.path_token {
        builder = builder.path_token_file(file);
    }
    // The same URLs in every mode: a replay run that drops the key keeps the prefix.
    if !args.auth.is_empty() {
        builder = builder.path_token(true);
    }
    if mode != Mode::Replay {
        for spec in &args.auth {
            builder = match resolve_auth(spec)? {
                (up, Some(header), value) => builder.auth(up, header, value),
                // The header the upstream's provider reads: the proxy knows which.
                (up, None, key) => builder.auth_key(up, key),
            };
        }
    }
    let mut envs = Vec::new();
    for spec in &args.envs {
        let (k, v) = split_pair(spec, "--env", ", e.g. OPENAI_BASE_URL=openai/v1")?;
        envs.push((k.to_owned(), v.trim_start_matches('/').to_owned()));
    }
    let runtime = crate::multi_thread_runtime()?;
    runtime.block_on(async move {
        let proxy = builder.start().await?;
        // The address only: the path prefix goes to stdout or to the command, not to logs.
        tracing::info!(mode = %proxy.mode(), addr = %proxy.local_addr(), "calltape http proxy listening");
        if proxy.path_token().is_none() {
            // No word follows a flag but a comma or the line end: the log's redactor would take
            // it for the flag's value.
            tracing::warn!(
                "listening on 127.0.0.1:{} with no path prefix, so any local user can send requests through it (to the upstreams, and into the cassettes); to serve only under a random per-run path prefix, give --auth, or name a file for the prefix with --path-token",
                proxy.local_addr().port()
            );
        }
        let code = if args.command.is_empty() {
            // Caught before the URLs are printed: whoever reads them may stop the proxy at once,
            // and it must still write its cassettes.
            let mut signals = Signals::new();
            for u in &args.upstreams {
                if let Some((name, _)) = u.split_once('=') {
                    outln!("{name} {}", proxy.base_url(name));
                }
            }
            outln!("{}", proxy.url());
            let signal = signals.next().await;
            tracing::info!("{signal}: stopping the proxy");
            exit::OK
        } else {
            run_child(&args.command, &envs, &proxy.url()).await?
        };
        let report = proxy.shutdown().await.map_err(Error::upstream)?;
        finish(&report, &args, code)
    })
}

/// Says what the proxy's run did, writes `--report`, and gives the exit status: the command's, or 1
/// when it passed but a request missed (unless `--allow-misses`) or an interaction was refused.
fn finish(report: &Report, args: &ServeArgs, code: u8) -> Outcome {
    let summary = report.summary();
    if report.misses.is_empty()
        && report.fuzzy_hits.is_empty()
        && report.errors.is_empty()
        && report.drift.is_empty()
        && report.refused.is_empty()
    {
        tracing::info!("{summary}");
    } else {
        errln!("{summary}");
    }
    let failures = report.failure_text();
    if !failures.is_empty() {
        errln!("{}", failures.trim_end_matches('\n'));
    }
    if let Some(file) = &args.report {
        let text = match args.report_format {
            ReportFormat::Json => format!("{:#}\n", report.to_json()),
            ReportFormat::Junit => report.to_junit(),
            ReportFormat::Html => report.to_html(
                &ReportContext::new()
                    .server(
                        args.upstreams
                            .iter()
                            .map(|u| shown_upstream(u))
                            .collect::<Vec<_>>()
                            .join(", "),
                    )
                    .redactor(
                        Redactor::builder()
                            .redact_names(&args.names.redact)
                            .keep_names(&args.names.keep)
                            .build()?,
                    )
                    .date(calltape_recorder::mcp::timestamp(
                        std::time::SystemTime::now(),
                    )),
            ),
        };
        // The last check before the report is stored: one that would hold a token or a known
        // value is refused whole, and the run fails.
        calltape_recorder::admit(&crate::logging::gate(), [text.as_bytes()], || {
            let format = match args.report_format {
                ReportFormat::Json => "JSON",
                ReportFormat::Junit => "JUnit",
                ReportFormat::Html => "HTML",
            };
            format!("the {format} report")
        })
        .map_err(Error::Refused)?;
        calltape_jsonl_store::fs::write_atomic(file, text)
            .map_err(|e| Error::context("cannot write the report", e))?;
    }
    // A miss the application swallowed still fails the run; a refused interaction failed
    // closed, so the run fails even when the command passed.
    let missed = report.has_failures() && !args.allow_misses;
    if code == exit::OK && (missed || !report.refused.is_empty()) {
        return Ok(exit::DIFFERENCES);
    }
    Ok(code)
}

/// Runs the command against the proxy and gives its exit status (128 + the signal that ended it).
async fn run_child(command: &[OsString], envs: &[(String, String)], base: &str) -> Outcome {
    let mut cmd = tokio::process::Command::new(&command[0]);
    cmd.args(&command[1..]);
    cmd.env("CALLTAPE_PROXY_URL", base);
    for (k, v) in envs {
        cmd.env(k, format!("{base}/{v}"));
    }
    let mut child = cmd.spawn().map_err(|source| Error::Spawn {
        program: command[0].to_string_lossy().into_owned(),
        source,
    })?;
    let mut signals = Signals::new();
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            signal = signals.next() => match signal {
                // Passed on; the child's exit ends the loop.
                #[cfg(unix)]
                Signal::Term => {
                    if let Some(pid) = child.id().and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                    }
                }
                // The terminal sent it to the child too (on Windows, every console event reaches
                // every process of the console): wait for the child to finish.
                _ => {}
            },
        }
    };
    let status = status.map_err(Error::Wait)?;
    Ok(exit_code(status))
}

/// The exit code of a command: its own, or 128 + the signal that ended it.
#[cfg(unix)]
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c).unwrap_or(1),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(1),
        _ => 1,
    }
}

/// The exit code of a command: its own, or 1 when it does not fit in a byte.
#[cfg(windows)]
fn exit_code(status: std::process::ExitStatus) -> u8 {
    status
        .code()
        .and_then(|c| u8::try_from(c).ok())
        .unwrap_or(1)
}

fn ls(dir: &Path) -> Outcome {
    for listed in list_cassettes(dir) {
        outln!("{listed}");
    }
    Ok(exit::OK)
}

fn rm(path: &Path) -> Outcome {
    remove_cassette(path)?;
    outln!("removed {}", shown(&path.display().to_string()));
    Ok(exit::OK)
}

fn import_from_mastra(dir: &Path, out: &Path) -> Outcome {
    let scrubber = Scrubber::builder().secrets_from_env(true).build()?;
    let imported = import_mastra_dir(dir, out, &Normalizer::new(), &scrubber)?;
    let failed = imported.failures.len();
    let total = imported.files.len() + failed;
    let mut left_out = 0;
    for file in imported.files {
        outln!("{file}");
        // Each recording left out (unreadable, or refused by the final gate) is named; the run
        // then exits 1.
        for e in file.left_out {
            Error::from(e).report();
            left_out += 1;
        }
    }
    for e in imported.failures {
        Error::from(e).report();
    }
    match (failed, left_out) {
        (0, 0) => Ok(exit::OK),
        (0, _) => Ok(exit::DIFFERENCES),
        (failed, _) => Err(Error::Partly {
            failed,
            total,
            what: "recordings files could not be imported",
        }),
    }
}

//! `calltape record`, and the recording side of `calltape bridge --record`: the bridge's observer hook
//! feeds a [`Recorder`] that writes one redacted line per answered call.

use std::path::{Path, PathBuf};

use calltape_recorder::mcp::{
    DEFAULT_METHODS, Recorder, RecorderOptions, RecorderReport, SessionRecorder,
};
use calltape_stdio_bridge::Tap;
use clap::Args;

use crate::error::{Error, Outcome};
use crate::output::errln;

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape record -o calls.jsonl -- node server.js
  calltape record -o calls.jsonl --methods tools/call --keep pageToken -- python -m my_server
  calltape record -o calls.jsonl --url http://127.0.0.1:3000/mcp

Put the first form in an MCP client's configuration as the server command and use the client as \
usual: every tools/call, resources/read and prompts/get it makes is appended to calls.jsonl \
(created 0600) with the answer it received, credentials redacted. Review the file, commit it, and \
run `calltape replay calls.jsonl -- node server.js` in CI.

The server's surface is recorded too: the last tools/list, prompts/list, resources/list and \
resources/templates/list the client read in a session, each one line holding the items of every \
page, written when the session ends, so that a replay can say which tool went away or changed its \
inputs.

A client of either protocol era is recorded alike, one line per call: a 2026-07-28 client's info \
and version come from each request's _meta, a call answered input_required is one line with the \
final result of the client's retries, and server/discover and subscriptions/listen are not calls.

A value the client sent under a credential name is hidden wherever the server echoes it (in an \
object key or an error code too). A call whose line would still hold a provider token or such a \
value is refused: nothing of it is written, stderr names it (never the value) when the recording \
ends, and calltape exits 1.";

/// What is recorded and how: shared by `calltape record` and `calltape bridge --record`.
#[derive(Debug, Clone, Args)]
pub(crate) struct RecordOptions {
    /// The methods to record, comma-separated [default: tools/call,resources/read,prompts/get,
    /// tools/list,prompts/list,resources/list,resources/templates/list]; a list is recorded once
    /// per session, all its pages in one line.
    #[arg(long, value_name = "M,…", value_delimiter = ',')]
    methods: Vec<String>,

    /// The most the recording may grow to; later calls are dropped and reported, e.g. 10MiB.
    #[arg(long, value_name = "BYTES", default_value = "10MiB", value_parser = crate::units::size::<u64>)]
    max_bytes: u64,

    #[command(flatten)]
    pub(crate) names: crate::args::RedactNames,
}

impl RecordOptions {
    pub(crate) fn recorder_options(&self) -> RecorderOptions {
        let methods: Vec<String> = if self.methods.is_empty() {
            DEFAULT_METHODS.iter().map(|m| (*m).to_owned()).collect()
        } else {
            self.methods
                .iter()
                .map(|m| m.trim().to_owned())
                .filter(|m| !m.is_empty())
                .collect()
        };
        // The run's known values: the recorder hides them, gates on them, and adds what requests
        // hold under credential names, which the log then hides too.
        RecorderOptions::default()
            .methods(methods)
            .max_bytes(self.max_bytes)
            .redact_names(self.names.redact.iter().cloned())
            .keep_names(self.names.keep.iter().cloned())
            .known_secrets(crate::logging::known().clone())
    }
}

/// The arguments of `calltape record`: the bridge's, plus where to write.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct RecordArgs {
    /// The recording to write: created 0600, or extended when it exists.
    #[arg(short = 'o', long = "output", value_name = "FILE", required = true)]
    output: PathBuf,

    #[command(flatten)]
    pub(crate) bridge: crate::bridge::BridgeArgs,
}

pub(crate) fn run(args: RecordArgs) -> Outcome {
    crate::bridge::run_recording(args.bridge, Some(args.output))
}

/// A recording in progress: hand its taps to the bridge ([`session`](Self::session)) or the server
/// ([`sessions`](Self::sessions)), then call [`finish`](Self::finish) once they have returned (or
/// were stopped by a signal): by then every tap has seen its last frame.
pub(crate) struct ActiveRecording {
    recorder: Recorder,
    path: PathBuf,
}

impl ActiveRecording {
    /// Opens `path`, created 0600 or extended. Must run inside the Tokio runtime that will run the
    /// bridge or the server.
    pub(crate) async fn start(path: &Path, options: &RecordOptions) -> Result<Self, Error> {
        let recorder = Recorder::open(path, options.recorder_options())
            .await
            .map_err(|e| Error::context(format!("cannot record to {}", path.display()), e))?;
        Ok(Self {
            recorder,
            path: path.to_owned(),
        })
    }

    /// The tap of one session.
    pub(crate) fn session(&self) -> SessionRecorder {
        let tap = self.recorder.session();
        tracing::debug!(path = %self.path.display(), session = tap.id(), "recording");
        tap
    }

    /// What makes a tap for each session of a server.
    pub(crate) fn sessions(&self) -> impl Fn() -> Box<dyn Tap> + Send + Sync + 'static {
        let recorder = self.recorder.clone();
        move || Box::new(recorder.session())
    }

    /// Writes everything to disk and says in one line on stderr what was recorded: at info level
    /// when every call reached the file, else whatever the log level, each call the final gate
    /// refused named. Refused calls are an error, which fails the run.
    pub(crate) async fn finish(self) -> Result<(), Error> {
        say_recorded(&self.path, &self.recorder.close().await)
    }
}

/// Says in one line on stderr what was recorded to `path`: at info level when every call reached the
/// file, else whatever the log level, each call the final gate refused named. Refused calls are an
/// error, which fails the run.
pub(crate) fn say_recorded(path: &Path, report: &RecorderReport) -> Result<(), Error> {
    if report.is_complete() {
        tracing::info!("{}: {report}", path.display());
        return Ok(());
    }
    for refusal in &report.refusals {
        errln!("calltape: {}: {refusal}", path.display());
    }
    errln!("calltape: {}: {report}", path.display());
    match report.refused {
        0 => Ok(()),
        n => Err(Error::RefusedSome(format!(
            "{n} call(s) recorded to {}",
            path.display()
        ))),
    }
}

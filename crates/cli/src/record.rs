//! `calltape record`, and the recording side of `calltape bridge --record`: the bridge's observer hook
//! feeds a [`Recorder`] that writes one redacted line per answered call.

use std::path::{Path, PathBuf};

use calltape_recorder::mcp::{DEFAULT_METHODS, Recorder, RecorderOptions, SessionRecorder};
use clap::Args;

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape record -o calls.jsonl -- node server.js
  calltape record -o calls.jsonl --methods tools/call --keep pageToken -- python -m my_server
  calltape record -o calls.jsonl --url http://127.0.0.1:3000/mcp

Put the first form in an MCP client's configuration as the server command and use the client as
usual: every tools/call, resources/read and prompts/get it makes is appended to calls.jsonl (created
0600) with the answer it received, credentials redacted. Review the file, commit it, and run
`calltape replay calls.jsonl -- node server.js` in CI.";

/// What is recorded and how: shared by `calltape record` and `calltape bridge --record`.
#[derive(Debug, Clone, Args)]
pub(crate) struct RecordOptions {
    /// The methods to record, comma-separated [default: tools/call,resources/read,prompts/get].
    #[arg(long, value_name = "M,…", value_delimiter = ',')]
    methods: Vec<String>,

    /// The most the recording may grow to; later calls are dropped and reported, e.g. 10MiB.
    #[arg(long, value_name = "BYTES", default_value = "10MiB", value_parser = size)]
    max_bytes: u64,

    #[command(flatten)]
    pub(crate) names: crate::args::RedactNames,
}

fn size(input: &str) -> Result<u64, String> {
    crate::units::size(input).map(|n| n as u64)
}

impl RecordOptions {
    fn recorder_options(&self) -> RecorderOptions {
        let methods: Vec<String> = if self.methods.is_empty() {
            DEFAULT_METHODS.iter().map(|m| (*m).to_owned()).collect()
        } else {
            self.methods
                .iter()
                .map(|m| m.trim().to_owned())
                .filter(|m| !m.is_empty())
                .collect()
        };
        RecorderOptions::default()
            .methods(methods)
            .max_bytes(self.max_bytes)
            .redact_names(self.names.redact.iter().cloned())
            .keep_names(self.names.keep.iter().cloned())
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

pub(crate) fn run(args: RecordArgs) -> crate::error::Outcome {
    crate::bridge::run_recording(args.bridge, Some(args.output))
}

/// A recording in progress: hand [`tap`](ActiveRecording::start)'s tap to the bridge, then call
/// [`finish`](ActiveRecording::finish) once the bridge has returned (or was stopped by a signal): by
/// then the tap has seen every frame.
pub(crate) struct ActiveRecording {
    recorder: Recorder,
    path: PathBuf,
}

impl ActiveRecording {
    /// Opens `path` and returns the recording with the tap for the bridge. Must run inside the Tokio
    /// runtime that will run the bridge.
    pub(crate) async fn start(
        path: &Path,
        options: &RecordOptions,
    ) -> Result<(Self, SessionRecorder), crate::error::Error> {
        let recorder = Recorder::open(path, options.recorder_options()).await?;
        let tap = recorder.session();
        tracing::debug!(path = %path.display(), session = tap.id(), "recording");
        Ok((
            Self {
                recorder,
                path: path.to_owned(),
            },
            tap,
        ))
    }

    /// Writes everything to disk and prints one summary line on stderr. Returns whether every call
    /// reached the file.
    pub(crate) async fn finish(self) -> bool {
        let report = self.recorder.close().await;
        if report.is_complete() {
            tracing::info!("{}: {report}", self.path.display());
        } else {
            // Drops and failures: always said, whatever the log level.
            eprintln!("calltape: {}: {report}", self.path.display());
        }
        report.is_complete()
    }
}

//! `calltape bridge`: a stdio MCP session that survives restarts of the server behind it.

use std::{path::PathBuf, sync::Arc, time::Duration};

use calltape_stdio_bridge::{Bridge, EraUpstream, Stderr, Upstream, Watcher, stdio};
use clap::Args;

use crate::{
    args::{ProtocolArg, UpstreamArgs},
    error::{Error, Outcome},
    exit,
    units::{duration, size},
};

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape bridge --watch src -- cargo run -q
  calltape bridge -- npx -y @modelcontextprotocol/server-everything
  calltape bridge --url http://127.0.0.1:3000/mcp --header-file ~/.config/mcp/headers
  calltape bridge --url https://mcp.example.com/mcp   (signs in with OAuth when the server asks)
  calltape bridge --socket /run/user/1000/mcp.sock --path /mcp

Put the first form in an editor's MCP configuration as the server command: the editor's session \
survives every rebuild and restart of the server.

Errors the bridge answers with (JSON-RPC codes, each with data.reason):
  -32700  a line that is not JSON, not an object or array, or over --max-frame
  -32000  upstream unreachable         -32001  upstream exited with the request in flight
  -32002  hold buffer full             -32003  restart deadline passed
  -32004  upstream protocol error (an answer that is not MCP)";

pub(crate) const LONG_ABOUT: &str = "\
Run an MCP server behind a stdio session that survives its restarts.

The client talks newline-delimited JSON-RPC on stdin and stdout; the bridge forwards it to a child process it \
runs (after `--`), a Streamable HTTP endpoint (--url) or HTTP over a Unix socket (--socket). While the server \
starts or restarts, the client's messages are held and sent once it is ready; after a restart the bridge \
replays the client's initialize and tells the client its lists changed. stdout carries only JSON-RPC; logs \
go to stderr or --log.";

/// The arguments of `calltape bridge`.
///
/// The client talks newline-delimited JSON-RPC on stdin and stdout; the bridge forwards it to a child
/// process it runs (after `--`), a Streamable HTTP endpoint (`--url`) or HTTP over a Unix socket
/// (`--socket`). While the server starts or restarts, the client's messages are held and sent once it is
/// ready; after a restart the bridge replays the client's `initialize` and tells the client its lists
/// changed. stdout carries only JSON-RPC; logs go to stderr or `--log`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct BridgeArgs {
    /// Restart the child when a file under PATH changes (repeatable; folders are watched recursively).
    #[arg(long = "watch", value_name = "PATH")]
    watch: Vec<PathBuf>,

    /// Quiet time after a change before the restart.
    #[arg(long, value_name = "DUR", default_value = "200ms", value_parser = duration)]
    watch_debounce: Duration,

    /// Messages held while the server starts or restarts; beyond it requests get -32002.
    #[arg(long, value_name = "N", default_value_t = calltape_stdio_bridge::DEFAULT_BUFFER_MESSAGES)]
    buffer: usize,

    /// How long a held request waits for the server before it gets -32003, e.g. 30s, 500ms, 2m.
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = duration)]
    restart_deadline: Duration,

    /// Client lines longer than this are discarded unread and answered with -32700, e.g. 16MiB.
    #[arg(long, value_name = "BYTES", default_value = "16MiB", value_parser = size::<usize>)]
    max_frame: usize,

    /// Write logs (the bridge's and the child's stderr, redacted) to FILE instead of stderr, appending;
    /// FILE is created 0600 and never written through a symbolic link.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,

    /// Record every tools/call, resources/read and prompts/get with the answer the client received,
    /// and the server's tool, prompt and resource lists once per session, to FILE (created 0600, or
    /// extended; credentials redacted), as `calltape record -o FILE` does.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,

    #[command(flatten)]
    pub(crate) recording: crate::record::RecordOptions,

    #[command(flatten)]
    protocol: ProtocolArg,

    #[command(flatten)]
    upstream: UpstreamArgs,
}

/// The server the flags name, behind the adapter that translates between the protocol eras.
fn upstream(args: &BridgeArgs) -> Result<Arc<dyn Upstream>, Error> {
    if !args.upstream.is_child() && !args.watch.is_empty() {
        return Err(Error::WatchWithoutChild);
    }
    let stderr = match &args.log {
        Some(_) => crate::logging::redacted_child_stderr(),
        None => Stderr::Inherit,
    };
    let server = args.upstream.upstream(stderr)?;
    Ok(Arc::new(EraUpstream::from_arc(
        server,
        args.protocol.protocol,
    )))
}

/// Sends everything written to stderr (our logs, and the child's stderr, redacted on its way) to
/// `path`: appended, owner-only, never through a link planted at the path.
fn redirect_stderr(path: &PathBuf) -> Result<(), Error> {
    let file = calltape_jsonl_store::fs::append(path)
        .map_err(|e| Error::context("cannot open the log file", e))?;
    #[cfg(unix)]
    rustix::stdio::dup2_stderr(&file).map_err(|e| Error::RedirectLogs {
        path: path.clone(),
        source: e.into(),
    })?;
    // What calltape writes goes to the file; the child's stderr reaches it through that writer
    // (`--log` makes it a redacted pipe), and a panic message stays on the console.
    #[cfg(windows)]
    crate::logging::log_to(file);
    Ok(())
}

pub(crate) fn run(args: BridgeArgs) -> Outcome {
    run_recording(args, None)
}

/// `calltape bridge`, recording to `output` (`calltape record -o FILE`) or to `--record FILE`.
pub(crate) fn run_recording(args: BridgeArgs, output: Option<PathBuf>) -> Outcome {
    let record_to = match (output, args.record.clone()) {
        (Some(_), Some(_)) => {
            return Err(Error::RecordingTwice);
        }
        (output, record) => output.or(record),
    };
    if let Some(path) = &args.log {
        redirect_stderr(path)?;
    }
    let upstream = upstream(&args)?;
    let runtime = crate::single_thread_runtime()?;
    let mut builder = Bridge::builder()
        .upstream_arc(upstream)
        .buffer_messages(args.buffer)
        .restart_deadline(args.restart_deadline)
        .max_frame(args.max_frame)
        // As if stdin had ended: the child is stopped gracefully.
        .shutdown_on(crate::signals::termination("ending the session"));
    let recording = match &record_to {
        Some(path) => {
            let recording =
                runtime.block_on(crate::record::ActiveRecording::start(path, &args.recording))?;
            builder = builder.tap(recording.session());
            Some(recording)
        }
        None => None,
    };
    let bridge = builder.build()?;
    let watcher = if args.watch.is_empty() {
        None
    } else {
        Some(Watcher::start(
            &args.watch,
            args.watch_debounce,
            bridge.restart_handle(),
        )?)
    };
    // Pipes and sockets are polled directly; a terminal or a file goes through tokio's handles.
    let result = runtime.block_on(async { bridge.run(stdio::stdin(), stdio::stdout()).await });
    drop(watcher);
    let recorded = match recording {
        Some(recording) => runtime.block_on(recording.finish()),
        None => Ok(()),
    };
    // A blocked stdin read must not hold the process open.
    runtime.shutdown_timeout(Duration::from_millis(100));
    let summary = result.map_err(Error::upstream)?;
    recorded?;
    tracing::debug!(
        connects = summary.connects,
        reinitializations = summary.reinitializations,
        "session ended"
    );
    Ok(exit::OK)
}

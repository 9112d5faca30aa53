//! `calltape bridge`: a stdio MCP session that survives restarts of the server behind it.

use std::{ffi::OsString, path::PathBuf, sync::Arc, time::Duration};

use calltape_stdio_bridge::{
    Bridge, ChildUpstream, DEFAULT_HTTP_PATH, ExtraHeaders, HttpUpstream, UnixUpstream, Upstream,
    Watcher, stdio,
};
use clap::{ArgGroup, Args};

use crate::{
    error::{Error, Outcome},
    exit,
    units::{duration, size},
};

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape bridge --watch src -- cargo run -q
  calltape bridge -- npx -y @modelcontextprotocol/server-everything
  calltape bridge --url http://127.0.0.1:3000/mcp --header-file ~/.config/mcp/headers
  calltape bridge --socket /run/user/1000/mcp.sock --path /mcp

Put the first form in an editor's MCP configuration as the server command: the editor's session
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
#[command(group(ArgGroup::new("upstream").required(true).args(["url", "socket", "command"])))]
pub(crate) struct BridgeArgs {
    /// Restart the child when a file under PATH changes (repeatable; folders are watched recursively).
    #[arg(long = "watch", value_name = "PATH")]
    watch: Vec<PathBuf>,

    /// Quiet time after a change before the restart.
    #[arg(long, value_name = "DUR", default_value = "200ms", value_parser = duration)]
    watch_debounce: Duration,

    /// An HTTP header sent with every request to --url or --socket (repeatable), e.g. 'Authorization: Bearer …'.
    #[arg(long = "header", value_name = "'K: V'")]
    headers: Vec<String>,

    /// A file of headers, one 'K: V' per line ('#' comments), which keeps secrets out of argv and ps.
    #[arg(long, value_name = "FILE")]
    header_file: Option<PathBuf>,

    /// Messages held while the server starts or restarts; beyond it requests get -32002.
    #[arg(long, value_name = "N", default_value_t = calltape_stdio_bridge::DEFAULT_BUFFER_MESSAGES)]
    buffer: usize,

    /// How long a held request waits for the server before it gets -32003, e.g. 30s, 500ms, 2m.
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = duration)]
    restart_deadline: Duration,

    /// Client lines longer than this are discarded unread and answered with -32700, e.g. 16MiB.
    #[arg(long, value_name = "BYTES", default_value = "16MiB", value_parser = size)]
    max_frame: usize,

    /// Write logs (the bridge's and the child's stderr, redacted) to FILE instead of stderr, appending;
    /// FILE is created 0600 and never written through a symbolic link.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,

    /// A Streamable HTTP endpoint, e.g. http://127.0.0.1:3000/mcp.
    #[arg(long, value_name = "URL")]
    url: Option<String>,

    /// A Unix socket serving Streamable HTTP.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,

    /// The MCP endpoint's path on --socket.
    #[arg(long = "path", value_name = "PATH", requires = "socket", default_value = DEFAULT_HTTP_PATH)]
    http_path: String,

    /// Record every tools/call, resources/read and prompts/get with the answer the client received to
    /// FILE (created 0600, or extended; credentials redacted), as `calltape record -o FILE` does.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,

    #[command(flatten)]
    pub(crate) recording: crate::record::RecordOptions,

    /// The server to run, with its arguments (no shell).
    #[arg(last = true, value_name = "CMD")]
    command: Vec<OsString>,
}

fn upstream(args: &BridgeArgs) -> Result<Arc<dyn Upstream>, Error> {
    let wants_headers = !args.headers.is_empty() || args.header_file.is_some();
    if !args.command.is_empty() {
        if wants_headers {
            return Err(Error::Usage(
                "--header and --header-file apply to --url and --socket, not to a child command"
                    .into(),
            ));
        }
        let mut child = ChildUpstream::new(args.command.iter().cloned())?;
        if args.log.is_some() {
            child = child.stderr(crate::logging::redacted_child_stderr());
        }
        return Ok(Arc::new(child));
    }
    if !args.watch.is_empty() {
        return Err(Error::Usage(
            "--watch restarts a child command: give one after `--`".into(),
        ));
    }
    let mut headers = ExtraHeaders::new();
    for line in &args.headers {
        headers.push_line(line)?;
    }
    if let Some(file) = &args.header_file {
        headers.read_file(file)?;
    }
    if let Some(url) = &args.url {
        return Ok(Arc::new(HttpUpstream::new(url, headers)?));
    }
    if let Some(socket) = &args.socket {
        return Ok(Arc::new(UnixUpstream::new(
            socket,
            &args.http_path,
            headers,
        )?));
    }
    Err(Error::Usage(
        "give the server: `-- CMD ARGS…`, --url URL or --socket PATH".into(),
    ))
}

/// Sends everything written to stderr (our logs, and the child's stderr, redacted on its way) to
/// `path`: appended, owner-only, never through a link planted at the path.
fn redirect_stderr(path: &PathBuf) -> Result<(), Error> {
    let file = calltape_jsonl_store::fs::append(path)
        .map_err(|e| Error::context("cannot open the log file", e))?;
    rustix::stdio::dup2_stderr(&file)
        .map_err(|e| Error::Usage(format!("cannot send logs to {}: {e}", path.display())))
}

/// SIGTERM, SIGINT or SIGHUP: end the session as if stdin had ended, stopping the child gracefully.
async fn termination() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        tracing::debug!("cannot listen for signals; only the end of stdin ends the session");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: ending the session"),
        _ = int.recv() => tracing::info!("SIGINT: ending the session"),
        _ = hup.recv() => tracing::info!("SIGHUP: ending the session"),
    }
}

pub(crate) fn run(args: BridgeArgs) -> Outcome {
    run_recording(args, None)
}

/// `calltape bridge`, recording to `output` (`calltape record -o FILE`) or to `--record FILE`.
pub(crate) fn run_recording(args: BridgeArgs, output: Option<PathBuf>) -> Outcome {
    let record_to = match (output, args.record.clone()) {
        (Some(_), Some(_)) => {
            return Err(Error::Usage(
                "give the recording once: -o FILE or --record FILE, not both".into(),
            ));
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
        .shutdown_on(termination());
    let recording = match &record_to {
        Some(path) => {
            let (recording, tap) =
                runtime.block_on(crate::record::ActiveRecording::start(path, &args.recording))?;
            builder = builder.tap(tap);
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
    if let Some(recording) = recording {
        runtime.block_on(recording.finish());
    }
    // A blocked stdin read must not hold the process open.
    runtime.shutdown_timeout(Duration::from_millis(100));
    let summary = result.map_err(Error::upstream)?;
    tracing::debug!(
        connects = summary.connects,
        reinitializations = summary.reinitializations,
        "session ended"
    );
    Ok(exit::OK)
}

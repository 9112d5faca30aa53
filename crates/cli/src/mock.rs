//! `calltape mock`: a call recording served to an MCP client on stdio, with no server running.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use calltape_replay::{Mode, mock::Mock};
use calltape_stdio_bridge::{Bridge, EraUpstream, Protocol, Stderr, Upstream, stdio};
use clap::Args;

use crate::output::errln;
use crate::{
    args::UpstreamArgs,
    error::{Error, Outcome},
    exit,
    record::RecordOptions,
};

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape mock calls.jsonl
  calltape mock --allow-misses tests/cassettes/search.jsonl
  calltape mock --mode auto calls.jsonl -- npx -y @modelcontextprotocol/server-everything
  calltape mock --mode verify calls.jsonl --url http://127.0.0.1:3000/mcp
  calltape mock --cassette-dir tests/cassettes --cassette test_search -- python server.py
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

Modes (--mode, else CALLTAPE_MODE, else LLM_TEST_MODE / UPDATE_RECORDINGS=true, else replay when \
CI is set to anything but empty, 0 or false, else auto), as `calltape http` has them; the real \
server is -- CMD, --url or --socket:
  replay   answer from the recording only; no server is ever started (the default when CI is set)
  auto     answer what the recording holds and forward the rest to the server, adding its answers
           to the recording (a missing recording is created; without a server, as replay)
  record   forward everything and write the recording anew (alias: update)
  verify   forward everything, write nothing, and list every answer that differs from the
           recording's (and every call it does not hold): exit 1 on one; recorded lists are
           compared item by item (tools[echo].description), initialize by its serverInfo
  live     forward everything and write nothing
One recording per test: --cassette-dir DIR with --cassette NAME (or CALLTAPE_CASSETTE=NAME) answers \
from DIR/NAME.jsonl, created with its folders in the modes that write.

What is written passes the redaction of `calltape record`: --redact and --keep name fields, and \
--methods and --max-bytes apply as there.

A request the recording holds no answer for gets a JSON-RPC error (-32602, or -32601 for a method \
it holds no call of) naming the closest recorded call and where the request differs from it. When \
stdin ends, stderr lists every miss (and every ask answered unlike the recording) and the exit \
status is 1, unless --allow-misses. A call the recording holds as written by hand, with no answer \
yet, is such a miss too, naming its line: `calltape replay --update FILE -- SERVER` fills it in.

Exit codes: 0 every request answered from the recording or by the server (or --allow-misses), 1 a \
miss or (verify) a difference, 2 the recording cannot be read or is not valid, or the server cannot \
be started.";

/// The arguments of `calltape mock`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES, mut_group("upstream", |group| group.required(false)))]
pub(crate) struct MockArgs {
    /// The call recording to answer from, as `calltape record`, `bridge --record` or `serve
    /// --record` wrote it.
    #[arg(
        value_name = "FILE",
        required_unless_present = "cassette_dir",
        conflicts_with = "cassette_dir"
    )]
    file: Option<PathBuf>,

    /// A folder of recordings, one per test: the mock answers from (and records to)
    /// DIR/NAME.jsonl, NAME given by --cassette.
    #[arg(long, value_name = "DIR", requires = "cassette")]
    cassette_dir: Option<PathBuf>,

    /// The test's recording under --cassette-dir, e.g. test_search or suite/test_search.
    #[arg(long, value_name = "NAME", env = "CALLTAPE_CASSETTE")]
    cassette: Option<String>,

    /// Exit 0 even when a request missed the recording (the misses are still listed on stderr).
    #[arg(long)]
    allow_misses: bool,

    /// replay, auto, record (or update), verify or live (see below).
    #[arg(long, value_name = "MODE", value_parser = crate::http::parse_mode)]
    mode: Option<Mode>,

    /// How forwarded calls are recorded; the names are also those the recording was made with, so
    /// that each request's input is redacted alike before it is compared and shown.
    #[command(flatten)]
    pub(crate) recording: RecordOptions,

    /// The real server, in every mode but replay.
    #[command(flatten)]
    server: UpstreamArgs,
}

pub(crate) fn run(args: MockArgs) -> Outcome {
    let mode = Mode::resolve(args.mode).map_err(Error::Mode)?;
    let given =
        args.server.is_child() || args.server.remote.url.is_some() || args.server.socket.is_some();
    let server = match given {
        true => Some(args.server.upstream(Stderr::Inherit)?),
        false => None,
    };
    let file = match (&args.file, &args.cassette_dir, &args.cassette) {
        (Some(file), _, _) => file.clone(),
        (None, Some(dir), Some(name)) => {
            calltape_replay::cassette_file(dir, name).map_err(Error::Cassette)?
        }
        _ => {
            return Err(Error::Cassette(
                "name the recording: FILE, or --cassette-dir DIR with --cassette NAME".to_owned(),
            ));
        }
    };
    let runtime = crate::single_thread_runtime()?;
    let mock = runtime.block_on(open(&file, mode, server, &args.recording))?;
    let bridge = Bridge::builder()
        .upstream(EraUpstream::new(mock.clone(), Protocol::Legacy))
        .shutdown_on(crate::signals::termination("ending the session"))
        .build()?;
    let result = runtime.block_on(async { bridge.run(stdio::stdin(), stdio::stdout()).await });
    let written = runtime.block_on(mock.close());
    // A blocked stdin read must not hold the process open.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result.map_err(Error::upstream)?;
    if let Some(report) = written {
        crate::record::say_recorded(&file, &report)?;
    }
    Ok(finish(&mock, args.allow_misses))
}

/// The mock of `mode` for the recording at `path`, forwarding to `server`. Must run inside the Tokio
/// runtime that serves it.
pub(crate) async fn open(
    path: &Path,
    mode: Mode,
    server: Option<Arc<dyn Upstream>>,
    options: &RecordOptions,
) -> Result<Mock, Error> {
    Ok(Mock::open(path, mode, server, options.recorder_options()).await?)
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

/// The recordings one `serve --mock` answers from: its FILE, or under a cassette folder one per
/// NAME, each opened on the first request for it. They are closed together when the server stops.
#[derive(Clone, Default)]
pub(crate) struct Mocks {
    opened: Arc<Mutex<Vec<(PathBuf, Mock)>>>,
}

impl Mocks {
    /// The mock of the recording at `path`: the one already opened for it, else a new one, of
    /// `mode`, forwarding to what `server` makes. Must run inside the Tokio runtime that serves it.
    /// Callers open one recording at a time (serve's table of paths is locked while one opens), so
    /// a recording never gets two mocks.
    pub(crate) async fn open(
        &self,
        path: &Path,
        mode: Mode,
        server: impl FnOnce() -> Result<Option<Arc<dyn Upstream>>, Error>,
        options: &RecordOptions,
    ) -> Result<Mock, Error> {
        if let Some(mock) = self.find(path) {
            return Ok(mock);
        }
        let mock = open(path, mode, server()?, options).await?;
        self.lock().push((path.to_owned(), mock.clone()));
        Ok(mock)
    }

    fn find(&self, path: &Path) -> Option<Mock> {
        let opened = self.lock();
        opened
            .iter()
            .find(|(opened, _)| opened == path)
            .map(|(_, mock)| mock.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(PathBuf, Mock)>> {
        self.opened.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes every mock, each recording written whole in the modes that record; says what was
    /// written. The first error is returned once all are closed.
    pub(crate) async fn close(&self) -> Result<(), Error> {
        let opened = self.lock().clone();
        let mut result = Ok(());
        for (path, mock) in opened {
            if let Some(report) = mock.close().await {
                let said = crate::record::say_recorded(&path, &report);
                result = result.and(said);
            }
        }
        result
    }

    /// Says what each mock did (every miss on stderr, under its recording's name when there are
    /// several) and gives the exit status: 1 on a miss of any, unless `allow_misses`.
    pub(crate) fn finish(&self, allow_misses: bool) -> u8 {
        let opened = self.lock().clone();
        if let [(_, mock)] = opened.as_slice() {
            return finish(mock, allow_misses);
        }
        let mut missed = false;
        for (path, mock) in &opened {
            if mock.misses().is_empty() {
                tracing::info!("{}: {}", path.display(), mock.summary());
            } else {
                missed = true;
                errln!("{}: {}", path.display(), mock.summary());
            }
        }
        match missed && !allow_misses {
            true => exit::DIFFERENCES,
            false => exit::OK,
        }
    }
}

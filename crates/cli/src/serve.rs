//! `calltape serve`: one MCP server (a stdio command or a remote endpoint) behind a Streamable HTTP
//! endpoint shared by many sessions.

use std::{ffi::OsString, net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use calltape_replay::Mode;
use calltape_stdio_bridge::{
    ChildUpstream, DEFAULT_HTTP_PATH, ErrorKind, Protocol, Stderr, Upstream,
    serve::{ServerBuilder, StopReason, Transport},
    shared::{SERVE_KEY_ENV, Secret, serve_shared},
};
use clap::{ArgGroup, Args};

use crate::output::outln;
use crate::{
    args::{ProtocolArg, RemoteArgs, learn_credential},
    error::{Error, Outcome},
    exit,
    mock::Mocks,
    record::{ActiveRecording, RecordOptions},
    units::duration,
};

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape serve --listen 127.0.0.1:8808 -- npx -y @modelcontextprotocol/server-everything
  calltape serve --listen 127.0.0.1:0 --token-file ~/.mcp-token --idle-exit 10m -- python server.py
  calltape serve --socket /run/user/1000/mcp.sock -- node server.js
  calltape serve --listen 127.0.0.1:8808 --record calls.jsonl -- python server.py
  calltape serve --listen 127.0.0.1:8808 --mock calls.jsonl
  calltape serve --listen 127.0.0.1:8808 --record calls.jsonl --url https://mcp.example.com/mcp
  calltape serve --socket /run/user/1000/mcp.sock --url http://127.0.0.1:3000/mcp --header-file team.headers
  calltape serve --mock calls.jsonl --mode auto -- npx -y @modelcontextprotocol/server-everything
  calltape serve --mock calls.jsonl --mode verify --url http://127.0.0.1:3000/mcp
  calltape serve --mock --cassette-dir tests/cassettes --listen 127.0.0.1:0 -- python server.py

MCP is served at /mcp over HTTP/1.1. The server runs CMD once and multiplexes every session onto \
it: the first initialize is forwarded and its answer reused, request ids and progress tokens are \
remapped, list changes go to every session, and a crashed CMD is restarted and re-initialized.

Limits: a connection gets 10 s to send a request's headers; at most --max-connections are open \
(past that, the oldest one still waiting for its headers is closed) and at most --max-sessions \
sessions, a stateless request counting as one while it is answered (an initialize or a stateless \
request past that gets 503 and -32005). A GET stream, or a POST's answer stream, whose client \
leaves 1,024 messages or 16 MiB unread is closed; the client resumes with Last-Event-ID from the \
session's last 1,024 events, where a closed POST stream's later answers go too. JSON answers \
(--json-response) past 16 MiB for one POST are each replaced by a -32009 error. A session holds \
at most 16 subscriptions/listen streams open (-32007), each naming at most 1,024 resources \
(-32006). Sessions take turns at CMD: one that sends thousands of requests at once does not put \
another's behind them all, and CMD's output is read while serve writes to it, so a CMD that reads \
nothing while its stdout is full never stalls the server.

With --mock FILE no server runs: every session is answered from the recording, as `calltape mock` \
answers on stdio (see its help); when serve stops, every miss is listed and the exit status is 1, \
unless --allow-misses. --mode takes the modes of `calltape mock` (else CALLTAPE_MODE, else replay \
when CI is set, else auto), the real server being -- CMD, --url URL (with --header and \
--header-file; a client's Authorization is not passed on) or --server-socket PATH (HTTP over a Unix \
socket, --socket being where serve itself listens): `serve --mock calls.jsonl --mode auto -- CMD` \
answers what the recording holds and records the rest from CMD. One recording per test: with \
--mock --cassette-dir DIR (no FILE), /_cassette/NAME/mcp answers from DIR/NAME.jsonl (a / in NAME \
written %2F; a NAME with `..` or an absolute path gets 400), each recording opened on its first \
request with its own real server and written when serve stops; /mcp answers from --cassette NAME \
(or CALLTAPE_CASSETTE), else 404. The misses of every recording are listed.

Loopback only: a request with an Origin header gets 403 unless it is serve's own \
(http://127.0.0.1:PORT, http://localhost:PORT or http://[::1]:PORT: no web page of another address \
or port), so does a request without one that a browser marks as sent by a page of another site \
(Sec-Fetch-Site: cross-site or same-site, as an <img> or a form sends it), a Host that is not \
127.0.0.1, localhost or [::1] gets 421, and there is no CORS. With --token-file a fresh token is written to \
that file (0600) and every /mcp request must carry it as `Authorization: Bearer <token>`.

Both protocol eras: sessions of the handshake era and stateless 2026-07-28 requests share the \
endpoint whatever era CMD speaks (--protocol, found on each start by default); what CMD lacks is \
translated. On a CMD of the handshake era, stateless requests go through its one session.

A remote server (--url without --mock): sessions are multiplexed onto one session of the remote endpoint, as \
onto CMD. A client's own Authorization header is passed on to the remote server and never stored \
(not in the recording, a log or an error): sessions that send one get a remote session of their \
own per distinct value, so clients with different credentials never share one, and a session is \
bound to the value it started with (a request with another gets 404, and the client initializes \
again). Sessions that send none use --header and --header-file. With --token-file, Authorization \
carries serve's own token and is not passed on.

What cannot be shared: the log level (logging/setLevel applies to every session) and roots that \
differ between sessions (a roots/list request goes to the session whose request is in flight).";

/// The arguments of `calltape serve`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
// One server: --url, CMD or --mock (with --url, CMD or --server-socket as the real server in the
// modes that forward).
#[command(group(ArgGroup::new("server").required(true).multiple(true).args(["url", "command", "mock"])))]
pub(crate) struct ServeArgs {
    /// Listen on this address of 127.0.0.1 (port 0 picks a free one); the URL is printed on stdout.
    #[arg(long, value_name = "ADDR", conflicts_with = "socket")]
    listen: Option<SocketAddr>,

    /// Listen on a Unix socket (made owner-only) instead.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,

    /// Require a bearer token: a fresh one is generated at start and written to FILE (0600). With
    /// --url, a client's Authorization header is then this token and is not passed on.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,

    /// Exit once no session has been connected for this long, e.g. 30s or 10m.
    #[arg(long, value_name = "DUR", value_parser = duration)]
    idle_exit: Option<Duration>,

    /// Record every session's calls and the lists it read (credentials redacted) to FILE, created
    /// 0600 or extended.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,

    #[command(flatten)]
    pub(crate) recording: RecordOptions,

    /// Hold at most N connections open; past that, the oldest one still waiting for a request's
    /// headers is closed (a connection gets 10 s to send them).
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_connections: usize,

    /// Hold at most N sessions, a stateless request counting as one while it is answered; an
    /// initialize or a stateless request past that gets 503 until one ends or expires.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_sessions: usize,

    /// Answer each request with one JSON body instead of an SSE stream (a subscriptions/listen request
    /// still gets its stream of events).
    #[arg(long)]
    json_response: bool,

    /// The transport of a shared server (set by `calltape shared`).
    #[arg(long, hide = true, default_value = DEFAULT_TRANSPORT, value_parser = transport)]
    transport: Transport,

    #[command(flatten)]
    protocol: ProtocolArg,

    /// Answer every session from this call recording, as `calltape mock` does; no server runs but
    /// in the modes that forward, where CMD, --url or --server-socket is the real server. Without
    /// FILE, --cassette-dir names the recordings.
    #[arg(
        long,
        value_name = "FILE",
        num_args = 0..=1,
        conflicts_with_all = ["record", "protocol"]
    )]
    mock: Option<Option<PathBuf>>,

    /// With --mock: a folder of recordings, one per test: /_cassette/NAME/mcp answers from (and in
    /// the modes that write, records to) DIR/NAME.jsonl, a / in NAME written %2F.
    #[arg(long, value_name = "DIR", requires = "mock")]
    cassette_dir: Option<PathBuf>,

    /// With --cassette-dir: the recording /mcp answers from (else /mcp is not served).
    #[arg(long, value_name = "NAME", env = "CALLTAPE_CASSETTE")]
    cassette: Option<String>,

    /// With --mock: replay, auto, record (or update), verify or live, as `calltape mock --mode`.
    #[arg(long, value_name = "MODE", requires = "mock", value_parser = crate::http::parse_mode)]
    mode: Option<Mode>,

    /// With --mock: exit 0 even when a request missed the recording.
    #[arg(long, requires = "mock")]
    allow_misses: bool,

    /// With --mock: the real server is HTTP over this Unix socket (--socket being where serve
    /// listens).
    #[arg(long, value_name = "PATH", requires = "mock", conflicts_with_all = ["url", "command"])]
    server_socket: Option<PathBuf>,

    /// The MCP endpoint's path on --server-socket.
    #[arg(long = "server-path", value_name = "PATH", requires = "server_socket", default_value = DEFAULT_HTTP_PATH)]
    server_path: String,

    #[command(flatten)]
    remote: RemoteArgs,

    /// The server to run, with its arguments (no shell).
    #[arg(last = true, value_name = "CMD", conflicts_with_all = ["headers", "header_file", "url"])]
    command: Vec<OsString>,
}

/// The upstream the flags name and, for a remote one, the builder that passes a client's own
/// `Authorization` on to it.
fn server(args: &ServeArgs, shared_key: bool) -> Result<ServerBuilder, Error> {
    if let Some(url) = &args.remote.url {
        let headers = args.remote.headers()?;
        let serve = ServerBuilder::from_arc(args.remote.http_upstream(url, headers.clone())?);
        let url = url.clone();
        return Ok(serve.client_authorization(move |value| {
            learn_credential("a client's Authorization header", value);
            let mut headers = headers.clone();
            headers.set("authorization", value)?;
            let upstream: Arc<dyn Upstream> =
                Arc::new(calltape_stdio_bridge::HttpUpstream::new(&url, headers)?);
            Ok(upstream)
        }));
    }
    let mut child = ChildUpstream::new(args.command.iter().cloned())?;
    if shared_key {
        // The mark is this process's alone: a `calltape serve` that CMD runs is not the key's server.
        child = child.env(SERVE_KEY_ENV, "");
    }
    // A shared server's stderr is its server.log: what its child logs is redacted before it lands there.
    let stderr = match shared_key {
        true => crate::logging::redacted_child_stderr(),
        false => Stderr::Inherit,
    };
    Ok(ServerBuilder::new(child.stderr(stderr)))
}

/// The server of `serve --mock`: the mock of FILE, or one mock per cassette under
/// `--cassette-dir`, each opened on its first request at /_cassette/NAME/mcp (and the mock of
/// `--cassette` at /mcp), all kept in `mocks`.
fn mock_server(
    args: &Arc<ServeArgs>,
    mocks: &Mocks,
    runtime: &tokio::runtime::Runtime,
) -> Result<ServerBuilder, Error> {
    let mode = Mode::resolve(args.mode).map_err(Error::Mode)?;
    let file = match (
        args.mock.as_ref().and_then(Option::as_ref),
        &args.cassette_dir,
    ) {
        (Some(_), Some(_)) => {
            return Err(Error::Cassette(
                "give --mock a FILE or --cassette-dir, not both".to_owned(),
            ));
        }
        (Some(file), None) => Some(file.clone()),
        (None, Some(dir)) => match &args.cassette {
            Some(name) => Some(calltape_replay::cassette_file(dir, name).map_err(Error::Cassette)?),
            None => None,
        },
        (None, None) => {
            return Err(Error::Cassette(
                "name the recording: --mock FILE, or --mock --cassette-dir DIR".to_owned(),
            ));
        }
    };
    let mock = match &file {
        Some(file) => {
            let server = || mock_upstream(args);
            Some(runtime.block_on(mocks.open(file, mode, server, &args.recording))?)
        }
        None => None,
    };
    let Some(dir) = args.cassette_dir.clone() else {
        return Ok(ServerBuilder::new(mock.ok_or(Error::NoServer)?));
    };
    let (args, mocks) = (Arc::clone(args), mocks.clone());
    let upstream_at = move |segment: &str| {
        let name = calltape_replay::cassette_name_in_path(segment).into_owned();
        let (args, mocks, dir) = (Arc::clone(&args), mocks.clone(), dir.clone());
        async move {
            let opened = async {
                let file = calltape_replay::cassette_file(&dir, &name).map_err(Error::Cassette)?;
                let server = || mock_upstream(&args);
                mocks.open(&file, mode, server, &args.recording).await
            };
            match opened.await {
                Ok(mock) => Ok(Arc::new(mock) as Arc<dyn Upstream>),
                Err(e) => Err(calltape_stdio_bridge::Error::config(format!(
                    "calltape: {e}"
                ))),
            }
        }
    };
    Ok(match mock {
        Some(mock) => ServerBuilder::new(mock).upstream_per_path(CASSETTE_PREFIX, upstream_at),
        None => ServerBuilder::per_path_only(CASSETTE_PREFIX, upstream_at),
    })
}

/// Where `serve --mock --cassette-dir` serves each cassette: /_cassette/NAME/mcp, as `calltape
/// http` takes /_cassette/NAME/.
const CASSETTE_PREFIX: &str = "/_cassette/";

/// The real server of `serve --mock`, when one is named: a fresh one for each recording.
fn mock_upstream(args: &ServeArgs) -> Result<Option<Arc<dyn Upstream>>, Error> {
    let given =
        !args.command.is_empty() || args.remote.url.is_some() || args.server_socket.is_some();
    if !given {
        return Ok(None);
    }
    let upstream = crate::args::upstream(
        &args.remote,
        args.server_socket.as_deref(),
        &args.server_path,
        &args.command,
        Stderr::Inherit,
    )?;
    Ok(Some(upstream))
}

/// The transport of a shared server when none is named: an owner-only Unix socket, or loopback HTTP
/// where there are no Unix sockets (Windows).
pub(crate) const DEFAULT_TRANSPORT: &str = if cfg!(unix) { "unix" } else { "http" };

pub(crate) fn transport(input: &str) -> Result<Transport, String> {
    input.parse::<Transport>().map_err(|e| e.to_string())
}

/// Writes the token owner-only, replacing the file whole; a link at the path is refused, not removed.
fn write_token_file(path: &PathBuf, token: &str) -> Result<(), Error> {
    calltape_jsonl_store::fs::write_atomic(path, token)
        .map_err(|e| Error::context("cannot write the token file", e))
}

pub(crate) fn run(args: ServeArgs) -> Outcome {
    #[cfg(windows)]
    if let Some(path) = &args.socket {
        return Err(Error::NoUnixSockets { path: path.clone() });
    }
    // The factory of a cassette folder's mocks reads the flags whenever a cassette is first asked for.
    let args = Arc::new(args);
    let shared_key = std::env::var(SERVE_KEY_ENV)
        .ok()
        .filter(|key| !key.is_empty());
    let runtime = crate::single_thread_runtime()?;
    let mocks = args.mock.as_ref().map(|_| Mocks::default());
    let serve = match &mocks {
        // The recording speaks the handshake era; the other era's requests are translated.
        Some(mocks) => mock_server(&args, mocks, &runtime)?.protocol(Protocol::Legacy),
        None => server(&args, shared_key.is_some())?.protocol(args.protocol.protocol),
    };
    let mut serve = serve
        .json_response(args.json_response)
        .max_connections(args.max_connections)
        .max_sessions(args.max_sessions);
    let recording = match &args.record {
        Some(path) => {
            let recording = runtime.block_on(ActiveRecording::start(path, &args.recording))?;
            serve = serve.tap_sessions(recording.sessions());
            Some(recording)
        }
        None => None,
    };
    let result: Result<StopReason, calltape_stdio_bridge::Error> = if let Some(key) = shared_key {
        if args.listen.is_some() || args.socket.is_some() || args.token_file.is_some() {
            return Err(Error::SharedServerFlags);
        }
        let (_, paths) = crate::shared::key_paths(&key)?;
        serve = serve.idle_exit(args.idle_exit.unwrap_or(Duration::from_secs(600)));
        runtime.block_on(serve_shared(
            &paths,
            args.transport,
            serve,
            crate::signals::termination("stopping the server"),
        ))
    } else {
        if let Some(idle) = args.idle_exit {
            serve = serve.idle_exit(idle);
        }
        if let Some(path) = &args.token_file {
            let token = Secret::generate().map_err(Error::upstream)?.to_hex();
            crate::logging::learn("the token file's token", &token);
            write_token_file(path, &token)?;
            serve = serve.bearer_token(token);
        }
        runtime.block_on(async {
            let server = match (&args.listen, &args.socket) {
                #[cfg(unix)]
                (_, Some(path)) => serve.listen_unix(path).await?,
                // Without Unix sockets, `run` refused a --socket before anything started.
                (Some(addr), _) => serve.listen_tcp(*addr).await?,
                (None, _) => serve.listen_tcp(([127, 0, 0, 1], 0).into()).await?,
            };
            match server.endpoint() {
                calltape_stdio_bridge::serve::Endpoint::Http(addr) => {
                    if args.token_file.is_none() {
                        tracing::warn!(
                            "listening on 127.0.0.1:{} with no token file, so any local user can connect and use the server; to require a token, name a file that holds one with --token-file",
                            addr.port()
                        );
                    }
                    outln!("http://127.0.0.1:{}/mcp", addr.port());
                }
                calltape_stdio_bridge::serve::Endpoint::Unix(path) => {
                    outln!("unix:{}", path.display())
                }
            }
            crate::output::flush_stdout();
            tracing::info!("serving at {}", server.endpoint());
            server.run_until(crate::signals::termination("stopping the server")).await
        })
    };
    // The server has returned: every session's observer has seen its last frame.
    let recorded = match (recording, &mocks) {
        (Some(recording), _) => runtime.block_on(recording.finish()),
        (None, Some(mocks)) => runtime.block_on(mocks.close()),
        (None, None) => Ok(()),
    };
    runtime.shutdown_timeout(Duration::from_millis(200));
    match result {
        Ok(reason) => {
            tracing::debug!("stopped ({reason:?})");
            recorded?;
            Ok(match &mocks {
                Some(mocks) => mocks.finish(args.allow_misses),
                None => exit::OK,
            })
        }
        // The server could not run or stopped: an upstream failure; anything else is the user's to fix.
        Err(e) if matches!(e.kind(), ErrorKind::Io { .. } | ErrorKind::Spawn { .. }) => {
            Err(Error::upstream(e))
        }
        Err(e) => Err(e.into()),
    }
}

//! `calltape shared`: a stdio session of the key's shared server, started when none proves itself.

use std::{ffi::OsString, time::Duration};

use calltape_stdio_bridge::{
    Bridge,
    serve::Transport,
    shared::{Launcher, SharedKey, SharedPaths, SharedUpstream, answer_held_requests},
    stdio,
};
use clap::{ArgGroup, Args};

use crate::{
    args::{ProtocolArg, RemoteArgs},
    error::{Error, Outcome},
    exit,
    serve::transport,
    units::duration,
};

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape shared --key notes -- npx -y some-mcp-server
  calltape shared --key notes --transport http --idle-exit 30m -- python server.py
  calltape shared --key linear --url https://mcp.example.com/mcp

Put it in each MCP client's configuration as the server command: the first session starts one \
server for the key (`calltape serve` of this binary, detached), every later one attaches to it.

A server is bound to what it runs: its command and arguments, the working folder (canonical, so \
`node dist/index.js` from two checkouts is two servers) and calltape's version. A session whose \
fingerprint differs never attaches to it. It starts a server for its own command, which becomes \
the key's server, and says so on stderr; the old server takes no new session, serves the ones it \
has and exits after the last one. The rest of the environment is not part of it: a session whose \
environment variables differ (PATH, the server's settings, its API keys), or that runs after the \
command's files changed (a rebuilt dist/index.js), attaches to the running server, which keeps the \
environment and the code of the session that started it; end it (or use another key) to have \
those taken up.

Files: $CALLTAPE_HOME/shared/<key>/ (default $XDG_RUNTIME_DIR/calltape, else ~/.calltape), a \
0700 folder with server.json (0600), server.sock (0600), server.log (0600; the server's stderr, \
with what its command logs redacted) and lock files (0600). A folder that others can write to, a \
record that others can read, and a symbolic link in place of any of these files are refused.

Both protocol eras: the server translates for its command (--protocol is passed on to it, and a \
server started with another --protocol is not attached to), so a client of either era works with a \
command of either era.

A remote server (--url): the shared server is `calltape serve --url` of it, so every session \
shares one remote session and one sign-in. It signs in with OAuth when the remote asks (the \
--oauth-* flags are passed on; a client secret only through --oauth-client-secret-file or \
CALLTAPE_OAUTH_CLIENT_SECRET): the sign-in URL is opened in the browser and written to \
server.log, not to this session's stderr, so `calltape auth login URL` first is the way to see it. \
Headers come only from --header-file: a --header value would be on the shared server's command \
line.

A session sends its bearer token only to a server that proved it holds the record's secret (a \
fresh challenge per connection on the socket, per request over loopback HTTP).

When no server can be attached (it cannot be started, it exits early, or the process at its \
endpoint cannot prove itself), the session says why on stderr and answers each request at once \
with an error carrying the request's id: code -32000, data.reason shared_server_unavailable and \
the reason in data.upstream.message. On the first attach the session then exits with status 3; \
later (the server went away mid-session) it tries again after a pause.";

/// The arguments of `calltape shared`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
#[command(group(ArgGroup::new("server").required(true).args(["url", "command"])))]
pub(crate) struct SharedArgs {
    /// The server's key: 1 to 64 of a-z 0-9 . _ -, starting and ending with a letter or digit.
    #[arg(long, value_name = "KEY")]
    key: String,

    /// How sessions reach the server: an owner-only Unix socket, or loopback HTTP (on Windows, http
    /// only).
    #[arg(long, value_name = "unix|http", default_value = crate::serve::DEFAULT_TRANSPORT, value_parser = transport)]
    transport: Transport,

    /// A server this session starts exits once no session has been connected for this long.
    #[arg(long, value_name = "DUR", default_value = "10m", value_parser = duration)]
    idle_exit: Duration,

    /// How long to wait for a server to prove itself.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = duration)]
    start_timeout: Duration,

    #[command(flatten)]
    protocol: ProtocolArg,

    #[command(flatten)]
    remote: RemoteArgs,

    /// The server to run when none is running, with its arguments (no shell).
    #[arg(last = true, value_name = "CMD", conflicts_with_all = ["headers", "header_file", "url"])]
    command: Vec<OsString>,
}

fn launcher(args: &SharedArgs) -> Result<Launcher, Error> {
    let program = std::env::current_exe().map_err(Error::CurrentExe)?;
    let mut argv: Vec<OsString> = vec![
        "serve".into(),
        "--transport".into(),
        args.transport.to_string().into(),
        "--idle-exit".into(),
        format!("{}ms", args.idle_exit.as_millis()).into(),
        "--protocol".into(),
        args.protocol.protocol.to_string().into(),
    ];
    match &args.remote.url {
        Some(url) => argv.extend(remote_argv(url, &args.remote)?),
        None => {
            argv.push("--".into());
            argv.extend(args.command.iter().cloned());
        }
    }
    Ok(Launcher::new(program, argv)?)
}

/// The flags that make the shared server `serve --url` of `url`, with the session's header file and
/// OAuth flags: all but secrets, which reach it through a file or its environment. A `--header`
/// value is refused, as it would be on the server's command line.
fn remote_argv(url: &str, remote: &RemoteArgs) -> Result<Vec<OsString>, Error> {
    if !remote.headers.is_empty() {
        return Err(Error::SharedHeaderOnArgv);
    }
    let mut argv: Vec<OsString> = vec!["--url".into(), url.into()];
    let mut flag = |name: &str, value: Option<OsString>| {
        if let Some(value) = value {
            argv.push(name.into());
            argv.push(value);
        }
    };
    flag("--header-file", remote.header_file.clone().map(Into::into));
    let oauth = &remote.oauth;
    flag(
        "--oauth-client-id",
        oauth.oauth_client_id.clone().map(Into::into),
    );
    flag(
        "--oauth-client-secret-file",
        oauth.oauth_client_secret_file.clone().map(Into::into),
    );
    flag(
        "--oauth-client-metadata-url",
        oauth.oauth_client_metadata_url.clone().map(Into::into),
    );
    flag("--oauth-scope", oauth.oauth_scope.clone().map(Into::into));
    if oauth.oauth_client_credentials {
        argv.push("--oauth-client-credentials".into());
    }
    if oauth.no_browser {
        argv.push("--no-browser".into());
    }
    Ok(argv)
}

/// The key and its files: an invalid key or an unusable home folder is an error.
pub(crate) fn key_paths(key: &str) -> Result<(SharedKey, SharedPaths), Error> {
    let key = SharedKey::new(key)?;
    let paths = SharedPaths::from_env(&key)?;
    Ok((key, paths))
}

pub(crate) fn run(args: SharedArgs) -> Outcome {
    // Every check that touches no server comes first, so a mistake is said before anything starts.
    let (key, paths) = key_paths(&args.key)?;
    if args.transport == Transport::Unix {
        paths.check_socket_len().map_err(|e| {
            Error::context(
                "cannot use a socket for the shared server (--transport http needs none)",
                e,
            )
        })?;
    }
    let launcher = launcher(&args)?;
    paths.prepare()?;
    let upstream =
        SharedUpstream::new(paths, args.transport, launcher).start_timeout(args.start_timeout);
    let runtime = crate::single_thread_runtime()?;
    let outcome = runtime.block_on(async {
        match upstream.attach().await {
            Ok(attached) => {
                tracing::debug!(
                    pid = attached.pid,
                    started = attached.started,
                    "attached to the shared server `{key}` at {}",
                    attached.endpoint
                );
            }
            Err(e) => {
                let reason = e.to_string();
                let error =
                    Error::context("cannot attach to the shared server", Error::upstream(e));
                // Said now, not once the held requests are answered (until stdin ends or stays
                // quiet for 2 s): a client may end this process at its first error answer.
                error.report();
                let quiet = Duration::from_secs(2);
                answer_held_requests(stdio::stdin(), stdio::stdout(), &reason, quiet).await;
                return Ok(error.exit_code());
            }
        }
        // The server translates for its child; this session passes either era through to it.
        let bridge = Bridge::builder().upstream(upstream).build()?;
        bridge
            .run(stdio::stdin(), stdio::stdout())
            .await
            .map_err(Error::upstream)?;
        Ok(exit::OK)
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
    outcome
}

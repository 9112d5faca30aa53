//! Argument groups that several commands share, each flattened where it is used, so that a flag is
//! spelled, documented and checked the same way everywhere.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use calltape_stdio_bridge::{
    ChildUpstream, DEFAULT_HTTP_PATH, ExtraHeaders, HttpUpstream, Protocol, Stderr, Upstream,
};
use clap::{ArgGroup, Args};

use crate::error::Error;

/// The redaction names: `--redact NAME` and `--keep NAME`, on every command that redacts. The
/// spellings of earlier versions (`redact --name`, `http --redact-name` and `--keep-name`) are
/// hidden aliases.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub(crate) struct RedactNames {
    /// Also redact the value of every field with this name (repeatable), e.g. x-tenant-id.
    #[arg(long = "redact", value_name = "NAME", aliases = ["name", "redact-name"])]
    pub(crate) redact: Vec<String>,

    /// Never redact a field by its name (repeatable), e.g. pageToken.
    #[arg(long = "keep", value_name = "NAME", alias = "keep-name")]
    pub(crate) keep: Vec<String>,
}

/// The MCP protocol era the server speaks: `--protocol auto|legacy|modern`, on every command that
/// talks to a server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Args)]
pub(crate) struct ProtocolArg {
    /// The MCP protocol era the server speaks: auto, legacy or modern.
    #[arg(
        long = "protocol",
        value_name = "auto|legacy|modern",
        default_value = "auto",
        value_parser = protocol,
        long_help = "The MCP protocol era the server speaks; clients of either era are translated to it.
  auto    find out on each connection: server/discover first, the legacy handshake (initialize) \
if the server refuses it or does not answer
  legacy  the handshake era (initialize, sessions; versions up to 2025-11-25)
  modern  2026-07-28 only (stateless: server/discover, _meta on each request)
e.g. --protocol modern for a server that answers only 2026-07-28 requests."
    )]
    pub(crate) protocol: Protocol,
}

fn protocol(input: &str) -> Result<Protocol, String> {
    input.parse::<Protocol>().map_err(|e| e.to_string())
}

/// A remote server: a Streamable HTTP endpoint (`--url`) and the headers sent to it, on every command
/// that reaches one (`serve` too, whose `--socket` is where it listens).
#[derive(Debug, Args)]
pub(crate) struct RemoteArgs {
    /// An HTTP header sent with every request to the HTTP server (repeatable), e.g.
    /// 'Authorization: Bearer …'.
    #[arg(long = "header", value_name = "'K: V'")]
    pub(crate) headers: Vec<String>,

    /// A file of headers, one 'K: V' per line ('#' comments), which keeps secrets out of argv and ps.
    #[arg(long, value_name = "FILE")]
    pub(crate) header_file: Option<PathBuf>,

    /// A Streamable HTTP endpoint, e.g. http://127.0.0.1:3000/mcp.
    #[arg(long, value_name = "URL")]
    pub(crate) url: Option<String>,

    #[command(flatten)]
    pub(crate) oauth: OAuthArgs,
}

impl RemoteArgs {
    /// Whether a header was given.
    pub(crate) fn has_headers(&self) -> bool {
        !self.headers.is_empty() || self.header_file.is_some()
    }

    /// The headers of `--header` and `--header-file`. Their credentials are hidden wherever they
    /// come back: in a log line, a report, a recording.
    pub(crate) fn headers(&self) -> Result<ExtraHeaders, Error> {
        let mut headers = ExtraHeaders::new();
        for line in &self.headers {
            headers.push_line(line)?;
        }
        if let Some(file) = &self.header_file {
            headers.read_file(file)?;
        }
        for (name, value) in headers.pairs() {
            if calltape_redact::is_credential_name(name) {
                learn_credential(name, value);
            }
        }
        Ok(headers)
    }

    /// The upstream at `url` with `headers`: the one place calltape's own HTTP client is made from
    /// flags. Unless `headers` hold an `Authorization`, it signs in with OAuth when the server asks
    /// (tokens in the store of `TokenStore::from_env`).
    pub(crate) fn http_upstream(
        &self,
        url: &str,
        headers: ExtraHeaders,
    ) -> Result<Arc<dyn Upstream>, Error> {
        let has_authorization = headers
            .pairs()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
        if has_authorization {
            return Ok(Arc::new(HttpUpstream::new(url, headers)?));
        }
        let store = calltape_oauth::TokenStore::from_env()?;
        let session = calltape_oauth::OAuthSession::new(url, self.oauth.options(url)?, store)?;
        Ok(Arc::new(HttpUpstream::with_authorizer(
            url,
            headers,
            Arc::new(session),
        )?))
    }
}

/// Hides a credential's value, and the credential after its scheme (`Bearer …`), in every log line,
/// report and recording of this run.
pub(crate) fn learn_credential(name: &str, value: &str) {
    crate::logging::learn(name, value.trim());
    if let Some((_, credential)) = value.trim().split_once(' ') {
        crate::logging::learn(name, credential.trim());
    }
}

/// The MCP server a session talks to: a child process (`-- CMD…`), a Streamable HTTP endpoint
/// (`--url`) or HTTP over a Unix socket (`--socket`), with the headers sent to the last two.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("upstream").required(true).args(["url", "socket", "command"])))]
pub(crate) struct UpstreamArgs {
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,

    /// A Unix socket serving Streamable HTTP.
    #[arg(long, value_name = "PATH")]
    pub(crate) socket: Option<PathBuf>,

    /// The MCP endpoint's path on --socket.
    #[arg(long = "path", value_name = "PATH", requires = "socket", default_value = DEFAULT_HTTP_PATH)]
    pub(crate) http_path: String,

    /// The server to run, with its arguments (no shell).
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<OsString>,
}

/// How calltape signs in to a `--url` server that answers 401 (unless `--header` gives an
/// `Authorization`): the MCP authorization spec's OAuth flow, tokens kept in calltape's store.
#[derive(Debug, Default, Args)]
#[command(next_help_heading = "OAuth sign-in (for --url)")]
pub(crate) struct OAuthArgs {
    /// Sign in as this pre-registered OAuth client instead of registering one.
    #[arg(long, value_name = "ID", requires = "url")]
    pub(crate) oauth_client_id: Option<String>,

    /// A file holding the pre-registered client's secret (or set CALLTAPE_OAUTH_CLIENT_SECRET); a
    /// secret is never taken on the command line.
    #[arg(long, value_name = "FILE", requires = "oauth_client_id")]
    pub(crate) oauth_client_secret_file: Option<PathBuf>,

    /// A client ID metadata document URL (https), used as the client ID where the authorization
    /// server supports them.
    #[arg(long, value_name = "URL", requires = "url")]
    pub(crate) oauth_client_metadata_url: Option<String>,

    /// Sign in with the client credentials grant (no browser, for CI): needs --oauth-client-id
    /// and its secret.
    #[arg(
        long,
        requires = "oauth_client_id",
        long_help = "Sign in with the client credentials grant: the pre-registered client's own ID and \
secret, no user and no browser (for CI), e.g.
  CALLTAPE_OAUTH_CLIENT_SECRET=… calltape bridge --url https://mcp.example.com/mcp \
--oauth-client-id ci-bot --oauth-client-credentials"
    )]
    pub(crate) oauth_client_credentials: bool,

    /// The scopes to ask for (space-separated), instead of those the server names.
    #[arg(long, value_name = "SCOPES", requires = "url")]
    pub(crate) oauth_scope: Option<String>,

    /// Print the sign-in URL without opening a browser.
    #[arg(
        long,
        requires = "url",
        long_help = "Print the sign-in URL on stderr without opening a browser (open it in a browser on \
this machine: the redirect comes back to 127.0.0.1). Without it, calltape opens $BROWSER, else the \
platform's opener, and prints the URL too, e.g.
  calltape bridge --url https://mcp.example.com/mcp --no-browser"
    )]
    pub(crate) no_browser: bool,
}

/// Shows the sign-in URL of `server` on one stderr line.
fn sign_in_notice(server: &str) -> calltape_oauth::SignInNotice {
    let server = calltape_recorder::http::without_userinfo(server).into_owned();
    Arc::new(move |url: &str| {
        crate::output::errln!("calltape: sign in to {server} in your browser: {url}");
    })
}

/// The variable that may hold the pre-registered OAuth client's secret.
const CLIENT_SECRET_ENV: &str = "CALLTAPE_OAUTH_CLIENT_SECRET";

impl OAuthArgs {
    /// The options these flags give for the server `url`; the sign-in URL is shown through the
    /// binary's one stderr writer.
    pub(crate) fn options(&self, url: &str) -> Result<calltape_oauth::OAuthOptions, Error> {
        let client_secret = match &self.oauth_client_secret_file {
            // A path the user named on the command line, read as given.
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|source| Error::ClientSecretFile {
                        path: path.clone(),
                        source,
                    })?
                    .trim()
                    .to_owned(),
            ),
            None => std::env::var(CLIENT_SECRET_ENV)
                .ok()
                .filter(|s| !s.is_empty() && self.oauth_client_id.is_some()),
        };
        if let Some(secret) = &client_secret {
            crate::logging::learn("client_secret", secret);
        }
        Ok(calltape_oauth::OAuthOptions {
            client_id: self.oauth_client_id.clone(),
            client_secret,
            client_metadata_url: self.oauth_client_metadata_url.clone(),
            client_credentials: self.oauth_client_credentials,
            scope: self.oauth_scope.clone(),
            open_browser: !self.no_browser,
            on_sign_in_url: Some(sign_in_notice(url)),
            // A server that echoes a token gets it hidden in every log line, report and recording.
            on_secret: Some(Arc::new(|name: &'static str, value: &str| {
                crate::logging::learn(name, value);
            })),
            ..calltape_oauth::OAuthOptions::default()
        })
    }
}

impl UpstreamArgs {
    /// Whether the server is a child process this command runs.
    pub(crate) fn is_child(&self) -> bool {
        !self.command.is_empty()
    }

    /// The server as a report names it: the command line, the URL (without its user info), or the
    /// socket and path; never a header.
    pub(crate) fn describe(&self) -> String {
        if self.is_child() {
            let words: Vec<String> = self
                .command
                .iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect();
            return words.join(" ");
        }
        match (&self.remote.url, &self.socket) {
            (Some(url), _) => calltape_recorder::http::without_userinfo(url).into_owned(),
            (None, Some(socket)) => format!("{} {}", socket.display(), self.http_path),
            (None, None) => String::new(),
        }
    }

    /// The upstream these flags name; a child's stderr goes to `stderr`.
    pub(crate) fn upstream(&self, stderr: Stderr) -> Result<Arc<dyn Upstream>, Error> {
        upstream(
            &self.remote,
            self.socket.as_deref(),
            &self.http_path,
            &self.command,
            stderr,
        )
    }
}

/// The upstream of a command's server flags: `-- CMD` (its stderr to `stderr`), else `--url`, else
/// HTTP at `http_path` over the Unix socket `socket`. `calltape serve --mock` spells the socket
/// `--server-socket`, its own `--socket` being where it listens.
pub(crate) fn upstream(
    remote: &RemoteArgs,
    socket: Option<&Path>,
    http_path: &str,
    command: &[OsString],
    stderr: Stderr,
) -> Result<Arc<dyn Upstream>, Error> {
    if !command.is_empty() {
        if remote.has_headers() {
            return Err(Error::HeadersForChild);
        }
        let child = ChildUpstream::new(command.iter().cloned())?;
        return Ok(Arc::new(child.stderr(stderr)));
    }
    let headers = remote.headers()?;
    match (&remote.url, socket) {
        (Some(url), _) => remote.http_upstream(url, headers),
        #[cfg(unix)]
        (None, Some(socket)) => Ok(Arc::new(calltape_stdio_bridge::UnixUpstream::new(
            socket, http_path, headers,
        )?)),
        #[cfg(windows)]
        (None, Some(socket)) => {
            let _ = (http_path, headers);
            Err(Error::NoUnixSockets {
                path: socket.to_owned(),
            })
        }
        (None, None) => Err(Error::NoServer),
    }
}

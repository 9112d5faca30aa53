//! Argument groups that several commands share, each flattened where it is used, so that a flag is
//! spelled, documented and checked the same way everywhere.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use calltape_stdio_bridge::{
    ChildUpstream, DEFAULT_HTTP_PATH, ExtraHeaders, HttpUpstream, Protocol, Stderr, UnixUpstream,
    Upstream,
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
    /// flags.
    pub(crate) fn http_upstream(
        &self,
        url: &str,
        headers: ExtraHeaders,
    ) -> Result<Arc<dyn Upstream>, Error> {
        Ok(Arc::new(HttpUpstream::new(url, headers)?))
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
        if self.is_child() {
            if self.remote.has_headers() {
                return Err(Error::HeadersForChild);
            }
            let child = ChildUpstream::new(self.command.iter().cloned())?;
            return Ok(Arc::new(child.stderr(stderr)));
        }
        let headers = self.remote.headers()?;
        match (&self.remote.url, &self.socket) {
            (Some(url), _) => self.remote.http_upstream(url, headers),
            (None, Some(socket)) => Ok(Arc::new(UnixUpstream::new(
                socket,
                &self.http_path,
                headers,
            )?)),
            (None, None) => Err(Error::NoServer),
        }
    }
}

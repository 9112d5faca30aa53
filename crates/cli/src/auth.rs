//! `calltape auth`: sign in to a remote MCP server ahead of time, list the stored sign-ins, sign out.

use std::time::{SystemTime, UNIX_EPOCH};

use calltape_oauth::{Credentials, OAuthSession, TokenStore};
use clap::{Args, Subcommand};

use crate::args::OAuthArgs;
use crate::error::{Error, Outcome};
use crate::exit;
use crate::output::{errln, outln, shown};

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape auth login https://mcp.example.com/mcp
  calltape auth login https://mcp.example.com/mcp --oauth-client-id my-app \\
      --oauth-client-secret-file ~/.config/my-app.secret
  calltape auth list
  calltape auth logout https://mcp.example.com/mcp
  calltape auth logout

`bridge`, `record`, `replay` and `serve` with --url sign in by themselves when the server answers \
401; `auth login` does it ahead of time (before a CI run, say). The sign-in URL is opened with \
$BROWSER, else the platform's opener, and always printed on stderr.

The store is $CALLTAPE_HOME/auth, else $XDG_STATE_HOME/calltape/auth, else \
~/.local/state/calltape/auth (on Windows, else %LOCALAPPDATA%\\calltape\\auth): owner-only files, one per server, resource and client, shared by \
every calltape process (several started at once make one sign-in and one refresh). `auth list` \
never shows a token.";

/// The arguments of `calltape auth`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct AuthArgs {
    #[command(subcommand)]
    command: AuthCommand,
}

#[derive(Debug, Subcommand)]
enum AuthCommand {
    /// Sign in to the MCP server at URL now and store the tokens (reused while they are good).
    #[command(
        after_help = "Examples:\n  calltape auth login https://mcp.example.com/mcp\n  \
        calltape auth login https://mcp.example.com/mcp --no-browser"
    )]
    Login {
        /// The server's MCP endpoint, e.g. https://mcp.example.com/mcp.
        url: String,
        #[command(flatten)]
        oauth: OAuthArgs,
    },
    /// List the stored sign-ins: server, client, scopes, expiry (never a token).
    #[command(after_help = "Example:\n  CALLTAPE_HOME=~/.calltape calltape auth list")]
    List,
    /// Remove the stored sign-in of URL, or every stored sign-in.
    #[command(
        after_help = "Examples:\n  calltape auth logout https://mcp.example.com/mcp\n  \
        calltape auth logout"
    )]
    Logout {
        /// The server's MCP endpoint, as `auth list` shows it; every server when left out.
        url: Option<String>,
    },
}

pub(crate) fn run(args: AuthArgs) -> Outcome {
    let store = TokenStore::from_env()?;
    match args.command {
        AuthCommand::Login { url, oauth } => login(store, &url, &oauth),
        AuthCommand::List => list(&store),
        AuthCommand::Logout { url } => logout(&store, url.as_deref()),
    }
}

fn login(store: TokenStore, url: &str, oauth: &OAuthArgs) -> Outcome {
    let session = OAuthSession::new(url, oauth.options(url)?, store)?;
    let runtime = crate::single_thread_runtime()?;
    let credentials = runtime.block_on(session.sign_in())?;
    errln!(
        "signed in to {} ({})",
        shown(&credentials.key.server_url),
        describe(&credentials, now())
    );
    Ok(exit::OK)
}

fn list(store: &TokenStore) -> Outcome {
    let stored = store.list()?;
    if stored.is_empty() {
        errln!(
            "no sign-in stored in {}",
            shown(&store.dir().display().to_string())
        );
        return Ok(exit::OK);
    }
    let now = now();
    for credentials in &stored {
        outln!(
            "{}  {}",
            shown(&credentials.key.server_url),
            describe(credentials, now)
        );
    }
    Ok(exit::OK)
}

fn logout(store: &TokenStore, url: Option<&str>) -> Outcome {
    let removed = store.remove(url)?;
    if removed.is_empty() {
        return Err(Error::NothingStored(url.map(str::to_owned)));
    }
    for key in &removed {
        errln!(
            "signed out of {} (client {})",
            shown(&key.server_url),
            shown(&key.client)
        );
    }
    Ok(exit::OK)
}

/// One stored sign-in in words: client, scopes, expiry; never a token.
fn describe(credentials: &Credentials, now: u64) -> String {
    let scopes = credentials.scope.as_deref().unwrap_or("no scope");
    let expiry = match credentials.expires_at {
        None => "no expiry given".to_owned(),
        Some(at) if at <= now => format!("expired {} ago", span(now - at)),
        Some(at) => format!("expires in {}", span(at - now)),
    };
    let refresh = if credentials.refresh_token.is_some() {
        ", refreshable"
    } else {
        ""
    };
    format!(
        "client {}, scopes: {scopes}, {expiry}{refresh}",
        credentials.client.client_id
    )
}

fn span(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} s"),
        120..7200 => format!("{} min", secs / 60),
        7200..172_800 => format!("{} h", secs / 3600),
        _ => format!("{} days", secs / 86_400),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_in_the_largest_whole_unit() {
        assert_eq!(span(5), "5 s");
        assert_eq!(span(600), "10 min");
        assert_eq!(span(3 * 3600), "3 h");
        assert_eq!(span(3 * 86_400), "3 days");
    }
}

//! What a sign-in may use: the client to sign in as, the scope, and how the user is shown the
//! sign-in page.

use std::{fmt, io::Write as _, sync::Arc, time::Duration};

/// Called with the sign-in URL before the browser is opened. The default writes one line to
/// stderr.
pub type SignInNotice = Arc<dyn Fn(&str) + Send + Sync>;

/// Called with each secret the session holds (`access_token`, `refresh_token`, `client_secret`, and
/// the value), before it is first sent: a caller that records or logs what the server answers hides
/// these values wherever they come back (a server may echo a token).
pub type SecretNotice = Arc<dyn Fn(&'static str, &str) + Send + Sync>;

/// How an [`OAuthSession`](crate::OAuthSession) signs in.
///
/// `Default` signs in as a dynamically registered public client, in the browser, with the scopes
/// the server asks for.
#[derive(Clone)]
pub struct OAuthOptions {
    /// A pre-registered client ID: used instead of registering a client.
    pub client_id: Option<String>,
    /// The pre-registered client's secret, if it is a confidential client.
    pub client_secret: Option<String>,
    /// A client ID metadata document URL (https, with a path), used as the client ID when the
    /// authorization server says it reads them (`client_id_metadata_document_supported`).
    pub client_metadata_url: Option<String>,
    /// Signs in with the client credentials grant (the pre-registered client's own ID and secret,
    /// no user and no browser), as the MCP client credentials extension describes.
    pub client_credentials: bool,
    /// The scopes to ask for (space-separated), instead of those the server names.
    pub scope: Option<String>,
    /// Whether to open the sign-in URL in the browser (`$BROWSER`, else the platform's opener). The
    /// URL is shown either way.
    pub open_browser: bool,
    /// The client name a dynamic registration gives.
    pub client_name: String,
    /// How long a browser sign-in may take before it fails.
    pub sign_in_timeout: Duration,
    /// Where the sign-in URL is shown; `None`: one line on stderr.
    pub on_sign_in_url: Option<SignInNotice>,
    /// Told each token and client secret before it is first sent; `None`: nobody is.
    pub on_secret: Option<SecretNotice>,
}

impl Default for OAuthOptions {
    fn default() -> Self {
        Self {
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_credentials: false,
            scope: None,
            open_browser: true,
            client_name: "calltape".to_owned(),
            sign_in_timeout: Duration::from_secs(300),
            on_sign_in_url: None,
            on_secret: None,
        }
    }
}

impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_credentials", &self.client_credentials)
            .field("scope", &self.scope)
            .field("open_browser", &self.open_browser)
            .field("client_name", &self.client_name)
            .field("sign_in_timeout", &self.sign_in_timeout)
            .finish_non_exhaustive()
    }
}

impl OAuthOptions {
    /// Shows the sign-in URL of `server_url`.
    pub(crate) fn announce(&self, server_url: &str, url: &str) {
        match &self.on_sign_in_url {
            Some(notice) => notice(url),
            None => {
                let _ = writeln!(
                    std::io::stderr(),
                    "calltape: sign in to {server_url} in your browser: {url}"
                );
            }
        }
    }

    /// The client the store keys the tokens by: the pre-registered ID, the metadata document URL,
    /// or `dynamic`.
    pub(crate) fn client_label(&self) -> String {
        self.client_id
            .clone()
            .or_else(|| self.client_metadata_url.clone())
            .unwrap_or_else(|| "dynamic".to_owned())
    }
}

//! Requests to the token endpoint: the authorization code exchange, a refresh, and the client
//! credentials grant, each with the client's authentication method.

use serde::Deserialize;

use crate::{
    Error, RegisteredClient,
    registration::{SECRET_BASIC, SECRET_POST},
    store::now_secs,
    web::{ClientAuth, Web},
};

/// A token endpoint's answer (RFC 6749 §5.1).
#[derive(Deserialize)]
pub(crate) struct Tokens {
    pub(crate) access_token: String,
    #[serde(default = "bearer")]
    pub(crate) token_type: String,
    #[serde(default)]
    pub(crate) refresh_token: Option<String>,
    #[serde(default)]
    pub(crate) expires_in: Option<u64>,
    #[serde(default)]
    pub(crate) scope: Option<String>,
}

fn bearer() -> String {
    "Bearer".to_owned()
}

impl Tokens {
    /// When the access token expires, in seconds since the epoch.
    pub(crate) fn expires_at(&self) -> Option<u64> {
        self.expires_in.map(|secs| now_secs().saturating_add(secs))
    }
}

/// What the token request is for.
pub(crate) enum Grant<'a> {
    /// The code of a redirect, with the PKCE verifier and the redirect URI it was sent to.
    Code {
        code: &'a str,
        verifier: &'a str,
        redirect_uri: &'a str,
    },
    /// A refresh token.
    Refresh(&'a str),
    /// The client's own credentials (no user), for `scope`.
    ClientCredentials { scope: Option<&'a str> },
}

/// Asks `endpoint` for tokens for `resource`.
pub(crate) async fn request(
    web: &Web,
    endpoint: &str,
    client: &RegisteredClient,
    grant: Grant<'_>,
    resource: &str,
) -> Result<Tokens, Error> {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    let what = match &grant {
        Grant::Code {
            code,
            verifier,
            redirect_uri,
        } => {
            pairs.extend([
                ("grant_type", "authorization_code"),
                ("code", code),
                ("code_verifier", verifier),
                ("redirect_uri", redirect_uri),
            ]);
            "exchanging the sign-in's code for tokens"
        }
        Grant::Refresh(token) => {
            pairs.extend([("grant_type", "refresh_token"), ("refresh_token", token)]);
            "refreshing the access token"
        }
        Grant::ClientCredentials { scope } => {
            pairs.push(("grant_type", "client_credentials"));
            if let Some(scope) = scope {
                pairs.push(("scope", scope));
            }
            "asking for a token with the client's credentials"
        }
    };
    pairs.push(("resource", resource));
    let answer = web.post_form(endpoint, &pairs, auth(client)).await?;
    if answer.status != 200 {
        return Err(Error::sign_in(format!(
            "the token endpoint refused {what} ({})",
            answer.explain()
        )));
    }
    // serde's messages may quote a value, which here may be a token: none is shown.
    serde_json::from_slice(&answer.body).map_err(|_| {
        Error::sign_in(format!(
            "the token endpoint's answer to {what} is not a token response (RFC 6749 §5.1)"
        ))
    })
}

/// The client's authentication at the token endpoint.
fn auth(client: &RegisteredClient) -> ClientAuth<'_> {
    match (
        client.token_endpoint_auth_method.as_str(),
        client.client_secret.as_deref(),
    ) {
        (SECRET_BASIC, Some(secret)) => ClientAuth::Basic(&client.client_id, secret),
        (SECRET_POST, Some(secret)) => ClientAuth::Post(&client.client_id, secret),
        _ => ClientAuth::Public(&client.client_id),
    }
}

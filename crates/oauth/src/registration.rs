//! Which client calltape signs in as, in the MCP spec's order: a pre-registered client, a client ID
//! metadata document URL (when the authorization server says it reads them), or a client registered
//! on the spot (RFC 7591 dynamic registration).

use serde::Deserialize;
use serde_json::json;

use crate::{Error, RegisteredClient, discovery::ServerMetadata, web::Web};

/// `client_secret_basic`: HTTP Basic at the token endpoint.
pub(crate) const SECRET_BASIC: &str = "client_secret_basic";
/// `client_secret_post`: the secret in the token request's body.
pub(crate) const SECRET_POST: &str = "client_secret_post";
/// `none`: a public client.
pub(crate) const NONE: &str = "none";

/// The client a sign-in can use without asking the authorization server: the pre-registered one,
/// or the metadata document URL when the server reads them. `None`: register one.
pub(crate) fn known_client(
    client_id: Option<&str>,
    client_secret: Option<&str>,
    metadata_url: Option<&str>,
    server: &ServerMetadata,
) -> Option<RegisteredClient> {
    if let Some(id) = client_id {
        return Some(RegisteredClient {
            client_id: id.to_owned(),
            client_secret: client_secret.map(str::to_owned),
            token_endpoint_auth_method: method_for_secret(
                client_secret.is_some(),
                server.token_endpoint_auth_methods_supported.as_deref(),
            )
            .to_owned(),
            client_secret_expires_at: None,
            redirect_uri: None,
        });
    }
    match metadata_url {
        Some(url) if server.client_id_metadata_document_supported => Some(RegisteredClient {
            client_id: url.to_owned(),
            client_secret: None,
            token_endpoint_auth_method: NONE.to_owned(),
            client_secret_expires_at: None,
            redirect_uri: None,
        }),
        _ => None,
    }
}

/// How a client with (or without) a secret authenticates at a token endpoint that supports
/// `supported` (RFC 8414's default, `client_secret_basic`, when it does not say).
pub(crate) fn method_for_secret(has_secret: bool, supported: Option<&[String]>) -> &'static str {
    if !has_secret {
        return NONE;
    }
    let supports = |m: &str| supported.is_none_or(|list| list.iter().any(|s| s == m));
    if supports(SECRET_BASIC) {
        SECRET_BASIC
    } else if supports(SECRET_POST) {
        SECRET_POST
    } else {
        NONE
    }
}

/// The method a dynamically registered client asks for: a public client (`none`) when the server
/// allows one, else a secret in the way it supports.
fn requested_method(supported: Option<&[String]>) -> &'static str {
    match supported {
        None => NONE,
        Some(list) => [NONE, SECRET_BASIC, SECRET_POST]
            .into_iter()
            .find(|m| list.iter().any(|s| s == m))
            .unwrap_or(NONE),
    }
}

/// Registers a client for `redirect_uri` with the authorization server (RFC 7591).
pub(crate) async fn register(
    web: &Web,
    server: &ServerMetadata,
    client_name: &str,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<RegisteredClient, Error> {
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(Error::sign_in(format!(
            "the authorization server {} offers no dynamic client registration; give a pre-registered \
             client ID (and secret) or a client ID metadata document URL",
            server.issuer
        )));
    };
    let method = requested_method(server.token_endpoint_auth_methods_supported.as_deref());
    let mut body = json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native",
    });
    if let Some(scope) = scope {
        body["scope"] = scope.into();
    }
    let answer = web.post_json(endpoint, &body).await?;
    if answer.status != 200 && answer.status != 201 {
        return Err(Error::sign_in(format!(
            "the authorization server refused to register calltape as a client ({})",
            answer.explain()
        )));
    }
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        #[serde(default)]
        client_secret: Option<String>,
        #[serde(default)]
        token_endpoint_auth_method: Option<String>,
        #[serde(default)]
        client_secret_expires_at: Option<u64>,
    }
    // serde's messages may quote a value, which here may be the client secret: none is shown.
    let registered: Registered = serde_json::from_slice(&answer.body).map_err(|_| {
        Error::sign_in(
            "the authorization server's registration answer is not a client (RFC 7591 §3.2.1)",
        )
    })?;
    let method = registered
        .token_endpoint_auth_method
        .unwrap_or_else(|| method.to_owned());
    if ![NONE, SECRET_BASIC, SECRET_POST].contains(&method.as_str()) {
        return Err(Error::sign_in(format!(
            "the authorization server registered calltape for the token endpoint auth method {method}, \
             which calltape does not support (client_secret_basic, client_secret_post or none)"
        )));
    }
    if method != NONE && registered.client_secret.is_none() {
        return Err(Error::sign_in(format!(
            "the authorization server registered calltape for {method} but gave no client secret"
        )));
    }
    Ok(RegisteredClient {
        client_id: registered.client_id,
        client_secret: registered.client_secret,
        token_endpoint_auth_method: method,
        client_secret_expires_at: registered.client_secret_expires_at.filter(|&at| at != 0),
        redirect_uri: Some(redirect_uri.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(methods: &[&str]) -> Vec<String> {
        methods.iter().map(|m| (*m).to_owned()).collect()
    }

    #[test]
    fn a_secret_goes_the_way_the_server_supports() {
        let cases: &[(bool, Option<&[&str]>, &str)] = &[
            (false, None, NONE),
            (true, None, SECRET_BASIC),
            (true, Some(&[SECRET_POST]), SECRET_POST),
            (true, Some(&[SECRET_POST, SECRET_BASIC]), SECRET_BASIC),
            (true, Some(&[NONE]), NONE),
        ];
        for (secret, supported, expected) in cases {
            let supported = supported.map(list);
            assert_eq!(
                method_for_secret(*secret, supported.as_deref()),
                *expected,
                "{secret} {supported:?}"
            );
        }
    }

    #[test]
    fn a_registration_asks_for_a_public_client_first() {
        assert_eq!(requested_method(None), NONE);
        assert_eq!(requested_method(Some(&list(&[SECRET_POST, NONE]))), NONE);
        assert_eq!(requested_method(Some(&list(&[SECRET_POST]))), SECRET_POST);
    }

    #[test]
    fn the_client_is_chosen_in_the_spec_order() {
        let mut server = ServerMetadata {
            client_id_metadata_document_supported: true,
            ..ServerMetadata::default()
        };
        let doc = Some("https://app.example/client.json");
        let pre = known_client(Some("id"), Some("s"), doc, &server).unwrap();
        assert_eq!(pre.client_id, "id");
        assert_eq!(pre.token_endpoint_auth_method, SECRET_BASIC);
        let cimd = known_client(None, None, doc, &server).unwrap();
        assert_eq!(cimd.client_id, "https://app.example/client.json");
        assert_eq!(cimd.token_endpoint_auth_method, NONE);
        server.client_id_metadata_document_supported = false;
        assert!(known_client(None, None, doc, &server).is_none());
    }
}

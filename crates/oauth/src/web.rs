//! The HTTP client of the sign-in: metadata documents, registration and token requests.
//!
//! reqwest with calltape's TLS set-up (the one `HttpUpstream` uses), redirects never followed (a
//! metadata document or a token endpoint that redirects is not used), a timeout on every request,
//! and answers read up to a limit. An error names the URL without its query and never quotes a
//! body that may hold a secret.

use std::time::Duration;

use base64::{Engine as _, engine::general_purpose::STANDARD};
use calltape_stdio_bridge::vocab::{HANDSHAKE_VERSION, HEADER_PROTOCOL_VERSION, PING};
use reqwest::{Url, redirect::Policy};
use serde::de::DeserializeOwned;

use crate::Error;

/// How long one request to a metadata, registration or token endpoint may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of an answer that is read.
const BODY_LIMIT: usize = 1 << 20;

/// An answer: its status and body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    /// The body as `T`, when the status is 2xx and the body parses.
    pub(crate) fn json<T: DeserializeOwned>(&self) -> Option<T> {
        if !(200..300).contains(&self.status) {
            return None;
        }
        serde_json::from_slice(&self.body).ok()
    }

    /// What an OAuth error answer says (`error` and `error_description`, RFC 6749 §5.2), else its
    /// status: never the raw body, which may echo a secret.
    pub(crate) fn explain(&self) -> String {
        #[derive(serde::Deserialize)]
        struct OAuthError {
            error: String,
            #[serde(default)]
            error_description: Option<String>,
        }
        match serde_json::from_slice::<OAuthError>(&self.body) {
            Ok(e) => match e.error_description {
                Some(description) => format!(
                    "HTTP {} {}: {}",
                    self.status,
                    clean(&e.error),
                    clean(&description)
                ),
                None => format!("HTTP {} {}", self.status, clean(&e.error)),
            },
            Err(_) => format!("HTTP {}", self.status),
        }
    }
}

/// Keeps a server's text short and on one line.
fn clean(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}

/// The client authentication of a token request.
pub(crate) enum ClientAuth<'a> {
    /// `client_id` in the body, no secret (`none`).
    Public(&'a str),
    /// HTTP Basic with the form-encoded ID and secret (`client_secret_basic`).
    Basic(&'a str, &'a str),
    /// ID and secret in the body (`client_secret_post`).
    Post(&'a str, &'a str),
}

/// The sign-in's HTTP client.
#[derive(Clone)]
pub(crate) struct Web {
    client: reqwest::Client,
}

impl Web {
    pub(crate) fn new() -> Result<Self, Error> {
        let tls = calltape_stdio_bridge::tls_client_config()
            .map_err(|e| Error::config(format!("cannot set up TLS for the sign-in: {e}")))?;
        let client = reqwest::Client::builder()
            .redirect(Policy::none())
            .tls_backend_preconfigured(tls)
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| Error::config(format!("cannot set up the sign-in's HTTP client: {e}")))?;
        Ok(Self { client })
    }

    /// GETs a metadata document.
    pub(crate) async fn get(&self, url: &str) -> Result<Answer, Error> {
        let request = self
            .client
            .get(parse(url)?)
            .header("accept", "application/json")
            // The MCP authorization spec asks metadata requests to name the protocol version.
            .header(HEADER_PROTOCOL_VERSION, HANDSHAKE_VERSION);
        send(request, url).await
    }

    /// POSTs a JSON-RPC `ping` to an MCP endpoint without credentials, for the `WWW-Authenticate`
    /// values of its refusal (empty when it does not refuse).
    pub(crate) async fn probe(&self, url: &str) -> Result<Vec<String>, Error> {
        let response = self
            .client
            .post(parse(url)?)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": PING}).to_string())
            .send()
            .await
            .map_err(|e| request_error(url, e))?;
        let status = response.status().as_u16();
        if status != 401 && status != 403 {
            return Ok(Vec::new());
        }
        Ok(response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect())
    }

    /// POSTs a JSON document (a client registration).
    pub(crate) async fn post_json(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<Answer, Error> {
        let request = self
            .client
            .post(parse(url)?)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body.to_string());
        send(request, url).await
    }

    /// POSTs a form to a token endpoint, with the client's authentication.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        pairs: &[(&str, &str)],
        auth: ClientAuth<'_>,
    ) -> Result<Answer, Error> {
        let mut pairs: Vec<(&str, &str)> = pairs.to_vec();
        let mut request = self
            .client
            .post(parse(url)?)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json");
        match auth {
            ClientAuth::Public(id) => pairs.push(("client_id", id)),
            ClientAuth::Basic(id, secret) => {
                // RFC 6749 §2.3.1: each part form-encoded before the two are joined.
                let credentials = format!("{}:{}", form_encode_one(id), form_encode_one(secret));
                request = request.header(
                    "authorization",
                    format!("Basic {}", STANDARD.encode(credentials)),
                );
            }
            ClientAuth::Post(id, secret) => {
                pairs.push(("client_id", id));
                pairs.push(("client_secret", secret));
            }
        }
        send(request.body(form_encode(&pairs)), url).await
    }
}

fn parse(url: &str) -> Result<Url, Error> {
    Url::parse(url).map_err(|e| Error::sign_in(format!("{}: not a URL: {e}", shown(url))))
}

async fn send(request: reqwest::RequestBuilder, url: &str) -> Result<Answer, Error> {
    let mut response = request.send().await.map_err(|e| request_error(url, e))?;
    let status = response.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        Error::sign_in(format!(
            "{}: reading the answer: {}",
            shown(url),
            e.without_url()
        ))
    })? {
        body.extend_from_slice(&chunk);
        if body.len() > BODY_LIMIT {
            return Err(Error::sign_in(format!(
                "{}: the answer is over {BODY_LIMIT} bytes",
                shown(url)
            )));
        }
    }
    Ok(Answer { status, body })
}

fn request_error(url: &str, err: reqwest::Error) -> Error {
    let err = err.without_url();
    Error::sign_in(format!(
        "{}: {}",
        shown(url),
        calltape_stdio_bridge::error_chain(&err)
    ))
}

/// `url` without its query and fragment, for a message.
pub(crate) fn shown(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or(url)
}

/// `application/x-www-form-urlencoded` of `pairs`.
pub(crate) fn form_encode(pairs: &[(&str, &str)]) -> String {
    let mut scratch = Url::parse("http://form.invalid/").expect("a constant URL parses");
    scratch.query_pairs_mut().extend_pairs(pairs);
    scratch.query().unwrap_or_default().to_owned()
}

fn form_encode_one(value: &str) -> String {
    let mut scratch = Url::parse("http://form.invalid/").expect("a constant URL parses");
    scratch.query_pairs_mut().append_key_only(value);
    scratch.query().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_encoded() {
        assert_eq!(
            form_encode(&[("a", "b c"), ("scope", "x:y&z")]),
            "a=b+c&scope=x%3Ay%26z"
        );
        assert_eq!(form_encode_one("id:with space"), "id%3Awith+space");
    }

    #[test]
    fn an_oauth_error_is_explained_without_the_body() {
        let answer = Answer {
            status: 400,
            body: br#"{"error":"invalid_grant","error_description":"bad code","refresh_token":"SECRET"}"#
                .to_vec(),
        };
        assert_eq!(answer.explain(), "HTTP 400 invalid_grant: bad code");
        let answer = Answer {
            status: 500,
            body: b"token=SECRET".to_vec(),
        };
        assert_eq!(answer.explain(), "HTTP 500");
    }
}

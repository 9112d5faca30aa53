//! Finding the authorization server of an MCP server, as the MCP authorization spec orders it.
//!
//! 1. The protected resource metadata (RFC 9728): the `resource_metadata` URL of the 401's
//!    `WWW-Authenticate`, else `/.well-known/oauth-protected-resource` with the server's path
//!    inserted, else at the root. Its `resource` must name the server (the same origin, and a path
//!    the server's path lies under), or the sign-in stops before anything is sent to the
//!    authorization server.
//! 2. The authorization server metadata of its first `authorization_servers` issuer: RFC 8414 with
//!    the issuer's path inserted, then OpenID discovery with the path inserted, then appended
//!    (only the first two, at the root, for an issuer without a path). The document's `issuer` must
//!    equal the issuer the URL was built from, compared as strings.
//! 3. A server without protected resource metadata is one of the 2025-03-26 specification: its
//!    origin is the authorization server, its metadata at the root RFC 8414 URL, and without one
//!    the endpoints `/authorize`, `/token` and `/register` of that origin.

use reqwest::Url;
use serde::Deserialize;

use crate::{Error, web::Web};

/// What one `WWW-Authenticate` challenge of a refusal says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub(crate) resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs.
    pub(crate) scope: Option<String>,
    /// `error` (`invalid_token`, `insufficient_scope`).
    pub(crate) error: Option<String>,
}

impl Challenge {
    /// Reads the `Bearer` parameters of `values` (the first value that has each wins).
    pub(crate) fn parse(values: &[String]) -> Self {
        let mut challenge = Self::default();
        for value in values {
            for (name, param) in params(value) {
                let slot = match name.to_ascii_lowercase().as_str() {
                    "resource_metadata" => &mut challenge.resource_metadata,
                    "scope" => &mut challenge.scope,
                    "error" => &mut challenge.error,
                    _ => continue,
                };
                if slot.is_none() {
                    *slot = Some(param);
                }
            }
        }
        challenge
    }
}

/// The `name=value` and `name="quoted value"` parameters of a challenge (RFC 9110 §11.2).
fn params(value: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = value.trim();
    // The scheme (`Bearer`) is the first token when a space, not `=`, follows it.
    if let Some((first, after)) = rest.split_once(' ')
        && !first.contains('=')
    {
        rest = after;
    }
    loop {
        rest = rest.trim_start_matches([' ', ',', '\t']);
        let Some((name, after)) = rest.split_once('=') else {
            break;
        };
        let name = name.trim().to_owned();
        let after = after.trim_start();
        let (param, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            let mut text = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            text.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => text.push(c),
                }
            }
            (text, &quoted[end.min(quoted.len())..])
        } else {
            let end = after.find([',', ' ']).unwrap_or(after.len());
            (after[..end].to_owned(), &after[end..])
        };
        out.push((name, param));
        rest = remaining;
    }
    out
}

/// Protected resource metadata (RFC 9728 §2), the fields the sign-in reads.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    /// The resource identifier, sent as `resource` exactly as published.
    pub(crate) resource: Option<String>,
    /// The authorization servers' issuers.
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    /// The scopes the resource knows.
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// Authorization server metadata (RFC 8414 §2), the fields the sign-in reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Option<String>,
    pub(crate) token_endpoint: Option<String>,
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
}

/// What discovery found: where to sign in, and for which resource.
#[derive(Debug, Clone)]
pub(crate) struct Discovery {
    /// The resource metadata, when the server publishes one.
    pub(crate) resource_metadata: Option<ResourceMetadata>,
    /// The `resource` parameter: the metadata's `resource`, else the server URL.
    pub(crate) resource: String,
    /// The authorization server's metadata (for a 2025-03-26 server without one, its defaults).
    pub(crate) server: ServerMetadata,
}

impl Discovery {
    /// Runs discovery for `server_url` after a refusal that said `challenge`.
    pub(crate) async fn run(
        web: &Web,
        server_url: &str,
        challenge: &Challenge,
    ) -> Result<Self, Error> {
        let server = Url::parse(server_url)
            .map_err(|e| Error::config(format!("the server URL is not a URL: {e}")))?;
        let mut failed_status = None;
        let mut found = None;
        for url in resource_metadata_urls(challenge.resource_metadata.as_deref(), &server) {
            let answer = web.get(&url).await?;
            if let Some(metadata) = answer.json::<ResourceMetadata>() {
                found = Some(metadata);
                break;
            }
            if answer.status >= 500 || answer.status == 429 {
                failed_status = Some(answer.status);
            }
        }
        let Some(metadata) = found else {
            if let Some(status) = failed_status {
                return Err(Error::sign_in(format!(
                    "the server's protected resource metadata could not be read (HTTP {status}); try again later"
                )));
            }
            return Self::legacy(web, &server).await;
        };
        let resource = match &metadata.resource {
            Some(resource) => {
                if !resource_covers(resource, &server) {
                    return Err(Error::sign_in(format!(
                        "the server's protected resource metadata names the resource {resource}, not {}; \
                         refusing to sign in for another resource",
                        shown_url(&server)
                    )));
                }
                resource.clone()
            }
            None => server_url.to_owned(),
        };
        let Some(issuer) = metadata.authorization_servers.first().cloned() else {
            return Err(Error::sign_in(
                "the server's protected resource metadata lists no authorization server",
            ));
        };
        let server_metadata = server_metadata(web, &issuer).await?.ok_or_else(|| {
            Error::sign_in(format!(
                "no authorization server metadata found for {issuer} (RFC 8414 or OpenID discovery)"
            ))
        })?;
        Ok(Self {
            resource_metadata: Some(metadata),
            resource,
            server: server_metadata,
        })
    }

    /// The 2025-03-26 way: the server's origin is its authorization server.
    async fn legacy(web: &Web, server: &Url) -> Result<Self, Error> {
        let origin = server.origin().ascii_serialization();
        let url = format!("{origin}/.well-known/oauth-authorization-server");
        let answer = web.get(&url).await?;
        let metadata = match answer.json::<ServerMetadata>() {
            Some(metadata) => {
                // A root issuer is the same with or without its trailing slash.
                if metadata.issuer != origin && metadata.issuer != format!("{origin}/") {
                    return Err(issuer_mismatch(&metadata.issuer, &origin));
                }
                metadata
            }
            None => ServerMetadata {
                issuer: origin.clone(),
                authorization_endpoint: Some(format!("{origin}/authorize")),
                token_endpoint: Some(format!("{origin}/token")),
                registration_endpoint: Some(format!("{origin}/register")),
                ..ServerMetadata::default()
            },
        };
        Ok(Self {
            resource_metadata: None,
            resource: canonical(server),
            server: metadata,
        })
    }

    /// The scopes to ask for: the challenge's, else the resource metadata's `scopes_supported`,
    /// else none; with `offline_access` added when the authorization server lists it (a refresh
    /// token is wanted) and some scope is asked for.
    pub(crate) fn scope(&self, challenge: &Challenge) -> Option<String> {
        let mut scope = challenge.scope.clone().or_else(|| {
            self.resource_metadata
                .as_ref()
                .and_then(|m| m.scopes_supported.as_ref())
                .map(|s| s.join(" "))
        })?;
        let offline = self
            .server
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == OFFLINE_ACCESS));
        if offline && !scope.split(' ').any(|s| s == OFFLINE_ACCESS) && !scope.is_empty() {
            scope.push(' ');
            scope.push_str(OFFLINE_ACCESS);
        }
        Some(scope).filter(|s| !s.is_empty())
    }
}

/// The scope that asks for a refresh token.
pub(crate) const OFFLINE_ACCESS: &str = "offline_access";

/// The union of two space-separated scope lists, in order, each scope once.
pub(crate) fn union(first: Option<&str>, second: Option<&str>) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for scope in first
        .into_iter()
        .chain(second)
        .flat_map(|s| s.split(' '))
        .filter(|s| !s.is_empty())
    {
        if !out.contains(&scope) {
            out.push(scope);
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}

/// The protected resource metadata URLs to try, in order.
pub(crate) fn resource_metadata_urls(from_challenge: Option<&str>, server: &Url) -> Vec<String> {
    let mut urls = Vec::new();
    if let Some(url) = from_challenge {
        urls.push(url.to_owned());
    }
    let origin = server.origin().ascii_serialization();
    let path = server.path();
    if !path.is_empty() && path != "/" {
        urls.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    urls
}

/// The authorization server metadata URLs of `issuer`, in order.
pub(crate) fn server_metadata_urls(issuer: &str) -> Result<Vec<String>, Error> {
    let url = Url::parse(issuer).map_err(|e| {
        Error::sign_in(format!(
            "the authorization server {issuer} is not a URL: {e}"
        ))
    })?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// The metadata of `issuer`, checked to name it; `None` when no URL serves one.
async fn server_metadata(web: &Web, issuer: &str) -> Result<Option<ServerMetadata>, Error> {
    for url in server_metadata_urls(issuer)? {
        let answer = web.get(&url).await?;
        if let Some(metadata) = answer.json::<ServerMetadata>() {
            if metadata.issuer != issuer {
                return Err(issuer_mismatch(&metadata.issuer, issuer));
            }
            return Ok(Some(metadata));
        }
        if answer.status >= 500 {
            return Err(Error::sign_in(format!(
                "the authorization server's metadata could not be read (HTTP {}); try again later",
                answer.status
            )));
        }
    }
    Ok(None)
}

fn issuer_mismatch(found: &str, expected: &str) -> Error {
    Error::sign_in(format!(
        "the authorization server metadata names the issuer {found}, not {expected}; refusing to use it"
    ))
}

/// Whether the resource identifier `resource` covers `server`: the same scheme, host and port, and a
/// path `server`'s path lies under (RFC 9728 §3.3, with the MCP spec's canonical server URI).
pub(crate) fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != server.origin() {
        return false;
    }
    let with_slash = |p: &str| {
        if p.ends_with('/') {
            p.to_owned()
        } else {
            format!("{p}/")
        }
    };
    with_slash(server.path()).starts_with(&with_slash(resource.path()))
}

/// The canonical server URI: the URL without fragment.
fn canonical(server: &Url) -> String {
    let mut url = server.clone();
    url.set_fragment(None);
    url.to_string()
}

/// The URL without user info, query or fragment, for a message.
pub(crate) fn shown_url(url: &Url) -> String {
    format!("{}{}", url.origin().ascii_serialization(), url.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn challenges_are_read() {
        let c = Challenge::parse(&[
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/.well-known/oauth-protected-resource/mcp""#
                .to_owned(),
        ]);
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://x/.well-known/oauth-protected-resource/mcp")
        );
        let c = Challenge::parse(&["Bearer realm=x, scope=read".to_owned()]);
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(
            Challenge::parse(&["Basic".to_owned()]),
            Challenge::default()
        );
    }

    #[test]
    fn resource_metadata_is_looked_for_in_the_spec_order() {
        let cases: &[(Option<&str>, &str, &[&str])] = &[
            (
                Some("https://a/m.json"),
                "https://a/mcp",
                &[
                    "https://a/m.json",
                    "https://a/.well-known/oauth-protected-resource/mcp",
                    "https://a/.well-known/oauth-protected-resource",
                ],
            ),
            (
                None,
                "http://a:8/",
                &["http://a:8/.well-known/oauth-protected-resource"],
            ),
        ];
        for (header, server, expected) in cases {
            assert_eq!(
                resource_metadata_urls(*header, &url(server)),
                *expected,
                "{server}"
            );
        }
    }

    #[test]
    fn server_metadata_is_looked_for_in_the_spec_order() {
        let cases: &[(&str, &[&str])] = &[
            (
                "https://as.example",
                &[
                    "https://as.example/.well-known/oauth-authorization-server",
                    "https://as.example/.well-known/openid-configuration",
                ],
            ),
            (
                "https://as.example/tenant1/",
                &[
                    "https://as.example/.well-known/oauth-authorization-server/tenant1",
                    "https://as.example/.well-known/openid-configuration/tenant1",
                    "https://as.example/tenant1/.well-known/openid-configuration",
                ],
            ),
        ];
        for (issuer, expected) in cases {
            assert_eq!(server_metadata_urls(issuer).unwrap(), *expected, "{issuer}");
        }
    }

    #[test]
    fn a_resource_covers_the_server_under_it_only() {
        let server = url("https://api.example/mcp");
        let cases = [
            ("https://api.example/mcp", true),
            ("https://api.example/mcp/", true),
            ("https://api.example", true),
            ("https://API.example/", true),
            ("https://api.example/other", false),
            ("https://api.example/mc", false),
            ("https://evil.example/mcp", false),
            ("http://api.example/mcp", false),
            ("https://api.example:444/mcp", false),
        ];
        for (resource, covers) in cases {
            assert_eq!(resource_covers(resource, &server), covers, "{resource}");
        }
    }

    #[test]
    fn scopes_are_chosen_in_the_spec_order() {
        let mut discovery = Discovery {
            resource_metadata: Some(ResourceMetadata {
                resource: None,
                authorization_servers: vec![],
                scopes_supported: Some(vec!["a".into(), "b".into()]),
            }),
            resource: String::new(),
            server: ServerMetadata::default(),
        };
        let from_header = Challenge {
            scope: Some("h".into()),
            ..Challenge::default()
        };
        assert_eq!(discovery.scope(&from_header).as_deref(), Some("h"));
        assert_eq!(
            discovery.scope(&Challenge::default()).as_deref(),
            Some("a b")
        );
        discovery.server.scopes_supported = Some(vec!["a".into(), OFFLINE_ACCESS.into()]);
        assert_eq!(
            discovery.scope(&Challenge::default()).as_deref(),
            Some("a b offline_access")
        );
        discovery
            .resource_metadata
            .as_mut()
            .unwrap()
            .scopes_supported = None;
        // The authorization server's list alone never makes a scope.
        assert_eq!(discovery.scope(&Challenge::default()), None);
    }

    #[test]
    fn scopes_unite_in_order() {
        assert_eq!(union(Some("a b"), Some("b c")).as_deref(), Some("a b c"));
        assert_eq!(union(None, Some("c")).as_deref(), Some("c"));
        assert_eq!(union(None, None), None);
    }
}

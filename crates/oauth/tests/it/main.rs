//! OAuthSession against a small authorization server of the test's own (protected resource metadata,
//! authorization server metadata and a token endpoint that counts its grants): one sign-in and one
//! refresh however many requests wait, in one process and across sessions that share a store.
//!
//! The sign-ins use the client credentials grant, so no browser takes part.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use calltape_oauth::{OAuthOptions, OAuthSession, TokenStore};
use calltape_stdio_bridge::{AuthChallenge, Authorizer};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpListener,
};

/// What the fake authorization server counted.
#[derive(Default)]
struct Counts {
    client_credentials: AtomicUsize,
    refresh: AtomicUsize,
    registrations: AtomicUsize,
}

/// Starts the server on a free loopback port; returns its MCP URL and its counts.
async fn authorization_server(first_expires_in: u64) -> (String, Arc<Counts>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let counts = Arc::new(Counts::default());
    let (served_base, served) = (base.clone(), counts.clone());
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let (base, counts) = (served_base.clone(), served.clone());
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                let (head_end, length) = loop {
                    let n = stream.read(&mut buf).await.unwrap();
                    assert!(n > 0, "the client closed before its request was whole");
                    request.extend_from_slice(&buf[..n]);
                    if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&request[..end]).to_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                        break (end + 4, length);
                    }
                };
                while request.len() < head_end + length {
                    let n = stream.read(&mut buf).await.unwrap();
                    request.extend_from_slice(&buf[..n]);
                }
                let head = String::from_utf8_lossy(&request[..head_end]).into_owned();
                let body = String::from_utf8_lossy(&request[head_end..]).into_owned();
                let target = head.split(' ').nth(1).unwrap_or_default().to_owned();
                let (status, answer) = match target.as_str() {
                    "/.well-known/oauth-protected-resource/mcp" => (
                        200,
                        format!(
                            r#"{{"resource":"{base}/mcp","authorization_servers":["{base}"]}}"#
                        ),
                    ),
                    "/.well-known/oauth-authorization-server" => (
                        200,
                        format!(
                            r#"{{"issuer":"{base}","authorization_endpoint":"{base}/authorize","token_endpoint":"{base}/token","registration_endpoint":"{base}/register","token_endpoint_auth_methods_supported":["client_secret_basic"],"code_challenge_methods_supported":["S256"]}}"#
                        ),
                    ),
                    "/token" if body.contains("grant_type=client_credentials") => {
                        let n = counts.client_credentials.fetch_add(1, Ordering::SeqCst) + 1;
                        // HTTP Basic of ci-client:ci-secret.
                        if !head.contains("Basic Y2ktY2xpZW50OmNpLXNlY3JldA==") {
                            // Slow to refuse, as a person closing the sign-in page is: every held
                            // request is waiting by the time it does.
                            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                            let answer = r#"{"error":"invalid_client","error_description":"unknown client"}"#;
                            (401, answer.to_owned())
                        } else {
                            (
                                200,
                                format!(
                                    r#"{{"access_token":"cc-{n}","token_type":"Bearer","expires_in":{first_expires_in},"refresh_token":"rt-{n}"}}"#
                                ),
                            )
                        }
                    }
                    "/register" => {
                        let n = counts.registrations.fetch_add(1, Ordering::SeqCst) + 1;
                        let asked: serde_json::Value = serde_json::from_str(&body).unwrap();
                        (
                            201,
                            format!(
                                r#"{{"client_id":"dyn-{n}","token_endpoint_auth_method":"none","redirect_uris":{}}}"#,
                                asked["redirect_uris"]
                            ),
                        )
                    }
                    "/token" if body.contains("grant_type=refresh_token") => {
                        let n = counts.refresh.fetch_add(1, Ordering::SeqCst) + 1;
                        (
                            200,
                            format!(
                                r#"{{"access_token":"refreshed-{n}","token_type":"Bearer","expires_in":3600}}"#
                            ),
                        )
                    }
                    _ => (404, r#"{"error":"not_found"}"#.to_owned()),
                };
                let response = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    (format!("{base}/mcp"), counts)
}

fn options() -> OAuthOptions {
    OAuthOptions {
        client_id: Some("ci-client".into()),
        client_secret: Some("ci-secret".into()),
        client_credentials: true,
        open_browser: false,
        ..OAuthOptions::default()
    }
}

/// The server's 401 to a request that carried `sent`.
fn refusal(url: &str, sent: Option<String>) -> AuthChallenge {
    let base = url.trim_end_matches("/mcp");
    AuthChallenge {
        status: 401,
        www_authenticate: vec![format!(
            r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#
        )],
        sent,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_refused_requests_make_one_sign_in() {
    let (url, counts) = authorization_server(3600).await;
    let dir = tempfile::tempdir().unwrap();
    let session = Arc::new(OAuthSession::new(&url, options(), TokenStore::at(dir.path())).unwrap());
    // Ten requests sent before there was a token, all refused.
    assert_eq!(session.authorization().await.unwrap(), None);
    let mut waiting = Vec::new();
    for _ in 0..10 {
        let (session, url) = (session.clone(), url.clone());
        waiting.push(tokio::spawn(async move {
            session.challenged(refusal(&url, None)).await
        }));
    }
    for request in waiting {
        assert_eq!(request.await.unwrap(), Ok(true));
    }
    assert_eq!(counts.client_credentials.load(Ordering::SeqCst), 1);
    assert_eq!(
        session.authorization().await.unwrap().as_deref(),
        Some("Bearer cc-1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_sign_in_fails_every_request_that_waited_for_it() {
    let (url, counts) = authorization_server(3600).await;
    let dir = tempfile::tempdir().unwrap();
    let options = OAuthOptions {
        client_id: Some("unknown-client".into()),
        ..options()
    };
    let session = Arc::new(OAuthSession::new(&url, options, TokenStore::at(dir.path())).unwrap());
    let all_refused = Arc::new(tokio::sync::Barrier::new(10));
    let mut waiting = Vec::new();
    for _ in 0..10 {
        let (session, url, all_refused) = (session.clone(), url.clone(), all_refused.clone());
        waiting.push(tokio::spawn(async move {
            all_refused.wait().await;
            session.challenged(refusal(&url, None)).await
        }));
    }
    for request in waiting {
        let err = request.await.unwrap().unwrap_err();
        assert!(err.contains("invalid_client: unknown client"), "{err}");
        assert!(!err.contains("ci-secret"), "{err}");
    }
    assert_eq!(counts.client_credentials.load(Ordering::SeqCst), 1);
    // A later refusal tries again.
    assert!(session.challenged(refusal(&url, None)).await.is_err());
    assert_eq!(counts.client_credentials.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_that_waited_for_the_lock_takes_the_stored_tokens() {
    let (url, counts) = authorization_server(3600).await;
    let dir = tempfile::tempdir().unwrap();
    let first = OAuthSession::new(&url, options(), TokenStore::at(dir.path())).unwrap();
    let second = OAuthSession::new(&url, options(), TokenStore::at(dir.path())).unwrap();
    // The second has read the store before the first signed in, as a process started at the same
    // time would have.
    assert_eq!(second.authorization().await.unwrap(), None);
    assert_eq!(first.challenged(refusal(&url, None)).await, Ok(true));
    assert_eq!(second.challenged(refusal(&url, None)).await, Ok(true));
    assert_eq!(counts.client_credentials.load(Ordering::SeqCst), 1);
    assert_eq!(
        second.authorization().await.unwrap().as_deref(),
        Some("Bearer cc-1")
    );
    let stored = TokenStore::at(dir.path()).list().unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].key.resource, url);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_expiring_token_is_refreshed_once_for_every_waiting_request_and_session() {
    // The first token expires within the refresh margin.
    let (url, counts) = authorization_server(30).await;
    let dir = tempfile::tempdir().unwrap();
    let first = Arc::new(OAuthSession::new(&url, options(), TokenStore::at(dir.path())).unwrap());
    assert_eq!(first.challenged(refusal(&url, None)).await, Ok(true));
    let second = OAuthSession::new(&url, options(), TokenStore::at(dir.path())).unwrap();
    let mut waiting = Vec::new();
    for _ in 0..10 {
        let first = first.clone();
        waiting.push(tokio::spawn(async move { first.authorization().await }));
    }
    for request in waiting {
        assert_eq!(
            request.await.unwrap().unwrap().as_deref(),
            Some("Bearer refreshed-1")
        );
    }
    // The second session read the expiring token from the store, and takes the refreshed one.
    assert_eq!(
        second.authorization().await.unwrap().as_deref(),
        Some("Bearer refreshed-1")
    );
    assert_eq!(counts.refresh.load(Ordering::SeqCst), 1);
    assert_eq!(counts.client_credentials.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sign_in_that_never_came_back_keeps_its_registered_client_for_the_next_try() {
    let (url, counts) = authorization_server(3600).await;
    let dir = tempfile::tempdir().unwrap();
    let options = OAuthOptions {
        open_browser: false,
        sign_in_timeout: std::time::Duration::from_millis(300),
        ..OAuthOptions::default()
    };
    let session = OAuthSession::new(&url, options, TokenStore::at(dir.path())).unwrap();
    for _ in 0..2 {
        let err = session.challenged(refusal(&url, None)).await.unwrap_err();
        assert!(err.contains("no sign-in came back"), "{err}");
    }
    assert_eq!(counts.registrations.load(Ordering::SeqCst), 1);
}

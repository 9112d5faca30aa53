//! Who may use the proxy: no web page (foreign `Origin`, rebinding `Host`), and, when it holds a key,
//! only a client that knows its per-run path prefix.

use std::net::SocketAddr;

use calltape_replay::http::{Mode, Proxy, ProxyHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::fake::FakeUpstream;

const KEY: &str = "sk-guard-0123456789abcdefghijklmnop";
const CHAT: &str = r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}"#;

/// One HTTP/1.1 request with exactly these headers (and a content length); the status and body.
async fn raw(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("POST {path} HTTP/1.1\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

/// The path of the proxy's base URL for `upstream` (with its prefix, when it has one).
fn base_path(proxy: &ProxyHandle, upstream: &str) -> String {
    let url = proxy.base_url(upstream);
    url[url.find("://").unwrap() + 3..]
        .split_once('/')
        .map(|(_, p)| format!("/{p}"))
        .unwrap()
}

fn requests_seen(fake: &FakeUpstream) -> usize {
    fake.seen.lock().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_origin_post_or_a_rebinding_host_never_reaches_the_upstream() {
    let fake = FakeUpstream::start().await;
    let proxy = Proxy::builder()
        .upstream("openai", fake.url())
        .mode(Mode::Live)
        .path_token(false)
        .auth("openai", "authorization", format!("Bearer {KEY}"))
        .allow_origin("http://localhost:5173")
        .start()
        .await
        .unwrap();
    let addr = proxy.local_addr();
    let own = format!("127.0.0.1:{}", addr.port());
    let path = format!("{}/v1/chat/completions", base_path(&proxy, "openai"));

    // A page's "simple" request: no preflight, so only the Origin header tells it apart.
    let (status, body) = raw(
        addr,
        &path,
        &[
            ("host", &own),
            ("origin", "https://evil.example"),
            ("content-type", "text/plain"),
        ],
        CHAT,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("Origin"), "{body}");
    // DNS rebinding: the page's own name, resolved to 127.0.0.1, arrives as the Host.
    let rebound = format!("evil.example:{}", addr.port());
    let other_port = format!("127.0.0.1:{}", addr.port().wrapping_add(1));
    for host in [rebound.as_str(), other_port.as_str(), "evil.example"] {
        let (status, body) = raw(
            addr,
            &path,
            &[("host", host), ("content-type", "application/json")],
            CHAT,
        )
        .await;
        assert_eq!(status, 421, "{host}: {body}");
    }
    assert_eq!(requests_seen(&fake), 0, "a refused request went upstream");

    // The origin allowed by name, and a plain loopback client, are served with the key added.
    let localhost = format!("localhost:{}", addr.port());
    for headers in [
        vec![
            ("host", localhost.as_str()),
            ("origin", "http://localhost:5173"),
        ],
        vec![("host", own.as_str())],
    ] {
        let mut headers = headers;
        headers.push(("content-type", "application/json"));
        let (status, body) = raw(addr, &path, &headers, CHAT).await;
        assert_eq!(status, 200, "{headers:?}: {body}");
        assert!(body.contains(&format!("auth was Bearer {KEY}")), "{body}");
    }
    assert_eq!(requests_seen(&fake), 2);
    proxy.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_with_a_key_serves_only_under_its_random_path_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeUpstream::start().await;
    let token_file = dir.path().join("token");
    let proxy = Proxy::builder()
        .upstream("openai", fake.url())
        .cassette(dir.path().join("default.jsonl"))
        .cassette_dir(dir.path())
        .mode(Mode::Record)
        .auth("openai", "authorization", format!("Bearer {KEY}"))
        .path_token_file(&token_file)
        .start()
        .await
        .unwrap();
    let addr = proxy.local_addr();
    let own = format!("127.0.0.1:{}", addr.port());
    let token = proxy
        .path_token()
        .expect("a key brings a path prefix")
        .to_owned();
    assert!(
        token.len() == 35
            && token.starts_with("ct-")
            && token[3..].bytes().all(|b| b.is_ascii_hexdigit()),
        "{token}"
    );
    assert_eq!(proxy.url(), format!("http://{addr}/{token}"));
    assert_eq!(
        proxy.base_url("openai"),
        format!("http://{addr}/{token}/openai")
    );
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), token);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let json = [("host", own.as_str()), ("content-type", "application/json")];
    for path in [
        "/openai/v1/chat/completions".to_owned(),
        "/_cassette/t1/openai/v1/chat/completions".to_owned(),
        format!("/{}/openai/v1/chat/completions", &token[..34]),
        format!("/openai/{token}/v1/chat/completions"),
    ] {
        let (status, body) = raw(addr, &path, &json, CHAT).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert!(body.contains("path prefix"), "{body}");
    }
    assert_eq!(
        requests_seen(&fake),
        0,
        "a request without the prefix went upstream"
    );

    // Under the prefix: the default cassette, then per-test cassettes by path and by header.
    let chat = format!("/{token}/openai/v1/chat/completions");
    let by_path = format!("/{token}/_cassette/t1/openai/v1/chat/completions");
    let mut with_header = json.to_vec();
    with_header.push(("x-calltape-cassette", "t2"));
    for (path, headers) in [
        (&chat, json.to_vec()),
        (&by_path, json.to_vec()),
        (&chat, with_header),
    ] {
        let (status, body) = raw(addr, path, &headers, CHAT).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    assert_eq!(requests_seen(&fake), 3);
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.recorded, 3, "{}", report.summary());
    for name in ["default.jsonl", "t1.jsonl", "t2.jsonl"] {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(
            text.contains(r#""path":"/v1/chat/completions""#),
            "{name}: {text}"
        );
        assert!(
            !text.contains(&token[3..]),
            "{name} holds the path prefix: {text}"
        );
        assert!(!text.contains(KEY), "{name} holds the key");
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_path_token_file_is_never_written_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeUpstream::start().await;
    let target = dir.path().join("target");
    std::fs::write(&target, "untouched").unwrap();
    let link = dir.path().join("token");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = Proxy::builder()
        .upstream("openai", fake.url())
        .mode(Mode::Live)
        .auth("openai", "authorization", format!("Bearer {KEY}"))
        .path_token_file(&link)
        .start()
        .await
        .expect_err("a symlink at the token file's path must be refused");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
}

//! An upstream that fails mid-body: through the recording proxy, and again from the cassette, the
//! client gets every byte the upstream sent before the failure, and then the failure, as a client
//! connected directly does.

use std::net::SocketAddr;

use calltape_replay::http::{Mode, Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::load::CpuLoad;

/// Four events and the start of a fifth: about 1 KiB of body.
fn body_chunks() -> Vec<String> {
    let event = |i: usize| format!("data: {{\"n\":{i},\"text\":\"{}\"}}\n\n", "x".repeat(250));
    let mut chunks: Vec<String> = (0..4).map(event).collect();
    chunks.push("data: {\"n\":4,\"tex".to_owned());
    chunks
}

/// An upstream that answers every request with a chunked event stream and closes the connection
/// before the stream's end, all in one write: the last bytes and the failure arrive together.
async fn failing_upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let mut out = String::from(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
                );
                for chunk in body_chunks() {
                    out.push_str(&format!("{:x}\r\n{chunk}\r\n", chunk.len()));
                }
                let _ = socket.write_all(out.as_bytes()).await;
                let _ = socket.shutdown().await;
                // Until the client closes too: closing with unread bytes would send a reset
                // that could overtake the data.
                while let Ok(1..) = socket.read(&mut buf).await {}
            });
        }
    });
    addr
}

/// Reads a response body until it ends or fails: the bytes, and whether it failed.
async fn fetch(url: &str) -> (Vec<u8>, bool) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(calltape_stdio_bridge::tls_client_config().unwrap())
        .build()
        .unwrap();
    let mut resp = client
        .post(url)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    let mut bytes = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => bytes.extend_from_slice(&c),
            Ok(None) => return (bytes, false),
            Err(_) => return (bytes, true),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_byte_before_an_upstream_failure_reaches_the_client_under_load() {
    const RUNS: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("reset.jsonl");
    let upstream = failing_upstream().await;
    let _load = CpuLoad::start();
    let proxy = Proxy::builder()
        .upstream("api", format!("http://{upstream}"))
        .cassette(&cassette)
        .mode(Mode::Record)
        .start()
        .await
        .unwrap();
    let sent = body_chunks().concat().into_bytes();
    for run in 0..RUNS {
        let direct = fetch(&format!("http://{upstream}/v1/stream")).await;
        assert_eq!(direct, (sent.clone(), true), "run {run}: direct");
        let proxied = fetch(&format!("{}/v1/stream", proxy.base_url("api"))).await;
        assert_eq!(
            (proxied.0.len(), proxied.1),
            (direct.0.len(), true),
            "run {run}: through the recording proxy"
        );
        assert_eq!(proxied.0, direct.0, "run {run}");
    }
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.recorded, RUNS, "{}", report.summary());
    let text = std::fs::read_to_string(&cassette).unwrap();
    let end = format!(r#"{{"after":{},"how":"reset","t":"end"}}"#, sent.len());
    assert_eq!(text.matches(&end).count(), RUNS, "{text}");

    let proxy = Proxy::builder()
        .upstream("api", "http://127.0.0.1:9")
        .cassette(&cassette)
        .mode(Mode::Replay)
        .start()
        .await
        .unwrap();
    for run in 0..RUNS {
        let replayed = fetch(&format!("{}/v1/stream", proxy.base_url("api"))).await;
        assert_eq!(replayed, (sent.clone(), true), "run {run}: replayed");
    }
    let report = proxy.shutdown().await.unwrap();
    assert_eq!(report.replayed, RUNS, "{}", report.summary());
}

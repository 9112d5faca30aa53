//! A shared session's protocol edges, and a shared server bound to the command it runs.

use calltape_stdio_bridge::shared::{Record, SharedUpstream, Transport};
use serde_json::{Value, json};

use crate::{
    shared::{home, launcher, paths, stop, wait_gone},
    support::Client,
};

fn initialize(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}})
}

#[tokio::test]
async fn an_sse_initialize_answer_sets_the_protocol_version_of_later_requests() {
    let home = home();
    let paths = paths(home.path(), "k");
    let upstream = SharedUpstream::new(paths.clone(), Transport::Unix, launcher(Transport::Unix));
    let mut client = Client::over(upstream);
    // The server (behind `serve`, which answers in SSE) echoes the version asked for; `serve` refuses
    // requests whose MCP-Protocol-Version it does not support, so a later call shows the header.
    let answer = client
        .request(0, "initialize", initialize("1999-01-01"))
        .await;
    assert_eq!(
        answer["result"]["protocolVersion"], "1999-01-01",
        "{answer}"
    );
    let called = client.call(1, "echo", json!({"text": "hi"})).await;
    assert_eq!(called["error"]["code"], -32004, "{called}");
    let message = called["error"]["data"]["upstream"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("unsupported MCP-Protocol-Version"),
        "{called}"
    );

    drop(client);
    let record = Record::read(&paths.record()).unwrap().expect("a record");
    stop(record.pid);
    wait_gone(&paths.record()).await;
}

#[tokio::test]
async fn a_protocol_version_with_control_characters_is_an_upstream_protocol_error() {
    let home = home();
    let paths = paths(home.path(), "k");
    let upstream = SharedUpstream::new(paths.clone(), Transport::Http, launcher(Transport::Http));
    let mut client = Client::over(upstream);
    let answer = client
        .request(0, "initialize", initialize("2025-06-18\u{1}\r\nx-evil: 1"))
        .await;
    assert_eq!(answer["error"]["code"], -32004, "{answer}");
    drop(client);
    let record = Record::read(&paths.record()).unwrap().expect("a record");
    stop(record.pid);
    wait_gone(&paths.record()).await;
}

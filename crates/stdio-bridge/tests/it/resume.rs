//! What a client set up in its session (resource subscriptions, the log level) reaches a restarted
//! child before the client's next request, sent by the bridge under ids of its own whose answers the
//! client never sees.

use std::time::Duration;

use calltape_stdio_bridge::{Bridge, ChildUpstream};
use serde_json::{Value, json};

use crate::support::{Client, echo_server, text};

async fn subscribe(client: &mut Client, id: u64, method: &str, uri: &str) -> Value {
    client
        .request(id, &format!("resources/{method}"), json!({ "uri": uri }))
        .await
}

async fn set_level(client: &mut Client, id: u64, level: &str) -> Value {
    client
        .request(id, "logging/setLevel", json!({ "level": level }))
        .await
}

/// Everything the client was sent besides the answers it waited for: notifications only, none of
/// them an answer to a request the bridge made.
fn notifications(notes: &[Value], rest: &[Value]) -> Vec<String> {
    notes
        .iter()
        .chain(rest)
        .map(|note| {
            note["method"]
                .as_str()
                .unwrap_or_else(|| panic!("the client got an answer it did not ask for: {note}"))
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn a_restarted_child_gets_the_accepted_subscriptions_and_log_level_before_the_next_request() {
    let upstream = ChildUpstream::new([echo_server()]).expect("argv");
    let mut client = Client::start(
        Bridge::builder()
            .upstream(upstream)
            .build()
            .expect("bridge"),
    );
    client.initialize().await;
    for (id, method, uri) in [
        (1, "subscribe", "file:///a"),
        (2, "subscribe", "file:///b"),
        (3, "subscribe", "file:///c"),
        (4, "unsubscribe", "file:///b"),
    ] {
        let answer = subscribe(&mut client, id, method, uri).await;
        assert_eq!(answer["result"], json!({}), "{answer}");
    }
    // What the server refused is not part of the session.
    let refused = subscribe(&mut client, 5, "subscribe", "missing:x").await;
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    assert_eq!(
        set_level(&mut client, 6, "debug").await["result"],
        json!({})
    );
    let refused = set_level(&mut client, 7, "loud").await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    let crashed = client.call(8, "crash", json!({})).await;
    assert_eq!(crashed["error"]["data"]["reason"], "upstream_exited");
    assert_eq!(
        text(&client.call(9, "seen", json!({})).await),
        "initialize, notifications/initialized, logging/setLevel debug, \
         resources/subscribe file:///a, resources/subscribe file:///c, tools/call seen"
    );
    // A second restart replays the same state again.
    client.call(10, "crash", json!({})).await;
    assert_eq!(
        text(&client.call(11, "seen", json!({})).await),
        "initialize, notifications/initialized, logging/setLevel debug, \
         resources/subscribe file:///a, resources/subscribe file:///c, tools/call seen"
    );
    let notes = std::mem::take(&mut client.notes);
    let (summary, rest) = client.finish().await;
    assert_eq!(summary.reinitializations, 2);
    assert_eq!(
        notifications(&notes, &rest),
        ["notifications/tools/list_changed"; 2]
    );
}

#[tokio::test]
async fn what_the_client_sends_while_the_child_is_down_is_held_and_sent_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = dir.path().join("server");
    std::os::unix::fs::symlink(echo_server(), &server).expect("symlink");
    let upstream = ChildUpstream::new([&server]).expect("argv");
    let mut client = Client::start(
        Bridge::builder()
            .upstream(upstream)
            .build()
            .expect("bridge"),
    );
    client.initialize().await;
    assert_eq!(
        subscribe(&mut client, 1, "subscribe", "file:///a").await["result"],
        json!({})
    );
    // The child goes and cannot be started again until the link is back.
    std::fs::remove_file(&server).expect("unlink");
    let crashed = client.call(2, "crash", json!({})).await;
    assert_eq!(crashed["error"]["data"]["reason"], "upstream_exited");
    client
        .send(
            json!({ "jsonrpc": "2.0", "id": 3, "method": "resources/subscribe",
            "params": { "uri": "file:///held" } }),
        )
        .await;
    client
        .send(
            json!({ "jsonrpc": "2.0", "id": 4, "method": "logging/setLevel",
            "params": { "level": "error" } }),
        )
        .await;
    client
        .send(json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": { "name": "seen", "arguments": {} } }))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    std::os::unix::fs::symlink(echo_server(), &server).expect("symlink again");
    assert_eq!(client.answer(&json!(3)).await["result"], json!({}));
    assert_eq!(client.answer(&json!(4)).await["result"], json!({}));
    // Only what the old child accepted is replayed; the held messages follow, once each.
    assert_eq!(
        text(&client.answer(&json!(5)).await),
        "initialize, notifications/initialized, resources/subscribe file:///a, \
         resources/subscribe file:///held, logging/setLevel error, tools/call seen"
    );
    // Once accepted, what was held is part of the session too.
    client.call(6, "crash", json!({})).await;
    assert_eq!(
        text(&client.call(7, "seen", json!({})).await),
        "initialize, notifications/initialized, logging/setLevel error, \
         resources/subscribe file:///a, resources/subscribe file:///held, tools/call seen"
    );
    let notes = std::mem::take(&mut client.notes);
    let (_, rest) = client.finish().await;
    assert_eq!(
        notifications(&notes, &rest),
        ["notifications/tools/list_changed"; 2]
    );
}

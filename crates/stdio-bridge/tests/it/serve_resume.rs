//! What the sessions of `serve` set up (resource subscriptions, the log level) reaches a restarted
//! child once each, as far as the old child accepted it.

use calltape_stdio_bridge::{ChildUpstream, Stderr, UPSTREAM_EXITED, serve::ServerBuilder};
use serde_json::{Value, json};

use crate::serve::{Session, mux_server, start};

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

async fn answer(session: &Session, id: u64, method: &str, params: Value) -> Value {
    session
        .post(&request(id, method, params))
        .await
        .answer(&json!(id))
        .clone()
}

#[tokio::test]
async fn a_restarted_child_gets_what_the_old_one_accepted_and_what_was_held_once() {
    // The child answers each initialize late, so requests sent while it restarts are held.
    let child = ChildUpstream::new([
        mux_server().display().to_string(),
        "--init-delay-ms".to_owned(),
        "1500".to_owned(),
    ])
    .expect("child")
    .stderr(Stderr::Null);
    let running = start(ServerBuilder::new(child)).await;
    let mut a = Session::new(running.target.clone(), None);
    let mut b = Session::new(running.target.clone(), None);
    a.initialize().await;
    b.initialize().await;
    let subscribed = answer(&a, 1, "resources/subscribe", json!({ "uri": "file:///x" })).await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    let refused = answer(&a, 2, "resources/subscribe", json!({ "uri": "missing:y" })).await;
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    let level = answer(&a, 3, "logging/setLevel", json!({ "level": "debug" })).await;
    assert_eq!(level["result"], json!({}), "{level}");

    let crashed = a.call(json!(4), "crash", json!({})).await;
    assert_eq!(crashed.answer(&json!(4))["error"]["code"], UPSTREAM_EXITED);
    // Sent while the new child is not initialized yet: held, and sent once after the replay.
    let held = tokio::join!(
        answer(&b, 5, "resources/subscribe", json!({ "uri": "file:///z" })),
        answer(&b, 6, "logging/setLevel", json!({ "level": "error" })),
    );
    assert_eq!(
        (&held.0["result"], &held.1["result"]),
        (&json!({}), &json!({})),
        "{held:?}"
    );

    let setup = a.call_text(json!(7), "setup", json!({})).await;
    let mut setup: Vec<String> = serde_json::from_str(&setup).expect("a JSON list");
    // The held ones went in the order they came, which two requests at once do not fix.
    setup.sort();
    assert_eq!(
        setup,
        [
            "logging/setLevel error",
            "resources/subscribe file:///x",
            "resources/subscribe file:///z",
        ]
    );
    running.stop().await;
}

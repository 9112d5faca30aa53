//! The session state machine against a scripted in-memory upstream, for the events a child never sends:
//! expired sessions, undelivered frames and answers that are not MCP.

use std::sync::{Arc, Mutex};

use calltape_stdio_bridge::{BoxFuture, Error, Frame, Link, Upstream, UpstreamEvent};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{Client, text};

/// Answers like a small MCP server; some tool names make it report an event instead, once each, and so
/// do subscriptions to URIs that start with those names and a colon, the second time they are sent
/// (when the bridge replays them).
#[derive(Debug, Clone, Default)]
struct Scripted {
    /// Every frame the bridge sent, in order.
    log: Arc<Mutex<Vec<Value>>>,
    /// Tool names and URIs whose event was already reported.
    done: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    fn sent(&self) -> Vec<Value> {
        self.log.lock().expect("lock").clone()
    }

    /// How many times the bridge sent this method with these params.
    fn times(&self, message: &Value) -> usize {
        let log = self.log.lock().expect("lock");
        log.iter()
            .filter(|m| m["method"] == message["method"] && m["params"] == message["params"])
            .count()
    }

    fn event_for(&self, frame: &Frame, message: &Value) -> Option<UpstreamEvent> {
        let params = &message["params"];
        let (key, kind) = match (params["name"].as_str(), params["uri"].as_str()) {
            (Some(tool), _) => (tool, tool.trim_end_matches("-always")),
            (None, Some(uri)) if self.times(message) == 2 => (uri, uri.split(':').next()?),
            _ => return None,
        };
        let mut done = self.done.lock().expect("lock");
        let repeat = key.ends_with("-always");
        if done.iter().any(|d| d == key) && !repeat {
            return None;
        }
        done.push(key.to_owned());
        let frame = frame.clone();
        Some(match kind {
            "expire" => UpstreamEvent::SessionExpired { frame },
            "refused" => UpstreamEvent::Undelivered {
                frame,
                maybe_delivered: false,
                reason: "connection refused".to_owned(),
            },
            "dropped" => UpstreamEvent::Undelivered {
                frame,
                maybe_delivered: true,
                reason: "connection reset".to_owned(),
            },
            "html" => UpstreamEvent::ProtocolError {
                frame,
                status: Some(500),
                message: "expected JSON, got text/html".to_owned(),
            },
            _ => return None,
        })
    }

    /// The answer to a request; a subscription to `file:///flaky` is refused after its first time.
    fn answer(&self, message: &Value) -> Option<Value> {
        let id = message.get("id")?;
        let method = message["method"].as_str()?;
        if method == "resources/subscribe" && message["params"]["uri"] == "file:///flaky" {
            let times = self
                .sent()
                .iter()
                .filter(|m| m["params"] == message["params"])
                .count();
            if times > 1 {
                let error = json!({ "code": -32002, "message": "resource not found" });
                return Some(json!({ "jsonrpc": "2.0", "id": id, "error": error }));
            }
        }
        let result = match method {
            "initialize" => json!({
                "protocolVersion": "2025-06-18",
                "capabilities": { "tools": { "listChanged": true }, "resources": { "listChanged": true } },
                "serverInfo": { "name": "scripted", "version": "1" },
            }),
            "tools/call" => {
                json!({ "content": [{ "type": "text", "text": message["params"]["name"] }] })
            }
            _ => json!({}),
        };
        Some(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
    }
}

impl Upstream for Scripted {
    fn describe(&self) -> String {
        "scripted".to_owned()
    }

    fn connect(&self) -> BoxFuture<'_, Result<Link, Error>> {
        let this = self.clone();
        Box::pin(async move {
            let (outgoing, mut rx) = mpsc::channel::<Frame>(16);
            let (events_tx, events) = mpsc::channel(16);
            tokio::spawn(async move {
                while let Some(frame) = rx.recv().await {
                    let message: Value =
                        serde_json::from_slice(&frame).expect("json from the bridge");
                    this.log.lock().expect("lock").push(message.clone());
                    let event = match this.event_for(&frame, &message) {
                        Some(event) => event,
                        None => match this.answer(&message) {
                            Some(answer) => UpstreamEvent::Message(Frame::from(answer.to_string())),
                            None => continue,
                        },
                    };
                    if events_tx.send(event).await.is_err() {
                        break;
                    }
                }
            });
            Ok(Link {
                outgoing,
                events,
                close: Box::new(|| Box::pin(async {})),
            })
        })
    }
}

fn methods(sent: &[Value]) -> Vec<String> {
    sent.iter()
        .map(|m| {
            let method = m["method"].as_str().unwrap_or("?");
            match m["params"]["name"].as_str().or(m["params"]["uri"].as_str()) {
                Some(name) => format!("{method} {name}"),
                None => method.to_owned(),
            }
        })
        .collect()
}

#[tokio::test]
async fn an_expired_session_is_reinitialized_and_the_request_retried_once() {
    let upstream = Scripted::default();
    let mut client = Client::over(upstream.clone());
    client.initialize().await;
    let answer = client.call(1, "expire", json!({})).await;
    assert_eq!(text(&answer), "expire");
    // The client sees the list changes and nothing of the replayed handshake.
    let notes: Vec<&str> = client
        .notes
        .iter()
        .filter_map(|n| n["method"].as_str())
        .collect();
    assert_eq!(
        notes,
        [
            "notifications/tools/list_changed",
            "notifications/resources/list_changed"
        ]
    );
    let sent = upstream.sent();
    assert_eq!(
        methods(&sent),
        [
            "initialize",
            "notifications/initialized",
            "tools/call expire",
            "initialize",
            "notifications/initialized",
            "tools/call expire",
        ]
    );
    // The replay carries the client's parameters under an id of the bridge's own.
    assert_eq!(sent[3]["params"], sent[0]["params"]);
    assert_ne!(sent[3]["id"], sent[0]["id"]);
    assert_eq!(sent[5]["id"], 1);
    // A session that expires again right after the replay is an error, not a loop.
    let again = client.call(2, "expire-always", json!({})).await;
    let again_twice = again["error"]["data"]["reason"].clone();
    assert_eq!(again_twice, "session_expired", "{again}");
    assert_eq!(again["error"]["code"], -32000);
    client.finish().await;
}

#[tokio::test]
async fn a_frame_refused_before_sending_is_held_and_sent_again() {
    let upstream = Scripted::default();
    let mut client = Client::over(upstream.clone());
    client.initialize().await;
    let answer = client.call(1, "refused", json!({})).await;
    assert_eq!(text(&answer), "refused");
    assert_eq!(
        methods(&upstream.sent())[2..],
        ["tools/call refused", "tools/call refused"]
    );
    client.finish().await;
}

#[tokio::test]
async fn a_frame_lost_after_sending_is_an_error_and_never_replayed() {
    let upstream = Scripted::default();
    let mut client = Client::over(upstream.clone());
    client.initialize().await;
    let answer = client.call(1, "dropped", json!({})).await;
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    assert_eq!(answer["error"]["data"]["reason"], "connection_lost");
    assert_eq!(
        answer["error"]["data"]["upstream"]["message"],
        "connection reset"
    );
    let next = client.call(2, "echo", json!({})).await;
    assert_eq!(text(&next), "echo");
    assert_eq!(
        methods(&upstream.sent())[2..],
        ["tools/call dropped", "tools/call echo"]
    );
    client.finish().await;
}

#[tokio::test]
async fn an_answer_that_is_not_mcp_is_an_upstream_protocol_error() {
    let upstream = Scripted::default();
    let mut client = Client::over(upstream);
    client.initialize().await;
    let answer = client.call(1, "html", json!({})).await;
    assert_eq!(answer["error"]["code"], -32004, "{answer}");
    assert_eq!(answer["error"]["data"]["reason"], "upstream_protocol_error");
    assert_eq!(
        answer["error"]["data"]["upstream"],
        json!({ "status": 500, "message": "expected JSON, got text/html" })
    );
    client.finish().await;
}

#[tokio::test]
async fn an_expired_session_gets_the_subscriptions_again_and_the_client_no_answer_of_the_bridge() {
    let upstream = Scripted::default();
    let mut client = Client::over(upstream.clone());
    client.initialize().await;
    for (id, uri) in [(1, "file:///a"), (2, "file:///flaky")] {
        let answer = client
            .request(id, "resources/subscribe", json!({ "uri": uri }))
            .await;
        assert_eq!(answer["result"], json!({}), "{answer}");
    }
    let answer = client.call(3, "expire", json!({})).await;
    assert_eq!(text(&answer), "expire");
    let sent = upstream.sent();
    assert_eq!(
        methods(&sent)[4..],
        [
            "tools/call expire",
            "initialize",
            "notifications/initialized",
            "resources/subscribe file:///a",
            "resources/subscribe file:///flaky",
            "tools/call expire",
        ]
    );
    // The replayed requests carry ids of the bridge's own, unlike any of the client's.
    for replayed in &sent[7..9] {
        let id = replayed["id"].as_str().expect("a string id");
        assert!(id.starts_with("calltape-"), "{replayed}");
    }
    // The new session refused file:///flaky: the client hears nothing of it, nor of file:///a's answer.
    assert_only_list_changes_reached(&client);
    let (_, rest) = client.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
}

/// What the client heard besides its answers: the list changes after a re-initialization, and no answer
/// to a request of the bridge's own.
fn assert_only_list_changes_reached(client: &Client) {
    let notes: Vec<&str> = client
        .notes
        .iter()
        .map(|n| {
            n["method"]
                .as_str()
                .unwrap_or_else(|| panic!("an answer the client did not ask for: {n}"))
        })
        .collect();
    assert_eq!(
        notes,
        [
            "notifications/tools/list_changed",
            "notifications/resources/list_changed"
        ]
    );
}

#[tokio::test]
async fn a_replayed_subscription_lost_on_the_way_is_never_an_answer_to_the_client() {
    let upstream = Scripted::default();
    let mut client = Client::over(upstream.clone());
    client.initialize().await;
    // Each is accepted now, and meets its event when the bridge replays it.
    let uris = ["refused:a", "dropped:b", "html:c", "file:///d", "expire:e"];
    for (id, uri) in (1..).zip(uris) {
        let answer = client
            .request(id, "resources/subscribe", json!({ "uri": uri }))
            .await;
        assert_eq!(answer["result"], json!({}), "{answer}");
    }
    let answer = client.call(9, "expire", json!({})).await;
    assert_eq!(text(&answer), "expire");
    // Once more after the replay: every replayed request was answered or given up by then.
    assert_eq!(text(&client.call(10, "echo", json!({})).await), "echo");
    let sent = methods(&upstream.sent());
    let replayed = |uri: &str| {
        let line = format!("resources/subscribe {uri}");
        sent.iter().filter(|m| **m == line).count()
    };
    // Refused before sending: sent again; the others: sent once more, never again.
    assert_eq!(replayed("refused:a"), 3, "{sent:?}");
    for uri in &uris[1..] {
        assert_eq!(replayed(uri), 2, "{uri}: {sent:?}");
    }
    assert_eq!(sent.iter().filter(|m| *m == "initialize").count(), 2);
    assert_only_list_changes_reached(&client);
    let (_, rest) = client.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
}

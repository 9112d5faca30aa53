//! The lanes through the pump, with a scripted legacy upstream: the test plays every session's far end.

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{IDLE, MAX_SESSIONS};
use crate::jsonrpc::Frame;
use crate::{
    TOO_MANY_CAPABILITY_SESSIONS, UPSTREAM_EXITED,
    era::{
        Protocol,
        pump::{self, Context, Said},
    },
    upstream::{BoxFuture, Link, Upstream, UpstreamEvent},
};

/// The far end of one session: what the bridge sent it, and where its answers go.
struct Far {
    sent: mpsc::Receiver<Frame>,
    events: mpsc::Sender<UpstreamEvent>,
    closed: mpsc::Receiver<()>,
}

/// A link whose far end is handed to the test.
fn link() -> (Link, Far) {
    let (outgoing, sent) = mpsc::channel(64);
    let (events_tx, events) = mpsc::channel(64);
    let (closed_tx, closed) = mpsc::channel(1);
    let link = Link {
        outgoing,
        events,
        close: Box::new(move || {
            Box::pin(async move {
                let _ = closed_tx.send(()).await;
            })
        }),
    };
    let far = Far {
        sent,
        events: events_tx,
        closed,
    };
    (link, far)
}

/// A legacy upstream whose every other session is a fresh link handed to the test.
struct Scripted {
    apart: bool,
    opened: mpsc::UnboundedSender<Far>,
}

impl Upstream for Scripted {
    fn describe(&self) -> String {
        "scripted".into()
    }

    fn connect(&self) -> BoxFuture<'_, Result<Link, crate::Error>> {
        Box::pin(async { Err(crate::Error::config("only sessions apart are opened here")) })
    }

    fn connect_apart(&self) -> Option<BoxFuture<'_, Result<Link, crate::Error>>> {
        if !self.apart {
            return None;
        }
        Some(Box::pin(async move {
            let (link, far) = link();
            self.opened.send(far).unwrap();
            Ok(link)
        }))
    }
}

struct Setup {
    client: Link,
    first: Far,
    opened: mpsc::UnboundedReceiver<Far>,
}

fn setup(apart: bool) -> Setup {
    let (inner, first) = link();
    let (opened_tx, opened) = mpsc::unbounded_channel();
    let upstream = Scripted {
        apart,
        opened: opened_tx,
    };
    let context = Context {
        protocol: Protocol::Legacy,
        shown: "scripted".into(),
        said: Said::default(),
        upstream: Some(Arc::new(upstream)),
    };
    Setup {
        client: pump::start(inner, context),
        first,
        opened,
    }
}

fn frame(message: &Value) -> Frame {
    Frame::from(serde_json::to_vec(message).unwrap())
}

fn parse(frame: &Frame) -> Value {
    serde_json::from_slice(frame).unwrap()
}

/// A 2026-07-28 request from a client with `capabilities`.
fn modern(id: u64, method: &str, capabilities: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {
    "name": "echo",
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "lanes", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }}})
}

async fn next(far: &mut Far) -> Value {
    let sent = tokio::time::timeout(Duration::from_secs(10), far.sent.recv()).await;
    parse(
        &sent
            .expect("the bridge sent nothing")
            .expect("the link ended"),
    )
}

async fn answer(far: &Far, id: &Value, result: Value) {
    let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
    far.events
        .send(UpstreamEvent::Message(frame(&message)))
        .await
        .unwrap();
}

/// Plays the server's side of the session the bridge opens, and returns the capabilities it was
/// opened with.
async fn accept_session(far: &mut Far) -> Value {
    let initialize = next(far).await;
    assert_eq!(initialize["method"], "initialize", "{initialize}");
    let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "scripted", "version": "1"}});
    answer(far, &initialize["id"], result).await;
    assert_eq!(next(far).await["method"], "notifications/initialized");
    initialize["params"]["capabilities"].clone()
}

async fn to_client(client: &mut Link) -> Value {
    let event = tokio::time::timeout(Duration::from_secs(10), client.events.recv()).await;
    match event.expect("the client side got nothing") {
        Some(UpstreamEvent::Message(frame)) => parse(&frame),
        other => panic!("expected a message, got {other:?}"),
    }
}

/// Sends `request` from the client and plays the server: the request reaches `far` without the era's
/// `_meta`, and its answer reaches the client.
async fn round_trip(setup: &mut Setup, far: &mut Far, request: &Value) {
    setup.client.outgoing.send(frame(request)).await.unwrap();
    let up = next(far).await;
    assert_eq!(up["method"], request["method"], "{up}");
    assert!(up["params"].get("_meta").is_none(), "{up}");
    answer(far, &up["id"], json!({"tools": []})).await;
    let back = to_client(&mut setup.client).await;
    assert_eq!(back["id"], request["id"], "{back}");
    assert_eq!(back["result"]["resultType"], "complete", "{back}");
}

/// The far end of the next session the bridge opens beside the link's own.
async fn opened(setup: &mut Setup) -> Far {
    let opened = tokio::time::timeout(Duration::from_secs(10), setup.opened.recv()).await;
    opened
        .expect("no session was opened beside the first")
        .unwrap()
}

/// Sends `request` from the client and plays the session it opens on `far`: the handshake, then the
/// request's answer, which reaches the client. Returns the capabilities the session was opened with.
async fn in_new_session(setup: &mut Setup, far: &mut Far, request: &Value) -> Value {
    setup.client.outgoing.send(frame(request)).await.unwrap();
    let capabilities = accept_session(far).await;
    let up = next(far).await;
    assert_eq!(up["method"], request["method"], "{up}");
    answer(far, &up["id"], json!({"tools": []})).await;
    assert_eq!(to_client(&mut setup.client).await["id"], request["id"]);
    capabilities
}

/// Sends `request` from a client the open sessions were not opened for, and plays the handshake of the
/// session opened for it; the request is next on the returned far end. Also returns the capabilities
/// that session was opened with.
async fn beside(setup: &mut Setup, request: &Value) -> (Far, Value) {
    setup.client.outgoing.send(frame(request)).await.unwrap();
    let mut far = opened(setup).await;
    let capabilities = accept_session(&mut far).await;
    (far, capabilities)
}

fn nothing_opened(setup: &mut Setup) {
    assert!(
        setup.opened.try_recv().is_err(),
        "a session was opened that should not be"
    );
}

#[tokio::test]
async fn a_client_with_other_capabilities_gets_a_session_of_its_own_and_keeps_it() {
    let mut setup = setup(true);
    let elicits = json!({"elicitation": {}});
    let plain = json!({});
    let mut first = std::mem::replace(&mut setup.first, link().1);

    let request = modern(1, "tools/list", &elicits);
    let opened_with = in_new_session(&mut setup, &mut first, &request).await;
    assert_eq!(opened_with, elicits);
    nothing_opened(&mut setup);

    let (mut second, opened_with) = beside(&mut setup, &modern(2, "tools/list", &plain)).await;
    assert_eq!(opened_with, plain);
    let up = next(&mut second).await;
    assert_eq!(up["method"], "tools/list");
    answer(&second, &up["id"], json!({"tools": []})).await;
    assert_eq!(to_client(&mut setup.client).await["id"], 2);

    // Each client stays in its own session; a discover never opens one.
    round_trip(&mut setup, &mut first, &modern(3, "tools/call", &elicits)).await;
    round_trip(&mut setup, &mut second, &modern(4, "tools/call", &plain)).await;
    let discover = modern(5, "server/discover", &json!({"sampling": {}}));
    setup.client.outgoing.send(frame(&discover)).await.unwrap();
    let answer = to_client(&mut setup.client).await;
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["result"]["supportedVersions"], json!(["2026-07-28"]));
    nothing_opened(&mut setup);
    assert!(first.sent.try_recv().is_err() && second.sent.try_recv().is_err());

    // Closing the link stops the session opened beside it.
    (setup.client.close)().await;
    tokio::time::timeout(Duration::from_secs(10), second.closed.recv())
        .await
        .expect("the second session was not closed")
        .unwrap();
}

#[tokio::test]
async fn a_session_claimed_by_a_discover_alone_is_claimed_again_by_the_next_client() {
    let mut setup = setup(true);
    let mut first = std::mem::replace(&mut setup.first, link().1);
    let probe = modern(1, "server/discover", &json!({}));
    setup.client.outgoing.send(frame(&probe)).await.unwrap();
    assert_eq!(accept_session(&mut first).await, json!({}));
    assert_eq!(to_client(&mut setup.client).await["id"], 1);

    let elicits = json!({"elicitation": {}});
    setup
        .client
        .outgoing
        .send(frame(&modern(2, "tools/list", &elicits)))
        .await
        .unwrap();
    // The same link opens its session again, with the client's capabilities: no second session.
    assert_eq!(accept_session(&mut first).await, elicits);
    let up = next(&mut first).await;
    answer(&first, &up["id"], json!({"tools": []})).await;
    assert_eq!(to_client(&mut setup.client).await["id"], 2);
    nothing_opened(&mut setup);
}

#[tokio::test]
async fn a_session_that_ends_answers_what_it_held_and_the_next_request_opens_another() {
    let mut setup = setup(true);
    let mut first = std::mem::replace(&mut setup.first, link().1);
    let elicits = json!({"elicitation": {}});
    let plain = json!({});
    in_new_session(&mut setup, &mut first, &modern(1, "tools/list", &elicits)).await;
    let (mut second, _) = beside(&mut setup, &modern(2, "tools/call", &plain)).await;
    assert_eq!(next(&mut second).await["method"], "tools/call");
    second
        .events
        .send(UpstreamEvent::Closed {
            reason: "the child exited".into(),
        })
        .await
        .unwrap();
    let failed = to_client(&mut setup.client).await;
    assert_eq!(failed["id"], 2, "{failed}");
    assert_eq!(failed["error"]["code"], UPSTREAM_EXITED, "{failed}");
    let said = failed["error"]["message"].as_str().unwrap();
    assert!(said.contains("the child exited"), "{said}");

    let (mut third, opened_with) = beside(&mut setup, &modern(3, "tools/list", &plain)).await;
    assert_eq!(opened_with, plain);
    assert_eq!(next(&mut third).await["method"], "tools/list");
    // The first session never saw any of it.
    assert!(first.sent.try_recv().is_err());
}

#[tokio::test]
async fn past_the_limit_a_client_is_refused_and_on_an_upstream_of_one_session_others_share_the_first()
 {
    for apart in [true, false] {
        let mut setup = setup(apart);
        let mut first = std::mem::replace(&mut setup.first, link().1);
        let mut others = Vec::new();
        let apart_ones = if apart { MAX_SESSIONS - 1 } else { 0 };
        for n in 0..=MAX_SESSIONS {
            let capabilities = json!({"experimental": {"n": n}});
            let request = modern(n as u64, "tools/list", &capabilities);
            setup.client.outgoing.send(frame(&request)).await.unwrap();
            if apart && n == MAX_SESSIONS {
                // Every session is taken: the request is refused, and goes nowhere.
                let refused = to_client(&mut setup.client).await;
                assert_eq!(refused["id"], n, "{refused}");
                assert_eq!(
                    refused["error"]["code"], TOO_MANY_CAPABILITY_SESSIONS,
                    "{refused}"
                );
                assert_eq!(
                    refused["error"]["data"],
                    json!({"reason": "too_many_capability_sessions", "limit": MAX_SESSIONS}),
                );
                continue;
            }
            let far = if n == 0 || n > apart_ones {
                &mut first
            } else {
                others.push(opened(&mut setup).await);
                others.last_mut().unwrap()
            };
            if n == 0 || n <= apart_ones {
                assert_eq!(accept_session(far).await, capabilities);
            }
            let up = next(far).await;
            assert_eq!(up["method"], "tools/list", "{up}");
            answer(far, &up["id"], json!({"tools": []})).await;
            assert_eq!(to_client(&mut setup.client).await["id"], n);
        }
        assert_eq!(others.len(), apart_ones);
        nothing_opened(&mut setup);
        assert!(first.sent.try_recv().is_err());
        for other in &mut others {
            assert!(other.sent.try_recv().is_err());
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_session_of_its_own_with_nothing_in_flight_is_closed_once_idle() {
    let mut setup = setup(true);
    let mut first = std::mem::replace(&mut setup.first, link().1);
    in_new_session(&mut setup, &mut first, &modern(1, "tools/list", &json!({}))).await;
    let elicits = json!({"elicitation": {}});
    let sampling = json!({"sampling": {}});
    // One session answers its request; the other still holds one when the idle time comes.
    let (mut idle, _) = beside(&mut setup, &modern(2, "tools/list", &elicits)).await;
    let up = next(&mut idle).await;
    answer(&idle, &up["id"], json!({"tools": []})).await;
    assert_eq!(to_client(&mut setup.client).await["id"], 2);
    let (mut busy, _) = beside(&mut setup, &modern(3, "tools/call", &sampling)).await;
    let held = next(&mut busy).await;

    tokio::time::sleep(IDLE + Duration::from_secs(1)).await;
    tokio::time::timeout(Duration::from_secs(1), idle.closed.recv())
        .await
        .expect("the idle session was not closed")
        .unwrap();
    assert!(busy.closed.try_recv().is_err(), "a busy session was closed");
    // The busy one answers, and is closed a while after that.
    answer(&busy, &held["id"], json!({"content": []})).await;
    assert_eq!(to_client(&mut setup.client).await["id"], 3);
    tokio::time::sleep(IDLE).await;
    tokio::time::timeout(Duration::from_secs(1), busy.closed.recv())
        .await
        .expect("the session was not closed once idle")
        .unwrap();
    // A request with the capabilities of a closed session opens another one; the link's own session
    // stays open throughout.
    let (mut again, opened_with) = beside(&mut setup, &modern(4, "tools/list", &elicits)).await;
    assert_eq!(opened_with, elicits);
    assert_eq!(next(&mut again).await["method"], "tools/list");
    assert!(first.closed.try_recv().is_err());
}

/// A far end that behaves as a child process whose stdout is full: it writes `count` events and reads
/// nothing of what it was sent until every one was taken.
fn stuck_child(far: Far, count: u64) -> tokio::task::JoinHandle<Vec<Value>> {
    tokio::spawn(async move {
        let Far {
            mut sent, events, ..
        } = far;
        for n in 0..count {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": n}});
            events
                .send(UpstreamEvent::Message(frame(&note)))
                .await
                .unwrap();
        }
        let mut got = Vec::new();
        while got.len() < count as usize {
            got.push(parse(&sent.recv().await.unwrap()));
        }
        got
    })
}

#[tokio::test]
async fn the_pump_reads_what_a_link_says_while_the_link_takes_nothing() {
    // Four times what the channels between them hold, each way: a pump that waits on a write to the
    // link without reading it never gets there.
    const COUNT: u64 = 1024;
    for lane_of_its_own in [false, true] {
        let mut setup = setup(true);
        let mut first = std::mem::replace(&mut setup.first, link().1);
        let capabilities = if lane_of_its_own {
            in_new_session(&mut setup, &mut first, &modern(0, "tools/list", &json!({}))).await;
            json!({"elicitation": {}})
        } else {
            json!({})
        };
        let mut far = if lane_of_its_own {
            let (far, _) = beside(&mut setup, &modern(1, "tools/list", &capabilities)).await;
            far
        } else {
            first
        };
        if lane_of_its_own {
            let up = next(&mut far).await;
            answer(&far, &up["id"], json!({})).await;
            to_client(&mut setup.client).await;
        } else {
            accept_until_ready(&mut setup, &mut far, &capabilities).await;
        }
        let child = stuck_child(far, COUNT);
        let outgoing = setup.client.outgoing.clone();
        let capabilities_sent = capabilities.clone();
        let sender = tokio::spawn(async move {
            for n in 0..COUNT {
                let request = modern(100 + n, "tools/list", &capabilities_sent);
                outgoing.send(frame(&request)).await.unwrap();
            }
        });
        let mut heard = 0;
        while heard < COUNT {
            let message = to_client(&mut setup.client).await;
            assert_eq!(message["params"]["data"], heard, "{message}");
            heard += 1;
        }
        sender.await.unwrap();
        let got = tokio::time::timeout(Duration::from_secs(10), child)
            .await
            .expect("the link never got what was sent")
            .unwrap();
        assert_eq!(got.len() as u64, COUNT);
        assert_eq!(
            got[0]["method"], "tools/list",
            "lane of its own: {lane_of_its_own}"
        );
    }
}

/// Opens the link's own session for `capabilities` with a `server/discover`, which the test answers
/// as the server.
async fn accept_until_ready(setup: &mut Setup, far: &mut Far, capabilities: &Value) {
    let probe = modern(1, "server/discover", capabilities);
    setup.client.outgoing.send(frame(&probe)).await.unwrap();
    assert_eq!(&accept_session(far).await, capabilities);
    assert_eq!(to_client(&mut setup.client).await["id"], 1);
}

#[tokio::test]
async fn a_session_of_its_own_answers_server_requests_no_client_waits_for() {
    let mut setup = setup(true);
    let mut first = std::mem::replace(&mut setup.first, link().1);
    let request = modern(1, "tools/list", &json!({"roots": {}}));
    in_new_session(&mut setup, &mut first, &request).await;
    let (mut second, _) = beside(&mut setup, &modern(2, "tools/list", &json!({}))).await;
    let up = next(&mut second).await;
    answer(&second, &up["id"], json!({"tools": []})).await;
    to_client(&mut setup.client).await;

    for (id, method) in [(70, "ping"), (71, "roots/list")] {
        let asked = json!({"jsonrpc": "2.0", "id": id, "method": method});
        second
            .events
            .send(UpstreamEvent::Message(frame(&asked)))
            .await
            .unwrap();
        let reply = next(&mut second).await;
        assert_eq!(reply["id"], id, "{reply}");
        match method {
            "ping" => assert_eq!(reply["result"], json!({}), "{reply}"),
            _ => assert_eq!(reply["error"]["code"], -32601, "{reply}"),
        }
    }
}

#[tokio::test]
async fn a_cancellation_reaches_the_session_that_holds_the_request() {
    let mut setup = setup(true);
    let mut first = std::mem::replace(&mut setup.first, link().1);
    let request = modern(1, "tools/list", &json!({"roots": {}}));
    in_new_session(&mut setup, &mut first, &request).await;
    let (mut second, _) = beside(&mut setup, &modern(2, "tools/call", &json!({}))).await;
    assert_eq!(next(&mut second).await["method"], "tools/call");

    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    setup.client.outgoing.send(frame(&cancel)).await.unwrap();
    let up = next(&mut second).await;
    assert_eq!(up["method"], "notifications/cancelled", "{up}");
    assert_eq!(up["params"]["requestId"], 2, "{up}");
    assert!(first.sent.try_recv().is_err());
}

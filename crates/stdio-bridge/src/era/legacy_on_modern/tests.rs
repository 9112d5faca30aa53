//! The translator with plain frames: what a legacy client's frames become upstream, and what the
//! upstream's answers become for the client.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{LegacyOnModern, calls::MAX_ROUNDS, discover, wire};
use crate::jsonrpc::Frame;
use crate::{
    era::{Era, Out, Translate},
    upstream::UpstreamEvent,
};

fn discovered() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {"listChanged": true}, "resources": {}, "prompts": {}},
        "instructions": "Use the tools.",
        "cacheScope": "public",
        "ttlMs": 0,
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2.0"}}
    })
}

fn initialize(id: u64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "legacy-client", "version": "1.0"}
    }})
}

fn frame(message: &Value) -> Frame {
    wire::frame(message)
}

fn parse(frame: &Frame) -> Value {
    serde_json::from_slice(frame).expect("the translator writes JSON")
}

/// What the translator sent upstream and to the client, as JSON, in order.
#[derive(Debug, Default)]
struct Sent {
    upstream: Vec<Value>,
    client: Vec<Value>,
}

fn split(out: Vec<Out>) -> Sent {
    let mut sent = Sent::default();
    for item in out {
        match item {
            Out::Upstream(frame) => sent.upstream.push(parse(&frame)),
            Out::Client(UpstreamEvent::Message(frame)) => sent.client.push(parse(&frame)),
            Out::Client(other) => panic!("unexpected event for the client: {other:?}"),
        }
    }
    sent
}

fn client(translator: &mut LegacyOnModern, message: Value) -> Sent {
    let mut out = Vec::new();
    translator.on_client(frame(&message), &mut out);
    split(out)
}

fn upstream(translator: &mut LegacyOnModern, message: Value) -> Sent {
    let mut out = Vec::new();
    translator.on_upstream(UpstreamEvent::Message(frame(&message)), &mut out);
    split(out)
}

/// A translator whose client has initialized (the `subscriptions/listen` it opens is dropped).
fn initialized() -> LegacyOnModern {
    let mut translator = LegacyOnModern::new(Some(discovered()));
    client(&mut translator, initialize(0, "2025-06-18"));
    translator
}

#[test]
fn initialize_is_answered_locally_from_discover() {
    let mut translator = LegacyOnModern::new(Some(discovered()));
    let sent = client(&mut translator, initialize(1, "2025-06-18"));
    assert_eq!(sent.client.len(), 1, "{sent:?}");
    let result = &sent.client[0]["result"];
    assert_eq!(sent.client[0]["id"], 1);
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["serverInfo"]["name"], "modern");
    assert_eq!(result["instructions"], "Use the tools.");
    assert_eq!(result["capabilities"]["logging"], json!({}));
    assert_eq!(result["capabilities"]["resources"]["subscribe"], true);
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    // Nothing of the handshake goes upstream; the list changes the server announces are listened for.
    assert_eq!(sent.upstream.len(), 1, "{sent:?}");
    assert_eq!(sent.upstream[0]["method"], "subscriptions/listen");
    let filter = &sent.upstream[0]["params"]["notifications"];
    assert_eq!(filter, &json!({"toolsListChanged": true}));
    let sent = client(
        &mut translator,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert!(
        sent.upstream.is_empty() && sent.client.is_empty(),
        "{sent:?}"
    );
}

#[test]
fn the_answered_version_is_the_clients_when_it_is_of_the_handshake_era() {
    let table = [
        (Some("2024-11-05"), "2024-11-05"),
        (Some("2025-03-26"), "2025-03-26"),
        (Some("2025-11-25"), "2025-11-25"),
        (Some("2026-07-28"), "2025-11-25"),
        (Some("1999-01-01"), "2025-11-25"),
        (None, "2025-11-25"),
    ];
    for (asked, answered) in table {
        assert_eq!(wire::handshake_version(asked), answered, "asked {asked:?}");
    }
}

#[test]
fn initialize_waits_for_server_discover_when_it_is_not_known() {
    let mut translator = LegacyOnModern::new(None);
    let sent = client(&mut translator, initialize(7, "2025-11-25"));
    assert!(sent.client.is_empty(), "{sent:?}");
    assert_eq!(sent.upstream.len(), 1);
    let ask = &sent.upstream[0];
    assert_eq!(ask["method"], "server/discover");
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    let id = ask["id"].clone();
    let sent = upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": id, "result": discovered()}),
    );
    assert_eq!(sent.client.len(), 1, "only initialize's answer: {sent:?}");
    assert_eq!(sent.client[0]["id"], 7);
    assert_eq!(sent.client[0]["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn initialize_gets_an_error_when_server_discover_fails() {
    let mut translator = LegacyOnModern::new(None);
    let sent = client(&mut translator, initialize(7, "2025-11-25"));
    let id = sent.upstream[0]["id"].clone();
    let sent = upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
    );
    assert_eq!(sent.client.len(), 1, "{sent:?}");
    assert_eq!(sent.client[0]["id"], 7);
    let message = sent.client[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("server/discover"), "{message}");
}

#[test]
fn ping_is_answered_locally() {
    let mut translator = initialized();
    let sent = client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
    );
    assert!(sent.upstream.is_empty(), "{sent:?}");
    assert_eq!(
        sent.client,
        vec![json!({"jsonrpc": "2.0", "id": "p", "result": {}})]
    );
}

#[test]
fn requests_go_stateless_with_the_clients_info_and_own_meta() {
    let mut translator = initialized();
    let sent = client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "add", "arguments": {"a": 1}, "_meta": {"progressToken": "t1"}
        }}),
    );
    assert!(sent.client.is_empty(), "{sent:?}");
    let params = &sent.upstream[0]["params"];
    assert_eq!(sent.upstream[0]["id"], 2);
    assert_eq!(params["name"], "add");
    assert_eq!(params["arguments"], json!({"a": 1}));
    let meta = &params["_meta"];
    assert_eq!(meta["progressToken"], "t1");
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {}})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "legacy-client"
    );
    assert!(meta.get("io.modelcontextprotocol/logLevel").is_none());
}

#[test]
fn results_lose_result_type_and_errors_get_the_legacy_codes() {
    let mut translator = initialized();
    client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    );
    let sent = upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", "tools": []}}),
    );
    assert_eq!(
        sent.client,
        vec![json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}})]
    );
    client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "x:/gone"}}),
    );
    let sent = upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "Resource not found",
            "data": {"uri": "x:/gone"}}}),
    );
    assert_eq!(sent.client[0]["error"]["code"], -32002);
    assert_eq!(sent.client[0]["error"]["data"]["uri"], "x:/gone");
}

#[test]
fn results_keep_only_what_the_handshake_era_has() {
    let stamp = json!({"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2"}});
    let table = [
        (
            "tools/list",
            json!({"resultType": "complete", "tools": [], "cacheScope": "public", "ttlMs": 0, "_meta": stamp}),
            json!({"tools": []}),
        ),
        (
            "resources/read",
            json!({"resultType": "complete", "contents": [], "cacheScope": "private", "ttlMs": 5}),
            json!({"contents": []}),
        ),
        (
            "tools/call",
            json!({"resultType": "complete", "content": [], "ttlMs": 1,
                "_meta": {"io.modelcontextprotocol/serverInfo": {}, "trace": "t"}}),
            json!({"content": [], "ttlMs": 1, "_meta": {"trace": "t"}}),
        ),
    ];
    for (method, result, legacy) in table {
        assert_eq!(wire::legacy_result(method, result), legacy, "{method}");
    }
}

#[test]
fn only_a_missing_resource_changes_its_error_code() {
    let missing = json!({"code": -32602, "message": "m", "data": {"uri": "a:/b"}});
    let table = [
        ("resources/read", missing.clone(), -32002),
        ("tools/call", missing.clone(), -32602),
        (
            "resources/read",
            json!({"code": -32602, "message": "bad params"}),
            -32602,
        ),
        (
            "resources/read",
            json!({"code": -32603, "message": "m", "data": {"uri": "a:/b"}}),
            -32603,
        ),
    ];
    for (method, error, code) in table {
        let mapped = wire::legacy_error(method, error.clone());
        assert_eq!(mapped["code"], code, "{method} {error}");
    }
}

#[test]
fn set_level_is_kept_locally_sent_in_meta_and_applied_to_logs() {
    let mut translator = initialized();
    let sent = client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 5, "method": "logging/setLevel", "params": {"level": "warning"}}),
    );
    assert!(sent.upstream.is_empty(), "{sent:?}");
    assert_eq!(sent.client[0]["result"], json!({}));
    let sent = client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "log"}}),
    );
    assert_eq!(
        sent.upstream[0]["params"]["_meta"]["io.modelcontextprotocol/logLevel"],
        "warning"
    );
    let sent = client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 7, "method": "logging/setLevel", "params": {"level": "loud"}}),
    );
    assert!(sent.upstream.is_empty(), "{sent:?}");
    assert_eq!(sent.client[0]["error"]["code"], -32602, "{sent:?}");
    let log = |level: &str| {
        json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": level, "data": level}})
    };
    for (level, shown) in [
        ("debug", false),
        ("info", false),
        ("warning", true),
        ("error", true),
    ] {
        let sent = upstream(&mut translator, log(level));
        assert_eq!(sent.client.len(), usize::from(shown), "{level}: {sent:?}");
    }
}

#[test]
fn input_required_becomes_client_requests_and_a_retry() {
    let mut translator = initialized();
    client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "ask"}}),
    );
    let elicit = json!({"method": "elicitation/create", "params": {"message": "Name?",
        "requestedSchema": {"type": "object", "properties": {}}}});
    let sent = upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 8, "result": {"resultType": "input_required",
            "inputRequests": {"name": elicit}, "requestState": "s1"}}),
    );
    assert!(sent.upstream.is_empty(), "{sent:?}");
    assert_eq!(sent.client.len(), 1);
    let ask = &sent.client[0];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Name?");
    let own = ask["id"]
        .as_str()
        .expect("a string id of the bridge's")
        .to_owned();
    assert!(own.starts_with("calltape-era/"), "{own}");
    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    let sent = client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": own, "result": answer}),
    );
    assert!(sent.client.is_empty(), "{sent:?}");
    let retry = &sent.upstream[0];
    assert_eq!(retry["id"], 8);
    assert_eq!(retry["method"], "tools/call");
    assert_eq!(retry["params"]["name"], "ask");
    assert_eq!(retry["params"]["inputResponses"], json!({"name": answer}));
    assert_eq!(retry["params"]["requestState"], "s1");
    assert_eq!(
        retry["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    let sent = upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 8, "result": {"resultType": "complete", "content": []}}),
    );
    assert_eq!(
        sent.client,
        vec![json!({"jsonrpc": "2.0", "id": 8, "result": {"content": []}})]
    );
}

#[test]
fn a_round_of_several_inputs_is_retried_once_every_answer_is_in() {
    let mut translator = initialized();
    client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 15, "method": "prompts/get", "params": {"name": "p"}}),
    );
    let sample =
        json!({"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}});
    let roots = json!({"method": "roots/list", "params": {}});
    let sent = upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 15, "result": {"resultType": "input_required",
            "inputRequests": {"s": sample, "r": roots}}}),
    );
    let mut methods: Vec<&str> = sent
        .client
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    methods.sort_unstable();
    assert_eq!(methods, ["roots/list", "sampling/createMessage"]);
    let answer = |ask: &Value| match ask["method"].as_str() {
        Some("roots/list") => json!({"roots": [{"uri": "file:///w"}]}),
        _ => json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}),
    };
    let first = &sent.client[0];
    let reply = json!({"jsonrpc": "2.0", "id": first["id"], "result": answer(first)});
    assert!(
        client(&mut translator, reply).upstream.is_empty(),
        "no retry before the last answer"
    );
    let second = &sent.client[1];
    let reply = json!({"jsonrpc": "2.0", "id": second["id"], "result": answer(second)});
    let retry = &client(&mut translator, reply).upstream[0];
    assert_eq!(retry["id"], 15);
    let responses = &retry["params"]["inputResponses"];
    assert_eq!(responses["r"]["roots"][0]["uri"], "file:///w");
    assert_eq!(responses["s"]["model"], "m");
    assert!(retry["params"].get("requestState").is_none(), "{retry}");
}

#[test]
fn a_refused_input_ends_the_request_with_the_clients_error() {
    let mut translator = initialized();
    client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "ask"}}),
    );
    let sent = upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 9, "result": {"resultType": "input_required",
            "inputRequests": {"r": {"method": "roots/list", "params": {}}}}}),
    );
    let own = sent.client[0]["id"].clone();
    let error = json!({"code": -32601, "message": "no roots"});
    let sent = client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": own, "error": error}),
    );
    assert!(sent.upstream.is_empty(), "{sent:?}");
    assert_eq!(
        sent.client,
        vec![json!({"jsonrpc": "2.0", "id": 9, "error": error})]
    );
}

#[test]
fn a_cancelled_request_forgets_its_questions() {
    let mut translator = initialized();
    client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": "ask"}}),
    );
    let sent = upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 14, "result": {"resultType": "input_required",
            "inputRequests": {"r": {"method": "roots/list", "params": {}}}}}),
    );
    let own = sent.client[0]["id"].clone();
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 14, "reason": "user"}});
    let sent = client(&mut translator, cancel.clone());
    assert_eq!(sent.upstream, vec![cancel]);
    // A late answer to the question goes nowhere: no retry, and the upstream never asked it.
    let answer = json!({"jsonrpc": "2.0", "id": own, "result": {"roots": []}});
    let sent = client(&mut translator, answer);
    assert!(
        sent.upstream.is_empty() && sent.client.is_empty(),
        "{sent:?}"
    );
}

#[test]
fn input_required_stops_after_the_most_rounds() {
    let mut translator = initialized();
    client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 10, "method": "prompts/get", "params": {"name": "p"}}),
    );
    let again = json!({"jsonrpc": "2.0", "id": 10,
        "result": {"resultType": "input_required", "requestState": "more"}});
    for round in 1..=MAX_ROUNDS {
        let sent = upstream(&mut translator, again.clone());
        assert_eq!(sent.upstream.len(), 1, "round {round} is retried: {sent:?}");
        assert_eq!(sent.upstream[0]["params"]["requestState"], "more");
    }
    let sent = upstream(&mut translator, again);
    assert!(sent.upstream.is_empty(), "{sent:?}");
    let message = sent.client[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("more than 10 times"), "{message}");
}

#[test]
fn subscriptions_are_a_listen_filter_and_its_notifications_reach_the_client() {
    let mut translator = initialized();
    let subscribe = |uri: &str, id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": uri}});
    let sent = client(&mut translator, subscribe("memo://a", 11));
    assert_eq!(sent.client[0]["result"], json!({}));
    // The listen opened at initialize is replaced by one with the new filter.
    assert_eq!(sent.upstream.len(), 2, "{sent:?}");
    assert_eq!(sent.upstream[0]["method"], "notifications/cancelled");
    let old = sent.upstream[0]["params"]["requestId"].clone();
    let listen = &sent.upstream[1];
    assert_eq!(listen["method"], "subscriptions/listen");
    assert_eq!(
        listen["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["memo://a"]})
    );
    assert_eq!(
        listen["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"],
        "legacy-client"
    );
    let listen_id = listen["id"].clone();
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": {}}});
    assert!(upstream(&mut translator, ack).client.is_empty());
    let updated = json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
        "params": {"uri": "memo://a", "_meta": {"io.modelcontextprotocol/subscriptionId": listen_id}}});
    let sent = upstream(&mut translator, updated);
    assert_eq!(
        sent.client,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": "memo://a"}})
        ]
    );
    // The ends of both listen requests are never shown.
    for id in [old, listen_id] {
        let end = json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete"}});
        assert!(upstream(&mut translator, end).client.is_empty());
    }
    let sent = client(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 12, "method": "resources/unsubscribe", "params": {"uri": "memo://a"}}),
    );
    assert_eq!(sent.client[0]["result"], json!({}));
    assert_eq!(
        sent.upstream.last().unwrap()["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
}

#[test]
fn a_request_the_upstream_did_not_take_is_handed_back_as_the_client_sent_it() {
    let mut translator = initialized();
    let call =
        json!({"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": {"name": "add"}});
    let sent = client(&mut translator, call.clone());
    let mut out = Vec::new();
    let event = UpstreamEvent::Undelivered {
        frame: frame(&sent.upstream[0]),
        maybe_delivered: false,
        reason: "connection refused".into(),
    };
    translator.on_upstream(event, &mut out);
    let [Out::Client(UpstreamEvent::Undelivered { frame: held, .. })] = &out[..] else {
        panic!("one undelivered event: {out:?}");
    };
    // The client side re-sends it after reconnecting, and the next link translates it again.
    assert_eq!(parse(held), call);
}

#[test]
fn modern_frames_pass_unchanged() {
    let mut translator = initialized();
    let modern = json!({"jsonrpc": "2.0", "id": 13, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    let mut out = Vec::new();
    translator.on_client(frame(&modern), &mut out);
    let [Out::Upstream(sent)] = &out[..] else {
        panic!("one frame upstream: {out:?}");
    };
    assert_eq!(sent, &frame(&modern));
    let answer =
        json!({"jsonrpc": "2.0", "id": 13, "result": {"resultType": "complete", "tools": []}});
    assert_eq!(
        upstream(&mut translator, answer.clone()).client,
        vec![answer]
    );
}

#[test]
fn a_listen_stream_of_a_modern_client_passes_unchanged() {
    let mut translator = initialized();
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": {"toolsListChanged": true},
            "_meta": {"io.modelcontextprotocol/subscriptionId": 99}}});
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 99}}});
    for event in [ack, changed] {
        assert_eq!(upstream(&mut translator, event.clone()).client, vec![event]);
    }
}

#[test]
fn a_session_initialized_again_is_answered_locally_and_keeps_its_listen() {
    let mut translator = initialized();
    let sent = client(&mut translator, initialize(20, "2025-06-18"));
    assert!(sent.upstream.is_empty(), "{sent:?}");
    assert_eq!(sent.client[0]["id"], 20);
    assert_eq!(sent.client[0]["result"]["serverInfo"]["name"], "modern");
}

#[test]
fn a_refused_handshake_is_explained() {
    let refused = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32022,
        "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"]}}});
    let explained = parse(&wire::explain_refused_handshake(&frame(&refused)).unwrap());
    let message = explained["error"]["message"].as_str().unwrap();
    assert!(message.contains("speaks only 2026-07-28"), "{message}");
    assert!(message.contains("auto or modern"), "{message}");
    let dual = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32022,
        "message": "m", "data": {"supported": ["2025-11-25", "2026-07-28"]}}});
    assert!(wire::explain_refused_handshake(&frame(&dual)).is_none());
}

/// Detection with channels standing in for the upstream link.
async fn detect(
    answer: Option<Value>,
    timeout: Duration,
) -> (super::Discovery, Vec<UpstreamEvent>) {
    let (to_upstream, mut sent) = mpsc::channel(8);
    let (events, mut from_upstream) = mpsc::channel(8);
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}});
    events
        .send(UpstreamEvent::Message(frame(&note)))
        .await
        .unwrap();
    if let Some(answer) = answer {
        events
            .send(UpstreamEvent::Message(frame(&answer)))
            .await
            .unwrap();
    }
    let mut early = Vec::new();
    let found = discover(&to_upstream, &mut from_upstream, &mut early, timeout).await;
    let asked = parse(&sent.recv().await.unwrap());
    assert_eq!(asked["method"], "server/discover");
    assert_eq!(asked["id"], super::detect::DISCOVER_ID);
    let meta = &asked["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
    (found, early)
}

#[tokio::test]
async fn detection_reads_the_answer_and_keeps_other_events() {
    let id = super::detect::DISCOVER_ID;
    let modern = json!({"jsonrpc": "2.0", "id": id, "result": discovered()});
    let legacy_discover = json!({"jsonrpc": "2.0", "id": id, "result": {
        "resultType": "complete", "supportedVersions": ["2025-11-25"], "capabilities": {}}});
    let refused = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}});
    let table = [
        (modern, Era::Modern),
        (legacy_discover, Era::Legacy),
        (refused, Era::Legacy),
    ];
    for (answer, era) in table {
        let (found, early) = detect(Some(answer.clone()), Duration::from_secs(30)).await;
        assert_eq!(found.era, era, "{answer}");
        assert_eq!(found.result.is_some(), era == Era::Modern);
        assert!(!found.late);
        assert_eq!(early.len(), 1, "the log notification is kept: {early:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn no_answer_in_time_is_the_legacy_era_with_the_answer_still_due() {
    let (found, early) = detect(None, Duration::from_secs(10)).await;
    assert_eq!(found.era, Era::Legacy);
    assert!(found.late);
    assert_eq!(early.len(), 1);
}

#[test]
fn subscriptions_past_the_limit_are_refused_and_nothing_is_sent() {
    let mut translator = initialized();
    let subscribe = |n: usize| {
        json!({"jsonrpc": "2.0", "id": n, "method": "resources/subscribe",
        "params": {"uri": format!("memo://{n}")}})
    };
    for n in 0..crate::MAX_SUBSCRIPTIONS {
        let sent = client(&mut translator, subscribe(n));
        assert_eq!(sent.client[0]["result"], json!({}), "{n}");
    }
    let sent = client(&mut translator, subscribe(crate::MAX_SUBSCRIPTIONS));
    assert!(sent.upstream.is_empty(), "{sent:?}");
    assert_eq!(sent.client[0]["id"], crate::MAX_SUBSCRIPTIONS);
    assert_eq!(sent.client[0]["error"]["code"], crate::TOO_MANY_URIS);
    assert_eq!(
        sent.client[0]["error"]["data"],
        json!({"reason": "too_many_uris", "limit": crate::MAX_SUBSCRIPTIONS})
    );
    // A resource already subscribed to is no new one.
    let again = client(&mut translator, subscribe(0));
    assert_eq!(again.client[0]["result"], json!({}));
}

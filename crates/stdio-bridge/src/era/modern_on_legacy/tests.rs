use serde_json::{Value, json};

use super::ModernOnLegacy;
use crate::jsonrpc::Frame;
use crate::{
    era::{Out, Translate},
    upstream::UpstreamEvent,
};

/// What the translator did with one input: the messages it sent upstream and to the client.
#[derive(Debug, Default)]
struct Said {
    upstream: Vec<Value>,
    client: Vec<Value>,
}

fn frame(message: &Value) -> Frame {
    Frame::from(serde_json::to_vec(message).unwrap())
}

fn said(out: Vec<Out>) -> Said {
    let mut said = Said::default();
    for item in out {
        match item {
            Out::Upstream(frame) => said.upstream.push(serde_json::from_slice(&frame).unwrap()),
            Out::Client(UpstreamEvent::Message(frame)) => {
                said.client.push(serde_json::from_slice(&frame).unwrap());
            }
            Out::Client(other) => panic!("unexpected event {other:?}"),
        }
    }
    said
}

fn from_client(translator: &mut ModernOnLegacy, message: Value) -> Said {
    let mut out = Vec::new();
    translator.on_client(frame(&message), &mut out);
    said(out)
}

fn from_upstream(translator: &mut ModernOnLegacy, message: Value) -> Said {
    let mut out = Vec::new();
    translator.on_upstream(UpstreamEvent::Message(frame(&message)), &mut out);
    said(out)
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "modern-client", "version": "2.3.0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    })
}

fn modern(id: i64, method: &str, mut params: Value) -> Value {
    let meta = params
        .as_object_mut()
        .unwrap()
        .entry("_meta")
        .or_insert_with(|| json!({}));
    for (key, value) in modern_meta().as_object().unwrap() {
        meta[key] = value.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn initialize_result() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true}},
        "serverInfo": {"name": "legacy-server", "version": "1.0.0"},
        "instructions": "be kind",
    })
}

/// A translator whose session the bridge opened for a first `tools/list`; returns that request's
/// frame as sent upstream.
fn opened(translator: &mut ModernOnLegacy) -> Value {
    let first = from_client(translator, modern(1, "tools/list", json!({})));
    assert!(first.client.is_empty(), "{first:?}");
    let [initialize] = first.upstream.as_slice() else {
        panic!("one initialize first: {first:?}");
    };
    let id = initialize["id"].clone();
    let opened = from_upstream(
        translator,
        json!({"jsonrpc": "2.0", "id": id, "result": initialize_result()}),
    );
    assert!(opened.client.is_empty(), "{opened:?}");
    assert_eq!(opened.upstream[0]["method"], "notifications/initialized");
    let listed = from_upstream(
        translator,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
    );
    assert_eq!(listed.client[0]["result"]["resultType"], "complete");
    opened.upstream[1].clone()
}

#[test]
fn the_first_modern_request_opens_the_session_with_its_client_info_and_capabilities() {
    let mut translator = ModernOnLegacy::new();
    let first = from_client(&mut translator, modern(1, "tools/list", json!({})));
    assert_eq!(first.upstream.len(), 1, "{first:?}");
    let initialize = &first.upstream[0];
    assert_eq!(initialize["method"], "initialize");
    assert_eq!(initialize["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(initialize["params"]["clientInfo"]["name"], "modern-client");
    assert_eq!(
        initialize["params"]["capabilities"],
        json!({"elicitation": {}})
    );
    // A second request waits for the handshake too.
    let second = from_client(&mut translator, modern(2, "prompts/list", json!({})));
    assert!(second.upstream.is_empty() && second.client.is_empty());
    let opened = from_upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": initialize["id"], "result": initialize_result()}),
    );
    let methods: Vec<_> = opened
        .upstream
        .iter()
        .map(|m| m["method"].clone())
        .collect();
    assert_eq!(
        methods,
        ["notifications/initialized", "tools/list", "prompts/list"]
    );
    // The era's `_meta` keys are gone, so an HTTP upstream sends them in the session.
    assert_eq!(
        opened.upstream[1],
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    );
}

#[test]
fn a_request_keeps_its_own_meta_keys() {
    let mut translator = ModernOnLegacy::new();
    opened(&mut translator);
    let call = modern(
        5,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hi"}, "_meta": {"progressToken": 7}}),
    );
    let sent = from_client(&mut translator, call);
    assert_eq!(
        sent.upstream,
        [json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hi"}, "_meta": {"progressToken": 7}}})]
    );
}

#[test]
fn a_failed_handshake_answers_every_waiting_request_with_why() {
    let mut translator = ModernOnLegacy::new();
    let first = from_client(&mut translator, modern(1, "tools/list", json!({})));
    from_client(&mut translator, modern(2, "prompts/list", json!({})));
    let refused = from_upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": first.upstream[0]["id"],
            "error": {"code": -32602, "message": "unsupported capabilities"}}),
    );
    assert!(refused.upstream.is_empty(), "{refused:?}");
    let ids: Vec<_> = refused.client.iter().map(|m| m["id"].clone()).collect();
    assert_eq!(ids, [json!(1), json!(2)]);
    for answer in &refused.client {
        assert_eq!(answer["error"]["code"], -32602);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("unsupported capabilities"), "{message}");
        assert_eq!(answer["error"]["data"]["reason"], "handshake_failed");
    }
    // The next request tries again.
    let again = from_client(&mut translator, modern(3, "tools/list", json!({})));
    assert_eq!(again.upstream[0]["method"], "initialize");
}

#[test]
fn discover_is_answered_from_the_initialize_result() {
    let mut translator = ModernOnLegacy::new();
    opened(&mut translator);
    let discover = from_client(&mut translator, modern(9, "server/discover", json!({})));
    assert!(discover.upstream.is_empty(), "{discover:?}");
    assert_eq!(
        discover.client,
        [json!({"jsonrpc": "2.0", "id": 9, "result": {
            "supportedVersions": ["2026-07-28"],
            "capabilities": initialize_result()["capabilities"],
            "instructions": "be kind",
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "legacy-server", "version": "1.0.0"}},
        }})]
    );
}

#[test]
fn results_become_valid_modern_results() {
    // (method, params, the upstream's answer, what the client gets)
    let table = [
        (
            "tools/list",
            json!({}),
            json!({"result": {"tools": []}}),
            json!({"result": {"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}}),
        ),
        (
            "resources/read",
            json!({"uri": "file:///a"}),
            json!({"result": {"contents": [], "ttlMs": 5000}}),
            json!({"result": {"contents": [], "resultType": "complete", "ttlMs": 5000, "cacheScope": "private"}}),
        ),
        (
            "tools/call",
            json!({"name": "echo"}),
            json!({"result": {"content": []}}),
            json!({"result": {"content": [], "resultType": "complete"}}),
        ),
        (
            "resources/read",
            json!({"uri": "file:///missing"}),
            json!({"error": {"code": -32002, "message": "Resource not found"}}),
            json!({"error": {"code": -32602, "message": "Resource not found", "data": {"uri": "file:///missing"}}}),
        ),
        (
            "resources/read",
            json!({"uri": "file:///gone"}),
            json!({"error": {"code": -32602, "message": "Resource file:///gone not found", "data": {"hint": 1}}}),
            json!({"error": {"code": -32602, "message": "Resource file:///gone not found", "data": {"hint": 1, "uri": "file:///gone"}}}),
        ),
        (
            "tools/call",
            json!({"name": "echo"}),
            json!({"error": {"code": -32002, "message": "busy"}}),
            json!({"error": {"code": -32002, "message": "busy"}}),
        ),
    ];
    for (method, params, upstream, expected) in table {
        let mut translator = ModernOnLegacy::new();
        opened(&mut translator);
        let sent = from_client(&mut translator, modern(4, method, params));
        let mut answer = upstream.clone();
        answer["jsonrpc"] = json!("2.0");
        answer["id"] = sent.upstream[0]["id"].clone();
        let got = from_upstream(&mut translator, answer);
        let mut expected = expected;
        expected["jsonrpc"] = json!("2.0");
        expected["id"] = json!(4);
        assert_eq!(got.client, [expected], "{method} {upstream}");
    }
}

#[test]
fn legacy_frames_pass_through_unchanged() {
    let mut translator = ModernOnLegacy::new();
    let frames: [&[u8]; 4] = [
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/related":1}}}"#,
        br#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#,
    ];
    for bytes in frames {
        let mut out = Vec::new();
        translator.on_client(Frame::from_static(bytes), &mut out);
        match out.as_slice() {
            [Out::Upstream(sent)] => assert_eq!(&sent[..], bytes),
            other => panic!("{other:?}"),
        }
    }
    let answer = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
    let mut out = Vec::new();
    translator.on_upstream(UpstreamEvent::Message(Frame::from_static(answer)), &mut out);
    match out.as_slice() {
        [Out::Client(UpstreamEvent::Message(got))] => assert_eq!(&got[..], answer),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_session_a_legacy_client_opened_serves_modern_requests_without_a_second_handshake() {
    let mut translator = ModernOnLegacy::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}});
    assert_eq!(from_client(&mut translator, init.clone()).upstream, [init]);
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": initialize_result()});
    assert_eq!(
        from_upstream(&mut translator, answer.clone()).client,
        [answer]
    );
    let sent = from_client(&mut translator, modern(2, "tools/list", json!({})));
    assert_eq!(sent.upstream[0]["method"], "tools/list", "{sent:?}");
}

#[test]
fn a_legacy_initialize_on_the_bridges_session_is_answered_from_its_result() {
    // (the version the client asks for, the version it is answered with)
    let table = [
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ];
    for (asked, answered) in table {
        let mut translator = ModernOnLegacy::new();
        opened(&mut translator);
        let init = json!({"jsonrpc": "2.0", "id": "a", "method": "initialize",
            "params": {"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}});
        let got = from_client(&mut translator, init);
        assert!(got.upstream.is_empty(), "{got:?}");
        let mut expected = initialize_result();
        expected["protocolVersion"] = json!(answered);
        assert_eq!(
            got.client,
            [json!({"jsonrpc": "2.0", "id": "a", "result": expected})]
        );
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let got = from_client(&mut translator, initialized);
        assert!(got.upstream.is_empty() && got.client.is_empty(), "{got:?}");
    }
}

#[test]
fn a_log_level_becomes_set_level_when_it_changes() {
    let mut translator = ModernOnLegacy::new();
    opened(&mut translator);
    let with_level = |id| {
        let mut request = modern(id, "tools/list", json!({}));
        request["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
        request
    };
    let first = from_client(&mut translator, with_level(2));
    assert_eq!(first.upstream[0]["method"], "logging/setLevel");
    assert_eq!(first.upstream[0]["params"], json!({"level": "debug"}));
    assert_eq!(first.upstream[1]["params"], json!({}));
    let set_id = first.upstream[0]["id"].clone();
    let quiet = from_upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": set_id, "result": {}}),
    );
    assert!(
        quiet.client.is_empty(),
        "the bridge's own answer is not the client's: {quiet:?}"
    );
    let second = from_client(&mut translator, with_level(3));
    assert_eq!(second.upstream.len(), 1, "{second:?}");
}

#[test]
fn a_server_request_becomes_input_required_and_the_retry_gets_the_answer() {
    let mut translator = ModernOnLegacy::new();
    opened(&mut translator);
    from_client(
        &mut translator,
        modern(7, "tools/call", json!({"name": "ask"})),
    );
    let elicit = json!({"jsonrpc": "2.0", "id": 40, "method": "elicitation/create",
        "params": {"message": "name?", "requestedSchema": {"type": "object"}}});
    let handed = from_upstream(&mut translator, elicit);
    assert!(handed.upstream.is_empty(), "{handed:?}");
    let [answer] = handed.client.as_slice() else {
        panic!("{handed:?}");
    };
    assert_eq!(answer["id"], 7);
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required");
    let (key, request) = result["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(
        *request,
        json!({"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {"type": "object"}}})
    );
    let state = result["requestState"].clone();
    let retry = modern(
        8,
        "tools/call",
        json!({"name": "ask", "requestState": state,
            "inputResponses": {key.clone(): {"action": "accept", "content": {"name": "Ada"}, "resultType": "complete"}}}),
    );
    let retried = from_client(&mut translator, retry);
    assert_eq!(
        retried.upstream,
        [
            json!({"jsonrpc": "2.0", "id": 40, "result": {"action": "accept", "content": {"name": "Ada"}}})
        ]
    );
    assert!(retried.client.is_empty(), "{retried:?}");
    let done = from_upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "Ada"}]}}),
    );
    assert_eq!(
        done.client,
        [
            json!({"jsonrpc": "2.0", "id": 8, "result": {"content": [{"type": "text", "text": "Ada"}], "resultType": "complete"}})
        ]
    );
    // The exchange is over: its state is refused now.
    let stale = modern(
        9,
        "tools/call",
        json!({"name": "ask", "requestState": state, "inputResponses": {}}),
    );
    let refused = from_client(&mut translator, stale);
    assert_eq!(refused.client[0]["error"]["code"], -32602);
}

#[test]
fn input_rounds_stop_after_ten() {
    let mut translator = ModernOnLegacy::new();
    opened(&mut translator);
    from_client(
        &mut translator,
        modern(100, "tools/call", json!({"name": "ask"})),
    );
    let mut client_id = 100;
    for round in 1..=11 {
        let ask = json!({"jsonrpc": "2.0", "id": 1000 + round, "method": "roots/list"});
        let handed = from_upstream(&mut translator, ask);
        if round <= 10 {
            let result = &handed.client[0]["result"];
            assert_eq!(result["resultType"], "input_required", "round {round}");
            let key = result["inputRequests"]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap()
                .clone();
            client_id += 1;
            let retry = modern(
                client_id,
                "tools/call",
                json!({"name": "ask", "requestState": result["requestState"],
                    "inputResponses": {key: {"roots": []}}}),
            );
            let retried = from_client(&mut translator, retry);
            assert_eq!(retried.upstream[0]["id"], 1000 + round);
        } else {
            assert!(handed.client.is_empty(), "{handed:?}");
            assert_eq!(handed.upstream[0]["id"], 1011);
            assert_eq!(
                handed.upstream[0]["error"]["data"]["reason"],
                "too_many_rounds"
            );
        }
    }
    let done = from_upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 100, "result": {"content": []}}),
    );
    assert_eq!(done.client[0]["id"], client_id);
}

#[test]
fn a_server_request_with_no_modern_request_in_flight_passes_through() {
    let mut translator = ModernOnLegacy::new();
    opened(&mut translator);
    let ask = json!({"jsonrpc": "2.0", "id": 3, "method": "roots/list"});
    assert_eq!(from_upstream(&mut translator, ask.clone()).client, [ask]);
}

#[test]
fn listen_subscribes_acknowledges_and_delivers_until_cancelled() {
    let mut translator = ModernOnLegacy::new();
    opened(&mut translator);
    let listen = modern(
        20,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true,
            "resourceSubscriptions": ["test://a"]}}),
    );
    let opened = from_client(&mut translator, listen);
    assert_eq!(opened.upstream.len(), 1, "{opened:?}");
    assert_eq!(opened.upstream[0]["method"], "resources/subscribe");
    assert_eq!(opened.upstream[0]["params"], json!({"uri": "test://a"}));
    assert_eq!(
        opened.client,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["test://a"]},
                "_meta": {"io.modelcontextprotocol/subscriptionId": 20}}})
        ]
    );
    let subscribed = from_upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": opened.upstream[0]["id"], "result": {}}),
    );
    assert!(subscribed.client.is_empty(), "{subscribed:?}");
    let updated = json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "test://a"}});
    assert_eq!(
        from_upstream(&mut translator, updated).client,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": "test://a", "_meta": {"io.modelcontextprotocol/subscriptionId": 20}}})
        ]
    );
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    assert_eq!(
        from_upstream(&mut translator, changed.clone()).client[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        20
    );
    let mut cancel = modern(0, "notifications/cancelled", json!({"requestId": 20}));
    cancel.as_object_mut().unwrap().remove("id");
    let cancelled = from_client(&mut translator, cancel);
    assert_eq!(cancelled.upstream[0]["method"], "resources/unsubscribe");
    assert_eq!(cancelled.upstream.len(), 1);
    // With no listen stream left, a notification reaches the client as the server sent it.
    assert_eq!(
        from_upstream(&mut translator, changed.clone()).client,
        [changed]
    );
}

#[test]
fn a_session_opened_for_a_probe_is_opened_again_for_the_first_client_with_other_capabilities() {
    // (the capabilities of the request after the probe, whether it opens the session again)
    let table = [(json!({"elicitation": {}}), true), (json!({}), false)];
    for (capabilities, again) in table {
        let mut translator = ModernOnLegacy::new();
        let mut probe = modern(1, "server/discover", json!({}));
        probe["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
        probe["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] =
            json!({"name": "calltape"});
        let first = from_client(&mut translator, probe.clone());
        let answer =
            json!({"jsonrpc": "2.0", "id": first.upstream[0]["id"], "result": initialize_result()});
        let discovered = from_upstream(&mut translator, answer);
        assert_eq!(
            discovered.client[0]["result"]["supportedVersions"],
            json!(["2026-07-28"])
        );
        let mut request = probe;
        request["id"] = json!(2);
        request["method"] = json!("tools/list");
        request["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            capabilities.clone();
        let sent = from_client(&mut translator, request);
        if !again {
            assert_eq!(sent.upstream[0]["method"], "tools/list", "{sent:?}");
            continue;
        }
        let [initialize] = sent.upstream.as_slice() else {
            panic!("{sent:?}");
        };
        assert_eq!(initialize["method"], "initialize");
        assert_eq!(initialize["params"]["capabilities"], capabilities);
        let answer =
            json!({"jsonrpc": "2.0", "id": initialize["id"], "result": initialize_result()});
        let opened = from_upstream(&mut translator, answer);
        let methods: Vec<_> = opened
            .upstream
            .iter()
            .map(|m| m["method"].clone())
            .collect();
        assert_eq!(methods, ["notifications/initialized", "tools/list"]);
        // Only the first request after the probe does.
        let later = from_client(&mut translator, modern(3, "prompts/list", json!({})));
        assert_eq!(later.upstream[0]["method"], "prompts/list", "{later:?}");
    }
}

#[test]
fn cancelling_a_retried_request_cancels_the_request_the_server_knows() {
    let mut translator = ModernOnLegacy::new();
    opened(&mut translator);
    from_client(
        &mut translator,
        modern(7, "tools/call", json!({"name": "ask"})),
    );
    let ask = json!({"jsonrpc": "2.0", "id": 40, "method": "roots/list"});
    let handed = from_upstream(&mut translator, ask);
    let result = &handed.client[0]["result"];
    let key = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let retry = modern(
        8,
        "tools/call",
        json!({"name": "ask", "requestState": result["requestState"], "inputResponses": {key: {"roots": []}}}),
    );
    from_client(&mut translator, retry);
    let mut cancel = modern(
        0,
        "notifications/cancelled",
        json!({"requestId": 8, "reason": "bored"}),
    );
    cancel.as_object_mut().unwrap().remove("id");
    let cancelled = from_client(&mut translator, cancel);
    assert_eq!(
        cancelled.upstream,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 7, "reason": "bored"}})
        ]
    );
}

#[test]
fn a_request_with_a_bad_envelope_is_refused_before_any_session_is_opened() {
    // (the request's `_meta`, the code it gets, a part of its message, its `data`)
    let table = [
        (
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
            -32602,
            "io.modelcontextprotocol/clientCapabilities",
            Value::Null,
        ),
        (
            json!({"io.modelcontextprotocol/protocolVersion": 20260728, "io.modelcontextprotocol/clientCapabilities": {}}),
            -32602,
            "must be a string",
            Value::Null,
        ),
        (
            json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}),
            -32022,
            "2099-01-01",
            json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}),
        ),
    ];
    for (meta, code, said, data) in table {
        let mut translator = ModernOnLegacy::new();
        let request =
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": meta}});
        let got = from_client(&mut translator, request);
        assert!(got.upstream.is_empty(), "{got:?}");
        let [answer] = got.client.as_slice() else {
            panic!("{got:?}");
        };
        assert_eq!(answer["id"], 5);
        assert_eq!(answer["error"]["code"], code, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(said), "{message}");
        if !data.is_null() {
            assert_eq!(answer["error"]["data"], data);
        }
    }
}

#[test]
fn a_method_2026_07_28_removed_is_not_found_and_never_reaches_the_session() {
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let mut translator = ModernOnLegacy::new();
        opened(&mut translator);
        let got = from_client(&mut translator, modern(30, method, json!({})));
        assert!(got.upstream.is_empty(), "{method}: {got:?}");
        let [answer] = got.client.as_slice() else {
            panic!("{method}: {got:?}");
        };
        assert_eq!(answer["id"], 30);
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(method), "{message}");
    }
}

fn event(translator: &mut ModernOnLegacy, event: UpstreamEvent) -> Vec<Out> {
    let mut out = Vec::new();
    translator.on_upstream(event, &mut out);
    out
}

#[test]
fn an_expired_session_the_bridge_opened_is_opened_again_and_the_request_sent_again() {
    let mut translator = ModernOnLegacy::new();
    opened(&mut translator);
    let sent = from_client(&mut translator, modern(4, "prompts/list", json!({})));
    let lost = frame(&sent.upstream[0]);
    let again = said(event(
        &mut translator,
        UpstreamEvent::SessionExpired { frame: lost },
    ));
    let [initialize] = again.upstream.as_slice() else {
        panic!("{again:?}");
    };
    assert_eq!(initialize["method"], "initialize");
    assert_eq!(initialize["params"]["clientInfo"]["name"], "modern-client");
    assert!(again.client.is_empty(), "{again:?}");
    let answer = json!({"jsonrpc": "2.0", "id": initialize["id"], "result": initialize_result()});
    let reopened = from_upstream(&mut translator, answer);
    let methods: Vec<_> = reopened
        .upstream
        .iter()
        .map(|m| m["method"].clone())
        .collect();
    assert_eq!(methods, ["notifications/initialized", "prompts/list"]);
    let done = from_upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 4, "result": {"prompts": []}}),
    );
    assert_eq!(done.client[0]["result"]["resultType"], "complete");
}

#[test]
fn an_expired_session_a_legacy_client_opened_is_the_clients_to_open_again() {
    let mut translator = ModernOnLegacy::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}});
    from_client(&mut translator, init);
    from_upstream(
        &mut translator,
        json!({"jsonrpc": "2.0", "id": 1, "result": initialize_result()}),
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let out = event(
        &mut translator,
        UpstreamEvent::SessionExpired {
            frame: frame(&call),
        },
    );
    assert!(
        matches!(
            out.as_slice(),
            [Out::Client(UpstreamEvent::SessionExpired { .. })]
        ),
        "{out:?}"
    );
}

#[test]
fn an_initialize_that_cannot_be_delivered_fails_the_waiting_requests() {
    let mut translator = ModernOnLegacy::new();
    let first = from_client(&mut translator, modern(1, "tools/list", json!({})));
    let out = event(
        &mut translator,
        UpstreamEvent::ProtocolError {
            frame: frame(&first.upstream[0]),
            status: Some(500),
            message: "upstream answered HTTP 500".to_owned(),
        },
    );
    let failed = said(out);
    assert!(failed.upstream.is_empty(), "{failed:?}");
    assert_eq!(failed.client[0]["id"], 1);
    assert_eq!(failed.client[0]["error"]["code"], -32004);
    let message = failed.client[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("HTTP 500"), "{message}");
}

#[test]
fn an_undelivered_request_goes_back_as_the_client_sent_it_so_it_is_translated_again() {
    let mut translator = ModernOnLegacy::new();
    opened(&mut translator);
    let request = modern(6, "tools/list", json!({}));
    let sent = from_client(&mut translator, request.clone());
    let out = event(
        &mut translator,
        UpstreamEvent::Undelivered {
            frame: frame(&sent.upstream[0]),
            maybe_delivered: false,
            reason: "connection refused".to_owned(),
        },
    );
    match out.as_slice() {
        [Out::Client(UpstreamEvent::Undelivered { frame, .. })] => {
            assert_eq!(serde_json::from_slice::<Value>(frame).unwrap(), request);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn requests_waiting_for_the_session_are_bounded() {
    let mut translator = ModernOnLegacy::new();
    from_client(&mut translator, modern(0, "tools/list", json!({})));
    for id in 1..super::MAX_WAITING as i64 {
        let got = from_client(&mut translator, modern(id, "tools/list", json!({})));
        assert!(
            got.client.is_empty() && got.upstream.is_empty(),
            "{id}: {got:?}"
        );
    }
    let refused = from_client(&mut translator, modern(9999, "tools/list", json!({})));
    assert_eq!(refused.client[0]["id"], 9999);
    assert_eq!(refused.client[0]["error"]["code"], -32002);
    assert_eq!(refused.client[0]["error"]["data"]["reason"], "buffer_full");
}

#[test]
fn a_listen_for_more_resources_than_the_limit_is_refused_and_nothing_is_sent() {
    let mut translator = ModernOnLegacy::new();
    opened(&mut translator);
    let uris: Vec<String> = (0..=crate::MAX_SUBSCRIPTIONS)
        .map(|n| format!("test://{n}"))
        .collect();
    let listen = modern(
        20,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": uris}}),
    );
    let refused = from_client(&mut translator, listen);
    assert!(refused.upstream.is_empty(), "{refused:?}");
    assert_eq!(refused.client[0]["id"], 20);
    assert_eq!(refused.client[0]["error"]["code"], crate::TOO_MANY_URIS);
    assert_eq!(
        refused.client[0]["error"]["data"]["reason"],
        "too_many_uris"
    );
    // As many as the limit go up, one subscription each.
    let uris = &uris[..crate::MAX_SUBSCRIPTIONS];
    let listen = modern(
        21,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": uris}}),
    );
    let taken = from_client(&mut translator, listen);
    assert_eq!(taken.upstream.len(), crate::MAX_SUBSCRIPTIONS);
}

#[test]
fn a_list_change_reaches_listen_streams_and_handshake_era_clients_alike() {
    // A server of both eras in the handshake era: it offers tools, declares no listChanged, and says
    // the list changed anyway.
    let result = json!({"protocolVersion": "2025-06-18",
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "dual", "version": "2"}});
    let legacy_initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "1"}}});
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    let stamped = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 20}}});
    // (a handshake-era client initialized the link first, what the client side hears)
    let table = [
        (true, vec![changed.clone(), stamped.clone()]),
        (false, vec![stamped.clone()]),
    ];
    for (legacy_client, expected) in table {
        let mut translator = ModernOnLegacy::new();
        if legacy_client {
            let sent = from_client(&mut translator, legacy_initialize.clone());
            assert_eq!(sent.upstream[0]["method"], "initialize");
            let answer = json!({"jsonrpc": "2.0", "id": 0, "result": result});
            from_upstream(&mut translator, answer);
        } else {
            let first = from_client(&mut translator, modern(1, "tools/list", json!({})));
            let answer = json!({"jsonrpc": "2.0", "id": first.upstream[0]["id"], "result": result});
            from_upstream(&mut translator, answer);
        }
        let listen = modern(
            20,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
        );
        let acked = from_client(&mut translator, listen);
        assert_eq!(
            acked.client[0]["params"]["notifications"],
            json!({"toolsListChanged": true}),
            "legacy client: {legacy_client}"
        );
        let heard = from_upstream(&mut translator, changed.clone());
        assert_eq!(heard.client, expected, "legacy client: {legacy_client}");
    }
}

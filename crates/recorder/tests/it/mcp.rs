//! The MCP call recorder, driven with the frames a bridge's observer hook would show it.

use std::time::{Duration, SystemTime};

use calltape_recorder::mcp::{
    CallError, ErrorCode, Outcome, Recorder, RecorderOptions, Recording, SessionRecorder,
};
use serde_json::{Value, json};

const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ";
const BEARER: &str = "Bearer abcdef0123456789secretvalue";
const API_KEY: &str = "live-api-key-0123456789";

fn frame(value: Value) -> Vec<u8> {
    serde_json::to_vec(&value).unwrap()
}

struct Clock(SystemTime);

impl Clock {
    fn at(&self, ms: u64) -> SystemTime {
        self.0 + Duration::from_millis(ms)
    }
}

#[tokio::test]
async fn a_session_is_recorded_paired_redacted_and_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let recorder = Recorder::open(&path, RecorderOptions::default())
        .await
        .unwrap();
    let session = recorder.session();
    let clock = Clock(SystemTime::now());
    let client = |v: Value, ms| session.client_frame(&frame(v), clock.at(ms));
    let server = |v: Value, ms| session.server_frame(&frame(v), clock.at(ms));

    client(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "claude-code", "version": "1.2.0"}}}),
        0,
    );
    server(
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-03-26",
        "capabilities": {}, "serverInfo": {"name": "demo", "version": "1"}}}),
        1,
    );
    client(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        2,
    );
    client(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        3,
    );
    server(
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
        4,
    );
    client(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "echo", "_meta": {"progressToken": "p-77"},
        "arguments": {"message": format!("use {BEARER} and {JWT}"), "apiKey": API_KEY}}}),
        10,
    );
    client(
        json!({"jsonrpc": "2.0", "id": "r", "method": "resources/read", "params": {
        "uri": "https://svc.example/data?access_token=tok123456789&x=1"}}),
        11,
    );
    server(
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p-77", "progress": 1}}),
        12,
    );
    server(
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": format!("echo: {API_KEY}")}],
        "structuredContent": {"password": "hunter2"}}}),
        22,
    );
    server(
        json!({"jsonrpc": "2.0", "id": "r", "result": {"contents": [{"uri": "x", "text": "ok"}]}}),
        15,
    );
    // A batch: a prompt that fails with a JSON-RPC error, a tool error, an internal error.
    session.client_frame(&frame(json!([
        {"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {"name": "greet", "arguments": {"who": "bob"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "pay", "arguments": {"amount": 12}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "boom"}},
    ])), clock.at(30));
    server(
        json!([
            {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "MCP error -32602: Prompt greet needs a name"}},
            {"jsonrpc": "2.0", "id": 4, "result": {"isError": true, "_meta": {"code": "card_declined"}, "content": [{"type": "text", "text": "card declined"}]}},
            {"jsonrpc": "2.0", "id": 5, "error": {"code": -32603, "message": "MCP error -32603: Unknown tool: boom (db postgres://ada:hunter2@db/x)"}},
        ]),
        31,
    );
    // Never answered: no line.
    client(
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "slow"}}),
        40,
    );
    let id = session.id().to_owned();
    drop(session);
    let report = recorder.close().await;
    // Five calls, and the tool list, written when the session ended.
    assert_eq!((report.recorded, report.unanswered), (6, 1), "{report}");
    assert!(report.is_complete(), "{report}");

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let text = std::fs::read_to_string(&path).unwrap();
    for secret in [
        JWT,
        "abcdef0123456789secretvalue",
        API_KEY,
        "hunter2",
        "tok123456789",
        "p-77",
        "5f2a",
    ] {
        assert!(!text.contains(secret), "{secret} leaked into {text}");
    }
    let recording = Recording::read(&path).unwrap();
    let calls: Vec<_> = recording.calls.iter().map(|c| &c.record).collect();
    assert_eq!(calls.len(), 6);
    let names: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c.method.as_str(), c.name.as_str()))
        .collect();
    // Calls written in the order answers arrived, the list once the session ended.
    assert_eq!(
        names,
        [
            ("tools/call", "echo"),
            (
                "resources/read",
                "https://svc.example/data?access_token=[REDACTED]&x=1"
            ),
            ("prompts/get", "greet"),
            ("tools/call", "pay"),
            ("tools/call", "boom"),
            ("tools/list", ""),
        ]
    );
    assert_eq!(calls[5].input, Some(json!({})));
    assert_eq!(calls[5].outcome, Outcome::Answer(json!({"tools": []})));
    assert_eq!(calls[5].duration_ms, 1.0);
    for call in &calls {
        assert_eq!(call.session, id);
        assert_eq!(call.client.as_ref().unwrap()["name"], "claude-code");
        assert_eq!(call.server.as_ref().unwrap()["name"], "demo");
        assert_eq!(call.protocol_version.as_deref(), Some("2025-03-26"));
        assert_eq!(call.at.len(), "2026-11-29T20:46:45.123Z".len());
    }
    // A resource read's input is its URI, redacted as its name is.
    assert_eq!(
        calls[1].input,
        Some(json!({"uri": "https://svc.example/data?access_token=[REDACTED]&x=1"}))
    );
    assert_eq!(calls[1].duration_ms, 4.0);
    assert_eq!(calls[0].duration_ms, 12.0);
    let echo_input = calls[0].input.as_ref().unwrap();
    assert_eq!(echo_input["apiKey"], "[REDACTED]");
    assert_eq!(
        echo_input["message"],
        "use Bearer [REDACTED] and [REDACTED]"
    );
    assert!(echo_input.get("_meta").is_none());
    let Outcome::Answer(answer) = &calls[0].outcome else {
        panic!()
    };
    assert_eq!(answer["structuredContent"]["password"], "[REDACTED]");
    // The server echoed the key given under a credential name: hidden there too.
    assert_eq!(answer["content"][0]["text"], "echo: [REDACTED]");
    assert_eq!(
        calls[2].outcome,
        Outcome::Error(CallError::new(
            ErrorCode::Number(-32602),
            Some("Prompt greet needs a name".into())
        ))
    );
    assert_eq!(calls[2].input, Some(json!({"who": "bob"})));
    assert_eq!(
        calls[3].outcome,
        Outcome::Error(CallError::new(
            ErrorCode::Text("card_declined".into()),
            Some("card declined".into())
        ))
    );
    assert_eq!(
        calls[4].outcome,
        // An internal error's message is kept to be shown, redacted as every message is.
        Outcome::Error(CallError::new(
            ErrorCode::Number(-32603),
            Some("Unknown tool: boom (db postgres://[REDACTED]@db/x)".into())
        ))
    );
    assert_eq!(calls[4].input, Some(json!({})));
}

#[tokio::test]
async fn options_choose_methods_and_names_and_an_existing_file_is_extended() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    for round in 0..2 {
        let options = RecorderOptions::default()
            .methods(["tools/call", "tools/list"])
            .redact_names(["symbol"])
            .keep_names(["pageToken"]);
        let recorder = Recorder::open(&path, options).await.unwrap();
        let session = recorder.session();
        let now = SystemTime::now();
        session.client_frame(
            &frame(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "quote", "arguments": {"symbol": "ACME", "pageToken": "p2"},
            "_meta": {"io.modelcontextprotocol/clientInfo": {"name": "stateless", "version": "9"},
                      "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})),
            now,
        );
        session.client_frame(&frame(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "c"}})), now);
        session.client_frame(&frame(json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {"name": "p"}})), now);
        for id in 1..=3 {
            session.server_frame(
                &frame(json!({"jsonrpc": "2.0", "id": id, "result": {"round": round}})),
                now,
            );
        }
        drop(session);
        let report = recorder.close().await;
        assert_eq!(report.recorded, 2);
    }
    // Each round: the call, then the list, written when its session ended.
    let recording = Recording::read(&path).unwrap();
    assert_eq!(recording.calls.len(), 4);
    let first = &recording.calls[0].record;
    assert_eq!(
        first.input,
        Some(json!({"symbol": "[REDACTED]", "pageToken": "p2"}))
    );
    assert_eq!(first.client.as_ref().unwrap()["name"], "stateless");
    assert_eq!(first.protocol_version.as_deref(), Some("2026-07-28"));
    let list = &recording.calls[1].record;
    assert_eq!(
        (list.method.as_str(), list.name.as_str()),
        ("tools/list", "")
    );
    // A list's input is the list's, not the cursor of a page.
    assert_eq!(list.input, Some(json!({})));
    // The items of a list are in every list line, none as here when the server gave none.
    assert_eq!(
        recording.calls[3].record.outcome,
        Outcome::Answer(json!({"round": 1, "tools": []}))
    );
    assert_ne!(
        recording.calls[0].record.session,
        recording.calls[2].record.session
    );
}

#[tokio::test]
async fn calls_after_close_are_counted_not_written_and_bad_frames_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let recorder = Recorder::open(&path, RecorderOptions::default())
        .await
        .unwrap();
    let session = recorder.session();
    let now = SystemTime::now();
    session.client_frame(b"not json", now);
    session.server_frame(b"{\"id\":", now);
    session.client_frame(
        &frame(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a"}})),
        now,
    );
    let report = recorder.close().await;
    assert_eq!(report.recorded, 0);
    session.server_frame(
        &frame(json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
        now,
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    assert!(
        Recorder::open(&path, RecorderOptions::default().redact_names([""]))
            .await
            .is_err()
    );
}

#[test]
fn recorder_types_are_send_and_sync() {
    fn assert_traits<T: Send + Sync>() {}
    assert_traits::<Recorder>();
    assert_traits::<SessionRecorder>();
    assert_traits::<Recording>();
}

// The child is a `sh` script.
#[cfg(unix)]
#[tokio::test]
async fn a_session_recorder_is_the_bridge_s_tap() {
    use calltape_stdio_bridge::{Bridge, ChildUpstream, Stderr};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let recorder = Recorder::open(&path, RecorderOptions::default())
        .await
        .unwrap();
    // A real child that answers the one request it reads, then waits for its stdin to close.
    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
    let script = format!("read -r line; printf '%s\\n' '{answer}'; cat >/dev/null");
    let child = ChildUpstream::new(["sh", "-c", script.as_str()])
        .unwrap()
        .stderr(Stderr::Null);
    let request = frame(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "greet", "arguments": {"password": "hunter2"}}}));
    let mut stdin = request;
    stdin.push(b'\n');
    let bridge = Bridge::builder()
        .upstream(child)
        .tap(recorder.session())
        .build()
        .unwrap();
    let summary = bridge
        .run(std::io::Cursor::new(stdin), Vec::new())
        .await
        .unwrap();
    assert_eq!(summary.tap_dropped, 0);
    let report = recorder.close().await;
    assert_eq!(report.recorded, 1, "{report}");

    let recording = Recording::read(&path).unwrap();
    let call = &recording.calls[0].record;
    assert_eq!(
        (call.method.as_str(), call.name.as_str()),
        ("tools/call", "greet")
    );
    assert_eq!(call.input, Some(json!({"password": "[REDACTED]"})));
    assert_eq!(
        call.outcome,
        Outcome::Answer(json!({"content": [{"type": "text", "text": "hi"}]}))
    );
}

/// Shows `session` the `frames` (`true`: from the client), a millisecond apart.
fn feed(session: &SessionRecorder, frames: &[(bool, Value)]) {
    let clock = Clock(SystemTime::now());
    for (n, (from_client, message)) in frames.iter().enumerate() {
        match from_client {
            true => session.client_frame(&frame(message.clone()), clock.at(n as u64)),
            false => session.server_frame(&frame(message.clone()), clock.at(n as u64)),
        }
    }
}

/// Feeds one session `frames` with `options`, and reads the recording back.
async fn record_session(options: RecorderOptions, frames: &[(bool, Value)]) -> Recording {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let recorder = Recorder::open(&path, options).await.unwrap();
    let session = recorder.session();
    feed(&session, frames);
    drop(session);
    let report = recorder.close().await;
    assert!(report.is_complete(), "{report}");
    Recording::read(&path).unwrap()
}

fn ask(id: u64, method: &str, params: Value) -> (bool, Value) {
    (
        true,
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
}

fn answer(id: u64, result: Value) -> (bool, Value) {
    (false, json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

#[tokio::test]
async fn by_default_each_list_is_recorded_once_per_session_with_every_page() {
    let resource = |n: u32| json!({"uri": format!("test://static/resource/{n}"), "name": format!("Resource {n}")});
    let frames = [
        ask(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": true}},
            "clientInfo": {"name": "lister", "version": "1"}}),
        ),
        answer(
            0,
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "serverInfo": {"name": "everything", "version": "1"}}),
        ),
        // A first tool list, then the list again after it changed: the last one is kept.
        ask(1, "tools/list", json!({})),
        answer(
            1,
            json!({"tools": [{"name": "add", "inputSchema": {"type": "object"}}]}),
        ),
        // Three pages of resources, read to the end.
        ask(2, "resources/list", json!({})),
        answer(
            2,
            json!({"resources": [resource(1), resource(2)], "nextCursor": "Mg=="}),
        ),
        ask(3, "resources/list", json!({"cursor": "Mg=="})),
        answer(
            3,
            json!({"resources": [resource(3), resource(4)], "nextCursor": "NA=="}),
        ),
        ask(4, "resources/list", json!({"cursor": "NA=="})),
        answer(4, json!({"resources": [resource(5)]})),
        // The resources again, the first page only: the listing read to its end stays.
        ask(5, "resources/list", json!({})),
        answer(5, json!({"resources": [resource(9)], "nextCursor": "MQ=="})),
        ask(6, "tools/list", json!({})),
        answer(
            6,
            json!({"tools": [{"name": "get-sum", "description": "uses Bearer abcdef0123456789secretvalue",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}}]}),
        ),
        // A server without prompts: the error is what the client got.
        ask(7, "prompts/list", json!({})),
        (
            false,
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found"}}),
        ),
        // Templates, left after the first page: recorded as far as read, its cursor saying so.
        ask(8, "resources/templates/list", json!({})),
        answer(
            8,
            json!({"resourceTemplates": [{"uriTemplate": "test://dynamic/{id}", "name": "dynamic"}],
            "nextCursor": "more"}),
        ),
        ask(
            9,
            "tools/call",
            json!({"name": "get-sum", "arguments": {"a": 1}}),
        ),
        answer(9, json!({"content": []})),
    ];
    let recording = record_session(RecorderOptions::default(), &frames).await;
    let calls: Vec<_> = recording.calls.iter().map(|c| &c.record).collect();
    let methods: Vec<&str> = calls.iter().map(|c| c.method.as_str()).collect();
    // The call as it was answered, the lists when the session ended, in the order each started.
    assert_eq!(
        methods,
        [
            "tools/call",
            "resources/list",
            "tools/list",
            "prompts/list",
            "resources/templates/list"
        ]
    );
    for list in &calls[1..] {
        assert_eq!(
            (list.name.as_str(), list.input.as_ref()),
            ("", Some(&json!({})))
        );
        assert_eq!(list.client.as_ref().unwrap()["name"], "lister");
        assert_eq!(list.server.as_ref().unwrap()["name"], "everything");
        // A replay lists with what the line declares, as the call's line does.
        assert_eq!(
            list.capabilities.as_ref().map(|c| Value::Object(c.clone())),
            Some(json!({"roots": {"listChanged": true}})),
            "{}",
            list.method
        );
    }
    assert_eq!(calls[0].capabilities, calls[1].capabilities);
    let resources: Vec<Value> = (1..=5).map(resource).collect();
    assert_eq!(
        calls[1].outcome,
        Outcome::Answer(json!({"resources": resources}))
    );
    // From the first page's request to the last page's answer.
    assert_eq!(calls[1].duration_ms, 5.0);
    assert_eq!(
        calls[2].outcome,
        Outcome::Answer(
            json!({"tools": [{"name": "get-sum", "description": "uses Bearer [REDACTED]",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}}]})
        )
    );
    assert_eq!(
        calls[3].outcome,
        Outcome::Error(CallError::new(
            ErrorCode::Number(-32601),
            Some("Method not found".into())
        ))
    );
    assert_eq!(
        calls[4].outcome,
        Outcome::Answer(
            json!({"resourceTemplates": [{"uriTemplate": "test://dynamic/{id}", "name": "dynamic"}],
            "nextCursor": "more"})
        )
    );
}

#[tokio::test]
async fn a_stateless_clients_lists_are_recorded_with_its_meta_and_only_when_asked_for() {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "modern", "version": "2"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let frames = [
        ask(1, "tools/list", json!({"_meta": meta})),
        answer(
            1,
            json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
            "nextCursor": "p2", "resultType": "complete", "cacheScope": "public", "ttlMs": 60000,
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-server", "version": "3"}}}),
        ),
        ask(2, "tools/list", json!({"cursor": "p2", "_meta": meta})),
        answer(
            2,
            json!({"tools": [{"name": "add", "inputSchema": {"type": "object"}}],
            "resultType": "complete", "cacheScope": "public", "ttlMs": 60000}),
        ),
    ];
    let recording = record_session(RecorderOptions::default(), &frames).await;
    assert_eq!(recording.calls.len(), 1);
    let list = &recording.calls[0].record;
    assert_eq!(list.method, "tools/list");
    assert_eq!(list.client.as_ref().unwrap()["name"], "modern");
    assert_eq!(list.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(list.server.as_ref().unwrap()["name"], "modern-server");
    assert_eq!(
        list.capabilities.as_ref().map(|c| Value::Object(c.clone())),
        Some(json!({"elicitation": {}}))
    );
    // The items of both pages, the last page's other fields, no cursor: the list is whole.
    assert_eq!(
        list.outcome,
        Outcome::Answer(
            json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}},
            {"name": "add", "inputSchema": {"type": "object"}}],
            "resultType": "complete", "cacheScope": "public", "ttlMs": 60000})
        )
    );
    // Narrowed to the calls: no list.
    let options = RecorderOptions::default().methods(["tools/call"]);
    assert!(record_session(options, &frames).await.calls.is_empty());
}

#[tokio::test]
async fn closing_the_recorder_writes_the_lists_of_a_session_still_open_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let recorder = Recorder::open(&path, RecorderOptions::default())
        .await
        .unwrap();
    let session = recorder.session();
    feed(
        &session,
        &[
            ask(1, "tools/list", json!({})),
            answer(1, json!({"tools": [{"name": "echo"}]})),
        ],
    );
    // A server stopping with its sessions open closes the recording first.
    let report = recorder.close().await;
    assert_eq!(report.recorded, 1, "{report}");
    drop(session);
    let recording = Recording::read(&path).unwrap();
    assert_eq!(recording.calls.len(), 1);
    assert_eq!(
        recording.calls[0].record.outcome,
        Outcome::Answer(json!({"tools": [{"name": "echo"}]}))
    );
}

//! The recorder fed frames in both directions: the raw-text reading against the `Value` reading,
//! key order, blanks and batches.

use super::*;
use crate::mcp::RecorderReport;

/// The recording a session writes for `frames` (`true`: from the client); `by_value` sends
/// every message through the `Value` reading.
async fn recorded_text(frames: &[(bool, &str)], by_value: bool) -> String {
    let (text, report) = recorded_with(frames, by_value, KnownSecrets::new()).await;
    assert!(report.is_complete(), "{report}");
    text
}

/// [`recorded_text`] with the run's `known` secret values, and the recorder's report.
async fn recorded_with(
    frames: &[(bool, &str)],
    by_value: bool,
    known: KnownSecrets,
) -> (String, RecorderReport) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let options = RecorderOptions::default()
        .methods(["tools/call", "resources/read", "prompts/get", "custom/op"])
        .known_secrets(known);
    let recorder = Recorder::open(&path, options).await.unwrap();
    let session = recorder.session();
    let at = SystemTime::now();
    for (from_client, frame) in frames {
        match (from_client, by_value) {
            (true, false) => session.client_frame(frame.as_bytes(), at),
            (false, false) => session.server_frame(frame.as_bytes(), at),
            (true, true) => session.client_value(frame, at),
            (false, true) => session.server_value(&mut lock(&session.state), frame, at),
        }
    }
    drop(session);
    let report = recorder.close().await;
    (std::fs::read_to_string(&path).unwrap(), report)
}

/// The records a session writes for `frames` (`true`: from the client), read back without the
/// fields that vary per run; `by_value` sends every message through the `Value` reading.
async fn records(frames: &[(bool, &str)], by_value: bool) -> Vec<Value> {
    recorded_text(frames, by_value)
        .await
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            let map = record.as_object_mut().unwrap();
            for varying in ["at", "session", "durationMs"] {
                assert!(map.remove(varying).is_some(), "{line}");
            }
            record
        })
        .collect()
}

#[tokio::test]
async fn reading_raw_text_records_what_reading_values_records() {
    // One piece: a data table of frames, a row per case, then one loop over it.
    let frames: &[(bool, &str)] = &[
        (
            true,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"c","version":"1"}}}"#,
        ),
        (
            false,
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","serverInfo":{"version":"2","name":"s"}}}"#,
        ),
        (
            true,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#,
        ),
        (
            false,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}"#,
        ),
        (
            true,
            r#"{ "method" : "tools/call", "id" : "two", "params" : { "arguments" : { "z" : 1e5, "a" : [ 1 , 2.50 ], "password" : "hunter2-long" }, "name" : "login" } }"#,
        ),
        (
            false,
            r#"{"id":"two","result":{"text":"welcome, your password is hunter2-long","token":"abc"}}"#,
        ),
        (
            true,
            r#"{"id":3,"method":"tools/call","params":{"name":"t","arguments":{"note":"Bearer abcdefghijklmnop","nested":"{\"apiKey\":\"x\",\"ok\":1}","caf\u00e9":"\u00e9"}}}"#,
        ),
        (
            false,
            r#"{"id":3,"result":{"content":[{"type":"text","text":"call with Authorization: Bearer abcdefghijklmnop"}],"isError":false}}"#,
        ),
        (
            true,
            r#"{"id":4,"method":"tools/call","params":{"name":"pay"}}"#,
        ),
        (
            false,
            r#"{"id":4,"result":{"content":[{"type":"text","text":"card declined"}],"isError":true,"_meta":{"code":"declined"}}}"#,
        ),
        (
            true,
            r#"{"id":5,"method":"tools/call","params":{"name":"pay","arguments":null}}"#,
        ),
        (
            false,
            r#"{"id":5,"result":{"content":[],"is\u0045rror":true}}"#,
        ),
        (
            true,
            r#"{"id":6,"method":"resources/read","params":{"uri":"postgres://ada:secret@db/x"}}"#,
        ),
        (
            false,
            r#"{"id":6,"error":{"code":-32002,"message":"MCP error -32002: resource not found"}}"#,
        ),
        (
            true,
            r#"{"id":7,"method":"prompts/get","params":{"name":"p","arguments":{"k":"v"},"_meta":{"progressToken":9,"io.modelcontextprotocol/clientInfo":{"name":"stateless","version":"3"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        ),
        (
            false,
            r#"{"id":7,"error":{"code":-32603,"message":"boom at 0x1234"}}"#,
        ),
        (
            true,
            r#"{"id":8,"method":"tools/call","params":{"name":"n","arguments":{"a":1}}}"#,
        ),
        (false, r#"{"id":8,"result":null}"#),
        (
            true,
            r#"{"id":"\u0039","method":"tools/call","params":{"name":"escaped id","arguments":{}}}"#,
        ),
        (false, r#"{"id":"9","result":{"ok":true}}"#),
        (
            true,
            r#"{"id":10,"id":11,"method":"tools/call","params":{"name":"dup","arguments":{}}}"#,
        ),
        (false, r#"{"id":11,"result":{"ok":"dup"}}"#),
        (
            true,
            r#"{"id":12,"method":"custom/op","params":{"uri":"u","extra":{"list":[1,{"k":"v"}]},"_meta":{}}}"#,
        ),
        (
            false,
            r#"{"id":12,"result":{"eyJ":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"}}"#,
        ),
        (
            true,
            r#"{"id":13,"method":"tools/call","params":{"name":"x","arguments":{"token":12345678}}}"#,
        ),
        (
            false,
            r#"{"id":13,"result":{"n":12345678,"auth":"Basic dXNlcjpwYXNzd29yZA==","log":"export API_KEY=abc123 done"}}"#,
        ),
        (
            true,
            r#"{"id":16,"method":"tools/call","params":{"name":"ask","arguments":{"q":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        ),
        (
            false,
            r#"{"id":16,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}},"requestState":"r1"}}"#,
        ),
        (
            true,
            r#"{"id":17,"method":"tools/call","params":{"name":"ask","arguments":{"q":1},"inputResponses":{"a":{"roots":[]}},"requestState":"r1"}}"#,
        ),
        (
            false,
            r#"{"id":17,"result":{"content":[{"type":"text","text":"done"}],"resultType":"complete"}}"#,
        ),
        (true, r#"{"id":14,"method":"tools/list"}"#),
        (false, r#"{"id":14,"result":{"tools":[]}}"#),
        (
            true,
            r#"{"id":15,"method":"tools/call","params":{"name":"unanswered","arguments":{}}}"#,
        ),
    ];
    let by_text = records(frames, false).await;
    let by_value = records(frames, true).await;
    assert_eq!(by_text.len(), 13, "{by_text:#?}");
    assert_eq!(by_text, by_value);
    // Spot checks that the comparison is about something.
    assert_eq!(
        by_text[0]["client"],
        serde_json::json!({"name": "c", "version": "1"})
    );
    assert_eq!(by_text[1]["input"]["password"], "[REDACTED]");
    assert_eq!(
        by_text[1]["answer"]["text"],
        "welcome, your password is [REDACTED]"
    );
    assert_eq!(by_text[3]["error"]["code"], "declined");
    // A resource read's input is its URI, redacted as its name is.
    assert_eq!(by_text[5]["method"], "resources/read");
    assert_eq!(
        by_text[5]["input"],
        serde_json::json!({"uri": by_text[5]["name"]})
    );
    assert!(!by_text[5]["name"].as_str().unwrap().contains("secret"));
    assert_eq!(by_text[6]["client"]["name"], "stateless");
    assert_eq!(by_text[11]["answer"]["auth"], "[REDACTED]");
    // A call answered input_required is one record, with the final result.
    assert_eq!(by_text[12]["name"], "ask");
    assert_eq!(by_text[12]["input"], serde_json::json!({"q": 1}));
    assert_eq!(by_text[12]["answer"]["content"][0]["text"], "done");
}

#[tokio::test]
async fn raw_records_keep_key_order_and_drop_blanks() {
    let frames: &[(bool, &str)] = &[
        (
            true,
            r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{ "z": 1, "a": "x y" }}}"#,
        ),
        (
            false,
            r#"{"id":1,"result":{"structuredContent":{"b":2,"a":1},"content":[]}}"#,
        ),
    ];
    let text = recorded_text(frames, false).await;
    assert!(
        text.contains(r#""input":{"z":1,"a":"x y"},"answer":{"structuredContent":{"b":2,"a":1},"content":[]},"durationMs":"#),
        "{text}"
    );
    assert_eq!(records(frames, false).await, records(frames, true).await);
}

#[tokio::test]
async fn batches_are_read_message_by_message() {
    let frames: &[(bool, &str)] = &[
        (
            true,
            r#"[{"id":1,"method":"tools/call","params":{"name":"a","arguments":{}}},{"method":"notifications/x"},{"id":2,"method":"tools/call","params":{"name":"b","arguments":{}}}]"#,
        ),
        (
            false,
            r#"[{"id":2,"result":{"n":2}},{"id":1,"result":{"n":1}}]"#,
        ),
    ];
    let names: Vec<Value> = records(frames, false)
        .await
        .iter()
        .map(|r| r["name"].clone())
        .collect();
    assert_eq!(names, ["b", "a"]);
}

#[tokio::test]
async fn sent_secrets_are_hidden_in_keys_and_text_error_codes_for_the_rest_of_the_run() {
    let frames: &[(bool, &str)] = &[
        (
            true,
            r#"{"id":1,"method":"tools/call","params":{"name":"store","arguments":{"cardToken":"tok_visa_4eC39HqLy"}}}"#,
        ),
        (
            false,
            r#"{"id":1,"result":{"structuredContent":{"cards":{"tok_visa_4eC39HqLy":"stored","other":"x"}},"content":[]}}"#,
        ),
        // A later call: the value is still known, in its input, its answer and its error code.
        (
            true,
            r#"{"id":2,"method":"tools/call","params":{"name":"check","arguments":{"card":"tok_visa_4eC39HqLy"}}}"#,
        ),
        (
            false,
            r#"{"id":2,"result":{"content":[{"type":"text","text":"card tok_visa_4eC39HqLy declined"}],"isError":true,"_meta":{"code":"tok_visa_4eC39HqLy"}}}"#,
        ),
        // A text code that holds a credential goes through the value rules.
        (
            true,
            r#"{"id":3,"method":"tools/call","params":{"name":"code","arguments":{}}}"#,
        ),
        (
            false,
            r#"{"id":3,"result":{"content":[],"isError":true,"_meta":{"code":"sk-proj-abcdefghijklmnopqrstuvwx"}}}"#,
        ),
        // The caller's own known value, in a key of a plain answer.
        (
            true,
            r#"{"id":4,"method":"tools/call","params":{"name":"keys","arguments":{}}}"#,
        ),
        (
            false,
            r#"{"id":4,"result":{"by":{"hdr-value-9Xq2Lm":1,"[REDACTED]":2}}}"#,
        ),
        // A provider token the server puts in a key on its own: replaced, and the call stored.
        (
            true,
            r#"{"id":5,"method":"tools/call","params":{"name":"vault","arguments":{}}}"#,
        ),
        (
            false,
            r#"{"id":5,"result":{"structuredContent":{"ghp_0123456789abcdefghijklmnopqrstuvwxyz":"stored"},"content":[]}}"#,
        ),
    ];
    for by_value in [false, true] {
        let known = KnownSecrets::new();
        known.add("x-api-key", "hdr-value-9Xq2Lm");
        let (text, report) = recorded_with(frames, by_value, known.clone()).await;
        assert!(report.is_complete(), "{report}");
        assert!(!text.contains("tok_visa_4eC39HqLy"), "{text}");
        assert!(!text.contains("hdr-value-9Xq2Lm"), "{text}");
        assert!(!text.contains("sk-proj-"), "{text}");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(!text.contains("ghp_0123"), "{text}");
        assert_eq!(lines.len(), 5, "{text}");
        assert_eq!(
            lines[4]["answer"]["structuredContent"],
            serde_json::json!({"[REDACTED]": "stored"})
        );
        assert_eq!(
            lines[0]["answer"]["structuredContent"]["cards"],
            serde_json::json!({"[REDACTED]": "stored", "other": "x"})
        );
        assert_eq!(lines[1]["input"]["card"], "[REDACTED]");
        assert_eq!(lines[1]["error"]["code"], "[REDACTED]");
        assert_eq!(lines[1]["error"]["message"], "card [REDACTED] declined");
        assert_eq!(lines[2]["error"]["code"], "[REDACTED]");
        assert_eq!(
            lines[3]["answer"]["by"],
            serde_json::json!({"[REDACTED:2]": 1, "[REDACTED]": 2})
        );
        // The run's value is known to whoever shares the set (a log writer, say).
        assert!(known.names().contains(&"cardToken".to_owned()));
    }
}

#[tokio::test]
async fn the_gate_refuses_a_call_whose_line_still_holds_a_token_and_names_it() {
    const GHP: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
    let initialize = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-06-18","clientInfo":{{"name":"c","version":"1","{GHP}":true}}}}}}"#
    );
    let frames: &[(bool, &str)] = &[
        (true, &initialize),
        (
            false,
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","serverInfo":{"name":"s","version":"1"}}}"#,
        ),
        (
            true,
            r#"{"id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
        ),
        (false, r#"{"id":1,"result":{"content":[]}}"#),
    ];
    for by_value in [false, true] {
        let (text, report) = recorded_with(frames, by_value, KnownSecrets::new()).await;
        assert_eq!(text, "", "nothing of the call is written");
        assert_eq!((report.recorded, report.refused), (0, 1), "{report}");
        assert!(!report.is_complete());
        let refusal = report.refusals[0].to_string();
        assert!(
            refusal.starts_with("the tools/call call echo of session ")
                && refusal.contains("was not written: it held a github-pat token"),
            "{refusal}"
        );
        assert!(!refusal.contains(GHP) && !report.to_string().contains(GHP));
        assert!(report.to_string().contains("1 call refused"), "{report}");
    }
}

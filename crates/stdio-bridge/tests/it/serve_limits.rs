//! `Serve` under hostile input: requests that are not valid JSON-RPC, connections that never send
//! their headers, too many connections or sessions, and GET streams whose client does not read.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::serve::{ACCEPT_BOTH, JSON, Session, body_text, child, raw, start};
use calltape_stdio_bridge::serve::Serve;

/// Bodies that are JSON but not a request to forward: one `-32600` answer each, with `id: null`.
const INVALID_BODIES: &[&str] = &[
    "[]",
    "[1]",
    r#"[{"jsonrpc":"2.0","id":5,"method":"ping"},"x"]"#,
    r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
    r#"[{"jsonrpc":"2.0","id":false,"method":"ping"}]"#,
];

#[tokio::test]
async fn invalid_requests_get_one_error_with_a_null_id() {
    let running = start(Serve::new(child())).await;
    let mut session = Session::new(running.target.clone(), None);
    session.initialize().await;
    let id = session.id.clone().expect("initialized");
    for body in INVALID_BODIES {
        let res = raw(
            &running.target,
            Method::POST,
            "/mcp",
            &[
                ACCEPT_BOTH,
                JSON,
                ("mcp-session-id", &id),
                ("mcp-protocol-version", "2025-06-18"),
            ],
            body.as_bytes(),
        )
        .await;
        let status = res.status();
        let text = body_text(res).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {text}");
        let answer: Value = serde_json::from_str(&text).expect("one JSON answer");
        assert_eq!(answer["id"], Value::Null, "{body}: {text}");
        assert_eq!(answer["error"]["code"], -32600, "{body}: {text}");
    }
    // Nothing of them reached the server: the session goes on with its own ids.
    let echoed = session
        .call_text(json!(9), "echo", json!({"text": "on"}))
        .await;
    assert_eq!(echoed, "on");
    running.stop().await;
}

//! `serve`'s multiplexer with stateless 2026-07-28 requests beside sessions of the handshake era.

use calltape_stdio_bridge::serve::ServerBuilder;
use http::{Method, StatusCode};
use serde_json::json;

use crate::serve::{ACCEPT_BOTH, JSON, Session, body_text, child, messages_of, raw, start};

#[tokio::test]
async fn a_stateless_request_is_never_asked_what_only_a_session_can_answer() {
    let running = start(ServerBuilder::new(child())).await;
    let mut a = Session::new(running.target.clone(), None);
    a.initialize().await;

    // A stateless request whose tool asks the client for its roots: it has no session to be asked
    // in, so the question comes back as an `input_required` result, never as a request of its own.
    let body = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": "s1", "method": "tools/call",
        "params": {"name": "roots", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"roots": {}}}}}),
    )
    .unwrap();
    let headers = [
        ACCEPT_BOTH,
        JSON,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "roots"),
    ];
    let res = raw(&running.target, Method::POST, "/mcp", &headers, &body).await;
    assert_eq!(res.status(), StatusCode::OK);
    let res_headers = res.headers().clone();
    let messages = messages_of(&res_headers, &body_text(res).await);
    assert!(
        messages.iter().all(|m| m["method"] != "roots/list"),
        "{messages:?}"
    );
    let answer = messages
        .iter()
        .find(|m| m["id"] == "s1")
        .expect("the answer with the caller's id");
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    let asked = answer["result"]["inputRequests"].to_string();
    assert!(asked.contains("roots/list"), "{answer}");
    running.stop().await;
}

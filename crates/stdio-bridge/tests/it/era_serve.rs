//! `serve`'s multiplexer with stateless 2026-07-28 requests beside sessions of the handshake era.

use std::time::Duration;

use calltape_stdio_bridge::serve::Serve;
use http::{Method, StatusCode};
use serde_json::json;

use crate::serve::{
    ACCEPT_BOTH, JSON, Session, body_text, child, messages_of, next_message, raw, start,
};

#[tokio::test]
async fn a_stateless_request_is_never_asked_what_only_a_session_can_answer() {
    let running = start(Serve::new(child())).await;
    let mut a = Session::new(running.target.clone(), None);
    a.initialize().await;
    let mut stream_a = a.stream().await;

    // A stateless request whose tool asks the client for its roots: it has no session to be asked in
    // and no way to answer, so the question goes to the session that can.
    let target = running.target.clone();
    let stateless = tokio::spawn(async move {
        let body = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": "s1", "method": "tools/call",
            "params": {"name": "roots", "arguments": {}}}),
        )
        .unwrap();
        let headers = [ACCEPT_BOTH, JSON, ("mcp-protocol-version", "2026-07-28")];
        let res = raw(&target, Method::POST, "/mcp", &headers, &body).await;
        assert_eq!(res.status(), StatusCode::OK);
        let headers = res.headers().clone();
        messages_of(&headers, &body_text(res).await)
    });
    let ask = next_message(&mut stream_a).await;
    assert_eq!(ask["method"], "roots/list", "{ask}");
    let reply = a
        .post(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": "file:///a", "name": "a"}]}}))
        .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    let messages = tokio::time::timeout(Duration::from_secs(20), stateless)
        .await
        .expect("the stateless request answered in time")
        .unwrap();
    assert!(
        messages.iter().all(|m| m["method"] != "roots/list"),
        "{messages:?}"
    );
    let answer = messages
        .iter()
        .find(|m| m["id"] == "s1")
        .expect("the answer with the caller's id");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("file:///a"), "{text}");
    running.stop().await;
}

//! 2026-07-28's HTTP rules for a stateless request (the `MCP-Protocol-Version: 2026-07-28` header and
//! no `Mcp-Session-Id`): what it must carry, and the status and error it gets when it does not.

use calltape_stdio_bridge::serve::ServerBuilder;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::serve::{ACCEPT_BOTH, JSON, body_text, child, messages_of, raw, start};

const VERSION: &str = "2026-07-28";

/// The `_meta` of a well-formed 2026-07-28 request.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "rules", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// One request, the headers it goes with beside Accept and Content-Type, and what serve answers:
/// the HTTP status and, for a refusal, the JSON-RPC error code.
struct Row {
    what: &'static str,
    body: Value,
    headers: &'static [(&'static str, &'static str)],
    status: StatusCode,
    code: Option<i64>,
}

fn rows() -> Vec<Row> {
    let mut no_version = meta();
    no_version
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/protocolVersion");
    let mut no_capabilities = meta();
    no_capabilities
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let mut no_client_info = meta();
    no_client_info
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let mut other_version = meta();
    other_version["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let list = |params: Value| json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": params});
    let list_headers: &'static [(&str, &str)] = &[
        ("mcp-protocol-version", VERSION),
        ("mcp-method", "tools/list"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta()}});
    let call_headers: &'static [(&str, &str)] = &[
        ("mcp-protocol-version", VERSION),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    vec![
        Row {
            what: "a well-formed request is served",
            body: call.clone(),
            headers: call_headers,
            status: StatusCode::OK,
            code: None,
        },
        Row {
            what: "clientInfo is optional",
            body: json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": no_client_info}}),
            headers: call_headers,
            status: StatusCode::OK,
            code: None,
        },
        Row {
            what: "no params at all",
            body: json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
            headers: list_headers,
            status: StatusCode::BAD_REQUEST,
            code: Some(-32602),
        },
        Row {
            what: "no _meta",
            body: list(json!({})),
            headers: list_headers,
            status: StatusCode::BAD_REQUEST,
            code: Some(-32602),
        },
        Row {
            what: "_meta without its protocol version",
            body: list(json!({"_meta": no_version})),
            headers: list_headers,
            status: StatusCode::BAD_REQUEST,
            code: Some(-32602),
        },
        Row {
            what: "_meta without client capabilities",
            body: list(json!({"_meta": no_capabilities})),
            headers: list_headers,
            status: StatusCode::BAD_REQUEST,
            code: Some(-32602),
        },
        Row {
            what: "the header's version is not _meta's",
            body: list(json!({"_meta": other_version.clone()})),
            headers: list_headers,
            status: StatusCode::BAD_REQUEST,
            code: Some(-32020),
        },
        Row {
            what: "a version serve does not speak, in header and _meta",
            body: list(json!({"_meta": other_version})),
            headers: &[
                ("mcp-protocol-version", "v999.0.0"),
                ("mcp-method", "tools/list"),
            ],
            status: StatusCode::BAD_REQUEST,
            code: Some(-32022),
        },
        Row {
            what: "no Mcp-Method header",
            body: list(json!({"_meta": meta()})),
            headers: &[("mcp-protocol-version", VERSION)],
            status: StatusCode::BAD_REQUEST,
            code: Some(-32020),
        },
        Row {
            what: "an Mcp-Method header in other case",
            body: list(json!({"_meta": meta()})),
            headers: &[
                ("mcp-protocol-version", VERSION),
                ("mcp-method", "TOOLS/LIST"),
            ],
            status: StatusCode::BAD_REQUEST,
            code: Some(-32020),
        },
        Row {
            what: "a tools/call without Mcp-Name",
            body: call.clone(),
            headers: &[
                ("mcp-protocol-version", VERSION),
                ("mcp-method", "tools/call"),
            ],
            status: StatusCode::BAD_REQUEST,
            code: Some(-32020),
        },
        Row {
            what: "a tools/call whose Mcp-Name has spaces around it",
            body: call,
            headers: &[
                ("mcp-protocol-version", VERSION),
                ("mcp-method", "tools/call"),
                ("mcp-name", "  echo  "),
            ],
            status: StatusCode::OK,
            code: None,
        },
        Row {
            what: "initialize, which 2026-07-28 removed",
            body: json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"_meta": meta(),
                "protocolVersion": VERSION, "capabilities": {},
                "clientInfo": {"name": "rules", "version": "1.0.0"}}}),
            headers: &[
                ("mcp-protocol-version", VERSION),
                ("mcp-method", "initialize"),
            ],
            status: StatusCode::NOT_FOUND,
            code: Some(-32601),
        },
        Row {
            what: "ping, which 2026-07-28 removed",
            body: json!({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"_meta": meta()}}),
            headers: &[("mcp-protocol-version", VERSION), ("mcp-method", "ping")],
            status: StatusCode::NOT_FOUND,
            code: Some(-32601),
        },
        Row {
            what: "logging/setLevel, which 2026-07-28 removed",
            body: json!({"jsonrpc": "2.0", "id": 7, "method": "logging/setLevel",
                "params": {"level": "info", "_meta": meta()}}),
            headers: &[
                ("mcp-protocol-version", VERSION),
                ("mcp-method", "logging/setLevel"),
            ],
            status: StatusCode::NOT_FOUND,
            code: Some(-32601),
        },
        Row {
            what: "resources/subscribe, which 2026-07-28 removed",
            body: json!({"jsonrpc": "2.0", "id": 7, "method": "resources/subscribe",
                "params": {"uri": "demo://a", "_meta": meta()}}),
            headers: &[
                ("mcp-protocol-version", VERSION),
                ("mcp-method", "resources/subscribe"),
            ],
            status: StatusCode::NOT_FOUND,
            code: Some(-32601),
        },
    ]
}

#[tokio::test]
async fn a_stateless_request_keeps_2026_07_28s_http_rules_and_its_error_carries_its_id() {
    let running = start(ServerBuilder::new(child())).await;
    let mut wrong = Vec::new();
    for row in rows() {
        let mut headers = vec![ACCEPT_BOTH, JSON];
        headers.extend_from_slice(row.headers);
        let body = serde_json::to_vec(&row.body).unwrap();
        let res = raw(&running.target, Method::POST, "/mcp", &headers, &body).await;
        let status = res.status();
        let res_headers = res.headers().clone();
        let messages = messages_of(&res_headers, &body_text(res).await);
        let answer = messages.iter().find(|m| m.get("method").is_none());
        let code = answer.and_then(|a| a["error"]["code"].as_i64());
        let id = answer.map(|a| a["id"].clone());
        if status != row.status || code != row.code || id != Some(json!(7)) {
            wrong.push(format!(
                "{}: HTTP {status}, code {code:?}, id {id:?} (want HTTP {}, code {:?}, id 7): {messages:?}",
                row.what, row.status, row.code
            ));
        }
    }
    running.stop().await;
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn an_unsupported_version_names_the_supported_ones_and_echoes_the_requested() {
    let running = start(ServerBuilder::new(child())).await;
    let mut meta = meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let body = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": "u", "method": "server/discover",
        "params": {"_meta": meta}}),
    )
    .unwrap();
    let headers = [
        ACCEPT_BOTH,
        JSON,
        ("mcp-protocol-version", "v999.0.0"),
        ("mcp-method", "server/discover"),
    ];
    let res = raw(&running.target, Method::POST, "/mcp", &headers, &body).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let answer: Value = serde_json::from_str(&body_text(res).await).unwrap();
    running.stop().await;
    assert_eq!(answer["id"], "u", "{answer}");
    assert_eq!(answer["error"]["code"], -32022, "{answer}");
    assert_eq!(answer["error"]["data"]["requested"], "v999.0.0", "{answer}");
    assert_eq!(
        answer["error"]["data"]["supported"],
        json!([VERSION]),
        "{answer}"
    );
}

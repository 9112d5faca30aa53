//! A minimal stdio MCP server: one `echo` tool, one resource, one prompt.
//!
//! Handy as an upstream for trying the bridge, and used by its tests and benches. A few extra tools help
//! those: `pid` (this process's id), `inits` (how many `initialize` and `notifications/initialized`
//! messages this process saw), `seen` (every method this process was sent, in order, with the tool,
//! URI or level it named), `sleep` (answers after `ms` milliseconds) and `crash` (exits
//! without answering). It takes resource subscriptions (refusing a URI that starts with `missing:`) and
//! a log level (refusing one that is not a level).
#![allow(clippy::print_stdout)]

use std::{
    io::{BufRead, Write},
    time::Duration,
};

use serde_json::{Value, json};

const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The method of a message, with the tool, URI or level it names, as the `seen` tool lists it.
fn seen_as(method: &str, params: &Value) -> String {
    let named = ["name", "uri", "level"]
        .into_iter()
        .find_map(|k| params[k].as_str());
    match named {
        Some(what) => format!("{method} {what}"),
        None => method.to_owned(),
    }
}

fn main() {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    let mut initializes = 0u64;
    let mut initialized = 0u64;
    let mut seen = Vec::new();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = request["method"].as_str().unwrap_or_default();
        let id = request.get("id").cloned();
        if !method.is_empty() {
            seen.push(seen_as(method, &request["params"]));
        }
        let result = match method {
            "initialize" => {
                initializes += 1;
                Some(json!({
                    "protocolVersion": request["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
                    "capabilities": {
                        "tools": { "listChanged": true },
                        "resources": { "subscribe": true },
                        "logging": {},
                        "prompts": { "listChanged": false },
                    },
                    "serverInfo": { "name": "echo-server", "version": "1.0.0" },
                }))
            }
            "notifications/initialized" => {
                initialized += 1;
                None
            }
            "ping" => Some(json!({})),
            "tools/list" => Some(json!({ "tools": [{
                "name": "echo",
                "description": "Echoes its text",
                "inputSchema": { "type": "object", "properties": { "text": { "type": "string" } } },
            }] })),
            "tools/call" => {
                let arguments = &request["params"]["arguments"];
                let text = match request["params"]["name"].as_str().unwrap_or_default() {
                    "echo" => arguments["text"].as_str().unwrap_or_default().to_owned(),
                    "pid" => std::process::id().to_string(),
                    "inits" => format!("{initializes} {initialized}"),
                    "seen" => seen.join(", "),
                    "sleep" => {
                        std::thread::sleep(Duration::from_millis(
                            arguments["ms"].as_u64().unwrap_or(0),
                        ));
                        "slept".to_owned()
                    }
                    "crash" => std::process::exit(3),
                    other => format!("unknown tool {other}"),
                };
                Some(json!({ "content": [{ "type": "text", "text": text }] }))
            }
            "resources/read" => Some(json!({ "contents": [{
                "uri": request["params"]["uri"], "mimeType": "text/plain", "text": "hello",
            }] })),
            "prompts/get" => Some(json!({ "messages": [{
                "role": "user", "content": { "type": "text", "text": "say hello" },
            }] })),
            "resources/subscribe" | "resources/unsubscribe" => {
                let uri = request["params"]["uri"].as_str().unwrap_or("missing:");
                (!uri.starts_with("missing:")).then(|| json!({}))
            }
            "logging/setLevel" => {
                let level = request["params"]["level"].as_str().unwrap_or_default();
                LEVELS.contains(&level).then(|| json!({}))
            }
            _ => None,
        };
        let Some(id) = id else { continue };
        let answer = match result {
            Some(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            None if method.is_empty() => continue,
            None => {
                let (code, message) = match method {
                    "resources/subscribe" | "resources/unsubscribe" => {
                        (-32002, "resource not found")
                    }
                    "logging/setLevel" => (-32602, "not a log level"),
                    _ => (-32601, "method not found"),
                };
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
            }
        };
        if writeln!(stdout, "{answer}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}

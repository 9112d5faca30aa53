//! A minimal stdio MCP server: one `echo` tool, one resource, one prompt.
//!
//! Handy as an upstream for trying the bridge, and used by its tests and benches. A few extra tools help
//! those: `pid` (this process's id), `inits` (how many `initialize` and `notifications/initialized`
//! messages this process saw), `sleep` (answers after `ms` milliseconds) and `crash` (exits without
//! answering).
#![allow(clippy::print_stdout)]

use std::{
    io::{BufRead, Write},
    time::Duration,
};

use serde_json::{Value, json};

fn main() {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    let mut initializes = 0u64;
    let mut initialized = 0u64;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = request["method"].as_str().unwrap_or_default();
        let id = request.get("id").cloned();
        let result = match method {
            "initialize" => {
                initializes += 1;
                Some(json!({
                    "protocolVersion": request["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
                    "capabilities": {
                        "tools": { "listChanged": true },
                        "resources": {},
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
            _ => None,
        };
        let Some(id) = id else { continue };
        let answer = match result {
            Some(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            None if method.is_empty() => continue,
            None => {
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "method not found" } })
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

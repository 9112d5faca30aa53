//! A small stdio MCP server that answers concurrently, for the multiplexer's tests: progress, list
//! changes, resource updates, a server-to-client request and a crash on demand.
//!
//! Tools (`tools/call` with `params.name`): `echo {text}`, `pid`, `argv` (its arguments), `cwd` (its
//! working folder), `inits` ("<initialize> <initialized>"),
//! `slow {ms, steps}` (progress on the request's token, then "done"), `notify` (a tools list change and a
//! log message), `update {uri}` (a resource update), `roots` (asks the client for its roots and returns
//! them), `subs` (subscriptions held), `cancels` (the request ids of the `notifications/cancelled` it
//! received, as JSON), `setup` (the `resources/subscribe` and `logging/setLevel` requests it was sent,
//! refused ones too, as JSON), `flood {count, size}` (`count` log messages of `size` bytes each), `crash`
//! (exits with status 3). It refuses a subscription to a URI that starts with `missing:`, and with
//! `--init-delay-ms MS` it answers each `initialize` that much later.
//!
//! It reads its stdin and answers everything but `tools/call` on one thread, as many small servers do:
//! while its stdout is full, it reads nothing. `tools/list` names the tools, each with a description
//! of 2 KiB, so that a few answers fill a pipe.

use std::{
    collections::HashMap,
    io::{BufRead, Write},
    sync::{
        Arc, Mutex,
        atomic::{AtomicI64, Ordering},
        mpsc,
    },
    thread,
    time::Duration,
};

use serde_json::{Value, json};

type Out = Arc<Mutex<std::io::Stdout>>;
type Waiters = Arc<Mutex<HashMap<String, mpsc::Sender<Value>>>>;

fn send(out: &Out, message: &Value) {
    let mut out = out.lock().expect("stdout lock");
    let mut line = serde_json::to_vec(message).expect("json");
    line.push(b'\n');
    let _ = out.write_all(&line);
    let _ = out.flush();
}

fn text(id: &Value, text: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
}

fn main() {
    let out: Out = Arc::new(Mutex::new(std::io::stdout()));
    let waiters: Waiters = Arc::new(Mutex::new(HashMap::new()));
    let initializes = Arc::new(AtomicI64::new(0));
    let initialized = Arc::new(AtomicI64::new(0));
    let subscriptions = Arc::new(AtomicI64::new(0));
    let next_ask = Arc::new(AtomicI64::new(1));
    let cancels = Arc::new(Mutex::new(Vec::<Value>::new()));
    let mut setup = Vec::<Value>::new();
    let args: Vec<String> = std::env::args().collect();
    let init_delay = args
        .windows(2)
        .find(|w| w[0] == "--init-delay-ms")
        .and_then(|w| w[1].parse().ok())
        .map(Duration::from_millis);
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = message["id"].clone();
        let Some(method) = message["method"].as_str().map(str::to_owned) else {
            // An answer to one of this server's requests.
            if let Some(tx) = waiters.lock().expect("lock").remove(&id.to_string()) {
                let _ = tx.send(message);
            }
            continue;
        };
        match method.as_str() {
            "initialize" => {
                if let Some(delay) = init_delay {
                    thread::sleep(delay);
                }
                initializes.fetch_add(1, Ordering::SeqCst);
                send(
                    &out,
                    &json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": message["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
                        "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true}, "logging": {}},
                        "serverInfo": {"name": "mux-server", "version": "1.0.0"}}}),
                );
            }
            "notifications/initialized" => {
                initialized.fetch_add(1, Ordering::SeqCst);
            }
            "notifications/cancelled" => {
                cancels
                    .lock()
                    .expect("lock")
                    .push(message["params"]["requestId"].clone());
            }
            "ping" => send(&out, &json!({"jsonrpc": "2.0", "id": id, "result": {}})),
            "tools/list" => send(
                &out,
                &json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tool_list()}}),
            ),
            "resources/subscribe" | "resources/unsubscribe" => {
                let uri = message["params"]["uri"].as_str().unwrap_or_default();
                let subscribe = method == "resources/subscribe";
                if subscribe {
                    setup.push(json!(format!("{method} {uri}")));
                }
                if uri.starts_with("missing:") {
                    send(
                        &out,
                        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32002, "message": "resource not found"}}),
                    );
                    continue;
                }
                subscriptions.fetch_add(if subscribe { 1 } else { -1 }, Ordering::SeqCst);
                send(&out, &json!({"jsonrpc": "2.0", "id": id, "result": {}}));
            }
            "logging/setLevel" => {
                let level = message["params"]["level"].as_str().unwrap_or_default();
                setup.push(json!(format!("{method} {level}")));
                send(&out, &json!({"jsonrpc": "2.0", "id": id, "result": {}}));
            }
            "tools/call" => {
                let out = Arc::clone(&out);
                let waiters = Arc::clone(&waiters);
                let counts = (
                    initializes.load(Ordering::SeqCst),
                    initialized.load(Ordering::SeqCst),
                    subscriptions.load(Ordering::SeqCst),
                );
                let ask = next_ask.fetch_add(1, Ordering::SeqCst);
                let seen = (
                    Value::Array(cancels.lock().expect("lock").clone()),
                    Value::Array(setup.clone()),
                );
                thread::spawn(move || call(&out, &waiters, &message, counts, ask, &seen));
            }
            _ if id.is_null() => {}
            _ => send(
                &out,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}}),
            ),
        }
    }
}

/// The tools it answers `tools/call` for, each with a description of 2 KiB.
fn tool_list() -> Vec<Value> {
    const TOOLS: [&str; 14] = [
        "echo", "pid", "argv", "cwd", "inits", "subs", "cancels", "setup", "slow", "notify",
        "update", "roots", "flood", "crash",
    ];
    TOOLS
        .iter()
        .map(|name| {
            let mut description = format!("the {name} tool");
            description.extend(std::iter::repeat_n('.', 2048 - description.len()));
            json!({"name": name, "description": description,
                "inputSchema": {"type": "object"}})
        })
        .collect()
}

fn call(
    out: &Out,
    waiters: &Waiters,
    message: &Value,
    counts: (i64, i64, i64),
    ask: i64,
    (cancelled, setup): &(Value, Value),
) {
    let id = &message["id"];
    let args = &message["params"]["arguments"];
    let reply = match message["params"]["name"].as_str().unwrap_or_default() {
        "echo" => args["text"].as_str().unwrap_or_default().to_owned(),
        "pid" => std::process::id().to_string(),
        "argv" => std::env::args().skip(1).collect::<Vec<_>>().join(" "),
        "cwd" => std::env::current_dir()
            .map(|dir| dir.display().to_string())
            .unwrap_or_default(),
        "inits" => format!("{} {}", counts.0, counts.1),
        "subs" => counts.2.to_string(),
        "cancels" => cancelled.to_string(),
        "setup" => setup.to_string(),
        "slow" => {
            let ms = args["ms"].as_u64().unwrap_or(500);
            let steps = args["steps"].as_u64().unwrap_or(1).max(1);
            let token = message["params"]["_meta"]["progressToken"].clone();
            for step in 1..=steps {
                if !token.is_null() {
                    send(
                        out,
                        &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": step, "total": steps}}),
                    );
                }
                thread::sleep(Duration::from_millis(ms / steps));
            }
            "done".to_owned()
        }
        "notify" => {
            send(
                out,
                &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            );
            send(
                out,
                &json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hello"}}),
            );
            "ok".to_owned()
        }
        "update" => {
            send(
                out,
                &json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": args["uri"]}}),
            );
            "ok".to_owned()
        }
        "roots" => {
            let ask_id = json!(format!("ask-{ask}"));
            let (tx, rx) = mpsc::channel();
            waiters.lock().expect("lock").insert(ask_id.to_string(), tx);
            send(
                out,
                &json!({"jsonrpc": "2.0", "id": ask_id, "method": "roots/list"}),
            );
            match rx.recv_timeout(Duration::from_secs(20)) {
                Ok(answer) => answer["result"].to_string(),
                Err(_) => "no answer".to_owned(),
            }
        }
        "flood" => {
            let count = args["count"].as_u64().unwrap_or(1);
            let data = "x".repeat(args["size"].as_u64().unwrap_or(10) as usize);
            for n in 0..count {
                send(
                    out,
                    &json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": n.to_string(), "data": data}}),
                );
            }
            "flooded".to_owned()
        }
        "crash" => std::process::exit(3),
        other => format!("unknown tool {other}"),
    };
    send(out, &text(id, reply));
}

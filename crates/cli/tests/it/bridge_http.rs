//! `calltape bridge --url` and `--socket` between the official Python MCP client and real Streamable HTTP
//! servers (the Python SDK's FastMCP, and the reference "everything" server).

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use serde_json::{Value, json};

use crate::support::{calltape, everything, free_port, python, wait_or_kill};

/// A FastMCP server (stateful Streamable HTTP) on a port or a Unix socket, logging every request it gets
/// (method, JSON-RPC method, status, session id, protocol version, Host, Authorization) as JSON lines.
const SERVER_PY: &str = r#"import json, os, sys
import uvicorn
from mcp.server.fastmcp import FastMCP
from mcp.server.transport_security import TransportSecuritySettings

LOG = os.environ["UPSTREAM_LOG"]
mcp = FastMCP(
    "py-upstream",
    transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["localhost", "localhost:*", "127.0.0.1:*"],
    ),
)

@mcp.tool()
def echo(message: str) -> str:
    """Echo a message back."""
    return f"Echo: {message}"

@mcp.resource("greeting://world")
def greeting() -> str:
    """A greeting."""
    return "Hello, world"

@mcp.prompt()
def review(code: str) -> str:
    """Ask for a review."""
    return f"Please review: {code}"

inner = mcp.streamable_http_app()

async def app(scope, receive, send):
    if scope["type"] != "http":
        return await inner(scope, receive, send)
    headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
    chunks = []
    async def receive_logged():
        message = await receive()
        if message["type"] == "http.request":
            chunks.append(message.get("body", b""))
        return message
    async def send_logged(message):
        if message["type"] == "http.response.start":
            body = b"".join(chunks)
            try:
                rpc = json.loads(body).get("method") if body else None
            except Exception:
                rpc = None
            record = {"pid": os.getpid(), "method": scope["method"], "path": scope["path"], "rpc": rpc,
                      "status": message["status"], "session": headers.get("mcp-session-id"),
                      "version": headers.get("mcp-protocol-version"), "host": headers.get("host"),
                      "auth": headers.get("authorization")}
            with open(LOG, "a") as f:
                f.write(json.dumps(record) + "\n")
        await send(message)
    await inner(scope, receive_logged, send_logged)

where = sys.argv[1]
if where.startswith("/"):
    uvicorn.run(app, uds=where, log_level="warning")
else:
    uvicorn.run(app, host="127.0.0.1", port=int(where), log_level="warning")
"#;

/// The Python MCP client: starts the upstream, talks to it through `calltape bridge` (and directly, to
/// compare), kills and restarts it when asked, and prints what it received as JSON.
const CLIENT_PY: &str = r#"import asyncio, json, os, signal, socket, subprocess, sys, time
import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

cfg = json.loads(sys.argv[1])
server = None

def start_server():
    global server
    server = subprocess.Popen(cfg["server_cmd"], env={**os.environ, **cfg.get("server_env", {})},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if "uds" in cfg["wait"]:
                s = socket.socket(socket.AF_UNIX); s.connect(cfg["wait"]["uds"])
            else:
                s = socket.create_connection(("127.0.0.1", cfg["wait"]["tcp"]))
            s.close()
            return
        except OSError:
            if server.poll() is not None:
                raise SystemExit(f"upstream exited with {server.returncode}")
            time.sleep(0.05)
    raise SystemExit("upstream did not start")

def stop_server():
    server.send_signal(signal.SIGKILL)
    server.wait()
    if "uds" in cfg["wait"]:
        try: os.unlink(cfg["wait"]["uds"])
        except FileNotFoundError: pass

def dump(value):
    return value.model_dump(mode="json", exclude_none=True)

async def four(session):
    out = {}
    tools = await session.list_tools()
    out["tools"] = sorted(t.name for t in tools.tools)
    out["call"] = dump(await session.call_tool("echo", {"message": "hello"}))
    if cfg.get("resource"):
        out["resource"] = dump(await session.read_resource(cfg["resource"]))
    if cfg.get("prompt"):
        out["prompt"] = dump(await session.get_prompt(cfg["prompt"]["name"], cfg["prompt"]["args"]))
    return out

async def safe(coro):
    try:
        return {"ok": dump(await coro)}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}

async def via_bridge(body):
    params = StdioServerParameters(command=cfg["calltape"], args=cfg["bridge_args"],
                                   env={**os.environ, "CALLTAPE_LOG": "debug"})
    with open(cfg["bridge_log"], "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)

async def direct(body):
    d = cfg["direct"]
    factory = None
    if "uds" in d:
        def factory(headers=None, timeout=None, auth=None):
            return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=d["uds"]),
                                     headers=headers, timeout=timeout, auth=auth)
    kwargs = {"httpx_client_factory": factory} if factory else {}
    async with streamablehttp_client(d["url"], **kwargs) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

async def restart(session):
    before = await safe(session.call_tool("echo", {"message": "before"}))
    stop_server()
    start_server()
    after = []
    for i in range(3):
        after.append(await safe(session.call_tool("echo", {"message": f"after {i}"})))
    return {"before": before, "after": after}

async def main():
    start_server()
    try:
        if cfg["mode"] == "four":
            result = {"bridge": await via_bridge(four), "direct": await direct(four)}
        else:
            result = await via_bridge(restart)
    finally:
        time.sleep(0.3)
        stop_server()
    print(json.dumps(result))

asyncio.run(main())
"#;

struct Run {
    output: Value,
    requests: Vec<Value>,
    bridge_log: String,
}

/// Runs the Python client with `config` (paths and the calltape binary are filled in).
fn run_client(dir: &Path, mut config: Value) -> Run {
    let python = python();
    std::fs::write(dir.join("server.py"), SERVER_PY).unwrap();
    std::fs::write(dir.join("client.py"), CLIENT_PY).unwrap();
    let log = dir.join("requests.jsonl");
    let bridge_log = dir.join("bridge.log");
    let calltape_bin = calltape().get_program().to_owned();
    config["calltape"] = json!(calltape_bin.to_str().unwrap());
    config["bridge_log"] = json!(bridge_log.to_str().unwrap());
    config["server_env"]["UPSTREAM_LOG"] = json!(log.to_str().unwrap());
    if config["server_cmd"].is_null() {
        config["server_cmd"] = json!([
            python.to_str().unwrap(),
            dir.join("server.py").to_str().unwrap(),
            config["where"]
        ]);
    }
    let mut child = std::process::Command::new(&python)
        .arg(dir.join("client.py"))
        .arg(config.to_string())
        .env_remove("CALLTAPE_LOG")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Killed past two minutes; its output then says how far it came.
    wait_or_kill(&mut child, Duration::from_secs(120));
    let out = child.wait_with_output().unwrap();
    let bridge_log = std::fs::read_to_string(&bridge_log).unwrap_or_default();
    assert!(
        out.status.success(),
        "the Python client failed: {}\nstdout: {}\nstderr: {}\nbridge log:\n{bridge_log}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Run {
        output: serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "the client printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        }),
        requests,
        bridge_log,
    }
}

fn four_calls(dir: &Path, bridge_args: Value, where_: &str, direct: Value) -> Run {
    run_client(
        dir,
        json!({
            "mode": "four",
            "bridge_args": bridge_args,
            "where": where_,
            "wait": if where_.starts_with('/') { json!({"uds": where_}) } else { json!({"tcp": where_.parse::<u16>().unwrap()}) },
            "server_env": {},
            "resource": "greeting://world",
            "prompt": {"name": "review", "args": {"code": "x = 1"}},
            "direct": direct,
        }),
    )
}

/// The requests of the first session (the bridge's): up to and including its DELETE. The
/// `server/discover` that finds the server's era (a legacy one: it refuses it, and no session starts)
/// comes before it.
fn bridge_session(requests: &[Value]) -> &[Value] {
    let start = match requests.first() {
        Some(first) if first["rpc"] == "server/discover" => {
            assert_eq!(first["session"], Value::Null, "{first}");
            assert_eq!(first["status"].as_u64().unwrap() / 100, 4, "{first}");
            1
        }
        _ => 0,
    };
    let end = requests
        .iter()
        .position(|r| r["method"] == "DELETE")
        .expect("the bridge never DELETEd its session");
    &requests[start..=end]
}

fn assert_same_answers_and_session_headers(run: &Run, host: &str) {
    let bridge = &run.output["bridge"];
    assert_eq!(
        bridge, &run.output["direct"],
        "answers through the bridge differ from direct ones"
    );
    assert_eq!(bridge["tools"], json!(["echo"]));
    assert_eq!(bridge["call"]["content"][0]["text"], "Echo: hello");
    assert_eq!(bridge["resource"]["contents"][0]["text"], "Hello, world");
    assert_eq!(
        bridge["prompt"]["messages"][0]["content"]["text"],
        "Please review: x = 1"
    );

    let session = bridge_session(&run.requests);
    let rpcs: Vec<&str> = session
        .iter()
        .map(|r| r["rpc"].as_str().unwrap_or(r["method"].as_str().unwrap()))
        .collect();
    for expected in [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "resources/read",
        "prompts/get",
        "DELETE",
    ] {
        assert!(rpcs.contains(&expected), "{expected} missing from {rpcs:?}");
    }
    let init = &session[0];
    assert_eq!(init["rpc"], "initialize");
    assert_eq!(
        init["session"],
        Value::Null,
        "initialize carried a session id"
    );
    assert_eq!(init["version"], Value::Null);
    let id = session[1]["session"]
        .as_str()
        .expect("no session id after initialize")
        .to_owned();
    for later in &session[1..] {
        assert_eq!(later["session"], id.as_str(), "{later}");
        assert!(
            later["version"].is_string(),
            "no protocol version on {later}"
        );
        assert_eq!(later["status"].as_u64().unwrap() / 100, 2, "{later}");
    }
    for request in session {
        assert_eq!(
            request["host"].as_str().unwrap().split(':').next(),
            Some(host)
        );
    }
    assert_eq!(session.last().unwrap()["method"], "DELETE");
}

#[test]
fn the_python_client_through_bridge_url_gets_what_it_gets_directly() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let run = four_calls(
        dir.path(),
        json!([
            "bridge",
            "--url",
            url,
            "--header",
            "Authorization: Bearer e2e-token"
        ]),
        &port,
        json!({"url": url}),
    );
    assert_same_answers_and_session_headers(&run, "127.0.0.1");
    for request in bridge_session(&run.requests) {
        assert_eq!(request["auth"], "Bearer e2e-token", "{request}");
    }
}

#[test]
fn the_python_client_through_bridge_socket_gets_what_it_gets_directly() {
    let dir = tempfile::tempdir().unwrap();
    let socket: PathBuf = dir.path().join("up.sock");
    let socket = socket.to_str().unwrap();
    let headers = dir.path().join("headers");
    std::fs::write(
        &headers,
        "# from a file\nAuthorization: Bearer file-token\n",
    )
    .unwrap();
    let run = four_calls(
        dir.path(),
        json!([
            "bridge",
            "--socket",
            socket,
            "--path",
            "/mcp",
            "--header-file",
            headers.to_str().unwrap()
        ]),
        socket,
        json!({"uds": socket, "url": "http://localhost/mcp"}),
    );
    assert_same_answers_and_session_headers(&run, "localhost");
    for request in bridge_session(&run.requests) {
        assert_eq!(request["auth"], "Bearer file-token", "{request}");
    }
}

fn assert_calls_survived(run: &Run) {
    assert_eq!(
        run.output["before"]["ok"]["content"][0]["text"], "Echo: before",
        "{}",
        run.output
    );
    let after = run.output["after"].as_array().unwrap();
    assert_eq!(after.len(), 3);
    for (i, call) in after.iter().enumerate() {
        assert_eq!(
            call["ok"]["content"][0]["text"],
            format!("Echo: after {i}"),
            "call {i} after the restart: {call}\nbridge log:\n{}",
            run.bridge_log
        );
    }
}

#[test]
fn a_restarted_python_upstream_answering_404_costs_the_client_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let run = run_client(
        dir.path(),
        json!({
            "mode": "restart",
            "bridge_args": ["bridge", "--url", format!("http://127.0.0.1:{port}/mcp")],
            "where": port.to_string(),
            "wait": {"tcp": port},
            "server_env": {},
        }),
    );
    assert_calls_survived(&run);
    // The restarted server answered the old session id with 404, and a new session followed.
    let pids: Vec<&Value> = run.requests.iter().map(|r| &r["pid"]).collect();
    let second = run
        .requests
        .iter()
        .position(|r| r["pid"] != *pids[0])
        .expect("the server was not restarted");
    let first_after = &run.requests[second];
    assert_eq!(first_after["status"], 404, "{first_after}");
    assert!(first_after["session"].is_string());
    // Other requests in flight with the old session id (a stream's GET, a second POST) are
    // answered 404 too, in any order; the next request without it opens the new session.
    let old_session = &first_after["session"];
    let rest = &run.requests[second + 1..];
    let opened = rest
        .iter()
        .position(|r| r["session"] != *old_session)
        .expect("no request after the restart left the old session");
    for stale in &rest[..opened] {
        assert_eq!(stale["status"], 404, "{stale}");
    }
    assert_eq!(rest[opened]["rpc"], "initialize", "{}", rest[opened]);
    assert_eq!(rest[opened]["session"], Value::Null);
    assert!(
        run.bridge_log
            .contains("answered 404 Not Found to a request with its session id"),
        "{}",
        run.bridge_log
    );
}

#[test]
fn a_restarted_everything_server_answering_400_costs_the_client_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let everything = everything();
    let run = run_client(
        dir.path(),
        json!({
            "mode": "restart",
            "bridge_args": ["bridge", "--url", format!("http://127.0.0.1:{port}/mcp")],
            "server_cmd": [everything.to_str().unwrap(), "streamableHttp"],
            "wait": {"tcp": port},
            "server_env": {"PORT": port.to_string()},
        }),
    );
    assert_calls_survived(&run);
    assert!(
        run.bridge_log
            .contains("answered 400 Bad Request saying the session id is not valid"),
        "{}",
        run.bridge_log
    );
}

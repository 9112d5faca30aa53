//! A shared session's protocol edges, and a shared server bound to the command it runs.

use std::time::Duration;

use calltape_stdio_bridge::{
    serve::{Endpoint, Transport},
    shared::{Launcher, MCP_PATH, ServerRecord, SharedPaths, SharedUpstream},
};
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{
    serve::{Target, mux_server, raw},
    shared::{example, home, launcher, paths, stop, wait_gone},
    support::{Client, text},
};

fn initialize(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}})
}

#[tokio::test]
async fn an_sse_initialize_answer_sets_the_protocol_version_of_later_requests() {
    let home = home();
    let paths = paths(home.path(), "k");
    let upstream = SharedUpstream::new(paths.clone(), Transport::Unix, launcher(Transport::Unix));
    let mut client = Client::over(upstream);
    // The server (behind `serve`, which answers in SSE) echoes the version asked for; `serve` refuses
    // requests whose MCP-Protocol-Version it does not support, so a later call shows the header.
    let answer = client
        .request(0, "initialize", initialize("1999-01-01"))
        .await;
    assert_eq!(
        answer["result"]["protocolVersion"], "1999-01-01",
        "{answer}"
    );
    let called = client.call(1, "echo", json!({"text": "hi"})).await;
    assert_eq!(called["error"]["code"], -32004, "{called}");
    let message = called["error"]["data"]["upstream"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("unsupported MCP-Protocol-Version"),
        "{called}"
    );

    drop(client);
    let record = ServerRecord::read(&paths.record())
        .unwrap()
        .expect("a record");
    stop(record.pid);
    wait_gone(&paths.record()).await;
}

#[tokio::test]
async fn a_protocol_version_with_control_characters_is_an_upstream_protocol_error() {
    let home = home();
    let paths = paths(home.path(), "k");
    let upstream = SharedUpstream::new(paths.clone(), Transport::Http, launcher(Transport::Http));
    let mut client = Client::over(upstream);
    let answer = client
        .request(0, "initialize", initialize("2025-06-18\u{1}\r\nx-evil: 1"))
        .await;
    assert_eq!(answer["error"]["code"], -32004, "{answer}");
    drop(client);
    let record = ServerRecord::read(&paths.record())
        .unwrap()
        .expect("a record");
    stop(record.pid);
    wait_gone(&paths.record()).await;
}

/// A 2026-07-28 request goes through the shared link as through any Streamable HTTP upstream: without
/// a session, with `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` (in base64 when the name is not
/// plain ASCII). The server refuses one whose headers are missing or disagree with its body (HTTP 400,
/// -32020), so the child's answers show they went along.
#[tokio::test]
async fn a_stateless_request_carries_its_mirrored_headers_to_the_shared_server() {
    let home = home();
    let paths = paths(home.path(), "k");
    let upstream = SharedUpstream::new(paths.clone(), Transport::Http, launcher(Transport::Http));
    let mut client = Client::over(upstream);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    for (id, name, arguments, said) in [
        (1, "echo", json!({"text": "hi"}), "hi"),
        (2, "café", json!({}), "unknown tool café"),
    ] {
        let params = json!({"name": name, "arguments": arguments, "_meta": meta});
        let answer = client.request(id, "tools/call", params).await;
        assert_eq!(text(&answer), said, "{answer}");
    }
    drop(client);
    let record = ServerRecord::read(&paths.record())
        .unwrap()
        .expect("a record");
    stop(record.pid);
    wait_gone(&paths.record()).await;
}

/// The key's server running the multiplexer's test server with `version` as its argument.
fn versioned(version: &str) -> Launcher {
    let args: [std::ffi::OsString; 5] = [
        "unix".into(),
        "60000".into(),
        "--".into(),
        mux_server().into(),
        version.into(),
    ];
    Launcher::new(example("shared_server"), args).expect("the working folder")
}

async fn session(paths: &SharedPaths, version: &str) -> Client {
    session_of(paths, versioned(version)).await
}

async fn session_of(paths: &SharedPaths, launcher: Launcher) -> Client {
    let mut client = Client::over(SharedUpstream::new(
        paths.clone(),
        Transport::Unix,
        launcher,
    ));
    client.initialize().await;
    client
}

async fn version_of(client: &mut Client, id: u64) -> String {
    let answer = client.call(id, "argv", json!({})).await;
    text(&answer).to_owned()
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn a_session_for_another_command_replaces_the_server_and_the_old_one_serves_its_own() {
    let home = home();
    let paths = paths(home.path(), "k");
    let mut first = session(&paths, "v1").await;
    let mut second = session(&paths, "v1").await;
    assert_eq!(version_of(&mut first, 1).await, "v1");
    assert_eq!(version_of(&mut second, 1).await, "v1");
    let old = ServerRecord::read(&paths.record())
        .unwrap()
        .expect("v1's record");

    // A session for v2 never attaches to v1: it starts v2, which becomes the key's server.
    let mut third = session(&paths, "v2").await;
    assert_eq!(version_of(&mut third, 1).await, "v2");
    let new = ServerRecord::read(&paths.record())
        .unwrap()
        .expect("v2's record");
    assert_ne!(new.pid, old.pid);
    assert_ne!(new.command, old.command);
    let mut fourth = session(&paths, "v2").await;
    assert_eq!(version_of(&mut fourth, 1).await, "v2");
    assert_eq!(
        ServerRecord::read(&paths.record())
            .unwrap()
            .expect("a record")
            .pid,
        new.pid
    );

    // v1 serves the sessions it has, and takes no new one.
    assert_eq!(version_of(&mut first, 2).await, "v1");
    assert_eq!(version_of(&mut second, 2).await, "v1");
    let Endpoint::Unix(old_socket) = &old.endpoint else {
        panic!("a socket")
    };
    let token = format!("Bearer {}", old.secret.keys().token());
    let res = raw(
        &Target::Unix(old_socket.clone()),
        Method::POST,
        MCP_PATH,
        &[
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("authorization", &token),
        ],
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    )
    .await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);

    // Once its last session ends, v1 exits; v2 goes on.
    first.finish().await;
    assert!(alive(old.pid), "v1 still serves a session");
    second.finish().await;
    for _ in 0..400 {
        if !alive(old.pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(old.pid), "v1 exited after its last session");
    assert!(!old_socket.exists(), "v1 removed its socket");
    assert_eq!(version_of(&mut third, 2).await, "v2");
    drop(third);
    drop(fourth);
    stop(new.pid);
    wait_gone(&paths.record()).await;
}

#[tokio::test]
async fn the_same_command_from_another_folder_replaces_the_server() {
    let home = home();
    let paths = paths(home.path(), "k");
    let checkouts = tempfile::tempdir().unwrap();
    let (one, two) = (checkouts.path().join("one"), checkouts.path().join("two"));
    std::fs::create_dir(&one).unwrap();
    std::fs::create_dir(&two).unwrap();
    let in_dir = |dir: &std::path::Path| versioned("v1").in_dir(dir).unwrap();
    let mut first = session_of(&paths, in_dir(&one)).await;
    let cwd = |answer: Value| text(&answer).to_owned();
    assert_eq!(
        cwd(first.call(1, "cwd", json!({})).await),
        one.canonicalize().unwrap().display().to_string()
    );
    let old = ServerRecord::read(&paths.record())
        .unwrap()
        .expect("a record");
    // The same command and arguments from another folder: a server of its own, in that folder.
    let mut second = session_of(&paths, in_dir(&two)).await;
    assert_eq!(
        cwd(second.call(1, "cwd", json!({})).await),
        two.canonicalize().unwrap().display().to_string()
    );
    let new = ServerRecord::read(&paths.record())
        .unwrap()
        .expect("a record");
    assert_ne!(new.pid, old.pid);
    assert_ne!(new.command, old.command);
    // The first server serves its session still, in its own folder.
    assert_eq!(
        cwd(first.call(2, "cwd", json!({})).await),
        one.canonicalize().unwrap().display().to_string()
    );
    first.finish().await;
    drop(second);
    stop(new.pid);
    wait_gone(&paths.record()).await;
}

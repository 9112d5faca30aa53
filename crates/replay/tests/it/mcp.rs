//! MCP replay driven against an in-process server behind the bridge's `Upstream` trait.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use calltape_recorder::mcp::{Outcome, Recording};
use calltape_redact::{Gate, KnownSecrets};
use calltape_replay::ErrorKind;
use calltape_replay::mcp::{
    Comparer, FailOn, Fills, ReplayOptions, Severity, Status, compare_outcomes, replay,
    update_recording,
};
use calltape_stdio_bridge::{BoxFuture, Link, Protocol, Upstream, UpstreamEvent};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A small MCP server of the handshake era living in the test (it refuses `server/discover` as such a
/// server does): `quote` answers a price, `secret` answers a token, `ask`
/// pings the client before answering, `needs` asks the client for a sampling, an elicitation and its
/// roots and answers with what the client replied, `hang` never answers and `crash` closes the link.
/// It lists `tools` on one page and `resources` two to a page.
#[derive(Default)]
struct Fake {
    price: i64,
    tools: Vec<Value>,
    resources: Vec<Value>,
    connects: AtomicUsize,
    initializes: Mutex<Vec<Value>>,
    /// Every message the server received, in order.
    received: Mutex<Vec<Value>>,
}

/// The requests `needs` sends the client, by id.
const NEEDS: [(&str, &str); 4] = [
    ("srv-sampling", "sampling/createMessage"),
    ("srv-elicitation", "elicitation/create"),
    ("srv-roots", "roots/list"),
    ("srv-ping", "ping"),
];

/// The fake as an upstream: every connect is a fresh "process" of the same server.
struct Server(Arc<Fake>);

impl Upstream for Server {
    fn describe(&self) -> String {
        "fake server".into()
    }

    fn connect(&self) -> BoxFuture<'_, Result<Link, calltape_stdio_bridge::Error>> {
        let fake = self.0.clone();
        Box::pin(async move {
            fake.connects.fetch_add(1, Ordering::SeqCst);
            let (out_tx, mut out_rx) = mpsc::channel::<Bytes>(16);
            let (ev_tx, ev_rx) = mpsc::channel::<UpstreamEvent>(16);
            tokio::spawn(async move {
                let mut asked: Option<Value> = None;
                let mut needed: Option<Value> = None;
                let mut replies: Vec<Value> = Vec::new();
                while let Some(frame) = out_rx.recv().await {
                    let message: Value = serde_json::from_slice(&frame).unwrap();
                    let id = message.get("id").cloned();
                    if message["method"] == "server/discover" {
                        // The era probe is the adapter's, not the replay's: not kept.
                        let refused = json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32601, "message": "Method not found"}});
                        let refused = Bytes::from(serde_json::to_vec(&refused).unwrap());
                        let _ = ev_tx.send(UpstreamEvent::Message(refused)).await;
                        continue;
                    }
                    fake.received.lock().unwrap().push(message.clone());
                    let reply = |result: Value| {
                        Bytes::from(
                            serde_json::to_vec(
                                &json!({"jsonrpc": "2.0", "id": id, "result": result}),
                            )
                            .unwrap(),
                        )
                    };
                    match message.get("method").and_then(Value::as_str) {
                        Some("initialize") => {
                            fake.initializes
                                .lock()
                                .unwrap()
                                .push(message["params"].clone());
                            let _ = ev_tx.send(UpstreamEvent::Message(reply(json!({"protocolVersion": "2025-06-18",
                                "capabilities": {}, "serverInfo": {"name": "fake", "version": "1"}})))).await;
                        }
                        Some("tools/list") => {
                            let tools = json!({"tools": fake.tools});
                            let _ = ev_tx.send(UpstreamEvent::Message(reply(tools))).await;
                        }
                        Some("resources/list") => {
                            let from: usize = message["params"]["cursor"]
                                .as_str()
                                .map_or(0, |c| c.parse().unwrap());
                            let to = (from + 2).min(fake.resources.len());
                            let mut page = json!({"resources": fake.resources[from..to]});
                            if to < fake.resources.len() {
                                page["nextCursor"] = json!(to.to_string());
                            }
                            let _ = ev_tx.send(UpstreamEvent::Message(reply(page))).await;
                        }
                        Some("tools/call") => match message["params"]["name"].as_str().unwrap() {
                            "quote" => {
                                let _ = ev_tx
                                    .send(UpstreamEvent::Message(reply(
                                        json!({"structuredContent": {"price": fake.price}}),
                                    )))
                                    .await;
                            }
                            "secret" => {
                                let _ = ev_tx
                                    .send(UpstreamEvent::Message(reply(json!({"token": "abc123",
                                    "text": "use Bearer s3cr3t-value-123456 now"}))))
                                    .await;
                            }
                            "ask" => {
                                asked = id.clone();
                                let _ = ev_tx.send(UpstreamEvent::Message(Bytes::from_static(
                                    b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}"))).await;
                                let _ = ev_tx.send(UpstreamEvent::Message(Bytes::from_static(
                                    b"{\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}"))).await;
                            }
                            "needs" => {
                                needed = id.clone();
                                for (request_id, method) in NEEDS {
                                    let request = json!({"jsonrpc": "2.0", "id": request_id,
                                        "method": method, "params": {}});
                                    let _ = ev_tx
                                        .send(UpstreamEvent::Message(Bytes::from(
                                            serde_json::to_vec(&request).unwrap(),
                                        )))
                                        .await;
                                }
                            }
                            "crash" => {
                                let _ = ev_tx
                                    .send(UpstreamEvent::Closed {
                                        reason: "exit status 1".into(),
                                    })
                                    .await;
                                return;
                            }
                            _ => {}
                        },
                        None if NEEDS.iter().any(|(request_id, _)| {
                            message.get("id") == Some(&json!(request_id))
                        }) =>
                        {
                            replies.push(message);
                            if replies.len() == NEEDS.len() {
                                replies.sort_by_key(|m| m["id"].as_str().unwrap().to_owned());
                                let answer = json!({"jsonrpc": "2.0", "id": needed.take(),
                                    "result": {"replies": replies.split_off(0)}});
                                let _ = ev_tx
                                    .send(UpstreamEvent::Message(Bytes::from(
                                        serde_json::to_vec(&answer).unwrap(),
                                    )))
                                    .await;
                            }
                        }
                        None if message.get("id") == Some(&json!("srv-1")) => {
                            // The client answered our ping: now answer the call that asked.
                            let answer = json!({"jsonrpc": "2.0", "id": asked.take(), "result": {"pinged": message["result"].is_object()}});
                            let _ = ev_tx
                                .send(UpstreamEvent::Message(Bytes::from(
                                    serde_json::to_vec(&answer).unwrap(),
                                )))
                                .await;
                        }
                        _ => {}
                    }
                }
            });
            Ok(Link {
                outgoing: out_tx,
                events: ev_rx,
                close: Box::new(|| Box::pin(async {})),
            })
        })
    }
}

fn line(session: &str, client: &str, version: Option<&str>, name: &str, outcome: &str) -> String {
    let version = version
        .map(|v| format!(",\"protocolVersion\":\"{v}\""))
        .unwrap_or_default();
    format!(
        r#"{{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"{session}","client":{{"name":"{client}","version":"1"}}{version},"method":"tools/call","name":"{name}","input":{{}},{outcome},"durationMs":1}}"#
    )
}

fn write(dir: &tempfile::TempDir, lines: &[String]) -> Recording {
    let path = dir.path().join("calls.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    // Readable by all, so that a rewrite is seen to make it owner-only.
    #[cfg(unix)]
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    Recording::read(&path).unwrap()
}

#[tokio::test]
async fn each_session_gets_its_own_connection_and_recorded_client() {
    let dir = tempfile::tempdir().unwrap();
    let recording = write(
        &dir,
        &[
            line(
                "aaaaaaaa",
                "first",
                Some("2025-03-26"),
                "quote",
                r#""answer":{"structuredContent":{"price":12}}"#,
            ),
            line(
                "bbbbbbbb",
                "second",
                None,
                "quote",
                r#""answer":{"structuredContent":{"price":15}}"#,
            ),
            line(
                "aaaaaaaa",
                "first",
                Some("2025-03-26"),
                "secret",
                r#""answer":{"token":"[REDACTED]","text":"use Bearer [REDACTED] now"}"#,
            ),
            line(
                "bbbbbbbb",
                "second",
                None,
                "ask",
                r#""answer":{"pinged":true}"#,
            ),
        ],
    );
    let fake = Arc::new(Fake {
        price: 15,
        ..Fake::default()
    });
    let options = ReplayOptions::default().jobs(2);
    let replayed = replay(&recording, Arc::new(Server(fake.clone())), &options)
        .await
        .unwrap();
    assert_eq!(fake.connects.load(Ordering::SeqCst), 2);
    let mut inits = fake.initializes.lock().unwrap().clone();
    inits.sort_by_key(|p| p["clientInfo"]["name"].as_str().unwrap().to_owned());
    assert_eq!(
        inits[0]["clientInfo"],
        json!({"name": "first", "version": "1"})
    );
    assert_eq!(inits[0]["protocolVersion"], "2025-03-26");
    assert_eq!(inits[1]["clientInfo"]["name"], "second");
    assert_eq!(inits[1]["protocolVersion"], "2025-06-18");

    let statuses: Vec<(usize, Status)> = replayed
        .report
        .calls
        .iter()
        .map(|c| (c.line, c.status))
        .collect();
    assert_eq!(
        statuses,
        [
            (1, Status::Changed),
            (2, Status::Same),
            (3, Status::Same),
            (4, Status::Same)
        ]
    );
    let changed = &replayed.report.calls[0].differences[0];
    assert_eq!(changed.path, "structuredContent.price");
    assert_eq!(
        (changed.recorded.clone(), changed.replayed.clone()),
        (Some(json!(12)), Some(json!(15)))
    );
    // The replayed secret never leaves the replay unredacted.
    assert_eq!(
        replayed.outcomes[2],
        Outcome::Answer(json!({"token": "[REDACTED]", "text": "use Bearer [REDACTED] now"}))
    );
    assert_eq!(
        replayed.report.summary().to_string(),
        "4 calls, 3 same, 1 changed, 0 new-error, 0 gone-error"
    );

    assert!(
        update_recording(&recording, &replayed, &Gate::new())
            .unwrap()
            .is_empty()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&recording.path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }
    let updated = Recording::read(&recording.path).unwrap();
    assert_eq!(updated.calls.len(), 4);
    for (old, new) in recording.calls.iter().zip(&updated.calls) {
        assert_eq!(
            (&old.record.session, &old.record.name),
            (&new.record.session, &new.record.name)
        );
    }
    assert_eq!(
        updated.calls[0].record.outcome,
        Outcome::Answer(json!({"structuredContent": {"price": 15}}))
    );
    let again = replay(&updated, Arc::new(Server(fake.clone())), &options)
        .await
        .unwrap();
    assert!(
        !again.report.has_differences(),
        "{}",
        again.report.to_text(false)
    );
}

#[tokio::test]
async fn ignored_paths_and_shape_mode_apply() {
    let dir = tempfile::tempdir().unwrap();
    let recording = write(
        &dir,
        &[line(
            "aaaaaaaa",
            "c",
            None,
            "quote",
            r#""answer":{"structuredContent":{"price":12}}"#,
        )],
    );
    let fake = Arc::new(Fake {
        price: 99,
        ..Fake::default()
    });
    for comparer in [
        Comparer::builder().ignore(["**.price"]).build().unwrap(),
        Comparer::builder().shape(true).build().unwrap(),
    ] {
        let options = ReplayOptions::default().comparer(comparer);
        let replayed = replay(&recording, Arc::new(Server(fake.clone())), &options)
            .await
            .unwrap();
        assert!(!replayed.report.has_differences());
    }
}

#[tokio::test]
async fn a_server_that_stops_or_hangs_is_an_upstream_failure_naming_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let recording = write(
        &dir,
        &[
            line("aaaaaaaa", "c", None, "quote", r#""answer":{}"#),
            line("aaaaaaaa", "c", None, "crash", r#""answer":{}"#),
        ],
    );
    let fake = Arc::new(Fake::default());
    let error = replay(
        &recording,
        Arc::new(Server(fake.clone())),
        &ReplayOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::ReplayUpstream { .. }));
    assert_eq!(
        error.to_string(),
        "fake server: call 2 (tools/call crash, line 2): the server stopped: exit status 1"
    );

    let recording = write(
        &dir,
        &[line("aaaaaaaa", "c", None, "hang", r#""answer":{}"#)],
    );
    let options = ReplayOptions::default().timeout(Duration::from_millis(50));
    let error = replay(&recording, Arc::new(Server(fake)), &options)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "fake server: call 1 (tools/call hang, line 1): no answer within 50ms"
    );
}

#[tokio::test]
async fn progress_is_reported_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let recording = write(
        &dir,
        &[
            line("aaaaaaaa", "c", None, "quote", r#""answer":{}"#),
            line("bbbbbbbb", "c", None, "quote", r#""answer":{}"#),
        ],
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options = ReplayOptions::default().progress(Arc::new(move |done, total| {
        sink.lock().unwrap().push((done, total))
    }));
    replay(
        &recording,
        Arc::new(Server(Arc::new(Fake::default()))),
        &options,
    )
    .await
    .unwrap();
    assert_eq!(*seen.lock().unwrap(), [(1, 2), (2, 2)]);
}

/// A recording of one stateless session: two `quote` calls of a client named `stateless`.
fn stateless_recording(dir: &tempfile::TempDir) -> Recording {
    write(
        dir,
        &[
            line(
                "cccccccc",
                "stateless",
                Some("2026-07-28"),
                "quote",
                r#""answer":{"structuredContent":{"price":12}}"#,
            ),
            line(
                "cccccccc",
                "stateless",
                Some("2026-07-28"),
                "quote",
                r#""answer":{"structuredContent":{"price":12}}"#,
            ),
        ],
    )
}

#[tokio::test]
async fn a_stateless_session_on_a_modern_server_sends_no_initialize_and_carries_the_client_in_meta()
{
    let dir = tempfile::tempdir().unwrap();
    let recording = stateless_recording(&dir);
    let fake = Arc::new(Fake {
        price: 12,
        ..Fake::default()
    });
    // Told it is modern, the adapter translates nothing: the fake sees what the replay sends.
    let replayed = replay(
        &recording,
        Arc::new(Server(fake.clone())),
        &ReplayOptions::default().protocol(Protocol::Modern),
    )
    .await
    .unwrap();
    assert!(
        !replayed.report.has_differences(),
        "{}",
        replayed.report.to_text(false)
    );
    let received = fake.received.lock().unwrap().clone();
    let methods: Vec<&str> = received
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("(answer)"))
        .collect();
    assert_eq!(methods, ["tools/call", "tools/call"]);
    assert!(fake.initializes.lock().unwrap().is_empty());
    for call in &received {
        assert_eq!(
            call["params"]["_meta"],
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "stateless", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            })
        );
        assert_eq!(call["params"]["name"], "quote");
    }
}

#[tokio::test]
async fn a_stateless_session_on_a_legacy_server_is_initialized_with_the_recorded_client_first() {
    let dir = tempfile::tempdir().unwrap();
    let recording = stateless_recording(&dir);
    for protocol in [Protocol::Legacy, Protocol::Auto] {
        let fake = Arc::new(Fake {
            price: 12,
            ..Fake::default()
        });
        let replayed = replay(
            &recording,
            Arc::new(Server(fake.clone())),
            &ReplayOptions::default().protocol(protocol),
        )
        .await
        .unwrap();
        let report = replayed.report.to_text(false);
        assert!(!replayed.report.has_differences(), "{protocol}: {report}");
        let received = fake.received.lock().unwrap().clone();
        let methods: Vec<&str> = received
            .iter()
            .map(|m| m["method"].as_str().unwrap_or("(answer)"))
            .collect();
        assert_eq!(
            methods,
            [
                "initialize",
                "notifications/initialized",
                "tools/call",
                "tools/call"
            ],
            "{protocol}"
        );
        let initializes = fake.initializes.lock().unwrap().clone();
        assert_eq!(
            initializes[0]["clientInfo"],
            json!({"name": "stateless", "version": "1"}),
            "{protocol}"
        );
    }
}

#[tokio::test]
async fn a_session_declares_the_capabilities_its_client_declared_in_either_era() {
    // (the recorded version, the line's capabilities, what the server is told)
    let rows = [
        (None, None, json!({})),
        (
            None,
            Some(r#"{"sampling":{},"roots":{"listChanged":true}}"#),
            json!({"sampling": {}, "roots": {"listChanged": true}}),
        ),
        (Some("2026-07-28"), None, json!({})),
        (
            Some("2026-07-28"),
            Some(r#"{"elicitation":{"form":{}}}"#),
            json!({"elicitation": {"form": {}}}),
        ),
    ];
    for (version, declared, want) in rows {
        let dir = tempfile::tempdir().unwrap();
        let mut text = line(
            "dddddddd",
            "c",
            version,
            "quote",
            r#""answer":{"structuredContent":{"price":12}}"#,
        );
        if let Some(declared) = declared {
            text = text.replace(
                r#""version":"1"}"#,
                &format!(r#""version":"1"}},"capabilities":{declared}"#),
            );
        }
        let recording = write(&dir, &[text]);
        let fake = Arc::new(Fake {
            price: 12,
            ..Fake::default()
        });
        let options = ReplayOptions::default().protocol(Protocol::Modern);
        let options = match version {
            Some(_) => options,
            None => options.protocol(Protocol::Legacy),
        };
        replay(&recording, Arc::new(Server(fake.clone())), &options)
            .await
            .unwrap();
        let told = match version {
            None => fake.initializes.lock().unwrap()[0]["capabilities"].clone(),
            Some(_) => {
                let received = fake.received.lock().unwrap();
                received[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"].clone()
            }
        };
        assert_eq!(told, want, "{version:?} {declared:?}");
    }
}

#[tokio::test]
async fn server_requests_get_a_ping_answer_the_recorded_answers_or_a_clear_error() {
    let sampled =
        json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi"}});
    let elicited = json!({"action": "accept", "content": {"name": "Ada"}});
    let replies = json!([
        {"jsonrpc": "2.0", "id": "srv-elicitation", "result": elicited},
        {"jsonrpc": "2.0", "id": "srv-ping", "result": {}},
        {"jsonrpc": "2.0", "id": "srv-roots", "error": {"code": -32601,
            "message": "calltape replay has no recorded answer for roots/list here: the recorded client \
                        was not asked it during this call; record the session again to keep its answer",
            "data": {"reason": "not_recorded", "method": "roots/list"}}},
        {"jsonrpc": "2.0", "id": "srv-sampling", "result": sampled},
    ]);
    // The roots were not asked when the call was recorded.
    let asks = json!([
        {"method": "sampling/createMessage", "params": {}, "answer": sampled},
        {"method": "elicitation/create", "params": {}, "answer": elicited},
    ]);
    let dir = tempfile::tempdir().unwrap();
    let recording = write(
        &dir,
        &[
            line(
                "aaaaaaaa",
                "c",
                None,
                "needs",
                &format!(r#""asks":{asks},"answer":{{"replies":{replies}}}"#),
            ),
            line(
                "aaaaaaaa",
                "c",
                None,
                "quote",
                r#""answer":{"structuredContent":{"price":12}}"#,
            ),
        ],
    );
    let fake = Arc::new(Fake {
        price: 15,
        ..Fake::default()
    });
    let options = ReplayOptions::default().timeout(Duration::from_secs(5));
    let replayed = replay(&recording, Arc::new(Server(fake)), &options)
        .await
        .unwrap();
    let report = replayed.report.to_text(false);
    let calls = &replayed.report.calls;
    // The server's answer is as recorded; the request nothing recorded answers is what differs.
    assert_eq!(calls[0].status, Status::Changed, "{report}");
    let paths: Vec<&str> = calls[0]
        .differences
        .iter()
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(paths, ["asks.2"], "{report}");
    assert_eq!(
        calls[0].differences[0].replayed,
        Some(json!({"method": "roots/list", "params": {}}))
    );
    assert_eq!(calls[1].status, Status::Changed, "{report}");
    assert_eq!(calls[1].differences[0].path, "structuredContent.price");
}

#[test]
fn replay_types_are_send_and_sync() {
    fn assert_traits<T: Send + Sync>() {}
    assert_traits::<ReplayOptions>();
    assert_traits::<Comparer>();
    assert_traits::<calltape_replay::mcp::ReplayReport>();
}

#[test]
fn a_filled_value_echoed_as_a_key_or_an_error_code_is_hidden_and_the_update_gate_refuses_a_token() {
    const CARD: &str = "tok_test_4eC39HqLy";
    const GHP: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
    let dir = tempfile::tempdir().unwrap();
    let recording = write(
        &dir,
        &[
            line("aaaaaaaa", "c", None, "store", r#""answer":{"cards":{}}"#),
            line(
                "aaaaaaaa",
                "c",
                None,
                "check",
                r#""error":{"code":"x","message":"m"}"#,
            ),
            // Stored by an older calltape, a token as a key: a replay that answers the same keeps
            // the recorded outcome as it is, so only the gate stands before the rewrite.
            line(
                "aaaaaaaa",
                "c",
                None,
                "old",
                &format!(r#""answer":{{"{GHP}":1}}"#),
            ),
        ],
    );
    let known = KnownSecrets::new();
    known.add("x-api-key", "hdr-value-9Xq2Lm");
    let options = ReplayOptions::default()
        .fills(Fills::new().value("cardToken", CARD))
        .known_secrets(known.clone());
    let outcomes = vec![
        Outcome::Answer(json!({"cards": {CARD: "stored", "hdr-value-9Xq2Lm": "too"}})),
        Outcome::Error(calltape_recorder::mcp::CallError::new(
            calltape_recorder::mcp::ErrorCode::Text(CARD.into()),
            Some(format!("card {CARD} declined")),
        )),
        recording.calls[2].record.outcome.clone(),
    ];
    let replayed = compare_outcomes(&recording, outcomes, &options);
    let report = replayed.report.to_json().to_string();
    for text in [
        report.as_str(),
        &replayed.report.to_text(false),
        &replayed.report.to_junit(),
        &replayed
            .report
            .to_html(&calltape_replay::ReportContext::new()),
    ] {
        assert!(
            !text.contains(CARD) && !text.contains("hdr-value-9Xq2Lm"),
            "{text}"
        );
    }
    assert_eq!(
        replayed.outcomes[0],
        Outcome::Answer(json!({"cards": {"[REDACTED]": "stored", "[REDACTED:2]": "too"}}))
    );
    let gate = Gate::new().watch(&options.fills.known()).watch(&known);
    let refused = update_recording(&recording, &replayed, &gate).unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(
        refused[0].to_string().split(':').next().unwrap(),
        "call 3 (tools/call old, line 3) was not written"
    );
    assert!(refused[0].to_string().contains("a github-pat token"));
    let text = std::fs::read_to_string(&recording.path).unwrap();
    assert!(!text.contains(CARD) && !text.contains(GHP), "{text}");
    let updated = Recording::read(&recording.path).unwrap();
    assert_eq!(updated.calls.len(), 2);
    assert_eq!(
        updated.calls[1].record.outcome,
        Outcome::Error(calltape_recorder::mcp::CallError::new(
            calltape_recorder::mcp::ErrorCode::Text("[REDACTED]".into()),
            Some("card [REDACTED] declined".into()),
        ))
    );
}

/// A list line of `session`, as the recorder writes one.
fn list_line(session: &str, method: &str, answer: Value) -> String {
    format!(
        r#"{{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"{session}","method":"{method}","name":"","input":{{}},"answer":{answer},"durationMs":1}}"#
    )
}

#[tokio::test]
async fn lists_are_fetched_page_by_page_as_recorded_and_their_changes_classified() {
    let resource = |n: u32| json!({"uri": format!("test://r/{n}"), "name": format!("r{n}")});
    let resources: Vec<Value> = (1..=5).map(resource).collect();
    let echo = |properties: Value, required: Value| json!({"name": "echo", "inputSchema": {"type": "object", "properties": properties, "required": required}});
    let dir = tempfile::tempdir().unwrap();
    let recording = write(
        &dir,
        &[
            list_line(
                "aaaaaaaa",
                "tools/list",
                json!({"tools": [{"name": "add", "inputSchema": {"type": "object"}},
                    echo(json!({"message": {"type": "string"}}), json!(["message"]))]}),
            ),
            // Read to its end: every page is fetched again.
            list_line(
                "aaaaaaaa",
                "resources/list",
                json!({"resources": resources}),
            ),
            // Left after its first page: fetched as far.
            list_line(
                "bbbbbbbb",
                "resources/list",
                json!({"resources": resources[..2], "nextCursor": "opaque-2"}),
            ),
        ],
    );
    let fake = Arc::new(Fake {
        tools: vec![
            echo(
                json!({"message": {"type": "string"}, "mode": {"type": "string"}}),
                json!(["message", "mode"]),
            ),
            json!({"name": "get-sum", "inputSchema": {"type": "object"}}),
        ],
        resources: resources.clone(),
        ..Fake::default()
    });
    let replayed = replay(
        &recording,
        Arc::new(Server(fake.clone())),
        &ReplayOptions::default(),
    )
    .await
    .unwrap();
    let received = fake.received.lock().unwrap().clone();
    let pages: Vec<(String, Value)> = received
        .iter()
        .filter(|m| m["method"] == "resources/list")
        .map(|m| (m["id"].to_string(), m["params"]["cursor"].clone()))
        .collect();
    assert_eq!(
        pages,
        [
            ("2".into(), Value::Null),
            (r#""2-page-2""#.into(), json!("2")),
            (r#""2-page-3""#.into(), json!("4")),
            ("1".into(), Value::Null),
        ]
    );
    let report = &replayed.report;
    let statuses: Vec<Status> = report.calls.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        [Status::Changed, Status::Same, Status::Same],
        "{}",
        report.to_text(false)
    );
    // The unfinished listing keeps the recorded cursor: the server's own token is no change.
    assert_eq!(
        replayed.outcomes[2],
        Outcome::Answer(json!({"resources": resources[..2], "nextCursor": "opaque-2"}))
    );
    let surface: Vec<(Severity, &str)> = report.calls[0]
        .surface
        .iter()
        .map(|c| (c.severity, c.change.as_str()))
        .collect();
    assert_eq!(
        surface,
        [
            (Severity::Breaking, "tools[add] removed"),
            (
                Severity::Breaking,
                r#"tools[echo].inputSchema: required property "mode" added"#
            ),
            (Severity::Compatible, "tools[get-sum] added"),
        ]
    );
    let text = report.to_text(false);
    assert!(
        text.contains("    breaking: tools[add] removed\n")
            && text.ends_with(
                "surface: 2 breaking, 1 compatible\n3 calls, 2 same, 1 changed, 0 new-error, 0 gone-error\n"
            ),
        "{text}"
    );
    assert!(FailOn::Breaking.fails(report) && FailOn::Any.fails(report));
}

//! Replay on real version drift: the official Python SDK client records a session through
//! `calltape record` against a published older release of a reference server, and `calltape replay`
//! replays it against the newest release, as a server author upgrading would. The releases are
//! pinned in `.ci/install-peers`; nobody here wrote them or their answers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use calltape_recorder::mcp::{CallError, CallRecord, ErrorCode, Outcome, Recording};
use serde_json::Value;

use crate::support::{calltape, client_result, peer_script, peers, python};

const BIN: &str = env!("CARGO_BIN_EXE_calltape");

/// The methods recorded: the calls, and the lists (recorded here whatever `record` does by default).
const METHODS: &str = "tools/call,resources/read,prompts/get,tools/list,resources/list,\
                       resources/templates/list,prompts/list";

/// A published release's entry point, `everything-old` or `memory-new`, as `.ci/install-peers`
/// installs it. Fails the test when it is missing.
fn published(name: &str) -> PathBuf {
    let path = peers().join(format!("servers/node_modules/{name}/dist/index.js"));
    assert!(
        path.exists(),
        "{} is missing: run .ci/install-peers",
        path.display()
    );
    path
}

/// The server's command line: server-everything serves stdio when asked to.
fn server(name: &str) -> Vec<String> {
    let mut argv = vec!["node".to_owned(), published(name).display().to_string()];
    if name.starts_with("everything") {
        argv.push("stdio".into());
    }
    argv
}

/// Records drift_client.py's `scenario` against the release `name` into `file`, the server's
/// memory (server-memory's) in `memory`; returns what the client received.
fn record(scenario: &str, name: &str, file: &Path, memory: &Path) -> Value {
    client_result(
        Command::new(python())
            .arg(peer_script("drift_client.py"))
            .args([scenario, "--", BIN, "record", "-o"])
            .arg(file)
            .args(["--methods", METHODS, "--"])
            .args(server(name))
            .env("MEMORY_FILE_PATH", memory),
    )
}

/// `calltape replay FILE EXTRA… -- <release name>`, the server's memory in `memory`.
fn replay(file: &Path, extra: &[&str], name: &str, memory: &Path) -> Output {
    calltape()
        .arg("replay")
        .arg(file)
        .args(extra)
        .arg("--")
        .args(server(name))
        .env("MEMORY_FILE_PATH", memory)
        .output()
        .expect("run calltape replay")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn calls(path: &Path) -> Vec<CallRecord> {
    Recording::read(path)
        .unwrap()
        .calls
        .into_iter()
        .map(|c| c.record)
        .collect()
}

/// Keeps a report under `target/drift/` for people to read (and the change's notes to quote).
fn keep(name: &str, report: &str) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("drift");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), report).unwrap();
}

/// The result of the call `method name` in a JSON report.
fn result<'a>(report: &'a Value, method: &str, name: &str) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["method"] == method && r["name"] == name)
        .unwrap_or_else(|| panic!("no {method} {name} in {report}"))
}

#[test]
fn a_newer_server_everything_is_reported_item_by_item_with_both_sides_and_nothing_followed_from_a_list()
 {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    let memory = dir.path().join("memory.json");
    let client = record("everything", "everything-old", &file, &memory);
    // What the older release offers: the names this test expects to see removed.
    let tools: Vec<&str> = client["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"add") && !tools.contains(&"get-sum"),
        "{tools:?}"
    );
    assert_eq!(client["resources"][0], "test://static/resource/1");
    let recorded = calls(&file);
    let methods: Vec<&str> = recorded.iter().map(|c| c.method.as_str()).collect();
    assert_eq!(
        methods,
        // The calls as the client made them, then the lists it read, one line each, written when
        // the session ended.
        [
            "tools/call",
            "tools/call",
            "tools/call",
            "resources/read",
            "prompts/get",
            "tools/list",
            "resources/list",
            "resources/templates/list",
            "prompts/list",
        ]
    );
    // The older release fails an unknown tool with an internal error: its message is kept.
    assert_eq!(
        recorded[2].outcome,
        Outcome::Error(CallError::new(
            ErrorCode::Number(-32603),
            Some("Unknown tool: get-sum".into())
        ))
    );

    let out = replay(&file, &[], "everything-new", &memory);
    let report = text(&out.stdout);
    keep("everything.txt", &report);
    assert_eq!(out.status.code(), Some(1), "{report}{}", text(&out.stderr));
    for want in [
        "changed    tools/list  (call 6, line 6, ",
        "\n    tools[add]: removed\n",
        "\n    tools[longRunningOperation]: removed\n",
        "\n    tools[get-sum]: added\n",
        "\n    tools[get-annotated-message]: added\n",
        "\n    tools[echo].description: \"Echoes back the input\" → \"Echoes back the input string\"\n",
        "\n    resources[test://static/resource/1]: removed\n",
        "\n    resources[demo://resource/static/document/architecture.md]: added\n",
        "\n    resourceTemplates[test://static/resource/{id}]: removed\n",
        "\n    prompts[simple_prompt]: removed\n",
        "\n    prompts[simple-prompt]: added\n",
        // An error gone: the recorded internal error's message, and what the new server answers.
        "gone-error tools/call get-sum  (call 3, line 3, ",
        "\n    error: {\"code\":-32603,\"message\":\"Unknown tool: get-sum\"} → (absent)\n    \
         answers now: \"The sum of 2 and 40 is 42.\"\n",
        // An error come: what the older server answered.
        "new-error  tools/call add  (call 2, line 2, ",
        "\n    answered when recorded: \"The sum of 2 and 40 is 42.\"\n",
        // The recorded URI was sent as recorded, and the newer server has no such resource.
        "new-error  resources/read test://static/resource/1  (call 4, line 4, ",
        "Resource test://static/resource/1 not found",
    ] {
        assert!(report.contains(want), "{want}\n{report}");
    }
    // No item paired with another by position, and nothing sent from a list entry.
    for never in [
        "tools.1.name",
        "    tools.",
        "    resources.",
        "    prompts.",
        "input.uri",
        "demo://resource/static/document/architecture.md →",
    ] {
        assert!(!report.contains(never), "{never}\n{report}");
    }

    // The same notation in JSON, JUnit and HTML.
    let out = replay(&file, &["--format", "json"], "everything-new", &memory);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = result(&json, "tools/list", "");
    let removed = list["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"] == "tools[add]")
        .unwrap();
    assert_eq!(removed["change"], "removed");
    assert_eq!(removed["recorded"]["name"], "add");
    let read = result(&json, "resources/read", "test://static/resource/1");
    assert!(read.get("substitutions").is_none(), "{read}");
    assert_eq!(
        read["recordedAnswer"]["contents"][0]["uri"],
        "test://static/resource/1"
    );
    let sum = result(&json, "tools/call", "get-sum");
    assert_eq!(
        sum["replayedAnswer"]["content"][0]["text"],
        "The sum of 2 and 40 is 42."
    );

    let out = replay(&file, &["--format", "junit"], "everything-new", &memory);
    let xml = text(&out.stdout);
    assert_eq!(xml.matches("<failure ").count(), 8, "{xml}");
    let message = xml
        .split("<failure type=\"changed\" message=\"")
        .nth(1)
        .and_then(|m| m.split('"').next())
        .unwrap();
    for path in [
        "tools[add] removed",
        "tools[get-sum] added",
        "tools[echo].description",
    ] {
        assert!(message.contains(path), "{path}: {message}");
    }

    let page = dir.path().join("report.html");
    let out = replay(
        &file,
        &["--format", "html", "--output", page.to_str().unwrap()],
        "everything-new",
        &memory,
    );
    assert_eq!(out.status.code(), Some(1));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<code>tools[add]</code> <span class=\"chg removed\">removed</span>"),
        "{html}"
    );
    assert!(html.contains("Unknown tool: get-sum"), "{html}");

    // --ignore takes the notation: one item, every item's field by name or by position.
    let out = replay(
        &file,
        &[
            "--ignore",
            "tools[echo],resources,resourceTemplates,prompts.*.description",
        ],
        "everything-new",
        &memory,
    );
    let report = text(&out.stdout);
    assert!(!report.contains("tools[echo]"), "{report}");
    assert!(report.contains("\n    tools[add]: removed\n"), "{report}");
    assert!(!report.contains("resources["), "{report}");
    assert!(
        report.contains("\n    prompts[simple_prompt]: removed\n"),
        "{report}"
    );
}

#[test]
fn a_newer_server_memory_is_compared_entity_by_entity_inside_its_texts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    record("memory", "memory-old", &file, &dir.path().join("old.json"));
    assert_eq!(calls(&file).len(), 7);
    let out = replay(&file, &[], "memory-new", &dir.path().join("new.json"));
    let report = text(&out.stdout);
    keep("memory.txt", &report);
    assert_eq!(out.status.code(), Some(1), "{report}{}", text(&out.stderr));
    for want in [
        "\n    tools[create_entities].outputSchema: (absent) → {",
        // The graph's entities, named inside the text that holds them.
        "changed    tools/call read_graph  (call 4, line 4, ",
        "\n    content.0.text.entities[Ada].type: \"entity\" → (absent)\n",
        "\n    content.0.text.entities[Charles].type: \"entity\" → (absent)\n",
        "\n    structuredContent: (absent) → {",
    ] {
        assert!(report.contains(want), "{want}\n{report}");
    }
    assert!(!report.contains("entities.0"), "{report}");
    assert!(!report.contains("    tools."), "{report}");
    // Ignored by item, whatever their position.
    let out = replay(
        &file,
        &[
            "--ignore",
            "tools,structuredContent,content.*.text.entities[*].type",
        ],
        "memory-new",
        &dir.path().join("again.json"),
    );
    let report = text(&out.stdout);
    assert!(!report.contains("entities["), "{report}");
}

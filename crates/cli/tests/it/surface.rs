//! The server's surface end to end, on published releases of the reference servers (an older one and
//! the newest, as `.ci/install-peers` pins them): the official Python SDK 1.x client reads every
//! list through `calltape record` with its default options, and `calltape replay` against the newer
//! release classifies what changed.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::record::{client, lines};
use crate::support::{calltape, list_names as names, peers};

const BIN: &str = env!("CARGO_BIN_EXE_calltape");

/// The entry point of a published server release installed side by side with the others.
fn published(name: &str) -> String {
    let path: PathBuf = peers()
        .join("servers/node_modules")
        .join(name)
        .join("dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run .ci/install-peers",
        path.display()
    );
    path.display().to_string()
}

fn replay(file: &Path, extra: &[&str], server: &[&str], memory: &Path) -> (Output, String) {
    let out = calltape()
        .arg("replay")
        .arg(file)
        .args(["--timeout", "20s"])
        .args(extra)
        .arg("--")
        .args(server)
        .env("MEMORY_FILE_PATH", memory)
        .output()
        .expect("run calltape replay");
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, report)
}

#[test]
fn server_everything_drift_is_recorded_by_default_and_classified_by_identity() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    let memory = dir.path().join("unused.json");
    let old = published("everything-old");
    let new = published("everything-new");
    let file_arg = file.to_str().unwrap();
    let seen = client(
        "surface",
        &[BIN, "record", "-o", file_arg, "--", "node", &old, "stdio"],
    );
    // The client read a hundred resources in ten pages.
    assert_eq!(seen["resources"].as_array().unwrap().len(), 100, "{seen}");

    let recorded = lines(&file);
    let methods: Vec<&str> = recorded
        .iter()
        .map(|l| l["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "tools/call",
            "tools/list",
            "prompts/list",
            "resources/list",
            "resources/templates/list"
        ]
    );
    assert!(names(&recorded[1]["answer"], "tools", "name").contains(&"add".to_owned()));
    assert_eq!(
        names(&recorded[2]["answer"], "prompts", "name"),
        ["simple_prompt", "complex_prompt", "resource_prompt"]
    );
    // Ten pages, one line: every item, no cursor left.
    let resources = names(&recorded[3]["answer"], "resources", "uri");
    assert_eq!(resources.len(), 100);
    assert_eq!(resources[99], "test://static/resource/100");
    assert!(recorded[3]["answer"].get("nextCursor").is_none());

    // The same release: every page read again, nothing changed.
    let (out, report) = replay(&file, &[], &["node", &old, "stdio"], &memory);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(
        report,
        "5 calls, 5 same, 0 changed, 0 new-error, 0 gone-error\n"
    );

    // The newest release: what the real drift gives, counted once per change.
    let (out, report) = replay(&file, &[], &["node", &new, "stdio"], &memory);
    assert_eq!(out.status.code(), Some(1), "{report}");
    for change in [
        "breaking: tools[add] removed",
        "breaking: tools[printEnv] removed",
        "breaking: prompts[simple_prompt] removed",
        "breaking: resources[test://static/resource/1] removed",
        "breaking: resourceTemplates[test://static/resource/{id}] removed",
        "compatible: tools[get-sum] added",
        "compatible: tools[echo].annotations added",
        "compatible: prompts[simple-prompt] added",
        "compatible: resources[demo://resource/static/document/architecture.md] added",
    ] {
        assert!(
            report.contains(&format!("\n    {change}\n")),
            "{change}\n{report}"
        );
    }
    // 9 tools, 3 prompts, 100 resources and a template gone; 12 tools, 4 prompts, 7 resources and
    // 2 templates new, and 5 changes to echo that break no caller.
    assert!(
        report.ends_with(
            "surface: 113 breaking, 30 compatible\n\
             5 calls, 1 same, 4 changed, 0 new-error, 0 gone-error\n"
        ),
        "{report}"
    );
    let (out, _) = replay(
        &file,
        &["--fail-on", "breaking"],
        &["node", &new, "stdio"],
        &memory,
    );
    assert_eq!(out.status.code(), Some(1), "breaking changes fail");
    let (out, json) = replay(
        &file,
        &["--format", "json"],
        &["node", &new, "stdio"],
        &memory,
    );
    assert_eq!(out.status.code(), Some(1));
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        json["surface"],
        serde_json::json!({"breaking": 113, "compatible": 30})
    );
    assert_eq!(
        json["results"][1]["surface"][0],
        serde_json::json!({"severity": "breaking", "path": "tools[add]", "change": "tools[add] removed"})
    );
}

#[test]
fn server_memory_grew_compatibly_so_fail_on_breaking_passes_until_a_call_answer_changes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.jsonl");
    let memory = dir.path().join("memory.json");
    let memory_env = format!("MEMORY_FILE_PATH={}", memory.display());
    let file_arg = file.to_str().unwrap();
    let (old, new) = (published("memory-old"), published("memory-new"));
    let record = |scenario: &str| {
        client(
            scenario,
            &[
                "env",
                &memory_env,
                BIN,
                "record",
                "-o",
                file_arg,
                "--",
                "node",
                &old,
            ],
        )
    };
    // The older release offers tools only: the careful client reads that one list.
    record("surface");
    let recorded = lines(&file);
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0]["method"], "tools/list");

    // The newer one adds titles, annotations, output schemas and opens its input schemas.
    let (out, report) = replay(&file, &[], &["node", &new], &memory);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a difference fails by default: {report}"
    );
    assert!(!report.contains("breaking:"), "{report}");
    assert!(
        report.contains("\n    compatible: tools[create_entities].outputSchema added\n")
            && report.contains(
                "\n    compatible: tools[create_entities].inputSchema: additional properties allowed\n"
            ),
        "{report}"
    );
    assert!(
        report.ends_with(
            "surface: 0 breaking, 59 compatible\n1 call, 0 same, 1 changed, 0 new-error, 0 gone-error\n"
        ),
        "{report}"
    );
    let (out, again) = replay(&file, &["--fail-on", "breaking"], &["node", &new], &memory);
    assert_eq!(out.status.code(), Some(0), "{again}");
    assert_eq!(
        again, report,
        "the report is the same, only the exit code differs"
    );

    // A second session reads the graph, whose answer gained structuredContent: that fails still.
    record("graph");
    let (out, report) = replay(&file, &["--fail-on", "breaking"], &["node", &new], &memory);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("changed    tools/call read_graph  (call 2, line 2, "),
        "{report}"
    );
    // The same tool list in both sessions: each change counted once.
    assert!(
        report.contains("\nsurface: 0 breaking, 59 compatible\n3 calls, 0 same, 3 changed"),
        "{report}"
    );
}

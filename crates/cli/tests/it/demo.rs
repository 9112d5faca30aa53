//! `calltape demo` end to end: the newcomer's first command.

use std::os::unix::fs::PermissionsExt;

use crate::support::calltape;

#[test]
fn the_demo_records_checks_and_reports_the_three_changes_and_the_classified_surface() {
    let dir = tempfile::tempdir().unwrap();
    let out = calltape()
        .arg("demo")
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.path().join("calls.jsonl");
    assert!(
        stdout.contains(&format!("calltape demo: files in {}", dir.path().display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("8 lines (5 calls, then the 3 lists), mode 0600, secret present: no"),
        "{stdout}"
    );
    assert!(stdout.contains("\"cardToken\":\"[REDACTED]\""), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "5. Serve the recording to the client, with no server running\n   $ calltape mock {}",
            dir.path().join("calls.jsonl").display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "   the same client session got all 8 answers from the recording, none missed:"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("8 calls, 8 same, 0 changed, 0 new-error, 0 gone-error  → exit 0"),
        "{stdout}"
    );
    // Filling: without the token pay is refused and noted; with it every call is same.
    assert!(
        stdout.contains("   new-error  tools/call pay  (call 2, line 2, session "),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n       unfilled: cardToken\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("--fill cardToken=env:CARD_TOKEN"),
        "{stdout}"
    );
    // Following: the refund of the new payment is sent with the new server's id.
    assert!(
        stdout.contains("   same       tools/call refund  (call 3, line 3, session "),
        "{stdout}"
    );
    assert!(stdout.contains("       input.paymentId: pay_"), "{stdout}");
    assert!(
        stdout.contains(" (from call 2, structuredContent.paymentId)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("   changed    tools/call quote"),
        "{stdout}"
    );
    assert!(
        stdout.contains("       structuredContent.price: 12 → 15"),
        "{stdout}"
    );
    assert!(stdout.contains("   new-error  tools/call pay"), "{stdout}");
    assert!(
        stdout.contains("   gone-error tools/call refund"),
        "{stdout}"
    );
    // v2's tool surface: a tool gone and a new required argument break, the rest does not.
    assert!(
        stdout.contains("   changed    tools/list  (call 6, line 6, session "),
        "{stdout}"
    );
    for change in [
        "breaking: tools[convert] removed",
        "breaking: tools[pay].inputSchema: required property \"idempotencyKey\" added",
        "compatible: tools[quote].description changed",
        "compatible: tools[refund].inputSchema: optional property \"reason\" added",
        "compatible: tools[balance] added",
    ] {
        assert!(
            stdout.contains(&format!("\n       {change}\n")),
            "{change}\n{stdout}"
        );
    }
    assert!(
        stdout.contains(
            "   surface: 2 breaking, 3 compatible\n   8 calls, 4 same, 2 changed, 1 new-error, 1 gone-error\n"
        ),
        "{stdout}"
    );
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(
        page.contains("<p id=\"surface\">surface: 2 breaking, 3 compatible</p>"),
        "{page}"
    );
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("tok_live_"), "{text}");
    // The five calls, then the three lists the client read first, written as the session ended.
    let methods: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["method"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        methods,
        [
            "tools/call",
            "tools/call",
            "tools/call",
            "resources/read",
            "prompts/get",
            "tools/list",
            "resources/list",
            "prompts/list"
        ]
    );
}

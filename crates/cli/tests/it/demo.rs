//! `calltape demo` end to end: the newcomer's first command.

use std::os::unix::fs::PermissionsExt;

use crate::support::calltape;

#[test]
fn the_demo_records_checks_and_reports_the_three_changes() {
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
        stdout.contains("5 lines, mode 0600, secret present: no"),
        "{stdout}"
    );
    assert!(stdout.contains("\"cardToken\":\"[REDACTED]\""), "{stdout}");
    assert!(
        stdout.contains("5 calls, 5 same, 0 changed, 0 new-error, 0 gone-error  → exit 0"),
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
    assert!(
        stdout.contains("5 calls, 2 same, 1 changed, 1 new-error, 1 gone-error"),
        "{stdout}"
    );
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("tok_live_"), "{text}");
    assert_eq!(text.lines().count(), 5);
}

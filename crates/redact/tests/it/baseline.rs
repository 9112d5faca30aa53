//! The bench's `regex` baseline does the work calltape does: on the bench's
//! inputs both give the same output, so the bench compares like with like.

use calltape_redact::Redactor;
use serde_json::Value;

use crate::bench_support::{
    ADVERSARIAL, RegexRedactor, adversarial, credential_dense, log_prose, recording_body,
    recording_jsonl,
};

const MB: usize = 1 << 20;

/// The first line where `a` and `b` differ, for a readable failure.
fn first_difference(a: &str, b: &str) -> String {
    a.lines()
        .zip(b.lines())
        .find(|(x, y)| x != y)
        .map_or_else(String::new, |(x, y)| format!("\n  {x}\n  {y}"))
}

#[test]
fn the_baseline_and_calltape_agree_on_the_bench_inputs() {
    let redactor = Redactor::new();
    let baseline = RegexRedactor::new();
    let mut inputs = vec![
        ("recording_jsonl", recording_jsonl(MB)),
        ("log_prose", log_prose(MB)),
        ("credential_dense", credential_dense(MB)),
    ];
    for (name, unit) in ADVERSARIAL {
        inputs.push((name, adversarial(unit, 256 * 1024)));
    }
    for (name, input) in &inputs {
        let ours = redactor.redact_text(input);
        let theirs = baseline.redact(input);
        assert!(
            ours == theirs,
            "{name}: calltape and the baseline differ{}",
            first_difference(&ours, &theirs)
        );
    }
    // The dense input does hold credentials for both to find.
    assert!(redactor.redact_text(&inputs[2].1).contains("[REDACTED]"));
}

#[test]
fn the_baseline_applies_each_rule() {
    let b = RegexRedactor::new();
    let cases = [
        (
            "Authorization: Bearer abc123",
            "Authorization: Bearer [REDACTED]",
        ),
        (
            "a Bearer token goes in the header",
            "a Bearer token goes in the header",
        ),
        ("postgres://u:p@h/db", "postgres://[REDACTED]@h/db"),
        ("\"password\": \"x\"", "\"password\": \"[REDACTED]\""),
        ("TOKEN=abc&x=1", "TOKEN=[REDACTED]&x=1"),
        (
            "key ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "key [REDACTED]",
        ),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln ok",
            "jwt [REDACTED] ok",
        ),
    ];
    let redactor = Redactor::new();
    for (input, expected) in cases {
        assert_eq!(b.redact(input), expected, "{input:?}");
        assert_eq!(redactor.redact_text(input), expected, "{input:?}");
    }
}

#[test]
fn generated_inputs_have_the_size_asked_for() {
    for input in [
        recording_jsonl(10_000),
        recording_body(10_000),
        log_prose(10_000),
        credential_dense(10_000),
    ] {
        assert!((10_000..12_000).contains(&input.len()), "{}", input.len());
    }
    let body: Value = serde_json::from_str(&recording_body(10_000)).expect("valid JSON");
    assert!(body["result"]["records"].is_array());
}

use super::*;
use calltape_recorder::mcp::{CallError, ErrorCode};
use serde_json::json;

#[test]
fn presets_mask_what_servers_print_and_nothing_else() {
    // (masks, text, masked): a row per case, read top to bottom.
    let rows: &[(&[&str], &str, &str)] = &[
        // RFC 3339 and ISO 8601.
        (&["timestamp"], "at 2026-12-01T10:15:30Z.", "at [MASKED]."),
        (&["timestamp"], "2026-12-01T10:15:30.123Z", "[MASKED]"),
        (
            &["timestamp"],
            "2026-12-01T10:15:30.123456789+05:30",
            "[MASKED]",
        ),
        (&["timestamp"], "2026-12-01t10:15:30z", "[MASKED]"),
        (&["timestamp"], "2026-12-01T10:15:30-0800 ok", "[MASKED] ok"),
        (&["timestamp"], "2026-12-01T10:15", "[MASKED]"),
        (&["timestamp"], "2026-12-01 10:15:30,5", "[MASKED]"),
        (&["timestamp"], "2026-12-01 10:15:30.123456", "[MASKED]"),
        (
            &["timestamp"],
            r#"{"at":"2026-12-01T10:15:30Z"}"#,
            r#"{"at":"[MASKED]"}"#,
        ),
        // HTTP dates (IMF-fixdate) and RFC 5322.
        (
            &["timestamp"],
            "Date: Tue, 01 Dec 2026 10:15:30 GMT",
            "Date: [MASKED]",
        ),
        (&["timestamp"], "Tue, 1 Dec 2026 10:15:30 +0000", "[MASKED]"),
        // JavaScript's Date.prototype.toString(), as the filesystem reference server prints it.
        (
            &["timestamp"],
            "created: Tue Dec 01 2026 10:15:30 GMT+0000 (Coordinated Universal Time)\nsize: 6",
            "created: [MASKED]\nsize: 6",
        ),
        (
            &["timestamp"],
            "Wed Dec 02 2026 01:53:20 GMT-0330 (Newfoundland Standard Time)",
            "[MASKED]",
        ),
        (
            &["timestamp"],
            "Wed Dec 02 2026 06:23:20 GMT+0100 (Mitteleuropäische Normalzeit)",
            "[MASKED]",
        ),
        (
            &["timestamp"],
            "Wed Dec 02 2026 06:23:20 GMT+0100",
            "[MASKED]",
        ),
        // C's asctime.
        (&["timestamp"], "Tue Dec  1 10:15:30 2026", "[MASKED]"),
        // Not timestamps: a date alone, a version, a time alone, digits that run on.
        (&["timestamp"], "due 2026-12-01", "due 2026-12-01"),
        (&["timestamp"], "version 2026.8.31", "version 2026.8.31"),
        (&["timestamp"], "at 10:15:30", "at 10:15:30"),
        (
            &["timestamp"],
            "12026-12-01T10:15:30Z",
            "12026-12-01T10:15:30Z",
        ),
        (&["timestamp"], "Tuesday Dec 01", "Tuesday Dec 01"),
        // UUIDs.
        (
            &["uuid"],
            "id 3f9a1c2e-77aa-4b1c-9d2e-0123456789ab.",
            "id [MASKED].",
        ),
        (
            &["uuid"],
            "3F9A1C2E-77AA-4B1C-9D2E-0123456789AB",
            "[MASKED]",
        ),
        (
            &["uuid"],
            "3f9a1c2e-77aa-4b1c-9d2e-0123456789abc",
            "3f9a1c2e-77aa-4b1c-9d2e-0123456789abc",
        ),
        (&["uuid"], "3f9a1c2e", "3f9a1c2e"),
        // Regular expressions, several at once, and a match of nothing.
        (
            &[r"req-[0-9]+", "uuid"],
            "req-7 and req-12",
            "[MASKED] and [MASKED]",
        ),
        (&[r"x*"], "abc", "abc"),
        (&[r"(?i)ETAG: \S+"], "etag: W/1", "[MASKED]"),
        // A regular expression named like no preset is a regular expression.
        (&["timestamps"], "timestamps here", "[MASKED] here"),
        (&[], "2026-12-01T10:15:30Z", "2026-12-01T10:15:30Z"),
    ];
    for (masks, text, masked) in rows {
        let mask = Mask::new(masks.iter().copied()).unwrap();
        assert_eq!(mask.mask_text(text), *masked, "{masks:?} on {text:?}");
    }
}

#[test]
fn a_mask_that_does_not_compile_is_named() {
    for (masks, named) in [
        (&["timestamp", "[a-"][..], "`[a-`"),
        (&["(unclosed"][..], "`(unclosed`"),
    ] {
        let error = Mask::new(masks.iter().copied()).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!(
                "cannot compile the mask {named} (a regular expression"
            )),
            "{error}"
        );
        assert!(error.contains("preset: timestamp, uuid"), "{error}");
    }
}

#[test]
fn strings_are_masked_at_any_depth_and_inside_json_text() {
    let mask = Mask::new(["timestamp"]).unwrap();
    let mut answer = json!({
        "content": [{"type": "text", "text": "{\"at\": \"2026-12-01T10:15:30Z\", \"n\": 1}"}],
        "structuredContent": {"list": [{"at": "2026-12-01T10:15:30Z"}, 5, null]},
        "plain": "no date",
        "json": "{\"n\": 1}",
    });
    assert!(mask.mask_value(&mut answer));
    assert_eq!(
        answer,
        json!({
            "content": [{"type": "text", "text": "{\"at\":\"[MASKED]\",\"n\":1}"}],
            "structuredContent": {"list": [{"at": "[MASKED]"}, 5, null]},
            "plain": "no date",
            // Written back only when something in it was masked.
            "json": "{\"n\": 1}",
        })
    );
    let mut untouched = json!({"a": ["b", 1]});
    assert!(!mask.mask_value(&mut untouched));

    let mut error = Outcome::Error(CallError::new(
        ErrorCode::Number(-32603),
        Some("failed at 2026-12-01T10:15:30Z".into()),
    ));
    mask.mask_outcome(&mut error);
    let Outcome::Error(error) = error else {
        unreachable!()
    };
    assert_eq!(error.message.as_deref(), Some("failed at [MASKED]"));
}

/// (name, text) answers, as a file-info tool gives them.
fn info(at: &str) -> Outcome {
    Outcome::Answer(json!({
        "content": [{"type": "text", "text": format!("created: {at}\nsize: 6")}],
        "structuredContent": {"content": format!("created: {at}\nsize: 6"), "etag": at},
    }))
}

#[test]
fn rules_apply_to_the_calls_they_name_on_top_of_the_rules_for_every_call() {
    let recorded = info("Tue Dec 01 2026 10:15:30 GMT+0000 (Coordinated Universal Time)");
    let replayed = info("Wed Dec 02 2026 11:00:00 GMT+0000 (Coordinated Universal Time)");
    let comparer = Comparer::new();
    let none = Mask::default();
    let timestamp = Mask::new(["timestamp"]).unwrap();
    let rules = CallRules::builder()
        .rule(CallRule::new("get_file_*").mask(["timestamp"]))
        .rule(CallRule::new("get_file_info").ignore(["structuredContent.etag"]))
        .rule(CallRule::new("file:///tmp/*").ignore(["**"]))
        .build()
        .unwrap();
    let empty = CallRules::new();
    // (global mask, rules, call name, the paths that still differ)
    let rows: &[(&Mask, &CallRules, &str, &[&str])] = &[
        (
            &none,
            &empty,
            "get_file_info",
            &[
                "content.0.text",
                "structuredContent.content",
                "structuredContent.etag",
            ],
        ),
        (&timestamp, &empty, "get_file_info", &[]),
        (&none, &rules, "get_file_info", &[]),
        (&none, &rules, "get_file_size", &[]),
        (
            &none,
            &rules,
            "read_file",
            &[
                "content.0.text",
                "structuredContent.content",
                "structuredContent.etag",
            ],
        ),
        (&none, &rules, "file:///tmp/a/b.txt", &[]),
    ];
    for (mask, rules, name, paths) in rows {
        let mut scopes = Scopes::new(&comparer, mask, rules);
        let comparison = scopes.compare("tools/call", name, &recorded, &replayed);
        let found: Vec<&str> = comparison
            .differences
            .iter()
            .map(|d| d.path.as_str())
            .collect();
        assert_eq!(found, *paths, "{name} with {mask:?}");
    }
    // A difference the masks leave is reported with both texts masked.
    let changed = Outcome::Answer(json!({
        "content": [{"type": "text", "text": "created: Wed Dec 02 2026 11:00:00 GMT+0000 (UTC)\nsize: 7"}],
        "structuredContent": {"content": "created: Tue Dec 01 2026 10:15:30 GMT+0000 (Coordinated Universal Time)\nsize: 6", "etag": "x"},
    }));
    let mut scopes = Scopes::new(&comparer, &none, &rules);
    let comparison = scopes.compare("tools/call", "get_file_info", &recorded, &changed);
    assert_eq!(comparison.differences.len(), 1, "{comparison:?}");
    assert_eq!(comparison.differences[0].path, "content.0.text");
    assert_eq!(
        comparison.differences[0].replayed,
        Some(json!("created: [MASKED]\nsize: 7"))
    );
}

#[test]
fn a_rule_that_does_not_compile_is_named() {
    let rows: [(CallRule, &str); 3] = [
        (
            CallRule::new("get_[file"),
            "cannot match calls by `get_[file`: ",
        ),
        (
            CallRule::new("a").mask(["("]),
            "cannot compile the mask `(`",
        ),
        (
            CallRule::new("a").ignore(["a.[b"]),
            "cannot ignore answer paths: ",
        ),
    ];
    for (rule, message) in rows {
        let error = CallRules::builder()
            .rule(rule)
            .build()
            .unwrap_err()
            .to_string();
        assert!(error.starts_with(message), "{error}");
    }
}

#[test]
fn public_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Mask>();
    check::<CallRules>();
    check::<CallRule>();
}

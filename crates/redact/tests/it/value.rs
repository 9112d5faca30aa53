//! Values and JSON text of any depth and size, and the JSON rows of
//! `table_json.rs` through every entry point.

use calltape_redact::{REDACTED, Redactor};
use serde_json::{Value, json};

use crate::bound::written;
use crate::table_json;

/// Drops a deep value without recursion.
fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

fn deep_value(depth: usize, leaf: Value) -> Value {
    let mut v = leaf;
    for i in 0..depth {
        v = if i % 3 == 0 {
            Value::Array(vec![json!(1), v])
        } else {
            Value::Object(
                [("level".to_owned(), v), ("n".to_owned(), json!(i))]
                    .into_iter()
                    .collect(),
            )
        };
    }
    v
}

/// Follows the path down to the leaf without recursion.
fn leaf(mut v: &Value) -> &Value {
    loop {
        v = match v {
            Value::Array(items) if items.len() == 2 => &items[1],
            Value::Object(map) if map.contains_key("level") => &map["level"],
            other => return other,
        };
    }
}

#[test]
fn secrets_thousands_of_levels_deep_are_redacted_in_values() {
    let redactor = Redactor::new();
    let mut v = deep_value(
        20_000,
        json!({"password": "hunter2", "note": "Bearer abc123def"}),
    );
    let copy = redactor.redacted_value(&v);
    redactor.redact_value(&mut v);
    for out in [&v, &copy] {
        assert_eq!(
            leaf(out),
            &json!({"password": REDACTED, "note": "Bearer [REDACTED]"})
        );
    }
    dismantle(copy);

    // A deep value under a redacted name is replaced, and dropped without recursion.
    let mut w = json!({"secret": null, "ok": 1});
    w["secret"] = deep_value(50_000, json!(0));
    redactor.redact_value(&mut w);
    assert_eq!(w, json!({"secret": REDACTED, "ok": 1}));
    dismantle(v);
}

fn nested_text(depth: usize, inner: &str) -> String {
    let mut s = String::new();
    for _ in 0..depth {
        s.push_str("{\"a\":[1,");
    }
    s.push_str(inner);
    for _ in 0..depth {
        s.push_str("]}");
    }
    s
}

#[test]
fn secrets_thousands_of_levels_deep_are_redacted_in_json_text() {
    let redactor = Redactor::new();
    let input = nested_text(
        20_000,
        r#"{"token":"abc","t":"sk-abcdefghijklmnopqrstuvwxyz"}"#,
    );
    let want = nested_text(20_000, r#"{"token":"[REDACTED]","t":"[REDACTED]"}"#);
    assert_eq!(redactor.redact_json_text(&input), want);
    assert_eq!(redactor.redact_text(&input), want);

    let input = nested_text(20_000, r#"{"ok":1}"#).replacen("\"a\"", "\"apiKey\"", 1);
    assert_eq!(
        redactor.redact_json_text(&input),
        r#"{"apiKey":"[REDACTED]"}"#
    );

    // Unbalanced: not JSON, so the text rules run and nothing blows up.
    let open = "[".repeat(100_000) + "password=x";
    assert!(redactor.redact_text(&open).ends_with("password=[REDACTED]"));
}

#[test]
fn arrays_at_any_depth_including_lists_of_lists() {
    let redactor = Redactor::new();
    let v = json!([[[{"apiKey": 1}], [[{"b": [{"secret": [[1]]}]}]]], "x"]);
    assert_eq!(
        redactor.redacted_value(&v),
        json!([[[{"apiKey": REDACTED}], [[{"b": [{"secret": REDACTED}]}]]], "x"])
    );
}

#[test]
fn json_inside_strings_inside_json_is_redacted_and_stays_valid() {
    let redactor = Redactor::new();
    let inner = json!({"apiKey": "k", "list": [{"password": "p"}], "note": "see https://u:p@h/x"});
    let doc = json!({"content": [{"type": "text", "text": inner.to_string()}], "structuredContent": inner});
    let text = doc.to_string();
    let out = redactor.redact_json_text(&text);
    assert!(
        !out.contains("\\\"k\\\"") && !out.contains("\\\"p\\\"") && !out.contains("u:p@"),
        "{out}"
    );
    let parsed: Value = serde_json::from_str(&out).expect("valid JSON");
    let content: Value = serde_json::from_str(parsed["content"][0]["text"].as_str().expect("text"))
        .expect("valid inner JSON");
    assert_eq!(content, parsed["structuredContent"]);
    assert_eq!(content["apiKey"], REDACTED);
    assert_eq!(content["note"], "see https://[REDACTED]@h/x");
}

#[test]
fn big_recording_shaped_documents_round_trip() {
    let redactor = Redactor::new();
    let mut lines = String::new();
    for i in 0..500 {
        let rec = json!({
            "v": 1, "at": "2026-11-29T20:46:45.123Z", "session": "3f9a1c2e",
            "method": "tools/call", "name": "quote",
            "input": {"symbol": "ACME", "apiKey": format!("key-{i}"), "maxTokens": i},
            "answer": {"content": [{"type": "text", "text": format!("price {i} Bearer tok{i}abc")}]},
            "durationMs": 12.4
        });
        lines.push_str(&rec.to_string());
        lines.push('\n');
    }
    let out = redactor.redact_json_text(&lines);
    assert_eq!(out.lines().count(), 500);
    for (i, line) in out.lines().enumerate() {
        let v: Value = serde_json::from_str(line).expect("valid line");
        assert_eq!(v["input"]["apiKey"], REDACTED);
        assert_eq!(v["input"]["maxTokens"], i);
        assert_eq!(
            v["answer"]["content"][0]["text"],
            format!("price {i} Bearer [REDACTED]")
        );
    }
}

#[test]
fn json_rows_hold_through_redact_text_and_the_writer() {
    let redactor = Redactor::new();
    let mut checked = 0;
    for (row, (mode, input, expected)) in table_json::ROWS.iter().enumerate() {
        if *mode != "json" {
            continue;
        }
        assert_eq!(
            redactor.redact_text(input),
            *expected,
            "row {row}: redact_text"
        );
        for size in [1, 7, 64, input.len()] {
            assert_eq!(
                written(input, size),
                *expected,
                "row {row}: the writer, chunks of {size}"
            );
        }
        checked += 1;
    }
    assert!(checked > 30, "{checked} rows");
}

#[test]
fn keys_in_json_nested_in_strings_are_replaced_at_every_depth() {
    // JSON written into a string, and that into a string, ten levels deep:
    // JSON in a string is read as JSON down to seven strings deep, and by the
    // text rules alone below. The secret key goes at every depth, through
    // every entry point.
    let redactor = Redactor::new();
    let secret = "ghp_R7fK2xV9mP4rT8wL3zN6bQ1yH5cJ0dS8aE2u";
    let mut doc = json!({ format!("card {secret}"): "stored", "Bearer abc123def456": 1 });
    for level in 1..=10 {
        doc = json!({ "text": doc.to_string(), "n": level });
        let text = doc.to_string();
        let outs = [
            redactor.redact_json_text(&text).into_owned(),
            redactor.redact_text(&text).into_owned(),
            redactor.redacted_value(&doc).to_string(),
            written(&text, 5),
        ];
        for (i, out) in outs.iter().enumerate() {
            assert!(
                !out.contains("R7fK2xV9mP4rT8wL3zN6") && !out.contains("abc123def456"),
                "level {level}, entry point {i}: {out}"
            );
            // Read as JSON, the keys become placeholders.
            if level < 8 {
                assert!(
                    out.contains("[REDACTED:2]"),
                    "level {level}, entry point {i}: {out}"
                );
            }
        }
    }
}

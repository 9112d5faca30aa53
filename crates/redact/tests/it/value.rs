//! Values and JSON text of any depth and size.

use calltape_redact::{REDACTED, Redactor};
use serde_json::{Value, json};

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

use super::*;
use calltape_recorder::mcp::ErrorCode;
use serde_json::json;

fn answer(v: Value) -> Outcome {
    Outcome::Answer(v)
}

fn error(code: Value, message: Option<&str>) -> Outcome {
    let code = match code {
        Value::Number(n) => ErrorCode::Number(n.as_i64().unwrap()),
        Value::String(s) => ErrorCode::Text(s),
        _ => unreachable!(),
    };
    Outcome::Error(CallError::new(code, message.map(str::to_owned)))
}

/// (ignore globs, shape, recorded, replayed, expected "status: path recorded → replayed; …")
type Case = (&'static str, bool, Outcome, Outcome, &'static str);

fn render(c: &Comparison) -> String {
    let show = |v: &Option<Value>| v.as_ref().map_or("-".to_owned(), Value::to_string);
    let mut out = c.status.to_string();
    for d in &c.differences {
        match d.item_change() {
            Some(change) => out.push_str(&format!("; {} {change}", d.path)),
            None => out.push_str(&format!(
                "; {} {} → {}",
                d.path,
                show(&d.recorded),
                show(&d.replayed)
            )),
        }
    }
    out
}

#[test]
fn comparison_table() {
    // One piece: a data table, a row per case, read top to bottom.
    let quote = |price: i64, at: &str| {
        json!({"content": [{"type": "text", "text": format!("{{\"price\":{price},\"quotedAt\":\"{at}\"}}")}],
               "structuredContent": {"price": price, "quotedAt": at}})
    };
    let cases: Vec<Case> = vec![
        (
            "",
            false,
            answer(json!({"a": 1})),
            answer(json!({"a": 1})),
            "same",
        ),
        (
            "",
            false,
            answer(json!({"a": 1})),
            answer(json!({"a": 1.0})),
            "same",
        ),
        (
            "",
            false,
            answer(quote(12, "t1")),
            answer(quote(15, "t1")),
            "changed; content.0.text.price 12 → 15; structuredContent.price 12 → 15",
        ),
        (
            "**.quotedAt",
            false,
            answer(quote(12, "t1")),
            answer(quote(12, "t2")),
            "same",
        ),
        (
            "",
            false,
            answer(quote(12, "t1")),
            answer(quote(12, "t2")),
            "changed; content.0.text.quotedAt \"t1\" → \"t2\"; structuredContent.quotedAt \"t1\" → \"t2\"",
        ),
        (
            "structuredContent.quotedAt",
            false,
            answer(quote(12, "t1")),
            answer(quote(12, "t2")),
            "changed; content.0.text.quotedAt \"t1\" → \"t2\"",
        ),
        (
            "content.*.text",
            false,
            answer(quote(12, "t1")),
            answer(quote(12, "t2")),
            "changed; structuredContent.quotedAt \"t1\" → \"t2\"",
        ),
        (
            "content.**, structuredContent",
            false,
            answer(quote(12, "t1")),
            answer(quote(13, "t2")),
            "same",
        ),
        (
            "",
            false,
            answer(json!({"a": [1, 2]})),
            answer(json!({"a": [1]})),
            "changed; a.1 2 → -",
        ),
        (
            "",
            false,
            answer(json!({"a": 1})),
            answer(json!({"a": 1, "b": 2})),
            "changed; b - → 2",
        ),
        (
            "",
            false,
            answer(json!({"token": "[REDACTED]"})),
            answer(json!({"token": {"x": 1}})),
            "same",
        ),
        (
            "",
            false,
            answer(json!({"text": "Bearer [REDACTED] for [REDACTED]."})),
            answer(json!({"text": "Bearer abc for bob."})),
            "same",
        ),
        (
            "",
            false,
            answer(json!({"text": "Bearer [REDACTED] for [REDACTED]."})),
            answer(json!({"text": "Basic abc for bob."})),
            "changed; text \"Bearer [REDACTED] for [REDACTED].\" → \"Basic abc for bob.\"",
        ),
        (
            "",
            false,
            answer(json!([1])),
            answer(json!("x")),
            "changed;  [1] → \"x\"",
        ),
        (
            "",
            true,
            answer(json!({"a": 1, "b": ["x"], "c": "{\"d\":1}"})),
            answer(json!({"a": 2, "b": ["y", "z"], "c": "{\"d\":7}"})),
            "same",
        ),
        (
            "",
            true,
            answer(json!({"a": 1, "b": [{"k": 1}], "c": "{\"d\":1}"})),
            answer(json!({"a": "1", "b": [{"k": 2}, {"j": 1}], "c": "{\"e\":1}"})),
            "changed; a 1 → \"1\"; b.1.k 1 → -; b.1.j - → 1; c.d 1 → -; c.e - → 1",
        ),
        (
            "",
            false,
            answer(json!({})),
            error(json!("tool_error"), Some("no")),
            "new-error; error - → {\"code\":\"tool_error\",\"message\":\"no\"}",
        ),
        (
            "",
            false,
            error(json!(-32602), Some("bad")),
            answer(json!({})),
            "gone-error; error {\"code\":-32602,\"message\":\"bad\"} → -",
        ),
        (
            "",
            false,
            error(json!(-32602), Some("bad")),
            error(json!(-32602), Some("bad")),
            "same",
        ),
        (
            "",
            false,
            error(json!(-32602), Some("bad")),
            error(json!(-32601), Some("bad")),
            "changed; error.code -32602 → -32601",
        ),
        (
            "",
            false,
            error(json!(-32602), Some("bad")),
            error(json!(-32602), Some("worse")),
            "changed; error.message \"bad\" → \"worse\"",
        ),
        (
            "items.1, **.a/b",
            false,
            answer(json!({"items": [1, 2, 3], "x": {"a/b": 1, "c": 1}})),
            answer(json!({"items": [0, 7, 3], "x": {"a/b": 2, "c": 2}})),
            "changed; items.0 1 → 0; x.c 1 → 2",
        ),
        (
            "**.c*",
            false,
            answer(json!({"x": {"a": 1, "cd": 1}})),
            answer(json!({"x": {"a": 2, "cd": 2}})),
            "changed; x.a 1 → 2",
        ),
        (
            "error.message",
            false,
            error(json!(-32602), Some("bad")),
            error(json!(-32602), Some("worse")),
            "same",
        ),
        (
            "",
            false,
            error(json!(-32603), None),
            error(json!(-32603), Some("id 1")),
            "same",
        ),
        (
            "",
            false,
            error(json!(-32603), Some("Internal error at 0x1f")),
            error(json!(-32603), Some("Internal error at 0x2e")),
            "same",
        ),
        (
            "",
            false,
            error(json!(-32603), Some("Unknown tool: add")),
            error(json!(-32602), Some("Tool add not found")),
            "changed; error.code -32603 → -32602; error.message \"Unknown tool: add\" → \"Tool add not found\"",
        ),
        (
            "",
            false,
            error(json!("x"), Some("card [REDACTED] declined")),
            error(json!("x"), Some("card 4242 declined")),
            "same",
        ),
        (
            "",
            true,
            error(json!(1), Some("a")),
            error(json!(1), Some("b")),
            "same",
        ),
    ];
    for (globs, shape, recorded, replayed, want) in cases {
        let comparer = Comparer::builder()
            .ignore([globs])
            .shape(shape)
            .build()
            .unwrap();
        let got = render(&comparer.compare(&recorded, &replayed));
        assert_eq!(got, want, "ignore {globs:?}, shape {shape}");
    }
}

#[test]
fn lists_with_an_identity_are_compared_item_by_item_whatever_the_order() {
    // One piece: a data table (ignore globs, recorded, replayed, expected), a row per case.
    let tool = |name: &str, description: &str| {
        json!({"name": name, "description": description,
               "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}})
    };
    let old = json!({"tools": [tool("echo", "Echoes"), tool("add", "Adds"), tool("env", "Env")]});
    let new = json!({"tools": [tool("get-sum", "Sums"), tool("env", "Env"), tool("echo", "Echoes back")]});
    let cases: Vec<(&str, Value, Value, &str)> = vec![
        (
            "",
            old.clone(),
            new.clone(),
            "changed; tools[echo].description \"Echoes\" → \"Echoes back\"; tools[add] removed; \
             tools[get-sum] added",
        ),
        (
            "",
            json!({"tools": [tool("a", "A"), tool("b", "B")]}),
            json!({"tools": [tool("b", "B"), tool("a", "A")]}),
            "same",
        ),
        (
            "tools[*].description, tools[add], tools[get-*]",
            old.clone(),
            new.clone(),
            "same",
        ),
        (
            "tools[echo]",
            old.clone(),
            new.clone(),
            "changed; tools[add] removed; tools[get-sum] added",
        ),
        (
            "tools.*.description",
            old.clone(),
            new.clone(),
            "changed; tools[add] removed; tools[get-sum] added",
        ),
        // Positions still name items: echo was first, get-sum is first now.
        (
            "tools.0",
            old.clone(),
            new.clone(),
            "changed; tools[add] removed",
        ),
        (
            "**[echo].description",
            old.clone(),
            new.clone(),
            "changed; tools[add] removed; tools[get-sum] added",
        ),
        (
            "",
            json!({"resources": [{"uri": "test://static/resource/1", "name": "R"}, {"uri": "test://static/resource/2", "name": "R"}]}),
            json!({"resources": [{"uri": "test://static/resource/2", "name": "R2"}]}),
            "changed; resources[test://static/resource/1] removed; resources[test://static/resource/2].name \"R\" → \"R2\"",
        ),
        (
            "resources[test://static/*].name",
            json!({"resources": [{"uri": "test://static/resource/2", "name": "R"}]}),
            json!({"resources": [{"uri": "test://static/resource/2", "name": "R2"}]}),
            "same",
        ),
        (
            "",
            json!({"prompts": [{"name": "p", "arguments": [{"name": "city"}, {"name": "state", "required": false}]}]}),
            json!({"prompts": [{"name": "p", "arguments": [{"name": "state", "required": true}, {"name": "city"}]}]}),
            "changed; prompts[p].arguments[state].required false → true",
        ),
        (
            "",
            json!({"resourceTemplates": [{"uriTemplate": "a://{id}", "name": "T"}]}),
            json!({"resourceTemplates": [{"uriTemplate": "b://{id}", "name": "T"}]}),
            "changed; resourceTemplates[a://{id}] removed; resourceTemplates[b://{id}] added",
        ),
        (
            "",
            json!({"items": [{"id": "o1", "n": 1}, {"id": "o2", "n": 2}]}),
            json!({"items": [{"id": "o2", "n": 2}, {"id": "o1", "n": 3}]}),
            "changed; items[o1].n 1 → 3",
        ),
        // No identity (a name twice, an item without one): by position, as before.
        (
            "",
            json!({"a": [{"name": "x", "v": 1}, {"name": "x", "v": 2}]}),
            json!({"a": [{"name": "x", "v": 2}, {"name": "x", "v": 2}]}),
            "changed; a.0.v 1 → 2",
        ),
        (
            "",
            json!({"content": [{"type": "text", "text": "a"}]}),
            json!({"content": [{"type": "text", "text": "b"}]}),
            "changed; content.0.text \"a\" → \"b\"",
        ),
        // Inside a text that holds JSON too.
        (
            "",
            json!({"content": [{"type": "text", "text": "{\"rows\":[{\"id\":\"r1\",\"n\":1},{\"id\":\"r2\",\"n\":1}]}"}]}),
            json!({"content": [{"type": "text", "text": "{\"rows\":[{\"id\":\"r2\",\"n\":1},{\"id\":\"r1\",\"n\":2}]}"}]}),
            "changed; content.0.text.rows[r1].n 1 → 2",
        ),
    ];
    for (globs, recorded, replayed, want) in cases {
        let comparer = Comparer::builder().ignore([globs]).build().unwrap();
        let got = render(&comparer.compare(&answer(recorded), &answer(replayed)));
        assert_eq!(got, want, "ignore {globs:?}");
    }
}

#[test]
fn secret_keys_redacted_on_the_recorded_side_match_any_key_left_on_the_replayed_side() {
    let cases: Vec<(Value, Value, &str)> = vec![
        (
            json!({"env": {"[REDACTED]": "[REDACTED]", "HOME": "/root"}}),
            json!({"env": {"sk-live-abc": "x", "HOME": "/root"}}),
            "same",
        ),
        (
            json!({"env": {"[REDACTED]": 1, "[REDACTED:2]": 2, "HOME": "/root"}}),
            json!({"env": {"k1": 1, "HOME": "/root"}}),
            "changed; env.[REDACTED:2] 2 → -",
        ),
        (
            json!({"env": {"[REDACTED]": 1}}),
            json!({"env": {"k1": 1, "k2": 2}}),
            "changed; env.k2 - → 2",
        ),
        (
            json!({"env": {"[REDACTED]": 1}}),
            json!({"env": {"k1": 5}}),
            "changed; env.k1 1 → 5",
        ),
        // Only the redactor's own keys stand for another.
        (
            json!({"env": {"[REDACTED:x]": 1}}),
            json!({"env": {"k1": 1}}),
            "changed; env.[REDACTED:x] 1 → -; env.k1 - → 1",
        ),
    ];
    for (recorded, replayed, want) in cases {
        let got = render(&Comparer::new().compare(&answer(recorded.clone()), &answer(replayed)));
        assert_eq!(got, want, "{recorded}");
    }
}

#[test]
fn an_error_that_came_or_went_keeps_the_answer_of_the_other_side() {
    let sum = json!({"content": [{"type": "text", "text": "The sum of 2 and 40 is 42."}]});
    let gone = error(json!(-32603), Some("Unknown tool: get-sum"));
    let comparison = Comparer::new().compare(&gone, &answer(sum.clone()));
    assert_eq!(comparison.status, Status::GoneError);
    assert_eq!(comparison.answer, Some(sum.clone()));
    assert_eq!(
        comparison.differences[0].recorded,
        Some(json!({"code": -32603, "message": "Unknown tool: get-sum"}))
    );
    let comparison = Comparer::new().compare(&answer(sum.clone()), &gone);
    assert_eq!(comparison.status, Status::NewError);
    assert_eq!(comparison.answer, Some(sum));
    let comparison = Comparer::new().compare(&gone, &gone);
    assert_eq!(comparison.answer, None);
}

#[test]
fn only_what_differs_by_protocol_era_is_set_aside() {
    // One piece: a data table (method, recorded, replayed, expected), a row per case.
    let stamp = json!({"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "2"}});
    let cases: Vec<(&str, Value, Value, &str)> = vec![
        (
            "tools/call",
            json!({"content": [], "resultType": "complete"}),
            json!({"content": []}),
            "same",
        ),
        (
            "tools/call",
            json!({"content": []}),
            json!({"content": [], "resultType": "complete", "_meta": stamp}),
            "same",
        ),
        (
            "tools/call",
            json!({"content": [], "_meta": {"k": 1}}),
            json!({"content": [], "_meta": {"k": 2, "io.modelcontextprotocol/serverInfo": {}}}),
            "changed; _meta.k 1 → 2",
        ),
        (
            "tools/call",
            json!({"content": []}),
            json!({"resultType": "input_required", "inputRequests": {}}),
            "changed; content [] → -; resultType \"complete\" → \"input_required\"; inputRequests - → {}",
        ),
        (
            "tools/call",
            json!({"structuredContent": {"resultType": "complete"}}),
            json!({"structuredContent": {}, "resultType": "complete"}),
            "changed; structuredContent.resultType \"complete\" → -",
        ),
        (
            "tools/call",
            json!({"content": [], "ttlMs": 1000}),
            json!({"content": [], "cacheScope": "public"}),
            "changed; ttlMs 1000 → -; cacheScope - → \"public\"",
        ),
        (
            "tools/list",
            json!({"tools": [], "ttlMs": 60000, "cacheScope": "public", "resultType": "complete"}),
            json!({"tools": [], "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}),
            "same",
        ),
        (
            "resources/read",
            json!({"contents": []}),
            json!({"contents": [], "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}),
            "same",
        ),
        (
            "tools/list",
            json!({"tools": [{"name": "a", "ttlMs": 1}]}),
            json!({"tools": [{"name": "a", "ttlMs": 2}], "ttlMs": 0}),
            "changed; tools[a].ttlMs 1 → 2",
        ),
    ];
    let comparer = Comparer::new();
    for (method, recorded, replayed, want) in cases {
        let got = render(&comparer.compare_call(method, &answer(recorded), &answer(replayed)));
        assert_eq!(got, want, "{method}");
    }
}

#[test]
fn redacted_patterns_match_any_text_in_place() {
    let cases = [
        ("[REDACTED]", "anything", true),
        ("[REDACTED]", "", true),
        ("a[REDACTED]b", "ab", true),
        ("a[REDACTED]b", "axxb", true),
        ("a[REDACTED]b", "axxbc", false),
        ("a[REDACTED]b[REDACTED]c", "a1b2b3c", true),
        ("a[REDACTED]bc[REDACTED]", "abc", true),
        ("ab[REDACTED]ba", "aba", false),
        ("x", "x", true),
        ("x", "y", false),
    ];
    for (pattern, text, want) in cases {
        assert_eq!(matches_pattern(pattern, text), want, "{pattern} ~ {text}");
    }
}

#[test]
fn a_bad_glob_is_refused_with_its_text_and_its_source() {
    use std::error::Error as _;
    let error = Comparer::builder().ignore(["a.[b"]).build().unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot ignore answer paths: invalid glob \"a.[b\": unclosed character class; missing \
         ']'; write a dot path where * is part of one key, ** any number of keys and [NAME] a list \
         item, such as messages.**.ts or tools[*].description"
    );
    let source = error.source().expect("the recorder's error is the source");
    assert!(source.to_string().starts_with("invalid glob"), "{source}");
}

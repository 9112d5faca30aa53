//! The classifier, by tables: a row per case, the lists (or schemas) before and after, and the
//! changes expected as reports write them.

use serde_json::{Value, json};

use super::*;
use crate::mcp::compare::Comparer;
use crate::mcp::report::CallReport;
use calltape_recorder::mcp::{CallError, ErrorCode};

/// The changes between two answers of `method`, as reports write them.
fn changes(method: &str, recorded: Value, replayed: Value) -> Vec<String> {
    let (r, p) = (Outcome::Answer(recorded), Outcome::Answer(replayed));
    compared(&Comparer::new(), method, &r, &p)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The surface changes of a call of `method`, as the replay classifies them: after `comparer`'s
/// comparison of the two outcomes.
fn compared(
    comparer: &Comparer,
    method: &str,
    recorded: &Outcome,
    replayed: &Outcome,
) -> Vec<SurfaceChange> {
    let comparison = comparer.compare_call(method, recorded, replayed);
    classify(method, &comparison, recorded, replayed)
}

/// A tool list of one tool `t` with these input and output schemas (`Value::Null`: none).
fn tool(input: Value, output: Value) -> Value {
    let mut tool = json!({"name": "t", "inputSchema": input});
    if !output.is_null() {
        tool["outputSchema"] = output;
    }
    json!({"tools": [tool]})
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

#[test]
fn input_schemas_narrowed_break_and_widened_do_not() {
    let string = json!({"type": "string"});
    let opts = |properties: Value, required: &[&str]| {
        json!({"type": "object", "properties": {"o": {"$ref": "#/$defs/Opts"}},
               "$defs": {"Opts": object(properties, required)}})
    };
    let node = |v: &str| {
        json!({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}, "v": {"type": v}}}}})
    };
    let rows: Vec<(&str, Value, Value, Vec<&str>)> = vec![
        (
            "a required property added",
            object(json!({"m": string}), &["m"]),
            object(json!({"m": string, "mode": string}), &["m", "mode"]),
            vec![r#"breaking: tools[t].inputSchema: required property "mode" added"#],
        ),
        (
            "an optional property added",
            object(json!({"m": string}), &[]),
            object(json!({"m": string, "note": string}), &[]),
            vec![r#"compatible: tools[t].inputSchema: optional property "note" added"#],
        ),
        (
            "a property removed",
            object(json!({"m": string, "x": string}), &[]),
            object(json!({"m": string}), &[]),
            vec![r#"breaking: tools[t].inputSchema: property "x" removed"#],
        ),
        (
            "a property made required, another optional",
            object(json!({"a": string, "b": string}), &["a"]),
            object(json!({"a": string, "b": string}), &["b"]),
            vec![
                r#"breaking: tools[t].inputSchema: property "b" made required"#,
                r#"compatible: tools[t].inputSchema: property "a" made optional"#,
            ],
        ),
        (
            "a number narrowed to an integer",
            object(json!({"n": {"type": "number"}}), &[]),
            object(json!({"n": {"type": "integer"}}), &[]),
            vec![
                "breaking: tools[t].inputSchema.properties.n: type narrowed from number to integer",
            ],
        ),
        (
            "an integer widened to a number",
            object(json!({"n": {"type": "integer"}}), &[]),
            object(json!({"n": {"type": "number"}}), &[]),
            vec![
                "compatible: tools[t].inputSchema.properties.n: type widened from integer to number",
            ],
        ),
        (
            "a type changed to another",
            object(json!({"n": string}), &[]),
            object(json!({"n": {"type": "number"}}), &[]),
            vec!["breaking: tools[t].inputSchema.properties.n: type changed from string to number"],
        ),
        (
            "a type array without null (2020-12)",
            object(json!({"s": {"type": ["string", "null"]}}), &[]),
            object(json!({"s": string}), &[]),
            vec![
                "breaking: tools[t].inputSchema.properties.s: type narrowed from null or string to string",
            ],
        ),
        (
            "anyOf with null, the same as a type array",
            object(
                json!({"s": {"anyOf": [{"type": "string"}, {"type": "null"}]}}),
                &[],
            ),
            object(
                json!({"s": {"type": ["null", "string"], "description": "or none"}}),
                &[],
            ),
            vec!["compatible: tools[t].inputSchema.properties.s.description added"],
        ),
        (
            "anyOf with null dropped",
            object(
                json!({"s": {"anyOf": [{"type": "string"}, {"type": "null"}]}}),
                &[],
            ),
            object(json!({"s": string}), &[]),
            vec![
                "breaking: tools[t].inputSchema.properties.s: type narrowed from null or string to string",
            ],
        ),
        (
            "nullable (OpenAPI) added",
            object(json!({"s": string}), &[]),
            object(json!({"s": {"type": "string", "nullable": true}}), &[]),
            vec![
                "compatible: tools[t].inputSchema.properties.s: type widened from string to null or string",
            ],
        ),
        (
            "a required property added behind $ref into $defs",
            opts(json!({"a": string}), &[]),
            opts(json!({"a": string, "b": string}), &["b"]),
            vec![r#"breaking: tools[t].inputSchema.properties.o: required property "b" added"#],
        ),
        (
            "$defs renamed, the schema the same",
            opts(json!({"a": string}), &[]),
            json!({"type": "object", "properties": {"o": {"$ref": "#/definitions/Options"}},
                   "definitions": {"Options": object(json!({"a": string}), &[])}}),
            vec![],
        ),
        (
            "a schema that refers to itself",
            node("string"),
            node("number"),
            vec!["breaking: tools[t].inputSchema.properties.v: type changed from string to number"],
        ),
        (
            "enum values removed and added",
            object(
                json!({"mode": {"type": "string", "enum": ["fast", "slow"]}}),
                &[],
            ),
            object(
                json!({"mode": {"type": "string", "enum": ["slow", "exact"]}}),
                &[],
            ),
            vec![
                r#"breaking: tools[t].inputSchema.properties.mode: enum values removed: "fast""#,
                r#"compatible: tools[t].inputSchema.properties.mode: enum values added: "exact""#,
            ],
        ),
        (
            "values limited by const",
            object(json!({"v": {"type": "integer"}}), &[]),
            object(json!({"v": {"type": "integer", "const": 2}}), &[]),
            vec!["breaking: tools[t].inputSchema.properties.v: values limited to 2"],
        ),
        (
            "descriptions and titles",
            object(json!({"m": {"type": "string", "description": "a"}}), &[]),
            json!({"type": "object", "title": "T", "properties": {"m": {"type": "string", "description": "b"}}, "required": []}),
            vec![
                "compatible: tools[t].inputSchema.properties.m.description changed",
                "compatible: tools[t].inputSchema.title added",
            ],
        ),
        (
            "additional properties closed",
            object(json!({"m": string}), &[]),
            json!({"type": "object", "properties": {"m": string}, "required": [], "additionalProperties": false}),
            vec!["breaking: tools[t].inputSchema: additional properties no longer allowed"],
        ),
        (
            "additional properties opened, $schema added (server-memory's drift)",
            json!({"type": "object", "properties": {"m": string}, "additionalProperties": false}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"m": string}}),
            vec![
                "compatible: tools[t].inputSchema: additional properties allowed",
                "compatible: tools[t].inputSchema.$schema added",
            ],
        ),
        (
            "bounds tightened and loosened",
            object(
                json!({"s": {"type": "string", "maxLength": 10}, "n": {"type": "integer", "minimum": 5}}),
                &[],
            ),
            object(
                json!({"s": {"type": "string", "maxLength": 5}, "n": {"type": "integer", "minimum": 1}}),
                &[],
            ),
            vec![
                r#"breaking: tools[t].inputSchema.properties.s: constraint "maxLength" tightened from 10 to 5"#,
                r#"compatible: tools[t].inputSchema.properties.n: constraint "minimum" loosened from 5 to 1"#,
            ],
        ),
        (
            "a pattern added, a format removed",
            object(json!({"s": {"type": "string", "format": "email"}}), &[]),
            object(json!({"s": {"type": "string", "pattern": "^a"}}), &[]),
            vec![
                r#"breaking: tools[t].inputSchema.properties.s: constraint "pattern" added: "^a""#,
                r#"compatible: tools[t].inputSchema.properties.s: constraint "format" removed"#,
            ],
        ),
        (
            "array items narrowed",
            object(
                json!({"tags": {"type": "array", "items": {"type": ["string", "number"]}}}),
                &[],
            ),
            object(json!({"tags": {"type": "array", "items": string}}), &[]),
            vec![
                "breaking: tools[t].inputSchema.properties.tags.items: type narrowed from number or string to string",
            ],
        ),
        (
            "a nested object's property removed",
            object(
                json!({"o": object(json!({"a": string, "b": string}), &[])}),
                &[],
            ),
            object(json!({"o": object(json!({"a": string}), &[])}), &[]),
            vec![r#"breaking: tools[t].inputSchema.properties.o: property "b" removed"#],
        ),
        (
            "an alternative of anyOf removed",
            object(
                json!({"x": {"anyOf": [object(json!({"a": string}), &["a"]), object(json!({"b": string}), &["b"]), string]}}),
                &[],
            ),
            object(
                json!({"x": {"anyOf": [object(json!({"a": string}), &["a"]), string]}}),
                &[],
            ),
            vec!["breaking: tools[t].inputSchema.properties.x: anyOf: 1 alternative removed"],
        ),
        (
            "a property redacted in the recording matches anything",
            object(json!({"apiKey": "[REDACTED]"}), &["apiKey"]),
            object(
                json!({"apiKey": {"type": "string", "minLength": 8}}),
                &["apiKey"],
            ),
            vec![],
        ),
    ];
    for (case, old, new, want) in rows {
        let got = changes("tools/list", tool(old, Value::Null), tool(new, Value::Null));
        assert_eq!(got, want, "{case}");
    }
}

#[test]
fn output_schemas_widened_break_and_narrowed_do_not() {
    let sum = |properties: Value, required: &[&str]| object(properties, required);
    let number = json!({"type": "number"});
    let rows: Vec<(&str, Value, Value, Vec<&str>)> = vec![
        (
            "a property removed",
            sum(json!({"sum": number, "note": {"type": "string"}}), &["sum"]),
            sum(json!({"sum": number}), &["sum"]),
            vec![r#"breaking: tools[t].outputSchema: property "note" removed"#],
        ),
        (
            "a property added",
            sum(json!({"sum": number}), &["sum"]),
            sum(json!({"sum": number, "note": {"type": "string"}}), &["sum"]),
            vec![r#"compatible: tools[t].outputSchema: property "note" added"#],
        ),
        (
            "a type changed",
            sum(json!({"sum": number}), &[]),
            sum(json!({"sum": {"type": "string"}}), &[]),
            vec![
                "breaking: tools[t].outputSchema.properties.sum: type changed from number to string",
            ],
        ),
        (
            "a type widened to null",
            sum(json!({"sum": number}), &[]),
            sum(json!({"sum": {"type": ["number", "null"]}}), &[]),
            vec![
                "breaking: tools[t].outputSchema.properties.sum: type widened from number to null or number",
            ],
        ),
        (
            "a type narrowed",
            sum(json!({"sum": number}), &[]),
            sum(json!({"sum": {"type": "integer"}}), &[]),
            vec![
                "compatible: tools[t].outputSchema.properties.sum: type narrowed from number to integer",
            ],
        ),
        (
            "a property made optional",
            sum(json!({"sum": number}), &["sum"]),
            sum(json!({"sum": number}), &[]),
            vec![r#"breaking: tools[t].outputSchema: property "sum" made optional"#],
        ),
        (
            "enum values added",
            sum(json!({"state": {"enum": ["ok"]}}), &[]),
            sum(json!({"state": {"enum": ["ok", "partial"]}}), &[]),
            vec![
                r#"breaking: tools[t].outputSchema.properties.state: enum values added: "partial""#,
            ],
        ),
        (
            "additional properties opened",
            json!({"type": "object", "properties": {"sum": number}, "additionalProperties": false}),
            json!({"type": "object", "properties": {"sum": number}}),
            vec!["compatible: tools[t].outputSchema: additional properties allowed"],
        ),
    ];
    let input = object(json!({}), &[]);
    for (case, old, new, want) in rows {
        let got = changes(
            "tools/list",
            tool(input.clone(), old),
            tool(input.clone(), new),
        );
        assert_eq!(got, want, "{case}");
    }
    let with = tool(input.clone(), sum(json!({"sum": number}), &[]));
    let without = tool(input.clone(), Value::Null);
    assert_eq!(
        changes("tools/list", with.clone(), without.clone()),
        ["breaking: tools[t].outputSchema removed"]
    );
    assert_eq!(
        changes("tools/list", without, with),
        ["compatible: tools[t].outputSchema added"]
    );
}

#[test]
fn items_are_matched_by_identity_in_every_list() {
    let echo = |description: &str| json!({"name": "echo", "description": description, "inputSchema": {"type": "object"}});
    let named = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
    let argument = |name: &str, required: bool| json!({"name": name, "required": required});
    let rows: Vec<(&str, &str, Value, Value, Vec<&str>)> = vec![
        (
            "tools removed and added, never paired by position",
            "tools/list",
            json!({"tools": [echo("e"), named("add")]}),
            json!({"tools": [named("get-sum"), echo("e")]}),
            vec![
                "breaking: tools[add] removed",
                "compatible: tools[get-sum] added",
            ],
        ),
        (
            "the same tools in another order",
            "tools/list",
            json!({"tools": [echo("e"), named("add")]}),
            json!({"tools": [named("add"), echo("e")]}),
            vec![],
        ),
        (
            "a description, annotations and an execution field",
            "tools/list",
            json!({"tools": [echo("Echoes")]}),
            json!({"tools": [{"name": "echo", "description": "Echoes back", "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true}, "execution": {"taskSupport": "forbidden"}}]}),
            vec![
                "compatible: tools[echo].execution added",
                "compatible: tools[echo].annotations added",
                "compatible: tools[echo].description changed",
            ],
        ),
        (
            "a tool that runs only as a task now",
            "tools/list",
            json!({"tools": [named("research")]}),
            json!({"tools": [{"name": "research", "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "required"}}]}),
            vec!["breaking: tools[research]: runs only as a task now"],
        ),
        (
            "prompt arguments by name",
            "prompts/list",
            json!({"prompts": [{"name": "greet", "arguments": [argument("who", true), argument("tone", false), argument("style", false), argument("lang", true)]}]}),
            json!({"prompts": [{"name": "greet", "title": "Greet", "arguments": [argument("lang", false), argument("style", true), argument("who", true), argument("mood", true), argument("emoji", false)]}]}),
            vec![
                r#"breaking: prompts[greet]: argument "tone" removed"#,
                r#"breaking: prompts[greet]: argument "style" made required"#,
                r#"breaking: prompts[greet]: required argument "mood" added"#,
                r#"compatible: prompts[greet]: argument "lang" made optional"#,
                r#"compatible: prompts[greet]: optional argument "emoji" added"#,
                "compatible: prompts[greet].title added",
            ],
        ),
        (
            "prompts removed and added",
            "prompts/list",
            json!({"prompts": [{"name": "simple_prompt"}]}),
            json!({"prompts": [{"name": "simple-prompt"}]}),
            vec![
                "breaking: prompts[simple_prompt] removed",
                "compatible: prompts[simple-prompt] added",
            ],
        ),
        (
            "resources by URI",
            "resources/list",
            json!({"resources": [{"uri": "test://static/resource/1", "name": "Resource 1", "mimeType": "text/plain"}, {"uri": "test://a", "name": "a"}]}),
            json!({"resources": [{"uri": "test://a", "name": "A"}, {"uri": "demo://b", "name": "b"}]}),
            vec![
                "breaking: resources[test://static/resource/1] removed",
                "compatible: resources[test://a].name changed",
                "compatible: resources[demo://b] added",
            ],
        ),
        (
            "templates by URI template",
            "resources/templates/list",
            json!({"resourceTemplates": [{"uriTemplate": "test://static/resource/{id}", "name": "Static Resource"}]}),
            json!({"resourceTemplates": [{"uriTemplate": "demo://resource/dynamic/text/{index}", "name": "Dynamic Text Resource"}]}),
            vec![
                "breaking: resourceTemplates[test://static/resource/{id}] removed",
                "compatible: resourceTemplates[demo://resource/dynamic/text/{index}] added",
            ],
        ),
    ];
    for (case, method, recorded, replayed, want) in rows {
        assert_eq!(changes(method, recorded, replayed), want, "{case}");
    }
}

#[test]
fn a_list_that_errs_now_breaks_and_one_that_answers_now_does_not() {
    let missing = Outcome::Error(CallError::new(
        ErrorCode::Number(-32601),
        Some("Method not found".into()),
    ));
    let listed =
        Outcome::Answer(json!({"resources": [{"uri": "memory://graph", "name": "graph"}]}));
    let show = |changes: Vec<SurfaceChange>| -> Vec<String> {
        changes.iter().map(ToString::to_string).collect()
    };
    assert_eq!(
        show(compared(
            &Comparer::new(),
            "resources/list",
            &listed,
            &missing
        )),
        ["breaking: resources/list: answered with an error now (-32601 Method not found)"]
    );
    assert_eq!(
        show(compared(
            &Comparer::new(),
            "resources/list",
            &missing,
            &listed
        )),
        [
            "compatible: resources/list answered now, an error before",
            "compatible: resources[memory://graph] added",
        ]
    );
    // Only lists, and only when the comparison found a difference.
    assert!(compared(&Comparer::new(), "tools/call", &listed, &missing).is_empty());
    let same = Comparison {
        status: Status::Same,
        differences: Vec::new(),
        answer: None,
    };
    assert!(classify("resources/list", &same, &listed, &missing).is_empty());
}

#[test]
fn fail_on_breaking_passes_compatible_lists_only_and_the_summary_counts_each_change_once() {
    let change = |severity, text: &str| SurfaceChange::item(severity, text, "added");
    let call = |method: &str, status, surface: Vec<SurfaceChange>| {
        CallReport::new(1, 1, "s", method, "", status, vec![]).with_surface(surface)
    };
    let compatible = || vec![change(Severity::Compatible, "tools[b]")];
    let breaking = || {
        vec![
            change(Severity::Breaking, "tools[a]"),
            change(Severity::Compatible, "tools[b]"),
        ]
    };
    // (calls, fails with any, fails with breaking)
    let rows: Vec<(&str, Vec<CallReport>, bool, bool)> = vec![
        (
            "all same",
            vec![call("tools/call", Status::Same, vec![])],
            false,
            false,
        ),
        (
            "a list with compatible changes only, in two sessions",
            vec![
                call("tools/list", Status::Changed, compatible()),
                call("tools/list", Status::Changed, compatible()),
            ],
            true,
            false,
        ),
        (
            "a list that answers now",
            vec![call("resources/list", Status::GoneError, compatible())],
            true,
            false,
        ),
        (
            "a breaking change",
            vec![call("tools/list", Status::Changed, breaking())],
            true,
            true,
        ),
        (
            "a changed call answer beside a compatible list",
            vec![
                call("tools/list", Status::Changed, compatible()),
                call("tools/call", Status::Changed, vec![]),
            ],
            true,
            true,
        ),
        (
            "a list changed in no item (another order)",
            vec![call("prompts/list", Status::Changed, vec![])],
            true,
            false,
        ),
    ];
    for (case, calls, any, on_breaking) in rows {
        let report = ReplayReport::new("calls.jsonl", calls);
        assert_eq!(FailOn::Any.fails(&report), any, "{case}");
        assert_eq!(FailOn::Breaking.fails(&report), on_breaking, "{case}");
    }
    let report = ReplayReport::new(
        "calls.jsonl",
        vec![
            call("tools/list", Status::Changed, breaking()),
            call("tools/list", Status::Changed, breaking()),
        ],
    );
    assert_eq!(
        report.surface().to_string(),
        "surface: 1 breaking, 1 compatible"
    );
    assert_eq!("breaking".parse::<FailOn>(), Ok(FailOn::Breaking));
    assert_eq!(FailOn::default(), FailOn::Any);
    assert_eq!(
        "some".parse::<FailOn>(),
        Err("unknown rule \"some\"; use any or breaking".to_owned())
    );
}

#[test]
fn every_format_counts_the_surface_and_lists_each_change_with_its_list() {
    let surface = changes(
        "tools/list",
        json!({"tools": [{"name": "add"}, {"name": "echo", "inputSchema": object(json!({}), &[])}]}),
        json!({"tools": [{"name": "echo", "inputSchema": object(json!({"mode": {"type": "string"}}), &["mode"])},
            {"name": "get-sum"}]}),
    );
    assert_eq!(surface.len(), 3);
    let (r, p) = (
        Outcome::Answer(json!({"tools": [{"name": "add"}]})),
        Outcome::Answer(json!({"tools": [{"name": "get-sum"}]})),
    );
    let report = ReplayReport::new(
        "calls.jsonl",
        vec![
            CallReport::new(1, 1, "s", "tools/call", "echo", Status::Same, vec![]),
            CallReport::new(2, 7, "s", "tools/list", "", Status::Changed, vec![])
                .with_surface(compared(&Comparer::new(), "tools/list", &r, &p)),
        ],
    );
    let text = report.to_text(false);
    assert_eq!(
        text,
        "changed    tools/list  (call 2, line 7, session s)\n    \
         breaking: tools[add] removed\n    compatible: tools[get-sum] added\n\n\
         surface: 1 breaking, 1 compatible\n\
         2 calls, 1 same, 1 changed, 0 new-error, 0 gone-error\n"
    );
    let value = report.to_json();
    assert_eq!(value["surface"], json!({"breaking": 1, "compatible": 1}));
    assert_eq!(
        value["results"][1]["surface"],
        json!([{"severity": "breaking", "path": "tools[add]", "change": "tools[add] removed"},
               {"severity": "compatible", "path": "tools[get-sum]", "change": "tools[get-sum] added"}])
    );
    assert!(value["results"][0].get("surface").is_none());
    let xml = report.to_junit();
    assert!(
        xml.contains(r#"<properties><property name="surface" value="1 breaking, 1 compatible"/></properties>"#),
        "{xml}"
    );
    assert!(
        xml.contains("<system-out>breaking: tools[add] removed\n    compatible: tools[get-sum] added</system-out>"),
        "{xml}"
    );
    let page = report.to_html(&crate::ReportContext::default());
    assert!(
        page.contains("<p id=\"surface\">surface: 1 breaking, 1 compatible</p>"),
        "{page}"
    );
    assert!(
        page.contains("<li>breaking: tools[add] removed</li>"),
        "{page}"
    );
    // Without a surface change, every format reads as it did.
    let plain = ReplayReport::new("calls.jsonl", vec![report.calls[0].clone()]);
    assert!(!plain.to_text(false).contains("surface"));
    assert!(!plain.to_junit().contains("surface"));
    assert!(
        !plain
            .to_html(&crate::ReportContext::default())
            .contains("id=\"surface\"")
    );
}

#[test]
fn a_change_the_comparison_sets_aside_is_no_surface_change() {
    let recorded = Outcome::Answer(json!({"tools": [
        {"name": "echo", "inputSchema": object(json!({"a": {"type": "string"}}), &[])},
        {"name": "odd]name", "description": "old"},
        {"name": "add"},
    ]}));
    let replayed = Outcome::Answer(json!({"tools": [
        {"name": "echo", "inputSchema": object(json!({"a": {"type": "string"}}), &["a"])},
        {"name": "odd]name", "description": "new"},
    ]}));
    let show = |ignore: &[&str]| -> Vec<String> {
        let comparer = Comparer::builder()
            .ignore(ignore.iter().map(|g| (*g).to_owned()))
            .build()
            .expect("globs");
        compared(&comparer, "tools/list", &recorded, &replayed)
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    // (ignored, what is still classified)
    let rows: &[(&[&str], &[&str])] = &[
        (
            &[],
            &[
                "breaking: tools[add] removed",
                r#"breaking: tools[echo].inputSchema: property "a" made required"#,
                r"compatible: tools[odd\]name].description changed",
            ],
        ),
        (
            &["tools[echo]"],
            &[
                "breaking: tools[add] removed",
                r"compatible: tools[odd\]name].description changed",
            ],
        ),
        (
            &["tools[*].inputSchema", r"tools[odd\]name]"],
            &["breaking: tools[add] removed"],
        ),
        (&["tools"], &[]),
    ];
    for (ignore, want) in rows {
        assert_eq!(show(ignore), *want, "{ignore:?}");
    }
}

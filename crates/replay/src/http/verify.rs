//! `verify` mode: compares the structure (field names and types, not values) of a live answer with the
//! recorded one, to catch API drift.

use std::collections::BTreeMap;

use calltape_recorder::http::{Body, Content, Response, Stream};
use serde_json::Value;

/// Paths whose presence varies between answers of the same shape; never reported.
const IGNORED: &[&str] = &[
    "id",
    "created",
    "created_at",
    "model",
    "system_fingerprint",
    "usage",
    "service_tier",
    "x_groq",
];

/// The structural differences between the recorded and the live response, as readable lines.
pub(crate) fn compare(recorded: &Response, live: &Response) -> Vec<String> {
    let mut out = Vec::new();
    if recorded.status != live.status {
        out.push(format!(
            "status: recorded {}, live {}",
            recorded.status, live.status
        ));
    }
    match (&recorded.content, &live.content) {
        (Content::Body(a), Content::Body(b)) => compare_bodies(a, b, "body", &mut out),
        (Content::Stream(a), Content::Stream(b)) => compare_streams(a, b, &mut out),
        (Content::Body(_), Content::Stream(_)) => {
            out.push("recorded a whole body, live answer is a stream".into())
        }
        (Content::Stream(_), Content::Body(_)) => {
            out.push("recorded a stream, live answer is a whole body".into())
        }
    }
    out
}

fn compare_bodies(a: &Body, b: &Body, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Body::Json(a), Body::Json(b)) => compare_values(a, b, path, out),
        (Body::Empty, Body::Empty)
        | (Body::Text(_), Body::Text(_))
        | (Body::Binary(_), Body::Binary(_)) => {}
        _ => out.push(format!(
            "{path}: recorded {}, live {}",
            body_kind(a),
            body_kind(b)
        )),
    }
}

fn body_kind(b: &Body) -> &'static str {
    match b {
        Body::Empty => "no body",
        Body::Json(_) => "JSON",
        Body::Text(_) => "text",
        Body::Binary(_) => "binary",
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn ignored(path: &str) -> bool {
    let last = path.rsplit('.').next().unwrap_or(path);
    IGNORED.contains(&last) || last == "index"
}

fn compare_values(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    if ignored(path) || a.is_null() || b.is_null() {
        return;
    }
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            for (k, va) in ma {
                let p = format!("{path}.{k}");
                match mb.get(k) {
                    Some(vb) => compare_values(va, vb, &p, out),
                    None if !ignored(&p) => out.push(format!("{p}: missing in the live answer")),
                    None => {}
                }
            }
        }
        (Value::Array(xa), Value::Array(xb)) => {
            if let (Some(fa), Some(fb)) = (xa.first(), xb.first()) {
                compare_values(fa, fb, &format!("{path}[0]"), out);
            }
        }
        _ if type_name(a) != type_name(b) => out.push(format!(
            "{path}: type changed from {} to {}",
            type_name(a),
            type_name(b)
        )),
        _ => {}
    }
}

/// Groups a stream's events by their name (or their data's `type`), keeping the first data of each.
fn by_type(s: &Stream) -> BTreeMap<String, Option<Value>> {
    let mut m = BTreeMap::new();
    for e in &s.events {
        let data: Option<Value> = e.data.as_deref().and_then(|d| serde_json::from_str(d).ok());
        let name = e
            .event
            .clone()
            .or_else(|| {
                data.as_ref()
                    .and_then(|d| d.get("type").or_else(|| d.get("object")))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| "message".to_owned());
        m.entry(name).or_insert(data);
    }
    m
}

fn compare_streams(a: &Stream, b: &Stream, out: &mut Vec<String>) {
    if a.format != b.format {
        out.push(format!(
            "stream format: recorded {}, live {}",
            a.format.as_str(),
            b.format.as_str()
        ));
        return;
    }
    let ta = by_type(a);
    let tb = by_type(b);
    for (name, da) in &ta {
        match tb.get(name) {
            None => out.push(format!("stream event {name:?}: missing in the live answer")),
            Some(db) => {
                if let (Some(da), Some(db)) = (da, db) {
                    compare_values(da, db, &format!("event {name}"), out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res(v: Value) -> Response {
        Response {
            status: 200,
            headers: vec![],
            content: Content::Body(Body::Json(v)),
        }
    }

    #[test]
    fn values_differ_but_structure_matches() {
        let a =
            res(json!({"id": "a", "choices": [{"message": {"content": "x"}}], "usage": {"t": 1}}));
        let b = res(json!({"id": "b", "choices": [{"message": {"content": "y"}}], "extra": 1}));
        assert!(compare(&a, &b).is_empty());
    }

    #[test]
    fn missing_fields_and_type_changes_are_drift() {
        let a = res(json!({"choices": [{"message": {"content": "x", "role": "assistant"}}]}));
        let b = res(json!({"choices": [{"message": {"content": 3}}]}));
        assert_eq!(
            compare(&a, &b),
            vec![
                "body.choices[0].message.content: type changed from string to number".to_owned(),
                "body.choices[0].message.role: missing in the live answer".to_owned(),
            ]
        );
    }
}

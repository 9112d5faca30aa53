//! Calls written by hand with no answer yet: a scenario a replay against the real server fills in.
//!
//! Such a line holds only what a recorded line says of the request, under the same names:
//!
//! ```json
//! {"method":"tools/call","name":"echo","input":{"message":"hi"}}
//! {"method":"resources/read","name":"demo://resource/static/document/architecture.md"}
//! {"method":"tools/list"}
//! ```

use calltape_stdio_bridge::vocab::{INITIALIZE, RESOURCES_READ};
use serde_json::{Map, Value};

use crate::mcp::format::{CallRecord, FieldProblem, Outcome, expected, problem};
use crate::mcp::lists::list_items_key;
use crate::mcp::params::uri_input;

/// The fields a call with no answer yet may hold.
pub(crate) const UNANSWERED_FIELDS: &[&str] = &["method", "name", "input"];

/// A call of a recording with no answer yet: a line written by hand (`method`, `name`, `input`)
/// that a replay against the real server answers and rewrites as a full record.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UnansweredCall {
    /// Its line in the file, from 1.
    pub line: usize,
    /// The JSON-RPC method, such as `tools/call`.
    pub method: String,
    /// The tool or prompt name, or the resource URI; empty for a list.
    pub name: String,
    /// The arguments: `{}` when the line has none, and for a resource read `{"uri": …}`.
    pub input: Value,
}

impl UnansweredCall {
    /// The call as a record of `session` with `outcome`, its other fields empty and its duration
    /// zero, for the caller to complete.
    pub fn to_record(&self, session: impl Into<String>, outcome: Outcome) -> CallRecord {
        let mut record =
            CallRecord::new(session, self.method.as_str(), self.name.as_str(), outcome);
        record.input = Some(self.input.clone());
        record
    }

    /// Whether a parsed line is one of these rather than a full record: it has no format version and
    /// neither an answer nor an error.
    pub(crate) fn is_one(map: &Map<String, Value>) -> bool {
        !map.contains_key("v") && !map.contains_key("answer") && !map.contains_key("error")
    }

    /// Checks a line [`is_one`](Self::is_one) says is a call with no answer yet.
    pub(crate) fn from_map(line: usize, mut map: Map<String, Value>) -> Result<Self, FieldProblem> {
        if let Some(unknown) = map
            .keys()
            .find(|k| !UNANSWERED_FIELDS.contains(&k.as_str()))
        {
            let message = if unknown == "params" {
                "a call with no answer yet is written as a recorded line is: the tool or prompt \
                 name, or the resource URI, as `name`, and its arguments as `input`"
                    .to_owned()
            } else {
                format!(
                    "unknown field; a call with no answer yet has only {}, and a full record \
                     also v, at, session, answer or error, and durationMs",
                    UNANSWERED_FIELDS.join(", ")
                )
            };
            return Err(problem(unknown, message));
        }
        let method = match map.remove("method") {
            Some(Value::String(method)) if method == INITIALIZE => {
                return Err(problem(
                    "method",
                    "initialize is sent for the calls; leave it out",
                ));
            }
            Some(Value::String(method)) if !method.is_empty() => method,
            Some(Value::String(_)) => return Err(problem("method", "is empty")),
            Some(other) => return Err(expected("method", "a string", &other)),
            None => {
                return Err(problem(
                    "method",
                    "missing; a call with no answer yet has at least a method, such as tools/call",
                ));
            }
        };
        let list = list_items_key(&method).is_some();
        let name = match map.remove("name") {
            Some(Value::String(name)) if !name.is_empty() || list => name,
            Some(Value::String(_)) => return Err(problem("name", "is empty")),
            Some(other) => return Err(expected("name", "a string", &other)),
            None if list => String::new(),
            None => {
                return Err(problem(
                    "name",
                    format!("missing; a {method} call names its tool, prompt or resource URI"),
                ));
            }
        };
        let input = match map.remove("input") {
            Some(Value::Object(input)) => Value::Object(input),
            Some(other) => return Err(expected("input", "an object", &other)),
            None if method == RESOURCES_READ => uri_input(&name),
            None => Value::Object(Map::new()),
        };
        Ok(Self {
            line,
            method,
            name,
            input,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The method, name and input a line reads as, or the problem with it.
    type Read = Result<(&'static str, &'static str, Value), &'static str>;

    #[test]
    fn lines_and_what_they_read_as() {
        let rows: &[(Value, Read)] = &[
            (
                json!({"method": "tools/call", "name": "echo", "input": {"message": "hi"}}),
                Ok(("tools/call", "echo", json!({"message": "hi"}))),
            ),
            (
                json!({"method": "tools/call", "name": "get-tiny-image"}),
                Ok(("tools/call", "get-tiny-image", json!({}))),
            ),
            (
                json!({"method": "resources/read", "name": "demo://a"}),
                Ok(("resources/read", "demo://a", json!({"uri": "demo://a"}))),
            ),
            (
                json!({"method": "tools/list"}),
                Ok(("tools/list", "", json!({}))),
            ),
            (
                json!({"method": "tools/call", "params": {"name": "echo"}}),
                Err(
                    "field `params`: a call with no answer yet is written as a recorded line is: the tool or prompt name, or the resource URI, as `name`, and its arguments as `input`",
                ),
            ),
            (
                json!({"method": "tools/call", "name": "echo", "session": "aaaaaaaa"}),
                Err(
                    "field `session`: unknown field; a call with no answer yet has only method, name, input, and a full record also v, at, session, answer or error, and durationMs",
                ),
            ),
            (
                json!({"method": "tools/call"}),
                Err(
                    "field `name`: missing; a tools/call call names its tool, prompt or resource URI",
                ),
            ),
            (
                json!({"name": "echo"}),
                Err(
                    "field `method`: missing; a call with no answer yet has at least a method, such as tools/call",
                ),
            ),
            (
                json!({"method": "tools/call", "name": "echo", "input": [1]}),
                Err("field `input`: expected an object, found an array"),
            ),
            (
                json!({"method": "initialize"}),
                Err("field `method`: initialize is sent for the calls; leave it out"),
            ),
        ];
        for (line, want) in rows {
            let Value::Object(map) = line.clone() else {
                unreachable!()
            };
            assert!(UnansweredCall::is_one(&map), "{line}");
            let got = UnansweredCall::from_map(7, map);
            match (got, want) {
                (Ok(call), Ok((method, name, input))) => {
                    assert_eq!(
                        (
                            call.line,
                            call.method.as_str(),
                            call.name.as_str(),
                            &call.input
                        ),
                        (7, *method, *name, input),
                        "{line}"
                    );
                }
                (Err(problem), Err(message)) => assert_eq!(problem.to_string(), *message),
                (got, want) => panic!("{line}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_full_record_is_not_one() {
        for line in [
            json!({"v": 1, "method": "tools/call", "name": "echo"}),
            json!({"method": "tools/call", "name": "echo", "answer": {}}),
            json!({"method": "tools/call", "name": "echo", "error": {"code": 1}}),
        ] {
            let Value::Object(map) = line else {
                unreachable!()
            };
            assert!(!UnansweredCall::is_one(&map));
        }
    }
}

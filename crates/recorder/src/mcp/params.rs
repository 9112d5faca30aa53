//! How a request maps to a call record and back: the name and input recorded from its `params`,
//! the client info a stateless request carries in its `_meta`, and the `params` that replay it.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::mcp::format::CallRecord;

use calltape_stdio_bridge::vocab::{PROMPTS_GET, RESOURCES_READ, TOOLS_CALL};

/// The client info and protocol version a stateless request carries in its `_meta`.
pub(crate) fn meta_info(
    meta: Option<&Map<String, Value>>,
) -> (Option<Arc<RawValue>>, Option<Arc<str>>) {
    let client = meta
        .and_then(|m| meta_entry(m, "clientInfo"))
        .filter(|info| info.is_object())
        .and_then(raw_of);
    let protocol_version = meta
        .and_then(|m| meta_entry(m, "protocolVersion"))
        .and_then(Value::as_str)
        .map(Arc::from);
    (client, protocol_version)
}

/// The client capabilities a stateless request declares in its `_meta`, redacted; `None` when it
/// declares none.
pub(crate) fn meta_capabilities(
    meta: Option<&Map<String, Value>>,
    redactor: &calltape_redact::Redactor,
) -> Option<Arc<RawValue>> {
    let capabilities = meta.and_then(|m| meta_entry(m, "clientCapabilities"));
    crate::mcp::asks::declared_capabilities(capabilities, redactor)
}

/// A value as compact raw JSON.
pub(crate) fn raw_of(value: &Value) -> Option<Arc<RawValue>> {
    serde_json::value::to_raw_value(value).ok().map(Arc::from)
}

/// `_meta.clientInfo`, or a namespaced `_meta["…/clientInfo"]` as the stateless protocol sends it.
fn meta_entry<'a>(meta: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    meta.get(name).or_else(|| {
        meta.iter()
            .find(|(k, _)| k.rsplit('/').next() == Some(name))
            .map(|(_, v)| v)
    })
}

/// The name and input a request of `method` with `params` is recorded with: for `tools/call` and
/// `prompts/get` the name and the arguments, for `resources/read` the URI and `{"uri": …}`, for
/// other methods the `name` (else the `uri`) and the params. Request `_meta` (progress tokens
/// included) is never part of the input. Nothing is redacted here.
pub fn name_and_input(method: &str, params: Option<&Value>) -> (String, Option<Value>) {
    let text = |key: &str| {
        params
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match method {
        TOOLS_CALL | PROMPTS_GET => (
            text("name"),
            Some(
                params
                    .and_then(|p| p.get("arguments"))
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            ),
        ),
        RESOURCES_READ => {
            let uri = text("uri");
            let input = uri_input(&uri);
            (uri, Some(input))
        }
        _ => {
            let name = match params.and_then(|p| p.get("name")) {
                Some(Value::String(name)) => name.clone(),
                _ => text("uri"),
            };
            let input = params.and_then(Value::as_object).and_then(|p| {
                let rest: Map<String, Value> = p
                    .iter()
                    .filter(|(k, _)| *k != "_meta")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                (!rest.is_empty()).then_some(Value::Object(rest))
            });
            (name, input)
        }
    }
}

/// The `params` of the JSON-RPC request that replays a recorded call: the inverse of how the recorder
/// took the name and input from a request.
pub fn request_params(record: &CallRecord) -> Value {
    let mut params = Map::new();
    match record.method.as_str() {
        TOOLS_CALL | PROMPTS_GET => {
            params.insert("name".into(), Value::String(record.name.clone()));
            if let Some(input) = &record.input {
                params.insert("arguments".into(), input.clone());
            }
        }
        RESOURCES_READ => {
            // The input's URI when the line has one (it may have been filled in or followed), else
            // the name: older lines have no input.
            let uri = match record.input.as_ref().and_then(|i| i.get("uri")) {
                Some(Value::String(uri)) => uri.clone(),
                _ => record.name.clone(),
            };
            params.insert("uri".into(), Value::String(uri));
        }
        _ => {
            if let Some(Value::Object(input)) = &record.input {
                params.extend(input.clone());
            }
        }
    }
    Value::Object(params)
}

/// The input a `resources/read` is recorded with: `{"uri": …}`.
pub(crate) fn uri_input(uri: &str) -> Value {
    let mut input = Map::new();
    input.insert("uri".into(), Value::String(uri.to_owned()));
    Value::Object(input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::format::Outcome;
    use serde_json::json;

    #[test]
    fn a_resource_read_is_replayed_with_its_input_uri_or_else_its_name() {
        let mut record = CallRecord::new(
            "3f9a1c2e",
            "resources/read",
            "demo://payments/pay_1001",
            Outcome::Answer(json!({})),
        );
        assert_eq!(
            request_params(&record),
            json!({"uri": "demo://payments/pay_1001"})
        );
        record.input = Some(json!({"uri": "demo://payments/pay_2002"}));
        assert_eq!(
            request_params(&record),
            json!({"uri": "demo://payments/pay_2002"})
        );
        let (name, input) = name_and_input(
            "resources/read",
            Some(&json!({"uri": "demo://terms", "_meta": {"progressToken": 1}})),
        );
        assert_eq!(name, "demo://terms");
        assert_eq!(input, Some(json!({"uri": "demo://terms"})));
    }
}

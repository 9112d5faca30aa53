//! The client's requests sent stateless, their answers made legacy, and `input_required` results
//! turned into server-to-client requests whose answers go back in the retried request.

use serde_json::{Map, Value, json};

use super::{LegacyOnModern, Out, reply, wire};
use crate::jsonrpc::Frame;

/// How many `input_required` rounds one request may take, as the SDKs allow.
pub(super) const MAX_ROUNDS: u32 = 10;

/// A client's request in flight upstream.
pub(super) struct Call {
    /// The request as the client sent it.
    pub(super) original: Frame,
    /// The request as sent (its params carry `_meta`), for a retry.
    request: Map<String, Value>,
    method: String,
    rounds: u32,
    /// The `input_required` round being answered: its state, the answers so far, how many are due.
    state: Option<Value>,
    answers: Map<String, Value>,
    due: usize,
}

impl LegacyOnModern {
    /// Sends a legacy request stateless and keeps it until its answer.
    pub(super) fn send_call(
        &mut self,
        mut message: Map<String, Value>,
        original: Frame,
        out: &mut Vec<Out>,
    ) {
        let params = self.stateless_params(message.get("params"));
        message.insert("params".into(), params);
        let key = message.get("id").map(wire::key).unwrap_or_default();
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        out.push(Out::Upstream(wire::frame(&Value::Object(message.clone()))));
        let call = Call {
            original,
            request: message,
            method,
            rounds: 0,
            state: None,
            answers: Map::new(),
            due: 0,
        };
        self.calls.insert(key, call);
    }

    /// The upstream's answer to a client's request.
    pub(super) fn call_answered(
        &mut self,
        key: &str,
        mut message: Map<String, Value>,
        out: &mut Vec<Out>,
    ) {
        let Some(call) = self.calls.get(key) else {
            return;
        };
        let input_required = message
            .get("result")
            .and_then(|r| r.get("resultType"))
            .and_then(Value::as_str)
            == Some("input_required");
        if input_required {
            let result = message.remove("result").unwrap_or_default();
            return self.input_required(key, result, out);
        }
        let method = call.method.clone();
        self.calls.remove(key);
        if let Some(result) = message.remove("result") {
            message.insert("result".into(), wire::legacy_result(&method, result));
        }
        if let Some(error) = message.remove("error") {
            message.insert("error".into(), wire::legacy_error(&method, error));
        }
        reply(out, wire::frame(&Value::Object(message)));
    }

    /// An `input_required` result: each input request goes to the client as a request of the
    /// translator's; with none, the request is retried at once with the state alone.
    fn input_required(&mut self, key: &str, result: Value, out: &mut Vec<Out>) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        call.rounds += 1;
        let id = call.request.get("id").cloned().unwrap_or(Value::Null);
        if call.rounds > MAX_ROUNDS {
            self.calls.remove(key);
            let text = format!(
                "the upstream asked for input more than {MAX_ROUNDS} times for one request; the request was abandoned"
            );
            return reply(out, wire::error(&id, crate::UPSTREAM_PROTOCOL_ERROR, &text));
        }
        call.state = result.get("requestState").cloned();
        call.answers = Map::new();
        let inputs = result
            .get("inputRequests")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        call.due = inputs.len();
        if inputs.is_empty() {
            return self.retry(key, out);
        }
        for (input, request) in inputs {
            let own = self.own_id("input");
            let method = request.get("method").cloned().unwrap_or(Value::Null);
            let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
            let ask = json!({"jsonrpc": "2.0", "id": own, "method": method, "params": params});
            reply(out, wire::frame(&ask));
            self.asks
                .insert(wire::key(&own.into()), (key.to_owned(), input));
        }
    }

    /// The client's answer to one input request: once every one is in, the request is retried.
    pub(super) fn input_answered(
        &mut self,
        key: &str,
        input: &str,
        message: Map<String, Value>,
        out: &mut Vec<Out>,
    ) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        if let Some(error) = message.get("error") {
            // The client refused: the request ends with its error, as a 2026-07-28 client's would.
            let id = call.request.get("id").cloned().unwrap_or(Value::Null);
            self.calls.remove(key);
            self.asks.retain(|_, (call, _)| call != key);
            let answer = json!({"jsonrpc": "2.0", "id": id, "error": error});
            return reply(out, wire::frame(&answer));
        }
        let result = message.get("result").cloned().unwrap_or_else(|| json!({}));
        call.answers.insert(input.to_owned(), result);
        if call.answers.len() >= call.due {
            self.retry(key, out);
        }
    }

    /// Sends the request again, with the answers and the state of the last round.
    fn retry(&mut self, key: &str, out: &mut Vec<Out>) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let mut request = call.request.clone();
        if let Some(Value::Object(params)) = request.get_mut("params") {
            params.remove("inputResponses");
            params.remove("requestState");
            if !call.answers.is_empty() {
                let answers = std::mem::take(&mut call.answers);
                params.insert("inputResponses".into(), Value::Object(answers));
            }
            if let Some(state) = call.state.take() {
                params.insert("requestState".into(), state);
            }
        }
        call.due = 0;
        out.push(Out::Upstream(wire::frame(&Value::Object(request))));
    }
}

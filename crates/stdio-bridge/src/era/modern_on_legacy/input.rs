//! Server-to-client requests for a 2026-07-28 client, which takes none: a request (elicitation,
//! sampling, roots) that arrives while the client's request is in flight becomes that request's
//! `input_required` result. The client's retry carries the answers, which go back to the server under
//! the server's own ids; the original request's answer is then handed to the retried request.

use serde_json::{Map, Value, json};

use super::{ModernOnLegacy, Out, client, shape};
use crate::jsonrpc;
use crate::vocab::{self, INTERNAL_ERROR, INVALID_PARAMS, SUBSCRIPTIONS_LISTEN};

/// How many rounds of input one request may ask for, as the 2026-07-28 clients allow.
pub(super) const MAX_ROUNDS: u32 = 10;

/// The server's requests handed to a client for one request in flight.
pub(super) struct Exchange {
    /// The id (JSON text) the request was sent upstream with.
    upstream: String,
    /// The server's requests handed over and not answered yet: the key the client answers under, and
    /// the server's id.
    asked: Vec<(String, Value)>,
    /// The server's requests that arrived after the client was handed the last round.
    queued: Vec<Value>,
    /// The upstream's answer to the request, when it came before the client's retry.
    pub(super) answer: Option<Value>,
    rounds: u32,
}

impl ModernOnLegacy {
    /// A request from the server: handed to the oldest 2026-07-28 request in flight as an
    /// `input_required` result; false when no such request is in flight.
    pub(super) fn on_server_request(&mut self, message: &Value, out: &mut Vec<Out>) -> bool {
        let waiting = self
            .modern
            .iter()
            .filter(|(_, modern)| modern.method != SUBSCRIPTIONS_LISTEN)
            .min_by_key(|(_, modern)| (modern.client.is_none(), modern.order))
            .map(|(key, _)| key.clone());
        let Some(key) = waiting else {
            return false;
        };
        let state = self.modern[&key].exchange.clone().unwrap_or_else(|| {
            self.next += 1;
            format!("calltape-input-{}", self.next)
        });
        let exchange = self.exchanges.entry(state.clone()).or_insert(Exchange {
            upstream: key.clone(),
            asked: Vec::new(),
            queued: Vec::new(),
            answer: None,
            rounds: 0,
        });
        exchange.queued.push(message.clone());
        let Some(modern) = self.modern.get_mut(&key) else {
            return false;
        };
        modern.exchange = Some(state.clone());
        if let Some(id) = modern.client.take() {
            self.hand_over(&state, &id, out);
        }
        true
    }

    /// Hands the queued requests of an exchange to the client as one round of `input_required`.
    fn hand_over(&mut self, state: &str, id: &Value, out: &mut Vec<Out>) {
        let Some(exchange) = self.exchanges.get_mut(state) else {
            return;
        };
        exchange.rounds += 1;
        let queued = std::mem::take(&mut exchange.queued);
        let upstream = exchange.upstream.clone();
        if exchange.rounds > MAX_ROUNDS {
            for request in queued {
                let refusal = vocab::error_answer_with_data(
                    &request["id"],
                    INTERNAL_ERROR,
                    &format!(
                        "the client answered {MAX_ROUNDS} rounds of input for this request already; \
                         finish the request with what was given"
                    ),
                    jsonrpc::data("too_many_rounds", None),
                );
                out.push(Out::Upstream(jsonrpc::to_frame(&refusal)));
            }
            // The request stays in flight: its answer goes to this client id.
            if let Some(modern) = self.modern.get_mut(&upstream) {
                modern.client = Some(id.clone());
            }
            return;
        }
        let mut requests = Map::new();
        let mut asked = Vec::new();
        for request in queued {
            self.next += 1;
            let key = format!("input-{}", self.next);
            let mut embedded = json!({"method": request["method"]});
            if let Some(params) = request.get("params") {
                embedded["params"] = params.clone();
            }
            requests.insert(key.clone(), embedded);
            asked.push((key, request["id"].clone()));
        }
        if let Some(exchange) = self.exchanges.get_mut(state) {
            exchange.asked.extend(asked);
        }
        let result = json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        });
        out.push(client(
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        ));
    }

    /// A client's retry of a request it was handed `input_required` for: its answers go to the
    /// server, and the request's answer (now or when it comes) to the retry.
    pub(super) fn retry(&mut self, id: Value, message: &Value, out: &mut Vec<Out>) {
        let state = message["params"]["requestState"]
            .as_str()
            .unwrap_or_default();
        let Some(exchange) = self.exchanges.get_mut(state) else {
            let refusal = vocab::error_answer_with_data(
                &id,
                INVALID_PARAMS,
                "the requestState names no exchange in progress on this connection; send the request \
                 again without requestState and inputResponses",
                jsonrpc::data("unknown_request_state", None),
            );
            out.push(client(&refusal));
            return;
        };
        let responses = &message["params"]["inputResponses"];
        for (key, server_id) in std::mem::take(&mut exchange.asked) {
            let reply = match responses.get(&key) {
                Some(response) => {
                    let mut response = response.clone();
                    if let Some(response) = response.as_object_mut() {
                        response.remove("resultType");
                    }
                    json!({"jsonrpc": "2.0", "id": server_id, "result": response})
                }
                None => vocab::error_answer_with_data(
                    &server_id,
                    INTERNAL_ERROR,
                    "the client retried its request without an answer to this one",
                    jsonrpc::data("no_input_response", None),
                ),
            };
            out.push(Out::Upstream(jsonrpc::to_frame(&reply)));
        }
        let state = state.to_owned();
        let upstream = exchange.upstream.clone();
        let more = !exchange.queued.is_empty();
        if let Some(answer) = exchange.answer.take() {
            self.exchanges.remove(&state);
            if let Some(modern) = self.modern.remove(&upstream) {
                let answer = shape::answer(answer, &id, &modern.method, modern.uri.as_deref());
                out.push(client(&answer));
            }
            return;
        }
        if more {
            self.hand_over(&state, &id, out);
            return;
        }
        if let Some(modern) = self.modern.get_mut(&upstream) {
            modern.client = Some(id);
        }
    }
}

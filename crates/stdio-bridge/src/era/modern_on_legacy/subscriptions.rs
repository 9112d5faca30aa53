//! `subscriptions/listen` on a legacy session: the filter's resources become `resources/subscribe`
//! calls, and the session's change notifications are handed to each listen stream whose filter takes
//! them, stamped with its subscription id, after a first `notifications/subscriptions/acknowledged`.

use serde_json::{Map, Value, json};

use super::{ModernOnLegacy, Out, Own, client};

use crate::vocab::{
    META_SUBSCRIPTION_ID, PROMPTS_LIST_CHANGED, RESOURCES_LIST_CHANGED, RESOURCES_SUBSCRIBE,
    RESOURCES_UPDATED, SUBSCRIPTIONS_ACKNOWLEDGED, TOOLS_LIST_CHANGED,
};

/// The list notifications, with the filter key that asks for each and the capability that offers it.
const LISTS: [(&str, &str, &str); 3] = [
    (TOOLS_LIST_CHANGED, "toolsListChanged", "tools"),
    (PROMPTS_LIST_CHANGED, "promptsListChanged", "prompts"),
    (RESOURCES_LIST_CHANGED, "resourcesListChanged", "resources"),
];

/// Whether a listen stream may carry notifications of this method.
pub(super) fn carries(method: &str) -> bool {
    method == RESOURCES_UPDATED || LISTS.iter().any(|(list, ..)| *list == method)
}

/// The open listen streams of the link.
#[derive(Default)]
pub(super) struct Listens {
    streams: Vec<Listen>,
}

/// One listen stream: its request id and what the bridge agreed to deliver on it.
struct Listen {
    id: Value,
    /// The filter keys of the lists it takes.
    lists: Vec<&'static str>,
    uris: Vec<String>,
}

impl Listens {
    pub(super) fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Whether a stream was opened by the request with this id.
    pub(super) fn holds(&self, id: &Value) -> bool {
        self.streams.iter().any(|listen| listen.id == *id)
    }

    /// Forgets every stream, and gives the ids of the requests that opened them.
    pub(super) fn take_ids(&mut self) -> Vec<Value> {
        self.streams.drain(..).map(|listen| listen.id).collect()
    }

    /// Every resource some stream is subscribed to, once each.
    pub(super) fn uris(&self) -> Vec<String> {
        let mut uris: Vec<String> = Vec::new();
        for uri in self.streams.iter().flat_map(|listen| &listen.uris) {
            if !uris.contains(uri) {
                uris.push(uri.clone());
            }
        }
        uris
    }

    /// A client cancelled a request: when it was a listen stream's, the stream ends, and the
    /// resources no other stream watches are returned for unsubscribing.
    pub(super) fn cancel(&mut self, message: &Value) -> Option<Vec<String>> {
        let id = &message["params"]["requestId"];
        let at = self.streams.iter().position(|listen| listen.id == *id)?;
        let gone = self.streams.remove(at);
        let left = self.uris();
        Some(
            gone.uris
                .into_iter()
                .filter(|uri| !left.contains(uri))
                .collect(),
        )
    }

    /// Copies of an upstream notification for each stream that takes it, stamped with the stream's id.
    pub(super) fn deliver(&self, message: &Value) -> Vec<Value> {
        let method = message["method"].as_str().unwrap_or_default();
        let list = LISTS
            .iter()
            .find(|(list, ..)| *list == method)
            .map(|(_, key, _)| *key);
        let uri = message["params"]["uri"].as_str();
        self.streams
            .iter()
            .filter(|listen| match (list, uri) {
                (Some(key), _) => listen.lists.contains(&key),
                (None, Some(uri)) => {
                    method == RESOURCES_UPDATED && listen.uris.iter().any(|u| u == uri)
                }
                (None, None) => false,
            })
            .map(|listen| stamped(message, &listen.id))
            .collect()
    }
}

impl ModernOnLegacy {
    /// Opens a listen stream: subscribes to the resources it asks for that nobody watches yet, and
    /// acknowledges what the session can deliver.
    pub(super) fn open_listen(&mut self, id: &Value, message: &Value, out: &mut Vec<Out>) {
        let filter = &message["params"]["notifications"];
        let asked = filter["resourceSubscriptions"]
            .as_array()
            .map_or(0, Vec::len);
        if asked > crate::MAX_SUBSCRIPTIONS {
            let refusal = crate::jsonrpc::too_many_uris(&id.to_string());
            out.push(Out::Client(crate::upstream::UpstreamEvent::Message(
                refusal,
            )));
            return;
        }
        let capabilities = self
            .initialized()
            .map(|result| result["capabilities"].clone())
            .unwrap_or_default();
        let mut honored = Map::new();
        let mut lists = Vec::new();
        // A list the server offers may change whatever its `listChanged` says: a server of both eras
        // (the Python SDK 2.x) declares `false` in the handshake era and still tells a session its
        // list changed. A handshake-era client hears that notification, so a listen stream does too.
        for (_, key, capability) in LISTS {
            if filter[key] == Value::Bool(true) && capabilities[capability].is_object() {
                honored.insert(key.to_owned(), Value::Bool(true));
                lists.push(key);
            }
        }
        let mut uris = Vec::new();
        if capabilities["resources"]["subscribe"] == Value::Bool(true)
            && let Some(asked) = filter["resourceSubscriptions"].as_array()
        {
            uris = asked
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            honored.insert("resourceSubscriptions".to_owned(), json!(uris));
        }
        let watched = self.listens.uris();
        for uri in uris.iter().filter(|uri| !watched.contains(uri)) {
            self.request(Own::Quiet, RESOURCES_SUBSCRIBE, json!({"uri": uri}), out);
        }
        self.listens.streams.push(Listen {
            id: id.clone(),
            lists,
            uris,
        });
        let ack = json!({
            "jsonrpc": "2.0",
            "method": SUBSCRIPTIONS_ACKNOWLEDGED,
            "params": {"notifications": honored, "_meta": {META_SUBSCRIPTION_ID: id}},
        });
        out.push(client(&ack));
    }
}

/// A notification with the listen stream's id in its `_meta`.
fn stamped(message: &Value, id: &Value) -> Value {
    let mut message = message.clone();
    if !message["params"].is_object() {
        message["params"] = json!({});
    }
    let params = &mut message["params"];
    if !params["_meta"].is_object() {
        params["_meta"] = json!({});
    }
    params["_meta"][META_SUBSCRIPTION_ID] = id.clone();
    message
}

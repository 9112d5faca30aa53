//! What a client set up in its session that a new upstream session would not know: the resources it
//! subscribed to and the log level it set, as far as the upstream accepted them. After a
//! re-initialization the bridge sends them again as requests of its own, whose answers the client never
//! sees.
//!
//! A request counts once the upstream answered it with a result: one that failed, or whose upstream
//! died before answering, changed nothing, and one the client sent while the upstream was down is held
//! and sent as any other, so it is never sent twice.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Value, json};

use super::{Core, Held};
use crate::{
    jsonrpc::Frame,
    jsonrpc::{Info, Peek, peek, to_frame},
};

// The most subscribed URIs a session remembers; a subscription past it is not replayed.
use crate::MAX_SUBSCRIPTIONS;
use crate::vocab::{RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE, SET_LOG_LEVEL};

/// A request that changes the session's state once the upstream answers it with a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Change {
    Subscribe(Box<str>),
    Unsubscribe(Box<str>),
    SetLevel(Box<str>),
}

impl Change {
    fn of(method: &str, params: &Value) -> Option<Self> {
        match method {
            RESOURCES_SUBSCRIBE => Some(Self::Subscribe(params["uri"].as_str()?.into())),
            RESOURCES_UNSUBSCRIBE => Some(Self::Unsubscribe(params["uri"].as_str()?.into())),
            SET_LOG_LEVEL => Some(Self::SetLevel(params["level"].as_str()?.into())),
            _ => None,
        }
    }

    /// The changes the requests of a client's message ask for, by their raw ids; a message without
    /// such a request is not parsed.
    pub(super) fn read(frame: &[u8], peek: &Peek) -> Vec<(Box<str>, Self)> {
        let changes = |info: &Info| {
            info.is_request()
                && matches!(
                    info.method.as_deref(),
                    Some(RESOURCES_SUBSCRIBE | RESOURCES_UNSUBSCRIBE | SET_LOG_LEVEL)
                )
        };
        if !peek.infos().iter().any(changes) {
            return Vec::new();
        }
        let Some(items) = items(frame, peek) else {
            return Vec::new();
        };
        peek.infos()
            .iter()
            .zip(&items)
            .filter(|(info, _)| changes(info))
            .filter_map(|(info, item)| {
                let change = Self::of(info.method.as_deref()?, &item["params"])?;
                Some((info.id.clone()?, change))
            })
            .collect()
    }
}

/// The messages of a frame, in the order of its peek; `None` when they do not match.
fn items(frame: &[u8], peek: &Peek) -> Option<Vec<Value>> {
    let items = match (serde_json::from_slice::<Value>(frame).ok()?, peek) {
        (Value::Array(items), Peek::Batch(_)) => items,
        (one, Peek::One(_)) => vec![one],
        _ => return None,
    };
    (items.len() == peek.infos().len()).then_some(items)
}

/// Whether the answer to the request `id` in an upstream's `frame` is a result.
pub(super) fn is_result(frame: &[u8], peek: &Peek, id: &str) -> bool {
    let Some(items) = items(frame, peek) else {
        return false;
    };
    peek.infos()
        .iter()
        .zip(&items)
        .find(|(info, _)| info.id.as_deref() == Some(id))
        .is_some_and(|(_, item)| item.get("result").is_some() && item.get("error").is_none())
}

/// The session's state as the upstream accepted it, and the bridge's requests that set it up again.
#[derive(Debug, Default)]
pub(super) struct Resume {
    /// In URI order, which is the order they are replayed in.
    subscriptions: BTreeSet<Box<str>>,
    level: Option<Box<str>>,
    /// A subscription past the limit was not remembered (and a warning said so).
    overflowed: bool,
    /// The bridge's requests not answered yet: raw id → method.
    sent: HashMap<Box<str>, &'static str>,
}

impl Resume {
    /// Applies a change the upstream accepted.
    pub(super) fn apply(&mut self, change: Change) {
        match change {
            Change::Subscribe(uri) => {
                if self.subscriptions.len() >= MAX_SUBSCRIPTIONS
                    && !self.subscriptions.contains(&uri)
                {
                    if !self.overflowed {
                        tracing::warn!(
                            "the client subscribed to more than {MAX_SUBSCRIPTIONS} resources; \
                             the ones past that are not subscribed again after a restart"
                        );
                        self.overflowed = true;
                    }
                    return;
                }
                self.subscriptions.insert(uri);
            }
            Change::Unsubscribe(uri) => {
                self.subscriptions.remove(&uri);
            }
            Change::SetLevel(level) => self.level = Some(level),
        }
    }

    /// The client began a new session: what it set up in the old one is gone.
    pub(super) fn clear(&mut self) {
        self.subscriptions.clear();
        self.level = None;
        self.overflowed = false;
    }

    /// The requests that set the state up again, the log level first, each under an id of the
    /// bridge's own (`"calltape-resume-<round>-<n>"`) that is awaited from now on.
    pub(super) fn requests(&mut self, round: u64) -> Vec<Frame> {
        let level = self
            .level
            .iter()
            .map(|l| (SET_LOG_LEVEL, json!({ "level": l })));
        let uris = self
            .subscriptions
            .iter()
            .map(|u| (RESOURCES_SUBSCRIBE, json!({ "uri": u })));
        let mut frames = Vec::new();
        for (n, (method, params)) in level.chain(uris).enumerate() {
            let id = format!("calltape-resume-{round}-{n}");
            frames.push(to_frame(
                &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
            ));
            self.sent.insert(format!("\"{id}\"").into(), method);
        }
        frames
    }

    /// The method of the bridge's request with this raw id, which is no longer awaited.
    pub(super) fn take(&mut self, id: &str) -> Option<&'static str> {
        if self.sent.is_empty() {
            return None;
        }
        self.sent.remove(id)
    }

    /// The raw id of a frame that is one of the bridge's requests.
    pub(super) fn ours<'a>(&self, peek: &'a Peek) -> Option<&'a str> {
        match peek {
            Peek::One(info) if !self.sent.is_empty() => {
                info.id.as_deref().filter(|id| self.sent.contains_key(*id))
            }
            _ => None,
        }
    }

    /// A new link: the old one's answers never come.
    pub(super) fn forget_sent(&mut self) {
        self.sent.clear();
    }
}

impl Core {
    /// The bridge's requests that set the client's state up again, to send after the handshake.
    pub(super) fn resume_requests(&mut self) -> Vec<Held> {
        let round = self.counts.reinitializations;
        self.resume
            .requests(round)
            .into_iter()
            .map(|frame| {
                let read = peek(&frame).unwrap_or(Peek::Batch(Vec::new()));
                Held::control_with(frame, read)
            })
            .collect()
    }

    /// An answer to one of the bridge's requests, which the client never sees.
    pub(super) fn on_resume_answer(&mut self, method: &str, frame: &Frame) {
        if let Ok(value) = serde_json::from_slice::<Value>(frame)
            && let Some(error) = value.get("error")
        {
            tracing::debug!("the upstream refused the replayed {method}: {error}");
        }
    }

    /// One of the bridge's requests was lost or refused on the way: a new session replays it anyway.
    pub(super) fn forget_resume_request(&mut self, id: &str, why: &str) {
        if let Some(method) = self.resume.take(id) {
            tracing::debug!("the replayed {method} was not answered ({why})");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::peek;

    fn read(frame: &str) -> Vec<(Box<str>, Change)> {
        Change::read(frame.as_bytes(), &peek(frame.as_bytes()).expect("peek"))
    }

    /// A change as a row of a table: raw id, kind, URI or level.
    type Row = (&'static str, &'static str, &'static str);

    /// A client's message → the changes it asks for.
    const READS: &[(&str, &[Row])] = &[
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///a"}}"#,
            &[("1", "subscribe", "file:///a")],
        ),
        (
            r#"{"jsonrpc":"2.0","id":"u","method":"resources/unsubscribe","params":{"uri":"file:///a"}}"#,
            &[(r#""u""#, "unsubscribe", "file:///a")],
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}"#,
            &[("2", "level", "debug")],
        ),
        (
            r#"[{"jsonrpc":"2.0","id":3,"method":"tools/list"},{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"x:b"}}]"#,
            &[("4", "subscribe", "x:b")],
        ),
        // A notification, a missing or odd parameter, another method: nothing.
        (
            r#"{"jsonrpc":"2.0","method":"resources/subscribe","params":{"uri":"file:///a"}}"#,
            &[],
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":7}}"#,
            &[],
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"logging/setLevel"}"#,
            &[],
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"uri":"file:///a"}}"#,
            &[],
        ),
    ];

    #[test]
    fn the_changes_a_client_message_asks_for() {
        for (frame, expected) in READS {
            let expected: Vec<(Box<str>, Change)> = expected
                .iter()
                .map(|(id, kind, what)| {
                    let what: Box<str> = (*what).into();
                    let change = match *kind {
                        "subscribe" => Change::Subscribe(what),
                        "unsubscribe" => Change::Unsubscribe(what),
                        _ => Change::SetLevel(what),
                    };
                    ((*id).into(), change)
                })
                .collect();
            assert_eq!(read(frame), expected, "{frame}");
        }
    }

    #[test]
    fn an_answer_is_a_result_only_for_its_own_id() {
        let cases = [
            (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "1", true),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"no"}}"#,
                "1",
                false,
            ),
            (
                r#"[{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"no"}},{"jsonrpc":"2.0","id":2,"result":{}}]"#,
                "2",
                true,
            ),
            (
                r#"[{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"no"}},{"jsonrpc":"2.0","id":2,"result":{}}]"#,
                "1",
                false,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "3", false),
        ];
        for (frame, id, expected) in cases {
            let read = peek(frame.as_bytes()).expect("peek");
            assert_eq!(
                is_result(frame.as_bytes(), &read, id),
                expected,
                "{frame} {id}"
            );
        }
    }

    fn replayed(resume: &mut Resume, round: u64) -> Vec<Value> {
        resume
            .requests(round)
            .iter()
            .map(|f| serde_json::from_slice(f).expect("json"))
            .collect()
    }

    #[test]
    fn accepted_changes_are_replayed_level_first_under_ids_of_the_bridge() {
        let mut resume = Resume::default();
        assert!(replayed(&mut resume, 1).is_empty());
        resume.apply(Change::Subscribe("file:///b".into()));
        resume.apply(Change::Subscribe("file:///a".into()));
        resume.apply(Change::Subscribe("file:///c".into()));
        resume.apply(Change::Unsubscribe("file:///c".into()));
        resume.apply(Change::SetLevel("info".into()));
        resume.apply(Change::SetLevel("error".into()));
        let requests = replayed(&mut resume, 3);
        assert_eq!(
            requests,
            [
                json!({"jsonrpc": "2.0", "id": "calltape-resume-3-0", "method": "logging/setLevel", "params": {"level": "error"}}),
                json!({"jsonrpc": "2.0", "id": "calltape-resume-3-1", "method": "resources/subscribe", "params": {"uri": "file:///a"}}),
                json!({"jsonrpc": "2.0", "id": "calltape-resume-3-2", "method": "resources/subscribe", "params": {"uri": "file:///b"}}),
            ]
        );
        // Each answer is taken once; the client's ids are never the bridge's.
        assert_eq!(
            resume.take(r#""calltape-resume-3-1""#),
            Some(RESOURCES_SUBSCRIBE)
        );
        assert_eq!(resume.take(r#""calltape-resume-3-1""#), None);
        assert_eq!(resume.take("1"), None);
        let ours =
            peek(br#"{"jsonrpc":"2.0","id":"calltape-resume-3-0","result":{}}"#).expect("peek");
        assert_eq!(resume.ours(&ours), Some(r#""calltape-resume-3-0""#));
        resume.forget_sent();
        assert_eq!(resume.ours(&ours), None);
        // A new session of the client starts from nothing.
        resume.clear();
        assert!(replayed(&mut resume, 4).is_empty());
    }

    #[test]
    fn at_most_the_limit_of_subscriptions_is_remembered() {
        let mut resume = Resume::default();
        for n in 0..MAX_SUBSCRIPTIONS + 10 {
            resume.apply(Change::Subscribe(format!("file:///{n:05}").into()));
        }
        assert!(resume.overflowed);
        assert_eq!(resume.subscriptions.len(), MAX_SUBSCRIPTIONS);
        // A URI already remembered is no new one; an unsubscription makes room again.
        resume.apply(Change::Subscribe("file:///00000".into()));
        resume.apply(Change::Unsubscribe("file:///00000".into()));
        resume.apply(Change::Subscribe("file:///late".into()));
        let requests = replayed(&mut resume, 1);
        assert_eq!(requests.len(), MAX_SUBSCRIPTIONS);
        assert_eq!(
            requests.last().expect("one")["params"]["uri"],
            "file:///late"
        );
        assert!(
            requests
                .iter()
                .all(|r| r["params"]["uri"] != "file:///00000")
        );
    }
}

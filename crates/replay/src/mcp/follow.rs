//! Following created ids: a string that an earlier call's recorded answer held and a later call's
//! recorded input uses (`pay` answered `paymentId: pay_1001`, `refund` was asked for `pay_1001`) is
//! sent as the replayed answer holds it (`pay_2002`), and answers that echo the new value compare
//! equal to the recorded ones.
//!
//! Only what a call created is followed: a string its answer introduced, which no input of the
//! session held up to that call and no list answer (`tools/list`, `resources/list`, …) before it,
//! and where the new answer holds another string at the same place, list items paired by their
//! identity as the comparison pairs them. A list answer's entries are never followed: they name
//! what exists (a resource, a tool), and a new server listing other things first says nothing
//! about what a recorded name became.
//!
//! The candidates are indexed by their recorded text as each answer arrives, and each later input is
//! read once, looking up its whole strings and the whole tokens of its texts: the work grows with
//! the session's size, never with the product of its answers and inputs.

use std::collections::{HashMap, HashSet};
use std::fmt;

use calltape_recorder::glob::{Segment, identity, write_path};

use calltape_recorder::mcp::Outcome;
use calltape_redact::{REDACTED, Redactor};
use serde_json::Value;

use crate::mcp::compare::json_in_text;

/// The shortest string followed, in characters: shorter ones are words and numbers, not ids.
pub const MIN_FOLLOWED: usize = 6;

/// One string of a call's input sent with another value than recorded, because an earlier call's
/// answer created it anew.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Substitution {
    /// Where in the request: `input.paymentId`.
    pub path: String,
    /// The recorded string, whole (a text whose words were followed included).
    pub recorded: String,
    /// The string sent instead, whole: exactly what the server received at `path`.
    pub replayed: String,
    /// The call whose answer held the created string (its position in the recording, from 1).
    pub from_call: usize,
    /// Where in that answer: `structuredContent.paymentId`.
    pub from_path: String,
}

impl fmt::Display for Substitution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} → {} (from call {}, {})",
            self.path,
            Shown(&self.recorded),
            Shown(&self.replayed),
            self.from_call,
            self.from_path
        )
    }
}

/// A string as a note shows it: as it is when it reads as one word, else quoted as JSON, so that
/// where it starts and ends is plain.
struct Shown<'a>(&'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plain = !self.0.is_empty()
            && !self
                .0
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '"');
        if plain {
            f.write_str(self.0)
        } else {
            write!(f, "{}", Value::String(self.0.to_owned()))
        }
    }
}

/// A recorded answer's string and what the replayed answer holds in its place.
#[derive(Debug)]
struct Learned {
    replayed: String,
    from_call: usize,
    from_path: String,
    /// Found inside a text (a JSON text or a token of prose) rather than as a value of its own.
    in_text: bool,
}

/// What one session learned so far: created strings by their recorded text, and those followed.
#[derive(Debug, Default)]
pub(crate) struct Follower {
    learned: HashMap<String, Learned>,
    /// The replayed strings sent in place of recorded ones, each with its recorded text.
    used: HashMap<String, String>,
    /// What existed before a call could create it: the strings, words and tokens of every recorded
    /// input so far and of every recorded list answer so far.
    known: HashSet<String>,
    /// Strings and tokens looked up or considered so far: the work done, which a test holds to grow
    /// with the session's size.
    steps: usize,
}

/// What a call may learn from: its input, its recorded and replayed outcomes, and the values that
/// must never be followed (anything the redactor hides, anything holding a filled secret).
pub(crate) struct Answered<'a> {
    pub(crate) call: usize,
    pub(crate) method: &'a str,
    pub(crate) input: Option<&'a Value>,
    pub(crate) recorded: &'a Outcome,
    pub(crate) replayed: &'a Outcome,
    pub(crate) redactor: &'a Redactor,
    pub(crate) sent: &'a [&'a str],
}

impl Follower {
    /// Sends in `input` the replayed value of each string, whole or a whole token of a text, that an
    /// earlier answer created; returns each substitution made.
    pub(crate) fn substitute(&mut self, input: &mut Value) -> Vec<Substitution> {
        let mut out = Vec::new();
        if !self.learned.is_empty() {
            let mut path = String::from("input");
            self.substitute_in(input, &mut path, &mut out);
        }
        out
    }

    fn substitute_in(&mut self, value: &mut Value, path: &mut String, out: &mut Vec<Substitution>) {
        match value {
            Value::String(text) => {
                self.steps += 1;
                let steps = &mut self.steps;
                let used = &mut self.used;
                // The first created string found in the text says where it came from.
                let mut from: Option<&Learned> = None;
                let sent = match self.learned.get(text.as_str()) {
                    Some(learned) => {
                        used.entry(learned.replayed.clone())
                            .or_insert_with(|| text.clone());
                        from = Some(learned);
                        learned.replayed.clone()
                    }
                    None => {
                        let learned = &self.learned;
                        let rebuilt = replace_tokens(text, |token| {
                            *steps += 1;
                            let found = learned.get(token)?;
                            used.entry(found.replayed.clone())
                                .or_insert_with(|| token.to_owned());
                            from.get_or_insert(found);
                            Some(found.replayed.as_str())
                        });
                        match rebuilt {
                            Some(rebuilt) => rebuilt,
                            None => return,
                        }
                    }
                };
                if let Some(from) = from {
                    out.push(Substitution {
                        path: path.clone(),
                        recorded: std::mem::replace(text, sent.clone()),
                        replayed: sent,
                        from_call: from.from_call,
                        from_path: from.from_path.clone(),
                    });
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let len = path.len();
                    path.push('.');
                    path.push_str(&i.to_string());
                    self.substitute_in(item, path, out);
                    path.truncate(len);
                }
            }
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    let len = path.len();
                    path.push('.');
                    path.push_str(key);
                    self.substitute_in(item, path, out);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// Learns the strings `answered`'s recorded answer holds where the replayed answer holds another
    /// string at the same path (whole values, and tokens of texts that differ token by token).
    pub(crate) fn learn(&mut self, answered: &Answered<'_>) {
        if let Some(input) = answered.input {
            self.know(input);
        }
        let (Outcome::Answer(recorded), Outcome::Answer(replayed)) =
            (answered.recorded, answered.replayed)
        else {
            return;
        };
        if is_list(answered.method) {
            // What a list names existed before: never followed, and never created later.
            self.know(recorded);
            return;
        }
        let mut walk = LearnWalk {
            answered,
            input: answered.input.map(Value::to_string).unwrap_or_default(),
            known: &self.known,
            path: String::new(),
            found: Vec::new(),
            steps: 0,
        };
        walk.pair(recorded, replayed, false);
        self.steps += walk.steps;
        for (recorded, learned) in walk.found {
            // The first place found wins, except that a value of its own beats one inside a text.
            match self.learned.get(&recorded) {
                Some(known) if !known.in_text || learned.in_text => {}
                _ => {
                    self.learned.insert(recorded, learned);
                }
            }
        }
    }

    /// Adds to what is known the strings of `value`, each whole and each of its words and tokens
    /// long enough to be followed.
    fn know(&mut self, value: &Value) {
        match value {
            Value::String(text) => {
                self.steps += 1;
                let long = |word: &&str| word.chars().count() >= MIN_FOLLOWED;
                let words = text.split_whitespace().filter(long);
                let tokens = tokens(text).map(|(_, t)| t).filter(long);
                for piece in std::iter::once(text.as_str()).chain(words).chain(tokens) {
                    self.steps += 1;
                    if !self.known.contains(piece) {
                        self.known.insert(piece.to_owned());
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| self.know(v)),
            Value::Object(map) => map.values().for_each(|v| self.know(v)),
            _ => {}
        }
    }

    /// Gives back, in an answer, the recorded value of each string sent in place of one, so that an
    /// answer echoing the new value compares equal to the recorded one.
    pub(crate) fn restore(&self, outcome: &mut Outcome) {
        if self.used.is_empty() {
            return;
        }
        match outcome {
            Outcome::Answer(answer) => self.restore_in(answer),
            Outcome::Error(error) => {
                if let Some(message) = &mut error.message {
                    self.restore_text(message);
                }
            }
        }
    }

    fn restore_in(&self, value: &mut Value) {
        match value {
            Value::String(text) => self.restore_text(text),
            Value::Array(items) => items.iter_mut().for_each(|v| self.restore_in(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.restore_in(v)),
            _ => {}
        }
    }

    fn restore_text(&self, text: &mut String) {
        if let Some(recorded) = self.used.get(text.as_str()) {
            *text = recorded.clone();
            return;
        }
        if let Some(rebuilt) =
            replace_tokens(text, |token| self.used.get(token).map(String::as_str))
        {
            *text = rebuilt;
        }
    }
}

struct LearnWalk<'a, 'b> {
    answered: &'a Answered<'b>,
    /// The call's own input as JSON text: a string it holds was not created by the call.
    input: String,
    /// What existed before the call ([`Follower::know`]).
    known: &'a HashSet<String>,
    path: String,
    found: Vec<(String, Learned)>,
    steps: usize,
}

impl LearnWalk<'_, '_> {
    fn pair(&mut self, recorded: &Value, replayed: &Value, in_text: bool) {
        match (recorded, replayed) {
            (Value::Object(r), Value::Object(p)) => {
                for (key, rv) in r {
                    if let Some(pv) = p.get(key) {
                        let len = self.path.len();
                        if len > 0 {
                            self.path.push('.');
                        }
                        self.path.push_str(key);
                        self.pair(rv, pv, in_text);
                        self.path.truncate(len);
                    }
                }
            }
            (Value::Array(r), Value::Array(p)) => {
                // Items with an identity pair by it, as the comparison pairs them; one that only
                // one side holds pairs with nothing.
                if let Some(field) = identity(&[r, p]) {
                    let id =
                        |item: &Value| item.get(field).and_then(Value::as_str).map(str::to_owned);
                    let replayed: HashMap<String, &Value> =
                        p.iter().filter_map(|v| Some((id(v)?, v))).collect();
                    for (index, rv) in r.iter().enumerate() {
                        let Some(name) = id(rv) else { continue };
                        if let Some(pv) = replayed.get(&name) {
                            let len = self.path.len();
                            write_path(&mut self.path, &[Segment::Item { id: &name, index }]);
                            self.pair(rv, pv, in_text);
                            self.path.truncate(len);
                        }
                    }
                    return;
                }
                for (i, (rv, pv)) in r.iter().zip(p).enumerate() {
                    let len = self.path.len();
                    if len > 0 {
                        self.path.push('.');
                    }
                    self.path.push_str(&i.to_string());
                    self.pair(rv, pv, in_text);
                    self.path.truncate(len);
                }
            }
            (Value::String(r), Value::String(p)) if r != p => {
                if let (Some(rj), Some(pj)) = (json_in_text(r), json_in_text(p)) {
                    return self.pair(&rj, &pj, true);
                }
                // A placeholder stands for text of any length: the words around it do not pair.
                if r.contains(REDACTED) || p.contains(REDACTED) {
                    return;
                }
                if !r.contains(char::is_whitespace) && !p.contains(char::is_whitespace) {
                    self.consider(r, p, in_text);
                }
                let (rt, pt): (Vec<_>, Vec<_>) = (tokens(r).collect(), tokens(p).collect());
                if rt.len() == pt.len() {
                    for ((_, r), (_, p)) in rt.into_iter().zip(pt) {
                        self.consider(r, p, true);
                    }
                }
            }
            _ => {}
        }
    }

    fn consider(&mut self, recorded: &str, replayed: &str, in_text: bool) {
        self.steps += 1;
        let answered = self.answered;
        let followable = recorded != replayed
            && recorded.chars().count() >= MIN_FOLLOWED
            && !replayed.is_empty()
            && !recorded.contains(REDACTED)
            && !replayed.contains(REDACTED)
            && !self.input.contains(recorded)
            && !self.known.contains(recorded)
            // A value the redactor would hide is a secret, never an id to follow.
            && matches!(answered.redactor.redact_text(replayed), std::borrow::Cow::Borrowed(_))
            && !answered.sent.iter().any(|s| replayed.contains(s));
        if followable {
            self.found.push((
                recorded.to_owned(),
                Learned {
                    replayed: replayed.to_owned(),
                    from_call: answered.call,
                    from_path: self.path.clone(),
                    in_text,
                },
            ));
        }
    }
}

/// Whether `method` lists what a server offers (`tools/list`, `resources/templates/list`, …).
fn is_list(method: &str) -> bool {
    method.ends_with("/list")
}

/// Whether `c` continues a token: ids are letters, digits, `_` and `-`.
fn is_token_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// The whole tokens of `text`, each with its byte offset: maximal runs of token characters.
fn tokens(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let (start, _) = rest.by_ref().find(|&(_, c)| is_token_char(c))?;
        let mut end = text.len();
        while let Some(&(at, c)) = rest.peek() {
            if !is_token_char(c) {
                end = at;
                break;
            }
            rest.next();
        }
        Some((start, &text[start..end]))
    })
}

/// `text` with each token that `replace` maps replaced; `None` when none is.
fn replace_tokens<'r>(
    text: &str,
    mut replace: impl FnMut(&str) -> Option<&'r str>,
) -> Option<String> {
    let mut out: Option<String> = None;
    let mut copied = 0;
    for (start, token) in tokens(text) {
        if token.len() < MIN_FOLLOWED {
            continue;
        }
        if let Some(with) = replace(token) {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len() + 16));
            out.push_str(&text[copied..start]);
            out.push_str(with);
            copied = start + token.len();
        }
    }
    let mut out = out?;
    out.push_str(&text[copied..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(v: Value) -> Outcome {
        Outcome::Answer(v)
    }

    fn learn(follower: &mut Follower, call: usize, input: Value, recorded: Value, replayed: Value) {
        learn_from(follower, call, "tools/call", input, recorded, replayed);
    }

    fn learn_from(
        follower: &mut Follower,
        call: usize,
        method: &str,
        input: Value,
        recorded: Value,
        replayed: Value,
    ) {
        let redactor = Redactor::new();
        follower.learn(&Answered {
            call,
            method,
            input: Some(&input),
            recorded: &answer(recorded),
            replayed: &answer(replayed),
            redactor: &redactor,
            sent: &["tok_filled_in"],
        });
    }

    /// The work of following through a session of `calls` calls, each creating an id that the
    /// next call's input uses, in a field and in a text.
    fn steps_for(calls: usize) -> usize {
        let mut follower = Follower::default();
        for call in 1..=calls {
            let mut input = json!({"orderId": format!("ord_{:05}", call - 1),
                "note": format!("after ord_{:05} and before anything", call - 1)});
            let subs = follower.substitute(&mut input);
            assert_eq!(subs.len(), if call == 1 { 0 } else { 2 }, "{input}");
            learn(
                &mut follower,
                call,
                input,
                json!({"orderId": format!("ord_{call:05}"), "text": format!("created ord_{call:05} now")}),
                json!({"orderId": format!("new_{call:05}"), "text": format!("created new_{call:05} now")}),
            );
        }
        follower.steps
    }

    #[test]
    fn following_grows_with_the_session_not_with_its_square() {
        let (small, large) = (steps_for(200), steps_for(800));
        assert!(small > 0);
        // Linear: four times the calls, about four times the work (all pairs would be sixteen).
        assert!(
            large <= small * 9 / 2,
            "{small} steps for 200 calls, {large} for 800"
        );
    }

    #[test]
    fn tokens_are_whole_runs_of_id_characters() {
        let found: Vec<&str> = tokens("refund pay_1001, not xpay_1001; (ord-7) é1")
            .map(|t| t.1)
            .collect();
        assert_eq!(
            found,
            ["refund", "pay_1001", "not", "xpay_1001", "ord-7", "é1"]
        );
    }

    #[test]
    fn created_ids_are_followed_into_later_inputs_and_restored_in_answers() {
        let mut follower = Follower::default();
        let text = |id: &str| json!({"type": "text", "text": json!({"paymentId": id}).to_string()});
        learn(
            &mut follower,
            2,
            json!({"amount": 12, "cardToken": "[REDACTED]", "memo": "order ord_77"}),
            json!({"content": [text("pay_1001")], "structuredContent": {"paymentId": "pay_1001",
                   "memo": "order ord_77", "note": "paid pay_1001 at 09:00"}}),
            json!({"content": [text("pay_2002")], "structuredContent": {"paymentId": "pay_2002",
                   "memo": "order ord_78", "note": "paid pay_2002 at 09:05"}}),
        );
        let mut input = json!({"paymentId": "pay_1001", "reason": "duplicate of pay_1001.",
            "other": "xpay_1001", "memo": "order ord_77"});
        let subs = follower.substitute(&mut input);
        assert_eq!(
            input,
            json!({"paymentId": "pay_2002", "reason": "duplicate of pay_2002.",
                   "other": "xpay_1001", "memo": "order ord_77"})
        );
        let shown: Vec<String> = subs.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "input.paymentId: pay_1001 → pay_2002 (from call 2, structuredContent.paymentId)",
                "input.reason: \"duplicate of pay_1001.\" → \"duplicate of pay_2002.\" (from call 2, \
                 structuredContent.paymentId)",
            ]
        );
        let mut echoed = answer(
            json!({"refunded": "pay_2002", "text": "refund of pay_2002 done",
            "longer": "pay_20021"}),
        );
        follower.restore(&mut echoed);
        assert_eq!(
            echoed,
            answer(
                json!({"refunded": "pay_1001", "text": "refund of pay_1001 done",
                "longer": "pay_20021"})
            )
        );
    }

    #[test]
    fn list_entries_and_strings_an_earlier_input_held_are_never_followed() {
        let mut follower = Follower::default();
        // A newer server lists other resources, other tools first: nothing a later call uses.
        learn_from(
            &mut follower,
            1,
            "resources/list",
            json!({}),
            json!({"resources": [{"uri": "test://static/resource/1", "name": "Resource 1"}]}),
            json!({"resources": [{"uri": "demo://resource/static/document/architecture.md",
                                  "name": "architecture.md"}]}),
        );
        learn_from(
            &mut follower,
            2,
            "tools/list",
            json!({}),
            json!({"tools": [{"name": "longRunningOperation"}]}),
            json!({"tools": [{"name": "get-annotated-message"}]}),
        );
        // A call that answers a listed URI, where the new server answers another: still not created.
        learn(
            &mut follower,
            3,
            json!({"resourceId": 1}),
            json!({"resource": {"uri": "test://static/resource/1"}}),
            json!({"resource": {"uri": "demo://resource/dynamic/text/1"}}),
        );
        // A string the client sent before is not created by a later answer that holds it.
        learn(
            &mut follower,
            4,
            json!({"label": "widget-alpha"}),
            json!({"ok": true}),
            json!({"ok": true}),
        );
        learn(
            &mut follower,
            5,
            json!({}),
            json!({"label": "widget-alpha"}),
            json!({"label": "widget-beta"}),
        );
        let mut input = json!({"uri": "test://static/resource/1", "tool": "longRunningOperation",
                               "label": "widget-alpha"});
        let before = input.clone();
        let subs = follower.substitute(&mut input);
        assert_eq!(subs, [], "{input}");
        assert_eq!(input, before);
    }

    #[test]
    fn list_items_pair_by_identity_and_a_note_shows_what_was_sent() {
        let mut follower = Follower::default();
        // The new server answers the same orders in another order: each reference follows its order.
        learn(
            &mut follower,
            1,
            json!({"count": 2}),
            json!({"orders": [{"id": "ord_1001", "ref": "ref_aaaa01"}, {"id": "ord_1002", "ref": "ref_bbbb02"}]}),
            json!({"orders": [{"id": "ord_1002", "ref": "ref_bbbb99"}, {"id": "ord_1001", "ref": "ref_aaaa77"}]}),
        );
        let mut input =
            json!({"ref": "ref_aaaa01", "note": "ship ref_aaaa01 and ref_bbbb02 today"});
        let subs = follower.substitute(&mut input);
        assert_eq!(
            input,
            json!({"ref": "ref_aaaa77", "note": "ship ref_aaaa77 and ref_bbbb99 today"})
        );
        // Each note holds the whole string sent, exactly as the server received it.
        for sub in &subs {
            let at = sub.path.strip_prefix("input.").unwrap();
            assert_eq!(input[at], sub.replayed.as_str(), "{sub}");
        }
        let shown: Vec<String> = subs.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "input.note: \"ship ref_aaaa01 and ref_bbbb02 today\" → \"ship ref_aaaa77 and ref_bbbb99 \
                 today\" (from call 1, orders[ord_1001].ref)",
                "input.ref: ref_aaaa01 → ref_aaaa77 (from call 1, orders[ord_1001].ref)",
            ]
        );
    }

    #[test]
    fn short_redacted_secret_and_input_strings_are_never_followed() {
        let mut follower = Follower::default();
        learn(
            &mut follower,
            1,
            json!({"name": "alpha-widget"}),
            json!({"short": "ab_123", "tiny": "ab_12", "key": "[REDACTED]", "name": "alpha-widget",
                   "token": "sk-proj-aaaaaaaaaaaaaaaaaaaaaaaa", "echo": "value1"}),
            json!({"short": "ab_456", "tiny": "ab_45", "key": "abcdefgh", "name": "beta-widget",
                   "token": "sk-proj-bbbbbbbbbbbbbbbbbbbbbbbb", "echo": "tok_filled_in"}),
        );
        let mut input = json!([
            "ab_123",
            "ab_12",
            "[REDACTED]",
            "alpha-widget",
            "sk-proj-aaaaaaaaaaaaaaaaaaaaaaaa",
            "value1"
        ]);
        let subs = follower.substitute(&mut input);
        assert_eq!(subs.len(), 1, "{subs:?}");
        assert_eq!(
            input,
            json!([
                "ab_456",
                "ab_12",
                "[REDACTED]",
                "alpha-widget",
                "sk-proj-aaaaaaaaaaaaaaaaaaaaaaaa",
                "value1"
            ])
        );
    }
}

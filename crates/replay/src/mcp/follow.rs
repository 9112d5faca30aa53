//! Following created ids: a string that an earlier call's recorded answer held and a later call's
//! recorded input uses (`pay` answered `paymentId: pay_1001`, `refund` was asked for `pay_1001`) is
//! sent as the replayed answer holds it (`pay_2002`), and answers that echo the new value compare
//! equal to the recorded ones.
//!
//! The candidates are indexed by their recorded text as each answer arrives, and each later input is
//! read once, looking up its whole strings and the whole tokens of its texts: the work grows with
//! the session's size, never with the product of its answers and inputs.

use std::collections::HashMap;
use std::fmt;

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
    /// Where in the request: `input.paymentId`, or for a token of a text, the text's path.
    pub path: String,
    /// The recorded string.
    pub recorded: String,
    /// The string sent instead.
    pub replayed: String,
    /// The call whose answer held both (its position in the recording, from 1).
    pub from_call: usize,
    /// Where in that answer: `structuredContent.paymentId`.
    pub from_path: String,
}

impl fmt::Display for Substitution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} → {} (from call {}, {})",
            self.path, self.recorded, self.replayed, self.from_call, self.from_path
        )
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
    /// Strings and tokens looked up or considered so far: the work done, which a test holds to grow
    /// with the session's size.
    steps: usize,
}

/// What a call may learn from: its input, its recorded and replayed outcomes, and the values that
/// must never be followed (anything the redactor hides, anything holding a filled secret).
pub(crate) struct Answered<'a> {
    pub(crate) call: usize,
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
                let mut found = |recorded: &str, learned: &Learned| {
                    self.used
                        .entry(learned.replayed.clone())
                        .or_insert_with(|| recorded.to_owned());
                    out.push(Substitution {
                        path: path.clone(),
                        recorded: recorded.to_owned(),
                        replayed: learned.replayed.clone(),
                        from_call: learned.from_call,
                        from_path: learned.from_path.clone(),
                    });
                };
                if let Some(learned) = self.learned.get(text.as_str()) {
                    found(text, learned);
                    *text = learned.replayed.clone();
                    return;
                }
                let rebuilt = replace_tokens(text, |token| {
                    *steps += 1;
                    let learned = self.learned.get(token)?;
                    found(token, learned);
                    Some(learned.replayed.as_str())
                });
                if let Some(rebuilt) = rebuilt {
                    *text = rebuilt;
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
        let (Outcome::Answer(recorded), Outcome::Answer(replayed)) =
            (answered.recorded, answered.replayed)
        else {
            return;
        };
        let mut walk = LearnWalk {
            answered,
            input: answered.input.map(Value::to_string).unwrap_or_default(),
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
        let redactor = Redactor::new();
        follower.learn(&Answered {
            call,
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
                "input.reason: pay_1001 → pay_2002 (from call 2, structuredContent.paymentId)",
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

//! The final check every stored line passes, after whatever redacted it: no provider token and no
//! known secret value may be in it, wherever it stands (a value, an object key, an error code, a
//! name no rule looked at).
//!
//! Each writer redacts in its own way, and a hole between them (a key no walk looked at, a field a
//! format keeps as it was sent) lets a credential through. The gate does not redact: it looks at
//! the bytes about to be stored and says whether they may be, and if not, why, naming the rule or
//! the known value's name and never the value, so that a writer can refuse the line and say so.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::KnownSecrets;
use crate::byte_text::{Words, find_token};

/// The final check on a line before it is stored: the provider token formats and JWTs anywhere in
/// it (keys and names included, which no redaction walk may have looked at), and the values of the
/// [`KnownSecrets`] it watches, as written and as JSON, HTML and XML escape them.
///
/// It does no I/O, never fails, and takes time linear in the line for each watched value. Clones
/// share the watched sets, so a value learnt during a run is checked from then on.
///
/// ```
/// use calltape_redact::{Gate, GateHit, KnownSecrets};
///
/// let known = KnownSecrets::new();
/// let gate = Gate::new().watch(&known);
/// assert_eq!(gate.check(br#"{"answer":"ok"}"#), None);
///
/// let hit = gate.check(br#"{"ghp_0123456789abcdefghijklmnopqrstuvwxyz":"stored"}"#).unwrap();
/// assert_eq!(hit.to_string(), "a github-pat token");
///
/// known.add("CARD", "tok_test_4eC39HqLy");
/// let hit = gate.check(br#"{"cards":{"tok_test_4eC39HqLy":"stored"}}"#).unwrap();
/// assert!(matches!(&hit, GateHit::Known { name, .. } if name == "CARD"));
/// assert_eq!(hit.to_string(), "the value of CARD");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Gate {
    watched: Vec<KnownSecrets>,
}

/// The shortest known value the gate looks for: a shorter one would match ordinary text (a
/// number, a word) and refuse lines that hold no secret. Such a value is still hidden where it is
/// known to be.
pub const MIN_GATED: usize = 6;

/// Why the [`Gate`] stopped a line. It names the rule or the value's name, never the value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GateHit {
    /// A token of a provider's fixed-prefix format, or a JWT.
    Token {
        /// The rule that knows the format (gitleaks' rule id, such as `github-pat`), or `jwt`.
        rule: &'static str,
        /// The byte offset of the token in the line.
        at: usize,
    },
    /// The value of a known secret.
    Known {
        /// The name the value was added under.
        name: String,
        /// The byte offset of the value in the line.
        at: usize,
    },
}

impl GateHit {
    /// The byte offset in the line of what was found.
    pub fn at(&self) -> usize {
        match self {
            GateHit::Token { at, .. } | GateHit::Known { at, .. } => *at,
        }
    }
}

impl fmt::Display for GateHit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GateHit::Token { rule, .. } => write!(f, "a {rule} token"),
            GateHit::Known { name, .. } => write!(f, "the value of {name}"),
        }
    }
}

impl Gate {
    /// A gate that looks for the provider token formats and JWTs only.
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Also looks for the values of `known` (at least [`MIN_GATED`] bytes long), those added to
    /// it later included.
    pub fn watch(mut self, known: &KnownSecrets) -> Gate {
        self.watched.push(known.clone());
        self
    }

    /// What stops `line` (text, such as a JSON line or a report), or `None` when it may be stored.
    /// Known values are looked for first; then tokens, in words of letters, digits, `-`, `_` and
    /// `.` (a JSON escape such as `\n` ends a word).
    pub fn check(&self, line: &[u8]) -> Option<GateHit> {
        self.check_known(line)
            .or_else(|| token_hit(line, Words::Text))
    }

    /// [`check`](Self::check) for bytes that are not text (a sidecar blob): a token is also looked
    /// for without the byte before it, which may be a length byte of the binary format, as
    /// [`find_token_in_bytes`](crate::find_token_in_bytes) does.
    pub fn check_bytes(&self, data: &[u8]) -> Option<GateHit> {
        self.check_known(data)
            .or_else(|| token_hit(data, Words::Binary))
    }

    fn check_known(&self, data: &[u8]) -> Option<GateHit> {
        self.watched.iter().find_map(|known| {
            known
                .find_from(data, MIN_GATED)
                .map(|(name, at)| GateHit::Known { name, at })
        })
    }
}

/// How many lines a gated [`RedactingWriter`](crate::RedactingWriter) did not write: clones share
/// the count, so one count serves every writer a program makes (one per log event, say).
#[derive(Debug, Clone, Default)]
pub struct RefusedLines(Arc<AtomicU64>);

impl RefusedLines {
    /// A count at zero.
    pub fn new() -> RefusedLines {
        RefusedLines::default()
    }

    /// How many lines were refused so far.
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    pub(crate) fn add(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// The first token in `data`, named by its rule.
fn token_hit(data: &[u8], words: Words) -> Option<GateHit> {
    let found = find_token(data, words)?;
    let rule = crate::provider::rule_at(data, found.start).unwrap_or("jwt");
    Some(GateHit::Token {
        rule,
        at: found.start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_gate_stops_table() {
        let known = KnownSecrets::new();
        known.add("CARD", "tok_test_4eC39HqLy");
        known.add("PIN", "4242");
        known.add("QUOTED", "pa\"ssword-1");
        let gate = Gate::new().watch(&known);
        const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlXzEyMw";
        // (line, what stops it)
        let table: Vec<(String, Option<&str>)> = vec![
            (r#"{"a":"ok","n":4242}"#.into(), None),
            (
                r#"{"ghp_0123456789abcdefghijklmnopqrstuvwxyz":1}"#.into(),
                Some("a github-pat token"),
            ),
            (
                r#"{"m":"line\nghp_0123456789abcdefghijklmnopqrstuvwxyz"}"#.into(),
                Some("a github-pat token"),
            ),
            (
                r#"{"code":"sk-proj-abcdefghijklmnopqrstuvwx"}"#.into(),
                Some("a openai-api-key token"),
            ),
            (format!("<td>{JWT}</td>"), Some("a jwt token")),
            (
                r#"{"cards":{"tok_test_4eC39HqLy":"stored"}}"#.into(),
                Some("the value of CARD"),
            ),
            (
                r#"{"p":"pa\"ssword-1"}"#.into(),
                Some("the value of QUOTED"),
            ),
            // Slugs and words that only hold a prefix are no tokens in text.
            (r#"{"tool":"ask-questions-about-the-weather"}"#.into(), None),
            (
                r#"{"x":"Xghp_0123456789abcdefghijklmnopqrstuvwxyz"}"#.into(),
                None,
            ),
            ("[REDACTED] and [REDACTED:2]".into(), None),
        ];
        for (line, expected) in table {
            let hit = gate.check(line.as_bytes());
            assert_eq!(
                hit.as_ref().map(ToString::to_string).as_deref(),
                expected,
                "{line}"
            );
            if let Some(hit) = hit {
                assert!(!hit.to_string().contains("tok_test"));
                assert!(hit.at() < line.len());
            }
        }
        // Binary data: a token stuck to a length byte.
        assert_eq!(
            gate.check_bytes(b"\x00Xghp_0123456789abcdefghijklmnopqrstuvwxyz\x00")
                .map(|h| h.to_string())
                .as_deref(),
            Some("a github-pat token")
        );
    }

    #[test]
    fn a_value_learnt_after_the_gate_was_made_is_checked() {
        let known = KnownSecrets::new();
        let gate = Gate::new().watch(&known);
        assert_eq!(gate.check(b"x later-value-1"), None);
        known.add("LATE", "later-value-1");
        assert_eq!(
            gate.check(b"x later-value-1"),
            Some(GateHit::Known {
                name: "LATE".into(),
                at: 2
            })
        );
    }

    #[test]
    fn the_check_is_linear() {
        let known = KnownSecrets::new();
        known.add("K", "aaaaaaaaaaab");
        let gate = Gate::new().watch(&known);
        let unit = "aaaaaaaaaaaa ghp_ sk-\\n\\u0000 eyJ.";
        let small = unit.repeat(1_000);
        let large = unit.repeat(4_000);
        let steps = |text: &str| crate::steps_of(|| drop(gate.check(text.as_bytes())));
        assert!(steps(&large) <= 9 * steps(&small) / 2);
    }
}

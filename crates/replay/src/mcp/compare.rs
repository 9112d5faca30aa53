//! Comparing a recorded outcome with a replayed one: every differing path, into texts that hold JSON,
//! with `[REDACTED]` matching anything and `--ignore` globs skipping whole subtrees.
//!
//! A list whose items have an identity (a `uri`, `uriTemplate`, `name` or `id` unique in both lists,
//! [`identity`]) is compared item by item by it, whatever the order: `tools[add]` removed,
//! `tools[get-sum]` added, `tools[echo].description` changed. Other arrays are compared by position.
//!
//! What differs by protocol era at the top of an answer is set aside: see
//! [`Comparer::compare_call`].

use std::collections::HashMap;
use std::fmt;

use calltape_recorder::glob::{DotGlobs, Segment as Seg, identity, path_text};
use calltape_recorder::mcp::{CallError, ErrorCode, INTERNAL_ERROR, Outcome};
use calltape_redact::REDACTED;
use calltape_stdio_bridge::vocab::{META_SERVER_INFO, RESOURCES_READ};
use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind};

/// How a replayed call compares with its recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// The same answer (or error), up to ignored paths and redacted values.
    Same,
    /// A different answer, or an error with another code or message.
    Changed,
    /// Answered when recorded, an error now.
    NewError,
    /// An error when recorded, answered now.
    GoneError,
}

impl Status {
    /// The status as reports write it: `same`, `changed`, `new-error`, `gone-error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Same => "same",
            Self::Changed => "changed",
            Self::NewError => "new-error",
            Self::GoneError => "gone-error",
        }
    }

    /// Every status, in report order.
    pub const ALL: [Status; 4] = [Self::Same, Self::Changed, Self::NewError, Self::GoneError];
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One place where the replayed outcome differs from the recorded one.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Difference {
    /// The dot path, such as `structuredContent.price`, `content.0.text.price` or
    /// `tools[echo].description` ([`glob`](calltape_recorder::glob)'s notation, which `--ignore`
    /// reads); `error.message` for an error; empty for the whole answer.
    pub path: String,
    /// The recorded value; `None` when the path did not exist.
    pub recorded: Option<Value>,
    /// The replayed value; `None` when the path no longer exists.
    pub replayed: Option<Value>,
    /// Whether the path names a whole list item (`tools[add]`) that only one side holds: removed
    /// when only recorded, added when only replayed.
    pub item: bool,
}

impl Difference {
    /// A difference at `path`, not a whole list item.
    pub fn new(path: impl Into<String>, recorded: Option<Value>, replayed: Option<Value>) -> Self {
        Self {
            path: path.into(),
            recorded,
            replayed,
            item: false,
        }
    }

    /// `removed` or `added` for a whole list item that only one side holds.
    pub fn item_change(&self) -> Option<&'static str> {
        match (self.item, &self.recorded, &self.replayed) {
            (true, Some(_), None) => Some("removed"),
            (true, None, Some(_)) => Some("added"),
            _ => None,
        }
    }
}

/// The result of comparing one call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Comparison {
    /// The verdict.
    pub status: Status,
    /// Each difference; empty when `status` is [`Status::Same`].
    pub differences: Vec<Difference>,
    /// The answer of the side that did not fail: the recorded answer of a [`Status::NewError`], the
    /// replayed answer of a [`Status::GoneError`]; `None` otherwise.
    pub answer: Option<Value>,
}

impl Comparison {
    /// No difference.
    pub(crate) fn same() -> Self {
        Self {
            status: Status::Same,
            differences: Vec::new(),
            answer: None,
        }
    }
}

/// Compares recorded outcomes with replayed ones; build it once, use it for every call.
#[derive(Debug, Clone, Default)]
pub struct Comparer {
    ignore: Option<DotGlobs>,
    shape: bool,
    /// What it was built from, so that rules for some calls can add to it (`mask.rs`).
    built_from: ComparerBuilder,
}

/// Builds a [`Comparer`].
#[derive(Debug, Clone, Default)]
pub struct ComparerBuilder {
    globs: Vec<String>,
    shape: bool,
}

impl ComparerBuilder {
    /// Skips the paths matching `globs`: dot paths where `*` is one key or index and `**` any number of
    /// them, zero included (`**.quotedAt`, `content.*.text`, `error.message`), by the rules of
    /// [`calltape_recorder::glob`]. Each argument may hold several globs separated by commas.
    pub fn ignore<I, S>(mut self, globs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for arg in globs {
            self.globs.extend(
                arg.as_ref()
                    .split(',')
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(str::to_owned),
            );
        }
        self
    }

    /// Compares structure only: object keys, value types and array element shapes.
    pub fn shape(mut self, shape: bool) -> Self {
        self.shape = shape;
        self
    }

    /// Compiles the globs once.
    pub fn build(self) -> Result<Comparer, Error> {
        let built_from = self.clone();
        let ignore = if self.globs.is_empty() {
            None
        } else {
            let globs = DotGlobs::new(&self.globs).map_err(ErrorKind::IgnoreGlob)?;
            Some(globs)
        };
        Ok(Comparer {
            ignore,
            shape: self.shape,
            built_from,
        })
    }
}

struct Walk<'c, 'v> {
    comparer: &'c Comparer,
    path: Vec<Seg<'v>>,
    out: Vec<Difference>,
    /// Reused for every glob check.
    scratch: String,
}

impl<'c> Walk<'c, '_> {
    fn new(comparer: &'c Comparer) -> Self {
        Self {
            comparer,
            path: Vec::new(),
            out: Vec::new(),
            scratch: String::new(),
        }
    }

    fn ignored(&mut self) -> bool {
        self.comparer.ignored(&self.path, &mut self.scratch)
    }
}

impl Comparer {
    /// A comparer with no ignored paths, comparing values.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts building a comparer.
    pub fn builder() -> ComparerBuilder {
        ComparerBuilder::default()
    }

    /// Compares a recorded outcome with the replayed one. Both should already be redacted with the
    /// same rules. What differs by protocol era at the top of an answer is set aside, as
    /// [`compare_call`](Self::compare_call) says, the method's own rules apart.
    pub fn compare(&self, recorded: &Outcome, replayed: &Outcome) -> Comparison {
        self.compare_call("", recorded, replayed)
    }

    /// [`compare`](Self::compare) for a call of `method`.
    ///
    /// A recording of one protocol era may be replayed against a server of the other, through the
    /// bridge's translation. The comparison sets aside exactly what differs by era at the top of an
    /// answer, and nothing else:
    ///
    /// - `resultType`: a 2026-07-28 server puts it on every result, a server of the handshake era never
    ///   does. An absent one reads as `"complete"`, as the 2026-07-28 revision tells clients to read it:
    ///   `"complete"` against none is the same, `"input_required"` against none is a change.
    /// - `_meta["io.modelcontextprotocol/serverInfo"]`: a 2026-07-28 server stamps its info on each
    ///   result; in the handshake era it is said once, in `initialize`'s answer, which a replay never
    ///   compares either. A `_meta` left empty without it counts as absent.
    /// - `cacheScope` and `ttlMs` on the answer to a cacheable method (`resources/read` and the list
    ///   methods, `tools/list`, `resources/templates/list`, …), known by `method`: 2026-07-28
    ///   requires them there, a server of the handshake era has none, so when such a server answers
    ///   through the translation they are the translation's values, not the server's. They are hints
    ///   on how long a client may keep the answer, not the answer, so a server that changes them
    ///   changes no answer either.
    ///
    /// Anywhere below the top (a tool's `structuredContent`, a text that holds JSON) these names are
    /// compared like any other.
    pub fn compare_call(&self, method: &str, recorded: &Outcome, replayed: &Outcome) -> Comparison {
        let mut walk = Walk::new(self);
        let mut answer = None;
        let status = match (recorded, replayed) {
            // The common case, settled by one structural equality check: nothing to walk.
            (Outcome::Answer(r), Outcome::Answer(p)) if r == p => Status::Same,
            (Outcome::Answer(r), Outcome::Answer(p)) if has_era_fields(r) || has_era_fields(p) => {
                let (mut r, mut p) = (r.clone(), p.clone());
                set_era_fields_aside(&mut r, &mut p, is_cacheable(method));
                // The copies live only for this call: compared in a walk of their own.
                let mut copies = Walk::new(self);
                copies.value(&r, &p);
                walk.out = copies.out;
                if walk.out.is_empty() {
                    Status::Same
                } else {
                    Status::Changed
                }
            }
            (Outcome::Answer(r), Outcome::Answer(p)) => {
                walk.value(r, p);
                if walk.out.is_empty() {
                    Status::Same
                } else {
                    Status::Changed
                }
            }
            (Outcome::Error(r), Outcome::Error(p)) => {
                walk.error(r, p);
                if walk.out.is_empty() {
                    Status::Same
                } else {
                    Status::Changed
                }
            }
            (Outcome::Answer(r), Outcome::Error(p)) => {
                walk.out
                    .push(Difference::new("error", None, Some(p.to_value())));
                answer = Some(r.clone());
                Status::NewError
            }
            (Outcome::Error(r), Outcome::Answer(p)) => {
                walk.out
                    .push(Difference::new("error", Some(r.to_value()), None));
                answer = Some(p.clone());
                Status::GoneError
            }
        };
        Comparison {
            status,
            differences: walk.out,
            answer,
        }
    }

    /// This comparer with `globs` skipped too.
    pub(crate) fn and_ignore(&self, globs: &[&str]) -> Result<Comparer, Error> {
        self.built_from.clone().ignore(globs).build()
    }

    /// Whether `path` matches an `--ignore` glob; `scratch` holds the path as globset reads it.
    fn ignored(&self, path: &[Seg<'_>], scratch: &mut String) -> bool {
        self.ignore
            .as_ref()
            .is_some_and(|ignore| ignore.is_match_with(path, scratch))
    }
}

/// Whether `method`'s 2026-07-28 result carries cache hints: `resources/read` and the list methods.
fn is_cacheable(method: &str) -> bool {
    method == RESOURCES_READ || method.ends_with("/list")
}

/// Whether an answer has a top-level member that differs by protocol era.
fn has_era_fields(answer: &Value) -> bool {
    answer.as_object().is_some_and(|a| {
        ["resultType", "_meta", "cacheScope", "ttlMs"]
            .iter()
            .any(|k| a.contains_key(*k))
    })
}

/// Sets aside in both answers what differs by protocol era (see the module docs): an absent
/// `resultType` becomes `"complete"` when the other answer has one, the server-info stamp goes (and a
/// `_meta` it leaves empty), and the cache hints of a cacheable method's answer go.
fn set_era_fields_aside(recorded: &mut Value, replayed: &mut Value, cacheable: bool) {
    let (Value::Object(r), Value::Object(p)) = (recorded, replayed) else {
        return;
    };
    if r.contains_key("resultType") || p.contains_key("resultType") {
        for answer in [&mut *r, &mut *p] {
            answer
                .entry("resultType")
                .or_insert_with(|| Value::from("complete"));
        }
    }
    for answer in [r, p] {
        if let Some(Value::Object(meta)) = answer.get_mut("_meta") {
            meta.remove(META_SERVER_INFO);
            if meta.is_empty() {
                answer.remove("_meta");
            }
        }
        if cacheable {
            answer.remove("cacheScope");
            answer.remove("ttlMs");
        }
    }
}

/// Whether an object key is one the redactor put in place of a secret key: `[REDACTED]`, or
/// `[REDACTED:2]` and on when several keys of one object were secrets.
fn is_redacted_key(key: &str) -> bool {
    redacted_key_number(key).is_some()
}

/// 1 for `[REDACTED]`, N for `[REDACTED:N]`; `None` for any other key.
fn redacted_key_number(key: &str) -> Option<u64> {
    if key == REDACTED {
        return Some(1);
    }
    key.strip_prefix("[REDACTED:")?
        .strip_suffix(']')
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))?
        .parse()
        .ok()
}

impl<'v> Walk<'_, 'v> {
    fn push(&mut self, recorded: Option<&Value>, replayed: Option<&Value>) {
        if self.ignored() {
            return;
        }
        let item = matches!(self.path.last(), Some(Seg::Item { .. }))
            && (recorded.is_none() || replayed.is_none());
        self.out.push(Difference {
            path: path_text(&self.path),
            recorded: recorded.cloned(),
            replayed: replayed.cloned(),
            item,
        });
    }

    fn error(&mut self, recorded: &'v CallError, replayed: &'v CallError) {
        self.path.push(Seg::Key("error"));
        if recorded.code != replayed.code {
            self.path.push(Seg::Key("code"));
            let (r, p) = (recorded.code.to_value(), replayed.code.to_value());
            self.push(Some(&r), Some(&p));
            self.path.pop();
        }
        // An internal error's message may vary per call (a stack address, a request id): it is
        // shown, never compared.
        let internal = [&recorded.code, &replayed.code]
            .iter()
            .all(|code| **code == ErrorCode::Number(INTERNAL_ERROR));
        if !self.comparer.shape
            && !internal
            && let Some(r) = &recorded.message
        {
            let same = match &replayed.message {
                Some(p) => r == p || (r.contains(REDACTED) && matches_pattern(r, p)),
                None => false,
            };
            if !same {
                self.path.push(Seg::Key("message"));
                let r = Value::String(r.clone());
                let p = replayed.message.clone().map(Value::String);
                self.push(Some(&r), p.as_ref());
                self.path.pop();
            }
        }
        self.path.pop();
    }

    fn value(&mut self, recorded: &'v Value, replayed: &'v Value) {
        if recorded == replayed {
            return;
        }
        if let Value::String(r) = recorded
            && r == REDACTED
        {
            return;
        }
        match (recorded, replayed) {
            (Value::Object(r), Value::Object(p)) => {
                if self.ignored() {
                    return;
                }
                self.object(r, p);
            }
            (Value::Array(r), Value::Array(p)) => {
                if self.ignored() {
                    return;
                }
                if self.comparer.shape {
                    if r.is_empty() || p.is_empty() {
                        return;
                    }
                    for (i, pv) in p.iter().enumerate() {
                        self.path.push(Seg::Index(i));
                        self.value(&r[i.min(r.len() - 1)], pv);
                        self.path.pop();
                    }
                    return;
                }
                if let Some(field) = identity(&[r, p]) {
                    return self.items(r, p, field);
                }
                for i in 0..r.len().max(p.len()) {
                    self.path.push(Seg::Index(i));
                    match (r.get(i), p.get(i)) {
                        (Some(rv), Some(pv)) => self.value(rv, pv),
                        (rv, pv) => self.push(rv, pv),
                    }
                    self.path.pop();
                }
            }
            (Value::String(r), Value::String(p)) => {
                if let (Some(rj), Some(pj)) = (json_in_text(r), json_in_text(p)) {
                    // The parsed values live only for this call: compare them in a walk of their own
                    // that starts at this path, and keep what it found.
                    let mut inner = Walk::new(self.comparer);
                    inner.path.extend(self.path.iter().copied());
                    inner.value(&rj, &pj);
                    self.out.append(&mut inner.out);
                    return;
                }
                if self.comparer.shape || (r.contains(REDACTED) && matches_pattern(r, p)) {
                    return;
                }
                self.push(Some(recorded), Some(replayed));
            }
            (Value::Number(r), Value::Number(p)) => {
                if self.comparer.shape || r.as_f64() == p.as_f64() {
                    return;
                }
                self.push(Some(recorded), Some(replayed));
            }
            (Value::Bool(_), Value::Bool(_)) if self.comparer.shape => {}
            _ => self.push(Some(recorded), Some(replayed)),
        }
    }
}

impl<'v> Walk<'_, 'v> {
    /// Two objects, key by key. A key the redactor put in place of a secret one (`[REDACTED]`,
    /// `[REDACTED:2]`) on the recorded side stands for any key only the replayed side holds, as a
    /// `"[REDACTED]"` value stands for any value.
    fn object(&mut self, r: &'v Map<String, Value>, p: &'v Map<String, Value>) {
        let mut secret_keys = Vec::new();
        for (key, rv) in r {
            match p.get(key) {
                Some(pv) => {
                    self.path.push(Seg::Key(key));
                    self.value(rv, pv);
                    self.path.pop();
                }
                None if is_redacted_key(key) => secret_keys.push((key, rv)),
                None => {
                    self.path.push(Seg::Key(key));
                    self.push(Some(rv), None);
                    self.path.pop();
                }
            }
        }
        // In the redactor's order: `[REDACTED]`, then `[REDACTED:2]`, …
        secret_keys.sort_by_key(|(key, _)| redacted_key_number(key));
        let mut secret_keys = secret_keys.into_iter();
        for (key, pv) in p {
            if r.contains_key(key) {
                continue;
            }
            self.path.push(Seg::Key(key));
            match secret_keys.next() {
                Some((_, rv)) => self.value(rv, pv),
                None => self.push(None, Some(pv)),
            }
            self.path.pop();
        }
        for (key, rv) in secret_keys {
            self.path.push(Seg::Key(key));
            self.push(Some(rv), None);
            self.path.pop();
        }
    }

    /// Two lists whose items are named by `field` ([`identity`]): each recorded item with the
    /// replayed item of its name, then the items only one side holds, whatever the order.
    fn items(&mut self, r: &'v [Value], p: &'v [Value], field: &str) {
        let id = |item: &'v Value| item.get(field).and_then(Value::as_str).unwrap_or_default();
        let mut replayed: HashMap<&str, (usize, &'v Value)> =
            p.iter().enumerate().map(|(i, v)| (id(v), (i, v))).collect();
        for (index, rv) in r.iter().enumerate() {
            let name = id(rv);
            self.path.push(Seg::Item { id: name, index });
            match replayed.remove(name) {
                Some((_, pv)) => self.value(rv, pv),
                None => self.push(Some(rv), None),
            }
            self.path.pop();
        }
        for (index, pv) in p.iter().enumerate() {
            let name = id(pv);
            if replayed.contains_key(name) {
                self.path.push(Seg::Item { id: name, index });
                self.push(None, Some(pv));
                self.path.pop();
            }
        }
    }
}

/// A text that holds a JSON object or array, parsed.
pub(crate) fn json_in_text(text: &str) -> Option<Value> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(|v| v.is_object() || v.is_array())
}

/// Whether `text` matches `pattern`, where each `[REDACTED]` in the pattern stands for any text
/// (empty included). Leftmost matching of each literal piece is enough for a pattern of this kind, so
/// the check is linear in the texts' lengths.
pub(crate) fn matches_pattern(pattern: &str, text: &str) -> bool {
    let mut pieces = pattern.split(REDACTED);
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests;

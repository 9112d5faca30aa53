//! The configured redactor and its builder.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, NameList};
use crate::json;
use crate::keys;
use crate::name_cache::{NAME, NameCache, SECRET};
use crate::names::is_default_redacted;
use crate::pairs;
use crate::schema::{self, Action, Kind, Place};
use crate::span::{self, Span};
use crate::text::{self, Open};
use crate::writer;
use crate::{REDACTED, step};

type NameTest = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The configuration shared by every clone of a [`Redactor`].
///
/// Its methods, all in this file, are what needs the configuration as a
/// whole: a field name's verdict and the steps of a value walk. The rules of
/// the other modules are free functions that take it: [`json::scan_any`]
/// (the entry of every scan, JSON or text), [`json::scan_json_lines`],
/// [`text::scan_text`] and [`text::scan_text_open`], which call
/// [`crate::assign::assignment`] and [`crate::context::context_rule`], and
/// [`keys::key_facts`].
pub(crate) struct Inner {
    extra: Vec<String>,
    keep: Vec<String>,
    tests: Vec<NameTest>,
    pub(crate) text_rules: bool,
    pub(crate) max_depth: Option<usize>,
}

impl Inner {
    /// This configuration's decision for a field name.
    pub(crate) fn is_redacted_name(&self, name: &str) -> bool {
        self.is_redacted_bytes(name.as_bytes())
    }

    /// [`is_redacted_name`](Inner::is_redacted_name) on the bytes of a name.
    pub(crate) fn is_redacted_bytes(&self, name: &[u8]) -> bool {
        if self
            .keep
            .iter()
            .any(|k| k.as_bytes().eq_ignore_ascii_case(name))
        {
            return false;
        }
        is_default_redacted(name)
            || self
                .extra
                .iter()
                .any(|k| k.as_bytes().eq_ignore_ascii_case(name))
            || (!self.tests.is_empty()
                && std::str::from_utf8(name)
                    .is_ok_and(|name| self.tests.iter().any(|test| test(name))))
    }

    /// Redacts a scalar at `place`, `depth` deep, on the spot, or queues a
    /// container.
    fn visit<'v>(
        &self,
        v: &'v mut Value,
        depth: usize,
        place: Place,
        spans: &mut Vec<Span>,
        stack: &mut Vec<(&'v mut Value, usize, Kind)>,
    ) {
        step!(1);
        if self.max_depth.is_some_and(|m| depth > m) {
            replace(v);
            return;
        }
        match schema::action(place, v) {
            Action::Whole => replace(v),
            Action::Walk(kind) => stack.push((v, depth, kind)),
            Action::Scalar => {
                if let Value::String(s) = v {
                    self.string_spans(s, spans);
                    if let Cow::Owned(new) = span::apply(s, spans) {
                        *s = new;
                    }
                }
            }
        }
    }

    /// The value at `place`, `depth` deep, redacted: a copy of a scalar or
    /// of a value replaced whole, or (`Err`) the kind to walk a container
    /// as.
    fn copy_leaf(
        &self,
        v: &Value,
        depth: usize,
        place: Place,
        spans: &mut Vec<Span>,
    ) -> Result<Value, Kind> {
        step!(1);
        if self.max_depth.is_some_and(|m| depth > m) {
            return Ok(replaced_copy(v));
        }
        match schema::action(place, v) {
            Action::Whole => Ok(replaced_copy(v)),
            Action::Walk(kind) => Err(kind),
            Action::Scalar => Ok(match v {
                Value::String(s) => {
                    self.string_spans(s, spans);
                    Value::String(span::apply(s, spans).into_owned())
                }
                other => other.clone(),
            }),
        }
    }

    /// The spans to redact in a string value (already decoded).
    fn string_spans(&self, s: &str, spans: &mut Vec<Span>) {
        spans.clear();
        // The string sits inside a JSON document: one level of embedding.
        json::scan_any(self, s, 1, false, spans);
    }

    /// The facts in `want` ([`NAME`], [`SECRET`]) about the object key
    /// `key`, each learnt once per walk for a short key.
    fn cached_key_facts(&self, walk: &mut Walk, key: &str, want: u8) -> u8 {
        let Walk { names, spans } = walk;
        // Made on the first key: a walk of a scalar needs none.
        let names = names.get_or_insert_with(|| Box::new(NameCache::new()));
        // A value sits at the top level of no JSON text: its keys are read
        // as a top-level text's are.
        names.facts_of(key.as_bytes(), want, |missing| {
            spans.clear();
            keys::key_facts(self, key, missing, 0, spans)
        })
    }

    /// The place of the member `name` of an object walked as `kind`;
    /// `named` says that the object's `name` or `key` names a credential.
    fn member_place(&self, walk: &mut Walk, kind: Kind, name: &str, named: bool) -> Place {
        if named && name == "value" {
            return Place::Whole;
        }
        let credential = kind == Kind::Normal && self.cached_key_facts(walk, name, NAME) != 0;
        schema::member_place(kind, name, credential)
    }

    /// The new keys of an object whose keys the text rules change, in the
    /// order of its members (`None` for a key kept); `None` when every key
    /// stays.
    fn key_renames(
        &self,
        walk: &mut Walk,
        map: &Map<String, Value>,
    ) -> Option<Vec<Option<String>>> {
        let mut secret = Vec::new();
        for (i, key) in map.keys().enumerate() {
            // Both facts at once: the member's place asks for the name next.
            if self.cached_key_facts(walk, key, NAME | SECRET) & SECRET != 0 {
                secret.push(i);
            }
        }
        if secret.is_empty() {
            return None;
        }
        let held: Vec<usize> = map
            .keys()
            .filter_map(|k| keys::placeholder_number(k))
            .collect();
        // `secret` is in the order of the members.
        let mut next = secret.iter().peekable();
        let names: Vec<&str> = map
            .keys()
            .enumerate()
            .filter(|(i, _)| next.next_if_eq(&i).is_some())
            .map(|(_, k)| k.as_str())
            .collect();
        let mut new = vec![None; map.len()];
        for (&i, n) in secret.iter().zip(keys::number(&names, &held)) {
            new[i] = Some(keys::placeholder(n));
        }
        Some(new)
    }
}

/// What a value walk keeps from one value to the next: the facts about the
/// keys met, and a span list to reuse.
struct Walk {
    names: Option<Box<NameCache>>,
    spans: Vec<Span>,
}

impl Walk {
    fn new() -> Walk {
        Walk {
            names: None,
            spans: Vec::new(),
        }
    }
}

/// Redacts credentials from JSON values, JSON text and free text.
///
/// Cheap to clone (the configuration sits behind an [`Arc`]) and safe to share
/// between threads. No method fails or panics, and each runs in time linear in
/// the size of its input.
#[derive(Clone)]
pub struct Redactor {
    inner: Arc<Inner>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("redact_names", &self.inner.extra)
            .field("keep_names", &self.inner.keep)
            .field("name_tests", &self.inner.tests.len())
            .field("text_rules", &self.inner.text_rules)
            .field("max_depth", &self.inner.max_depth)
            .finish()
    }
}

impl Default for Redactor {
    fn default() -> Redactor {
        Redactor::new()
    }
}

impl Redactor {
    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// A redactor with the default rules: credential and session id names, text
    /// rules on, no depth limit.
    pub fn new() -> Redactor {
        Redactor {
            inner: Arc::new(Inner {
                extra: Vec::new(),
                keep: Vec::new(),
                tests: Vec::new(),
                text_rules: true,
                max_depth: None,
            }),
        }
    }

    /// A builder to add names, keep names, or change the rules.
    pub fn builder() -> RedactorBuilder {
        RedactorBuilder::default()
    }

    /// Whether this redactor hides the value of a field called `name`: the
    /// default names, plus the extra names and name tests, minus the kept names.
    /// Extra and kept names are compared without regard to ASCII case.
    pub fn is_redacted_name(&self, name: &str) -> bool {
        self.inner.is_redacted_name(name)
    }

    /// Redacts `value` in place: the value of every redacted name becomes
    /// `"[REDACTED]"` (a `null`, a boolean and `""` stay, and a JSON Schema
    /// definition is walked instead), the text rules run over every string,
    /// and an object key that they change becomes a placeholder
    /// (`[REDACTED]`, `[REDACTED:2]`, …; see the crate's docs).
    pub fn redact_value(&self, value: &mut Value) {
        let inner = &*self.inner;
        let mut walk = Walk::new();
        // Only containers wait on the stack; scalars are dealt with on the spot.
        let mut stack: Vec<(&mut Value, usize, Kind)> = Vec::new();
        inner.visit(value, 0, Place::Normal, &mut walk.spans, &mut stack);
        while let Some((v, depth, kind)) = stack.pop() {
            match v {
                Value::Array(items) => {
                    // The item after a credential flag is its value.
                    let mut flagged = false;
                    for item in items {
                        let flag = matches!(item, Value::String(s) if pairs::is_flag(inner, s));
                        let place = schema::item_place(kind, flagged);
                        if place == Place::Normal
                            && let Value::Array(pair) = item
                            && pairs::is_credential_pair(inner, pair)
                        {
                            replace(&mut pair[1]);
                        }
                        inner.visit(item, depth + 1, place, &mut walk.spans, &mut stack);
                        flagged = flag;
                    }
                }
                Value::Object(map) => {
                    let named = pairs::names_credential(inner, map);
                    // A member's place is decided by its key as written: a
                    // replaced key's, before the key changes.
                    let mut renamed_places = Vec::new();
                    if let Some(renames) = inner.key_renames(&mut walk, map) {
                        let old = std::mem::take(map);
                        for ((key, item), new) in old.into_iter().zip(renames) {
                            match new {
                                Some(new) => {
                                    let place = inner.member_place(&mut walk, kind, &key, named);
                                    let n = keys::placeholder_number(&new).unwrap_or(1);
                                    if renamed_places.len() <= n {
                                        renamed_places.resize(n + 1, None);
                                    }
                                    renamed_places[n] = Some(place);
                                    map.insert(new, item);
                                }
                                None => {
                                    map.insert(key, item);
                                }
                            }
                        }
                    }
                    for (name, item) in map.iter_mut() {
                        let renamed = if renamed_places.is_empty() {
                            None
                        } else {
                            keys::placeholder_number(name)
                                .and_then(|n| renamed_places.get(n).copied().flatten())
                        };
                        let place = match renamed {
                            Some(place) => place,
                            None => inner.member_place(&mut walk, kind, name, named),
                        };
                        inner.visit(item, depth + 1, place, &mut walk.spans, &mut stack);
                    }
                }
                _ => {}
            }
        }
    }

    /// A redacted copy of `value`; see [`redact_value`](Redactor::redact_value).
    pub fn redacted_value(&self, value: &Value) -> Value {
        let inner = &*self.inner;
        let mut walk = Walk::new();
        let mut stack: Vec<Frame<'_>> = Vec::new();
        let mut next = Some((value, 0usize, Place::Normal));
        loop {
            if let Some((v, depth, place)) = next.take() {
                let leaf = match inner.copy_leaf(v, depth, place, &mut walk.spans) {
                    Ok(leaf) => Some(leaf),
                    Err(kind) => {
                        match v {
                            Value::Array(items) => {
                                let in_list = matches!(stack.last(), Some(Frame::Array { .. }));
                                stack.push(Frame::Array {
                                    items: items.iter(),
                                    out: Vec::with_capacity(items.len()),
                                    depth,
                                    kind,
                                    flagged: false,
                                    pair: in_list
                                        && kind == Kind::Normal
                                        && pairs::is_credential_pair(inner, items),
                                });
                            }
                            Value::Object(map) => {
                                let renames = inner.key_renames(&mut walk, map);
                                stack.push(Frame::Object {
                                    items: map.iter(),
                                    out: Map::new(),
                                    name: None,
                                    depth,
                                    kind,
                                    named: pairs::names_credential(inner, map),
                                    renames: renames.map(Vec::into_iter),
                                });
                            }
                            // `copy_leaf` walks only containers.
                            _ => {}
                        }
                        None
                    }
                };
                if let Some(done) = leaf
                    && let Some(root) = attach(&mut stack, done)
                {
                    return root;
                }
            }
            let Some(top) = stack.last_mut() else {
                // Only reachable for an empty stack after a container root,
                // which `attach` returns above.
                return Value::Null;
            };
            match top {
                Frame::Array {
                    items,
                    out,
                    depth,
                    kind,
                    flagged,
                    pair,
                } => {
                    if let Some(item) = items.next() {
                        // A credential flag's value, or a credential pair's.
                        let place = if *pair && out.len() == 1 {
                            Place::Whole
                        } else {
                            schema::item_place(*kind, *flagged)
                        };
                        *flagged = matches!(item, Value::String(s) if pairs::is_flag(inner, s));
                        next = Some((item, *depth + 1, place));
                        continue;
                    }
                }
                Frame::Object {
                    items,
                    name,
                    depth,
                    kind,
                    named,
                    renames,
                    ..
                } => {
                    if let Some((k, item)) = items.next() {
                        let place = inner.member_place(&mut walk, *kind, k, *named);
                        let new = renames.as_mut().and_then(Iterator::next).flatten();
                        *name = Some(new.unwrap_or_else(|| k.clone()));
                        next = Some((item, *depth + 1, place));
                        continue;
                    }
                }
            }
            // The top container is complete.
            let done = match stack.pop() {
                Some(Frame::Array { out, .. }) => Value::Array(out),
                Some(Frame::Object { out, .. }) => Value::Object(out),
                None => Value::Null,
            };
            if let Some(root) = attach(&mut stack, done) {
                return root;
            }
        }
    }

    /// `text` with every credential the text rules find replaced by
    /// `[REDACTED]`; borrowed when nothing was found.
    ///
    /// A text of one line that is JSON (it starts with `{` or `[`, maybe
    /// after blanks, and parses) is redacted as JSON, as
    /// [`redact_json_text`](Redactor::redact_json_text) does. In a text of
    /// several lines, each line that looks like JSON is redacted on its own,
    /// as JSON when it is, and the runs of other lines between them by the
    /// text rules, together: what a [`RedactingWriter`](crate::RedactingWriter)
    /// writes for the same text.
    ///
    /// Over the writer's default line limit (64 KiB), its bound is part of
    /// the reading: a construct that spans lines is settled after 64 KiB of
    /// lines held from the line it starts on, and a longer line is read in
    /// pieces cut where the writer cuts it (a text of JSON Lines whose lines
    /// are all within the limit is still read as JSON).
    pub fn redact_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if text.len() > writer::DEFAULT_LINE_LIMIT {
            return self.redact_long(text);
        }
        if several_lines(text) {
            return self.redact_lines(text);
        }
        let mut spans = Vec::new();
        json::scan_any(&self.inner, text, 0, false, &mut spans);
        span::apply(text, &spans)
    }

    /// `text`, which holds JSON (one value, or several separated by blanks as in
    /// JSON Lines), redacted by name, in its strings and in its keys, as
    /// [`redact_value`](Redactor::redact_value) redacts a value. Every byte that
    /// is not part of a secret stays as it was, so formatting and key order
    /// survive. Text that is not JSON is redacted as
    /// [`redact_text`](Redactor::redact_text) does.
    pub fn redact_json_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut spans = Vec::new();
        if several_lines(text) {
            if json::scan_json_lines(&self.inner, text, false, &mut spans) {
                return span::apply(text, &spans);
            }
            spans.clear();
            let out = self.redact_lines(text);
            // Text that was not JSON can become JSON once redacted: read it
            // so now, as redacting again would (idempotence).
            if let Cow::Owned(redacted) = &out
                && json::scan_json_lines(&self.inner, redacted, false, &mut spans)
                && !spans.is_empty()
            {
                return Cow::Owned(span::apply(redacted, &spans).into_owned());
            }
            return out;
        }
        json::scan_any(&self.inner, text, 0, true, &mut spans);
        span::apply(text, &spans)
    }

    /// `redact_text` on a text of several lines: as JSON when it is JSON
    /// Lines (objects and arrays, each within a line: every line that is not
    /// blank looks like JSON, and the writer reads each as JSON), else line
    /// by line as [`RedactingWriter`] reads it.
    ///
    /// [`RedactingWriter`]: crate::RedactingWriter
    fn redact_lines<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if json::looks_like_json(text) {
            let mut spans = Vec::new();
            if json::scan_json_lines(&self.inner, text, true, &mut spans) {
                return span::apply(text, &spans);
            }
        }
        writer::redact_lines(self, text)
    }

    /// `redact_text` on a text longer than the line limit: as JSON when it is
    /// JSON Lines with every line within the limit, else as the writer reads
    /// it.
    fn redact_long<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let limit = writer::DEFAULT_LINE_LIMIT;
        let mut line_start = 0;
        let lines_within = memchr::memchr_iter(b'\n', text.as_bytes())
            .chain(std::iter::once(text.len()))
            .all(|end| {
                let within = end - line_start <= limit;
                line_start = end + 1;
                within
            });
        if lines_within && json::looks_like_json(text) {
            let mut spans = Vec::new();
            if json::scan_json_lines(&self.inner, text, true, &mut spans) {
                return span::apply(text, &spans);
            }
        }
        Cow::Owned(writer::redact_bounded(self, text))
    }

    /// The spans `redact_text` would replace (used by the writer to carry a
    /// secret across a chunk boundary).
    pub(crate) fn text_spans(&self, text: &str) -> Vec<Span> {
        let mut spans = Vec::new();
        json::scan_any(&self.inner, text, 0, false, &mut spans);
        spans
    }

    /// The spans the text rules find in `text` (lines that the writer holds;
    /// no JSON reading), and the constructs that span lines still open at
    /// its end (no kinds for none).
    pub(crate) fn held_spans(&self, text: &str) -> (Vec<Span>, Open) {
        let mut spans = Vec::new();
        if !self.inner.text_rules {
            return (spans, Open::default());
        }
        let open = text::scan_text_open(&self.inner, text, &mut spans);
        (spans, open)
    }
}

/// Whether `text` holds a line break before its last byte.
fn several_lines(text: &str) -> bool {
    memchr::memchr(b'\n', text.as_bytes()).is_some_and(|p| p + 1 < text.len())
}

enum Frame<'a> {
    Array {
        items: std::slice::Iter<'a, Value>,
        out: Vec<Value>,
        depth: usize,
        kind: Kind,
        /// The last item was a credential flag (`--password`).
        flagged: bool,
        /// The list is a `[name, value]` pair that names a credential.
        pair: bool,
    },
    Object {
        items: serde_json::map::Iter<'a>,
        out: Map<String, Value>,
        name: Option<String>,
        depth: usize,
        kind: Kind,
        /// The object's `name` or `key` names a credential: its `value` goes.
        named: bool,
        /// The new key of each member, in order, when a key is replaced.
        renames: Option<std::vec::IntoIter<Option<String>>>,
    },
}

/// Puts a finished value into the container on top of the stack, or returns
/// it when it is the root.
fn attach(stack: &mut [Frame<'_>], value: Value) -> Option<Value> {
    match stack.last_mut() {
        None => Some(value),
        Some(Frame::Array { out, .. }) => {
            out.push(value);
            None
        }
        Some(Frame::Object { out, name, .. }) => {
            if let Some(name) = name.take() {
                out.insert(name, value);
            }
            None
        }
    }
}

/// Replaces a value by the placeholder, dropping the old value without
/// recursion (a deeply nested value would overflow the stack if dropped
/// recursively). A null, a boolean and `""` stay: they hold no secret.
fn replace(v: &mut Value) {
    if schema::keeps_value_type(v) || matches!(v, Value::String(s) if s == REDACTED) {
        return;
    }
    let old = std::mem::replace(v, Value::String(REDACTED.to_owned()));
    drop_iteratively(old);
}

/// What [`replace`] makes of `v`, as a copy.
fn replaced_copy(v: &Value) -> Value {
    if schema::keeps_value_type(v) {
        v.clone()
    } else {
        Value::String(REDACTED.to_owned())
    }
}

/// Drops a value of any depth with an explicit stack.
pub(crate) fn drop_iteratively(value: Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        step!(1);
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, item)| item)),
            _ => {}
        }
    }
}

/// Builds a [`Redactor`] with extra names, kept names, a name test, or other
/// rules.
///
/// ```
/// use calltape_redact::Redactor;
/// let redactor = Redactor::builder()
///     .redact_names(["internalRef"])
///     .keep_names(["pageToken"])
///     .build()
///     .expect("valid configuration");
/// assert!(redactor.is_redacted_name("internalRef"));
/// assert!(!redactor.is_redacted_name("pageToken"));
/// ```
#[derive(Default)]
pub struct RedactorBuilder {
    extra: Vec<String>,
    keep: Vec<String>,
    tests: Vec<NameTest>,
    text_rules: Option<bool>,
    max_depth: Option<usize>,
}

impl fmt::Debug for RedactorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedactorBuilder")
            .field("redact_names", &self.extra)
            .field("keep_names", &self.keep)
            .field("name_tests", &self.tests.len())
            .field("text_rules", &self.text_rules)
            .field("max_depth", &self.max_depth)
            .finish()
    }
}

impl RedactorBuilder {
    /// Extra field names whose values are redacted (compared without regard to
    /// ASCII case), on top of the default names.
    pub fn redact_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.extra.extend(names.into_iter().map(Into::into));
        self
    }

    /// Field names never redacted by name, even when a default rule, an extra
    /// name or a name test matches (compared without regard to ASCII case).
    pub fn keep_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.keep.extend(names.into_iter().map(Into::into));
        self
    }

    /// A test that marks more field names as redacted; called with each field
    /// name. Several tests add up.
    pub fn name_test(mut self, test: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.tests.push(Arc::new(test));
        self
    }

    /// Whether the text rules run (on by default). Off, only names are looked
    /// at: values under redacted names in JSON, and JSON inside strings.
    pub fn text_rules(mut self, on: bool) -> Self {
        self.text_rules = Some(on);
        self
    }

    /// Values nested deeper than `depth` containers are redacted whole; `None`
    /// (the default) has no limit.
    pub fn max_depth(mut self, depth: Option<usize>) -> Self {
        self.max_depth = depth;
        self
    }

    /// The redactor; fails when a name is empty or is both redacted and kept.
    pub fn build(self) -> Result<Redactor, Error> {
        for (list, names) in [
            (NameList::Redact, &self.extra),
            (NameList::Keep, &self.keep),
        ] {
            if let Some(position) = names.iter().position(|n| n.trim().is_empty()) {
                return Err(Error::new(ErrorKind::EmptyName {
                    list,
                    position: position + 1,
                }));
            }
        }
        if let Some(name) = self
            .keep
            .iter()
            .find(|k| self.extra.iter().any(|e| e.eq_ignore_ascii_case(k)))
        {
            return Err(Error::new(ErrorKind::ConflictingName {
                name: name.clone(),
            }));
        }
        Ok(Redactor {
            inner: Arc::new(Inner {
                extra: self.extra,
                keep: self.keep,
                tests: self.tests,
                text_rules: self.text_rules.unwrap_or(true),
                max_depth: self.max_depth,
            }),
        })
    }
}

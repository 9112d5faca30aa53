//! Two JSON Schemas of one tool compared: each change said as what it does to the values the
//! schema allows (wider, narrower, or neither), which for an input schema (what the server accepts)
//! and an output schema (what it promises) mean opposite things.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};
use std::fmt;

use calltape_redact::REDACTED;
use serde_json::{Map, Value};

use super::{Severity, SurfaceChange};

/// Which way a schema faces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    /// What the server accepts from a client: narrower breaks a client.
    Input,
    /// What the server promises a client: wider breaks a client.
    Output,
}

/// What a change does to the values a schema allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// Every value allowed before still is.
    Wider,
    /// Every value allowed now was before.
    Narrower,
    /// Neither, or no telling.
    Other,
    /// Nothing: a description, a title, an example.
    Annotation,
}

impl Side {
    fn severity(self, effect: Effect) -> Severity {
        match (self, effect) {
            (_, Effect::Annotation)
            | (Side::Input, Effect::Wider)
            | (Side::Output, Effect::Narrower) => Severity::Compatible,
            _ => Severity::Breaking,
        }
    }
}

/// How deep schemas are followed, and how many schema pairs one comparison looks at: a schema that
/// refers to itself, or a huge one, is compared that far and no further.
const MAX_DEPTH: usize = 32;
const MAX_STEPS: usize = 10_000;

/// How many `$ref`s in a row are followed from one place.
const MAX_REFS: usize = 16;

/// Keywords compared by their own rules below; `$defs` and `definitions` are compared where a
/// `$ref` points into them.
const STRUCTURAL: &[&str] = &[
    "type",
    "enum",
    "const",
    "nullable",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "oneOf",
    "$defs",
    "definitions",
];

/// Keywords that describe and never constrain.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "example",
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$comment",
    "$vocabulary",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
];

/// Lower bounds: raising one narrows.
const LOWER_BOUNDS: &[&str] = &[
    "minimum",
    "exclusiveMinimum",
    "minLength",
    "minItems",
    "minProperties",
    "minContains",
];

/// Upper bounds: lowering one narrows.
const UPPER_BOUNDS: &[&str] = &[
    "maximum",
    "exclusiveMaximum",
    "maxLength",
    "maxItems",
    "maxProperties",
    "maxContains",
];

/// Compares the schema a tool had (`old`) with the one it has (`new`), facing `side`, and adds each
/// change found under `path` (such as `tools[echo].inputSchema`) to `out`.
pub(super) fn compare_schemas(
    side: Side,
    path: &str,
    old: &Value,
    new: &Value,
    out: &mut Vec<SurfaceChange>,
) {
    let mut walk = Walk {
        side,
        old_root: old,
        new_root: new,
        out,
        active: HashSet::new(),
        steps: 0,
    };
    walk.compare(path, old, new, 0);
}

struct Walk<'a> {
    side: Side,
    old_root: &'a Value,
    new_root: &'a Value,
    out: &'a mut Vec<SurfaceChange>,
    /// The `$ref` pairs being compared further up: met again, they are a cycle.
    active: HashSet<(Option<String>, Option<String>)>,
    steps: usize,
}

/// A schema with its `$ref`s followed: the schema pointed to, with the keywords beside the `$ref`
/// put over it, and the last `$ref` followed.
fn resolve<'v>(root: &'v Value, schema: &'v Value) -> (Cow<'v, Value>, Option<String>) {
    let mut current = schema;
    let mut followed = None;
    let mut beside = Map::new();
    for _ in 0..MAX_REFS {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let Some(target) = reference.strip_prefix('#').and_then(|p| root.pointer(p)) else {
            break;
        };
        if let Some(map) = current.as_object() {
            for (k, v) in map {
                if k != "$ref" && !beside.contains_key(k) {
                    beside.insert(k.clone(), v.clone());
                }
            }
        }
        followed = Some(reference.to_owned());
        current = target;
    }
    match (beside.is_empty(), current) {
        (false, Value::Object(target)) => {
            let mut merged = target.clone();
            merged.remove("$ref");
            merged.extend(beside);
            (Cow::Owned(Value::Object(merged)), followed)
        }
        _ => (Cow::Borrowed(current), followed),
    }
}

/// A schema as keywords: `true` is the schema with none, `false` the one that allows nothing.
fn keywords(schema: &Value) -> Option<Cow<'_, Map<String, Value>>> {
    match schema {
        Value::Object(map) => Some(Cow::Borrowed(map)),
        Value::Bool(true) => Some(Cow::Owned(Map::new())),
        Value::Bool(false) => {
            let mut never = Map::new();
            never.insert("not".into(), Value::Object(Map::new()));
            Some(Cow::Owned(never))
        }
        _ => None,
    }
}

/// A set of JSON types, `None` for any type.
type Types = Option<BTreeSet<String>>;

/// Whether a branch of `anyOf`/`oneOf` says only a type (and describes it).
fn is_type_only(branch: &Value) -> bool {
    branch.as_object().is_some_and(|b| {
        b.contains_key("type")
            && b.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "type" | "description" | "title" | "$comment" | "nullable"
                )
            })
    })
}

/// The branches of `anyOf` (or `oneOf`) when each says only a type: a union of types, as
/// `"type": [...]` is.
fn type_union<'v>(root: &'v Value, schema: &'v Map<String, Value>) -> Option<Vec<Cow<'v, Value>>> {
    ["anyOf", "oneOf"].iter().find_map(|key| {
        let branches = schema.get(*key)?.as_array()?;
        let resolved: Vec<Cow<'v, Value>> = branches.iter().map(|b| resolve(root, b).0).collect();
        (!resolved.is_empty() && resolved.iter().all(|b| is_type_only(b))).then_some(resolved)
    })
}

/// The types a schema allows: its `type` (a name or a list of names), or the union of its type-only
/// `anyOf`/`oneOf` branches; `nullable: true` adds `null`.
fn types(root: &Value, schema: &Map<String, Value>) -> Types {
    let mut set = match schema.get("type") {
        Some(Value::String(t)) => Some(BTreeSet::from([t.clone()])),
        Some(Value::Array(list)) => Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => type_union(root, schema).map(|branches| {
            let mut union = BTreeSet::new();
            for branch in &branches {
                if let Some(map) = branch.as_object() {
                    union.extend(types(root, map).unwrap_or_default());
                }
            }
            union
        }),
    };
    if schema.get("nullable") == Some(&Value::Bool(true))
        && let Some(set) = &mut set
    {
        set.insert("null".into());
    }
    set
}

/// Whether every type of `narrow` is one of `wide`'s (an integer is a number).
fn covers(wide: &Types, narrow: &Types) -> bool {
    match (wide, narrow) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(wide), Some(narrow)) => narrow
            .iter()
            .all(|t| wide.contains(t) || (t == "integer" && wide.contains("number"))),
    }
}

struct ShowTypes<'a>(&'a Types);

impl fmt::Display for ShowTypes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("any"),
            Some(set) if set.is_empty() => f.write_str("none"),
            Some(set) => {
                for (i, t) in set.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" or ")?;
                    }
                    f.write_str(t)?;
                }
                Ok(())
            }
        }
    }
}

/// A value as reports show it: compact JSON, cut at 60 bytes.
fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 60 {
        return text;
    }
    let mut end = 60;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Some values as reports show them: the first eight, and how many more.
fn show_all<'v>(values: impl IntoIterator<Item = &'v Value>) -> String {
    let values: Vec<&Value> = values.into_iter().collect();
    let mut text: Vec<String> = values.iter().take(8).map(|v| show(v)).collect();
    if values.len() > 8 {
        text.push(format!("and {} more", values.len() - 8));
    }
    text.join(", ")
}

/// The values a schema is limited to: its `enum`, or its `const`.
fn allowed_values(schema: &Map<String, Value>) -> Option<Vec<&Value>> {
    match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.iter().collect()),
        (_, Some(value)) => Some(vec![value]),
        _ => None,
    }
}

/// The names a schema requires.
fn required(schema: &Map<String, Value>) -> BTreeSet<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn is_redacted(value: &Value) -> bool {
    value.as_str() == Some(REDACTED)
}

impl Walk<'_> {
    fn push(&mut self, effect: Effect, path: &str, what: impl fmt::Display) {
        let severity = self.side.severity(effect);
        self.out.push(SurfaceChange::said(severity, path, what));
    }

    fn compare(&mut self, path: &str, old: &Value, new: &Value, depth: usize) {
        self.steps += 1;
        if depth > MAX_DEPTH || self.steps > MAX_STEPS {
            return;
        }
        let (old, old_ref) = resolve(self.old_root, old);
        let (new, new_ref) = resolve(self.new_root, new);
        if old == new || is_redacted(&old) || is_redacted(&new) {
            return;
        }
        let cycle = (old_ref, new_ref);
        let followed = cycle.0.is_some() || cycle.1.is_some();
        if followed && !self.active.insert(cycle.clone()) {
            return;
        }
        match (keywords(&old), keywords(&new)) {
            (Some(o), Some(n)) => self.keywords(path, &o, &n, depth),
            _ => self.push(
                Effect::Other,
                path,
                format!("schema changed from {} to {}", show(&old), show(&new)),
            ),
        }
        if followed {
            self.active.remove(&cycle);
        }
    }

    fn keywords(
        &mut self,
        path: &str,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        depth: usize,
    ) {
        self.types(path, o, n);
        self.values(path, o, n);
        self.properties(path, o, n, depth);
        self.additional(path, o, n, depth);
        if let (Some(oi), Some(ni)) = (o.get("items"), n.get("items"))
            && keywords(oi).is_some()
            && keywords(ni).is_some()
        {
            self.compare(&format!("{path}.items"), oi, ni, depth + 1);
        } else {
            self.keyword(path, "items", o.get("items"), n.get("items"));
        }
        for key in ["anyOf", "oneOf"] {
            self.alternatives(path, key, o, n, depth);
        }
        let rest: BTreeSet<&String> = o
            .keys()
            .chain(n.keys())
            .filter(|k| !STRUCTURAL.contains(&k.as_str()))
            .collect();
        for key in rest {
            self.keyword(path, key, o.get(key), n.get(key));
        }
    }

    fn types(&mut self, path: &str, o: &Map<String, Value>, n: &Map<String, Value>) {
        let (before, after) = (types(self.old_root, o), types(self.new_root, n));
        if before == after {
            return;
        }
        let (effect, how) = if covers(&after, &before) {
            (Effect::Wider, "widened")
        } else if covers(&before, &after) {
            (Effect::Narrower, "narrowed")
        } else {
            (Effect::Other, "changed")
        };
        let what = format!(
            "type {how} from {} to {}",
            ShowTypes(&before),
            ShowTypes(&after)
        );
        self.push(effect, path, what);
    }

    fn values(&mut self, path: &str, o: &Map<String, Value>, n: &Map<String, Value>) {
        match (allowed_values(o), allowed_values(n)) {
            (None, None) => {}
            (None, Some(after)) => {
                self.push(
                    Effect::Narrower,
                    path,
                    format!("values limited to {}", show_all(after)),
                );
            }
            (Some(_), None) => self.push(Effect::Wider, path, "values no longer limited"),
            (Some(before), Some(after)) => {
                let gone: Vec<&Value> = before
                    .iter()
                    .copied()
                    .filter(|v| !after.contains(v))
                    .collect();
                let came: Vec<&Value> = after
                    .iter()
                    .copied()
                    .filter(|v| !before.contains(v))
                    .collect();
                if !gone.is_empty() {
                    let what = format!("enum values removed: {}", show_all(gone));
                    self.push(Effect::Narrower, path, what);
                }
                if !came.is_empty() {
                    let what = format!("enum values added: {}", show_all(came));
                    self.push(Effect::Wider, path, what);
                }
            }
        }
    }

    /// Properties by name, and which of them are required.
    fn properties(
        &mut self,
        path: &str,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        depth: usize,
    ) {
        let empty = Map::new();
        let before = o
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let after = n
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let (was_required, is_required) = (required(o), required(n));
        for (name, schema) in before {
            match after.get(name) {
                Some(now) => {
                    self.compare(&format!("{path}.properties.{name}"), schema, now, depth + 1)
                }
                None => self.push(Effect::Other, path, format!("property {name:?} removed")),
            }
        }
        for name in after.keys().filter(|k| !before.contains_key(*k)) {
            let required = is_required.contains(name.as_str());
            let severity = match (self.side, required) {
                (Side::Input, true) => Severity::Breaking,
                _ => Severity::Compatible,
            };
            let what = match (self.side, required) {
                (Side::Output, _) => format!("property {name:?} added"),
                (Side::Input, true) => format!("required property {name:?} added"),
                (Side::Input, false) => format!("optional property {name:?} added"),
            };
            self.out.push(SurfaceChange::said(severity, path, what));
        }
        // A property added or removed said so already: what is left is a property kept, or one
        // named only in `required`.
        let kept = |name: &str| !(after.contains_key(name) ^ before.contains_key(name));
        for name in is_required.difference(&was_required) {
            if kept(name) {
                self.push(
                    Effect::Narrower,
                    path,
                    format!("property {name:?} made required"),
                );
            }
        }
        for name in was_required.difference(&is_required) {
            if kept(name) {
                self.push(
                    Effect::Wider,
                    path,
                    format!("property {name:?} made optional"),
                );
            }
        }
    }

    /// `additionalProperties`: closing an object narrows it. A client ignores what it does not
    /// know in an answer, so on the output side either way is compatible.
    fn additional(
        &mut self,
        path: &str,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        depth: usize,
    ) {
        let (before, after) = (o.get("additionalProperties"), n.get("additionalProperties"));
        if before == after {
            return;
        }
        let closed = |v: Option<&Value>| v == Some(&Value::Bool(false));
        let effect = |e| {
            if self.side == Side::Output {
                Effect::Annotation
            } else {
                e
            }
        };
        if let (Some(b @ Value::Object(_)), Some(a @ Value::Object(_))) = (before, after) {
            self.compare(&format!("{path}.additionalProperties"), b, a, depth + 1);
        } else if closed(after) {
            self.push(
                effect(Effect::Narrower),
                path,
                "additional properties no longer allowed",
            );
        } else if closed(before) {
            self.push(effect(Effect::Wider), path, "additional properties allowed");
        } else {
            self.keyword(path, "additionalProperties", before, after);
        }
    }

    /// `anyOf` or `oneOf` that is more than a union of types: alternatives compared in place when
    /// there are as many as before, else counted as removed (narrower) and added (wider).
    fn alternatives(
        &mut self,
        path: &str,
        key: &str,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        depth: usize,
    ) {
        let branches = |root: &Value, schema: &Map<String, Value>| -> Option<Vec<Value>> {
            if type_union(root, schema).is_some() {
                return None;
            }
            let list = schema.get(key)?.as_array()?;
            Some(
                list.iter()
                    .map(|b| resolve(root, b).0.into_owned())
                    .collect(),
            )
        };
        let (before, after) = (branches(self.old_root, o), branches(self.new_root, n));
        match (before, after) {
            (None, None) => {}
            (None, Some(_)) if o.contains_key(key) => {}
            (Some(_), None) if n.contains_key(key) => {}
            (None, Some(_)) => self.push(Effect::Narrower, path, format!("{key} added")),
            (Some(_), None) => self.push(Effect::Wider, path, format!("{key} removed")),
            (Some(before), Some(after)) if before.len() == after.len() => {
                for (i, (b, a)) in before.iter().zip(&after).enumerate() {
                    self.compare(&format!("{path}.{key}.{i}"), b, a, depth + 1);
                }
            }
            (Some(before), Some(after)) => {
                let gone = before.iter().filter(|b| !after.contains(b)).count();
                let came = after.iter().filter(|a| !before.contains(a)).count();
                if gone > 0 {
                    self.push(
                        Effect::Narrower,
                        path,
                        format!("{key}: {gone} alternative{} removed", plural(gone)),
                    );
                }
                if came > 0 {
                    self.push(
                        Effect::Wider,
                        path,
                        format!("{key}: {came} alternative{} added", plural(came)),
                    );
                }
            }
        }
    }

    /// Any other keyword: an annotation changed is compatible; a constraint added or tightened
    /// narrows, removed or loosened widens, changed otherwise is no telling.
    fn keyword(&mut self, path: &str, key: &str, before: Option<&Value>, after: Option<&Value>) {
        let (before, after) = match (before, after) {
            (None, None) => return,
            (Some(b), Some(a)) if b == a || is_redacted(b) => return,
            pair => pair,
        };
        if ANNOTATIONS.contains(&key) || key.starts_with("x-") {
            let what = match (before, after) {
                (None, _) => "added",
                (_, None) => "removed",
                _ => "changed",
            };
            let severity = Severity::Compatible;
            self.out.push(SurfaceChange::item(
                severity,
                &format!("{path}.{key}"),
                what,
            ));
            return;
        }
        match (before, after) {
            (None, Some(a)) => self.push(
                Effect::Narrower,
                path,
                format!("constraint {key:?} added: {}", show(a)),
            ),
            (Some(_), None) => {
                self.push(Effect::Wider, path, format!("constraint {key:?} removed"))
            }
            (Some(b), Some(a)) => {
                let bound = match (b.as_f64(), a.as_f64()) {
                    (Some(b), Some(a)) if LOWER_BOUNDS.contains(&key) => Some(a > b),
                    (Some(b), Some(a)) if UPPER_BOUNDS.contains(&key) => Some(a < b),
                    _ => None,
                };
                let (effect, how) = match bound {
                    Some(true) => (Effect::Narrower, "tightened"),
                    Some(false) => (Effect::Wider, "loosened"),
                    None => (Effect::Other, "changed"),
                };
                let what = format!("constraint {key:?} {how} from {} to {}", show(b), show(a));
                self.push(effect, path, what);
            }
            (None, None) => {}
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

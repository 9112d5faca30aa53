//! The server's surface, classified: what changed between a recorded list (`tools/list`,
//! `prompts/list`, `resources/list`, `resources/templates/list`) and the replayed one, each change
//! **breaking** (a client that worked may fail now) or **compatible** (it keeps working).
//!
//! Items are matched by identity, never by position: tools and prompts by `name`, resources by
//! `uri`, resource templates by `uriTemplate`, so a change is named after its item: `tools[add]`.
//!
//! Breaking: an item removed; a required input property (or prompt argument) added; an input
//! property (or argument) removed, made required, or its type narrowed (a narrower `type`, enum
//! values removed, a constraint added or tightened); an output-schema property removed, made
//! optional, or its type changed to one the client may not expect (widened, or changed); an
//! output schema removed; a tool that runs only as a task now; a list that answers with an error
//! now. Compatible: an item added; an optional property or argument added; a type widened (input)
//! or narrowed (output); descriptions, titles, annotations and any other field changed. Input
//! schemas are read as what the server accepts and output schemas as what it promises, JSON
//! Schema 2020-12 forms included: `type` arrays, `anyOf`/`oneOf` of types (with `null`), and
//! `$ref` into `$defs` (or `definitions`), resolved before comparing. A schema keyword this module
//! does not know counts as a constraint: added or changed is breaking for an input.
//!
//! A recorded `"[REDACTED]"` (a schema under a credential name, say) matches anything, as in
//! the comparison.

mod schema;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use calltape_recorder::glob::{Segment, write_path};
use calltape_recorder::mcp::{Outcome, list_items_key};
use calltape_redact::REDACTED;
use serde_json::{Map, Value};

use crate::mcp::compare::{Comparison, Difference, Status};
use crate::mcp::report::ReplayReport;

use schema::{Side, compare_schemas};

/// Whether a surface change may break a client that worked with the recorded server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// A client that worked may fail now.
    Breaking,
    /// A client that worked keeps working.
    Compatible,
}

impl Severity {
    /// `breaking` or `compatible`, as reports write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Breaking => "breaking",
            Self::Compatible => "compatible",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One classified change of the server's surface.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SurfaceChange {
    /// Breaking or compatible.
    pub severity: Severity,
    /// Where: the item and the place in it, such as `tools[add]` or `tools[echo].inputSchema`.
    pub path: String,
    /// The change as reports write it, its place first: `tools[add] removed`,
    /// `tools[echo].inputSchema: required property "mode" added`.
    pub change: String,
}

impl SurfaceChange {
    /// `path` with something said of it as a whole: `tools[add] removed`.
    fn item(severity: Severity, path: &str, what: &str) -> Self {
        Self {
            severity,
            path: path.to_owned(),
            change: format!("{path} {what}"),
        }
    }

    /// Something said inside `path`: `tools[echo].inputSchema: required property "mode" added`.
    fn said(severity: Severity, path: &str, what: impl fmt::Display) -> Self {
        Self {
            severity,
            path: path.to_owned(),
            change: format!("{path}: {what}"),
        }
    }
}

/// As reports list it: `breaking: tools[add] removed`.
impl fmt::Display for SurfaceChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.severity, self.change)
    }
}

/// How many distinct surface changes a replay found, by severity: a change seen in several
/// recorded sessions counts once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SurfaceSummary {
    /// Breaking changes.
    pub breaking: usize,
    /// Compatible changes.
    pub compatible: usize,
}

impl SurfaceSummary {
    /// Whether no surface change was found.
    pub fn is_empty(&self) -> bool {
        self.breaking + self.compatible == 0
    }
}

/// `surface: 2 breaking, 5 compatible`.
impl fmt::Display for SurfaceSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "surface: {} breaking, {} compatible",
            self.breaking, self.compatible
        )
    }
}

impl ReplayReport {
    /// The distinct surface changes of every call, counted by severity.
    pub fn surface(&self) -> SurfaceSummary {
        let mut seen = HashSet::new();
        let mut summary = SurfaceSummary::default();
        for change in self.calls.iter().flat_map(|c| &c.surface) {
            if seen.insert((change.severity, change.change.as_str())) {
                match change.severity {
                    Severity::Breaking => summary.breaking += 1,
                    Severity::Compatible => summary.compatible += 1,
                }
            }
        }
        summary
    }
}

/// Which differences fail a replay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FailOn {
    /// Any difference (the default).
    #[default]
    Any,
    /// Any difference but a list whose every change is a compatible surface change: a changed call
    /// answer, an error, or a breaking surface change still fails.
    Breaking,
}

impl FailOn {
    /// Whether `report` fails under this rule.
    pub fn fails(self, report: &ReplayReport) -> bool {
        report.calls.iter().any(|call| {
            call.status != Status::Same
                && match self {
                    Self::Any => true,
                    Self::Breaking => {
                        list_items_key(&call.method).is_none()
                            || call
                                .surface
                                .iter()
                                .any(|c| c.severity == Severity::Breaking)
                    }
                }
        })
    }
}

impl FromStr for FailOn {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "any" => Ok(Self::Any),
            "breaking" => Ok(Self::Breaking),
            other => Err(format!("unknown rule {other:?}; use any or breaking")),
        }
    }
}

/// The surface changes between a recorded list answer and the replayed one, breaking ones first;
/// empty for a method that is not a list, or a call whose `comparison` found it the same.
///
/// A change is kept only where the comparison found a difference, at its path, inside it or
/// around it: what the comparison set aside (an ignored path such as `tools[echo]` or
/// `prompts.*.description`, a masked value, what differs by era) is no change here either, so a
/// report never classifies what it does not show. A difference that changes no item (the items
/// in another order, a field beside them, one error for another) is no surface change either: the
/// comparison's differences show it.
pub fn classify(
    method: &str,
    comparison: &Comparison,
    recorded: &Outcome,
    replayed: &Outcome,
) -> Vec<SurfaceChange> {
    let Some(key) = list_items_key(method) else {
        return Vec::new();
    };
    if comparison.status == Status::Same {
        return Vec::new();
    }
    let mut out = Vec::new();
    match (recorded, replayed) {
        (Outcome::Answer(r), Outcome::Answer(p)) => {
            let empty = Map::new();
            let r = r.as_object().unwrap_or(&empty);
            let p = p.as_object().unwrap_or(&empty);
            items(key, list(r, key), list(p, key), &mut out);
        }
        (Outcome::Answer(_), Outcome::Error(error)) => {
            let message = error.message.as_deref().unwrap_or_default();
            out.push(SurfaceChange::said(
                Severity::Breaking,
                method,
                format!("answered with an error now ({} {message})", error.code).trim_end(),
            ));
        }
        (Outcome::Error(_), Outcome::Answer(p)) => {
            out.push(SurfaceChange::item(
                Severity::Compatible,
                method,
                "answered now, an error before",
            ));
            items(
                key,
                &[],
                p.get(key)
                    .and_then(Value::as_array)
                    .map_or(&[], Vec::as_slice),
                &mut out,
            );
        }
        (Outcome::Error(_), Outcome::Error(_)) => {}
    }
    // An error on one side differs as a whole: every change of the list stands.
    if comparison.status == Status::Changed {
        out.retain(|change| shown(key, change, &comparison.differences));
    }
    out.sort_by_key(|c| c.severity);
    out
}

/// Whether the comparison's `differences` show `change` of list `key`: a change of the list as a
/// whole (an error now) whenever there is a difference, any other when a difference is in its
/// [`scope`] or around it (a whole item added or removed, an answer that is not a list).
fn shown(key: &str, change: &SurfaceChange, differences: &[Difference]) -> bool {
    if !within(&change.path, key) {
        return !differences.is_empty();
    }
    let scope = scope(key, &change.path);
    differences
        .iter()
        .any(|d| within(&d.path, scope) || within(scope, &d.path))
}

/// What of a change's path the differences are looked for in: its item and the item's field
/// (`tools[echo].inputSchema` for a change deep in that schema, which the classification reads
/// through its `$ref`s and the comparison does not), or the whole path when it is shorter.
fn scope<'p>(key: &str, path: &'p str) -> &'p str {
    let Some(id) = path.strip_prefix(key).and_then(|p| p.strip_prefix('[')) else {
        return path;
    };
    // The item's closing bracket: a `]` or `\\` in its name is escaped.
    let bytes = id.as_bytes();
    let mut i = 0;
    while i < bytes.len() && bytes[i] != b']' {
        i += if bytes[i] == b'\\' { 2 } else { 1 };
    }
    let item_end = (key.len() + 1 + i + 1).min(path.len());
    let field = &path[item_end..];
    match field.get(1..).and_then(|f| f.find(['.', '['])) {
        Some(n) => &path[..item_end + 1 + n],
        None => path,
    }
}

/// Whether dot path `path` is `outer` or a path inside it.
fn within(path: &str, outer: &str) -> bool {
    outer.is_empty()
        || path
            .strip_prefix(outer)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// The path of the item `id` of the list at `list`, in the notation differences and `--ignore`
/// use: `tools[echo]`, a `]` or `\` in the name escaped.
fn item_path(list: &str, id: &str) -> String {
    let mut path = list.to_owned();
    write_path(&mut path, &[Segment::Item { id, index: 0 }]);
    path
}

/// The items of a list answer.
fn list<'a>(answer: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    answer
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The field that tells the items of list `key` apart.
fn identity(key: &str) -> &'static str {
    match key {
        "resources" => "uri",
        "resourceTemplates" => "uriTemplate",
        _ => "name",
    }
}

/// Each item with its identity: its identity field, or `#N` (its position) when it has none. An
/// identity seen twice keeps its first item.
fn by_identity<'a>(items: &'a [Value], field: &str) -> Vec<(String, &'a Value)> {
    let mut seen = HashSet::new();
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item.get(field).and_then(Value::as_str) {
            Some(id) => (id.to_owned(), item),
            None => (format!("#{i}"), item),
        })
        .filter(|(id, _)| seen.insert(id.clone()))
        .collect()
}

/// Compares the items of two lists by identity.
fn items(key: &str, recorded: &[Value], replayed: &[Value], out: &mut Vec<SurfaceChange>) {
    let field = identity(key);
    let old = by_identity(recorded, field);
    let new = by_identity(replayed, field);
    let new_ids: HashSet<&str> = new.iter().map(|(id, _)| id.as_str()).collect();
    for (id, _) in &old {
        if !new_ids.contains(id.as_str()) {
            out.push(SurfaceChange::item(
                Severity::Breaking,
                &item_path(key, id),
                "removed",
            ));
        }
    }
    let old_items: HashMap<&str, &Value> = old.iter().map(|(id, v)| (id.as_str(), *v)).collect();
    for (id, item) in &new {
        let path = item_path(key, id);
        match old_items.get(id.as_str()) {
            None => out.push(SurfaceChange::item(Severity::Compatible, &path, "added")),
            Some(before) => match key {
                "tools" => tool(&path, before, item, out),
                "prompts" => prompt(&path, before, item, out),
                _ => fields(&path, before, item, &[field], out),
            },
        }
    }
}

/// Whether a recorded value and a replayed one are the same, a recorded `"[REDACTED]"` matching
/// anything.
fn same(recorded: &Value, replayed: &Value) -> bool {
    recorded == replayed || recorded.as_str() == Some(REDACTED)
}

/// Every field of an item that differs, but `skip`, as a compatible change: added, removed or
/// changed.
fn fields(path: &str, old: &Value, new: &Value, skip: &[&str], out: &mut Vec<SurfaceChange>) {
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else {
        if !same(old, new) {
            out.push(SurfaceChange::item(Severity::Compatible, path, "changed"));
        }
        return;
    };
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for key in keys {
        if skip.contains(&key.as_str()) {
            continue;
        }
        let what = match (old.get(key), new.get(key)) {
            (Some(o), Some(n)) if same(o, n) => continue,
            (None, Some(_)) => "added",
            (Some(_), None) => "removed",
            _ => "changed",
        };
        out.push(SurfaceChange::item(
            Severity::Compatible,
            &format!("{path}.{key}"),
            what,
        ));
    }
}

/// A tool kept by name: its input and output schemas, whether it runs only as a task, and its
/// other fields.
fn tool(path: &str, old: &Value, new: &Value, out: &mut Vec<SurfaceChange>) {
    let empty = Value::Object(Map::new());
    let input = |t: &Value| {
        t.get("inputSchema")
            .cloned()
            .unwrap_or_else(|| empty.clone())
    };
    compare_schemas(
        Side::Input,
        &format!("{path}.inputSchema"),
        &input(old),
        &input(new),
        out,
    );
    let output = format!("{path}.outputSchema");
    match (old.get("outputSchema"), new.get("outputSchema")) {
        (None, None) => {}
        (None, Some(_)) => out.push(SurfaceChange::item(Severity::Compatible, &output, "added")),
        (Some(_), None) => out.push(SurfaceChange::item(Severity::Breaking, &output, "removed")),
        (Some(o), Some(n)) => compare_schemas(Side::Output, &output, o, n, out),
    }
    let task_only =
        |t: &Value| t.pointer("/execution/taskSupport") == Some(&Value::from("required"));
    if task_only(new) && !task_only(old) {
        out.push(SurfaceChange::said(
            Severity::Breaking,
            path,
            "runs only as a task now",
        ));
    } else if let (o, n) = (old.get("execution"), new.get("execution"))
        && o != n
        && !o.is_some_and(|o| n.is_some_and(|n| same(o, n)))
    {
        let what = match (o, n) {
            (None, _) => "added",
            (_, None) => "removed",
            _ => "changed",
        };
        out.push(SurfaceChange::item(
            Severity::Compatible,
            &format!("{path}.execution"),
            what,
        ));
    }
    fields(
        path,
        old,
        new,
        &["name", "inputSchema", "outputSchema", "execution"],
        out,
    );
}

/// A prompt kept by name: its arguments by name, and its other fields.
fn prompt(path: &str, old: &Value, new: &Value, out: &mut Vec<SurfaceChange>) {
    let arguments = |p: &Value| -> Vec<(String, Value)> {
        let list = p
            .get("arguments")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        by_identity(list, "name")
            .into_iter()
            .map(|(id, v)| (id, v.clone()))
            .collect()
    };
    let (before, after) = (arguments(old), arguments(new));
    let required = |a: &Value| a.get("required") == Some(&Value::Bool(true));
    for (name, argument) in &before {
        match after.iter().find(|(n, _)| n == name) {
            None => out.push(SurfaceChange::said(
                Severity::Breaking,
                path,
                format!("argument {name:?} removed"),
            )),
            Some((_, now)) => {
                match (required(argument), required(now)) {
                    (false, true) => out.push(SurfaceChange::said(
                        Severity::Breaking,
                        path,
                        format!("argument {name:?} made required"),
                    )),
                    (true, false) => out.push(SurfaceChange::said(
                        Severity::Compatible,
                        path,
                        format!("argument {name:?} made optional"),
                    )),
                    _ => {}
                }
                fields(
                    &item_path(&format!("{path}.arguments"), name),
                    argument,
                    now,
                    &["name", "required"],
                    out,
                );
            }
        }
    }
    for (name, argument) in &after {
        if !before.iter().any(|(n, _)| n == name) {
            let (severity, kind) = match required(argument) {
                true => (Severity::Breaking, "required"),
                false => (Severity::Compatible, "optional"),
            };
            out.push(SurfaceChange::said(
                severity,
                path,
                format!("{kind} argument {name:?} added"),
            ));
        }
    }
    fields(path, old, new, &["name", "arguments"], out);
}

#[cfg(test)]
mod tests;

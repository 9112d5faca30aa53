//! Values replaced whole, and the JSON Schema definitions that are walked
//! instead.
//!
//! A value under a credential name is replaced whole by `"[REDACTED]"`,
//! unless it holds nothing secret: `null`, `true`, `false` and `""` stay (the
//! JSON type is kept where no secret is), and a JSON Schema *definition* is
//! walked, because a definition is not a value: `tools/list` answers name
//! their arguments `apiKey` or `password` and describe them with
//! `{"type": "string", "description": …}`.
//!
//! An object is a definition when it has a member, every key is a JSON
//! Schema keyword (the list in [`keyword`]), one of them is `type`, `$ref`,
//! `anyOf`, `oneOf`, `allOf`, `enum` or `const`, a `type` is a type name
//! (`string`, `number`, `integer`, `boolean`, `object`, `array`, `null`) or a
//! list of them, and a `$ref` is a string holding `#` or `/`. So
//! `{"id": 7}`, `{"value": "hunter2"}` or `{"type": "bearer", "token": …}`
//! are values, replaced whole.
//!
//! Inside a definition kept under a credential name, everything stays under
//! that name: a `default`, `const`, `examples` or `enum` is replaced whole (a
//! null, a boolean or `""` stays); a subschema (`items`, `not`, a member of
//! `properties` or `$defs`, an item of `anyOf`, …) must be a definition in
//! turn, or is replaced whole; another keyword keeps a scalar (which the text
//! rules still read) or a list of scalars, and loses an object. The value
//! walks decide this from the whole object; the JSON text scan cannot see an
//! object's end before it walks it, so it walks a candidate and, when it
//! closes and is no definition, fills the slot it took at its start with a
//! span that covers it (as `pairs.rs` does for a `value`).

use serde_json::{Map, Value};

use crate::span::Span;
use crate::step;

/// Where a value sits, for the rules that replace values whole.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum Place {
    /// The rules by name and in text, as everywhere.
    #[default]
    Normal,
    /// Replaced whole: a value named by a sibling, a credential flag's
    /// argument, a `default`, `const`, `examples` or `enum` of a definition
    /// under a credential name, a value deeper than the depth limit.
    Whole,
    /// Under a credential name, or a subschema of a definition kept under
    /// one: walked when it is a definition, else replaced whole.
    Def,
    /// The value of `properties`, `$defs`, …: an object whose members are
    /// [`Place::Def`].
    Map,
    /// The value of `anyOf`, `oneOf`, `allOf`, `prefixItems`: a list whose
    /// items are [`Place::Def`].
    List,
    /// The value of another keyword: a scalar as usual, a list of
    /// [`Place::PlainItem`], an object replaced whole.
    Plain,
    /// An item of a [`Place::Plain`] list: a scalar as usual, a container
    /// replaced whole.
    PlainItem,
}

/// What a container is walked as: which places its members or items get.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum Kind {
    #[default]
    Normal,
    Def,
    Map,
    List,
    Plain,
}

/// A JSON Schema keyword, by where its value sits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Keyword {
    /// `default`, `const`, `examples`, `enum`: a value.
    Value,
    /// One subschema.
    Def,
    /// A list of subschemas.
    List,
    /// A map of subschemas.
    Map,
    /// `type`: a type name or a list of them.
    Type,
    /// `$ref`: a reference.
    Ref,
    /// Anything else: a word, a number, a flag, a list of names.
    Plain,
}

/// The keyword `key` is, if any (JSON Schema drafts 4 to 2020-12, and
/// OpenAPI's `nullable`).
pub(crate) fn keyword(key: &[u8]) -> Option<Keyword> {
    step!(key.len() + 1);
    Some(match key {
        b"default" | b"const" | b"examples" | b"enum" => Keyword::Value,
        b"items"
        | b"additionalItems"
        | b"additionalProperties"
        | b"unevaluatedItems"
        | b"unevaluatedProperties"
        | b"contains"
        | b"not"
        | b"if"
        | b"then"
        | b"else"
        | b"propertyNames"
        | b"contentSchema" => Keyword::Def,
        b"anyOf" | b"oneOf" | b"allOf" | b"prefixItems" => Keyword::List,
        b"properties" | b"patternProperties" | b"$defs" | b"definitions" | b"dependentSchemas" => {
            Keyword::Map
        }
        b"type" => Keyword::Type,
        b"$ref" => Keyword::Ref,
        b"$id" | b"$schema" | b"$anchor" | b"$dynamicRef" | b"$dynamicAnchor" | b"$comment"
        | b"$vocabulary" | b"title" | b"description" | b"format" | b"pattern" | b"required"
        | b"minLength" | b"maxLength" | b"minimum" | b"maximum" | b"exclusiveMinimum"
        | b"exclusiveMaximum" | b"multipleOf" | b"minItems" | b"maxItems" | b"uniqueItems"
        | b"minProperties" | b"maxProperties" | b"minContains" | b"maxContains"
        | b"dependentRequired" | b"readOnly" | b"writeOnly" | b"deprecated" | b"nullable"
        | b"contentEncoding" | b"contentMediaType" => Keyword::Plain,
        _ => return None,
    })
}

/// Whether a definition may rest on `key`: an object without one of these
/// is a value, whatever its other keys.
fn is_anchor(key: &[u8]) -> bool {
    matches!(
        key,
        b"type" | b"$ref" | b"anyOf" | b"oneOf" | b"allOf" | b"enum" | b"const"
    )
}

/// Whether `s` is a JSON Schema type name.
fn is_type_name(s: &str) -> bool {
    matches!(
        s,
        "string" | "number" | "integer" | "boolean" | "object" | "array" | "null"
    )
}

/// Whether `s` reads as a reference (`#/$defs/Key`, `other.json#/x`,
/// `https://…/schema`).
fn is_ref(s: &str) -> bool {
    step!(s.len());
    s.contains(['#', '/'])
}

/// The place of a keyword's value inside a definition.
fn keyword_place(keyword: Keyword) -> Place {
    match keyword {
        Keyword::Value => Place::Whole,
        Keyword::Def => Place::Def,
        Keyword::List => Place::List,
        Keyword::Map => Place::Map,
        Keyword::Type | Keyword::Ref | Keyword::Plain => Place::Plain,
    }
}

/// The place of a member of a container of `kind`: `credential` says that
/// its name is a credential name. The `value` named by a sibling is the
/// caller's to replace.
pub(crate) fn member_place(kind: Kind, key: &str, credential: bool) -> Place {
    match kind {
        Kind::Normal if credential => Place::Def,
        Kind::Normal => Place::Normal,
        Kind::Def => keyword(key.as_bytes()).map_or(Place::Whole, keyword_place),
        Kind::Map => Place::Def,
        // Not objects: no members.
        Kind::List | Kind::Plain => Place::Whole,
    }
}

/// The place of an item of a list of `kind`; `flagged` when the item before
/// was a credential flag.
pub(crate) fn item_place(kind: Kind, flagged: bool) -> Place {
    match kind {
        _ if flagged => Place::Whole,
        Kind::List => Place::Def,
        Kind::Plain => Place::PlainItem,
        Kind::Normal => Place::Normal,
        // Not lists: no items.
        Kind::Def | Kind::Map => Place::Whole,
    }
}

/// What the walks do with a value at a place.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Action {
    /// Replaced whole (see [`keeps_type`]).
    Whole,
    /// A scalar, read by the rules as usual.
    Scalar,
    /// A container, walked as `Kind`.
    Walk(Kind),
}

/// What becomes of `v` at `place`, in the value walks.
pub(crate) fn action(place: Place, v: &Value) -> Action {
    let container = matches!(v, Value::Object(_) | Value::Array(_));
    match (place, v) {
        (Place::Whole, _) => Action::Whole,
        (Place::Normal, _) if container => Action::Walk(Kind::Normal),
        (Place::Normal, _) => Action::Scalar,
        (Place::Def, Value::Object(map)) if is_definition(map) => Action::Walk(Kind::Def),
        (Place::Map, Value::Object(_)) => Action::Walk(Kind::Map),
        (Place::List, Value::Array(_)) => Action::Walk(Kind::List),
        (Place::Plain, Value::Array(_)) => Action::Walk(Kind::Plain),
        (Place::Plain | Place::PlainItem, _) if !container => Action::Scalar,
        _ => Action::Whole,
    }
}

/// What becomes of the value starting with byte `c` at `place`, in the JSON
/// text scan: `None` to replace it whole, else the kind it is walked as
/// (for a scalar, [`Kind::Normal`]). `empty` says that an object is `{}`.
pub(crate) fn text_action(place: Place, c: u8, empty: bool) -> Option<Kind> {
    match (place, c) {
        (Place::Normal, _) => Some(Kind::Normal),
        (Place::Def, b'{') if !empty => Some(Kind::Def),
        (Place::Map, b'{') => Some(Kind::Map),
        (Place::List, b'[') => Some(Kind::List),
        (Place::Plain, b'[') => Some(Kind::Plain),
        (Place::Plain | Place::PlainItem, c) if c != b'{' && c != b'[' => Some(Kind::Normal),
        _ => None,
    }
}

/// Whether `map` is a JSON Schema definition (see the module's docs).
pub(crate) fn is_definition(map: &Map<String, Value>) -> bool {
    let mut anchor = false;
    for (key, value) in map {
        step!(1);
        let valid = match keyword(key.as_bytes()) {
            None => false,
            Some(Keyword::Type) => match value {
                Value::String(s) => is_type_name(s),
                Value::Array(items) => items.iter().all(|item| {
                    step!(1);
                    item.as_str().is_some_and(is_type_name)
                }),
                _ => false,
            },
            Some(Keyword::Ref) => value.as_str().is_some_and(is_ref),
            Some(_) => true,
        };
        if !valid {
            return false;
        }
        anchor |= is_anchor(key.as_bytes());
    }
    anchor
}

/// Whether a value replaced whole stays as it is because it holds nothing
/// secret (its JSON text): `null`, `true`, `false`, `""`.
pub(crate) fn keeps_type(json: &[u8]) -> bool {
    matches!(json, b"null" | b"true" | b"false" | b"\"\"")
}

/// [`keeps_type`] on a value.
pub(crate) fn keeps_value_type(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(_) => true,
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// What the value read next must be, for its definition to stand.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Check {
    /// A type name, or a list of them (the value of `type`).
    Type,
    /// A type name (an item of `type`'s list).
    TypeItem,
    /// A reference (the value of `$ref`).
    Ref,
}

struct Frame {
    /// The depth of the container's members or items.
    depth: usize,
    kind: Kind,
    /// For a candidate definition: its slot in the span list and where it
    /// starts.
    slot: usize,
    start: usize,
    /// No key so far is outside the keywords, no `type` but a type name or
    /// a list of them, no `$ref` but a reference. Every one counts, also a
    /// first of two members with one key that a JSON reader (and so the
    /// value walks) would drop: the text keeps its bytes.
    ok: bool,
    /// A key is one a definition may rest on.
    anchor: bool,
    /// A list that is `type`'s value: its items are checked.
    types: bool,
}

/// The JSON text scan's containers in definition places, innermost last.
/// Inside one, every container is one too or is replaced whole, so the last
/// frame is the innermost open container whenever there is one.
#[derive(Default)]
pub(crate) struct Schema {
    frames: Vec<Frame>,
    /// The check on the value read next, and the frame of the definition
    /// that fails it.
    pending: Option<(Check, usize)>,
}

impl Schema {
    /// The kind of the innermost open container, `depth` deep.
    #[inline(always)]
    pub(crate) fn kind(&self, depth: usize) -> Kind {
        match self.frames.last() {
            Some(f) if f.depth == depth => f.kind,
            _ => Kind::Normal,
        }
    }

    /// Whether a container in a definition place is open.
    #[inline(always)]
    pub(crate) fn is_active(&self) -> bool {
        !self.frames.is_empty()
    }

    /// A member of the candidate definition on top was read, with key
    /// `key`: its place, and what the definition now needs.
    pub(crate) fn member(&mut self, key: &str) -> Place {
        let at = self.frames.len().saturating_sub(1);
        let Some(frame) = self.frames.last_mut() else {
            return Place::Whole;
        };
        if frame.kind != Kind::Def {
            return member_place(frame.kind, key, false);
        }
        let Some(keyword) = keyword(key.as_bytes()) else {
            frame.ok = false;
            return Place::Whole;
        };
        frame.anchor |= is_anchor(key.as_bytes());
        self.pending = match keyword {
            Keyword::Type => Some((Check::Type, at)),
            Keyword::Ref => Some((Check::Ref, at)),
            _ => None,
        };
        keyword_place(keyword)
    }

    /// An item of the innermost list, `depth` deep, starts: its place;
    /// `flagged` when the item before was a credential flag.
    pub(crate) fn item(&mut self, depth: usize, flagged: bool) -> Place {
        let kind = self.kind(depth);
        if kind == Kind::Plain && self.frames.last().is_some_and(|f| f.types) {
            // The definition is the frame below the list.
            self.pending = Some((Check::TypeItem, self.frames.len().saturating_sub(2)));
        }
        item_place(kind, flagged)
    }

    /// A value starts with byte `c`: a check waiting for it fails now
    /// unless `c` opens a string (or, for `type`, a list, whose items are
    /// checked). Returns the check the string (or list) must pass.
    #[inline]
    pub(crate) fn value_start(&mut self, c: u8) -> Option<(Check, usize)> {
        let pending = self.pending.take()?;
        match (pending.0, c) {
            (_, b'"') | (Check::Type, b'[') => Some(pending),
            _ => {
                self.fail(pending);
                None
            }
        }
    }

    /// The string value `s` was read; `check` is what [`value_start`] gave.
    ///
    /// [`value_start`]: Schema::value_start
    pub(crate) fn string(&mut self, check: (Check, usize), s: &str) {
        let valid = match check.0 {
            Check::Type | Check::TypeItem => is_type_name(s),
            Check::Ref => is_ref(s),
        };
        if !valid {
            self.fail(check);
        }
    }

    /// The value that `check` was on fails it.
    fn fail(&mut self, (_, frame): (Check, usize)) {
        if let Some(f) = self.frames.get_mut(frame) {
            f.ok = false;
        }
    }

    /// A container walked as `kind` opens at `start`, its members or items
    /// `depth` deep; `slot` is the span slot of a candidate definition.
    /// `types` says that it is the list of a `type`.
    pub(crate) fn open(
        &mut self,
        kind: Kind,
        depth: usize,
        start: usize,
        slot: usize,
        types: bool,
    ) {
        step!(1);
        self.frames.push(Frame {
            depth,
            kind,
            slot,
            start,
            ok: true,
            anchor: false,
            types,
        });
    }

    /// The container `depth` deep closes at `end`: a candidate definition
    /// that is none is replaced whole.
    pub(crate) fn close(&mut self, depth: usize, end: usize, out: &mut [Span]) {
        if self.frames.last().is_none_or(|f| f.depth != depth) {
            return;
        }
        if let Some(f) = self.frames.pop()
            && f.kind == Kind::Def
            && !(f.ok && f.anchor)
            && let Some(span) = out.get_mut(f.slot)
        {
            *span = Span::new(f.start, end, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn definitions_are_told_from_values() {
        let definitions = [
            json!({"type": "string", "description": "The API key"}),
            json!({"type": ["string", "null"]}),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}),
            json!({"$ref": "#/$defs/Key"}),
            json!({"enum": ["a", "b"]}),
            json!({"format": "password", "title": "Api Key", "type": "string", "writeOnly": true}),
        ];
        for d in definitions {
            let Value::Object(map) = &d else { continue };
            assert!(is_definition(map), "{d}");
        }
        let values = [
            json!({"id": 7}),
            json!({"value": "hunter2"}),
            json!({"type": "bearer", "token": "x"}),
            json!({"type": "hunter2"}),
            json!({"type": ["string", 7]}),
            json!({"$ref": "hunter2"}),
            json!({"description": "no anchor", "title": "x"}),
            json!({}),
        ];
        for v in values {
            let Value::Object(map) = &v else { continue };
            assert!(!is_definition(map), "{v}");
        }
    }
}

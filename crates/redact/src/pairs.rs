//! Values named by a sibling rather than by their own key: the `value` of an
//! object whose `name` or `key` is a credential name (`{"name":
//! "OPENAI_API_KEY", "value": "…"}`, HAR headers, Kubernetes env, Postman),
//! the second item of a `[name, value]` pair inside a list of pairs
//! (`[["authorization", "…"]]`), and the argument after a credential flag in
//! a list of arguments (`["--password", "hunter2"]`).
//!
//! The JSON text scan cannot know an object's `name` before it meets it, so a
//! `value` gets a slot in the span list when it starts (a span that covers
//! nothing) and the slot is filled when its object closes, if the object
//! named a credential. Spans found inside the value stay in the list behind
//! the slot; the filled slot covers them. The value walks of `Value` decide
//! the same from the finished object.

use serde_json::{Map, Value};

use crate::redactor::Inner;
use crate::schema;
use crate::span::{QUOTED_REDACTED, Span};
use crate::step;

/// What a member or an item is to the pair rules.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    None,
    /// The `name` member of an object.
    Name,
    /// The `key` member of an object.
    Key,
    /// The `value` member of an object, or the second item of a pair.
    Value,
    /// The first item of a list inside a list: maybe the name of a pair.
    Head,
}

/// The role of an object member called `key` (its raw, unescaped bytes).
pub(crate) fn member_role(key: &[u8]) -> Role {
    match key {
        b"name" => Role::Name,
        b"key" => Role::Key,
        b"value" => Role::Value,
        _ => Role::None,
    }
}

#[derive(Clone, Copy)]
enum Kind {
    /// A `name`, `key` or pair head; `secret` once its string is judged.
    Name {
        role: Role,
        secret: bool,
        items: u32,
    },
    /// A value waiting for its object: its slot in the span list, and the
    /// value's bytes once it ends (`end == 0` before).
    Value {
        slot: usize,
        start: usize,
        end: usize,
    },
}

#[derive(Clone, Copy)]
struct Pair {
    /// The depth of the container the member or item is in.
    depth: usize,
    kind: Kind,
}

/// The pair rules' state during one JSON text scan.
#[derive(Default)]
pub(crate) struct Pairs {
    open: Vec<Pair>,
    /// Whether a slot was ever taken: empty slots are then dropped at the end.
    slots: bool,
    /// The depth of the list whose last item was a credential flag.
    flag: Option<usize>,
}

impl Pairs {
    /// A member or item with `role` starts at `b[start]`, `depth` containers
    /// deep.
    #[inline]
    pub(crate) fn start(&mut self, role: Role, depth: usize, start: usize, out: &mut Vec<Span>) {
        step!(1);
        let kind = if role == Role::Value {
            Kind::Value {
                slot: self.slot(out),
                start,
                end: 0,
            }
        } else {
            Kind::Name {
                role,
                secret: false,
                items: 1,
            }
        };
        self.open.push(Pair { depth, kind });
    }

    /// Takes a slot in the span list for a span known later (a span that
    /// covers nothing, dropped by [`finish`](Pairs::finish) if still empty).
    pub(crate) fn slot(&mut self, out: &mut Vec<Span>) -> usize {
        self.slots = true;
        out.push(Span::new(0, 0, 0));
        out.len() - 1
    }

    /// The string of the member or item that started last was judged.
    pub(crate) fn judged(&mut self, secret: bool) {
        if let Some(Pair {
            kind: Kind::Name { secret: s, .. },
            ..
        }) = self.open.last_mut()
        {
            *s = secret;
        }
    }

    /// A value ended at `end`, `depth` containers deep.
    #[inline]
    pub(crate) fn value_end(&mut self, depth: usize, end: usize) {
        if let Some(Pair {
            depth: d,
            kind: Kind::Value { end: e, .. },
        }) = self.open.last_mut()
            && *d == depth
            && *e == 0
        {
            *e = end;
        }
    }

    /// Notes that the string item just read, `depth` deep in a list, was a
    /// credential flag (`--password`): the next item is its value.
    pub(crate) fn flag(&mut self, depth: usize) {
        self.flag = Some(depth);
    }

    /// A comma in a list `depth` deep: whether the next item is redacted
    /// whole (it follows a credential flag), and its role.
    #[inline]
    pub(crate) fn list_comma(&mut self, depth: usize) -> (bool, Role) {
        let flagged = self.flag.take() == Some(depth);
        let mut role = Role::None;
        for pair in self.open.iter_mut().rev().take(2) {
            if pair.depth != depth {
                break;
            }
            if let Kind::Name {
                role: Role::Head,
                secret,
                items,
            } = &mut pair.kind
            {
                *items += 1;
                if *items == 2 && *secret {
                    role = Role::Value;
                }
                break;
            }
        }
        (flagged, role)
    }

    /// The container `depth` deep closes: fills the slots of its pair values
    /// when it named a credential.
    #[inline]
    pub(crate) fn close(&mut self, depth: usize, b: &[u8], out: &mut [Span]) {
        // A flag names only the item right after it, in its own list.
        self.flag = None;
        let Some(last) = self.open.last() else {
            return;
        };
        if last.depth < depth {
            return;
        }
        let mut from = self.open.len();
        while from > 0 && self.open[from - 1].depth >= depth {
            from -= 1;
        }
        step!(self.open.len() - from + 1);
        let (mut name, mut key, mut head) = (false, false, false);
        for pair in &self.open[from..] {
            if let Kind::Name {
                role,
                secret,
                items,
            } = pair.kind
            {
                match role {
                    Role::Name => name = secret,
                    Role::Key => key = secret,
                    // A pair has two items: a longer list is not one.
                    Role::Head => head = secret && items == 2,
                    _ => {}
                }
            }
        }
        if name || key || head {
            for pair in &self.open[from..] {
                if let Kind::Value { slot, start, end } = pair.kind
                    && end > start
                    && &b[start..end] != QUOTED_REDACTED.as_bytes()
                    && !schema::keeps_type(&b[start..end])
                    && let Some(span) = out.get_mut(slot)
                {
                    *span = Span::new(start, end, 1);
                }
            }
        }
        self.open.truncate(from);
    }

    /// Drops the slots left empty from `out[mark..]`, once the scan is over
    /// (a rule never pushes an empty span: only slots are empty).
    pub(crate) fn finish(&self, mark: usize, out: &mut Vec<Span>) {
        if !self.slots {
            return;
        }
        step!(out.len() - mark + 1);
        let mut kept = mark;
        for k in mark..out.len() {
            if out[k].start < out[k].end {
                out.swap(kept, k);
                kept += 1;
            }
        }
        out.truncate(kept);
    }
}

/// Whether `arg` is a credential flag that takes the next argument as its
/// value: `--password`, `--api-key` (not `--password=…`).
pub(crate) fn is_flag(inner: &Inner, arg: &str) -> bool {
    arg.len() > 2
        && arg.starts_with("--")
        && !arg.contains('=')
        && arg.len() <= 64
        && inner.is_redacted_name(&arg[2..])
}

/// Whether the object names a credential in its `name` or `key` member, so
/// that its `value` member is redacted whole.
pub(crate) fn names_credential(inner: &Inner, map: &Map<String, Value>) -> bool {
    map.contains_key("value")
        && ["name", "key"].iter().any(|k| {
            map.get(*k)
                .and_then(Value::as_str)
                .is_some_and(|name| inner.is_redacted_name(name))
        })
}

/// Whether the list is a `[name, value]` pair whose name is a credential
/// name (the list is itself an item of a list).
pub(crate) fn is_credential_pair(inner: &Inner, items: &[Value]) -> bool {
    items.len() == 2
        && items[0]
            .as_str()
            .is_some_and(|name| inner.is_redacted_name(name))
}

//! The properties the fuzz targets check (feature `fuzzing`), shared with the
//! tests that replay the fuzz regression inputs. Not a stable API.

use std::io::Write;

use serde_json::Value;

use crate::{REDACTED, RedactingWriter, Redactor};

/// A secret the text check plants; it must never survive redaction.
pub const SECRET: &str = "Q7fK2xV9mP4rT8wL3zN6";

/// Forms a credential takes in text; `SECRET` is replaced by [`SECRET`].
pub const FORMS: &[&str] = &[
    "Authorization: Bearer SECRET",
    "password=SECRET",
    "\"apiKey\": \"SECRET\"",
    "https://bob:SECRET@example.com/",
    "ghp_SECRET",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.SECRET",
    "export GITHUB_TOKEN=SECRET",
    "Bearer SECRET",
    "sk-proj-SECRET",
    "X-Api-Key: SECRET",
    "{ client_secret: 'SECRET' }",
    "postgres://app:SECRET@db:5432/app",
    "Basic SECRET",
    "AKIASECRET",
    "sk_live_SECRET",
    "whsec_SECRETSECRET",
    "ya29.SECRETSECRET",
    "1//0SECRETSECRET",
    "https://hooks.slack.com/services/T0/B0/SECRET",
    "xapp-1-SECRET",
    "SG.SECRETab.SECRETSECRET",
    "gho_SECRET",
    "gldt-SECRET",
    "pypi-AgESECRETSECRETSECRET",
    "r8_SECRETSECRET",
    "gsk_SECRETSECRET",
    "xai-SECRETSECRET",
    "shpat_SECRET",
    "https://a.blob.core.windows.net/c?sv=1&sig=SECRET",
    "AccountKey=SECRET;",
];

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `redact_text` on fuzz data: no panic, idempotent, and a secret planted on a
/// line of its own in the middle of the text never survives.
pub fn check_text(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let redactor = Redactor::new();
    let once = redactor.redact_text(text);
    let twice = redactor.redact_text(&once);
    assert_eq!(once, twice, "redact_text is not idempotent on {text:?}");

    let form = FORMS[usize::from(selector) % FORMS.len()];
    let secret = if form.starts_with("AKIA") {
        SECRET.to_ascii_uppercase()
    } else if form.starts_with("shpat_") {
        // Shopify's body is hex.
        "0f3a9c2e7b1d4f8a6c5e0b2d9a7f3c1e".to_owned()
    } else {
        SECRET.to_owned()
    };
    if text.contains(&secret) {
        // The text around holds the secret itself, outside any form.
        return;
    }
    let mid = floor_char_boundary(text, text.len() / 2);
    let planted = format!(
        "{}\n{}\n{}",
        &text[..mid],
        form.replace("SECRET", &secret),
        &text[mid..]
    );
    let out = redactor.redact_text(&planted);
    assert!(
        !out.contains(&secret),
        "planted secret survived in {planted:?}: {out:?}"
    );
    let again = redactor.redact_text(&out);
    assert_eq!(out, again, "redact_text is not idempotent on {planted:?}");
}

/// `redact_json_text` on fuzz data: valid JSON in gives valid JSON out, with the
/// same shape except redacted leaves and replaced keys, the same result as the
/// value walk (but for the numbering of replaced keys, and for a text with two
/// members of one key, which a value cannot hold), and idempotence.
pub fn check_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let redactor = Redactor::new();
    let out = redactor.redact_json_text(text);
    assert_eq!(
        redactor.redact_json_text(&out),
        out,
        "redact_json_text is not idempotent on {text:?}"
    );
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let parsed: Value = match serde_json::from_str(&out) {
        Ok(v) => v,
        Err(e) => panic!("invalid JSON out ({e}) for {text:?}: {out:?}"),
    };
    same_shape(&value, &parsed);
    let copy = redactor.redacted_value(&value);
    let mut in_place = value.clone();
    redactor.redact_value(&mut in_place);
    assert_eq!(in_place, copy, "redact_value differs on {text:?}");
    if !has_duplicate_keys(text) {
        assert_eq!(
            numbering_free(&parsed),
            numbering_free(&copy),
            "text and value paths differ on {text:?}"
        );
    }
}

/// `after` has the shape of `before`, except for leaves that became
/// `"[REDACTED]"`, strings that gained a `[REDACTED]`, and keys that became
/// placeholders (`[REDACTED]`, `[REDACTED:N]`).
pub fn same_shape(before: &Value, after: &Value) {
    let mut stack = vec![(before, after)];
    while let Some((b, a)) = stack.pop() {
        if a.as_str() == Some(REDACTED) {
            continue;
        }
        match (b, a) {
            (Value::Array(x), Value::Array(y)) => {
                assert_eq!(x.len(), y.len(), "array length changed: {b} -> {a}");
                stack.extend(x.iter().zip(y));
            }
            (Value::Object(x), Value::Object(y)) => {
                assert_eq!(x.len(), y.len(), "members merged or lost: {b} -> {a}");
                for (key, item) in y {
                    match x.get(key) {
                        Some(was) => stack.push((was, item)),
                        None => assert!(
                            crate::is_redacted_placeholder(key),
                            "key {key:?} changed to no placeholder: {b} -> {a}"
                        ),
                    }
                }
            }
            (Value::String(x), Value::String(y)) => {
                assert!(
                    x == y || y.contains(REDACTED),
                    "string changed without redaction: {x:?} -> {y:?}"
                );
            }
            _ => assert_eq!(b, a, "leaf changed"),
        }
    }
}

/// `v` with the replaced keys of each object unnumbered: the members whose
/// keys are placeholders (`[REDACTED]`, `[REDACTED:N]`) become one member
/// `"[REDACTED:*]"` holding their values, sorted. The JSON text scan numbers
/// an object's replaced keys in the order of the text, the value walks in the
/// order of the map; what each key holds must agree.
pub fn numbering_free(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(numbering_free).collect()),
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            let mut placeholders = Vec::new();
            for (key, item) in map {
                if crate::is_redacted_placeholder(key) {
                    placeholders.push(numbering_free(item));
                } else {
                    out.insert(key.clone(), numbering_free(item));
                }
            }
            if !placeholders.is_empty() {
                placeholders.sort_by_cached_key(Value::to_string);
                out.insert("[REDACTED:*]".to_owned(), Value::Array(placeholders));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// Whether the JSON `text` has an object with two members of one key (a
/// `serde_json::Value` keeps only the last): it has more members, counted
/// by the colons outside strings, than the value it parses to. False for
/// text that is not one JSON value.
pub fn has_duplicate_keys(text: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    let mut in_string = false;
    let mut escaped = false;
    let mut colons = 0usize;
    for c in text.bytes() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (_, false, b'"') => in_string = !in_string,
            (false, _, b':') => colons += 1,
            _ => {}
        }
    }
    let mut members = 0usize;
    let mut stack = vec![&value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                members += map.len();
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    colons > members
}

/// `RedactingWriter` gives the same output wherever the chunks it is given
/// end, and that output is what `redact_text` gives for the whole text: the
/// first byte says how many of the next bytes are chunk sizes, and the rest
/// is written in chunks of those sizes, then flushed once. JSON lines
/// included: both read a line that looks like JSON on its own; texts of any
/// size: both apply the writer's line limit.
pub fn check_writer(data: &[u8]) {
    let Some((&count, rest)) = data.split_first() else {
        return;
    };
    let count = usize::from(count % 16).min(rest.len());
    let (sizes, rest) = rest.split_at(count);
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let redactor = Redactor::new();
    let write = |chunks: &mut dyn Iterator<Item = &[u8]>| {
        let mut writer = RedactingWriter::new(redactor.clone(), Vec::new());
        for chunk in chunks {
            writer.write_all(chunk).expect("writing to a Vec");
        }
        writer.flush().expect("flushing a Vec");
        String::from_utf8_lossy(writer.get_ref()).into_owned()
    };
    let whole = write(&mut std::iter::once(rest));

    let mut chunks = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < rest.len() {
        let size = sizes
            .get(i % sizes.len().max(1))
            .map_or(rest.len(), |&s| usize::from(s) + 1);
        let end = (at + size).min(rest.len());
        chunks.push(&rest[at..end]);
        at = end;
        i += 1;
    }
    let chunked = write(&mut chunks.into_iter());
    assert_eq!(chunked, whole, "chunks of sizes {sizes:?} of {text:?}");

    // At any size: past the line limit (64 KiB), `redact_text` applies the
    // writer's bound.
    assert_eq!(whole, redactor.redact_text(text), "the whole of {text:?}");
}

/// Secrets the structure check places, each with the part that must not
/// survive: real-looking provider tokens, a JWT, passwords in URLs and after
/// `Bearer`. None holds a byte that JSON escapes, so the part is found as
/// written in any output.
pub const PLACED_SECRETS: &[(&str, &str)] = &[
    (
        "ghp_R7fK2xV9mP4rT8wL3zN6bQ1yH5cJ0dS8aE2u",
        "R7fK2xV9mP4rT8wL3zN6bQ1yH5cJ0dS8aE2u",
    ),
    (
        "github_pat_11ABCDEFG0R7fK2xV9mP4rT8_wL3zN6bQ1yH5cJ0dS8aE2uZq8xW3vT9kL2mN7pHx4Lm9Qw2Rt7Yp3",
        "R7fK2xV9mP4rT8_wL3zN6bQ1yH5cJ0dS8aE2u",
    ),
    (
        "sk-proj-Zq8xW3vT9kL2mN7pHx4Lm9Qw2Rt7Yp3KaB5cD",
        "Zq8xW3vT9kL2mN7pHx4Lm9Qw2Rt7Yp3KaB5cD",
    ),
    (
        "sk-ant-api03-Hx4Lm9Qw2Rt7Yp3K-Zq8xW3vT9kL2mN7p_R7fK2xV9mP4rT8wLAA",
        "Hx4Lm9Qw2Rt7Yp3K-Zq8xW3vT9kL2mN7p_R7fK2xV9mP4rT8wL",
    ),
    (
        "xoxb-2934761058-4831029746-Tk9Lm2Qx7Vb4Nw8Zr3Jc",
        "Tk9Lm2Qx7Vb4Nw8Zr3Jc",
    ),
    ("AKIAQ7FK2XV9MP4RT8WL", "Q7FK2XV9MP4RT8WL"),
    (
        "AIzaSyR7fK2xV9mP4rT8wL3zN6bQ1yH5cJ0dS8a",
        "SyR7fK2xV9mP4rT8wL3zN6bQ1yH5cJ0dS8a",
    ),
    ("glpat-Zq8xW3vT9kL2mN7pHx4L", "Zq8xW3vT9kL2mN7pHx4L"),
    (
        "npm_Tk9Lm2Qx7Vb4Nw8Zr3JcR7fK2xV9mP4rT8wL",
        "Tk9Lm2Qx7Vb4Nw8Zr3JcR7fK2xV9mP4rT8wL",
    ),
    (
        "hf_Hx4Lm9Qw2Rt7Yp3KZq8xW3vT9kL2mN7pRb",
        "Hx4Lm9Qw2Rt7Yp3KZq8xW3vT9kL2mN7pRb",
    ),
    (
        "sk_live_51Hx4Lm9Qw2Rt7Yp3KZq8xW3vT9",
        "51Hx4Lm9Qw2Rt7Yp3KZq8xW3vT9",
    ),
    (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJib2IiLCJyb2xlIjoiYWRtaW4ifQ.Xk2Lm9Qw2Rt7Yp3KZq8xW3vT9kL2mN7pR7fK2xV9mP4",
        "eyJzdWIiOiJib2IiLCJyb2xlIjoiYWRtaW4ifQ.Xk2Lm9Qw2Rt7Yp3KZq8xW3vT9kL2mN7pR7fK2xV9mP4",
    ),
    (
        "https://bob:Zq8xW3vT9kL2mN7p@db.example.com/app",
        "Zq8xW3vT9kL2mN7p",
    ),
    (
        "postgres://app:Hx4Lm9Qw2Rt7Yp3K@db:5432/app",
        "Hx4Lm9Qw2Rt7Yp3K",
    ),
    ("Bearer Tk9Lm2Qx7Vb4Nw8Zr3Jc", "Tk9Lm2Qx7Vb4Nw8Zr3Jc"),
];

/// Names the structure check gives object members: plain ones, credential
/// names, the pair rules' names, JSON Schema keywords and placeholders.
const NAMES: &[&str] = &[
    "name",
    "value",
    "key",
    "id",
    "text",
    "data",
    "content",
    "args",
    "env",
    "headers",
    "arguments",
    "inputSchema",
    "result",
    "error",
    "code",
    "password",
    "apiKey",
    "token",
    "api_key",
    "Authorization",
    "credentials",
    "secret",
    "prompt_cache_key",
    "type",
    "properties",
    "items",
    "anyOf",
    "default",
    "enum",
    "const",
    "examples",
    "description",
    "$ref",
    "required",
    "$defs",
    "[REDACTED]",
    "[REDACTED:2]",
    "--password",
];

/// Words the structure check writes in strings and around a secret.
const WORDS: &[&str] = &[
    "string",
    "null",
    "object",
    "hello",
    "note",
    "card",
    "stored",
    "Bearer",
    "--password",
    "token",
    "#/$defs/Key",
    "a b",
    "",
    "[REDACTED]",
    "x\ny",
    "q\"uote",
    "\u{e9}",
    "{",
    "[1]",
    "password:",
    "apiKey=",
    "https://example.com/a",
];

/// The fuzz data, read one byte at a time; zeros once it is spent, which
/// make every choice the smallest and cheapest one.
struct Source<'a> {
    data: &'a [u8],
    at: usize,
    /// Containers and scalars left to make, so a document stays small.
    budget: usize,
}

impl Source<'_> {
    fn byte(&mut self) -> u8 {
        self.next().unwrap_or(0)
    }

    /// The next byte of the data, if any is left.
    fn next(&mut self) -> Option<u8> {
        let b = self.data.get(self.at).copied();
        self.at += 1;
        b
    }

    /// True for one byte in `n`; false once the data is spent.
    fn one_in(&mut self, n: u8) -> bool {
        self.byte() % n == n - 1
    }

    fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n.max(1)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// A string: a word, or up to eight bytes of the data read as text.
    fn text(&mut self) -> String {
        if self.one_in(4) {
            let len = self.below(9);
            let from = self.at.min(self.data.len());
            let to = (from + len).min(self.data.len());
            self.at += len;
            String::from_utf8_lossy(&self.data[from..to]).into_owned()
        } else {
            self.pick(WORDS).to_owned()
        }
    }

    fn scalar(&mut self) -> Value {
        match self.below(6) {
            0 => Value::Null,
            1 => Value::Bool(self.one_in(2)),
            2 => Value::from(i64::from(self.byte()) - 64),
            _ => Value::String(self.text()),
        }
    }

    /// A document `depth` containers deep: objects, lists, scalars, and
    /// shapes the rules look for (schema definitions, name/value pairs,
    /// credential flags).
    fn value(&mut self, depth: usize) -> Value {
        if depth >= 6 || self.budget == 0 {
            return self.scalar();
        }
        self.budget -= 1;
        match self.below(10) {
            0..=2 => self.scalar(),
            3..=5 => {
                let mut map = serde_json::Map::new();
                for _ in 0..self.below(5) {
                    let key = if self.one_in(8) {
                        self.text()
                    } else {
                        self.pick(NAMES).to_owned()
                    };
                    let item = self.value(depth + 1);
                    map.insert(key, item);
                }
                Value::Object(map)
            }
            6 | 7 => Value::Array((0..self.below(5)).map(|_| self.value(depth + 1)).collect()),
            8 => {
                let mut map = serde_json::Map::new();
                map.insert(
                    "type".to_owned(),
                    Value::from(self.pick(&["string", "object", "null", "hunter"])),
                );
                for _ in 0..self.below(4) {
                    let key = self.pick(&[
                        "description",
                        "default",
                        "enum",
                        "items",
                        "properties",
                        "anyOf",
                        "id",
                    ]);
                    let item = self.value(depth + 1);
                    map.insert(key.to_owned(), item);
                }
                Value::Object(map)
            }
            _ => match self.below(3) {
                0 => serde_json::json!({"name": self.pick(NAMES), "value": self.value(depth + 1)}),
                1 => serde_json::json!([[self.pick(NAMES), self.value(depth + 1)]]),
                _ => serde_json::json!(["--password", self.value(depth + 1)]),
            },
        }
    }

    /// The secret as written where it goes: alone, or between words.
    fn secret_text(&mut self, secret: &str) -> String {
        if self.one_in(2) {
            secret.to_owned()
        } else {
            let before = self.pick(&["note", "card", "sent", "url", "key"]);
            let after = self.pick(&["stored", "end", "ok", "here"]);
            format!("{before} {secret} {after}")
        }
    }

    /// A value holding the secret: an object with it as a key, the secret
    /// as a string, the secret in prose, or a document holding it written
    /// into a string (JSON inside a string), `levels` times over. Past four
    /// levels the documents are one member each: every level doubles the
    /// backslashes of the ones inside it.
    fn piece(&mut self, secret: &str, levels: usize) -> Value {
        let small = levels > 4;
        let text = self.secret_text(secret);
        let mut piece = match self.below(3) {
            0 => {
                let item = if small { Value::Null } else { self.value(3) };
                Value::Object(std::iter::once((text, item)).collect())
            }
            1 => Value::String(text),
            _ => Value::String(format!(
                "{} {} {}",
                self.pick(&["The", "log:", "retrying with"]),
                text,
                self.pick(&["and more.", "failed", "then"])
            )),
        };
        for _ in 0..levels {
            let mut doc = if small {
                Value::Object(serde_json::Map::new())
            } else {
                self.value(4)
            };
            insert(&mut doc, piece, self);
            piece = Value::String(doc.to_string());
        }
        piece
    }
}

/// Whether a key or a string of `v` holds `part` (which no JSON escape
/// changes): what `v.to_string().contains(part)` says, without writing the
/// text.
fn holds(v: &Value, part: &str) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if s.contains(part) => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (key, item) in map {
                    if key.contains(part) {
                        return true;
                    }
                    stack.push(item);
                }
            }
            _ => {}
        }
    }
    false
}

/// Puts `piece` somewhere in `at`: under a member or in a list, going down
/// a few levels (documents are a few levels deep), or beside a scalar.
fn insert(at: &mut Value, piece: Value, src: &mut Source<'_>) {
    let down = !src.one_in(3);
    match at {
        Value::Object(map) => {
            if down && !map.is_empty() {
                let k = src.below(map.len());
                if let Some(next) = map.values_mut().nth(k) {
                    insert(next, piece, src);
                }
            } else {
                let key = src.pick(NAMES).to_owned();
                map.insert(key, piece);
            }
        }
        Value::Array(items) => {
            if down && !items.is_empty() {
                let k = src.below(items.len());
                insert(&mut items[k], piece, src);
            } else {
                let k = src.below(items.len() + 1);
                items.insert(k, piece);
            }
        }
        scalar => {
            let old = std::mem::take(scalar);
            *scalar = Value::Array(vec![old, piece]);
        }
    }
}

/// A JSON document built from the fuzz data holds a secret from
/// [`PLACED_SECRETS`] at a key, at a value, in prose, or in JSON written into
/// a string (up to six levels deep); it is written compact or pretty, alone, as
/// a line of JSON Lines or after a log prefix. The secret survives none of
/// `redact_json_text` or `redact_text`, the value walks (`redacted_value` or
/// `redact_value`; the data picks one of each pair) and `RedactingWriter` fed
/// the text in chunks of sizes the data picks.
pub fn check_structure(data: &[u8]) {
    let mut src = Source {
        data,
        at: 0,
        budget: 32,
    };
    let (secret, part) = src.pick(PLACED_SECRETS);
    // Mostly the plain places, then JSON in a string, up to six levels:
    // each level doubles the backslashes in the levels inside it (the test
    // `keys_in_json_nested_in_strings_are_replaced_at_every_depth` goes past
    // the levels read as JSON).
    let levels = match src.below(64) {
        0..=27 => 0,
        28..=43 => 1,
        44..=51 => 2,
        52..=57 => 3 + src.below(2),
        _ => 5 + src.below(2),
    };
    let mut doc = src.value(0);
    let piece = src.piece(secret, levels);
    insert(&mut doc, piece, &mut src);
    let mut docs = vec![doc];
    if src.one_in(4) {
        docs.push(src.value(0));
        if src.one_in(2) {
            docs.swap(0, 1);
        }
    }
    let pretty = src.one_in(4);
    let mut text = docs
        .iter()
        .map(|d| {
            if pretty {
                serde_json::to_string_pretty(d).unwrap_or_default()
            } else {
                d.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    if src.one_in(5) {
        text = format!("{} {text}", src.pick(&["INFO answer:", "body =", "log"]));
    }
    if src.one_in(3) {
        text.push('\n');
    }
    assert!(text.contains(part), "the secret was not placed: {text}");

    let redactor = Redactor::new();
    let leaked = |what: &str, out: &str| {
        assert!(
            !out.contains(part),
            "{what} let {secret:?} through in {text}\n  out: {out}"
        );
    };
    // One text path and one value walk a run, picked by the data: the
    // fuzzer tries both.
    if src.one_in(2) {
        leaked("redact_json_text", &redactor.redact_json_text(&text));
    } else {
        leaked("redact_text", &redactor.redact_text(&text));
    }
    let in_place = src.one_in(2);
    for doc in &docs {
        let out = if in_place {
            let mut out = doc.clone();
            redactor.redact_value(&mut out);
            out
        } else {
            redactor.redacted_value(doc)
        };
        if holds(&out, part) {
            leaked(
                if in_place {
                    "redact_value"
                } else {
                    "redacted_value"
                },
                &out.to_string(),
            );
        }
    }
    let mut writer = RedactingWriter::new(redactor.clone(), Vec::new());
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        // The rest at once when the data is spent.
        let size = src.next().map_or(bytes.len(), |b| usize::from(b) + 1);
        let end = (at + size).min(bytes.len());
        writer.write_all(&bytes[at..end]).expect("writing to a Vec");
        at = end;
    }
    writer.flush().expect("flushing a Vec");
    leaked(
        "RedactingWriter",
        &String::from_utf8_lossy(writer.get_ref()),
    );
}

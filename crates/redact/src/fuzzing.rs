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

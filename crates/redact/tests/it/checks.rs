//! The properties the fuzz targets check, shared with the tests that replay
//! the fuzz regression inputs (the fuzz crate includes this file by path).

use calltape_redact::{REDACTED, Redactor};
use serde_json::Value;

/// A secret the text check plants; it must never survive redaction.
pub(crate) const SECRET: &str = "Q7fK2xV9mP4rT8wL3zN6";

/// Forms a credential takes in text; `SECRET` is replaced by [`SECRET`].
pub(crate) const FORMS: &[&str] = &[
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
];

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `redact_text` on fuzz data: no panic, idempotent, and a secret planted on a
/// line of its own in the middle of the text never survives.
pub(crate) fn check_text(data: &[u8]) {
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
    } else {
        SECRET.to_owned()
    };
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
/// same shape except redacted leaves, the same result as the value walk, and
/// idempotence.
pub(crate) fn check_json(data: &[u8]) {
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
    assert_eq!(
        parsed,
        redactor.redacted_value(&value),
        "text and value paths differ on {text:?}"
    );
    let mut in_place = value.clone();
    redactor.redact_value(&mut in_place);
    assert_eq!(in_place, parsed, "redact_value differs on {text:?}");
}

/// `after` has the shape of `before`, except for leaves that became
/// `"[REDACTED]"` and strings that gained a `[REDACTED]`.
pub(crate) fn same_shape(before: &Value, after: &Value) {
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
                assert!(x.keys().eq(y.keys()), "keys changed: {b} -> {a}");
                stack.extend(x.values().zip(y.values()));
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

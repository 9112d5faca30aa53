//! The public API: configuration, errors, sharing.

use std::borrow::Cow;

use calltape_redact::{ErrorKind, NameList, REDACTED, RedactingWriter, Redactor, RedactorBuilder};
use serde_json::json;

#[test]
fn public_types_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Redactor>();
    assert_send_sync::<RedactorBuilder>();
    assert_send_sync::<calltape_redact::Error>();
    assert_send_sync::<RedactingWriter<Vec<u8>>>();
    assert_send_sync::<calltape_redact::KnownSecrets>();
    assert_send_sync::<calltape_redact::Gate>();
    assert_send_sync::<calltape_redact::GateHit>();
    assert_send_sync::<calltape_redact::RefusedLines>();
}

#[test]
fn one_redactor_serves_many_threads() {
    let redactor = Redactor::new();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let r = redactor.clone();
            std::thread::spawn(move || r.redact_text(&format!("token={i}abc")).into_owned())
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().expect("thread"), "token=[REDACTED]", "thread {i}");
    }
}

#[test]
fn placeholder_is_the_documented_text() {
    assert_eq!(REDACTED, "[REDACTED]");
    assert_eq!(
        Redactor::default().redact_text("password=x"),
        "password=[REDACTED]"
    );
}

#[test]
fn nothing_found_borrows() {
    let r = Redactor::new();
    assert!(matches!(r.redact_text("plain words"), Cow::Borrowed(_)));
    assert!(matches!(
        r.redact_json_text("{\"a\": [1, 2]}"),
        Cow::Borrowed(_)
    ));
    assert!(matches!(r.redact_text("password=x"), Cow::Owned(_)));
}

#[test]
fn keep_names_override_every_rule() {
    let r = Redactor::builder()
        .keep_names(["uploadToken", "X-REQUEST-KEY"])
        .build()
        .expect("valid");
    assert!(!r.is_redacted_name("uploadToken"));
    assert!(!r.is_redacted_name("uploadtoken"));
    assert!(!r.is_redacted_name("x-request-key"));
    assert!(r.is_redacted_name("nextUploadToken"));
    assert_eq!(
        r.redact_text("uploadToken=abc token=def"),
        "uploadToken=abc token=[REDACTED]"
    );
    let v = r.redacted_value(&json!({"uploadToken": "abc", "accessToken": "def"}));
    assert_eq!(v, json!({"uploadToken": "abc", "accessToken": REDACTED}));
}

#[test]
fn extra_names_and_name_tests_add_to_the_defaults() {
    let r = Redactor::builder()
        .redact_names(["internalRef"])
        .name_test(|n| n.ends_with("_pin"))
        .name_test(|n| n == "otp")
        .build()
        .expect("valid");
    for name in ["internalRef", "INTERNALREF", "card_pin", "otp", "apiKey"] {
        assert!(r.is_redacted_name(name), "{name}");
    }
    assert!(!r.is_redacted_name("internalRefs"));
    assert_eq!(
        r.redact_json_text(r#"{"card_pin":1234,"otp":"1"}"#),
        r#"{"card_pin":"[REDACTED]","otp":"[REDACTED]"}"#
    );
    assert_eq!(r.redact_text("internalRef: 42"), "internalRef: [REDACTED]");
}

#[test]
fn text_rules_can_be_turned_off() {
    let r = Redactor::builder()
        .text_rules(false)
        .build()
        .expect("valid");
    assert_eq!(
        r.redact_text("Authorization: Bearer abc123"),
        "Authorization: Bearer abc123"
    );
    assert_eq!(
        r.redact_text(r#"{"token":"x","note":"Bearer abc123"}"#),
        r#"{"token":"[REDACTED]","note":"Bearer abc123"}"#
    );
    // JSON inside strings is still redacted by name.
    assert_eq!(
        r.redact_json_text(r#"{"text":"{\"secret\":1}"}"#),
        r#"{"text":"{\"secret\":\"[REDACTED]\"}"}"#
    );
    let v = r.redacted_value(&json!({"note": "password=x", "password": "x"}));
    assert_eq!(v, json!({"note": "password=x", "password": REDACTED}));
}

#[test]
fn max_depth_redacts_deeper_values_whole() {
    let r = Redactor::builder()
        .max_depth(Some(2))
        .build()
        .expect("valid");
    let v = json!({"a": {"b": {"c": 1}, "d": 2}, "e": [1, [2, [3]]]});
    // `c` and the items of the innermost list sit inside three containers.
    let want = json!({"a": {"b": {"c": REDACTED}, "d": 2}, "e": [1, [REDACTED, REDACTED]]});
    assert_eq!(r.redacted_value(&v), want);
    let text = v.to_string();
    let out: serde_json::Value =
        serde_json::from_str(&r.redact_json_text(&text)).expect("valid JSON");
    assert_eq!(out, want);
    let r0 = Redactor::builder()
        .max_depth(Some(0))
        .build()
        .expect("valid");
    assert_eq!(r0.redacted_value(&json!({"a": 1})), json!({"a": REDACTED}));
    assert_eq!(r0.redacted_value(&json!("x")), json!("x"));
}

#[test]
fn empty_names_are_configuration_errors() {
    let err = Redactor::builder()
        .redact_names(["ok", " "])
        .build()
        .expect_err("blank name");
    assert_eq!(
        err.kind(),
        &ErrorKind::EmptyName {
            list: NameList::Redact,
            position: 2
        }
    );
    assert_eq!(
        err.to_string(),
        "redact name #2 is empty; give a field name such as `apiKey`, or leave it out"
    );
    let err = Redactor::builder()
        .keep_names([""])
        .build()
        .expect_err("empty name");
    assert_eq!(
        err.to_string(),
        "keep name #1 is empty; give a field name such as `apiKey`, or leave it out"
    );
}

#[test]
fn a_name_both_kept_and_redacted_is_an_error() {
    let err = Redactor::builder()
        .redact_names(["sessionKey"])
        .keep_names(["SESSIONKEY"])
        .build()
        .expect_err("conflict");
    assert_eq!(
        err.to_string(),
        "`SESSIONKEY` is both a name to redact and a name to keep; remove it from one of the two lists"
    );
    assert!(std::error::Error::source(&err).is_none());
}

#[test]
fn debug_output_shows_the_configuration() {
    let r = Redactor::builder()
        .keep_names(["pageToken"])
        .build()
        .expect("valid");
    let debug = format!("{r:?}");
    assert!(debug.contains("pageToken"), "{debug}");
}

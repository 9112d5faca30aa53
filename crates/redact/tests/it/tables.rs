//! The checks of the redaction tables: every row of `table.rs`,
//! `table_context.rs` and `providers.rs` holds, and every gitleaks secret is
//! hidden in every form.

use std::collections::BTreeSet;

use calltape_redact::{Redactor, fuzzing};
use serde_json::{Value, json};

use crate::providers::{
    self, FORMS, GITLEAKS, GITLEAKS_RULES, Lcg, NAMES, NOT_BARE, NOT_GITLEAKS, secret,
};
use crate::table::{self, all_rows, check};
use crate::{table_context, table_json};

#[test]
fn every_row_holds() {
    let redactor = Redactor::new();
    for (row, (mode, input, expected)) in all_rows().enumerate() {
        check(&redactor, row, mode, input, expected);
    }
}

#[test]
fn text_and_json_rows_agree_with_the_value_walk() {
    // Wherever a JSON row is valid JSON, the text path and the value path
    // must redact alike, but for the order in which the replaced keys of one
    // object are numbered (the text's, or the map's), and for a row with two
    // members of one key, of which a value holds only the last.
    let redactor = Redactor::new();
    let mut compared = 0;
    for (row, (mode, input, _)) in all_rows().enumerate() {
        if *mode != "json" || fuzzing::has_duplicate_keys(input) {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(input) else {
            continue;
        };
        let text: Value =
            serde_json::from_str(&redactor.redact_json_text(input)).expect("valid JSON out");
        assert_eq!(
            fuzzing::numbering_free(&text),
            fuzzing::numbering_free(&redactor.redacted_value(&value)),
            "row {row}: {input:?}"
        );
        compared += 1;
    }
    assert!(compared > 80, "{compared} rows compared");
}

#[test]
fn the_table_is_big_enough() {
    assert!(table::ROWS.len() >= 150, "{} rows", table::ROWS.len());
    for mode in ["name", "text", "json", "value"] {
        assert!(
            table::ROWS.iter().any(|(m, ..)| *m == mode),
            "no {mode} rows"
        );
        assert!(
            table_context::ROWS.iter().any(|(m, ..)| *m == mode),
            "no {mode} rows for the contextual rules"
        );
        if mode != "name" && mode != "text" {
            assert!(
                table_json::ROWS.iter().any(|(m, ..)| *m == mode),
                "no {mode} rows for JSON's structure"
            );
        }
    }
}

#[test]
fn every_provider_row_holds() {
    let redactor = Redactor::new();
    for (row, (mode, input, expected)) in providers::ROWS.iter().enumerate() {
        check(&redactor, row, mode, input, expected);
    }
}

fn assert_hidden(what: &str, out: &str, pieces: &[String]) {
    for piece in pieces {
        assert!(
            !out.contains(piece.as_str()),
            "{what}: {piece:?} survived in {out:?}"
        );
    }
}

#[test]
fn no_fixed_prefix_secret_survives_any_form() {
    let redactor = Redactor::new();
    let mut rng = Lcg(16);
    let mut tried = 0;
    for (id, template) in GITLEAKS {
        let (secret, pieces) = secret(template, &mut rng);
        for form in FORMS {
            for (n, upper) in NAMES {
                let text = form
                    .replace("{n}", n)
                    .replace("{N}", upper)
                    .replace("{s}", &secret);
                let what = format!("{id} in {text:?}");
                let out = redactor.redact_text(&text);
                assert_hidden(&what, &out, &pieces);
                assert_eq!(redactor.redact_text(&out), out, "{what}: not idempotent");

                let doc = json!({"message": text, "items": [text]}).to_string();
                let out = redactor.redact_json_text(&doc);
                assert_hidden(&format!("{what} as JSON text"), &out, &pieces);
                let mut value: Value = serde_json::from_str(&doc).expect("valid JSON");
                redactor.redact_value(&mut value);
                assert_hidden(&format!("{what} as a value"), &value.to_string(), &pieces);
                tried += 1;
            }
        }
    }
    assert_eq!(tried, GITLEAKS.len() * FORMS.len() * NAMES.len());
}

#[test]
fn the_gitleaks_lists_cover_every_rule_once() {
    let bare: BTreeSet<&str> = GITLEAKS
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| !NOT_GITLEAKS.contains(id))
        .collect();
    let not_bare: BTreeSet<&str> = NOT_BARE.iter().map(|(id, _)| *id).collect();
    assert_eq!(not_bare.len(), NOT_BARE.len(), "a rule is listed twice");
    let both: Vec<_> = bare.intersection(&not_bare).collect();
    assert!(both.is_empty(), "listed as caught and not caught: {both:?}");
    assert_eq!(bare.len() + not_bare.len(), GITLEAKS_RULES);
    // The count the crate README gives.
    assert_eq!(bare.len(), 121);
}

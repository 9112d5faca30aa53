//! calltape-redact's own tables, driven through `calltape redact`: every row's input, and every
//! gitleaks secret in every form, comes out of the command as it comes out of the library.
//!
//! The rows are the library tests' own files, read here as they are, so a row added there is tried
//! here too.

use calltape_redact::Redactor;
use calltape_redact::fuzzing::numbering_free;

use crate::support::calltape;

// Each file also holds what its rows mean for the library (`check`), which this test does not use.
#[allow(dead_code)]
#[path = "../../../redact/tests/it/providers.rs"]
mod providers;
#[allow(dead_code)]
#[path = "../../../redact/tests/it/table.rs"]
mod table;
#[allow(dead_code)]
#[path = "../../../redact/tests/it/table_context.rs"]
mod table_context;

#[path = "../../../redact/tests/it/table_json.rs"]
mod table_json;

/// What ends each input's output: the content of a file given after each input, which the
/// command leaves as it is (and which no input's output holds).
const MARK: &str = "\n\u{1}calltape: end of input\u{1}\n";

/// `calltape redact` on each text, each a file of its own, all in one run; what it wrote for each.
fn redact_each(texts: &[String]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("mark"), MARK).expect("write the mark");
    let mut args = vec!["redact".to_owned()];
    for (i, text) in texts.iter().enumerate() {
        std::fs::write(dir.path().join(i.to_string()), text).expect("write an input");
        args.push(i.to_string());
        args.push("mark".to_owned());
    }
    let out = calltape()
        .args(&args)
        .current_dir(dir.path())
        .output()
        .expect("run calltape redact");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 out");
    let mut outputs: Vec<String> = stdout.split(MARK).map(str::to_owned).collect();
    assert_eq!(
        outputs.pop().as_deref(),
        Some(""),
        "output after the last mark"
    );
    assert_eq!(outputs.len(), texts.len(), "one output per input");
    outputs
}

/// An input that gives a name row's name a value, as a JSON line.
fn named(name: &str) -> String {
    serde_json::json!({ name: "v4lue-0f-the-f1eld" }).to_string()
}

#[test]
fn every_row_of_the_redaction_tables_holds_through_the_command() {
    let redactor = Redactor::new();
    let rows: Vec<&(&str, &str, &str)> = table::all_rows().chain(providers::ROWS).collect();
    let inputs: Vec<String> = rows
        .iter()
        .map(|(mode, input, _)| match *mode {
            "name" => named(input),
            _ => (*input).to_owned(),
        })
        .collect();
    let outputs = redact_each(&inputs);
    let mut modes = std::collections::BTreeMap::<&str, usize>::new();
    for (((mode, input, expected), text), out) in rows.iter().zip(&inputs).zip(&outputs) {
        let ctx = format!("{mode} row {input:?}");
        // What the library gives for the same text: the command adds nothing and loses nothing.
        assert_eq!(*out, redactor.redact_text(text), "{ctx}");
        match *mode {
            // The row's own expectation, as the library test checks it: a text row's, and a JSON
            // row's on one line (the command, as `redact_text`, reads a JSON document spread over
            // lines as text, where `redact_json_text` reads it as JSON).
            "text" => assert_eq!(out.as_str(), *expected, "{ctx}"),
            "json" if !input.trim_end().contains('\n') => {
                assert_eq!(out.as_str(), *expected, "{ctx}")
            }
            "json" => {}
            "value" => {
                // The row is the value walk's, which numbers an object's replaced keys in the
                // map's order; the command reads text, and numbers them in the text's order.
                let out: serde_json::Value = serde_json::from_str(out).expect("JSON out");
                let want: serde_json::Value = serde_json::from_str(expected).expect("JSON row");
                assert_eq!(numbering_free(&out), numbering_free(&want), "{ctx}");
            }
            "name" => {
                let out: serde_json::Value = serde_json::from_str(out).expect("JSON out");
                let hidden = out[input] == calltape_redact::REDACTED;
                assert_eq!(hidden, *expected == "redact", "{ctx}: {out}");
            }
            other => panic!("{ctx}: unknown mode {other}"),
        }
        *modes.entry(mode).or_default() += 1;
    }
    // Each mode was tried.
    for mode in ["name", "text", "json", "value"] {
        assert!(modes.contains_key(mode), "{modes:?}");
    }
}

#[test]
fn every_gitleaks_secret_in_every_form_is_hidden_by_the_command_as_by_the_library() {
    let redactor = Redactor::new();
    let mut rng = providers::Lcg(16);
    let mut cases = Vec::new();
    for (id, template) in providers::GITLEAKS {
        let (secret, pieces) = providers::secret(template, &mut rng);
        for form in providers::FORMS {
            for (n, upper) in providers::NAMES {
                let text = form
                    .replace("{n}", n)
                    .replace("{N}", upper)
                    .replace("{s}", &secret);
                cases.push((*id, text, pieces.clone()));
            }
        }
    }
    let texts: Vec<String> = cases.iter().map(|(_, text, _)| text.clone()).collect();
    let outputs = redact_each(&texts);
    for ((id, text, pieces), out) in cases.iter().zip(&outputs) {
        assert_eq!(*out, redactor.redact_text(text), "{id} in {text:?}");
        for piece in pieces {
            assert!(!out.contains(piece.as_str()), "{id}: {piece:?} in {out:?}");
        }
    }
    assert_eq!(
        cases.len(),
        providers::GITLEAKS.len() * providers::FORMS.len() * providers::NAMES.len()
    );
}

//! The forms a secret is written in, in configuration and code, after the
//! sample forms of gitleaks' rule generator (including the ones it lists as
//! not yet covered): each form, with each identifier, must lose its secret,
//! and redacting its output again must change nothing.

use calltape_redact::Redactor;

/// `{i}` is an identifier, `{I}` the same in capitals, `{s}` the secret.
const FORMS: &[&str] = &[
    // INI
    "{i}Token=\"{s}\"",
    "{i}Token = \"{s}\"",
    "{i}Token={s}",
    "{i}Token = {s}",
    // JSON
    "{\n    \"{i}_token\": \"{s}\"\n}",
    "\\{\n    \\\"{i}_token\\\": \\\"{s}\\\"\n\\}",
    "{\n    \"name\": \"{i}_token\",\n    \"value\": \"{s}\"\n}",
    "{\"config.ini\": \"{I}_TOKEN={s}\\nBACKUP_ENABLED=true\"}",
    // XML
    "<{i}Token>{s}</{i}Token>",
    "<{i}Token>\n    {s}\n</{i}Token>",
    "<entry name=\"{i}Token\" value=\"{s}\" />",
    "<entry>\n  <name=\"{i}Token\" />\n  <value=\"{s}\" />\n</entry>",
    // YAML
    "{i}_token: {s}",
    "{i}_token: '{s}'",
    "{i}_token: \"{s}\"",
    "{i}_token: |\n  {s}",
    "{i}_token: >\n  {s}\n  {s}\nnext: 1",
    // Programming languages
    "string {i}Token = \"{s}\";",
    "var {i}Token string = \"{s}\"",
    "{i}Token := \"{s}\"",
    "{i}Token := `{s}`",
    "String {i}Token = \"{s}\";",
    "config.put(\"sasl.jaas.config\", \"org.apache.kafka.common.security.plain.PlainLoginModule required username=\\\"JDOE35\\\" {i}Token=\\\"{s}\\\"\")",
    "var {i}Token: string = \"{s}\"",
    "var {i}Token = \"{s}\"",
    "${i}Token .= \"{s}\"",
    "${i}Token ??= \"{s}\"",
    "{i}Token = '{s}'",
    "{i}Token = \"{s}\"",
    // Miscellaneous
    "https://{i}:{s}@example.com/",
    "https://example.com?{i}Token={s}&fooBar=baz",
    "environmentVariables = {PATH=/usr/local/bin, ENV=/etc/bashrc, {I}_PASSWORD={s}, LC_CTYPE=en_CA.UTF-8},",
    "System.setProperty(\"{I}_TOKEN\", \"{s}\")",
    "  \"{i}Token\" => \"{s}\"",
    // Makefile
    "{i}_TOKEN = \"{s}\"",
    "{i}_TOKEN := \"{s}\"",
    "{i}_TOKEN ::= \"{s}\"",
    "{i}_TOKEN :::= \"{s}\"",
    "{i}_TOKEN ?= \"{s}\"",
    "{i}_TOKEN += \"{s}\"",
    // Command lines and headers
    "tool --{i}-token {s} --verbose",
    "tool --{i}-token=\"{s}\"",
    "[\"tool\", \"--{i}-token\", \"{s}\"]",
    "curl -H 'X-{i}-Token: {s}' https://example.com",
    "export {I}_TOKEN={s}",
    "{I}_TOKEN='{s}' ./run",
];

const IDENTIFIERS: &[&str] = &["api", "github", "client", "db", "x"];

/// Secrets of several shapes: letters and digits, with symbols, with blanks
/// (quoted forms only), long.
const SECRETS: &[&str] = &[
    "Q7fK2xV9mP4rT8wL3zN6",
    "hunter2",
    "p@ss/w0rd+=",
    "aZ9-_.~aZ9-_.~aZ9-_.~aZ9-_.~aZ9-_.~",
];

#[test]
fn every_form_loses_its_secret() {
    let redactor = Redactor::new();
    let mut checked = 0;
    for form in FORMS {
        for i in IDENTIFIERS {
            for secret in SECRETS {
                let text = form
                    .replace("{i}", i)
                    .replace("{I}", &i.to_ascii_uppercase())
                    .replace("{s}", secret);
                for (how, out) in [
                    ("redact_text", redactor.redact_text(&text)),
                    ("redact_json_text", redactor.redact_json_text(&text)),
                ] {
                    assert!(
                        !out.contains(secret),
                        "{how} kept the secret of {form:?}: {text:?} -> {out:?}"
                    );
                    let again = redactor.redact_text(&out);
                    assert_eq!(again, out, "{how} of {text:?} is not idempotent");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, FORMS.len() * IDENTIFIERS.len() * SECRETS.len() * 2);
}

/// Pieces of the forms the rules key on, put together at random.
const PIECES: &[&str] = &[
    "Authorization: ",
    "Proxy-Authorization: Digest ",
    "Cookie: ",
    "Set-Cookie: ",
    "a=1",
    "; ",
    ", ",
    "Path=/",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "--password ",
    "--token=",
    "mysql ",
    "-pabc ",
    "<apiToken>",
    "</apiToken>",
    "<entry name=\"token\" ",
    "value=\"v\" ",
    "name: ",
    "value: ",
    "setProperty(\"X_TOKEN\", ",
    "\"",
    "'",
    "`",
    "\\\"",
    "\\u0073k-",
    "abcdefghijklmnopqrstuvwx",
    "https://u%3Ap@h/",
    "access%5Ftoken=",
    "token: |\n  ",
    "key: ",
    "password",
    " ",
    "\n",
    ":",
    "=",
    ":=",
    "?=",
    "get_token()",
    "it is ",
    "{",
    "}",
    "[",
    "]",
    "Bearer ",
    "x9",
];

#[test]
fn random_mixes_of_the_forms_redact_idempotently() {
    let redactor = Redactor::new();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    let mut changed = 0;
    for _ in 0..30_000 {
        let len = 1 + next() % 14;
        let text: String = (0..len).map(|_| PIECES[next() % PIECES.len()]).collect();
        for json in [false, true] {
            let redact = |s: &str| {
                if json {
                    redactor.redact_json_text(s).into_owned()
                } else {
                    redactor.redact_text(s).into_owned()
                }
            };
            let once = redact(&text);
            assert_eq!(
                redact(&once),
                once,
                "not idempotent on {text:?} (json: {json})"
            );
            changed += usize::from(once != text);
        }
    }
    assert!(
        changed > 5_000,
        "too few texts held anything to redact: {changed}"
    );
}

/// A random JSON value built from the names and strings the pair rules key on.
fn random_json(next: &mut impl FnMut() -> usize, depth: usize) -> serde_json::Value {
    use serde_json::Value;
    const KEYS: &[&str] = &[
        "name",
        "key",
        "value",
        "password",
        "a",
        "Authorization",
        "args",
    ];
    const STRINGS: &[&str] = &[
        "token",
        "--password",
        "--api-key",
        "x",
        "Bearer abc123def",
        "Cookie",
        "OPENAI_API_KEY",
        "[REDACTED]",
        "{\"name\":\"secret\",\"value\":\"v\"}",
    ];
    match next() % if depth == 0 { 2 } else { 5 } {
        0 => Value::String(STRINGS[next() % STRINGS.len()].to_owned()),
        1 => Value::from(next() % 10),
        2 | 3 => Value::Array(
            (0..next() % 4)
                .map(|_| random_json(next, depth - 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..next() % 4)
                .map(|_| {
                    (
                        KEYS[next() % KEYS.len()].to_owned(),
                        random_json(next, depth - 1),
                    )
                })
                .collect(),
        ),
    }
}

#[test]
fn random_json_with_pairs_redacts_alike_as_text_and_as_values() {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    let redactor = Redactor::new();
    let mut hidden = 0;
    for _ in 0..5_000 {
        let value = random_json(&mut next, 4);
        let text = value.to_string();
        calltape_redact::fuzzing::check_json(text.as_bytes());
        hidden += usize::from(redactor.redact_json_text(&text) != text);
    }
    assert!(
        hidden > 500,
        "too few values held anything to redact: {hidden}"
    );
}

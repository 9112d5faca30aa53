//! Linear time, proven by counting steps instead of reading clocks: for every
//! adversarial family, four times the input costs at most 4.5 times the steps,
//! within the writer's line limit (64 KiB) and past it, where `redact_text`
//! reads as the writer does.

use serde_json::{Value, json};

use crate::provider;
use crate::redactor::drop_iteratively;
use crate::{Redactor, steps_of};

/// Four times it stays within the line limit.
const N: usize = 16_000;
/// Past the line limit: enough pieces of a long line that the first, read
/// from where its line starts, weighs little.
const LONG: usize = 8 * crate::writer::DEFAULT_LINE_LIMIT;

/// Text families built by repeating a unit, each aimed at a rule's look-ahead
/// or look-behind.
const FAMILIES: &[&str] = &[
    "a.",
    "a-",
    "a",
    " ",
    "{a:",
    "{\"a\":",
    "\"",
    "'",
    "\\\"",
    "[",
    "{",
    "]",
    "Bearer ",
    "Basic ",
    "bearer a",
    "eyJ.",
    "eyJabcdefgh.ab.",
    "eyJabcdefgh",
    "://a:",
    "://a:b",
    "://",
    "@",
    "token=",
    "token:",
    "token: ",
    "token:\"",
    "token:'",
    "token:\\\"",
    "token: Bearer ",
    "password=\"a",
    "\"password\": \"",
    "\"token\":",
    "a=",
    "a:",
    "=",
    ":",
    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=",
    "QUJD",
    "QUJD+/",
    "sk-",
    "ghp_",
    "AKIA",
    "xoxb-",
    "a.b.c-d_e",
    "apiKey",
    "x-api-key: ",
    "\\",
    "%",
    "\u{e9}",
    "sig=",
    "&sig=",
    "sig=a%3D&",
    "SG.",
    "1//",
    "ya29.a.",
    "dapi0",
    "sc_a.",
    "sc_a.+",
    "pat.",
    "hooks.slack.com/services/",
    "-----BEGIN ",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----a\n-----END",
    "-----",
    "Cookie: a=",
    "Cookie: a=1; ",
    "Set-Cookie: a=\"",
    "Authorization: Digest a=",
    "Authorization: x ",
    "\"Authorization: x \\\"",
    "--password ",
    "--password",
    "--token a ",
    "mysql -p",
    "-pa ",
    "<password>",
    "<password>a",
    "<a>",
    ">",
    "\\u0041",
    "\\u0073k-",
    "a\\u00",
    "name=\"token\" ",
    "key=token value=",
    "name: token\n",
    "(\"token\",",
    "\",",
    "token%5F",
    "%5F=",
    "://a%3Ab@",
    "://abcdefghij0123456789",
    "var token string = ",
    "token: String ",
    "?=",
    ":::=",
    "token = f(",
    "key: it ",
    "`",
    "token=`",
    "{\"name\":\"token\",\"value\":",
    "{\"value\":",
    "[[\"token\",",
    "[\"--password\",",
    "token: |\n",
    "token: |\n  a\n",
    ": |\n ",
    "name=token /><",
    "{\"token\":1}\na\n",
    "[1]\n-----BEGIN PRIVATE KEY-----\n",
    "{\n",
    "[x]\n<password>\n",
];

fn text_steps(redactor: &Redactor, unit: &str, n: usize) -> (u64, u64) {
    let text = unit.repeat(n / unit.len().max(1) + 1);
    let t = steps_of(|| {
        let _ = redactor.redact_text(&text);
    });
    let j = steps_of(|| {
        let _ = redactor.redact_json_text(&text);
    });
    (t, j)
}

fn assert_linear(what: &str, small: u64, large: u64) {
    assert!(small > 0, "{what}: no steps counted");
    assert!(
        large as f64 <= 4.5 * small as f64,
        "{what}: {small} steps for n, {large} steps for 4n (ratio {:.2})",
        large as f64 / small as f64
    );
}

#[test]
fn text_families_take_linear_steps() {
    let redactor = Redactor::new();
    for unit in FAMILIES {
        let (t1, j1) = text_steps(&redactor, unit, N);
        let (t4, j4) = text_steps(&redactor, unit, 4 * N);
        assert_linear(&format!("redact_text({unit:?} x n)"), t1, t4);
        assert_linear(&format!("redact_json_text({unit:?} x n)"), j1, j4);
    }
}

#[test]
fn text_families_past_the_line_limit_take_linear_steps() {
    let redactor = Redactor::new();
    for unit in FAMILIES.iter().step_by(3).chain(BOUND_FAMILIES) {
        let (t1, _) = text_steps(&redactor, unit, LONG);
        let (t4, _) = text_steps(&redactor, unit, 4 * LONG);
        assert_linear(&format!("redact_text({unit:?} x {LONG})"), t1, t4);
    }
}

/// Units aimed at the bound: constructs held open over many lines, and lines
/// longer than the limit.
const BOUND_FAMILIES: &[&str] = &[
    "-----BEGIN PRIVATE KEY-----\n",
    "<password>\n",
    "<password>\na\n",
    "name: token\n",
    "name: token\n\n",
    "token: |\n  a\n",
    "token: |\n",
    "<password>\nname: token\n",
    "password=\"a ",
    "Authorization: Digest a=",
    "eyJhbGciOiJIUzI1NiJ9.",
    "ghp_",
    "-----BEGIN PRIVATE KEY-----\n-----END\n",
];

#[test]
fn pairs_of_families_take_linear_steps() {
    // Mixed units catch rules that only misbehave after another rule fired.
    let redactor = Redactor::new();
    for a in FAMILIES.iter().step_by(3) {
        for b in FAMILIES.iter().skip(1).step_by(4) {
            let unit = format!("{a}{b}");
            let (t1, j1) = text_steps(&redactor, &unit, N);
            let (t4, j4) = text_steps(&redactor, &unit, 4 * N);
            assert_linear(&format!("redact_text({unit:?} x n)"), t1, t4);
            assert_linear(&format!("redact_json_text({unit:?} x n)"), j1, j4);
        }
    }
}

/// Units aimed at each provider format: its prefix alone, its prefix and a
/// body one byte short of the least length, and the prefix after a byte of its
/// body that is not a word byte (so that every copy starts a word).
fn provider_units() -> Vec<String> {
    let mut units = Vec::new();
    for rule in provider::RULES {
        let body = b"a0A-_./+=%@"
            .iter()
            .find(|&&c| provider::is(c, rule.body))
            .map_or('a', |&c| char::from(c));
        let short = body.to_string().repeat(rule.min.saturating_sub(1));
        units.push(rule.prefix.to_owned());
        units.push(format!("{}{short} ", rule.prefix));
        units.push(format!("{}{short}", rule.prefix));
        units.push(format!("{}.", rule.prefix));
        units.push(format!("{}/", rule.prefix));
        units.push(format!("{}+", rule.prefix));
    }
    units
}

#[test]
fn provider_families_take_linear_steps() {
    let redactor = Redactor::new();
    let mut ratios = Vec::new();
    for unit in provider_units() {
        let (t1, j1) = text_steps(&redactor, &unit, N);
        let (t4, j4) = text_steps(&redactor, &unit, 4 * N);
        assert_linear(&format!("redact_text({unit:?} x n)"), t1, t4);
        assert_linear(&format!("redact_json_text({unit:?} x n)"), j1, j4);
        ratios.push((t4 as f64 / t1 as f64, j4 as f64 / j1 as f64, unit));
    }
    // Shown with `--nocapture`.
    ratios.sort_by(|a, b| b.0.total_cmp(&a.0));
    let median = ratios[ratios.len() / 2].0;
    eprintln!(
        "{} provider families; text ratio median {median:.3}; highest:",
        ratios.len()
    );
    for (t, j, unit) in ratios.iter().take(5) {
        eprintln!("  {unit:?}: text {t:.3}, json {j:.3}");
    }
}

/// Texts of a unit repeated, then a tail once: a chain that a rule walks
/// ahead over from each of its units only to meet the tail at its end.
const CHAINS: &[(&str, &str)] = &[
    ("token:", "f("),
    ("token:", "f"),
    ("token:a.", "f("),
    ("token:a:", "f("),
    ("token=a:", "f("),
    ("token:[REDACTED]", "("),
    ("token:a[REDACTED]:", "f("),
    ("token:a:[REDACTED]", "("),
    ("key=", "f("),
    ("api_key:=", "f("),
    ("name=", "a"),
    ("name:", "a"),
    ("name=\"", "a"),
    ("Name: ", "a"),
    ("string=", "a"),
    ("token string=", "a"),
];

#[test]
fn chains_before_a_call_take_linear_steps() {
    let redactor = Redactor::new();
    let steps = |unit: &str, tail: &str, n: usize| {
        let text = format!("{}{tail}", unit.repeat(n / unit.len() + 1));
        let t = steps_of(|| {
            let _ = redactor.redact_text(&text);
        });
        let j = steps_of(|| {
            let _ = redactor.redact_json_text(&text);
        });
        (t, j)
    };
    for (unit, tail) in CHAINS {
        let (t1, j1) = steps(unit, tail, N);
        let (t4, j4) = steps(unit, tail, 4 * N);
        assert_linear(&format!("redact_text({unit:?} x n + {tail:?})"), t1, t4);
        assert_linear(
            &format!("redact_json_text({unit:?} x n + {tail:?})"),
            j1,
            j4,
        );
    }
}

fn nested_json(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 12);
    for _ in 0..depth {
        s.push_str("{\"a\":[");
    }
    s.push_str("{\"password\":\"x\"}");
    for _ in 0..depth {
        s.push_str("]}");
    }
    s
}

/// JSON whose strings hold JSON, `levels` deep, with a secret at the bottom.
fn embedded_json(levels: usize, filler: usize) -> String {
    let mut s = format!("{{\"token\":\"abc\",\"pad\":\"{}\"}}", "x".repeat(filler));
    for _ in 0..levels {
        s = serde_json::to_string(&json!({ "inner": s })).unwrap_or_default();
    }
    s
}

#[test]
fn deep_json_text_takes_linear_steps() {
    let redactor = Redactor::new();
    let small = nested_json(N / 10);
    let large = nested_json(4 * N / 10);
    let s = steps_of(|| assert!(!redactor.redact_json_text(&small).contains("\"x\"")));
    let l = steps_of(|| assert!(!redactor.redact_json_text(&large).contains("\"x\"")));
    assert_linear("nested JSON text", s, l);

    let s = steps_of(|| assert!(!redactor.redact_text(&embedded_json(6, N)).contains("abc")));
    let l = steps_of(|| {
        assert!(
            !redactor
                .redact_text(&embedded_json(6, 4 * N))
                .contains("abc")
        )
    });
    assert_linear("JSON inside strings", s, l);
}

/// JSON whose values are named by siblings: `value` members nested `depth`
/// deep, each named after its value ends, and lists of pairs and flags.
fn nested_pairs(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 64);
    for _ in 0..depth {
        s.push_str("{\"value\":[[\"token\",\"a\"],[\"--password\",\"b\",");
    }
    s.push_str("\"Bearer abc123def\"");
    for _ in 0..depth {
        s.push_str("]],\"name\":\"api_key\"}");
    }
    s
}

#[test]
fn values_named_by_siblings_take_linear_steps() {
    let redactor = Redactor::new();
    let small = nested_pairs(N / 10);
    let large = nested_pairs(4 * N / 10);
    let s = steps_of(|| assert!(!redactor.redact_json_text(&small).contains("abc123")));
    let l = steps_of(|| assert!(!redactor.redact_json_text(&large).contains("abc123")));
    assert_linear("nested name/value pairs", s, l);
    let flat = |n: usize| "{\"name\":\"token\",\"value\":\"x\"},".repeat(n);
    let s = steps_of(|| {
        let _ = redactor.redact_json_text(&format!("[{}1]", flat(N / 10)));
    });
    let l = steps_of(|| {
        let _ = redactor.redact_json_text(&format!("[{}1]", flat(4 * N / 10)));
    });
    assert_linear("lists of name/value pairs", s, l);
}

fn nested_value(depth: usize) -> Value {
    let mut v = json!({"password": "x", "note": "Bearer abc123"});
    for i in 0..depth {
        // Not `json!`, which would serialize `v` recursively.
        v = if i % 2 == 0 {
            Value::Array(vec![v])
        } else {
            Value::Object(std::iter::once(("a".to_owned(), v)).collect())
        };
    }
    v
}

#[test]
fn deep_values_take_linear_steps() {
    let redactor = Redactor::new();
    let mut small = nested_value(N / 10);
    let mut large = nested_value(4 * N / 10);
    let s = steps_of(|| redactor.redact_value(&mut small));
    let l = steps_of(|| redactor.redact_value(&mut large));
    assert_linear("redact_value on nested values", s, l);
    let s = steps_of(|| drop_iteratively(redactor.redacted_value(&small)));
    let l = steps_of(|| drop_iteratively(redactor.redacted_value(&large)));
    assert_linear("redacted_value on nested values", s, l);
    drop_iteratively(small);
    drop_iteratively(large);
}

/// Steps to write `head` then `n` bytes of `line` repeated, line by line,
/// through a writer whose carry bound holds them all.
fn writer_steps(head: &str, line: &str, n: usize) -> u64 {
    use std::io::Write;
    let mut writer = crate::RedactingWriter::new(Redactor::new(), std::io::sink())
        .with_line_limit(64 * 1024 * 1024);
    steps_of(|| {
        writer.write_all(head.as_bytes()).expect("a sink");
        for _ in 0..n / line.len() + 1 {
            writer.write_all(line.as_bytes()).expect("a sink");
        }
        writer.flush().expect("a sink");
    })
}

/// One line of `head` then `unit` repeated to `n` bytes, then `tail`.
fn long_steps(redactor: &Redactor, head: &str, unit: &str, tail: &str, n: usize) -> u64 {
    let text = format!("{head}{}{tail}", unit.repeat(n / unit.len() + 1));
    steps_of(|| {
        let _ = redactor.redact_text(&text);
    })
}

#[test]
fn texts_past_the_line_limit_take_linear_steps() {
    // A line of 2 MiB, a quote left open for as long, and constructs held
    // over more lines than the limit holds.
    let redactor = Redactor::new();
    let cases = [
        ("", "a ", "", 2 << 20),
        ("", "abcdefgh", "", 2 << 20),
        ("password=\"", "a b ", "\n", 2 << 20),
        ("password=\"", "ab", "\n", 2 << 20),
        ("Authorization: Digest ", "a=\"b\", ", "\n", 2 << 20),
        ("<password>\n", "line\n", "</password>\n", 2 << 20),
        (
            "-----BEGIN RSA PRIVATE KEY-----\n",
            "MIIE\n",
            "-----END RSA PRIVATE KEY-----\n",
            200 << 10,
        ),
        ("api_token: |\n", "  abc\n", "x: 1\n", 2 << 20),
        ("- name: DB_PASSWORD\n", "\n", "  value: x\n", 2 << 20),
    ];
    for (head, unit, tail, n) in cases {
        let small = long_steps(&redactor, head, unit, tail, n / 4);
        let large = long_steps(&redactor, head, unit, tail, n);
        assert_linear(
            &format!("redact_text({head:?} {unit:?} x n {tail:?})"),
            small,
            large,
        );
    }
}

#[test]
fn lines_held_by_the_writer_take_linear_steps() {
    // Constructs left open over many lines: each line that cannot close
    // them is held without scanning the held lines again.
    let families = [
        ("<password>\n", "log line 1 of many\n"),
        ("<password>abc\n", "x=1 token\n"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\n",
            "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyu\n",
        ),
        ("-----BEGIN PRIVATE KEY-----\n<a>\n", "QUJD <b>\n"),
        ("", "name: token\n"),
        ("api_token: |\n", "  abc\n"),
        ("<password>\n", "name: token\n"),
        ("- name: DB_PASSWORD\n", "\n"),
        ("-----BEGIN PRIVATE KEY-----\n", "-----BEGIN \n"),
    ];
    for (head, line) in families {
        let small = writer_steps(head, line, N / 4);
        let large = writer_steps(head, line, N);
        assert_linear(&format!("writer({head:?} then {line:?} x n)"), small, large);
    }
}

/// A provider token, different for each `i` (object keys that the text rules
/// replace).
fn secret_key(i: usize) -> String {
    format!("ghp_{i:036}")
}

/// JSON texts aimed at the key rule and the definitions under credential
/// names, each with `n` units: many replaced keys and placeholders in one
/// object, one replaced key in each of many nested objects, definitions
/// nested in definitions (kept, and failing at the innermost or at every
/// level), and a long list of types.
fn structure_texts(n: usize) -> Vec<(&'static str, String)> {
    let flat: String = (0..n)
        .map(|i| format!("\"{}\":{i},", secret_key(i)))
        .collect();
    let held: String = (0..n)
        .map(|i| format!("\"[REDACTED:{}]\":0,\"{}\":1,", i + 2, secret_key(i)))
        .collect();
    let same = format!("\"{}\":1,", secret_key(0)).repeat(n);
    let nested = format!("{{\"{}\":", secret_key(7)).repeat(n) + "1" + &"}".repeat(n);
    let kept = "{\"type\":\"object\",\"properties\":{\"token\":".repeat(n)
        + "{\"type\":\"string\",\"default\":\"x\"}"
        + &"}}".repeat(n);
    let inner_fails = "{\"type\":\"object\",\"items\":".repeat(n) + "{\"id\":7}" + &"}".repeat(n);
    let all_fail = "{\"id\":7,\"items\":".repeat(n) + "1" + &"}".repeat(n);
    let types = format!("{{\"type\":[{}\"null\"]}}", "\"string\",".repeat(n));
    vec![
        ("replaced keys in one object", format!("{{{flat}\"x\":0}}")),
        (
            "placeholders and replaced keys",
            format!("{{{held}\"x\":0}}"),
        ),
        ("one replaced key, repeated", format!("{{{same}\"x\":0}}")),
        ("a replaced key in each nested object", nested),
        (
            "kept definitions, nested",
            format!("{{\"password\":{kept}}}"),
        ),
        (
            "definitions failing innermost",
            format!("{{\"password\":{inner_fails}}}"),
        ),
        (
            "definitions failing at each level",
            format!("{{\"password\":{all_fail}}}"),
        ),
        ("a long list of types", format!("{{\"password\":{types}}}")),
    ]
}

#[test]
fn keys_and_definitions_take_linear_steps() {
    let redactor = Redactor::new();
    let small = structure_texts(N / 40);
    let large = structure_texts(N / 10);
    for ((what, s), (_, l)) in small.iter().zip(&large) {
        let json = |text: &str| {
            steps_of(|| {
                let out = redactor.redact_json_text(text);
                assert!(!out.contains("ghp_"), "{what}: a key survived");
            })
        };
        assert_linear(&format!("redact_json_text: {what}"), json(s), json(l));
        // The same text as a string inside JSON.
        let embed = |text: &str| Value::String(text.to_owned()).to_string();
        assert_linear(
            &format!("redact_json_text, embedded: {what}"),
            json(&embed(s)),
            json(&embed(l)),
        );
    }
}

/// Values aimed at the key rule and the definitions, as `structure_texts`
/// (nested ones built without recursion, deeper than a parser allows).
fn structure_values(n: usize) -> Vec<(&'static str, Value)> {
    let object = |members: Vec<(String, Value)>| Value::Object(members.into_iter().collect());
    let flat = object((0..n).map(|i| (secret_key(i), json!(i))).collect());
    let held = object(
        (0..n)
            .flat_map(|i| {
                [
                    (format!("[REDACTED:{}]", i + 2), json!(0)),
                    (secret_key(i), json!(1)),
                ]
            })
            .collect(),
    );
    let mut nested = json!(1);
    let mut kept = json!({"type": "string", "default": "x"});
    let mut failing = json!({"id": 7});
    for _ in 0..n {
        nested = object(vec![(secret_key(7), nested)]);
        kept = object(vec![
            ("type".to_owned(), json!("object")),
            (
                "properties".to_owned(),
                object(vec![("token".to_owned(), kept)]),
            ),
        ]);
        failing = object(vec![
            ("type".to_owned(), json!("object")),
            ("items".to_owned(), failing),
        ]);
    }
    vec![
        ("replaced keys in one object", flat),
        ("placeholders and replaced keys", held),
        ("a replaced key in each nested object", nested),
        (
            "kept definitions, nested",
            object(vec![("password".to_owned(), kept)]),
        ),
        (
            "definitions failing innermost",
            object(vec![("password".to_owned(), failing)]),
        ),
    ]
}

#[test]
fn keys_and_definitions_in_values_take_linear_steps() {
    // Whether a key or a string of `v` holds `needle`, walked without recursion: the values are
    // nested deeper than a test thread's stack would take a recursive walk (serialising) through.
    fn holds(v: &Value, needle: &str) -> bool {
        let mut stack = vec![v];
        while let Some(v) = stack.pop() {
            match v {
                Value::String(s) if s.contains(needle) => return true,
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => {
                    if map.keys().any(|k| k.contains(needle)) {
                        return true;
                    }
                    stack.extend(map.values());
                }
                _ => {}
            }
        }
        false
    }
    let redactor = Redactor::new();
    let small = structure_values(N / 40);
    let large = structure_values(N / 10);
    for ((what, s), (_, l)) in small.into_iter().zip(large) {
        let copy = |v: &Value| steps_of(|| drop_iteratively(redactor.redacted_value(v)));
        assert_linear(&format!("redacted_value: {what}"), copy(&s), copy(&l));
        let in_place = |mut v: Value| {
            let steps = steps_of(|| redactor.redact_value(&mut v));
            assert!(!holds(&v, "ghp_"), "{what}: a key survived");
            drop_iteratively(v);
            steps
        };
        assert_linear(&format!("redact_value: {what}"), in_place(s), in_place(l));
    }
}

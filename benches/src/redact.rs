//! Inputs for the redaction benches, and the baseline they are compared with:
//! a straightforward `regex`-crate implementation of the same text rules.

use std::borrow::Cow;

use calltape_redact::{REDACTED, is_credential_name, is_session_id_name};
use regex::{Captures, Regex};
use serde_json::{Value, json};

/// A small deterministic generator, so every run benches the same bytes.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }

    fn token(&mut self, len: usize) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..len)
            .map(|_| char::from(ALPHABET[(self.next() % ALPHABET.len() as u64) as usize]))
            .collect()
    }
}

/// One call record, shaped like those the recorder writes.
fn record(rng: &mut Lcg, i: usize) -> Value {
    let symbol = rng.pick(&["ACME", "INIT", "GLOBX", "UMBR", "HOOLI"]);
    json!({
        "v": 1,
        "at": format!("2026-11-29T20:46:{:02}.{:03}Z", i % 60, i % 1000),
        "session": "3f9a1c2e",
        "client": {"name": "claude-code", "version": "1.2.0"},
        "method": "tools/call",
        "name": "quote",
        "input": {"symbol": symbol, "currency": "USD", "maxTokens": 256, "pageToken": rng.token(12), "history": [1, 2, 3]},
        "answer": {
            "content": [{"type": "text", "text": format!(
                "The price of {symbol} is {}.{:02} USD as of the close; volume {} shares. See https://example.com/quote/{symbol}?range=1d for the chart.",
                rng.next() % 500, rng.next() % 100, rng.next() % 1_000_000)}],
            "structuredContent": {"symbol": symbol, "price": (rng.next() % 50_000) as f64 / 100.0, "quoteId": format!("q-{}", rng.token(10)), "tags": ["equity", "nasdaq"]},
            "isError": false
        },
        "durationMs": (rng.next() % 10_000) as f64 / 10.0,
    })
}

/// About `bytes` of JSON Lines call records.
pub fn recording_jsonl(bytes: usize) -> String {
    let mut rng = Lcg(1);
    let mut out = String::with_capacity(bytes + 1024);
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&record(&mut rng, i).to_string());
        out.push('\n');
        i += 1;
    }
    out
}

/// One JSON document of about `bytes`: an MCP result holding call records.
pub fn recording_body(bytes: usize) -> String {
    let mut rng = Lcg(2);
    let mut records = Vec::new();
    let mut size = 0;
    while size < bytes {
        let r = record(&mut rng, records.len());
        size += r.to_string().len() + 1;
        records.push(r);
    }
    json!({"jsonrpc": "2.0", "id": 7, "result": {"records": records, "nextCursor": "eyJvZmZzZXQiOjEwMH0"}}).to_string()
}

/// About `bytes` of log lines with no credential in them.
pub fn log_prose(bytes: usize) -> String {
    let mut rng = Lcg(3);
    let words = [
        "forwarded",
        "request",
        "to",
        "upstream",
        "after",
        "the",
        "server",
        "restarted",
        "and",
        "replayed",
        "initialize",
        "session",
        "answer",
        "was",
        "cached",
        "while",
        "client",
        "waited",
        "for",
        "a",
        "Bearer",
        "token",
        "goes",
        "in",
        "header",
        "Basic",
        "usage",
        "notes",
        "with",
        "bob@example.com",
        "https://example.com/docs",
        "tokens",
        "author",
    ];
    let mut out = String::with_capacity(bytes + 256);
    while out.len() < bytes {
        out.push_str(&format!(
            "2026-11-29T20:46:{:02}.{:03}Z  INFO calltape::bridge: ",
            rng.next() % 60,
            rng.next() % 1000
        ));
        for _ in 0..(8 + rng.next() % 10) {
            out.push_str(rng.pick(&words));
            out.push(' ');
        }
        out.push_str(&format!(
            "id={} elapsed={}ms\n",
            rng.next() % 10_000,
            rng.next() % 500
        ));
    }
    out
}

/// About `bytes` of text where every line carries credentials in several forms.
pub fn credential_dense(bytes: usize) -> String {
    let mut rng = Lcg(4);
    let mut out = String::with_capacity(bytes + 512);
    while out.len() < bytes {
        let line = match rng.next() % 8 {
            0 => format!(
                "curl -H \"Authorization: Bearer {}\" https://api.example.com/v1",
                rng.token(40)
            ),
            1 => format!("export OPENAI_API_KEY=sk-proj-{} && run", rng.token(48)),
            2 => format!(
                "connect postgres://app:{}@db.internal:5432/app ok",
                rng.token(16)
            ),
            3 => format!(
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJ{}.{} accepted",
                rng.token(60),
                rng.token(43)
            ),
            4 => format!(
                "{{\"user\": \"bob\", \"password\": \"{}\", \"note\": \"x\"}} logged",
                rng.token(12)
            ),
            5 => format!(
                "GET /cb?access_token={}&state={} 302",
                rng.token(32),
                rng.token(8)
            ),
            6 => format!(
                "github ghp_{} gitlab glpat-{}",
                rng.token(36),
                rng.token(20)
            ),
            _ => format!("X-Api-Key: {} Basic dXNlcjpwYXNzd29yZA==", rng.token(24)),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `unit` repeated to about `bytes`.
pub fn adversarial(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes / unit.len().max(1) + 1)
}

/// The adversarial families the linear-time tests use, by name.
pub const ADVERSARIAL: &[(&str, &str)] = &[
    ("a_dot", "a."),
    ("a_dash", "a-"),
    ("brace_a_colon", "{a:"),
    ("brace_quoted_a_colon", "{\"a\":"),
    ("quote", "\""),
    ("bracket", "["),
    ("bearer", "Bearer "),
    ("eyj_dot", "eyJ."),
    ("url_a_colon", "://a:"),
    ("token_eq", "token="),
    ("base64", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkrLw"),
];

/// The text rules written the obvious way, one `regex` per rule, each applied
/// over the whole text in turn.
#[derive(Debug)]
pub struct RegexRedactor {
    scheme: Regex,
    jwt: Regex,
    userinfo: Regex,
    assignment: Regex,
    provider: Regex,
}

impl Default for RegexRedactor {
    fn default() -> Self {
        Self::new()
    }
}

fn looks_like_credential(token: &str) -> bool {
    let strong = token
        .bytes()
        .any(|c| c.is_ascii_digit() || matches!(c, b'_' | b'~' | b'+' | b'/' | b'='));
    let inner_upper = token.bytes().skip(1).any(|c| c.is_ascii_uppercase());
    let lower = token.bytes().any(|c| c.is_ascii_lowercase());
    token.len() >= 24 || (token.len() >= 4 && (strong || (inner_upper && lower)))
}

fn replace_all<'a>(
    re: &Regex,
    text: Cow<'a, str>,
    f: impl Fn(&Captures<'_>) -> String,
) -> Cow<'a, str> {
    match re.replace_all(&text, |c: &Captures<'_>| f(c)) {
        Cow::Borrowed(_) => text,
        Cow::Owned(s) => Cow::Owned(s),
    }
}

impl RegexRedactor {
    /// Compiles the rules.
    pub fn new() -> RegexRedactor {
        let re = |s: &str| Regex::new(s).unwrap_or_else(|e| panic!("baseline regex {s}: {e}"));
        RegexRedactor {
            scheme: re(r"(?i)\b(bearer|basic)[ \t]+([A-Za-z0-9\-._~+/]+=*)"),
            jwt: re(
                r"\beyJ[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*",
            ),
            userinfo: re(r#"://([^/?#\s"'`<>\\\[@]*:[^/?#\s"'`<>\\\[]*)@"#),
            assignment: re(
                r#"([A-Za-z0-9_.-]+)(\\*["'])?[ \t]*(?::=|=>|:|=)[ \t]*(\\*"[^"\n]*"|\\*'[^'\n]*'|[^\s&#,;})"'`]+)"#,
            ),
            provider: re(concat!(
                r"\b(?:sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9_-]{20,}|github_pat_[A-Za-z0-9_-]{20,}",
                r"|glpat-[A-Za-z0-9_-]{16,}|xox[abprs]-[A-Za-z0-9_-]{10,}|A[KS]IA[A-Z0-9]{16}[A-Za-z0-9_-]*",
                r"|AIza[A-Za-z0-9_-]{30,}|npm_[A-Za-z0-9_-]{30,}|hf_[A-Za-z0-9_-]{30,})"
            )),
        }
    }

    /// `text` with the text rules applied.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let text = Cow::Borrowed(text);
        let text = replace_all(&self.provider, text, |_| REDACTED.to_owned());
        let text = replace_all(&self.jwt, text, |_| REDACTED.to_owned());
        let text = replace_all(&self.userinfo, text, |_| format!("://{REDACTED}@"));
        let text = replace_all(&self.scheme, text, |c| {
            let token = c[2].trim_end_matches('.');
            if looks_like_credential(token) {
                format!("{} {REDACTED}{}", &c[1], &c[2][token.len()..])
            } else {
                c[0].to_owned()
            }
        });
        replace_all(&self.assignment, text, |c| {
            let name = &c[1];
            if !(is_credential_name(name) || is_session_id_name(name)) {
                return c[0].to_owned();
            }
            let value = &c[3];
            if ["bearer", "basic", "token"]
                .iter()
                .any(|s| value.eq_ignore_ascii_case(s))
            {
                // The scheme rule has already hidden the credential after it.
                return c[0].to_owned();
            }
            let head = &c[0][..c[0].len() - value.len()];
            let trimmed = value.trim_start_matches('\\');
            match trimmed.chars().next() {
                Some(q @ ('"' | '\'')) => {
                    let slashes = &value[..value.len() - trimmed.len()];
                    format!("{head}{slashes}{q}{REDACTED}{q}")
                }
                _ => format!("{head}{REDACTED}"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_applies_the_same_rules() {
        let b = RegexRedactor::new();
        assert_eq!(
            b.redact("Authorization: Bearer abc123"),
            "Authorization: Bearer [REDACTED]"
        );
        assert_eq!(
            b.redact("a Bearer token goes in the header"),
            "a Bearer token goes in the header"
        );
        assert_eq!(
            b.redact("postgres://u:p@h/db"),
            "postgres://[REDACTED]@h/db"
        );
        assert_eq!(
            b.redact("\"password\": \"x\""),
            "\"password\": \"[REDACTED]\""
        );
        assert_eq!(b.redact("TOKEN=abc&x=1"), "TOKEN=[REDACTED]&x=1");
        assert_eq!(
            b.redact("key ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            "key [REDACTED]"
        );
    }

    #[test]
    fn generated_inputs_have_the_size_asked_for() {
        for input in [
            recording_jsonl(10_000),
            recording_body(10_000),
            log_prose(10_000),
            credential_dense(10_000),
        ] {
            assert!((10_000..12_000).contains(&input.len()), "{}", input.len());
        }
        let body: Value = serde_json::from_str(&recording_body(10_000)).expect("valid JSON");
        assert!(body["result"]["records"].is_array());
    }
}

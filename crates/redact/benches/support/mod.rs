//! Inputs for the redaction bench, and the baseline it is compared with: the
//! text rules written with the `regex` crate, in one pass. The bench and the
//! test that checks the baseline against calltape both include this module.

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
pub(crate) fn recording_jsonl(bytes: usize) -> String {
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
pub(crate) fn recording_body(bytes: usize) -> String {
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
pub(crate) fn log_prose(bytes: usize) -> String {
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
pub(crate) fn credential_dense(bytes: usize) -> String {
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
pub(crate) fn adversarial(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes / unit.len().max(1) + 1)
}

/// The adversarial families the linear-time tests use, by name.
pub(crate) const ADVERSARIAL: &[(&str, &str)] = &[
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
    ("stripe_prefix", "sk_live_"),
    ("sendgrid_prefix", "SG.a."),
    ("slack_hook", "hooks.slack.com/services/"),
];

/// The text rules written with `regex`, the way a careful user of that crate
/// would: one alternation of every rule, found in one pass over the text, each
/// match replaced as its rule says.
#[derive(Debug)]
pub(crate) struct RegexRedactor {
    all: Regex,
}

impl Default for RegexRedactor {
    fn default() -> Self {
        Self::new()
    }
}

fn looks_like_credential(token: &str) -> bool {
    let strong = token
        .bytes()
        .any(|c| c.is_ascii_digit() || matches!(c, b'_' | b'~' | b'+' | b'/' | b'=' | b'.'));
    let inner_upper = token.bytes().skip(1).any(|c| c.is_ascii_uppercase());
    let lower = token.bytes().any(|c| c.is_ascii_lowercase());
    token.len() >= 24 || (token.len() >= 4 && (strong || (inner_upper && lower)))
}

/// The provider formats the baseline knows: those of the bench inputs and the
/// common ones.
const PROVIDERS: &str = concat!(
    r"sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9_-]{20,}|github_pat_[A-Za-z0-9_-]{20,}",
    r"|glpat-[A-Za-z0-9_.-]{16,}|xox[abprs]-[A-Za-z0-9_-]{10,}|A[KS]IA[A-Z0-9]{16}[A-Za-z0-9_-]*",
    r"|AIza[A-Za-z0-9_-]{30,}|npm_[A-Za-z0-9_-]{30,}|hf_[A-Za-z0-9_-]{30,}",
    r"|[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}[A-Za-z0-9_-]*|whsec_[A-Za-z0-9+/=]{24,}",
    r"|ya29\.[A-Za-z0-9_.-]{30,}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_.=-]{17,}",
);

/// Words that a credential name holds (the name rules then decide).
const NAME_WORDS: &str =
    "auth|token|secret|passw|credential|key|signature|cookie|jwt|passphrase|session";

impl RegexRedactor {
    /// Compiles the rules into one pattern.
    pub(crate) fn new() -> RegexRedactor {
        let pattern = format!(
            concat!(
                r"(?-u:\b)(?P<provider>{providers})",
                r"|(?P<jwt>(?-u:\b)eyJ[A-Za-z0-9_-]{{7,}}\.[A-Za-z0-9_-]{{2,}}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*)",
                r#"|://(?P<userinfo>[^/?#\s"'`<>\\\[@]*:[^/?#\s"'`<>\\\[]*)@"#,
                r"|(?P<scheme>(?i:(?-u:\b)(?:bearer|basic)))[ \t]+(?P<token>[A-Za-z0-9\-._~+/]+=*)",
                r#"|(?P<name>[A-Za-z0-9_.-]*(?i:{words})[A-Za-z0-9_.-]*)(?:\\*["'])?[ \t]*(?::=|=>|:|=)[ \t]*"#,
                r"(?:(?P<prefix>(?i:bearer|basic|token)[ \t]+))?",
                r#"(?P<value>\\*"[^"\n]*"|\\*'[^'\n]*'|[^\s&#,;}})"'`]+)"#,
            ),
            providers = PROVIDERS,
            words = NAME_WORDS,
        );
        RegexRedactor {
            all: Regex::new(&pattern).unwrap_or_else(|e| panic!("baseline regex: {e}")),
        }
    }

    /// `text` with the text rules applied.
    pub(crate) fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.all.replace_all(text, |c: &Captures<'_>| replace(c))
    }
}

/// The replacement of one match, by the rule that matched.
fn replace(c: &Captures<'_>) -> String {
    let whole = &c[0];
    if c.name("provider").is_some() || c.name("jwt").is_some() {
        return REDACTED.to_owned();
    }
    if c.name("userinfo").is_some() {
        return format!("://{REDACTED}@");
    }
    if let Some(token) = c.name("token") {
        let t = token.as_str();
        let kept = t.trim_end_matches('.');
        if !looks_like_credential(kept) {
            return whole.to_owned();
        }
        let head = &whole[..token.start() - c.get(0).map_or(0, |m| m.start())];
        return format!("{head}{REDACTED}{}", &t[kept.len()..]);
    }
    let (Some(name), Some(value)) = (c.name("name"), c.name("value")) else {
        return whole.to_owned();
    };
    if !(is_credential_name(name.as_str()) || is_session_id_name(name.as_str())) {
        return whole.to_owned();
    }
    let start = c.get(0).map_or(0, |m| m.start());
    let head = &whole[..value.start() - start];
    let value = value.as_str();
    let trimmed = value.trim_start_matches('\\');
    match trimmed.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let slashes = &value[..value.len() - trimmed.len()];
            format!("{head}{slashes}{q}{REDACTED}{slashes}{q}")
        }
        _ => format!("{head}{REDACTED}"),
    }
}

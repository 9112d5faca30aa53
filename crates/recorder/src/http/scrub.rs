//! Redaction of everything that goes into a cassette, and the last check on each written line.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use calltape_redact::{Gate, GateHit, KnownSecrets};
use serde_json::Value;

use super::model::{Body, Content, Interaction, Request, Response, hex};
use super::redaction::{REDACTED, Rules};
use super::url::{UrlParts, percent_decode};
use crate::error::{ErrorKind, Result};
use crate::known_secrets;

/// Shortest value treated as a literal secret; shorter ones would scrub ordinary words.
const MIN_SECRET_LEN: usize = 8;

/// Removes credentials from recorded traffic.
///
/// Two layers: calltape's redaction rules (credential field names, bearer tokens and well-known token
/// formats in text), then the literal values of credentials this process knows about — the auth headers
/// it forwarded and environment variables named like `*_API_KEY`, `*_TOKEN` or `*_SECRET` — wherever they
/// appear, object keys included. [`check_line`](Self::check_line) is the final guard before a line
/// is written: calltape-redact's [`Gate`], watching both kinds of known values.
///
/// Cloning is cheap and clones share the literal secrets, so a secret learnt by one request protects
/// the lines written for all of them.
#[derive(Debug, Clone)]
pub struct Scrubber {
    rules: Arc<Rules>,
    secrets: KnownSecrets,
    /// Values a request held under a credential name (redacted there): hidden in responses, never
    /// in requests, so that learning them never changes how a later request is keyed; the gate
    /// refuses any line or blob that holds one.
    redacted: KnownSecrets,
    gate: Gate,
}

/// Builds a [`Scrubber`].
#[derive(Debug, Default)]
pub struct ScrubberBuilder {
    redact_names: Vec<String>,
    keep_names: Vec<String>,
    secrets: Vec<(String, String)>,
    from_env: bool,
    known: Option<KnownSecrets>,
}

impl ScrubberBuilder {
    /// Extra field names whose values are always redacted.
    pub fn redact_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.redact_names.extend(names.into_iter().map(Into::into));
        self
    }

    /// Field names that are never redacted by name (for example `pageToken`).
    pub fn keep_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.keep_names.extend(names.into_iter().map(Into::into));
        self
    }

    /// A literal secret value to scrub, under a name used in reports (never the value).
    pub fn secret(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.secrets.push((name.into(), value.into()));
        self
    }

    /// Keeps the literal secrets in `known`, a set the caller shares (with its log writer, say), so
    /// that every secret the scrubber is given or learns from the environment or an auth header is
    /// known there too.
    pub fn known_secrets(mut self, known: KnownSecrets) -> Self {
        self.known = Some(known);
        self
    }

    /// Also scrub the values of this process's environment variables named like `*_API_KEY`,
    /// `*_TOKEN`, `*_SECRET` (and `*_KEY`, `*_PASSWORD`).
    pub fn secrets_from_env(mut self, yes: bool) -> Self {
        self.from_env = yes;
        self
    }

    /// Builds the scrubber.
    pub fn build(self) -> Result<Scrubber> {
        let rules = Rules::new(self.redact_names, self.keep_names).map_err(ErrorKind::Redaction)?;
        let s = Scrubber::with(rules, self.known.unwrap_or_default());
        for (name, value) in self.secrets {
            s.add_secret(&name, &value);
        }
        if self.from_env {
            for (name, value) in std::env::vars_os() {
                let (Some(name), Some(value)) = (name.to_str(), value.to_str()) else {
                    continue;
                };
                if is_secret_env_name(name) {
                    s.add_secret(name, value);
                }
            }
        }
        Ok(s)
    }
}

/// Whether an environment variable's name says it holds a credential.
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["_API_KEY", "_TOKEN", "_SECRET", "_KEY", "_PASSWORD"]
        .iter()
        .any(|s| upper.ends_with(s))
        || matches!(upper.as_str(), "API_KEY" | "TOKEN" | "SECRET")
}

impl Default for Scrubber {
    fn default() -> Self {
        Self::new()
    }
}

impl Scrubber {
    /// The default rules and no literal secrets.
    pub fn new() -> Self {
        Self::with(Rules::default(), KnownSecrets::new())
    }

    fn with(rules: Rules, secrets: KnownSecrets) -> Self {
        let redacted = KnownSecrets::new();
        let gate = Gate::new().watch(&secrets).watch(&redacted);
        Self {
            rules: Arc::new(rules),
            secrets,
            redacted,
            gate,
        }
    }

    /// A builder for custom names and secrets.
    pub fn builder() -> ScrubberBuilder {
        ScrubberBuilder::default()
    }

    /// Learns one more literal secret (for example the value of an auth header being forwarded).
    /// Values shorter than 8 bytes are ignored.
    pub fn add_secret(&self, name: &str, value: &str) {
        let value = value.trim();
        if value.len() >= MIN_SECRET_LEN {
            self.secrets.add(name, value);
        }
    }

    /// The final gate: provider tokens anywhere, the literal secrets and the values requests held
    /// under credential names. Clones share what it watches.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// Learns the credential in an auth header value (`Bearer XYZ`, `Basic …` or a bare key).
    pub fn add_header_secret(&self, header: &str, value: &str) {
        self.add_secret(header, value);
        if let Some((_, token)) = value.trim().split_once(' ') {
            self.add_secret(header, token);
        }
    }

    /// Whether a field, query or header name names a credential.
    pub fn is_secret_name(&self, name: &str) -> bool {
        self.rules.is_secret_name(name)
    }

    /// A stable fingerprint of the redaction configuration (not of the secrets).
    pub fn fingerprint(&self) -> String {
        fingerprint(self.rules.describe())
    }

    /// Redacts free text.
    pub fn scrub_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.rules.redact_text(text) {
            Cow::Borrowed(text) => self.secrets.hide_in_text(text),
            Cow::Owned(redacted) => match self.secrets.hide_in_text(&redacted) {
                Cow::Borrowed(_) => Cow::Owned(redacted),
                Cow::Owned(hidden) => Cow::Owned(hidden),
            },
        }
    }

    /// Redacts a JSON value in place: credential-named fields, then text in every string, then the
    /// literal secrets in strings and object keys (a key that holds one becomes a placeholder).
    pub fn scrub_value(&self, value: &mut Value) {
        self.rules.redact_value(value);
        self.scrub_strings(value);
        self.secrets.hide_in_value(value);
    }

    /// The text rules over every string, as text that may be JSON.
    fn scrub_strings(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(o) = self.rules.redact_text(s) {
                    *s = o;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_strings(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.scrub_strings(v)),
            _ => {}
        }
    }

    /// Redacts a body in place. Binary bodies are left alone.
    pub fn scrub_body(&self, body: &mut Body) {
        match body {
            Body::Json(v) => self.scrub_value(v),
            Body::Text(t) => {
                if let Cow::Owned(o) = self.scrub_text(t) {
                    *t = o;
                }
            }
            Body::Empty | Body::Binary(_) => {}
        }
    }

    /// Redacts a query parameter list in place: credential-named parameters lose their value, and
    /// names and values are redacted as text. Each is checked as written and percent-decoded, so
    /// `ke%79=` is the name `key`.
    pub fn scrub_query(&self, query: &mut [(String, String)]) {
        for (name, value) in query.iter_mut() {
            self.scrub_pair(name, value);
        }
    }

    fn scrub_pair(&self, name: &mut String, value: &mut String) {
        if self.is_secret_name(name) || self.is_secret_name(&percent_decode(name, true)) {
            self.learn_redacted(name, value);
            *value = REDACTED.to_owned();
            return;
        }
        if let Some(n) = self.scrub_component(name, true) {
            *name = n;
        }
        if let Some(v) = self.scrub_component(value, true) {
            *value = v;
        }
    }

    /// A query name or value, path segment or fragment with its secrets redacted, or `None` when it
    /// holds none. A secret that only shows once decoded replaces the whole component.
    fn scrub_component(&self, raw: &str, plus_is_space: bool) -> Option<String> {
        if let Cow::Owned(o) = self.scrub_text(raw) {
            return Some(o);
        }
        let decoded = percent_decode(raw, plus_is_space);
        (matches!(decoded, Cow::Owned(_)) && self.scrub_text(&decoded) != decoded)
            .then(|| REDACTED.to_owned())
    }

    /// A URL path with each segment redacted as a query value is, or `None` when it holds no secret.
    pub fn scrub_path(&self, path: &str) -> Option<String> {
        let mut changed = false;
        let segments: Vec<Cow<'_, str>> = path
            .split('/')
            .map(|seg| match self.scrub_component(seg, false) {
                Some(s) => {
                    changed = true;
                    Cow::Owned(s)
                }
                None => Cow::Borrowed(seg),
            })
            .collect();
        changed.then(|| segments.join("/"))
    }

    /// A raw query string (`a=1&b=2`, or a fragment of that form) redacted pair by pair, in order.
    fn scrub_query_text(&self, query: &str) -> String {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                let (mut name, mut value) = (name.to_owned(), value.to_owned());
                self.scrub_pair(&mut name, &mut value);
                if pair.contains('=') {
                    format!("{name}={value}")
                } else {
                    name
                }
            })
            .collect();
        pairs.join("&")
    }

    /// A header value redacted as text and, when it is an absolute URL, as a URL: its path as a
    /// request's path, its query and fragment as a request's query. `None` when it holds no secret.
    fn scrub_header_value(&self, value: &str) -> Option<String> {
        let text = self.scrub_text(value);
        let Some(url) = UrlParts::parse(&text) else {
            return match text {
                Cow::Owned(o) => Some(o),
                Cow::Borrowed(_) => None,
            };
        };
        let mut out = url.origin.to_owned();
        out.push_str(
            &self
                .scrub_path(url.path)
                .unwrap_or_else(|| url.path.to_owned()),
        );
        if let Some(q) = url.query {
            out.push('?');
            out.push_str(&self.scrub_query_text(q));
        }
        if let Some(f) = url.fragment {
            out.push('#');
            out.push_str(&self.scrub_query_text(f));
        }
        (out != value).then_some(out)
    }

    /// Remembers a value redacted by name: hidden in responses, refused by the gate.
    fn learn_redacted(&self, name: &str, value: &str) {
        known_secrets::learn(&self.redacted, name, value);
    }

    /// Remembers the strings a JSON value holds under credential names, before they are redacted.
    fn learn_named_values(&self, value: &Value) {
        known_secrets::learn_named(&self.redacted, value, &|name| self.is_secret_name(name));
    }

    /// Redacts a request in place (path, query, header values and body). Values it redacts by name
    /// are remembered, so a response that echoes one has it hidden and a blob that echoes one is
    /// refused by [`check_blobs`](Self::check_blobs).
    pub fn scrub_request(&self, request: &mut Request) {
        if let Body::Json(v) = &request.body {
            self.learn_named_values(v);
        }
        if let Some(p) = self.scrub_path(&request.path) {
            request.path = p;
        }
        self.scrub_query(&mut request.query);
        for value in request.headers.values_mut() {
            if let Cow::Owned(o) = self.scrub_text(value) {
                *value = o;
            }
        }
        self.scrub_body(&mut request.body);
    }

    /// Redacts a response in place (header values, URL-valued ones as URLs, body, and every stream
    /// event), hiding wherever they appear (object keys included) the values requests held under
    /// credential names.
    pub fn scrub_response(&self, response: &mut Response) {
        self.scrub_response_by_rules(response);
        let learned = &self.redacted;
        if learned.is_empty() {
            return;
        }
        let hide = |text: &mut String| {
            if let Cow::Owned(hidden) = learned.hide_in_text(text) {
                *text = hidden;
            }
        };
        for (_, value) in response.headers.iter_mut() {
            hide(value);
        }
        match &mut response.content {
            Content::Body(Body::Json(v)) => learned.hide_in_value(v),
            Content::Body(Body::Text(t)) => hide(t),
            Content::Body(Body::Empty | Body::Binary(_)) => {}
            Content::Stream(s) => {
                for ev in &mut s.events {
                    for field in [&mut ev.data, &mut ev.raw, &mut ev.event, &mut ev.id]
                        .into_iter()
                        .flatten()
                    {
                        hide(field);
                    }
                }
            }
        }
    }

    /// [`scrub_response`](Self::scrub_response) by the redaction rules and literal secrets only.
    fn scrub_response_by_rules(&self, response: &mut Response) {
        for (name, value) in response.headers.iter_mut() {
            if self.is_secret_name(name) {
                *value = REDACTED.to_owned();
            } else if let Some(v) = self.scrub_header_value(value) {
                *value = v;
            }
        }
        match &mut response.content {
            Content::Body(b) => self.scrub_body(b),
            Content::Stream(s) => {
                for ev in &mut s.events {
                    for field in [&mut ev.data, &mut ev.raw, &mut ev.event, &mut ev.id]
                        .into_iter()
                        .flatten()
                    {
                        if let Cow::Owned(o) = self.scrub_text(field) {
                            *field = o;
                        }
                    }
                }
            }
        }
    }

    /// Redacts a whole interaction in place.
    pub fn scrub_interaction(&self, interaction: &mut Interaction) {
        self.scrub_request(&mut interaction.request);
        self.scrub_response(&mut interaction.response);
    }

    /// The final check on a serialized line ([`gate`](Self::gate)): what stops it (a literal
    /// secret, a value a request held under a credential name, a provider token or a JWT, in a
    /// value or an object key alike), or `None` when it may be written.
    pub fn check_line(&self, line: &str) -> Option<GateHit> {
        self.gate.check(line.as_bytes())
    }

    /// [`check_line`](Self::check_line) for a blob's bytes, which may be any bytes.
    pub fn check_bytes(&self, data: &[u8]) -> Option<GateHit> {
        self.gate.check_bytes(data)
    }

    /// The final gate on an interaction before anything of it is written to `cassette`: its
    /// canonical lines and its sidecar blobs. The error ([`ErrorKind::SecretInLine`] or
    /// [`ErrorKind::SecretInBlob`]) names the interaction and what was found, never the value.
    pub fn admit(&self, cassette: &Path, interaction: &Interaction) -> Result<()> {
        let lines =
            super::file::interaction_lines(interaction, &super::file::blob_prefix(cassette));
        super::file::gate_interaction(cassette, interaction, &lines, self)
    }

    /// The final check on an interaction's sidecar blobs, before anything of it is written to
    /// `cassette`: a blob holding a known secret or a provider token refuses the whole interaction.
    pub fn check_blobs(&self, cassette: &Path, interaction: &Interaction) -> Result<()> {
        let request = &interaction.request;
        let response = match &interaction.response.content {
            Content::Body(b) => Some(b),
            Content::Stream(_) => None,
        };
        for (side, body) in [("request", Some(&request.body)), ("response", response)] {
            let Some(Body::Binary(blob)) = body else {
                continue;
            };
            if let Some(hit) = self.check_bytes(&blob.data) {
                return Err(ErrorKind::SecretInBlob {
                    path: cassette.to_path_buf(),
                    interaction: super::file::describe(interaction),
                    side,
                    what: hit.to_string(),
                    offset: hit.at(),
                }
                .into());
            }
        }
        Ok(())
    }
}

/// A short stable fingerprint of a configuration description.
pub(crate) fn fingerprint(description: &str) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(description.as_bytes())[..8])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literal_secrets_are_scrubbed_everywhere_and_caught_by_the_check() {
        let s = Scrubber::builder()
            .secret("OPENAI_API_KEY", "plainvalue-12345")
            .build()
            .unwrap();
        let mut v = json!({"echo": "you said plainvalue-12345!", "n": ["plainvalue-12345"],
                           "by": {"plainvalue-12345": 1}});
        s.scrub_value(&mut v);
        assert_eq!(
            v,
            json!({"echo": "you said [REDACTED]!", "n": ["[REDACTED]"], "by": {"[REDACTED]": 1}})
        );
        assert_eq!(
            s.check_line(r#"{"x":"plainvalue-12345"}"#),
            Some(GateHit::Known {
                name: "OPENAI_API_KEY".to_owned(),
                at: 6
            })
        );
        assert_eq!(
            s.check_line(r#"{"ghp_0123456789abcdefghijklmnopqrstuvwxyz":1}"#)
                .map(|hit| hit.to_string()),
            Some("a github-pat token".to_owned())
        );
        assert_eq!(s.check_line(r#"{"x":"[REDACTED]"}"#), None);
    }

    #[test]
    fn header_secrets_learn_the_bare_token() {
        let s = Scrubber::new();
        s.add_header_secret("authorization", "Bearer tok-abcdefgh");
        assert_eq!(s.scrub_text("tok-abcdefgh"), "[REDACTED]");
        s.add_secret("short", "abc");
        assert_eq!(s.scrub_text("abc"), "abc");
    }

    #[test]
    fn fields_named_like_credentials_are_redacted() {
        let s = Scrubber::new();
        let mut v = json!({"api_key": "x", "model": "gpt", "nested": {"password": 3}});
        s.scrub_value(&mut v);
        assert_eq!(
            v,
            json!({"api_key": "[REDACTED]", "model": "gpt", "nested": {"password": "[REDACTED]"}})
        );
        // Nothing secret keeps its type: an SDK reading the replayed body back gets `None`,
        // `True`, `""` where the real API sent them.
        let mut v = json!({"prompt_cache_key": null, "token": true, "secret": false,
            "password": "", "api_key": {"id": 1}, "auth": [1]});
        s.scrub_value(&mut v);
        assert_eq!(
            v,
            json!({"prompt_cache_key": null, "token": true, "secret": false,
                "password": "", "api_key": "[REDACTED]", "auth": "[REDACTED]"})
        );
        let mut q = vec![
            ("key".to_owned(), "abc".to_owned()),
            ("alt".to_owned(), "json".to_owned()),
        ];
        s.scrub_query(&mut q);
        assert_eq!(q[0].1, "[REDACTED]");
        assert_eq!(q[1].1, "json");
    }

    #[test]
    fn paths_query_names_and_url_headers_are_redacted_as_query_values_are() {
        const GHP: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
        let s = Scrubber::new();
        // (path, expected path)
        let paths = [
            (
                format!("/v1/repos/{GHP}/x"),
                "/v1/repos/[REDACTED]/x".to_owned(),
            ),
            (
                format!("/v1/repos/{}/x", GHP.replace('_', "%5F")),
                "/v1/repos/[REDACTED]/x".to_owned(),
            ),
            (
                "/v1/chat/completions".to_owned(),
                "/v1/chat/completions".to_owned(),
            ),
            ("/v1/a%20b/".to_owned(), "/v1/a%20b/".to_owned()),
        ];
        for (path, expected) in paths {
            let mut r = Request {
                method: "GET".into(),
                upstream: "gh".into(),
                path: path.clone(),
                query: Vec::new(),
                headers: Default::default(),
                body: Body::Empty,
                key: String::new(),
                seq: 0,
            };
            s.scrub_request(&mut r);
            assert_eq!(r.path, expected, "{path}");
        }
        // (name, value, expected value)
        let ghp_encoded = GHP.replace('_', "%5F");
        let query = [
            ("ke%79", "abc", "[REDACTED]"),
            ("api%5Fkey", "abc", "[REDACTED]"),
            ("%61ccess_token", "abc", "[REDACTED]"),
            ("access+token", "abc", "[REDACTED]"),
            ("t", GHP, "[REDACTED]"),
            ("t", ghp_encoded.as_str(), "[REDACTED]"),
            ("alt", "json", "json"),
            ("q", "a%20b", "a%20b"),
        ];
        for (name, value, expected) in query {
            let mut q = vec![(name.to_owned(), value.to_owned())];
            s.scrub_query(&mut q);
            assert_eq!(q[0].1, expected, "{name}={value}");
        }
        // (header, value, expected value)
        let headers = [
            (
                "location",
                format!("https://files.example/d/{GHP}?X-Amz-%53ignature=abc123&x=1#k"),
                "https://files.example/d/[REDACTED]?X-Amz-%53ignature=[REDACTED]&x=1#k".to_owned(),
            ),
            (
                "content-location",
                "https://u:hunter2hunter2@files.example/a?ok=1".to_owned(),
                "https://[REDACTED]@files.example/a?ok=1".to_owned(),
            ),
            (
                "content-type",
                "application/json".to_owned(),
                "application/json".to_owned(),
            ),
            (
                "x-request-id",
                format!("req {GHP}"),
                "req [REDACTED]".to_owned(),
            ),
        ];
        for (name, value, expected) in headers {
            let mut r = Response {
                status: 200,
                headers: vec![(name.to_owned(), value.clone())],
                content: Content::Body(Body::Empty),
            };
            s.scrub_response(&mut r);
            assert_eq!(r.headers[0].1, expected, "{name}: {value}");
        }
    }

    #[test]
    fn blob_bytes_are_checked_for_known_secrets_and_provider_tokens() {
        let s = Scrubber::builder()
            .secret("OPENAI_API_KEY", "plainvalue-12345")
            .build()
            .unwrap();
        // (bytes, what is found and where)
        type Row = (&'static [u8], Option<(&'static str, usize)>);
        let table: [Row; 4] = [
            (
                b"\x00\xffplainvalue-12345\x00",
                Some(("the value of OPENAI_API_KEY", 2)),
            ),
            (
                b"\x00ghp_0123456789abcdefghijklmnopqrstuvwxyz",
                Some(("a github-pat token", 1)),
            ),
            (b"\x00\xff plainvalue-1234 \x00", None),
            (b"", None),
        ];
        for (data, expected) in table {
            let found = s.check_bytes(data).map(|hit| (hit.to_string(), hit.at()));
            assert_eq!(
                found.as_ref().map(|(w, at)| (w.as_str(), *at)),
                expected,
                "{data:?}"
            );
        }
    }

    #[test]
    fn an_answer_that_echoes_a_value_the_request_held_under_a_credential_name_is_scrubbed() {
        use super::super::model::{Stream, StreamEnd, StreamEvent, StreamFormat};
        let s = Scrubber::new();
        let mut request = Request {
            method: "POST".into(),
            upstream: "openai".into(),
            path: "/v1/chat".into(),
            query: vec![],
            headers: Default::default(),
            body: Body::Json(json!({"messages": [{"password": "hunter2-x"}]})),
            key: String::new(),
            seq: 0,
        };
        s.scrub_request(&mut request);
        let body = Content::Body(Body::Json(json!({"echo": ["you sent hunter2-x"]})));
        let event = StreamEvent {
            delay_ms: 0,
            event: None,
            id: None,
            data: Some("{\"text\":\"hunter2-x\"}".into()),
            raw: None,
        };
        let stream = Content::Stream(Stream {
            format: StreamFormat::Sse,
            events: vec![event],
            end: StreamEnd::Clean,
        });
        for content in [body, stream] {
            let mut response = Response {
                status: 200,
                headers: vec![("x-echo".into(), "hunter2-x".into())],
                content,
            };
            s.scrub_response(&mut response);
            let text = format!("{response:?}");
            assert!(!text.contains("hunter2-x"), "{text}");
            assert!(text.contains(REDACTED), "{text}");
        }
    }

    #[test]
    fn env_names() {
        for (name, yes) in [
            ("OPENAI_API_KEY", true),
            ("GH_TOKEN", true),
            ("HOME", false),
            ("PATH", false),
        ] {
            assert_eq!(is_secret_env_name(name), yes, "{name}");
        }
    }
}

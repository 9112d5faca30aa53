//! Request normalisation and match keys.
//!
//! A key is computed from the method, upstream name, path, sorted query (minus redacted and ignored
//! names), the allow-listed headers and the canonical body with ignored paths removed. The same code
//! runs at record and replay time, and the normaliser's fingerprint is stored in the cassette so a
//! changed normaliser can re-key stored requests instead of missing.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::canonical::{to_canonical_string, write_str};
use super::model::{Body, Request, hex};
use super::redaction::REDACTED;
use super::scrub::fingerprint;
use crate::error::Result;
use crate::glob::{DotGlobs, Segment, identity};

/// Key format version; bump when the key text changes.
const KEY_VERSION: &str = "key=v1";

/// Drops volatile fields before requests are keyed.
#[derive(Debug, Clone)]
pub struct Normalizer {
    body_globs: DotGlobs,
    ignore_query: Vec<String>,
    fingerprint: String,
}

impl Default for Normalizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Normalizer {
    /// A normaliser that ignores nothing.
    pub fn new() -> Self {
        Self::with_rules(Vec::<String>::new(), Vec::<String>::new())
            .unwrap_or_else(|_| unreachable!("empty rules are valid"))
    }

    /// A normaliser that drops the body fields matching the dot-path globs in `ignore_body` (see
    /// [`glob`](crate::glob) for their rules; array indices are segments) and the query parameters
    /// named in `ignore_query`.
    pub fn with_rules<B, Q>(ignore_body: B, ignore_query: Q) -> Result<Self>
    where
        B: IntoIterator,
        B::Item: AsRef<str>,
        Q: IntoIterator,
        Q::Item: AsRef<str>,
    {
        let body_globs = DotGlobs::new(ignore_body)?;
        let mut descr_globs = body_globs.globs().to_vec();
        let mut ignore_query: Vec<String> = ignore_query
            .into_iter()
            .map(|q| q.as_ref().to_owned())
            .collect();
        ignore_query.sort();
        ignore_query.dedup();
        descr_globs.sort();
        descr_globs.dedup();
        let fingerprint = fingerprint(&format!(
            "{KEY_VERSION};body={};query={}",
            descr_globs.join("\u{1}"),
            ignore_query.join("\u{1}")
        ));
        Ok(Self {
            body_globs,
            ignore_query,
            fingerprint,
        })
    }

    /// A short stable fingerprint of the rules, stored in the cassette's meta line.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The match key of a (redacted) request: 16 hex digits.
    pub fn key(&self, request: &Request) -> String {
        let text = self.key_text(request);
        hex(&Sha256::digest(text.as_bytes())[..8])
    }

    /// The readable canonical text the key is a hash of; fuzzy matching and miss diagnostics compare it.
    pub fn key_text(&self, request: &Request) -> String {
        let mut out = String::with_capacity(256);
        out.push_str(&request.method.to_ascii_uppercase());
        out.push(' ');
        out.push_str(&request.upstream);
        out.push(' ');
        out.push_str(&request.path);
        out.push('\n');
        let mut query: Vec<&(String, String)> = request
            .query
            .iter()
            .filter(|(k, v)| v != REDACTED && !self.ignore_query.iter().any(|q| q == k))
            .collect();
        query.sort();
        for (k, v) in query {
            out.push_str("query ");
            out.push_str(k);
            out.push('=');
            out.push_str(v);
            out.push('\n');
        }
        for (k, v) in &request.headers {
            out.push_str("header ");
            out.push_str(k);
            out.push_str(": ");
            out.push_str(v);
            out.push('\n');
        }
        let form = request
            .headers
            .get("content-type")
            .is_some_and(|ct| ct.starts_with("application/x-www-form-urlencoded"));
        match &request.body {
            Body::Empty => {}
            Body::Json(v) => {
                out.push_str("json ");
                if self.body_globs.is_empty() {
                    out.push_str(&to_canonical_string(v));
                } else {
                    let mut v = v.clone();
                    self.strip(&mut v, &mut Vec::new());
                    out.push_str(&to_canonical_string(&v));
                }
            }
            Body::Text(t) if form => {
                let mut pairs: Vec<&str> = t.split('&').filter(|p| !p.is_empty()).collect();
                pairs.sort_unstable();
                out.push_str("form ");
                write_str(&mut out, &pairs.join("&"));
            }
            Body::Text(t) => {
                out.push_str("text ");
                write_str(&mut out, t);
            }
            Body::Binary(b) => {
                out.push_str("blob ");
                out.push_str(&b.sha256());
            }
        }
        out
    }

    fn strip(&self, value: &mut Value, path: &mut Vec<Part>) {
        match value {
            Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    path.push(Part::Key(k.clone()));
                    if self.matches(path) {
                        map.remove(&k);
                    } else if let Some(v) = map.get_mut(&k) {
                        self.strip(v, path);
                    }
                    path.pop();
                }
            }
            Value::Array(items) => {
                // Items with an identity are named by it, as replay's comparison names them.
                let field = identity(&[items.as_slice()]);
                for (i, v) in items.iter_mut().enumerate() {
                    let id = field.and_then(|f| v.get(f)).and_then(Value::as_str);
                    path.push(match id {
                        Some(id) => Part::Item(id.to_owned(), i),
                        None => Part::Index(i),
                    });
                    if self.matches(path) {
                        *v = Value::Null;
                    } else {
                        self.strip(v, path);
                    }
                    path.pop();
                }
            }
            _ => {}
        }
    }

    fn matches(&self, path: &[Part]) -> bool {
        let segments: Vec<Segment<'_>> = path
            .iter()
            .map(|part| match part {
                Part::Key(k) => Segment::Key(k),
                Part::Index(i) => Segment::Index(*i),
                Part::Item(id, index) => Segment::Item { id, index: *index },
            })
            .collect();
        self.body_globs.is_match(&segments)
    }
}

/// One step of the path to a body field, owned: the body is changed while it is walked.
enum Part {
    Key(String),
    Index(usize),
    Item(String, usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn request(body: Value) -> Request {
        Request {
            method: "POST".into(),
            upstream: "openai".into(),
            path: "/v1/chat/completions".into(),
            query: vec![],
            headers: BTreeMap::from([("content-type".into(), "application/json".into())]),
            body: Body::Json(body),
            key: String::new(),
            seq: 0,
        }
    }

    #[test]
    fn key_ignores_object_key_order() {
        let n = Normalizer::new();
        let a = request(json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}));
        let b = request(json!({"messages": [{"content": "hi", "role": "user"}], "model": "m"}));
        assert_eq!(n.key(&a), n.key(&b));
        assert_eq!(n.key(&a).len(), 16);
        let c = request(json!({"model": "m2", "messages": []}));
        assert_ne!(n.key(&a), n.key(&c));
    }

    #[test]
    fn ignored_paths_do_not_change_the_key_and_change_the_fingerprint() {
        let n = Normalizer::with_rules(["metadata.*", "messages.**.ts"], ["ts"]).unwrap();
        let a = request(json!({"metadata": {"run": 1}, "messages": [{"ts": 1, "c": "x"}]}));
        let b = request(json!({"metadata": {"run": 2}, "messages": [{"ts": 2, "c": "x"}]}));
        assert_eq!(n.key(&a), n.key(&b));
        assert_ne!(Normalizer::new().key(&a), Normalizer::new().key(&b));
        assert_ne!(n.fingerprint(), Normalizer::new().fingerprint());
        let mut qa = a.clone();
        qa.query = vec![
            ("ts".into(), "1".into()),
            ("api-version".into(), "2".into()),
        ];
        let mut qb = a.clone();
        qb.query = vec![
            ("api-version".into(), "2".into()),
            ("ts".into(), "9".into()),
        ];
        assert_eq!(n.key(&qa), n.key(&qb));
    }

    #[test]
    fn list_items_are_ignored_by_name_or_by_position() {
        let body = |a: &str, b: &str| {
            request(json!({"tools": [
                {"name": "weather", "description": a, "parameters": {}},
                {"name": "search", "description": b, "parameters": {}},
            ]}))
        };
        let (a, b) = (body("old", "same"), body("new", "same"));
        let c = body("old", "changed");
        for glob in [
            "tools[weather].description",
            "tools.0.description",
            "tools[w*].description",
        ] {
            let n = Normalizer::with_rules([glob], Vec::<String>::new()).unwrap();
            assert_eq!(n.key(&a), n.key(&b), "{glob}");
            assert_ne!(n.key(&a), n.key(&c), "{glob}");
        }
        let n = Normalizer::with_rules(["tools[*].description"], Vec::<String>::new()).unwrap();
        assert_eq!(n.key(&a), n.key(&c));
    }

    #[test]
    fn globs() {
        let table = [
            ("a.b", "a.b", true),
            ("a.*", "a.b", true),
            ("a.*", "a.b.c", false),
            ("**.ts", "x.y.ts", true),
            ("**.ts", "ts", true),
            ("x-*", "x-request", true),
            ("a.b", "a.c", false),
        ];
        for (glob, path, yes) in table {
            let n = Normalizer::with_rules([glob], Vec::<String>::new()).unwrap();
            let p: Vec<Part> = path.split('.').map(|k| Part::Key(k.to_owned())).collect();
            assert_eq!(n.matches(&p), yes, "{glob} vs {path}");
        }
        assert!(Normalizer::with_rules(["a..b"], Vec::<String>::new()).is_err());
    }
}

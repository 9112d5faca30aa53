//! What a proxy run did, in total and per cassette, and the run's report as text, JSON or JUnit (its
//! HTML page is in `report_html.rs`).
//!
//! The proxy fills a [`Report`] as it answers; a caller reads it at shutdown. A miss, a fuzzy match
//! refused in replay mode, and drift are the run's failures ([`Report::has_failures`]): the
//! application under test may swallow the 404 a miss answers, but the run must not pass on it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use calltape_recorder::terminal::{LineBreaks, escape_controls};
use serde_json::{Value, json};

use crate::Mode;

/// What the proxy did: counts, and the misses, fuzzy hits, drift and errors it met.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Report {
    /// The mode the proxy ran in (`None` only for a report made with `Report::default()`).
    pub mode: Option<Mode>,
    /// Requests answered from a cassette.
    pub replayed: usize,
    /// Interactions recorded.
    pub recorded: usize,
    /// Requests forwarded to an upstream.
    pub forwarded: usize,
    /// One line per request that no recording could answer.
    pub misses: Vec<String>,
    /// One line per request answered by a fuzzy match.
    pub fuzzy_hits: Vec<String>,
    /// One line per structural difference found in `verify` mode.
    pub drift: Vec<String>,
    /// Cassettes that could not be written, upstream failures.
    pub errors: Vec<String>,
    /// One line per interaction that was not stored because it still held a credential (in a line
    /// or in a blob); the run failed closed.
    pub refused: Vec<String>,
    /// Each cassette the run used, in path order: its hits, misses, fuzzy hits and drift.
    pub cassettes: Vec<CassetteReport>,
}

/// What happened with one cassette.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CassetteReport {
    /// The cassette file.
    pub path: PathBuf,
    /// No cassette file was there when the run first used it, in a mode that reads one: each of
    /// its misses (reason `no cassette`) is a cassette still to record.
    pub missing: bool,
    /// Requests answered by an exact recording.
    pub hits: usize,
    /// Requests no recording answered (each got a 404).
    pub misses: Vec<Miss>,
    /// Requests that matched a recording only fuzzily, served or refused.
    pub fuzzy: Vec<FuzzyHit>,
    /// Structural differences between a live answer and its recording (`verify` mode).
    pub drift: Vec<Drift>,
}

/// A request no recording answered.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Miss {
    /// The request's method.
    pub method: String,
    /// The upstream's name.
    pub upstream: String,
    /// The request's path below the upstream.
    pub path: String,
    /// Why nothing answered (`no recording`, `all 2 recordings of this request were already served`).
    pub reason: String,
    /// The closest recordings, best first (at most three).
    pub closest: Vec<Closest>,
}

/// A recording close to a request, and how the two differ.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Closest {
    /// The recorded request's method.
    pub method: String,
    /// The recorded request's upstream.
    pub upstream: String,
    /// The recorded request's path.
    pub path: String,
    /// The recorded request's match key.
    pub key: String,
    /// Its sequence number among the recordings with that key.
    pub seq: u32,
    /// How similar the two requests are, from 0 to 1.
    pub similarity: f32,
    /// A unified diff from the recorded request to this one.
    pub diff: String,
}

/// A request that matched a recording only fuzzily.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FuzzyHit {
    /// The request's method.
    pub method: String,
    /// The upstream's name.
    pub upstream: String,
    /// The request's path below the upstream.
    pub path: String,
    /// Whether the match was refused (replay mode without allowing fuzzy hits): the request got a 404.
    pub refused: bool,
    /// The recording it matched.
    pub matched: Closest,
}

/// One structural difference between a live answer and its recording.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Drift {
    /// The request's method.
    pub method: String,
    /// The upstream's name.
    pub upstream: String,
    /// The request's path below the upstream.
    pub path: String,
    /// What differs, e.g. `body.n: type changed from string to number`.
    pub difference: String,
}

impl Miss {
    pub(crate) fn new(request: &calltape_recorder::http::Request, reason: String) -> Self {
        Self {
            method: request.method.clone(),
            upstream: request.upstream.clone(),
            path: request.path.clone(),
            reason,
            closest: Vec::new(),
        }
    }
}

impl Closest {
    pub(crate) fn new(
        recorded: &calltape_recorder::http::Request,
        similarity: f32,
        diff: String,
    ) -> Self {
        Self {
            method: recorded.method.clone(),
            upstream: recorded.upstream.clone(),
            path: recorded.path.clone(),
            key: recorded.key.clone(),
            seq: recorded.seq,
            similarity,
            diff,
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "method": self.method,
            "upstream": self.upstream,
            "path": self.path,
            "key": self.key,
            "seq": self.seq,
            "similarity": (f64::from(self.similarity) * 1000.0).round() / 1000.0,
            "diff": self.diff,
        })
    }

    pub(super) fn describe(&self) -> String {
        format!(
            "{} {} {} (key {}, seq {}, {:.0}% similar)",
            self.method,
            self.upstream,
            self.path,
            self.key,
            self.seq,
            self.similarity * 100.0
        )
    }
}

impl CassetteReport {
    /// How many of this cassette's requests failed the run: misses, refused fuzzy hits and drift.
    pub fn failures(&self) -> usize {
        self.misses.len() + self.fuzzy.iter().filter(|f| f.refused).count() + self.drift.len()
    }

    fn to_json(&self) -> Value {
        let request = |method: &str, upstream: &str, path: &str| json!({"method": method, "upstream": upstream, "path": path});
        let misses: Vec<Value> = self
            .misses
            .iter()
            .map(|m| {
                let mut v = request(&m.method, &m.upstream, &m.path);
                v["reason"] = m.reason.clone().into();
                v["closest"] = m.closest.iter().map(Closest::to_json).collect();
                v
            })
            .collect();
        let fuzzy: Vec<Value> = self
            .fuzzy
            .iter()
            .map(|f| {
                let mut v = request(&f.method, &f.upstream, &f.path);
                v["refused"] = f.refused.into();
                v["matched"] = f.matched.to_json();
                v
            })
            .collect();
        let drift: Vec<Value> = self
            .drift
            .iter()
            .map(|d| {
                let mut v = request(&d.method, &d.upstream, &d.path);
                v["difference"] = d.difference.clone().into();
                v
            })
            .collect();
        json!({
            "path": self.path.display().to_string(),
            "missing": self.missing,
            "hits": self.hits,
            "misses": misses,
            "fuzzy": fuzzy,
            "drift": drift,
        })
    }
}

impl Report {
    pub(crate) fn new(mode: Mode) -> Self {
        Self {
            mode: Some(mode),
            ..Self::default()
        }
    }

    /// The entry of cassette `path`, added in path order on first use.
    pub(crate) fn cassette(&mut self, path: &Path) -> &mut CassetteReport {
        let at = match self
            .cassettes
            .binary_search_by(|c| c.path.as_path().cmp(path))
        {
            Ok(at) => at,
            Err(at) => {
                let entry = CassetteReport {
                    path: path.to_path_buf(),
                    ..CassetteReport::default()
                };
                self.cassettes.insert(at, entry);
                at
            }
        };
        &mut self.cassettes[at]
    }

    /// How many requests failed the run: misses, fuzzy hits refused in replay mode, and drift.
    pub fn failures(&self) -> usize {
        self.cassettes.iter().map(CassetteReport::failures).sum()
    }

    /// Whether a request failed the run (see [`failures`](Self::failures)). An application that
    /// swallows the 404 of a miss still passes its own tests; a CI run should fail on this.
    pub fn has_failures(&self) -> bool {
        self.failures() > 0
    }

    /// A few lines for stderr: counts, then every miss, fuzzy hit, drift, error and refusal, with
    /// their control characters escaped.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "calltape http: {} replayed, {} recorded, {} forwarded, {} missed, {} fuzzy, {} drift, {} errors, {} refused",
            self.replayed,
            self.recorded,
            self.forwarded,
            self.misses.len(),
            self.fuzzy_hits.len(),
            self.drift.len(),
            self.errors.len(),
            self.refused.len()
        );
        for (label, items) in [
            ("miss", &self.misses),
            ("fuzzy", &self.fuzzy_hits),
            ("drift", &self.drift),
            ("error", &self.errors),
            ("refused", &self.refused),
        ] {
            for item in items {
                let _ = write!(s, "\n  {label}: {item}");
            }
        }
        escape_controls(&s, LineBreaks::Keep).into_owned()
    }

    /// Each failure, for stderr: the cassette, the request, and for a miss the closest recording
    /// with its diff, with their control characters escaped. Empty when nothing failed.
    pub fn failure_text(&self) -> String {
        let mut s = String::new();
        for c in &self.cassettes {
            let cassette = c.path.display();
            for m in &c.misses {
                if c.missing {
                    let _ = writeln!(
                        s,
                        "no cassette at {cassette}: {} {} {} found nothing to replay",
                        m.method, m.upstream, m.path
                    );
                    continue;
                }
                let _ = write!(
                    s,
                    "miss in {cassette}: {} {} {}: {}",
                    m.method, m.upstream, m.path, m.reason
                );
                match m.closest.first() {
                    Some(best) => {
                        let _ = write!(s, "\n  closest recording: {}", best.describe());
                        push_indented(&mut s, &best.diff, "    ");
                    }
                    None => s.push_str("\n  the cassette holds no recordings"),
                }
                s.push('\n');
            }
            for f in c.fuzzy.iter().filter(|f| f.refused) {
                let _ = write!(
                    s,
                    "fuzzy match refused in {cassette}: {} {} {}\n  closest recording: {}",
                    f.method,
                    f.upstream,
                    f.path,
                    f.matched.describe()
                );
                push_indented(&mut s, &f.matched.diff, "    ");
                s.push('\n');
            }
            for d in &c.drift {
                let _ = writeln!(
                    s,
                    "drift in {cassette}: {} {} {}: {}",
                    d.method, d.upstream, d.path, d.difference
                );
            }
        }
        escape_controls(&s, LineBreaks::Keep).into_owned()
    }

    /// The JSON report: `{"version":1,"mode":…,"cassettes":[{"path":…,"missing":false,"hits":N,
    /// "misses":[…],"fuzzy":[…],"drift":[…]}]}`, each miss with its `closest` recordings and their
    /// diffs.
    pub fn to_json(&self) -> Value {
        json!({
            "version": 1,
            "mode": self.mode.map(Mode::as_str),
            "cassettes": self.cassettes.iter().map(CassetteReport::to_json).collect::<Vec<_>>(),
        })
    }

    /// The JUnit XML report: one testcase per cassette, one failure per miss, refused fuzzy hit or
    /// drift.
    pub fn to_junit(&self) -> String {
        let tests = self.cassettes.len();
        let failing = self.cassettes.iter().filter(|c| c.failures() > 0).count();
        let suite = format!(
            "calltape http {}",
            self.mode.map(Mode::as_str).unwrap_or("proxy")
        );
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites name=\"calltape http\" tests=\"{tests}\" failures=\"{failing}\" errors=\"0\">"
        );
        let _ = writeln!(
            out,
            "  <testsuite name=\"{suite}\" tests=\"{tests}\" failures=\"{failing}\" errors=\"0\" skipped=\"0\">"
        );
        for c in &self.cassettes {
            let name = xml(&c.path.display().to_string());
            let _ = write!(
                out,
                "    <testcase classname=\"calltape.http\" name=\"{name}\" file=\"{name}\">"
            );
            if c.failures() == 0 {
                out.push_str("</testcase>\n");
                continue;
            }
            out.push('\n');
            for m in &c.misses {
                let message = format!("{} {} {}: {}", m.method, m.upstream, m.path, m.reason);
                let body = m.closest.first().map(|b| {
                    let mut t = format!("closest recording: {}", b.describe());
                    push_indented(&mut t, &b.diff, "  ");
                    t
                });
                push_failure(&mut out, "miss", &message, body.as_deref().unwrap_or(""));
            }
            for f in c.fuzzy.iter().filter(|f| f.refused) {
                let message = format!(
                    "{} {} {}: fuzzy match refused in replay mode",
                    f.method, f.upstream, f.path
                );
                let mut body = format!("closest recording: {}", f.matched.describe());
                push_indented(&mut body, &f.matched.diff, "  ");
                push_failure(&mut out, "fuzzy", &message, &body);
            }
            for d in &c.drift {
                let message = format!("{} {} {}: {}", d.method, d.upstream, d.path, d.difference);
                push_failure(&mut out, "drift", &message, "");
            }
            out.push_str("    </testcase>\n");
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

fn push_failure(out: &mut String, kind: &str, message: &str, body: &str) {
    let _ = write!(out, "      <failure type=\"{kind}\" message=\"");
    crate::xml::push_escaped(out, message);
    out.push_str("\">");
    crate::xml::push_escaped(out, body.trim_end());
    out.push_str("</failure>\n");
}

fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    crate::xml::push_escaped(&mut out, text);
    out
}

/// Appends each line of `text` on a line of its own, after `prefix`.
fn push_indented(out: &mut String, text: &str, prefix: &str) {
    for line in text.lines() {
        out.push('\n');
        out.push_str(prefix);
        out.push_str(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let mut r = Report::new(Mode::Replay);
        let closest = Closest {
            method: "POST".into(),
            upstream: "openai".into(),
            path: "/v1/chat/completions".into(),
            key: "k1".into(),
            seq: 0,
            similarity: 0.8,
            diff: "-\"hi\"\n+\"hello <there>\"".into(),
        };
        let c = r.cassette(Path::new("b.jsonl"));
        c.hits = 2;
        c.misses.push(Miss {
            method: "POST".into(),
            upstream: "openai".into(),
            path: "/v1/chat/completions".into(),
            reason: "no recording".into(),
            closest: vec![closest.clone()],
        });
        c.fuzzy.push(FuzzyHit {
            method: "POST".into(),
            upstream: "openai".into(),
            path: "/v1/chat/completions".into(),
            refused: true,
            matched: closest,
        });
        r.cassette(Path::new("a.jsonl")).hits = 1;
        r
    }

    #[test]
    fn cassettes_are_listed_in_path_order_with_their_failures() {
        let r = sample();
        let paths: Vec<&Path> = r.cassettes.iter().map(|c| c.path.as_path()).collect();
        assert_eq!(paths, [Path::new("a.jsonl"), Path::new("b.jsonl")]);
        assert_eq!(r.failures(), 2);
        assert!(!Report::new(Mode::Replay).has_failures());
    }

    #[test]
    fn the_json_report_has_the_documented_shape() {
        let v = sample().to_json();
        assert_eq!(v["version"], 1);
        assert_eq!(v["mode"], "replay");
        assert_eq!(v["cassettes"][0]["path"], "a.jsonl");
        assert_eq!(v["cassettes"][0]["misses"], json!([]));
        let b = &v["cassettes"][1];
        assert_eq!(b["hits"], 2);
        assert_eq!(b["misses"][0]["method"], "POST");
        assert_eq!(b["misses"][0]["path"], "/v1/chat/completions");
        assert_eq!(b["misses"][0]["closest"][0]["similarity"], 0.8);
        assert_eq!(b["fuzzy"][0]["refused"], true);
        assert_eq!(b["drift"], json!([]));
    }

    #[test]
    fn junit_has_a_testcase_per_cassette_and_a_failure_per_miss() {
        let x = sample().to_junit();
        assert_eq!(x.matches("<testcase ").count(), 2, "{x}");
        assert_eq!(x.matches("<failure ").count(), 2, "{x}");
        assert!(x.contains("tests=\"2\" failures=\"1\""), "{x}");
        assert!(
            x.contains(r#"<failure type="miss" message="POST openai /v1/chat/completions: no recording">closest recording: POST openai /v1/chat/completions (key k1, seq 0, 80% similar)"#),
            "{x}"
        );
        assert!(x.contains("+&quot;hello &lt;there&gt;&quot;"), "{x}");
    }

    #[test]
    fn the_failure_text_names_cassette_request_and_closest_recording() {
        let t = sample().failure_text();
        assert!(
            t.starts_with("miss in b.jsonl: POST openai /v1/chat/completions: no recording\n  closest recording: POST openai /v1/chat/completions (key k1, seq 0, 80% similar)\n    -\"hi\""),
            "{t}"
        );
        assert!(t.contains("fuzzy match refused in b.jsonl"), "{t}");
    }
}

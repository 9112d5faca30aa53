//! The proxy run's HTML report: one self-contained page with the totals and a row per cassette,
//! each cassette that failed expanded with its misses (and the closest recording's diff), fuzzy
//! hits and drift.

use std::fmt::Write as _;

use crate::ReportContext;
use crate::html_page::{self, push_escaped};

use super::report::{CassetteReport, Closest, Report};
use crate::Mode;

/// The statuses a cassette's row can have, worst last but one: a miss outweighs drift, which
/// outweighs a fuzzy hit.
const STATUSES: [&str; 4] = ["ok", "fuzzy", "drift", "miss"];

impl Report {
    /// The HTML report: one self-contained page (inline style, no fetch of any kind, readable with
    /// JavaScript off) with the hits, misses, fuzzy hits and drift in total and a row per cassette;
    /// a miss shows the closest recording and its diff. Every value is HTML-escaped; `context` adds
    /// what the report does not hold (the upstreams, the date).
    pub fn to_html(&self, context: &ReportContext) -> String {
        let mut out = String::with_capacity(8192 + self.cassettes.len() * 512);
        html_page::start(&mut out, "calltape http report");
        let mode = self.mode.map(Mode::as_str);
        let server = context.shown_server();
        html_page::meta(
            &mut out,
            &[
                ("mode", mode),
                ("upstreams", server.as_deref()),
                ("date", context.date.as_deref()),
                ("calltape", Some(html_page::VERSION)),
            ],
        );
        let hits: usize = self.cassettes.iter().map(|c| c.hits).sum();
        let misses: usize = self.cassettes.iter().map(|c| c.misses.len()).sum();
        let fuzzy: usize = self.cassettes.iter().map(|c| c.fuzzy.len()).sum();
        let drift: usize = self.cassettes.iter().map(|c| c.drift.len()).sum();
        html_page::counts(
            &mut out,
            &[
                ("hit", hits),
                ("miss", misses),
                ("fuzzy", fuzzy),
                ("drift", drift),
            ],
        );
        let _ = writeln!(
            out,
            "<p id=\"summary\">{} replayed, {} recorded, {} forwarded; {} cassette{}, {} failing</p>",
            self.replayed,
            self.recorded,
            self.forwarded,
            self.cassettes.len(),
            if self.cassettes.len() == 1 { "" } else { "s" },
            self.cassettes.iter().filter(|c| c.failures() > 0).count()
        );
        write_list(&mut out, "errors", &self.errors);
        write_list(
            &mut out,
            "refused (held a credential, not stored)",
            &self.refused,
        );
        html_page::filters(&mut out, &STATUSES, "search cassettes");
        out.push_str(
            "<div class=\"calls http\">\n<div class=\"row head\"><span>status</span><span>cassette</span>\
             <span>hits</span><span>misses</span><span>fuzzy hits</span><span>drift</span></div>\n",
        );
        for cassette in &self.cassettes {
            write_cassette(&mut out, cassette);
        }
        out.push_str("</div>\n");
        html_page::end(&mut out);
        out
    }
}

/// A heading and a list of lines, when there are any.
fn write_list(out: &mut String, title: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    out.push_str("<h2>");
    push_escaped(out, title);
    out.push_str("</h2>\n<ul>");
    for line in lines {
        out.push_str("<li><code>");
        push_escaped(out, line);
        out.push_str("</code></li>");
    }
    out.push_str("</ul>\n");
}

fn status(c: &CassetteReport) -> &'static str {
    if !c.misses.is_empty() {
        "miss"
    } else if !c.drift.is_empty() {
        "drift"
    } else if !c.fuzzy.is_empty() {
        "fuzzy"
    } else {
        "ok"
    }
}

/// One cassette's row group: its row, then what it missed, matched fuzzily and drifted on.
fn write_cassette(out: &mut String, c: &CassetteReport) {
    let status = status(c);
    let path = c.path.display().to_string();
    let _ = write!(
        out,
        "<div class=\"grp\" data-status=\"{status}\" data-name=\""
    );
    push_escaped(out, &path);
    let _ = write!(
        out,
        "\"><div class=\"row\"><span class=\"status s-{status}\">{status}</span><span class=\"name\"><code>"
    );
    push_escaped(out, &path);
    let _ = writeln!(
        out,
        "</code></span><span>{}</span><span>{}</span><span>{}</span><span>{}</span></div>",
        c.hits,
        c.misses.len(),
        c.fuzzy.len(),
        c.drift.len()
    );
    if status == "ok" {
        out.push_str("</div>\n");
        return;
    }
    let open = if c.failures() > 0 { " open" } else { "" };
    let _ = writeln!(
        out,
        "<div class=\"detail\"><details{open}><summary>details</summary>"
    );
    for m in &c.misses {
        out.push_str("<h2 class=\"s-miss\">miss: <code>");
        push_escaped(out, &format!("{} {} {}", m.method, m.upstream, m.path));
        out.push_str("</code></h2>\n<p>");
        push_escaped(out, &m.reason);
        out.push_str("</p>\n");
        match m.closest.first() {
            Some(best) => write_closest(out, "closest recording", best),
            None if c.missing => {}
            None => out.push_str("<p>the cassette holds no recordings</p>\n"),
        }
    }
    for f in &c.fuzzy {
        out.push_str("<h2 class=\"s-fuzzy\">");
        out.push_str(if f.refused {
            "fuzzy match refused"
        } else {
            "fuzzy hit"
        });
        out.push_str(": <code>");
        push_escaped(out, &format!("{} {} {}", f.method, f.upstream, f.path));
        out.push_str("</code></h2>\n");
        write_closest(out, "matched recording", &f.matched);
    }
    if !c.drift.is_empty() {
        out.push_str("<h2 class=\"s-drift\">drift</h2>\n<ul>");
        for d in &c.drift {
            out.push_str("<li><code>");
            push_escaped(
                out,
                &format!("{} {} {}: {}", d.method, d.upstream, d.path, d.difference),
            );
            out.push_str("</code></li>");
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</details></div></div>\n");
}

/// A recording close to a request, and the unified diff from it, its lines marked removed or added.
fn write_closest(out: &mut String, label: &str, closest: &Closest) {
    out.push_str("<p>");
    push_escaped(out, label);
    out.push_str(": <code>");
    push_escaped(out, &closest.describe());
    out.push_str("</code></p>\n<pre class=\"wdiff\">");
    for line in closest.diff.lines() {
        let (open, close) = if line.starts_with('-') && !line.starts_with("---") {
            ("<del>", "</del>")
        } else if line.starts_with('+') && !line.starts_with("+++") {
            ("<ins>", "</ins>")
        } else {
            ("", "")
        };
        out.push_str(open);
        push_escaped(out, line);
        out.push_str(close);
        out.push('\n');
    }
    out.push_str("</pre>\n");
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::html_page::tests::assert_no_fetch;
    use crate::http::{Drift, FuzzyHit, Miss};

    fn closest(diff: &str) -> Closest {
        Closest {
            method: "POST".into(),
            upstream: "openai".into(),
            path: "/v1/chat/completions".into(),
            key: "k1".into(),
            seq: 0,
            similarity: 0.8,
            diff: diff.into(),
        }
    }

    fn report() -> Report {
        let mut report = Report::new(Mode::Replay);
        report.replayed = 3;
        report.cassettes = vec![
            CassetteReport {
                path: PathBuf::from("a/chat<script>alert(1)</script>.jsonl"),
                missing: false,
                hits: 2,
                misses: vec![Miss {
                    method: "POST".into(),
                    upstream: "openai".into(),
                    path: "/v1/chat/completions".into(),
                    reason: "no recording".into(),
                    closest: vec![closest(
                        "--- recorded\n+++ request\n-  \"content\": \"hi\"\n+  \"content\": \"\\\"><img src=x onerror=alert(1)>\"",
                    )],
                }],
                fuzzy: vec![FuzzyHit {
                    method: "POST".into(),
                    upstream: "openai".into(),
                    path: "/v1/chat/completions".into(),
                    refused: true,
                    matched: closest(" same\n-old\n+new"),
                }],
                drift: vec![Drift {
                    method: "POST".into(),
                    upstream: "openai".into(),
                    path: "/v1/x".into(),
                    difference: "body.n: type changed from string to number".into(),
                }],
            },
            CassetteReport {
                path: PathBuf::from("b.jsonl"),
                hits: 1,
                ..CassetteReport::default()
            },
        ];
        report
    }

    #[test]
    fn a_row_per_cassette_with_misses_their_closest_recording_fuzzy_hits_and_drift() {
        let context = ReportContext::new()
            .server("openai=http://127.0.0.1:9/")
            .date("2026-12-01T18:00:00.000Z");
        let page = report().to_html(&context);
        for want in [
            "<dt>mode</dt><dd>replay</dd>",
            "<dd>openai=http://127.0.0.1:9/</dd>",
            "<span class=\"s-hit\" data-count=\"hit\"><b>3</b> hit</span>",
            "<span class=\"s-miss\" data-count=\"miss\"><b>1</b> miss</span>",
            "<p id=\"summary\">3 replayed, 0 recorded, 0 forwarded; 2 cassettes, 1 failing</p>",
            "<span class=\"status s-miss\">miss</span><span class=\"name\"><code>a/chat&lt;script&gt;alert(1)&lt;/script&gt;.jsonl</code></span><span>2</span><span>1</span><span>1</span><span>1</span>",
            "<span class=\"status s-ok\">ok</span><span class=\"name\"><code>b.jsonl</code></span><span>1</span><span>0</span><span>0</span><span>0</span></div>\n</div>",
            "<p>no recording</p>",
            "closest recording: <code>POST openai /v1/chat/completions (key k1, seq 0, 80% similar)</code>",
            "<del>-  &quot;content&quot;: &quot;hi&quot;</del>\n<ins>+  &quot;content&quot;: &quot;\\&quot;&gt;&lt;img src=x onerror=alert(1)&gt;&quot;</ins>",
            "fuzzy match refused: <code>POST openai /v1/chat/completions</code>",
            "<li><code>POST openai /v1/x: body.n: type changed from string to number</code></li>",
        ] {
            assert!(page.contains(want), "{want}\n{page}");
        }
        assert_eq!(page.matches("<details open>").count(), 1, "{page}");
        assert_eq!(page.matches("<script").count(), 1, "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert_no_fetch(&page);
    }
}

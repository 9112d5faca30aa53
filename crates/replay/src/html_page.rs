//! What the HTML reports of both halves share: the escaping every value goes through, the page's
//! head with its inline style and script, and the facts a report cannot know by itself.
//!
//! A page is one self-contained file: inline CSS, no font, image or stylesheet fetched from
//! anywhere, and a Content-Security-Policy that forbids every fetch even if a value slipped through.
//! It reads with JavaScript off; the inline script only filters rows and expands or collapses them.

use std::fmt::Write as _;

use calltape_redact::Redactor;

/// What a report's page says about the run that the report itself does not hold: the server, the
/// date, and the options that shaped the comparison. Every field is optional; a page leaves out what
/// it was not given.
///
/// The server is given as it was run (a command line or a URL) and shown redacted, by the context's
/// redactor: [`Redactor::new`] unless [`redactor`](Self::redactor) gives the one the run redacts with,
/// so that a page never shows what the run's recordings would not.
///
/// ```
/// use calltape_redact::Redactor;
/// use calltape_replay::ReportContext;
///
/// let context = ReportContext::new()
///     .server("node server.js --api-key sk-live-0123456789abcdef --tenant acme")
///     .redactor(Redactor::builder().redact_names(["tenant"]).build()?)
///     .date("2026-12-01T18:00:00.000Z")
///     .ignore(["**.quotedAt"])
///     .fills(["cardToken"]);
/// assert_eq!(
///     context.shown_server().as_deref(),
///     Some("node server.js --api-key [REDACTED] --tenant [REDACTED]"),
/// );
/// assert_eq!(context.fills, ["cardToken"]);
/// # Ok::<(), calltape_redact::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReportContext {
    /// The server replayed against or proxied to, as given: a command line or a URL. A page shows
    /// it as [`shown_server`](Self::shown_server) gives it.
    pub server: Option<String>,
    /// When the run happened, as the caller writes it (RFC 3339).
    pub date: Option<String>,
    /// The `--ignore` globs the comparison skipped.
    pub ignore: Vec<String>,
    /// The names of the fields filled in (never their values).
    pub fills: Vec<String>,
    /// What the server is redacted with.
    redactor: Redactor,
}

impl ReportContext {
    /// A context that knows nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// With the server replayed against: a command line or a URL, as it was run.
    pub fn server(mut self, server: impl Into<String>) -> Self {
        self.server = Some(server.into());
        self
    }

    /// With the redactor the server is shown through: the one the run redacts its recordings with
    /// (its names to redact and keep). [`Redactor::new`] by default.
    pub fn redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// The server as a page shows it: redacted with the context's redactor.
    pub fn shown_server(&self) -> Option<String> {
        self.server
            .as_deref()
            .map(|server| self.redactor.redact_text(server).into_owned())
    }

    /// With the date of the run.
    pub fn date(mut self, date: impl Into<String>) -> Self {
        self.date = Some(date.into());
        self
    }

    /// With these ignore globs.
    pub fn ignore<I, S>(mut self, globs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.ignore = globs.into_iter().map(Into::into).collect();
        self
    }

    /// With these filled field names.
    pub fn fills<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.fills = names.into_iter().map(Into::into).collect();
        self
    }
}

/// Appends `text` to `out`, escaped for HTML text and for a double- or single-quoted attribute
/// alike; control characters other than tab and newline become U+FFFD.
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    let mut plain = 0;
    for (at, c) in text.char_indices() {
        let escaped = match c {
            '&' => "&amp;",
            '<' => "&lt;",
            '>' => "&gt;",
            '"' => "&quot;",
            '\'' => "&#39;",
            '\t' | '\n' => continue,
            c if (c as u32) < 0x20 || c == '\u{7f}' => "\u{FFFD}",
            _ => continue,
        };
        out.push_str(&text[plain..at]);
        out.push_str(escaped);
        plain = at + c.len_utf8();
    }
    out.push_str(&text[plain..]);
}

/// The calltape version that wrote a page.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

const STYLE: &str = "\
:root{--same:#2e7d32;--changed:#b26a00;--new-error:#c62828;--gone-error:#00838f;--line:#ddd}
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.4em;margin:0 0 .4em}h2{font-size:1.1em;margin:1.2em 0 .4em}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.1em 1em;margin:0 0 1em}
dl.meta dt{color:#666}dl.meta dd{margin:0;font-family:ui-monospace,monospace;word-break:break-all}
.counts{display:flex;gap:1.2em;flex-wrap:wrap;margin:.3em 0}.counts b{font-size:1.3em}
.bar{display:flex;height:14px;border:1px solid var(--line);border-radius:3px;overflow:hidden;margin:.4em 0 1em}
.bar span{display:block;height:100%}
.s-same{color:var(--same)}.s-changed{color:var(--changed)}.s-new-error{color:var(--new-error)}
.s-gone-error{color:var(--gone-error)}.s-miss{color:var(--new-error)}.s-fuzzy{color:var(--changed)}
.s-drift{color:var(--gone-error)}.s-hit,.s-ok{color:var(--same)}
.bar .s-same,.bar .s-hit{background:var(--same)}.bar .s-changed,.bar .s-fuzzy{background:var(--changed)}
.bar .s-new-error,.bar .s-miss{background:var(--new-error)}.bar .s-gone-error,.bar .s-drift{background:var(--gone-error)}
.calls .row{display:grid;gap:0 .8em;padding:.25em .4em}
.calls.mcp .row{grid-template-columns:7em 8em minmax(8em,1fr) 6em 4em 2fr}
.calls.http .row{grid-template-columns:5em minmax(12em,1fr) 5em 5em 6em 5em}
.calls .head{font-weight:600;background:#f4f4f4;position:sticky;top:0}
.calls .row>span{overflow-wrap:anywhere}
.grp{border-bottom:1px solid var(--line);content-visibility:auto;contain-intrinsic-size:auto 1.8em}
.detail{padding:0 .4em .5em}
.status{font-weight:600;white-space:nowrap}
code,pre{font-family:ui-monospace,monospace;font-size:13px}
pre{white-space:pre-wrap;word-break:break-word;margin:0}
.first{color:#444}
details>summary{cursor:pointer;color:#555}
table.diff{border-collapse:collapse;width:100%;margin:.3em 0;table-layout:fixed}
table.diff th,table.diff td{border:1px solid var(--line);padding:.2em .4em;vertical-align:top;text-align:left}
table.diff th{background:#fafafa;font-weight:600}table.diff th:first-child{width:22%}
table.diff td,.first,.notes li,.members{overflow-wrap:anywhere;word-break:break-word}
.chunk{content-visibility:auto}table.vals{margin:0}
table.vals :is(th,td):is(:first-child,:nth-child(2)){width:6em}
table.vals th,table.vals td{overflow-wrap:anywhere;word-break:break-word}
table.vals td{font-family:ui-monospace,monospace;font-size:13px;white-space:pre-wrap}
.chg{font-size:12px;font-weight:600;padding:0 .3em;border-radius:3px}
.chg.removed{background:#fdd;color:var(--new-error)}.chg.added{background:#dfd;color:var(--same)}
.lbl{display:block;color:#666;font-size:12px}.members{color:#555;margin:.3em 0 0}
.summary-line{margin:.2em 0;font-weight:600}
del{background:#fdd;text-decoration:line-through}ins{background:#dfd;text-decoration:none}
.notes{color:#555;margin:.3em 0 0;padding-left:1.2em}
#filters{display:flex;gap:1em;flex-wrap:wrap;align-items:center;margin:.5em 0}
#filters input[type=search]{padding:.2em .4em;min-width:16em}
.grp.hide{display:none}
footer{margin-top:2em;color:#888;font-size:12px}
";

/// Shows the filters (hidden without JavaScript, where they could not work), hides the row groups
/// whose status is unticked or whose name does not hold the search text, and expands or collapses
/// every detail at once.
const SCRIPT: &str = "\
(function(){
var d=document,f=d.getElementById('filters');if(!f)return;
d.documentElement.setAttribute('data-js','on');f.hidden=false;
var q=d.getElementById('q'),boxes=f.querySelectorAll('input[type=checkbox]'),rows=d.querySelectorAll('.grp[data-status]');
function apply(){var on={};boxes.forEach(function(b){on[b.value]=b.checked});var t=q.value.toLowerCase();
rows.forEach(function(r){var show=on[r.getAttribute('data-status')]!==false&&(t===''||(r.getAttribute('data-name')||'').toLowerCase().indexOf(t)>=0);
r.classList.toggle('hide',!show)})}
q.addEventListener('input',apply);boxes.forEach(function(b){b.addEventListener('change',apply)});
function all(open){d.querySelectorAll('details').forEach(function(x){x.open=open})}
d.getElementById('expand').addEventListener('click',function(){all(true)});
d.getElementById('collapse').addEventListener('click',function(){all(false)});
})();
";

/// Writes the page's start: doctype, head with the policy and the style, the title as a heading.
pub(crate) fn start(out: &mut String, title: &str) {
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    // No fetch of any kind: only the inline style and script of this page run.
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; form-action 'none'; base-uri 'none'\">\n",
    );
    out.push_str(
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
    );
    push_escaped(out, title);
    out.push_str("</title>\n<style>\n");
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body>\n<h1>");
    push_escaped(out, title);
    out.push_str("</h1>\n");
}

/// Writes the facts of a run as a definition list: each `(label, value)` pair with a value.
pub(crate) fn meta(out: &mut String, facts: &[(&str, Option<&str>)]) {
    out.push_str("<dl class=\"meta\">\n");
    for (label, value) in facts {
        if let Some(value) = value {
            out.push_str("<dt>");
            push_escaped(out, label);
            out.push_str("</dt><dd>");
            push_escaped(out, value);
            out.push_str("</dd>\n");
        }
    }
    out.push_str("</dl>\n");
}

/// Writes the counts as numbers, each with its status word, and as one proportional bar.
pub(crate) fn counts(out: &mut String, counts: &[(&str, usize)]) {
    out.push_str("<div class=\"counts\" id=\"counts\">");
    for (status, n) in counts {
        let _ = write!(
            out,
            "<span class=\"s-{status}\" data-count=\"{status}\"><b>{n}</b> {status}</span>"
        );
    }
    out.push_str("</div>\n<div class=\"bar\" role=\"img\" aria-label=\"");
    let words: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    push_escaped(out, &words.join(", "));
    out.push_str("\">");
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    for (status, n) in counts {
        if *n > 0 {
            let share = *n as f64 * 100.0 / total as f64;
            let _ = write!(
                out,
                "<span class=\"s-{status}\" style=\"width:{share:.3}%\" title=\"{n} {status}\"></span>"
            );
        }
    }
    out.push_str("</div>\n");
}

/// Writes the filters: a box per status and a search over names, hidden until the script shows
/// them, with buttons that expand or collapse every detail.
pub(crate) fn filters(out: &mut String, statuses: &[&str], search: &str) {
    out.push_str("<div id=\"filters\" hidden>");
    for status in statuses {
        let _ = write!(
            out,
            "<label class=\"s-{status}\"><input type=\"checkbox\" value=\"{status}\" checked> {status}</label>"
        );
    }
    out.push_str("<input type=\"search\" id=\"q\" placeholder=\"");
    push_escaped(out, search);
    out.push_str("\" aria-label=\"");
    push_escaped(out, search);
    out.push_str("\"><button type=\"button\" id=\"expand\">expand all</button>");
    out.push_str("<button type=\"button\" id=\"collapse\">collapse all</button></div>\n");
}

/// Writes the page's end: the footer with calltape's version, the script, and the closing tags.
pub(crate) fn end(out: &mut String) {
    let _ = write!(
        out,
        "<footer>written by calltape {VERSION}</footer>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    );
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn escaped(text: &str) -> String {
        let mut out = String::new();
        push_escaped(&mut out, text);
        out
    }

    #[test]
    fn every_markup_character_is_escaped_in_text_and_attributes() {
        let cases = [
            (
                "<script>alert(1)</script>",
                "&lt;script&gt;alert(1)&lt;/script&gt;",
            ),
            (
                "\"><img src=x onerror=alert(1)>",
                "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;",
            ),
            ("it's 'quoted'", "it&#39;s &#39;quoted&#39;"),
            ("a & b", "a &amp; b"),
            (
                "tab\tand\nline\u{1}\u{7f}",
                "tab\tand\nline\u{FFFD}\u{FFFD}",
            ),
            ("plain → text", "plain → text"),
        ];
        for (text, want) in cases {
            assert_eq!(escaped(text), want, "{text:?}");
        }
    }

    #[test]
    fn the_server_is_shown_redacted_by_the_contexts_redactor() {
        let tenant = Redactor::builder()
            .redact_names(["tenant"])
            .build()
            .unwrap();
        let cases = [
            (
                ReportContext::new().server("srv --token=abc123 --tenant acme"),
                Some("srv --token=[REDACTED] --tenant acme"),
            ),
            (
                ReportContext::new()
                    .server("srv --token=abc123 --tenant acme")
                    .redactor(tenant.clone()),
                Some("srv --token=[REDACTED] --tenant [REDACTED]"),
            ),
            // The redactor given after the server applies all the same.
            (
                ReportContext::new()
                    .redactor(tenant)
                    .server("https://bob:pw@db.example.com"),
                Some("https://[REDACTED]@db.example.com"),
            ),
            (ReportContext::new(), None),
        ];
        for (context, want) in cases {
            assert_eq!(context.shown_server().as_deref(), want, "{context:?}");
        }
    }

    #[test]
    fn a_page_fetches_nothing() {
        let mut out = String::new();
        start(&mut out, "t");
        meta(
            &mut out,
            &[("server", Some("http://127.0.0.1:1/mcp")), ("x", None)],
        );
        counts(&mut out, &[("same", 1), ("changed", 0)]);
        filters(&mut out, &["same"], "name");
        end(&mut out);
        assert_no_fetch(&out);
        assert!(out.contains("<dd>http://127.0.0.1:1/mcp</dd>"), "{out}");
        assert!(!out.contains("<dt>x</dt>"), "{out}");
    }

    /// Fails when `page` could make a browser fetch anything: a `src` or `href` attribute, a CSS
    /// `url(` or `@import`.
    pub(crate) fn assert_no_fetch(page: &str) {
        let lower = page.to_ascii_lowercase();
        for needle in [
            "src=\"", "src='", "href=", "url(", "@import", "<link", "<img", "<iframe",
        ] {
            assert!(!lower.contains(needle), "{needle} in {page}");
        }
    }
}

//! The HTML report: one self-contained page for people, with the counts, a row per call, and the
//! calls that differ expanded with the recorded and replayed values side by side.

use std::fmt::Write as _;

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::ReportContext;
use crate::html::{self, push_escaped};
use crate::mcp::compare::{Difference, Status};
use crate::mcp::report::text::{show_path, show_value, truncate};
use crate::mcp::report::{CallReport, ReplayReport};

/// Strings longer than this (or holding a newline) are shown as a word or line diff.
const LONG_TEXT: usize = 60;

/// The most of one value a cell shows; the rest is cut with an ellipsis.
const MAX_VALUE: usize = 4000;

/// The page: summary, filters, then a row group per call.
pub(super) fn render(report: &ReplayReport, context: &ReportContext) -> String {
    let differences: usize = report.calls.iter().map(|c| c.differences.len()).sum();
    let mut out = String::with_capacity(8192 + report.calls.len() * 240 + differences * 400);
    html::start(&mut out, "calltape replay report");
    let file = report.file.display().to_string();
    let ignore = (!context.ignore.is_empty()).then(|| context.ignore.join(", "));
    let fills = (!context.fills.is_empty()).then(|| context.fills.join(", "));
    html::meta(
        &mut out,
        &[
            ("recording", Some(&file)),
            ("server", context.server.as_deref()),
            ("date", context.date.as_deref()),
            ("ignored paths", ignore.as_deref()),
            ("filled fields", fills.as_deref()),
            ("calltape", Some(html::VERSION)),
        ],
    );
    let summary = report.summary();
    let counts = Status::ALL.map(|s| (s.as_str(), summary.count(s)));
    html::counts(&mut out, &counts);
    let _ = writeln!(out, "<p id=\"summary\">{summary}</p>");
    let surface = report.surface();
    if !surface.is_empty() {
        let _ = writeln!(out, "<p id=\"surface\">{surface}</p>");
    }
    html::filters(&mut out, &Status::ALL.map(Status::as_str), "search names");
    // Rows of a grid rather than a table: a browser lays out only the rows in view
    // (`content-visibility`), where a table of 10,000 rows is laid out whole before it shows.
    out.push_str(
        "<div class=\"calls mcp\">\n<div class=\"row head\"><span>status</span><span>method</span>\
         <span>name</span><span>session</span><span>line</span><span>first difference</span></div>\n",
    );
    for call in &report.calls {
        write_call(&mut out, call);
    }
    out.push_str("</div>\n");
    html::end(&mut out);
    out
}

/// One call's row group: its row, then its differences and notes when it has any.
fn write_call(out: &mut String, call: &CallReport) {
    let status = call.status.as_str();
    let _ = write!(
        out,
        "<div class=\"grp\" data-status=\"{status}\" data-name=\""
    );
    push_escaped(out, &call.name);
    let _ = write!(
        out,
        "\"><div class=\"row\"><span class=\"status s-{status}\">{status}</span><span>"
    );
    push_escaped(out, &call.method);
    out.push_str("</span><span class=\"name\"><code>");
    push_escaped(out, &call.name);
    out.push_str("</code></span><span>");
    push_escaped(out, &call.session);
    let _ = write!(
        out,
        "</span><span>{}</span><span class=\"first\">",
        call.line
    );
    if let Some(first) = call.differences.first() {
        let line = format!(
            "{}: {} → {}",
            show_path(&first.path),
            truncate(&show_value(first.recorded.as_ref()), LONG_TEXT),
            truncate(&show_value(first.replayed.as_ref()), LONG_TEXT)
        );
        push_escaped(out, &line);
        if call.differences.len() > 1 {
            let _ = write!(out, " (+{} more)", call.differences.len() - 1);
        }
    }
    out.push_str("</span></div>\n");
    if call.differences.is_empty() && !call.has_notes() {
        out.push_str("</div>\n");
        return;
    }
    let open = if call.status == Status::Same {
        ""
    } else {
        " open"
    };
    let n = call.differences.len();
    let _ = writeln!(
        out,
        "<div class=\"detail\"><details{open}><summary>{n} difference{}</summary>",
        if n == 1 { "" } else { "s" }
    );
    if n > 0 {
        out.push_str(
            "<table class=\"diff\"><colgroup><col class=\"path\"><col><col></colgroup>\
             <tr><th>path</th><th>recorded</th><th>replayed</th></tr>\n",
        );
        for d in &call.differences {
            write_difference(out, d);
        }
        out.push_str("</table>\n");
    }
    let notes: Vec<String> = call.notes().collect();
    if !notes.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for note in notes {
            out.push_str("<li>");
            push_escaped(out, &note);
            out.push_str("</li>");
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</details></div></div>\n");
}

/// One difference: its path, then both values side by side, or one word or line diff across both
/// columns when both are long strings.
fn write_difference(out: &mut String, d: &Difference) {
    out.push_str("<tr><td><code>");
    push_escaped(out, show_path(&d.path));
    out.push_str("</code></td>");
    if let (Some(Value::String(r)), Some(Value::String(p))) = (&d.recorded, &d.replayed)
        && (r.len() > LONG_TEXT || p.len() > LONG_TEXT || r.contains('\n') || p.contains('\n'))
    {
        out.push_str("<td colspan=\"2\"><pre class=\"wdiff\">");
        let diff = if r.contains('\n') || p.contains('\n') {
            TextDiff::from_lines(r.as_str(), p.as_str())
        } else {
            TextDiff::from_words(r.as_str(), p.as_str())
        };
        for change in diff.iter_all_changes() {
            let (open, close) = match change.tag() {
                ChangeTag::Equal => ("", ""),
                ChangeTag::Delete => ("<del>", "</del>"),
                ChangeTag::Insert => ("<ins>", "</ins>"),
            };
            out.push_str(open);
            push_escaped(out, change.value());
            out.push_str(close);
        }
        out.push_str("</pre></td></tr>\n");
        return;
    }
    for value in [&d.recorded, &d.replayed] {
        out.push_str("<td><pre>");
        let shown = match value {
            None => "(absent)".to_owned(),
            Some(v @ (Value::Object(_) | Value::Array(_))) => {
                serde_json::to_string_pretty(v).unwrap_or_default()
            }
            Some(v) => v.to_string(),
        };
        push_escaped(out, &truncate(&shown, MAX_VALUE));
        out.push_str("</pre></td>");
    }
    out.push_str("</tr>\n");
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::html::tests::assert_no_fetch;
    use crate::mcp::follow::Substitution;

    fn diff(path: &str, recorded: Option<Value>, replayed: Option<Value>) -> Difference {
        Difference {
            path: path.into(),
            recorded,
            replayed,
        }
    }

    fn hostile() -> ReplayReport {
        let substitution = Substitution {
            path: "input.paymentId".into(),
            recorded: "pay_1001".into(),
            replayed: "pay_2002".into(),
            from_call: 1,
            from_path: "structuredContent.paymentId".into(),
        };
        ReplayReport::new(
            "calls<1>.jsonl",
            vec![
                CallReport::new(
                    1,
                    1,
                    "3f9a1c2e",
                    "tools/call",
                    "quote",
                    Status::Changed,
                    vec![
                        diff("structuredContent.price", Some(json!(12)), Some(json!(15))),
                        diff(
                            "content.0.text",
                            Some(json!("<script>document.title='pwned'</script>")),
                            Some(json!("\"><img src=x onerror=alert(1)>")),
                        ),
                        diff(
                            "structuredContent.note",
                            Some(json!(
                                "The quick brown fox jumps over the lazy dog and runs far on <b>"
                            )),
                            Some(json!(
                                "The quick red fox jumps over the lazy dog and runs far on <i>"
                            )),
                        ),
                    ],
                ),
                CallReport::new(
                    2,
                    3,
                    "3f9a1c2e",
                    "tools/call",
                    "x\" onmouseover=\"alert(1)",
                    Status::Same,
                    vec![],
                )
                .with_substitutions(vec![substitution])
                .with_unfilled(vec!["cardToken".into()]),
                CallReport::new(
                    3,
                    4,
                    "77aa0b1c",
                    "tools/call",
                    "pay",
                    Status::NewError,
                    vec![diff("error", None, Some(json!({"code": "card_declined"})))],
                ),
            ],
        )
    }

    fn page() -> String {
        let context = ReportContext::new()
            .server("node server.js --name '<x>'")
            .date("2026-12-01T18:00:00.000Z")
            .ignore(["**.quotedAt", "**.quoteId"])
            .fills(["cardToken"]);
        hostile().to_html(&context)
    }

    #[test]
    fn every_value_is_escaped_as_text() {
        let page = page();
        assert!(!page.contains("<script>document"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(
            !page.contains("on <b>") && !page.contains("on <i>"),
            "{page}"
        );
        assert!(
            page.contains(
                "&quot;&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;&quot;"
            ),
            "{page}"
        );
        assert!(
            page.contains("&quot;\\&quot;&gt;&lt;img src=x onerror=alert(1)&gt;&quot;"),
            "{page}"
        );
        // In an attribute the quote cannot end the value.
        assert!(
            page.contains("data-name=\"x&quot; onmouseover=&quot;alert(1)\""),
            "{page}"
        );
        assert!(page.contains("<dd>calls&lt;1&gt;.jsonl</dd>"), "{page}");
        assert!(
            page.contains("<dd>node server.js --name &#39;&lt;x&gt;&#39;</dd>"),
            "{page}"
        );
        // Only this page's own script element.
        assert_eq!(page.matches("<script").count(), 1, "{page}");
        assert_no_fetch(&page);
    }

    #[test]
    fn the_page_holds_the_summary_a_row_per_call_and_the_differences() {
        let page = page();
        for want in [
            "<span class=\"s-changed\" data-count=\"changed\"><b>1</b> changed</span>",
            "<span class=\"s-same\" style=\"width:33.333%\" title=\"1 same\"></span>",
            "<p id=\"summary\">3 calls, 1 same, 1 changed, 1 new-error, 0 gone-error</p>",
            "<dd>2026-12-01T18:00:00.000Z</dd>",
            "<dd>**.quotedAt, **.quoteId</dd>",
            "<dt>filled fields</dt><dd>cardToken</dd>",
            "<span class=\"status s-changed\">changed</span><span>tools/call</span><span class=\"name\"><code>quote</code></span>\
             <span>3f9a1c2e</span><span>1</span><span class=\"first\">structuredContent.price: 12 → 15 (+2 more)</span>",
            "<tr><td><code>structuredContent.price</code></td><td><pre>12</pre></td><td><pre>15</pre></td></tr>",
            "The quick <del>brown</del><ins>red</ins> fox",
            "<li>input.paymentId: pay_1001 → pay_2002 (from call 1, structuredContent.paymentId)</li><li>unfilled: cardToken</li>",
            "<td><pre>(absent)</pre></td><td><pre>{\n  &quot;code&quot;: &quot;card_declined&quot;\n}</pre></td>",
            "<footer>written by calltape ",
        ] {
            assert!(page.contains(want), "{want}\n{page}");
        }
        assert_eq!(page.matches("<div class=\"grp\" data-status=").count(), 3);
        // Differing calls are expanded, a same call's notes are not.
        assert_eq!(page.matches("<details open>").count(), 2, "{page}");
        assert_eq!(page.matches("<details>").count(), 1, "{page}");
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.ends_with("</html>\n"));
    }
}

//! The HTML report: one self-contained page for people, with the counts, a row per call, and the
//! calls that differ expanded with the recorded and replayed values side by side. Calls that changed
//! at the same paths are one row group: its paths once, then a line of values per way they changed.

use std::fmt::Write as _;

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::ReportContext;
use crate::html_page::{self, push_escaped};
use crate::mcp::compare::{Difference, Status};
use crate::mcp::report::group::{Group, Groups, Side, runs, thousands};
use crate::mcp::report::text::{LONG_TEXT, Texts, show_path, show_value, texts, truncate};
use crate::mcp::report::{CallReport, ReplayReport};

/// The most of one value a cell shows; the rest is cut with an ellipsis.
const MAX_VALUE: usize = 4000;

/// The rows of a group's table laid out together, as the page scrolls to them.
const CHUNK: usize = 100;

/// The page: summary, filters, then a row group per call, or per group of calls that changed at the
/// same paths.
pub(super) fn render(report: &ReplayReport, context: &ReportContext) -> String {
    let differences: usize = report.calls.iter().map(|c| c.differences.len()).sum();
    let mut out = String::with_capacity(8192 + report.calls.len() * 240 + differences * 400);
    html_page::start(&mut out, "calltape replay report");
    let file = report.file.display().to_string();
    let ignore = (!context.ignore.is_empty()).then(|| context.ignore.join(", "));
    let fills = (!context.fills.is_empty()).then(|| context.fills.join(", "));
    let server = context.shown_server();
    html_page::meta(
        &mut out,
        &[
            ("recording", Some(&file)),
            ("server", server.as_deref()),
            ("date", context.date.as_deref()),
            ("ignored paths", ignore.as_deref()),
            ("filled fields", fills.as_deref()),
            ("calltape", Some(html_page::VERSION)),
        ],
    );
    let summary = report.summary();
    let counts = Status::ALL.map(|s| (s.as_str(), summary.count(s)));
    html_page::counts(&mut out, &counts);
    let _ = writeln!(out, "<p id=\"summary\">{summary}</p>");
    let surface = report.surface();
    if !surface.is_empty() {
        let _ = writeln!(out, "<p id=\"surface\">{surface}</p>");
    }
    for line in &report.summary_lines {
        out.push_str("<p class=\"summary-line\">");
        push_escaped(&mut out, line);
        out.push_str("</p>\n");
    }
    html_page::filters(&mut out, &Status::ALL.map(Status::as_str), "search names");
    // Rows of a grid rather than a table: a browser lays out only the rows in view
    // (`content-visibility`), where a table of 10,000 rows is laid out whole before it shows.
    out.push_str(
        "<div class=\"calls mcp\">\n<div class=\"row head\"><span>status</span><span>method</span>\
         <span>name</span><span>session</span><span>line</span><span>first difference</span></div>\n",
    );
    let groups = Groups::find(&report.calls);
    for (i, call) in report.calls.iter().enumerate() {
        match groups.of(i) {
            Some(group) if group.calls[0] == i && group.alike() => {
                write_call(&mut out, call, Some((report, &group.calls)));
            }
            Some(group) if group.calls[0] == i => write_group(&mut out, report, group),
            Some(_) => {}
            None => write_call(&mut out, call, None),
        }
    }
    out.push_str("</div>\n");
    html_page::end(&mut out);
    out
}

/// One call's row group (or, with `group`, the row group of the calls that changed as it did): its
/// row, then its differences, the other side's answer and its notes when it has any.
fn write_call(out: &mut String, call: &CallReport, group: Option<(&ReplayReport, &[usize])>) {
    let in_calls = group.map(|(_, members)| format!(" in {} calls", thousands(members.len())));
    let session = match &in_calls {
        Some(n) => n.trim_start().trim_start_matches("in "),
        None => &call.session,
    };
    write_head(out, call, session);
    if let Some(first) = call.differences.first() {
        let line = match first.item_change() {
            Some(change) => format!("{}: {change}", show_path(&first.path)),
            None => format!(
                "{}: {} → {}",
                show_path(&first.path),
                truncate(&show_value(first.recorded.as_ref()), LONG_TEXT),
                truncate(&show_value(first.replayed.as_ref()), LONG_TEXT)
            ),
        };
        push_escaped(out, &line);
        if call.differences.len() > 1 {
            let _ = write!(out, " (+{} more)", call.differences.len() - 1);
        }
        if let Some(n) = &in_calls {
            out.push_str(n);
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
    let _ = write!(
        out,
        "<div class=\"detail\"><details{open}><summary>{n} difference{}{}</summary>",
        if n == 1 { "" } else { "s" },
        in_calls.as_deref().unwrap_or_default()
    );
    if n > 0 {
        out.push_str(
            "<table class=\"diff\"><tr><th>path</th><th>recorded</th><th>replayed</th></tr>\n",
        );
        // In a group, the first call's answer stands for the others', which may differ.
        let label = match group {
            Some(_) => format!("answered (call {})", call.index),
            None => "answered".to_owned(),
        };
        for d in &call.differences {
            let answer = (d.path == "error")
                .then(|| call.answer.as_ref().map(|a| (a, label.as_str())))
                .flatten();
            write_difference(out, d, answer);
        }
        out.push_str("</table>\n");
    }
    if let Some((report, members)) = group {
        let calls = runs(members, |i| report.calls[i].index);
        out.push_str("<p class=\"members\">calls ");
        push_escaped(out, &calls);
        out.push_str("</p>\n");
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

/// A row group's start and its row up to the first difference's cell: status, method, name,
/// `session` (the call's, or how many calls the row stands for) and the call's line.
fn write_head(out: &mut String, call: &CallReport, session: &str) {
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
    push_escaped(out, session);
    let _ = write!(
        out,
        "</span><span>{}</span><span class=\"first\">",
        call.line
    );
}

/// Calls that changed at the same paths, each their own way: one row (the first path with the value
/// every call shares on a side, or how many values), then a table with the paths once as its head and
/// a line per way the calls changed: the calls, their lines, and both values at each path. A value
/// costs its own bytes and a few more, so that 10,000 such calls make a page of a few hundred
/// kilobytes.
fn write_group(out: &mut String, report: &ReplayReport, group: &Group) {
    let first = &report.calls[group.calls[0]];
    let n = thousands(group.calls.len());
    write_head(out, first, &format!("{n} calls"));
    let paths = first.differences.len();
    if let Some(d) = first.differences.first() {
        let line = match d.item_change() {
            Some(change) => format!("{}: {change}", show_path(&d.path)),
            None => {
                let [recorded, replayed] = group.sides(&report.calls, 0).map(|side| match side {
                    Side::One(value) => truncate(&show_value(value), LONG_TEXT),
                    Side::Many(n) => format!("({} values)", thousands(n)),
                });
                format!("{}: {recorded} → {replayed}", show_path(&d.path))
            }
        };
        push_escaped(out, &line);
        if paths > 1 {
            let _ = write!(out, " (+{} more)", paths - 1);
        }
        let _ = write!(out, " in {n} calls");
    }
    let ways = thousands(group.variants.len());
    let _ = write!(
        out,
        "</span></div>\n<div class=\"detail\"><details open><summary>{paths} difference{} in {n} \
         calls, {ways} ways</summary>",
        if paths == 1 { "" } else { "s" },
    );
    for (chunk, variants) in group.variants.chunks(CHUNK).enumerate() {
        // A block the browser lays out only when it comes into view: a table of 10,000 rows is
        // laid out whole before the page shows. The columns line up from block to block, their
        // widths fixed by the style, not by what they hold.
        let _ = write!(
            out,
            "<div class=\"chunk\" style=\"contain-intrinsic-size:auto {}em\">\
             <table class=\"diff vals\">",
            (variants.len() + usize::from(chunk == 0)) * 2
        );
        if chunk == 0 {
            write_paths(out, first);
        }
        write_ways(out, report, variants);
        out.push_str("</table></div>\n");
    }
    out.push_str("</details></div></div>\n");
}

/// The head of a group's table: `calls`, `lines`, then each path, with `removed` or `added` for a
/// whole list item.
fn write_paths(out: &mut String, call: &CallReport) {
    out.push_str("<tr><th>calls</th><th>lines</th>");
    for d in &call.differences {
        out.push_str("<th>");
        write_path(out, d);
        out.push_str("</th>");
    }
    out.push_str("</tr>\n");
}

/// A difference's path, with `removed` or `added` for a whole list item.
fn write_path(out: &mut String, d: &Difference) {
    out.push_str("<code>");
    push_escaped(out, show_path(&d.path));
    out.push_str("</code>");
    if let Some(change) = d.item_change() {
        let _ = write!(out, " <span class=\"chg {change}\">{change}</span>");
    }
}

/// A row per way calls changed: the calls, their lines, and both values at each path.
fn write_ways(out: &mut String, report: &ReplayReport, variants: &[Vec<usize>]) {
    for variant in variants {
        let call = &report.calls[variant[0]];
        out.push_str("<tr><td>");
        push_escaped(out, &runs(variant, |i| report.calls[i].index));
        out.push_str("</td><td>");
        push_escaped(out, &runs(variant, |i| report.calls[i].line));
        out.push_str("</td>");
        // The first call's answer stands for its variant's, which may differ.
        let label = match variant.len() {
            1 => "answered".to_owned(),
            _ => format!("answered (call {})", call.index),
        };
        for d in &call.differences {
            let answer = (d.path == "error")
                .then(|| call.answer.as_ref().map(|a| (a, label.as_str())))
                .flatten();
            out.push_str("<td>");
            write_values(out, d, answer);
            out.push_str("</td>");
        }
        out.push_str("</tr>\n");
    }
}

/// Both values of one difference in one cell, `recorded → replayed`, each as JSON: two long strings
/// as a word or line diff when they share enough, else whole one under the other; the other side's
/// answer (with its label) where an error is absent.
fn write_values(out: &mut String, d: &Difference, answer: Option<(&Value, &str)>) {
    if let (Some(Value::String(r)), Some(Value::String(p))) = (&d.recorded, &d.replayed) {
        match texts(r, p) {
            Texts::Inline => {}
            Texts::Diff { diff, .. } => return write_text_diff(out, &diff),
            // Whole, each under its side's label, its lines as lines.
            Texts::Whole => {
                for (label, text) in [("recorded", r), ("replayed", p)] {
                    write_label(out, label);
                    push_escaped(out, &truncate(text, MAX_VALUE));
                }
                return;
            }
        }
    }
    for (i, value) in [&d.recorded, &d.replayed].into_iter().enumerate() {
        if i == 1 {
            out.push_str(" → ");
        }
        match (value, answer) {
            (None, Some((answer, label))) => {
                write_label(out, label);
                push_escaped(out, &truncate(&pretty(answer), MAX_VALUE));
            }
            _ => push_escaped(out, &truncate(&show_value(value.as_ref()), MAX_VALUE)),
        }
    }
}

/// A label above what follows it in a cell: `answered`, `recorded`.
fn write_label(out: &mut String, label: &str) {
    out.push_str("<span class=\"lbl\">");
    push_escaped(out, label);
    out.push_str("</span>");
}

/// Two texts' words or lines, those removed and added marked.
fn write_text_diff<'a>(out: &mut String, diff: &TextDiff<'a, 'a, 'a, str>) {
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
}

/// One difference: its path (with `removed` or `added` for a whole list item), then both values
/// side by side; two long strings as one word or line diff across both columns, or whole side by
/// side when they share little. `answer` is the other side's answer of an error that came or went,
/// with its label,
/// shown where the error is absent.
fn write_difference(out: &mut String, d: &Difference, answer: Option<(&Value, &str)>) {
    out.push_str("<tr><td>");
    write_path(out, d);
    out.push_str("</td>");
    if let (Some(Value::String(r)), Some(Value::String(p))) = (&d.recorded, &d.replayed)
        && let Texts::Diff { diff, .. } = texts(r, p)
    {
        out.push_str("<td colspan=\"2\"><pre class=\"wdiff\">");
        write_text_diff(out, &diff);
        out.push_str("</pre></td></tr>\n");
        return;
    }
    for value in [&d.recorded, &d.replayed] {
        out.push_str("<td>");
        match (value, answer) {
            (None, Some((answer, label))) => {
                write_label(out, label);
                out.push_str("<pre>");
                push_escaped(out, &truncate(&pretty(answer), MAX_VALUE));
            }
            _ => {
                out.push_str("<pre>");
                let shown = match value {
                    None => "(absent)".to_owned(),
                    // A text shows as itself, its lines as lines.
                    Some(Value::String(text)) if text.len() > LONG_TEXT => text.clone(),
                    Some(v) => pretty(v),
                };
                push_escaped(out, &truncate(&shown, MAX_VALUE));
            }
        }
        out.push_str("</pre></td>");
    }
    out.push_str("</tr>\n");
}

/// A value as a cell shows it: objects and arrays indented, anything else as JSON.
fn pretty(value: &Value) -> String {
    match value {
        Value::Object(_) | Value::Array(_) => {
            serde_json::to_string_pretty(value).unwrap_or_default()
        }
        v => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::html_page::tests::assert_no_fetch;
    use crate::mcp::follow::Substitution;

    fn diff(path: &str, recorded: Option<Value>, replayed: Option<Value>) -> Difference {
        Difference::new(path, recorded, replayed)
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
        // And in the table of calls that changed at the same paths, each its own way.
        let calls = [
            "<script>alert(1)</script>",
            "\"><img src=x onerror=alert(2)>",
        ]
        .iter()
        .enumerate()
        .map(|(i, text)| {
            CallReport::new(
                i + 1,
                i + 1,
                "s",
                "tools/call",
                "<u>quote</u>",
                Status::Changed,
                vec![diff("<i>path</i>", Some(json!(text)), Some(json!(i)))],
            )
        })
        .collect();
        let page = ReplayReport::new("c", calls).to_html(&ReportContext::new());
        assert!(page.contains("<table class=\"diff vals\">"), "{page}");
        for markup in ["<script>alert", "<img", "<u>", "<i>"] {
            assert!(!page.contains(markup), "{markup} in {page}");
        }
        for want in [
            "<td>&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot; → 0</td>",
            "<th><code>&lt;i&gt;path&lt;/i&gt;</code></th>",
        ] {
            assert!(page.contains(want), "{want}\n{page}");
        }
        assert_eq!(page.matches("<script").count(), 1, "{page}");
        assert_no_fetch(&page);
    }

    #[test]
    fn calls_that_changed_alike_are_one_row_and_both_sides_show() {
        let page = crate::mcp::report::tests::drift().to_html(&ReportContext::new());
        for want in [
            "<p class=\"summary-line\">surface: 1 breaking, 1 compatible</p>",
            // Ten calls of quote changed at one path, in one row: nine one way, the fifth another.
            "<span class=\"name\"><code>quote</code></span><span>10 calls</span><span>1</span>\
             <span class=\"first\">structuredContent.price: 12 → (2 values) in 10 calls</span>",
            "<summary>1 difference in 10 calls, 2 ways</summary><div class=\"chunk\" \
             style=\"contain-intrinsic-size:auto 6em\"><table class=\"diff vals\">\
             <tr><th>calls</th><th>lines</th><th><code>structuredContent.price</code></th></tr>\n\
             <tr><td>1–4, 6–10</td><td>1–4, 6–10</td><td>12 → 15</td></tr>\n\
             <tr><td>5</td><td>5</td><td>12 → 16</td></tr>\n</table></div>\n</details>",
            // Items that came or went, said so.
            "<span class=\"first\">tools[add]: removed (+3 more)</span>",
            "<tr><td><code>tools[add]</code> <span class=\"chg removed\">removed</span></td>\
             <td><pre>{\n  &quot;name&quot;: &quot;add&quot;\n}</pre></td><td><pre>(absent)</pre></td></tr>",
            "<code>tools[get-sum]</code> <span class=\"chg added\">added</span>",
            // Texts that share little, whole and side by side.
            "<td><pre>Compresses the files it is given into one zip archive in memory</pre></td>\
             <td><pre>Returns a resource reference that can be used by MCP clients today</pre></td>",
            // The answer beside an error that went, and beside one that came.
            "<td><pre>{\n  &quot;code&quot;: -32603,\n  &quot;message&quot;: &quot;Unknown tool: get-sum&quot;\n}</pre></td>\
             <td><span class=\"lbl\">answered</span><pre>{\n  &quot;content&quot;: [",
            "<td><span class=\"lbl\">answered</span><pre>{\n  &quot;content&quot;: [\n    {\n      \
             &quot;text&quot;: &quot;The sum of 2 and 40 is 42.&quot;,",
        ] {
            assert!(page.contains(want), "{want}\n{page}");
        }
        assert_eq!(
            page.matches("<div class=\"grp\" data-status=").count(),
            4,
            "{page}"
        );
    }

    #[test]
    fn calls_changed_each_their_own_way_at_one_path_are_one_group_with_every_calls_values() {
        const CALLS: usize = 1000;
        let calls: Vec<CallReport> = (1..=CALLS)
            .map(|i| {
                let mut call = crate::mcp::report::tests::quote(i, &format!("s{}", i % 7));
                call.line = i + 1;
                call.differences[0].replayed = Some(json!(100 + i));
                call
            })
            .collect();
        let page = ReplayReport::new("c", calls).to_html(&ReportContext::new());
        assert_eq!(
            page.matches("<div class=\"grp\" data-status=").count(),
            1,
            "{page}"
        );
        for want in [
            "<span>1,000 calls</span><span>2</span><span class=\"first\">\
             structuredContent.price: 12 → (1,000 values) in 1,000 calls</span>",
            "<summary>1 difference in 1,000 calls, 1,000 ways</summary>",
        ] {
            assert!(page.contains(want), "{want}\n{page}");
        }
        for i in 1..=CALLS {
            let row = format!(
                "<tr><td>{}</td><td>{}</td><td>12 → {}</td></tr>\n",
                thousands(i),
                thousands(i + 1),
                100 + i
            );
            assert!(page.contains(&row), "{row}");
        }
        // A call's values, not a call's row group, is what each call costs.
        assert!(page.len() < CALLS * 80, "{} bytes", page.len());
        // Errors that came, each its own: beside each, the answer recorded.
        let calls = (1..=2)
            .map(|i| {
                CallReport::new(
                    i,
                    i,
                    "s",
                    "tools/call",
                    "pay",
                    Status::NewError,
                    vec![diff("error", None, Some(json!({"id": i})))],
                )
                .with_answer(Some(json!({"paymentId": format!("pay_{i}")})))
            })
            .collect();
        let page = ReplayReport::new("c", calls).to_html(&ReportContext::new());
        for i in 1..=2 {
            let row = format!(
                "<tr><td>{i}</td><td>{i}</td><td><span class=\"lbl\">answered</span>{{\n  \
                 &quot;paymentId&quot;: &quot;pay_{i}&quot;\n}} → {{&quot;id&quot;:{i}}}</td></tr>"
            );
            assert!(page.contains(&row), "{row}\n{page}");
        }
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

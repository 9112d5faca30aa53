//! The JUnit XML report: one testcase per call, one failure per call that differs, its message
//! naming every path that does.

use std::fmt::Write as _;

use crate::mcp::compare::Status;
use crate::mcp::report::text::{Paint, show_path, write_answer, write_difference};
use crate::mcp::report::{CallReport, ReplayReport};
use crate::xml::push_escaped;

/// The report as JUnit XML.
pub(super) fn render(report: &ReplayReport) -> String {
    let failing = report
        .calls
        .iter()
        .filter(|c| c.status != Status::Same)
        .count();
    let file = xml(&report.file.display().to_string());
    let mut out = String::with_capacity(256 + report.calls.len() * 160);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"calltape replay\" tests=\"{}\" failures=\"{failing}\" errors=\"0\">",
        report.calls.len()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{file}\" tests=\"{}\" failures=\"{failing}\" errors=\"0\" skipped=\"0\">",
        report.calls.len()
    );
    // The surface changes counted once; each is listed with its list's testcase.
    let surface = report.surface();
    if !surface.is_empty() {
        let _ = writeln!(
            out,
            "    <properties><property name=\"surface\" value=\"{} breaking, {} compatible\"/></properties>",
            surface.breaking, surface.compatible
        );
    }
    let mut body = String::new();
    for c in &report.calls {
        out.push_str("    <testcase classname=\"");
        push_escaped(&mut out, &c.method);
        let _ = write!(out, "\" name=\"#{} ", c.index);
        push_escaped(&mut out, &c.name);
        let _ = write!(out, " (line {}, session ", c.line);
        push_escaped(&mut out, &c.session);
        let _ = write!(out, ")\" file=\"{file}\" line=\"{}\">", c.line);
        if c.status == Status::Same && !c.has_notes() {
            out.push_str("</testcase>\n");
            continue;
        }
        out.push('\n');
        // The notes say why a call may fail (a field left unfilled) or what was sent instead of
        // the recording (a followed id): in each failure's text, and in the testcase's output.
        let notes: String = c.notes().map(|n| format!("\n    {n}")).collect();
        if c.status != Status::Same {
            body.clear();
            for d in &c.differences {
                write_difference(&mut body, d, Paint(false), "");
            }
            write_answer(&mut body, c, "");
            body.push_str(&notes);
            let _ = write!(out, "      <failure type=\"{}\" message=\"", c.status);
            push_escaped(&mut out, &message(c));
            out.push_str("\">");
            push_escaped(&mut out, body.trim_end());
            out.push_str("</failure>\n");
        }
        if !notes.is_empty() {
            out.push_str("      <system-out>");
            push_escaped(&mut out, notes.trim_start());
            out.push_str("</system-out>\n");
        }
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// A failure's message: the status and every path that differs, an item removed or added said so:
/// `changed: tools[add] removed, tools[echo].description`.
fn message(call: &CallReport) -> String {
    let mut message = format!("{}:", call.status);
    for (i, d) in call.differences.iter().enumerate() {
        message.push_str(if i == 0 { " " } else { ", " });
        message.push_str(show_path(&d.path));
        if let Some(change) = d.item_change() {
            message.push(' ');
            message.push_str(change);
        }
    }
    message
}

/// Escapes text for XML, dropping the control characters XML 1.0 cannot hold.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_and_drops_control_characters() {
        assert_eq!(
            xml("a<b>&\"c\" 'd'\u{1}\té"),
            "a&lt;b&gt;&amp;&quot;c&quot; &apos;d&apos;\u{FFFD}\té"
        );
        assert_eq!(xml("plain"), "plain");
    }
}

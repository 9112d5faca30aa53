//! XML text escaping for JUnit reports.

/// Appends `text` to `out`, escaped for XML: runs of plain text are copied whole, and the control
/// characters XML 1.0 cannot hold become U+FFFD.
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    let mut plain = 0;
    for (at, c) in text.char_indices() {
        let escaped = match c {
            '&' => "&amp;",
            '<' => "&lt;",
            '>' => "&gt;",
            '"' => "&quot;",
            '\'' => "&apos;",
            '\t' | '\n' | '\r' => continue,
            c if (c as u32) < 0x20 => "\u{FFFD}",
            _ => continue,
        };
        out.push_str(&text[plain..at]);
        out.push_str(escaped);
        plain = at + c.len_utf8();
    }
    out.push_str(&text[plain..]);
}

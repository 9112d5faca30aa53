//! Recorded text as a terminal or a text report shows it: the characters that would drive the
//! terminal made visible.
//!
//! A recording holds what a client, a server or an upstream sent: a tool name, a session id, an
//! answer's text. Written raw to a terminal, `ESC]0;…BEL` retitles its window, `ESC[2J` clears it,
//! a carriage return writes over the line before, and a bidi override makes text read other than it
//! is. Every text calltape writes for a person (`calltape show`, the replay text report, the HTTP
//! proxy's summary and failures, error messages) passes recorded strings through
//! [`escape_controls`].

use std::borrow::Cow;
use std::fmt::Write as _;

/// What [`escape_controls`] does with a line feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineBreaks {
    /// Escape it too: for a string that must stay on its line (a name, an id, a path).
    Escape,
    /// Keep it: for a text of several lines whose line breaks are its format (a report, a
    /// message); a carriage return is still escaped.
    Keep,
}

/// `text` with every control character (C0, DEL, C1) and every Unicode bidi control written as a
/// visible escape, `\u{1b}`; borrowed when it holds none. Line feeds are escaped or kept as
/// `line_breaks` says.
///
/// ```
/// use calltape_recorder::terminal::{LineBreaks, escape_controls};
///
/// assert_eq!(escape_controls("quote\x1b]0;pwned\x07", LineBreaks::Escape), "quote\\u{1b}]0;pwned\\u{7}");
/// assert_eq!(escape_controls("a\nb\r", LineBreaks::Keep), "a\nb\\u{d}");
/// assert_eq!(escape_controls("abc\u{202e}fdp.exe", LineBreaks::Escape), "abc\\u{202e}fdp.exe");
/// assert!(matches!(escape_controls("plain – text", LineBreaks::Escape), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn escape_controls(text: &str, line_breaks: LineBreaks) -> Cow<'_, str> {
    let escaped = |c: char| is_control(c) && !(c == '\n' && line_breaks == LineBreaks::Keep);
    let Some(first) = text.find(escaped) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if escaped(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether a terminal could act on `c` rather than show it: a C0 or C1 control, DEL, a bidi
/// control (mark, embedding, override, isolate), or a line or paragraph separator.
fn is_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_is_escaped_and_nothing_else() {
        // (text, line feeds escaped, line feeds kept)
        let table = [
            (
                "tool\x1b]0;owned\x07",
                "tool\\u{1b}]0;owned\\u{7}",
                "tool\\u{1b}]0;owned\\u{7}",
            ),
            (
                "\x1b[2J\x1b[H",
                "\\u{1b}[2J\\u{1b}[H",
                "\\u{1b}[2J\\u{1b}[H",
            ),
            ("a\nb", "a\\u{a}b", "a\nb"),
            ("a\r\nb", "a\\u{d}\\u{a}b", "a\\u{d}\nb"),
            ("tab\there", "tab\\u{9}here", "tab\\u{9}here"),
            ("nul\0del\x7f", "nul\\u{0}del\\u{7f}", "nul\\u{0}del\\u{7f}"),
            ("c1\u{9b}31m", "c1\\u{9b}31m", "c1\\u{9b}31m"),
            ("\u{202e}gnp.exe", "\\u{202e}gnp.exe", "\\u{202e}gnp.exe"),
            (
                "iso\u{2066}x\u{2069}",
                "iso\\u{2066}x\\u{2069}",
                "iso\\u{2066}x\\u{2069}",
            ),
            ("sep\u{2028}x", "sep\\u{2028}x", "sep\\u{2028}x"),
            ("café – ok ✓ 日本", "café – ok ✓ 日本", "café – ok ✓ 日本"),
            ("", "", ""),
        ];
        for (text, escape, keep) in table {
            assert_eq!(
                escape_controls(text, LineBreaks::Escape),
                escape,
                "{text:?}"
            );
            assert_eq!(escape_controls(text, LineBreaks::Keep), keep, "{text:?}");
        }
    }
}

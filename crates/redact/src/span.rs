//! Redacted spans of a text, and writing the text with them replaced.

use std::borrow::Cow;

use crate::REDACTED;

/// A byte range of a text that is replaced.
///
/// `quote` is 0 for a bare `[REDACTED]` (inside text or a string), and `k >= 1`
/// for a JSON value replaced by the string `"[REDACTED]"`, whose quotes are
/// escaped `k - 1` times because that JSON sat inside `k - 1` JSON strings.
/// `rewrite`, when set, is the replacement text itself (already escaped for
/// where the span sits); see `json::scan_any`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) quote: u8,
    pub(crate) rewrite: Option<Box<str>>,
}

impl Span {
    /// A span replaced by `[REDACTED]` (`quote == 0`) or `"[REDACTED]"`.
    pub(crate) fn new(start: usize, end: usize, quote: u8) -> Span {
        Span {
            start,
            end,
            quote,
            rewrite: None,
        }
    }

    /// A span whose bytes are dropped.
    pub(crate) fn deleted(start: usize, end: usize) -> Span {
        Span {
            start,
            end,
            quote: 0,
            rewrite: Some("".into()),
        }
    }

    /// The span as seen from the JSON string that contains the text it was
    /// found in, once its bytes are escaped for that string.
    pub(crate) fn nested(&self, start: usize, end: usize) -> Span {
        let quote = if self.quote == 0 {
            0
        } else {
            self.quote.saturating_add(1)
        };
        let rewrite = self.rewrite.as_deref().map(|text| {
            let mut escaped = String::with_capacity(text.len() + 8);
            escape_into(&mut escaped, text);
            escaped.into_boxed_str()
        });
        Span {
            start,
            end,
            quote,
            rewrite,
        }
    }
}

/// Writes `text` escaped as the content of a JSON string.
fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
}

/// The replacement of `span`.
fn push_replacement(out: &mut String, span: &Span) {
    if let Some(text) = &span.rewrite {
        out.push_str(text);
        return;
    }
    if span.quote == 0 {
        out.push_str(REDACTED);
        return;
    }
    if span.quote == 1 {
        out.push_str(QUOTED_REDACTED);
        return;
    }
    let backslashes = (1usize << (span.quote - 1).min(16)) - 1;
    out.extend(std::iter::repeat_n('\\', backslashes));
    out.push('"');
    out.push_str(REDACTED);
    out.extend(std::iter::repeat_n('\\', backslashes));
    out.push('"');
}

/// The replacement text for a value-level span at the outermost level.
pub(crate) const QUOTED_REDACTED: &str = "\"[REDACTED]\"";

/// `text[from..]` with every span replaced (spans that start before `from`
/// are cut at it and replaced by the placeholder; spans that end at or before
/// it are skipped).
pub(crate) fn apply_from(text: &str, spans: &[Span], from: usize) -> String {
    let mut out = String::with_capacity(text.len().saturating_sub(from));
    let mut at = from;
    for span in spans {
        if span.end <= at || span.end > text.len() {
            continue;
        }
        let start = span.start.max(at);
        if !text.is_char_boundary(start)
            || !text.is_char_boundary(span.end)
            || !text.is_char_boundary(at)
        {
            continue;
        }
        out.push_str(&text[at..start]);
        if span.start < from && span.rewrite.is_some() {
            out.push_str(REDACTED);
        } else {
            push_replacement(&mut out, span);
        }
        at = span.end;
    }
    out.push_str(text.get(at..).unwrap_or(""));
    out
}

/// `text` with every span replaced; borrowed when there is none.
pub(crate) fn apply<'a>(text: &'a str, spans: &[Span]) -> Cow<'a, str> {
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    Cow::Owned(apply_from(text, spans, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacements_are_escaped_for_their_level() {
        let text = "0123456789";
        let spans = [
            Span::new(0, 1, 0),
            Span::new(2, 3, 1),
            Span::new(4, 5, 2),
            Span::new(6, 7, 3),
        ];
        assert_eq!(
            apply(text, &spans),
            r#"[REDACTED]1"[REDACTED]"3\"[REDACTED]\"5\\\"[REDACTED]\\\"789"#
        );
    }

    #[test]
    fn rewrites_are_escaped_when_nested() {
        let span = Span {
            start: 0,
            end: 3,
            quote: 0,
            rewrite: Some("{\"a\":\"x\ny\"}".into()),
        };
        assert_eq!(
            span.nested(1, 4).rewrite.as_deref(),
            Some(r#"{\"a\":\"x\ny\"}"#)
        );
        assert_eq!(apply("abcd", &[span]), "{\"a\":\"x\ny\"}d");
    }
}

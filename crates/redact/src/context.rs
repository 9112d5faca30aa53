//! Rules that fire where the text scan stops for them, outside a `name=value`
//! form: private key blocks, command-line flags (`--password hunter2`,
//! `mysql -phunter2`), XML elements (`<apiToken>…</apiToken>`), a call's
//! name and value (`setProperty("X_TOKEN", "…")`) and words written with
//! JSON escapes (`\u0073k-proj-…`).
//!
//! Each rule looks behind no further than the end of the last span, and
//! over bytes no other firing of the same rule looks at again, so the pass
//! stays linear.

use crate::redactor::Inner;
use crate::span::Span;
use crate::step;
use crate::text::{
    self, Memory, NAME, OPEN_ELEMENT, OPEN_KEY, Open, WORD, has, is_blank, push_text, quoted_value,
    run, run_value, skip_blanks,
};

/// What a rule did at a stop.
pub(crate) enum Found {
    /// Pushed spans; the scan goes on from here, looking no further back.
    Span(usize),
    /// Pushed nothing, and nothing before here needs another look.
    Skip(usize),
    /// Pushed nothing.
    Nothing,
}

/// The longest label of a private key block (`RSA PRIVATE KEY`).
const PEM_LABEL: usize = 100;
/// How far behind a JSON escape the word it is in may start.
const ESCAPED_WORD_BEHIND: usize = 16;
/// The longest word with JSON escapes that is decoded and looked at.
const ESCAPED_WORD: usize = 512;

/// Whether the text scan stops at the bytes `c`, `next` for a rule of this
/// module: `--`, `-p`, `my` (of `mysql`), `\u`, `>`, and a quote before a
/// comma.
pub(crate) const fn stops_here(c: u8, next: u8) -> bool {
    matches!(
        (c, next),
        (b'-', b'-' | b'p') | (b'm', b'y') | (b'\\', b'u') | (b'>', _) | (b'"' | b'\'', b',')
    )
}

/// Whether a rule of this module may fire at the byte `c`.
#[inline]
pub(crate) fn fires_at(c: u8) -> bool {
    matches!(c, b'-' | b'm' | b'\\' | b'>' | b'"' | b'\'')
}

/// The rules of this module at `b[i]`, one of the bytes [`fires_at`] accepts.
pub(crate) fn context_rule(
    inner: &Inner,
    b: &[u8],
    i: usize,
    floor: usize,
    memory: &mut Memory,
    out: &mut Vec<Span>,
) -> Found {
    let word_start = i == floor || !has(b[i - 1], WORD);
    let found = match (b[i], b.get(i + 1)) {
        (b'-', Some(b'-')) if word_start => {
            if b[i..].starts_with(b"-----BEGIN ") {
                private_key(b, i, &mut memory.open, out)
            } else {
                return flag(inner, b, i, memory, out);
            }
        }
        (b'-', Some(b'p')) if word_start && on_mysql_line(b, i, memory, out) => {
            mysql_password(b, i, memory, out)
        }
        (b'm', Some(b'y')) if word_start => {
            mysql(b, i, memory);
            None
        }
        (b'\\', Some(b'u')) => return escaped_word(inner, b, i, floor, out),
        (b'>', _) => xml_element(inner, b, i, floor, memory, out),
        (b'"' | b'\'', Some(b',')) => call_pair(inner, b, i, floor, memory, out),
        _ => None,
    };
    match found {
        Some(to) => Found::Span(to),
        None => Found::Nothing,
    }
}

/// `--password hunter2`, `--api-key "…"`: a flag that names a credential,
/// then its value as the next argument (`--password=…` is an assignment).
fn flag(inner: &Inner, b: &[u8], i: usize, memory: &mut Memory, out: &mut Vec<Span>) -> Found {
    let ns = i + 2;
    let ne = run(b, ns, NAME);
    if ne == ns || !b.get(ne).is_some_and(|&c| is_blank(c)) {
        return Found::Nothing;
    }
    if !inner.is_redacted_bytes(&b[ns..ne]) {
        return Found::Nothing;
    }
    let v = skip_blanks(b, ne);
    if v >= b.len() || b[v] == b'-' {
        return Found::Nothing;
    }
    if let Some(end) = usage_placeholder(b, v) {
        // `--key <KEY>` in a usage line names the value, it is none.
        return Found::Skip(end);
    }
    match value_at(b, v, memory, out) {
        Some(to) => Found::Span(to),
        None => Found::Nothing,
    }
}

/// Where a usage line's placeholder for a value at `v` ends (`<KEY>`,
/// `<FILE>`, `<client-id>`: a name in angle brackets, then a blank, a
/// line's end, `...`, `]` or `|`); `None` when `v` holds no placeholder.
fn usage_placeholder(b: &[u8], v: usize) -> Option<usize> {
    if b[v] != b'<' {
        return None;
    }
    let ns = v + 1;
    let ne = run(b, ns, NAME);
    step!(ne - ns + 1);
    if ne == ns || b.get(ne) != Some(&b'>') {
        return None;
    }
    let end = ne + 1;
    match b.get(end) {
        None | Some(b' ' | b'\t' | b'\n' | b'\r' | b']' | b'|') => Some(end),
        Some(b'.') if b[end..].starts_with(b"...") => Some(end),
        Some(_) => None,
    }
}

/// `<apiToken>…</apiToken>`, fired at the `>` of the opening tag: the
/// element's text up to the next tag, blanks and line breaks around it
/// aside; with no tag after it, the rest of its line, or the next line
/// when the tag ends its own.
fn xml_element(
    inner: &Inner,
    b: &[u8],
    i: usize,
    floor: usize,
    memory: &mut Memory,
    out: &mut Vec<Span>,
) -> Option<usize> {
    let mut k = i;
    while k > floor && has(b[k - 1], NAME) {
        k -= 1;
    }
    step!(i - k + 1);
    if k == i || k == 0 || b[k - 1] != b'<' || !inner.is_redacted_bytes(&b[k..i]) {
        return None;
    }
    let s = i + 1;
    let end = match memchr::memchr(b'<', &b[s..]) {
        Some(p) => s + p,
        None => {
            // No closing tag (yet): the rest of the line, or the next
            // line when the tag ends its own. A tag that comes later
            // would end the element there instead.
            memory.open.note(OPEN_ELEMENT, i, 0);
            let line_end =
                |from: usize| memchr::memchr(b'\n', &b[from..]).map_or(b.len(), |p| from + p);
            let first = line_end(s);
            if b[s..first].iter().all(u8::is_ascii_whitespace) && first < b.len() {
                line_end(first + 1)
            } else {
                first
            }
        }
    };
    step!(end - s + 1);
    let (mut cs, mut ce) = (s, end);
    while cs < ce && b[cs].is_ascii_whitespace() {
        cs += 1;
    }
    while ce > cs && b[ce - 1].is_ascii_whitespace() {
        ce -= 1;
    }
    if cs == ce {
        return None;
    }
    push_text(b, cs, ce, out);
    Some(ce)
}

/// `setProperty("X_TOKEN", "…")`, `os.Setenv("API_KEY", "…")`: a call whose
/// first argument, a quoted credential name, is followed by a quoted
/// value. Fired at the name's closing quote, right before the comma.
fn call_pair(
    inner: &Inner,
    b: &[u8],
    i: usize,
    floor: usize,
    memory: &mut Memory,
    out: &mut Vec<Span>,
) -> Option<usize> {
    let quote = b[i];
    let mut k = i;
    while k > floor && has(b[k - 1], NAME) {
        k -= 1;
    }
    let name_start = k;
    if k == i || k == floor || b[k - 1] != quote {
        step!(i - k + 1);
        return None;
    }
    k -= 1;
    while k > floor && is_blank(b[k - 1]) {
        k -= 1;
    }
    step!(i - k + 1);
    if k == floor || b[k - 1] != b'(' || !inner.is_redacted_bytes(&b[name_start..i]) {
        return None;
    }
    let v = skip_blanks(b, i + 2);
    let (cs, ce, after) = quoted_value(b, v, &mut memory.quotes)?;
    push_text(b, cs, ce, out);
    Some(after.max(ce))
}

/// A word that holds JSON escapes (`\u0073k-proj-…` in a log line): the
/// word is decoded and given to the text rules, and goes whole when they
/// find anything in it.
fn escaped_word(inner: &Inner, b: &[u8], i: usize, floor: usize, out: &mut Vec<Span>) -> Found {
    let mut s = i;
    while s > floor && i - s < ESCAPED_WORD_BEHIND && has(b[s - 1], WORD) {
        s -= 1;
    }
    step!(i - s + 1);
    let mut word = String::with_capacity(32);
    word.push_str(std::str::from_utf8(&b[s..i]).unwrap_or(""));
    let mut j = i;
    let mut escapes = 0;
    while j < b.len() && word.len() < ESCAPED_WORD {
        if let Some(c) = unicode_escape(b, j) {
            word.push(c);
            j += 6;
            escapes += 1;
        } else if has(b[j], WORD) {
            word.push(char::from(b[j]));
            j += 1;
        } else {
            break;
        }
    }
    step!(j - i + 1);
    if escapes == 0 {
        return Found::Nothing;
    }
    let mut found = Vec::new();
    text::scan_text(inner, &word, &mut found);
    if found.is_empty() {
        return Found::Skip(j);
    }
    push_text(b, s, j, out);
    Found::Span(j)
}

/// The character a `\uXXXX` escape at `b[j]` stands for, when it is one that
/// may be part of a word or of a separator (not a backslash or a control
/// character, and not half of a surrogate pair).
fn unicode_escape(b: &[u8], j: usize) -> Option<char> {
    let digits = b.get(j..j + 6)?;
    if !digits.starts_with(b"\\u") {
        return None;
    }
    let mut v = 0;
    for &d in &digits[2..] {
        v = v * 16 + char::from(d).to_digit(16)?;
    }
    char::from_u32(v).filter(|&c| c >= ' ' && c != '\\')
}

/// A quoted or unquoted value at `v`; an unterminated quote runs to the end
/// of the line.
fn value_at(b: &[u8], v: usize, memory: &mut Memory, out: &mut Vec<Span>) -> Option<usize> {
    if let Some((cs, ce, after)) = quoted_value(b, v, &mut memory.quotes) {
        push_text(b, cs, ce, out);
        return Some(after.max(ce));
    }
    let end = run_value(b, v);
    if end == v {
        return None;
    }
    push_text(b, v, end, out);
    Some(end)
}

/// `-----BEGIN … PRIVATE KEY-----` up to its `-----END … -----` line: the
/// whole block goes, and to the end of the text when it has no end line
/// (then `open` gets [`OPEN_KEY`]: the block may go on in text that follows).
pub(crate) fn private_key(
    b: &[u8],
    i: usize,
    open: &mut Open,
    out: &mut Vec<Span>,
) -> Option<usize> {
    let body = private_key_label(b, i)?;
    let end = end_marker(b, body).unwrap_or_else(|| {
        open.note(OPEN_KEY, i, 0);
        // Open to the end of the text, but the line break that ends the
        // text stays: what comes after it starts a line of its own.
        let mut end = b.len();
        if b[..end].ends_with(b"\n") {
            end -= 1;
            if b[..end].ends_with(b"\r") {
                end -= 1;
            }
        }
        end.max(body)
    });
    step!(end - body + 1);
    push_text(b, i, end, out);
    Some(end)
}

/// The label of a private key block that starts at `i` with `-----BEGIN `:
/// where its body starts, after the `-----` that ends the label.
fn private_key_label(b: &[u8], i: usize) -> Option<usize> {
    let label = i + "-----BEGIN ".len();
    let mut dash = label;
    while dash < b.len()
        && dash - label < PEM_LABEL
        && (b[dash].is_ascii_uppercase()
            || b[dash].is_ascii_digit()
            || matches!(b[dash], b' ' | b'_'))
    {
        dash += 1;
    }
    step!(dash - label + 1);
    let name = &b[label..dash];
    (b[dash..].starts_with(b"-----")
        && (name.ends_with(b"PRIVATE KEY") || name.ends_with(b"PRIVATE KEY BLOCK")))
    .then_some(dash + 5)
}

/// Where the first `-----END …-----` marker from `from` on ends.
fn end_marker(b: &[u8], from: usize) -> Option<usize> {
    let p = memchr::memmem::find(&b[from..], b"-----END")?;
    let after = from + p + "-----END".len();
    let mut e = after;
    while e < b.len() && e - after < PEM_LABEL && b[e] != b'\n' && !b[e..].starts_with(b"-----") {
        e += 1;
    }
    step!(e - from + 1);
    Some(if b[e..].starts_with(b"-----") {
        e + 5
    } else {
        after
    })
}

/// Whether `line` opens a private key block that it does not end: the lines
/// after it belong to the key, up to its `END` marker.
pub(crate) fn opens_key_block(line: &[u8]) -> bool {
    let Some(begin) = memchr::memmem::rfind(line, b"-----BEGIN ") else {
        return false;
    };
    private_key_label(line, begin).is_some_and(|body| end_marker(line, body).is_none())
}

/// Where a line inside a private key block stops belonging to it: after its
/// `END` marker, or `None` when the whole line is part of the key.
pub(crate) fn key_block_end(line: &[u8]) -> Option<usize> {
    end_marker(line, 0)
}

/// Notes a `mysql` or `mysqldump` command at `b[i]`: on the rest of its line,
/// `-p…` is a password.
fn mysql(b: &[u8], i: usize, memory: &mut Memory) {
    if i < memory.mysql.1 {
        return;
    }
    let rest = &b[i..];
    let len = if rest.starts_with(b"mysqldump") {
        9
    } else if rest.starts_with(b"mysql") {
        5
    } else {
        return;
    };
    if b.get(i + len).is_some_and(|&c| has(c, WORD)) {
        return;
    }
    let end = memchr::memchr(b'\n', rest).map_or(b.len(), |p| i + p);
    step!(end - i + 1);
    memory.mysql = (i, end);
}

/// Whether `b[i]` is on the line of the last `mysql` command. A line break
/// that a span hides does not end the line: redacting again would not see
/// it.
fn on_mysql_line(b: &[u8], i: usize, memory: &mut Memory, out: &[Span]) -> bool {
    if i <= memory.mysql.0 {
        return false;
    }
    let spans = &out[memory.mark.min(out.len())..];
    while i > memory.mysql.1 {
        let line_end = memory.mysql.1;
        let k = spans.partition_point(|s| s.start <= line_end);
        step!(1);
        match k.checked_sub(1).map(|k| &spans[k]) {
            Some(span) if span.end > line_end => {
                memory.mysql.1 =
                    memchr::memchr(b'\n', &b[span.end..]).map_or(b.len(), |p| span.end + p);
                step!(memory.mysql.1 - span.end + 1);
            }
            _ => return false,
        }
    }
    true
}

/// `-phunter2` on the line of a `mysql` command.
fn mysql_password(b: &[u8], i: usize, memory: &mut Memory, out: &mut Vec<Span>) -> Option<usize> {
    let v = i + 2;
    if v >= b.len() || is_blank(b[v]) || b[v] == b'=' || b[v] == b'\n' {
        return None;
    }
    value_at(b, v, memory, out)
}

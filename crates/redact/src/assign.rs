//! The value given to a credential name: `name: value`, `name=value`,
//! `"name": "value"`, `NAME := value`, `var name string = "value"`, and the
//! headers whose values have a shape of their own (`Authorization`, `Cookie`).
//!
//! Fired at a separator (`:`, `=`, `:=`, `=>`); the name is found by looking
//! behind, never further back than the end of the last span, and the value by
//! looking ahead over bytes that no later firing looks at again.

use crate::context::private_key;
use crate::redactor::Inner;
use crate::span::Span;
use crate::text::{
    Memory, NAME, OPEN_BLOCK, OPEN_PAIR, Open, VALUE_END, WORD, has, is_blank, push_text,
    quoted_value, run, run_value, scan_part, skip_blanks,
};
use crate::{REDACTED, step};

/// Authorization schemes kept in front of the credential they introduce,
/// under a name that is not an `Authorization` header.
const SCHEMES: &[&[u8]] = &[
    b"bearer",
    b"basic",
    b"token",
    b"negotiate",
    b"ntlm",
    b"dpop",
    b"apikey",
];

/// Type words between a name and its `=` (`var apiToken string = "…"`,
/// `val apiToken: String = "…"`, `let api_key: &str = "…"`).
const TYPES: &[&[u8]] = &[b"string", b"str", b"bytes", b"byte"];

/// Cookie attributes: the pairs of a `Set-Cookie` value that are not cookies.
const COOKIE_ATTRIBUTES: &[&[u8]] = &[
    b"path",
    b"domain",
    b"expires",
    b"max-age",
    b"samesite",
    b"secure",
    b"httponly",
    b"partitioned",
    b"priority",
    b"version",
    b"comment",
];

/// The longest percent-encoded name that is decoded before it is judged.
const ENCODED_NAME: usize = 128;

fn ends_with_ci(word: &[u8], end: &[u8]) -> bool {
    word.len() >= end.len() && word[word.len() - end.len()..].eq_ignore_ascii_case(end)
}

/// A name found behind a separator: `b[start..end]`, whether it was quoted,
/// and the quote right before it when it was not (the header or argument it
/// opens ends at the same quote).
struct Name {
    start: usize,
    end: usize,
    quoted: bool,
    encoded: bool,
}

/// Looks behind `at` (blanks first, then maybe a closing quote, maybe
/// escaped) for a name made of name characters and `%XX` escapes.
#[inline(always)]
fn name_before(b: &[u8], at: usize, floor: usize) -> Name {
    let mut k = at;
    while k > floor && is_blank(b[k - 1]) {
        k -= 1;
    }
    let mut quoted = false;
    if k > floor && matches!(b[k - 1], b'"' | b'\'' | b'`') {
        quoted = true;
        k -= 1;
        while k > floor && b[k - 1] == b'\\' {
            k -= 1;
        }
    }
    let end = k;
    let mut encoded = false;
    loop {
        while k > floor && has(b[k - 1], NAME) {
            k -= 1;
        }
        // `access%5Ftoken`: the escape's hex digits are name characters.
        if k > floor
            && b[k - 1] == b'%'
            && k + 2 <= end
            && b[k].is_ascii_hexdigit()
            && b[k + 1].is_ascii_hexdigit()
        {
            encoded = true;
            k -= 1;
            continue;
        }
        break;
    }
    step!(at - k + 1);
    Name {
        start: k,
        end,
        quoted,
        encoded,
    }
}

/// `name` with its `%XX` escapes decoded, when it fits in `buf`.
fn percent_decoded<'a>(name: &[u8], buf: &'a mut [u8; ENCODED_NAME]) -> Option<&'a [u8]> {
    if name.len() > ENCODED_NAME {
        return None;
    }
    let hex = |c: u8| char::from(c).to_digit(16).map(|d| d as u8);
    let (mut i, mut n) = (0, 0);
    while i < name.len() {
        let c = name[i];
        buf[n] = match (
            c,
            name.get(i + 1).copied().and_then(hex),
            name.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                i += 2;
                hi * 16 + lo
            }
            _ => c,
        };
        i += 1;
        n += 1;
    }
    step!(name.len());
    Some(&buf[..n])
}

/// The longest word that [`prose_after`] takes for a word of prose.
const PROSE_WORD: usize = 14;

/// Whether an unquoted value that starts at `v` after a `:` opens a phrase of
/// prose rather than holding a value: a word as prose writes it (lowercase
/// letters, maybe after one capital, at most [`PROSE_WORD`] of them), followed
/// on the same line by another word ("The key: it is simple", "auth: moved to
/// settings"; a token there, or the placeholder it became, counts as one). A
/// run of letters in mixed case or longer than a word
/// (`X-Api-Key: VsqkqvSbiNPHBhJE …`) is a value.
fn prose_after(b: &[u8], v: usize) -> bool {
    let mut e = v;
    while e < b.len() && b[e].is_ascii_alphabetic() {
        e += 1;
    }
    step!(e - v + 1);
    if e == v || e >= b.len() || !is_blank(b[e]) {
        return false;
    }
    let word = &b[v..e];
    if word.len() > PROSE_WORD || word[1..].iter().any(u8::is_ascii_uppercase) {
        return false;
    }
    let t = skip_blanks(b, e);
    // A word redacted before counts as the word it was (redacting stays
    // idempotent when the next word was a token).
    t < b.len() && (b[t].is_ascii_alphabetic() || b[t..].starts_with(REDACTED.as_bytes()))
}

/// Whether the quote at `q` is escaped: an odd run of backslashes before it
/// (`\"`, inside a JSON string), not an even one (`\\"`: an escaped
/// backslash, then the quote), looking no further back than `floor`.
fn escaped_at(b: &[u8], q: usize, floor: usize) -> bool {
    let mut k = q;
    while k > floor && b[k - 1] == b'\\' {
        k -= 1;
    }
    step!(q - k + 1);
    (q - k) % 2 == 1
}

/// Whether the unquoted value at `v` is a call expression (`get_token()`,
/// `os.getenv("TOKEN")`, `Secret::new(…)`): code that computes the secret,
/// not the secret.
///
/// The callee is walked ahead over name characters and `:`, which a chain of
/// names (`token:token:…:f(`) shares with every value in it: `memo` keeps the
/// last walk, and a value that starts inside it ends where it ended.
// Out of line: it runs only for a credential name's value, and inlined it
// slows every assignment the scan looks at (a JSON Lines text by a third).
#[inline(never)]
fn call_at(b: &[u8], v: usize, memo: &mut CalleeMemo) -> bool {
    if !(b[v].is_ascii_alphabetic() || b[v] == b'_') {
        return false;
    }
    if !(memo.start..memo.end).contains(&v) {
        *memo = callee(b, v);
    }
    let e = memo.end;
    // `Key:(` is no call: the `Key:` before the parenthesis is a name of its
    // own, whose value a second pass would see redacted.
    if b.get(e) == Some(&b'(') {
        return b[e - 1] != b':' || b[e - 2] == b':';
    }
    // A placeholder right after a `:` was the value of a name inside the
    // call (`x:1(…`), which decided it as it did the first time.
    memo.inner > v
}

/// The walk of a callee from `start`: where it ends, and where the last
/// placeholder right after a `:` sits in it (0 for none).
#[derive(Default)]
pub(crate) struct CalleeMemo {
    start: usize,
    end: usize,
    inner: usize,
}

fn callee(b: &[u8], start: usize) -> CalleeMemo {
    let mut e = start;
    let mut inner = 0;
    // A placeholder in the callee stands for the name characters it replaced
    // (`a.[REDACTED](`).
    loop {
        let from = e;
        while e < b.len() && (has(b[e], NAME) || b[e] == b':') {
            e += 1;
        }
        step!(e - from + 1);
        if !b[e..].starts_with(REDACTED.as_bytes()) {
            break;
        }
        if b[e - 1] == b':' {
            inner = e;
        }
        e += REDACTED.len();
    }
    CalleeMemo {
        start,
        end: e,
        inner,
    }
}

/// A YAML block scalar (`key: |` or `key: >`, maybe with a chomping or
/// indentation sign) whose indicator is at `v`, for a key at `key`: the
/// content of the lines after it that are indented deeper than the key
/// (nothing, at the end of the indicator's line, when there is none).
/// `open` gets [`OPEN_BLOCK`] when the block runs to the end of the text: more lines may
/// belong to it.
fn yaml_block(b: &[u8], key: usize, v: usize, open: &mut Open) -> Option<(usize, usize)> {
    if !matches!(b[v], b'|' | b'>') {
        return None;
    }
    let mut e = v + 1;
    while e < b.len() && (matches!(b[e], b'-' | b'+') || b[e].is_ascii_digit()) {
        e += 1;
    }
    let mut eol = skip_blanks(b, e);
    if b.get(eol) == Some(&b'\r') {
        eol += 1;
    }
    if eol < b.len() && b[eol] != b'\n' {
        return None;
    }
    let line_start = memchr::memrchr(b'\n', &b[..key]).map_or(0, |p| p + 1);
    let column = key - line_start;
    step!(column + 1);
    // A block's key starts its line (after its indentation, a list item's `-`
    // or the key's quote): after other text on the line, hiding that text
    // would move the key's column and change which lines the block takes.
    if !b[line_start..key]
        .iter()
        .all(|&c| is_blank(c) || matches!(c, b'-' | b'"' | b'\''))
    {
        return None;
    }
    let (mut start, mut end) = (None, 0);
    let mut i = eol + 1;
    while i < b.len() {
        let indent = skip_blanks(b, i) - i;
        let line_end = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |p| i + p);
        step!(line_end - i + 1);
        let mut content_end = line_end;
        while content_end > i + indent && b[content_end - 1].is_ascii_whitespace() {
            content_end -= 1;
        }
        if content_end > i + indent {
            if indent <= column {
                break;
            }
            start.get_or_insert(i + indent);
            end = content_end;
        }
        i = line_end + 1;
    }
    if i >= b.len() {
        open.note(OPEN_BLOCK, key, column);
    }
    Some(start.map_or((eol, eol), |s| (s, end)))
}

/// Where the value of a header that starts at `t` ends: at the end of its
/// line, or at the quote that holds the whole header (`-H 'Cookie: …'`), and
/// before the blanks and escaping backslashes in front of that end.
fn header_end(b: &[u8], t: usize, holder: Option<(u8, bool)>) -> usize {
    let mut i = t;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' || c == b'\r' {
            break;
        }
        if let Some((quote, escaped)) = holder
            && c == quote
        {
            // An escaped holder ends at its escaped quote; a plain one ends at
            // a quote that no backslash escapes.
            if escaped || i == t || b[i - 1] != b'\\' {
                break;
            }
        }
        i += 1;
    }
    step!(i - t + 1);
    if holder.is_some_and(|(_, escaped)| escaped) {
        while i > t && b[i - 1] == b'\\' {
            i -= 1;
        }
    }
    while i > t && is_blank(b[i - 1]) {
        i -= 1;
    }
    i
}

/// Whether the name `b[name.start..name.end]` is redacted, decided once
/// per text for a long text.
#[inline(always)]
fn judge_name(inner: &Inner, b: &[u8], name: &Name, memory: &mut Memory) -> bool {
    let (k, e) = (name.start, name.end);
    let decide = || {
        let mut buf = [0; ENCODED_NAME];
        match name
            .encoded
            .then(|| percent_decoded(&b[k..e], &mut buf))
            .flatten()
        {
            Some(decoded) => inner.is_redacted_bytes(decoded),
            None => inner.is_redacted_bytes(&b[k..e]),
        }
    };
    match &mut memory.names {
        Some(cache) => cache.decide(b, k, e, decide),
        None => decide(),
    }
}

/// `name: value`, `name=value`, `"name": "value"` and the like, fired at the
/// separator `b[sep..sep + sep_len]`.
#[inline]
pub(crate) fn assignment(
    inner: &Inner,
    b: &[u8],
    sep: usize,
    sep_len: usize,
    floor: usize,
    memory: &mut Memory,
    out: &mut Vec<Span>,
) -> Option<usize> {
    // `?=`, `??=`, `.=`, `+=`, `::=`, `:::=`: the operator's first characters.
    let mut at = sep;
    if b[sep] == b'=' || sep_len == 2 {
        while at > floor && sep - at < 2 && matches!(b[at - 1], b':' | b'?' | b'.' | b'+') {
            at -= 1;
        }
    }
    let mut name = name_before(b, at, floor);
    if name.start == name.end {
        return None;
    }
    let word = &b[name.start..name.end];
    if word.len() == 3
        && word.eq_ignore_ascii_case(b"key")
        && let Some(end) = named_pair(inner, b, sep + sep_len, memory, out)
    {
        // `key="ApiKey" value="…"`: the key is a name, not a secret.
        return Some(end);
    }
    if !judge_name(inner, b, &name, memory) {
        // Most names are not credential names: a short one may still be a
        // type word or the name of a pair.
        if !(3..=6).contains(&word.len()) {
            return None;
        }
        match not_a_credential_name(inner, b, sep, sep_len, floor, &name, memory, out)? {
            Ok(typed) => name = typed,
            Err(end) => return Some(end),
        }
    }
    let v = skip_blanks(b, sep + sep_len);
    if v >= b.len() {
        return None;
    }
    if let Some((cs, ce, after)) = quoted_value(b, v, &mut memory.quotes) {
        if b[cs..ce].starts_with(REDACTED.as_bytes()) {
            // Redacted before: the scan went on right after the span
            // then, and after the closing quote when the span was the
            // whole value.
            if ce == cs + REDACTED.len() {
                return Some(after.max(ce));
            }
            return Some(cs + REDACTED.len());
        }
        if b[cs..].starts_with(b"-----BEGIN ")
            && let Some(end) = private_key(b, cs, &mut memory.open, out)
        {
            // A key block whose lines the text breaks with `\n` or with
            // line breaks: the whole block goes (with its closing quote
            // when it fills the value, as for any other value).
            return Some(if end == ce { after.max(ce) } else { end });
        }
        // An unterminated quote runs to the end of the line.
        push_text(b, cs, ce, out);
        return Some(after.max(ce));
    }
    // A cookie header reads what follows a redacted start as cookies, on
    // the first pass as on the next (idempotence).
    let cookie = memory.cookies && ends_with_ci(&b[name.start..name.end], b"cookie");
    let mark = out.len();
    if b[v..].starts_with(b"-----BEGIN ")
        && let Some(end) = private_key(b, v, &mut memory.open, out)
    {
        if cookie {
            // The key is the first part of the header, which reads it as
            // text (and finds it) from where it starts, as it reads its
            // placeholder on the next pass.
            out.truncate(mark);
            return Some(cookies(inner, b, v, end, holder(b, &name, floor), out).max(end));
        }
        return Some(end);
    }
    if b[v..].starts_with(REDACTED.as_bytes()) {
        // Redacted before: the scan went on right after the span then.
        // A cookie header's placeholder stands where a cookie's name did:
        // the header is read as it was then.
        let end = v + REDACTED.len();
        if cookie {
            return Some(cookies(inner, b, v, v, holder(b, &name, floor), out).max(end));
        }
        return Some(end);
    }
    if b[v] == b'{' || b[v] == b'[' {
        // A nested structure: its own names decide.
        return None;
    }
    // A cookie header holds cookies, not a call; and a placeholder in it
    // must not make it look like one on the next pass.
    if !cookie && call_at(b, v, &mut memory.callee) {
        return None;
    }
    value_after_name(inner, b, sep, sep_len, v, &name, floor, memory, out)
}

/// An assignment whose name is no credential name but a short word: a
/// type word (`var apiToken string =`: `Ok` with the name before it, when
/// that one is a credential name), or `name` or `key` of a pair (`Err`
/// with where the pair's value ends).
#[cold]
#[allow(clippy::too_many_arguments)]
fn not_a_credential_name(
    inner: &Inner,
    b: &[u8],
    sep: usize,
    sep_len: usize,
    floor: usize,
    name: &Name,
    memory: &mut Memory,
    out: &mut Vec<Span>,
) -> Option<Result<Name, usize>> {
    let word = &b[name.start..name.end];
    if TYPES.iter().any(|t| word.eq_ignore_ascii_case(t)) && !name.quoted {
        let mut k = name.start;
        while k > floor && matches!(b[k - 1], b'&' | b'*' | b'[' | b']') {
            k -= 1;
        }
        while k > floor && is_blank(b[k - 1]) {
            k -= 1;
        }
        if k > floor && b[k - 1] == b':' {
            k -= 1;
        }
        step!(name.start - k + 1);
        let typed = name_before(b, k, floor);
        if typed.start == typed.end || typed.quoted || !judge_name(inner, b, &typed, memory) {
            return None;
        }
        return Some(Ok(typed));
    }
    if word.eq_ignore_ascii_case(b"name") || word.eq_ignore_ascii_case(b"key") {
        return named_pair(inner, b, sep + sep_len, memory, out).map(Err);
    }
    None
}

/// `name="apiToken" value="…"`, `key: X-Api-Key, value: …` and the same
/// in JSON-like or XML text: the value of a pair whose name is a
/// credential name. `v` is where the name's own value may start.
fn named_pair(
    inner: &Inner,
    b: &[u8],
    v: usize,
    memory: &mut Memory,
    out: &mut Vec<Span>,
) -> Option<usize> {
    let v = skip_blanks(b, v);
    if v >= b.len() {
        return None;
    }
    let (cs, ce, after) = match quoted_value(b, v, &mut memory.quotes) {
        Some((cs, ce, after)) if after > ce => (cs, ce, after),
        Some(_) => return None,
        None => {
            let e = unquoted_name(b, v)?;
            (v, e, e)
        }
    };
    if ce == cs
        || ce - cs > ENCODED_NAME
        || !b[cs..ce].iter().all(|&c| has(c, NAME))
        || !inner.is_redacted_bytes(&b[cs..ce])
    {
        return None;
    }
    // Then `value`, maybe quoted, maybe after a comma, line breaks, or the
    // end of one XML tag and the start of the next.
    let mut j = after;
    while j < b.len() && (b[j].is_ascii_whitespace() || matches!(b[j], b',' | b'/' | b'>' | b'<')) {
        j += 1;
    }
    step!(j - after + 1);
    if j >= b.len() {
        // `value` may come on a line that follows.
        memory.open.note(OPEN_PAIR, v, 0);
        return None;
    }
    let mut q = j;
    while q < b.len() && b[q] == b'\\' {
        q += 1;
    }
    let quote = b.get(q).copied().filter(|c| matches!(c, b'"' | b'\''));
    if quote.is_some() {
        q += 1;
    } else {
        q = j;
    }
    if b.len() < q + 5 || !b[q..q + 5].eq_ignore_ascii_case(b"value") {
        return None;
    }
    let mut r = q + 5;
    if quote.is_some() {
        while r < b.len() && b[r] == b'\\' {
            r += 1;
        }
        if b.get(r).copied() != quote {
            return None;
        }
        r += 1;
    } else if b.get(r).is_some_and(|&c| has(c, NAME)) {
        return None;
    }
    let r = skip_blanks(b, r);
    if !matches!(b.get(r), Some(b':' | b'=')) {
        return None;
    }
    let w = skip_blanks(b, r + 1);
    if w >= b.len() {
        return None;
    }
    if let Some((cs, ce, after)) = quoted_value(b, w, &mut memory.quotes) {
        push_text(b, cs, ce, out);
        return Some(after.max(ce));
    }
    let end = run_value(b, w);
    if end == w {
        return None;
    }
    push_text(b, w, end, out);
    Some(end)
}

/// The quote that holds an unquoted name and its value (`"cookie: a=b"`),
/// and whether that quote is escaped: the header's value ends there.
fn holder(b: &[u8], name: &Name, floor: usize) -> Option<(u8, bool)> {
    (!name.quoted && name.start > 0)
        .then(|| b[name.start - 1])
        .filter(|q| matches!(q, b'"' | b'\''))
        .map(|q| (q, escaped_at(b, name.start - 1, floor)))
}

/// The value of an assignment to a credential name `name`, starting at `v`: an `Authorization` or
/// cookie header's, a value after a scheme word (`token: Bearer abc` keeps `Bearer`), a YAML block,
/// or a plain value up to its end; `None` where what follows is no value (prose, a type word).
#[allow(clippy::too_many_arguments)]
#[inline]
fn value_after_name(
    inner: &Inner,
    b: &[u8],
    sep: usize,
    sep_len: usize,
    v: usize,
    name: &Name,
    floor: usize,
    memory: &mut Memory,
    out: &mut Vec<Span>,
) -> Option<usize> {
    let header = &b[name.start..name.end];
    let holder = holder(b, name, floor);
    if ends_with_ci(header, b"authorization") {
        return authorization(b, v, holder, out);
    }
    if memory.cookies && ends_with_ci(header, b"cookie") {
        return Some(cookies(inner, b, v, v, holder, out));
    }
    // `token: Bearer abc` keeps its scheme word.
    let word_end = run(b, v, WORD);
    let scheme = &b[v..word_end];
    if SCHEMES.iter().any(|s| scheme.eq_ignore_ascii_case(s)) {
        let t = skip_blanks(b, word_end);
        if t > word_end && t < b.len() && !has(b[t], VALUE_END) {
            let end = run_value(b, t);
            push_text(b, t, end, out);
            return Some(end);
        }
    }
    if b[sep] == b':' && sep_len == 1 {
        if prose_after(b, v) {
            return None;
        }
        if let Some((start, end)) = yaml_block(b, name.start, v, &mut memory.open) {
            // The indicator alone (no lines follow yet) is no secret.
            push_text(b, start, end, out);
            return Some(end);
        }
    }
    let end = run_value(b, v);
    if end == v {
        return None;
    }
    if b[sep] == b':' && sep_len == 1 {
        // `val apiToken: String = "…"`: the `=` names the value.
        let word = &b[v..end];
        let word = word.strip_prefix(b"&").unwrap_or(word);
        let t = skip_blanks(b, end);
        if TYPES.iter().any(|w| word.eq_ignore_ascii_case(w))
            && b.get(t) == Some(&b'=')
            && b.get(t + 1) != Some(&b'=')
        {
            return None;
        }
    }
    push_text(b, v, end, out);
    Some(end)
}

/// Where an unquoted value at `v` ends when it is a name (name characters
/// only, at most [`ENCODED_NAME`] of them, ending where [`run_value`] would
/// end it); `None` when it is not. A longer value is no name, so a chain of
/// `name=name=…` costs a bounded look at each.
fn unquoted_name(b: &[u8], v: usize) -> Option<usize> {
    let limit = b.len().min(v + ENCODED_NAME + 1);
    let mut e = v;
    while e < limit && has(b[e], NAME) {
        e += 1;
    }
    step!(e - v + 1);
    if e - v > ENCODED_NAME {
        return None;
    }
    // Escaping backslashes before a quote end the value as the quote does.
    let mut q = e;
    while q < b.len() && b[q] == b'\\' {
        q += 1;
    }
    step!(q - e + 1);
    let ends = match b.get(q) {
        None => q == e,
        Some(b'"' | b'\'') => true,
        Some(&c) => q == e && has(c, VALUE_END),
    };
    ends.then_some(e)
}

/// The value of an `Authorization` header that starts at `v`: the scheme
/// word stays, everything after it up to the end of the header goes (for
/// `Bearer` and `Basic`, whose credential is one token, up to the next
/// blank); a value of one word goes whole.
fn authorization(
    b: &[u8],
    v: usize,
    holder: Option<(u8, bool)>,
    out: &mut Vec<Span>,
) -> Option<usize> {
    let word_end = run(b, v, WORD);
    let t = skip_blanks(b, word_end);
    if word_end > v && t > word_end && t < b.len() && !matches!(b[t], b'\n' | b'\r') {
        let mut end = header_end(b, t, holder);
        let scheme = &b[v..word_end];
        if scheme.eq_ignore_ascii_case(b"bearer") || scheme.eq_ignore_ascii_case(b"basic") {
            // One token, as these schemes define it: a log line may go on after it.
            let mut e = t;
            while e < end && !b[e].is_ascii_whitespace() {
                e += 1;
            }
            step!(e - t + 1);
            end = e;
        }
        if end > t {
            push_text(b, t, end, out);
            return Some(end);
        }
    }
    let end = run_value(b, v);
    if end == v {
        return None;
    }
    push_text(b, v, end, out);
    Some(end)
}

/// The values of every cookie in a `Cookie` or `Set-Cookie` header that
/// starts at `v`; names and attributes stay. The header splits at `;` and
/// `,`; a part that is no cookie pair (`cookie=-64 glpat-…`, a JSON
/// member's number and the members after it), the names, what follows a
/// value, and attributes' values are read as text with every rule but this
/// one, so a credential there is found too. The scan starts at `resume`:
/// past a private key that starts the header, which stands where the first
/// cookie's name does, as its placeholder will when the text is redacted
/// again. Returns where the scan goes on.
///
/// Idempotence: what decides how the header is read never moves when the
/// text is redacted again. Parts end at `;` or `,`, which no span in them
/// holds. A name that holds the placeholder is no cookie's name: a span
/// that ran over the end of a name (a quoted value, a key) leaves one, and
/// so does a token that was a name, whose pair's value was redacted then.
fn cookies(
    inner: &Inner,
    b: &[u8],
    v: usize,
    resume: usize,
    holder: Option<(u8, bool)>,
    out: &mut Vec<Span>,
) -> usize {
    let end = header_end(b, resume, holder);
    let mut i = resume;
    let mut name_start = v;
    while i < end {
        let part_from = i;
        while i < end && !matches!(b[i], b'=' | b';' | b',') && !is_blank(b[i]) {
            i += 1;
        }
        step!(i - part_from + 1);
        let name = &b[name_start..i];
        let mut pair = i < end
            && b[i] == b'='
            && i > name_start
            && part_from == name_start
            && memchr::memmem::find(name, REDACTED.as_bytes()).is_none();
        if pair {
            // A name with a credential in it will hold the placeholder: the
            // part is text then, as it will be on the next pass.
            let mark = out.len();
            scan_part(inner, b, name_start, i, out);
            if out.len() > mark {
                out.truncate(mark);
                pair = false;
            }
        }
        if pair {
            let attribute = COOKIE_ATTRIBUTES
                .iter()
                .any(|a| name.eq_ignore_ascii_case(a));
            let vs = i + 1;
            let mut ve = vs;
            if b[vs..end].starts_with(REDACTED.as_bytes()) {
                ve = vs + REDACTED.len();
            } else if b.get(vs) == Some(&b'"') {
                ve = vs + 1;
                while ve < end && b[ve] != b'"' {
                    ve += 1;
                }
                step!(ve - vs + 1);
                if attribute {
                    scan_part(inner, b, vs + 1, ve, out);
                }
                ve = (ve + 1).min(end);
            } else {
                while ve < end && !matches!(b[ve], b';' | b',') && !is_blank(b[ve]) {
                    ve += 1;
                }
                step!(ve - vs + 1);
                if attribute {
                    scan_part(inner, b, vs, ve, out);
                }
            }
            if !attribute {
                push_text(b, vs, ve, out);
            }
            i = skip_blanks(b, ve).min(end);
        } else {
            // No pair: the part is text from where its name would start.
            i = name_start;
        }
        // On to the next part, over what is no cookie, read as text.
        let from = i;
        while i < end && !matches!(b[i], b';' | b',') {
            i += 1;
        }
        step!(i - from + 1);
        scan_part(inner, b, from, i, out);
        i = skip_blanks(b, i + 1);
        name_start = i;
    }
    end
}

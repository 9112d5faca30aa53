//! Text rules: credentials found in free text by their form.
//!
//! One left-to-right pass. Rules fire only at a few kinds of places (the start
//! of a word, a `:` or `=`), and each rule's look-ahead or look-behind covers a
//! region that no other firing of the same rule covers again, so the whole pass
//! stays linear in the length of the text whatever the input.

use crate::assign::{self, CalleeMemo};
use crate::context;
use crate::name_cache::NameCache;
use crate::provider;
use crate::redactor::Inner;
use crate::span::Span;
use crate::{REDACTED, step};

/// `[A-Za-z0-9_-]`: the characters of a word, of base64url and of most tokens.
pub(crate) const WORD: u8 = 1;
/// `[A-Za-z0-9_.-]`: the characters of a field name in `name=value`.
pub(crate) const NAME: u8 = 2;
/// `[A-Za-z0-9+/]`: base64.
const B64: u8 = 4;
/// `[A-Za-z0-9._~+/-]`: RFC 6750 token characters (before the `=` padding).
const T68: u8 = 8;
/// Ends an unquoted value: whitespace and control characters, `& # , ; } )`
/// and quotes.
pub(crate) const VALUE_END: u8 = 16;
/// `:` and `=`, where an assignment rule may fire.
const SEP: u8 = 64;
/// Ends the authority of a URL (`[` too: a placeholder ends it, as the `/`
/// it may have replaced did).
const AUTH_END: u8 = 32;

static CLASS: [u8; 256] = classes();

/// Texts from this length up remember the names they decided.
const CACHED_TEXT: usize = 1024;

/// One byte per pair of bytes `(byte, next)`: whether the text scan stops at
/// `byte`, and why: [`STOP`] at a separator, the first two letters of a word
/// rule's prefix (the rule then checks that a word starts there) or a pair a
/// contextual rule fires at ([`context::stops_here`]); [`PROVIDER_STOP`] at
/// the anchor of a provider format (see [`provider::add_stops`]). A byte each
/// rather than a bit: the scan's inner loop is then one look-up, and the pairs
/// that text meets (ASCII before ASCII) fill 16 KiB of it.
static STOPS: [u8; 65536] = stops();

/// A separator, or where a word rule other than a provider format may start.
const STOP: u8 = 1;
/// Where a provider format's anchor may sit.
const PROVIDER_STOP: u8 = 2;

const fn stops() -> [u8; 65536] {
    let class = classes();
    let mut t = [0; 65536];
    let mut c = 0;
    while c < 256 {
        let mut next = 0;
        while next < 256 {
            if class[c] & SEP != 0
                || starts_word_rule(c as u8, next as u8)
                || context::stops_here(c as u8, next as u8)
            {
                t[(c << 8) | next] = STOP;
            }
            next += 1;
        }
        c += 1;
    }
    provider::add_stops(&mut t, PROVIDER_STOP);
    t
}

/// Whether the prefix of a word rule other than a provider format may start
/// with the bytes `c`, `next`: `eyJ`, `Basic`/`Bearer` in any case.
const fn starts_word_rule(c: u8, next: u8) -> bool {
    matches!(
        (c, next),
        (b'e', b'y') | (b'B' | b'b', b'a' | b'A' | b'e' | b'E')
    )
}

#[inline]
fn stop_kind(byte: u8, next: u8) -> u8 {
    STOPS[(usize::from(byte) << 8) | usize::from(next)]
}

#[inline]
fn stops_at(byte: u8, next: u8) -> bool {
    stop_kind(byte, next) != 0
}

const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        let alnum = b.is_ascii_alphanumeric();
        let mut k = 0;
        if alnum || b == b'_' || b == b'-' {
            k |= WORD;
        }
        if alnum || b == b'_' || b == b'-' || b == b'.' {
            k |= NAME;
        }
        if alnum || b == b'+' || b == b'/' {
            k |= B64;
        }
        if alnum || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/') {
            k |= T68;
        }
        if b <= b' '
            || b == 0x7f
            || matches!(
                b,
                b'&' | b'#' | b',' | b';' | b'}' | b')' | b'"' | b'\'' | b'`'
            )
        {
            k |= VALUE_END;
        }
        if b <= b' '
            || b == 0x7f
            || matches!(
                b,
                b'/' | b'?' | b'#' | b'"' | b'\'' | b'`' | b'<' | b'>' | b'\\' | b'['
            )
        {
            k |= AUTH_END;
        }
        if matches!(b, b':' | b'=') {
            k |= SEP;
        }
        t[c] = k;
        c += 1;
    }
    t
}

#[inline]
pub(crate) fn has(c: u8, class: u8) -> bool {
    CLASS[c as usize] & class != 0
}

/// The end of the run of `class` bytes that starts at `i`.
#[inline]
pub(crate) fn run(b: &[u8], mut i: usize, class: u8) -> usize {
    let start = i;
    while i < b.len() && has(b[i], class) {
        i += 1;
    }
    step!(i - start + 1);
    i
}

pub(crate) fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

pub(crate) fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    let start = i;
    while i < b.len() && is_blank(b[i]) {
        i += 1;
    }
    step!(i - start + 1);
    i
}

/// Whether a token after `Bearer`/`Basic` outside any credential context looks
/// like a credential rather than a word of prose ("a Bearer token", "Basic usage").
/// A dot counts as a credential character: the dots that end a sentence were
/// taken off the token before.
fn looks_like_credential(token: &[u8]) -> bool {
    step!(token.len());
    let strong = token
        .iter()
        .any(|c| c.is_ascii_digit() || matches!(c, b'_' | b'~' | b'+' | b'/' | b'=' | b'.'));
    let inner_upper = token.iter().skip(1).any(u8::is_ascii_uppercase);
    let lower = token.iter().any(u8::is_ascii_lowercase);
    token.len() >= 24 || (token.len() >= 4 && (strong || (inner_upper && lower)))
}

/// Whether `token` is base64 of something holding a `:` (`user:password`).
fn decodes_to_user_password(token: &[u8]) -> bool {
    step!(token.len());
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &c in token {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return false,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            if (acc >> bits) & 0xff == u32::from(b':') {
                return true;
            }
        }
    }
    false
}

/// Remembers, per kind of quote search, a region already known to hold no
/// closing quote, so that many unterminated values on one line cost one scan.
#[derive(Default)]
pub(crate) struct QuoteMemo {
    /// `[double, single, backtick] x [plain, escaped]`: `(from, to)` where a
    /// search starting in `from..=to` finds no closing quote before `to`.
    open: [[Option<(usize, usize)>; 2]; 3],
}

/// Where a quoted value that starts at `open` (its first backslash or quote)
/// ends: `(content_start, content_end, after_closing_quote)`, or `None` when
/// `b[open..]` does not start with a quote. An unterminated quote gives its
/// content up to the end of the line with `after_closing_quote == content_end`.
pub(crate) fn quoted_value(
    b: &[u8],
    open: usize,
    memo: &mut QuoteMemo,
) -> Option<(usize, usize, usize)> {
    let mut q = open;
    while q < b.len() && b[q] == b'\\' {
        q += 1;
    }
    step!(q - open + 1);
    let quote = *b.get(q)?;
    let which = match quote {
        b'"' => 0,
        b'\'' => 1,
        b'`' => 2,
        _ => return None,
    };
    let escaped = q - open; // backslashes before the quote: the value sits in a JSON string
    let start = q + 1;
    let mode = usize::from(escaped > 0);
    // An unterminated quote runs to the end of its line, the `\r` of a
    // `\r\n` aside, as the writer reads a line.
    let line_end = |i: usize| {
        if i < b.len() && i > start && b[i - 1] == b'\r' {
            i - 1
        } else {
            i
        }
    };
    if let Some((from, to)) = memo.open[which][mode]
        && (from..=to).contains(&start)
    {
        let end = line_end(to);
        return Some((start, end, end));
    }
    let mut backslashes = 0;
    let mut i = start;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            break;
        }
        if c == quote {
            let closes = if escaped == 0 {
                backslashes % 2 == 0
            } else {
                true
            };
            if closes {
                step!(i - start + 1);
                let end = if escaped == 0 {
                    i
                } else {
                    i - backslashes.min(escaped)
                };
                return Some((start, end.max(start), i + 1));
            }
        }
        backslashes = if c == b'\\' { backslashes + 1 } else { 0 };
        i += 1;
    }
    step!(i - start + 1);
    memo.open[which][mode] = Some((start, i));
    let end = line_end(i);
    Some((start, end, end))
}

/// What one scan of a text remembers as it goes.
pub(crate) struct Memory {
    /// Whether a cookie header's value is read as cookies (false inside a
    /// part of one, see [`scan_part`]).
    pub(crate) cookies: bool,
    pub(crate) quotes: QuoteMemo,
    /// Boxed: a short text, which has none, then costs no copy of it.
    pub(crate) names: Option<Box<NameCache>>,
    /// The last `mysql` command seen: where its word is and where its line
    /// ends (`usize::MAX` before any). A `-p…` on that line is a password.
    pub(crate) mysql: (usize, usize),
    /// Where this scan's spans start in the span list.
    pub(crate) mark: usize,
    /// The last callee walked ahead over, for `assign::call_at`.
    pub(crate) callee: CalleeMemo,
    /// The constructs a rule met the end of the text inside, which more text
    /// could go on: what the scan decided may change if text is added.
    pub(crate) open: Open,
    /// Where a rule fired and where the scan went on after it, when a line
    /// break lies between.
    pub(crate) crossings: Vec<(usize, usize)>,
}

impl Memory {
    /// Notes that the rule that fired at `from` took the scan on to `to`.
    #[inline]
    fn jumped(&mut self, b: &[u8], from: usize, to: usize) {
        if to > from + 1 && memchr::memchr(b'\n', &b[from..to.min(b.len())]).is_some() {
            self.crossings.push((from, to));
        }
    }
}

/// Where a text can be cut when a construct that a rule firing at `at`
/// started is the first still open at its end: the start of its line, or of
/// the line of a rule that fired before it and took the scan over that line
/// start. No rule looks back over that line start, and none that looked
/// ahead over it is left waiting: the text before it is decided, and the
/// text after it reads on its own as the scan of all of it reads it.
fn clean_cut(b: &[u8], crossings: &[(usize, usize)], at: usize) -> usize {
    let line_start = |p: usize| memchr::memrchr(b'\n', &b[..p]).map_or(0, |q| q + 1);
    let mut cut = line_start(at);
    step!(at - cut + 1);
    for &(from, to) in crossings.iter().rev() {
        step!(1);
        if from < cut && to > cut {
            let was = cut;
            cut = line_start(from);
            step!(was - cut + 1);
        }
    }
    cut
}

/// The constructs that span lines and that a scan left open at the end of its
/// text ([`OPEN_ELEMENT`], [`OPEN_KEY`], [`OPEN_BLOCK`], [`OPEN_PAIR`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Open {
    /// Every kind left open.
    pub(crate) kinds: u8,
    /// The kind of the first one (the one that starts first).
    pub(crate) first: u8,
    /// Where the rule of the first one fired: on the line it starts on.
    pub(crate) at: usize,
    /// The column of the key of a YAML block left open.
    pub(crate) column: usize,
    /// Where the text can be cut: the lines before are decided, and the
    /// lines after read on their own as they read in all of it (see
    /// `clean_cut`).
    pub(crate) cut: usize,
}

impl Open {
    /// Notes a construct of `kind` that the rule firing at `at` left open.
    pub(crate) fn note(&mut self, kind: u8, at: usize, column: usize) {
        if self.kinds == 0 {
            self.first = kind;
            self.at = at;
        }
        if kind == OPEN_BLOCK {
            // A block runs to the end of the text: there is one at most.
            self.column = column;
        }
        self.kinds |= kind;
    }

    /// Whether `line`, added after the text, surely leaves the first construct
    /// open, as it is: then no scan of the text can decide anything else yet.
    pub(crate) fn stays_open(&self, line: &[u8]) -> bool {
        match self.first {
            OPEN_ELEMENT => memchr::memchr(b'<', line).is_none(),
            OPEN_KEY => memchr::memmem::find(line, b"-----END").is_none(),
            OPEN_BLOCK => {
                // As `assign::yaml_block` reads a line: blank, or indented
                // deeper than the block's key.
                let indent = line.iter().take_while(|&&c| is_blank(c)).count();
                indent > self.column || line[indent..].iter().all(u8::is_ascii_whitespace)
            }
            OPEN_PAIR => line
                .iter()
                .all(|&c| c.is_ascii_whitespace() || matches!(c, b',' | b'/' | b'>' | b'<')),
            _ => false,
        }
    }
}

/// An XML element without a tag after it: only a `<` may end it.
pub(crate) const OPEN_ELEMENT: u8 = 1;
/// A private key block without its `END` marker: only `-----END` may end it.
pub(crate) const OPEN_KEY: u8 = 2;
/// A YAML block scalar whose indented lines may go on: a line indented no
/// deeper than its key ends it.
pub(crate) const OPEN_BLOCK: u8 = 4;
/// A pair's name waiting for its `value`: a line with more than blanks and
/// `, / < >` decides it.
pub(crate) const OPEN_PAIR: u8 = 8;

/// Whether `rest` starts like the word of a JWT or `Bearer`/`Basic` rule.
fn word_candidate(rest: &[u8]) -> bool {
    step!(8);
    let starts_ci = |p: &[u8]| rest.len() >= p.len() && rest[..p.len()].eq_ignore_ascii_case(p);
    match rest.first() {
        Some(b'e') => rest.starts_with(b"eyJ"),
        Some(b'B' | b'b') => starts_ci(b"basic") || starts_ci(b"bearer"),
        _ => false,
    }
}

/// Pushes the spans of every credential the text rules find in `text`.
pub(crate) fn scan_text(inner: &Inner, text: &str, out: &mut Vec<Span>) {
    scan_text_open(inner, text, out);
}

/// [`scan_text`], and the constructs that span lines still open at the end
/// of `text` (see [`Memory::open`]; no kinds for none). When none is, and
/// `text` ends with a line break, the text after it is scanned as if on its
/// own: no rule looks back over a line break, and none that looks ahead over
/// one is left waiting. When one is, the same holds at the start of the line
/// the first one starts on, unless a span runs over that line start (see
/// `writer::clean_cut`).
pub(crate) fn scan_text_open(inner: &Inner, text: &str, out: &mut Vec<Span>) -> Open {
    scan(inner, text, true, out)
}

/// What a cookie header holds that is no cookie's value, `b[from..to]` (a
/// name, or what follows a pair up to the next `;` or `,`), read as text with
/// every rule but the cookie rule: a token, a URL's password or an
/// assignment there is found wherever it stands. The part holds no byte the
/// cookie rule splits the header at, so what is redacted in it never moves
/// where the next pass splits.
pub(crate) fn scan_part(inner: &Inner, b: &[u8], from: usize, to: usize, out: &mut Vec<Span>) {
    if from >= to {
        return;
    }
    let Ok(part) = std::str::from_utf8(&b[from..to]) else {
        // Cut inside a character: cannot happen, as parts end at ASCII
        // bytes; were it to, the part would go whole.
        push_text(b, from, to, out);
        return;
    };
    let mark = out.len();
    scan(inner, part, false, out);
    for span in &mut out[mark..] {
        span.start += from;
        span.end += from;
    }
}

/// The scan: with `cookies` false, a cookie header's value is read as any
/// other credential's (the scan of a part of one, see [`scan_part`]).
fn scan(inner: &Inner, text: &str, cookies: bool, out: &mut Vec<Span>) -> Open {
    let b = text.as_bytes();
    let n = b.len();
    let mut memory = Memory {
        cookies,
        quotes: QuoteMemo::default(),
        // Only a long text repeats its names often enough to pay for a
        // cache; most texts are short strings of a JSON document.
        names: (n >= CACHED_TEXT).then(|| Box::new(NameCache::new())),
        mysql: (usize::MAX, 0),
        mark: out.len(),
        callee: CalleeMemo::default(),
        open: Open::default(),
        crossings: Vec::new(),
    };
    // Look-behinds never reach before `floor`, the end of the last span.
    let mut floor = 0;
    let mut i = 0;
    while i < n {
        // Most bytes cannot start a rule: skip them in a tight loop that
        // stops only at a separator, at the first two letters of a word
        // rule's prefix, or at a contextual rule's pair. The pair of a
        // byte and the next decides, in one look-up with nothing carried
        // from one byte to the next, so common letters cost no
        // mispredicted branch.
        let from = i;
        while i + 1 < n && !stops_at(b[i], b[i + 1]) {
            i += 1;
        }
        step!(i - from + 1);
        // The last byte can only matter as a separator: no word rule's
        // prefix is one byte long.
        if i >= n || (i + 1 == n && !has(b[i], SEP)) {
            break;
        }
        let c = b[i];
        if c != b':' && c != b'=' {
            if context::fires_at(c) {
                match context::context_rule(inner, b, i, floor, &mut memory, out) {
                    context::Found::Span(to) => {
                        memory.jumped(b, i, to);
                        i = to.max(i + 1);
                        floor = i;
                        continue;
                    }
                    context::Found::Skip(to) => {
                        memory.jumped(b, i, to);
                        i = to.max(i + 1);
                        continue;
                    }
                    context::Found::Nothing => {}
                }
            }
            // A word starts here, or right after a span (the placeholder's
            // `]` comes before it).
            let word_start = i <= floor || !has(b[i - 1], WORD);
            let provider = stop_kind(c, b[i + 1]) & PROVIDER_STOP != 0;
            // Most stops are inside a word, where only a provider's anchor
            // may count.
            if !word_start && !provider {
                i += 1;
                continue;
            }
            match word_rule(b, i, word_start, provider, floor, out) {
                Some(to) => {
                    memory.jumped(b, i, to);
                    i = to;
                    floor = to;
                }
                None => i += 1,
            }
            continue;
        }
        let fired = match c {
            b':' if b[i + 1..].starts_with(b"//") => match url_userinfo(b, i + 3, out) {
                Some(to) => Some(to),
                None => {
                    i += 3;
                    continue;
                }
            },
            b':' if b.get(i + 1) == Some(&b':') => {
                i += 2;
                continue;
            }
            b':' if b.get(i + 1) == Some(&b'=') => {
                assign::assignment(inner, b, i, 2, floor, &mut memory, out)
            }
            b':' => assign::assignment(inner, b, i, 1, floor, &mut memory, out),
            b'=' if b.get(i + 1) == Some(&b'=') => {
                i += 2;
                continue;
            }
            b'=' if b.get(i + 1) == Some(&b'>') => {
                assign::assignment(inner, b, i, 2, floor, &mut memory, out)
            }
            b'=' => assign::assignment(inner, b, i, 1, floor, &mut memory, out).or_else(|| {
                let (start, end) = provider::param_value(b, i, floor)?;
                push_text(b, start, end, out);
                Some(end)
            }),
            _ => None,
        };
        match fired {
            Some(to) => {
                memory.jumped(b, i, to);
                i = to.max(i + 1);
                floor = i;
            }
            None => i += 1,
        }
    }
    if memory.open.kinds != 0 {
        memory.open.cut = clean_cut(b, &memory.crossings, memory.open.at);
    }
    memory.open
}

/// Rules that fire where the scan stopped at `b[i]`: JWTs and
/// `Bearer`/`Basic` credentials where a word starts there, then, at a
/// provider's anchor, tokens known by their form (the provider table, whose
/// rules look back to where their word starts, not before `floor`). A cheap
/// look at the first bytes comes before scanning the word.
fn word_rule(
    b: &[u8],
    i: usize,
    word_start: bool,
    provider: bool,
    floor: usize,
    out: &mut Vec<Span>,
) -> Option<usize> {
    if word_start && word_candidate(&b[i..]) {
        let e = run(b, i + 1, WORD);
        let w = &b[i..e];
        if w.starts_with(b"eyJ") {
            if let Some(to) = jwt(b, i, e, out) {
                return Some(to);
            }
        } else if w.eq_ignore_ascii_case(b"bearer") {
            return scheme_token(b, e, false, out);
        } else if w.eq_ignore_ascii_case(b"basic") {
            return scheme_token(b, e, true, out);
        }
    }
    if !provider {
        return None;
    }
    let (start, end) = provider::token(b, i, floor)?;
    push_text(b, start, end, out);
    Some(end)
}

/// The end of an unquoted value starting at `i`. A value that starts with the
/// placeholder ends after it: what follows was not part of the secret it
/// replaced, so redacting again finds the same value (idempotence).
pub(crate) fn run_value(b: &[u8], mut i: usize) -> usize {
    if b[i..].starts_with(REDACTED.as_bytes()) {
        return i + REDACTED.len();
    }
    let start = i;
    while i < b.len() && !has(b[i], VALUE_END) {
        i += 1;
    }
    step!(i - start + 1);
    // Backslashes right before a quote escape it: they stay, so that the quote
    // reads the same once the value is replaced (redacting stays idempotent).
    if matches!(b.get(i), Some(b'"' | b'\'')) {
        while i > start && b[i - 1] == b'\\' {
            i -= 1;
        }
    }
    i
}

/// Pushes `b[s..e]` as a text span unless it is empty or already the placeholder.
pub(crate) fn push_text(b: &[u8], s: usize, e: usize, out: &mut Vec<Span>) {
    if s < e && &b[s..e] != REDACTED.as_bytes() {
        out.push(Span::new(s, e, 0));
    }
}

/// A JWT whose first segment is the word `b[s..e]` (it starts with `eyJ`):
/// three or more base64url segments joined by dots.
fn jwt(b: &[u8], s: usize, e: usize, out: &mut Vec<Span>) -> Option<usize> {
    if e - s < 10 || b.get(e) != Some(&b'.') {
        return None;
    }
    let second = e + 1;
    let second_end = run(b, second, WORD);
    if second_end - second < 2 || b.get(second_end) != Some(&b'.') {
        return None;
    }
    let third = second_end + 1;
    let mut end = run(b, third, WORD);
    if end == third {
        // An unsigned JWT ends with its dot; only accept that when the payload
        // looks like one too.
        if !b[second..].starts_with(b"eyJ") {
            return None;
        }
    }
    // JWE and friends have more segments.
    while b.get(end) == Some(&b'.') {
        let next = run(b, end + 1, WORD);
        if next == end + 1 {
            break;
        }
        end = next;
    }
    push_text(b, s, end, out);
    Some(end)
}

/// The credential after a `Bearer` or `Basic` scheme word ending at `e`.
fn scheme_token(b: &[u8], e: usize, basic: bool, out: &mut Vec<Span>) -> Option<usize> {
    let t = skip_blanks(b, e);
    if t == e {
        return None;
    }
    let mut end = run(b, t, if basic { B64 } else { T68 });
    let padding_start = end;
    while end < b.len() && b[end] == b'=' {
        end += 1;
    }
    step!(end - padding_start + 1);
    // A sentence may end right after the token.
    while end > t && b[end - 1] == b'.' {
        end -= 1;
    }
    if end == t {
        return None;
    }
    let token = &b[t..end];
    if looks_like_credential(token) || (basic && decodes_to_user_password(token)) {
        push_text(b, t, end, out);
        return Some(end);
    }
    None
}

/// The `user:password@` of a URL whose authority starts at `a` (after `://`).
fn url_userinfo(b: &[u8], a: usize, out: &mut Vec<Span>) -> Option<usize> {
    let mut i = a;
    let (mut first, mut at) = (None, None);
    while i < b.len() && !has(b[i], AUTH_END) {
        if b[i] == b'@' {
            first.get_or_insert(i);
            at = Some(i);
        }
        i += 1;
    }
    step!(i - a + 1);
    let (first, at) = (first?, at?);
    let userinfo = &b[a..at];
    step!(userinfo.len());
    let colon = userinfo.contains(&b':')
        || userinfo
            .windows(3)
            .any(|w| w[0] == b'%' && w[1] == b'3' && (w[2] | 0x20) == b'a');
    // A password may hold an unescaped `@`, so it runs to the last one; a token
    // alone holds none, and ends at the first (a later `@` and what a rule
    // hides after it then never change where it ends).
    let end = if colon {
        at
    } else if token_alone(&b[a..first]) {
        first
    } else {
        return None;
    };
    push_text(b, a, end, out);
    Some(end)
}

/// Whether a URL's userinfo without a password is a token
/// (`https://x7Gk2pQ9zL4mN8vR3tY6wE1@host/`), not a user name: 20 or more
/// token characters, with letters and digits.
fn token_alone(userinfo: &[u8]) -> bool {
    userinfo.len() >= 20
        && userinfo.iter().all(|&c| has(c, T68))
        && userinfo.iter().any(u8::is_ascii_digit)
        && userinfo.iter().any(u8::is_ascii_alphabetic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_stops_at_every_pair_that_starts_a_word_rule() {
        // Every prefix a word rule knows, in both cases where the rule ignores case.
        let prefixes: [&[u8]; 7] = [
            b"eyJ", b"basic", b"BASIC", b"bearer", b"BEARER", b"Basic", b"Bearer",
        ];
        let mut candidates = 0;
        for c in 0..=255u8 {
            for next in 0..=255u8 {
                for prefix in prefixes {
                    let mut word = vec![c, next];
                    word.extend_from_slice(&prefix[2..]);
                    word.extend_from_slice(b"0123456789abcdefghij");
                    if word_candidate(&word) {
                        candidates += 1;
                        assert!(stops_at(c, next), "{:?}", String::from_utf8_lossy(&word));
                    }
                }
            }
        }
        assert!(candidates >= prefixes.len(), "{candidates}");
        // Each provider prefix stops the scan at one pair of its bytes, in
        // every case where the rule ignores case.
        for rule in provider::RULES {
            let p = rule.prefix.as_bytes();
            let (lower, upper) = (p.to_ascii_lowercase(), p.to_ascii_uppercase());
            let stops = (0..p.len() - 1).any(|k| {
                stops_at(p[k], p[k + 1])
                    && (!rule.any_case
                        || (stops_at(lower[k], upper[k + 1]) && stops_at(upper[k], lower[k + 1])))
            });
            assert!(stops, "{}", rule.prefix);
        }
        assert!(!stops_at(b'e', b'q') && !stops_at(b'n', b'a') && !stops_at(b'q', b'z'));
    }

    #[test]
    fn base64_user_password_is_recognised() {
        assert!(decodes_to_user_password(b"dXNlcjpwYXNz"));
        assert!(decodes_to_user_password(b"YWxhZGRpbjpvcGVuc2VzYW1l"));
        assert!(!decodes_to_user_password(b"usage"));
        assert!(!decodes_to_user_password(b"aGVsbG8="));
    }

    #[test]
    fn prose_after_bearer_is_not_a_credential() {
        assert!(!looks_like_credential(b"token"));
        assert!(!looks_like_credential(b"tokens"));
        assert!(!looks_like_credential(b"Token"));
        assert!(!looks_like_credential(b"token-based"));
        assert!(looks_like_credential(b"abc123"));
        assert!(looks_like_credential(b"abcDEFghi"));
    }

    #[test]
    fn quoted_values_end_at_their_quote() {
        let mut memo = QuoteMemo::default();
        let b = br#"a "x\"y" b"#;
        assert_eq!(quoted_value(b, 2, &mut memo), Some((3, 7, 8)));
        let b = br#"\"secret\" rest"#;
        assert_eq!(quoted_value(b, 0, &mut memo), Some((2, 8, 10)));
        let b = b"'open ended\nnext";
        assert_eq!(quoted_value(b, 0, &mut memo), Some((1, 11, 11)));
    }
}

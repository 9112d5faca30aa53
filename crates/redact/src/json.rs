//! JSON text: redaction by name and in strings, keeping every other byte.
//!
//! A validating scanner with an explicit stack (nesting depth costs heap, never
//! call stack). A value under a redacted name becomes one span replaced by
//! `"[REDACTED]"`; a string is decoded and given to the text rules, and a string
//! that is itself JSON is scanned as JSON, up to [`MAX_EMBED`] levels deep. The
//! spans found inside a string are mapped back onto its escaped bytes, so the
//! bytes around them stay exactly as they were.

use std::borrow::Cow;

use crate::keys::{self, Keys};
use crate::name_cache::{NAME, NameCache, SECRET};
use crate::pairs::{self, Pairs, Role};
use crate::redactor::Inner;
use crate::schema::{self, Check, Kind, Place, Schema};
use crate::span::{self, QUOTED_REDACTED, Span};
use crate::step;
use crate::text;

/// How many JSON-inside-a-string levels are scanned as JSON. Deeper strings get
/// the text rules only; the cap keeps the work linear.
pub(crate) const MAX_EMBED: u8 = 8;

/// The shortest JSON text whose field-name decisions are cached.
const CACHED_JSON: usize = 256;

/// Open containers held without the heap.
const INLINE_DEPTH: usize = 64;

/// The closing bracket of every open container: the first `INLINE_DEPTH` in place, deeper ones on
/// the heap, so that scanning a small text allocates nothing. The innermost one is kept apart too:
/// it is read after every value, and changes only when a container opens or closes.
struct Closers {
    inline: [u8; INLINE_DEPTH],
    deeper: Vec<u8>,
    len: usize,
    /// The innermost closing bracket; 0 when none is open.
    top: u8,
}

impl Closers {
    fn new() -> Self {
        Self {
            inline: [0; INLINE_DEPTH],
            deeper: Vec::new(),
            len: 0,
            top: 0,
        }
    }

    fn push(&mut self, close: u8) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = close,
            None => self.deeper.push(close),
        }
        self.len += 1;
        self.top = close;
    }

    fn pop(&mut self) {
        if self.len > INLINE_DEPTH {
            self.deeper.pop();
        }
        self.len = self.len.saturating_sub(1);
        self.top = match self.len {
            0 => 0,
            n if n <= INLINE_DEPTH => self.inline[n - 1],
            _ => self.deeper.last().copied().unwrap_or(0),
        };
    }

    fn last(&self) -> Option<u8> {
        (self.top != 0).then_some(self.top)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// The position of the first byte from `i` on that is not JSON whitespace.
#[inline(always)]
pub(crate) fn skip_ws(b: &[u8], i: usize) -> usize {
    // Most tokens follow the one before without a blank: one comparison settles that.
    match b.get(i) {
        Some(&c) if c > b' ' => {
            step!(1);
            i
        }
        _ => skip_blanks(b, i),
    }
}

fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    let start = i;
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    step!(i - start + 1);
    i
}

/// Whether `text` starts like an object or an array and ends like one, after
/// and before JSON whitespace: only such text is tried as JSON.
pub(crate) fn looks_like_json(text: &str) -> bool {
    let b = text.as_bytes();
    if !matches!(b.get(skip_ws(b, 0)), Some(b'{' | b'[')) {
        return false;
    }
    let mut end = b.len();
    while end > 0 && is_ws(b[end - 1]) {
        end -= 1;
    }
    step!(b.len() - end + 1);
    matches!(b.get(end.wrapping_sub(1)), Some(b'}' | b']'))
}

/// A string token: content is `start..end`, the closing quote is at `end`.
struct Str {
    start: usize,
    end: usize,
    escaped: bool,
}

static STRING_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = true;
        c += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The bytes that may follow a number or a literal, as in serde_json: a blank,
/// a bracket, a quote, a comma or a colon.
static ENDS_VALUE: [bool; 256] = {
    let mut t = [false; 256];
    let ends = b" \t\n\r\"[]{},:";
    let mut k = 0;
    while k < ends.len() {
        t[ends[k] as usize] = true;
        k += 1;
    }
    t
};

fn hex4(b: &[u8], i: usize) -> Option<u32> {
    let digits = b.get(i..i + 4)?;
    let mut v = 0;
    for &d in digits {
        v = v * 16 + char::from(d).to_digit(16)?;
    }
    Some(v)
}

/// Checks the escape at `b[i] == '\\'`; returns the position after it and the
/// code point it stands for.
fn escape(b: &[u8], i: usize) -> Option<(usize, char)> {
    let c = match *b.get(i + 1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hi = hex4(b, i + 2)?;
            return match hi {
                0xD800..=0xDBFF => {
                    if b.get(i + 6..i + 8) != Some(b"\\u") {
                        return None;
                    }
                    let lo = hex4(b, i + 8)?;
                    if !(0xDC00..=0xDFFF).contains(&lo) {
                        return None;
                    }
                    let code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    Some((i + 12, char::from_u32(code)?))
                }
                0xDC00..=0xDFFF => None,
                _ => Some((i + 6, char::from_u32(hi)?)),
            };
        }
        _ => return None,
    };
    Some((i + 2, c))
}

/// A mask with the high bit set in the byte of `word` (eight bytes) that is
/// the first quote, backslash or control character, and maybe in later ones:
/// the lowest set bit marks the first such byte exactly.
#[inline]
fn special_bytes(word: &[u8]) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut bytes = [0; 8];
    bytes.copy_from_slice(word);
    let x = u64::from_le_bytes(bytes);
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    control | zero(x ^ (ONES * u64::from(b'"'))) | zero(x ^ (ONES * u64::from(b'\\')))
}

#[inline(always)]
fn scan_string(b: &[u8], quote: usize) -> Option<Str> {
    let start = quote + 1;
    let mut i = start;
    let mut escaped = false;
    loop {
        let from = i;
        // Eight bytes at a time: most strings end in their first words. A
        // long one goes on with a vectorised search for the quote or
        // backslash that ends it, then one check that it holds no control
        // character; the last few bytes of the text go one at a time.
        let mut words = 0;
        loop {
            let Some(word) = b.get(i..i + 8) else {
                while i < b.len() && !STRING_SPECIAL[b[i] as usize] {
                    i += 1;
                }
                break;
            };
            let special = special_bytes(word);
            if special != 0 {
                i += (special.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
            words += 1;
            if words == 4 {
                let rest = &b[i..];
                let run = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
                if rest[..run].iter().fold(false, |bad, &c| bad | (c < 0x20)) {
                    return None;
                }
                i += run;
                break;
            }
        }
        step!(i - from + 1);
        match *b.get(i)? {
            b'"' => {
                return Some(Str {
                    start,
                    end: i,
                    escaped,
                });
            }
            b'\\' => {
                escaped = true;
                i = escape(b, i)?.0;
            }
            _ => return None,
        }
    }
}

/// Decodes the content of a valid string; with `map`, also the byte offset in
/// `raw` of every byte offset of the decoded text (and of its end).
fn decode(raw: &[u8], map: Option<&mut Vec<usize>>) -> String {
    step!(raw.len());
    let mut out = Vec::with_capacity(raw.len());
    let mut offsets = map;
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' {
            let Some((next, c)) = escape(raw, i) else {
                break;
            };
            let mut buf = [0; 4];
            let encoded = c.encode_utf8(&mut buf).as_bytes();
            if let Some(m) = offsets.as_deref_mut() {
                m.extend(std::iter::repeat_n(i, encoded.len()));
            }
            out.extend_from_slice(encoded);
            i = next;
        } else {
            if let Some(m) = offsets.as_deref_mut() {
                m.push(i);
            }
            out.push(raw[i]);
            i += 1;
        }
    }
    if let Some(m) = offsets {
        m.push(raw.len());
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The content of the string `s` of `text`, decoded when it has escapes.
fn string_text<'a>(text: &'a str, s: &Str) -> Cow<'a, str> {
    let raw = &text[s.start..s.end];
    if s.escaped {
        Cow::Owned(decode(raw.as_bytes(), None))
    } else {
        Cow::Borrowed(raw)
    }
}

/// What a JSON text scan knows of the objects it is in, for reading their
/// keys.
struct Objects {
    /// The decisions taken for the names of the text (for a long text).
    names: Option<NameCache>,
    /// The replaced keys of the open objects.
    keys: Keys,
    /// The containers walked as JSON Schema definitions under a credential
    /// name.
    schema: Schema,
    /// How many JSON strings the text sits in.
    embed: u8,
}

/// Checks the literal `word` at `i`.
fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    step!(word.len());
    b[i..].starts_with(word).then_some(i + word.len())
}

fn digits(b: &[u8], mut i: usize) -> usize {
    let start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    step!(i - start + 1);
    i
}

/// Checks the number at `i`.
fn number(b: &[u8], mut i: usize) -> Option<usize> {
    if b[i] == b'-' {
        i += 1;
    }
    match b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(b, i),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let after = digits(b, i + 1);
        if after == i + 1 {
            return None;
        }
        i = after;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let after = digits(b, i);
        if after == i {
            return None;
        }
        i = after;
    }
    Some(i)
}

/// Pushes the spans for `text`: as JSON when it is JSON (an object or an
/// array, or with `any_json` any JSON value), else by the text rules.
pub(crate) fn scan_any(inner: &Inner, text: &str, embed: u8, any_json: bool, out: &mut Vec<Span>) {
    let mark = out.len();
    if embed < MAX_EMBED && (any_json || looks_like_json(text)) {
        if scan_json(inner, text, embed, out) {
            return;
        }
        out.truncate(mark);
    }
    if !inner.text_rules {
        return;
    }
    text::scan_text(inner, text, out);
    if out.len() == mark || embed >= MAX_EMBED {
        return;
    }
    // Text that was not JSON can become JSON once redacted (a span may
    // swallow the stray byte that made it invalid). Redacting again would
    // then take the JSON path, which may find more: do that now, so that
    // redacting stays idempotent. Rare, and one more linear pass.
    let redacted = span::apply(text, &out[mark..]);
    if !(any_json || looks_like_json(&redacted)) {
        return;
    }
    let mut more = Vec::new();
    if scan_json(inner, &redacted, embed, &mut more) && !more.is_empty() {
        let rewrite = span::apply(&redacted, &more).into_owned().into_boxed_str();
        out.truncate(mark);
        out.push(Span {
            start: 0,
            end: text.len(),
            quote: 0,
            rewrite: Some(rewrite),
        });
    }
}

/// Scans `text` as a stream of JSON values, with `lines` objects and
/// arrays each within a line (JSON Lines); false (with spans to
/// discard) when it is not.
pub(crate) fn scan_json_lines(inner: &Inner, text: &str, lines: bool, out: &mut Vec<Span>) -> bool {
    if lines {
        scan_json_values::<true>(inner, text, 0, out)
    } else {
        scan_json_values::<false>(inner, text, 0, out)
    }
}

/// Scans `text` as a stream of JSON values; false (with spans to discard)
/// when it is not JSON.
///
/// The grammar is followed by where the code is rather than by a state
/// variable: a value is read at the top of the loop, then the brackets it
/// closes and the comma that follows it, then the key of the next member
/// when the comma is in an object. Each place has one or two bytes it may
/// meet, so the scan takes no dispatch on its state between tokens. That
/// is also why it is one long function: split, the places would become a
/// state passed between the pieces.
fn scan_json(inner: &Inner, text: &str, embed: u8, out: &mut Vec<Span>) -> bool {
    scan_json_values::<false>(inner, text, embed, out)
}

/// [`scan_json`]; with `LINES`, also false when a value at the top level is
/// no object or array, or spans a line break.
fn scan_json_values<const LINES: bool>(
    inner: &Inner,
    text: &str,
    embed: u8,
    out: &mut Vec<Span>,
) -> bool {
    // One piece: one loop over the bytes, whose state (the stack of open containers, the
    // pending key, where the value at the top level began) every branch reads and moves.
    let b = text.as_bytes();
    // Where the value at the top level being read starts.
    let mut top = 0;
    let mark = out.len();
    // Closing bracket of every open container.
    let mut stack = Closers::new();
    // Values named by a sibling, and the role of the value read next.
    let mut pairs = Pairs::default();
    let mut role = Role::None;
    // While `Some((depth, start))`, the value that started at `start` at
    // `depth` is being replaced whole: nothing inside it is looked at.
    let mut suppress: Option<(usize, usize)> = None;
    // Where the value read next sits.
    let mut place = Place::Normal;
    let mut saw_value = false;
    let mut objects = Objects {
        // A short text holds few names: deciding each is cheaper than setting up the cache.
        names: (b.len() >= CACHED_JSON).then(NameCache::new),
        keys: Keys::default(),
        schema: Schema::default(),
        embed,
    };
    let max_depth = inner.max_depth.unwrap_or(usize::MAX);
    // Where a value may start, blanks before it included.
    let mut i = 0;
    'value: loop {
        i = skip_ws(b, i);
        let Some(&c) = b.get(i) else {
            let json = stack.is_empty() && saw_value;
            if json {
                pairs.finish(mark, out);
            }
            return json;
        };
        step!(1);
        let depth = stack.len();
        if LINES && depth == 0 {
            // JSON Lines hold objects and arrays: a line of another
            // value does not look like JSON, and is read as text.
            if c != b'{' && c != b'[' {
                return false;
            }
            top = i;
        }
        let here = std::mem::take(&mut place);
        // A `type` or `$ref` of a candidate definition: what a string
        // must be, or a list of types.
        let check = if objects.schema.is_active() {
            objects.schema.value_start(c)
        } else {
            None
        };
        // The kind a container starting here is walked as.
        let mut open = Kind::Normal;
        if suppress.is_none() {
            let whole = depth > max_depth
                || (here != Place::Normal && {
                    let empty = c == b'{' && b.get(skip_ws(b, i + 1)) == Some(&b'}');
                    match schema::text_action(here, c, empty) {
                        Some(kind) => {
                            open = kind;
                            false
                        }
                        None => true,
                    }
                });
            if whole {
                suppress = Some((depth, i));
            }
        }
        let judge_string = match std::mem::replace(&mut role, Role::None) {
            Role::None => false,
            r => {
                pairs.start(r, depth, i, out);
                r != Role::Value
            }
        };
        // Where the value that starts at `i` ends.
        let mut end = match c {
            b'{' | b'[' => {
                let close = if c == b'{' { b'}' } else { b']' };
                let in_list = stack.last() == Some(b']');
                stack.push(close);
                let at = skip_ws(b, i + 1);
                if b.get(at) == Some(&close) {
                    stack.pop();
                    at + 1
                } else {
                    if open != Kind::Normal {
                        let slot = if open == Kind::Def {
                            pairs.slot(out)
                        } else {
                            0
                        };
                        let types = check.is_some_and(|(k, _)| k == Check::Type);
                        objects.schema.open(open, stack.len(), i, slot, types);
                    }
                    if c == b'[' {
                        if suppress.is_none() {
                            if in_list && open == Kind::Normal {
                                role = Role::Head;
                            }
                            if objects.schema.is_active() {
                                place = objects.schema.item(stack.len(), false);
                            }
                        }
                        i = at;
                        continue 'value;
                    }
                    match member_key(
                        inner,
                        text,
                        at,
                        &mut objects,
                        stack.len(),
                        suppress.is_none(),
                        out,
                    ) {
                        Some((next, p, r)) => {
                            (i, place, role) = (next, p, r);
                            continue 'value;
                        }
                        None => return false,
                    }
                }
            }
            b'"' => {
                let Some(s) = scan_string(b, i) else {
                    return false;
                };
                if suppress.is_none() {
                    string_value(inner, text, &s, embed, out);
                }
                if let Some(check) = check {
                    objects.schema.string(check, &string_text(text, &s));
                }
                if judge_string {
                    let decide = || inner.is_redacted_name(&string_text(text, &s));
                    pairs.judged(match &mut objects.names {
                        Some(names) if !s.escaped => names.decide(b, s.start, s.end, decide),
                        _ => decide(),
                    });
                }
                if b.get(i + 1..i + 3) == Some(b"--")
                    && stack.last() == Some(b']')
                    && pairs::is_flag(inner, &string_text(text, &s))
                {
                    pairs.flag(depth);
                }
                s.end + 1
            }
            b't' | b'f' | b'n' | b'-' | b'0'..=b'9' => {
                let end = match c {
                    b't' => literal(b, i, b"true"),
                    b'f' => literal(b, i, b"false"),
                    b'n' => literal(b, i, b"null"),
                    _ => number(b, i),
                };
                // As in serde_json, `0null` is not two values.
                let end = end.filter(|&end| b.get(end).is_none_or(|&c| ENDS_VALUE[c as usize]));
                match end {
                    Some(end) => end,
                    None => return false,
                }
            }
            _ => return false,
        };
        // A value ended at `end`: close the containers it ends, up to the
        // comma before the next value or the end of a top-level value.
        loop {
            let depth = stack.len();
            if let Some((d, start)) = suppress
                && d == depth
            {
                suppress = None;
                // A null, a boolean or `""` holds nothing secret.
                let whole = &b[start..end];
                if whole != QUOTED_REDACTED.as_bytes() && !schema::keeps_type(whole) {
                    out.push(Span::new(start, end, 1));
                }
            }
            pairs.value_end(depth, end);
            let Some(close) = stack.last() else {
                if LINES && memchr::memchr(b'\n', &b[top..end]).is_some() {
                    return false;
                }
                saw_value = true;
                i = end;
                continue 'value;
            };
            let at = skip_ws(b, end);
            step!(1);
            match b.get(at) {
                Some(b',') if close == b'}' => {
                    match member_key(
                        inner,
                        text,
                        at + 1,
                        &mut objects,
                        stack.len(),
                        suppress.is_none(),
                        out,
                    ) {
                        Some((next, p, r)) => {
                            (i, place, role) = (next, p, r);
                            continue 'value;
                        }
                        None => return false,
                    }
                }
                Some(b',') => {
                    let flagged;
                    (flagged, role) = pairs.list_comma(stack.len());
                    if suppress.is_none() {
                        place = if objects.schema.is_active() {
                            objects.schema.item(stack.len(), flagged)
                        } else if flagged {
                            Place::Whole
                        } else {
                            Place::Normal
                        };
                    }
                    i = at + 1;
                    continue 'value;
                }
                Some(&c) if c == close => {
                    pairs.close(stack.len(), b, out);
                    if objects.keys.is_active() {
                        objects.keys.close(stack.len(), out);
                    }
                    if objects.schema.is_active() {
                        objects.schema.close(stack.len(), at + 1, out);
                    }
                    stack.pop();
                    end = at + 1;
                }
                _ => return false,
            }
        }
    }
}

/// Reads the key of an object member and its colon, from `i` (blanks
/// first): where its value may start, the place of that value, and its
/// role for the pair rules (both decided only when `judge`). A key that
/// the text rules change gets a span that replaces it whole.
#[inline(always)]
fn member_key(
    inner: &Inner,
    text: &str,
    i: usize,
    objects: &mut Objects,
    depth: usize,
    judge: bool,
    out: &mut Vec<Span>,
) -> Option<(usize, Place, Role)> {
    let b = text.as_bytes();
    let i = skip_ws(b, i);
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let s = scan_string(b, i)?;
    let mut after = s.end + 1;
    if b.get(after) != Some(&b':') {
        after = skip_ws(b, after);
        if b.get(after) != Some(&b':') {
            return None;
        }
    }
    if !judge {
        return Some((after + 1, Place::Normal, Role::None));
    }
    let decoded;
    let key = if s.escaped {
        decoded = decode(&b[s.start..s.end], None);
        decoded.as_str()
    } else {
        &text[s.start..s.end]
    };
    let role = pairs::member_role(key.as_bytes());
    let embed = objects.embed;
    let mut learn = |missing| keys::key_facts(inner, key, missing, embed, out);
    let facts = match &mut objects.names {
        Some(names) => names.facts(b, s.start, s.end, NAME | SECRET, learn),
        None => {
            step!(s.end - s.start + 1);
            learn(NAME | SECRET)
        }
    };
    let redact = facts & NAME != 0;
    if facts & SECRET != 0 {
        objects.keys.replaced(depth, out.len(), key);
        out.push(Span::new(i, s.end + 1, 1));
    } else if key.starts_with("[REDACTED")
        && let Some(n) = keys::placeholder_number(key)
    {
        objects.keys.held(depth, n);
    }
    let place = match objects.schema.kind(depth) {
        Kind::Normal if redact => Place::Def,
        Kind::Normal => Place::Normal,
        _ => objects.schema.member(key),
    };
    Some((after + 1, place, role))
}

/// Pushes the spans found inside the string value `s` of `text`.
fn string_value(inner: &Inner, text: &str, s: &Str, embed: u8, out: &mut Vec<Span>) {
    let raw = &text.as_bytes()[s.start..s.end];
    if !s.escaped {
        let content = &text[s.start..s.end];
        if !inner.text_rules && !looks_like_json(content) {
            return;
        }
        let mark = out.len();
        scan_any(inner, content, embed + 1, false, out);
        for span in &mut out[mark..] {
            *span = span.nested(span.start + s.start, span.end + s.start);
        }
        return;
    }
    let decoded = decode(raw, None);
    if !inner.text_rules && !looks_like_json(&decoded) {
        return;
    }
    let mut found = Vec::new();
    scan_any(inner, &decoded, embed + 1, false, &mut found);
    if found.is_empty() {
        return;
    }
    let mut map = Vec::with_capacity(decoded.len() + 1);
    decode(raw, Some(&mut map));
    for span in &found {
        if let (Some(&a), Some(&z)) = (map.get(span.start), map.get(span.end)) {
            out.push(span.nested(s.start + a, s.start + z));
        }
    }
}

#[cfg(test)]
mod tests;

//! Field-name rules: which names hold credentials or session ids.
//!
//! A name is looked at twice: as written (lowercased, split only at separators
//! such as `_`, `-`, `.`), so `passWord` reads as `password`; and split into
//! words (camelCase including `ABCWord`, letters and digits apart), so
//! `apiKey` reads as `api key`. Nothing here allocates.

/// Words that make a name a credential name when one of them appears as a word.
const WORDS: &[&[u8]] = &[
    b"auth",
    b"authorization",
    b"token",
    b"secret",
    b"password",
    b"passwd",
    b"credential",
    b"credentials",
    b"key",
    b"apikey",
    b"signature",
    b"cookie",
    b"jwt",
    b"passphrase",
    b"pass",
    b"pwd",
];

/// Names that describe a credential without holding one, written without
/// separators and lowercased: `tokenType`, `token_type` and `TOKEN-TYPE` are
/// all `tokentype`. Their values still go through the text rules.
const KEPT: &[&[u8]] = &[
    b"tokentype",
    b"authtype",
    b"authmethod",
    b"authurl",
    b"authuri",
    b"authorizationurl",
    b"authorizationendpoint",
    b"authendpoint",
    b"tokenurl",
    b"tokenuri",
    b"tokenendpoint",
    b"keyid",
    b"kid",
    b"privatekeyid",
    b"keytype",
    b"publickey",
    b"primarykey",
    b"foreignkey",
    b"cachekey",
    b"sortkey",
    b"partitionkey",
    b"idempotencykey",
    b"pagetoken",
    b"nextpagetoken",
    b"prevpagetoken",
    b"previouspagetoken",
    b"maxtokens",
    b"tokencount",
    b"tokenlimit",
    b"inputtokens",
    b"outputtokens",
    b"totaltokens",
];

/// The longest name in [`KEPT`].
const KEPT_LEN: usize = 21;

/// Whether a name is one of [`KEPT`], separators and case aside.
fn is_kept(name: &[u8]) -> bool {
    crate::step!(name.len());
    let mut compact = [0u8; KEPT_LEN];
    let mut n = 0;
    for &c in name {
        if c.is_ascii_alphanumeric() {
            if n == KEPT_LEN {
                return false;
            }
            compact[n] = c.to_ascii_lowercase();
            n += 1;
        } else if c >= 0x80 {
            return false;
        }
    }
    KEPT.contains(&&compact[..n])
}

/// Endings that make a word a credential word (`accesstoken`, `x-csrftoken`).
const ENDINGS: &[&[u8]] = &[b"token", b"secret", b"password", b"passwd", b"apikey"];

fn is_separator(c: u8) -> bool {
    c < 0x80 && !c.is_ascii_alphanumeric()
}

fn ends_with_ci(word: &[u8], end: &[u8]) -> bool {
    word.len() >= end.len() && word[word.len() - end.len()..].eq_ignore_ascii_case(end)
}

fn is_credential_word(word: &[u8]) -> bool {
    WORDS.iter().any(|w| word.eq_ignore_ascii_case(w))
        || ENDINGS.iter().any(|e| ends_with_ci(word, e))
}

/// Calls `f` with each separator-delimited segment of `name`, as written.
fn for_each_segment(name: &[u8], mut f: impl FnMut(&[u8]) -> bool) -> bool {
    name.split(|&c| is_separator(c))
        .filter(|s| !s.is_empty())
        .any(|s| {
            crate::step!(s.len() + 1);
            f(s)
        })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Upper,
    Lower,
    Digit,
    Other,
}

fn kind(c: u8) -> Kind {
    if c.is_ascii_uppercase() {
        Kind::Upper
    } else if c.is_ascii_lowercase() {
        Kind::Lower
    } else if c.is_ascii_digit() {
        Kind::Digit
    } else {
        Kind::Other
    }
}

/// Calls `f` with each camelCase / digit word of one segment, stopping when `f`
/// returns true.
fn for_each_word(segment: &[u8], mut f: impl FnMut(&[u8]) -> bool) -> bool {
    let mut start = 0;
    for i in 1..segment.len() {
        crate::step!(1);
        let (prev, cur) = (kind(segment[i - 1]), kind(segment[i]));
        let next = segment.get(i + 1).map(|&c| kind(c));
        let boundary = match (prev, cur) {
            (Kind::Lower, Kind::Upper) => true,
            // `ABCWord`: the last capital of a run starts the next word.
            (Kind::Upper, Kind::Upper) => next == Some(Kind::Lower),
            (Kind::Digit, Kind::Upper | Kind::Lower) | (Kind::Upper | Kind::Lower, Kind::Digit) => {
                true
            }
            _ => false,
        };
        if boundary {
            if f(&segment[start..i]) {
                return true;
            }
            start = i;
        }
    }
    start < segment.len() && f(&segment[start..])
}

/// Whether a field name names a credential, so that its value must be hidden.
///
/// The name matches when, taken as written (lowercased) or split into words
/// (camelCase including `ABCWord`, snake_case, kebab-case, dots), it holds one
/// of the words auth, authorization, token, secret, password, passwd, pass,
/// pwd, credential, credentials, key, apikey, signature, cookie, jwt,
/// passphrase, or a word ending in token, secret, password, passwd or apikey;
/// and it is not one of the names that describe a credential without holding
/// one (`tokenType`, `authMethod`, `tokenUrl`, `token_endpoint`, `keyId`,
/// `publicKey`, `primaryKey`, `cacheKey`, `idempotencyKey`, `pageToken`,
/// `nextPageToken`, …), whatever their separators and case.
///
/// ```
/// use calltape_redact::is_credential_name;
/// for name in ["apiKey", "x-api-key", "accesstoken", "passWord", "X-AuthToken", "set-cookie"] {
///     assert!(is_credential_name(name), "{name}");
/// }
/// for name in ["maxTokens", "tokenizer", "author", "monkey", "keyboard", "token_type", "keyId"] {
///     assert!(!is_credential_name(name), "{name}");
/// }
/// ```
pub fn is_credential_name(name: &str) -> bool {
    is_credential_bytes(name.as_bytes())
}

/// Whether the lowercased name holds one of the stems every credential or
/// session id word contains. Most names fail this cheap test, and only names
/// that pass it are split into words.
fn may_match(name: &[u8]) -> bool {
    crate::step!(name.len());
    let at = |i: usize, stem: &[u8]| {
        name.len() - i >= stem.len() && name[i..i + stem.len()].eq_ignore_ascii_case(stem)
    };
    (0..name.len()).any(|i| match name[i] | 0x20 {
        b'a' => at(i, b"auth"),
        b't' => at(i, b"token"),
        b's' => at(i, b"secret") || at(i, b"signature") || at(i, b"session"),
        b'p' => at(i, b"pass") || at(i, b"pwd"),
        b'c' => at(i, b"credential") || at(i, b"cookie"),
        b'k' => at(i, b"key"),
        b'j' => at(i, b"jwt"),
        _ => false,
    })
}

/// Whether a name is a credential or session id name, on its bytes.
pub(crate) fn is_default_redacted(name: &[u8]) -> bool {
    may_match(name) && !is_kept(name) && (credential_words(name) || session_id_words(name))
}

/// [`is_credential_name`] on the bytes of a name.
fn is_credential_bytes(name: &[u8]) -> bool {
    may_match(name) && !is_kept(name) && credential_words(name)
}

fn credential_words(name: &[u8]) -> bool {
    for_each_segment(name, is_credential_word)
        || for_each_segment(name, |segment| for_each_word(segment, is_credential_word))
}

/// Whether a field name names a session id (`sessionId`, `session_id`,
/// `mcp-session-id`, `x-…-session-id`, `sessionid`).
///
/// ```
/// use calltape_redact::is_session_id_name;
/// assert!(is_session_id_name("Mcp-Session-Id"));
/// assert!(!is_session_id_name("session"));
/// ```
pub fn is_session_id_name(name: &str) -> bool {
    is_session_id_bytes(name.as_bytes())
}

/// [`is_session_id_name`] on the bytes of a name.
fn is_session_id_bytes(name: &[u8]) -> bool {
    may_match(name) && session_id_words(name)
}

fn session_id_words(name: &[u8]) -> bool {
    if for_each_segment(name, |s| s.eq_ignore_ascii_case(b"sessionid")) {
        return true;
    }
    // "session" immediately followed by "id", across separators and camelCase.
    let mut after_session = false;
    for_each_segment(name, |segment| {
        for_each_word(segment, |word| {
            if after_session && word.eq_ignore_ascii_case(b"id") {
                return true;
            }
            after_session = word.eq_ignore_ascii_case(b"session");
            word.eq_ignore_ascii_case(b"sessionid")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_segment(s.as_bytes(), |seg| {
            for_each_word(seg, |w| {
                out.push(String::from_utf8_lossy(w).into_owned());
                false
            })
        });
        out
    }

    #[test]
    fn splits_camel_case_snake_kebab_and_dots() {
        assert_eq!(words("apiKey"), ["api", "Key"]);
        assert_eq!(words("APIKey"), ["API", "Key"]);
        assert_eq!(words("XMLHttpRequest"), ["XML", "Http", "Request"]);
        assert_eq!(
            words("x-hub-signature-256"),
            ["x", "hub", "signature", "256"]
        );
        assert_eq!(words("a.b_c-d"), ["a", "b", "c", "d"]);
        assert_eq!(words("oauth2Token"), ["oauth", "2", "Token"]);
        assert_eq!(words("ABC"), ["ABC"]);
        assert_eq!(words("__"), Vec::<String>::new());
    }

    #[test]
    fn kept_names_fit_the_compact_buffer() {
        assert!(KEPT.iter().all(|k| k.len() <= KEPT_LEN));
        assert!(KEPT.iter().any(|k| k.len() == KEPT_LEN));
        assert!(is_kept(b"NEXT_PAGE_TOKEN") && is_kept(b"authorization-endpoint"));
        assert!(!is_kept(b"page") && !is_kept(b"authorizationendpointx"));
    }

    #[test]
    fn session_id_needs_id_right_after_session() {
        assert!(is_session_id_name("sessionId"));
        assert!(is_session_id_name("SESSION_ID"));
        assert!(is_session_id_name("x-acme-session-id"));
        assert!(is_session_id_name("SessionID"));
        assert!(!is_session_id_name("session-name-id"));
        assert!(!is_session_id_name("sessions"));
    }
}

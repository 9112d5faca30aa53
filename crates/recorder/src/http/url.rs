//! The pieces of a URL as the redaction rules see them: a path's segments and a query's names and
//! values, each percent-decoded before it is checked, so `ke%79=` is the name `key`.

use std::borrow::Cow;

/// `text` with `%XX` escapes decoded (and `+` as a space when `plus_is_space`); invalid UTF-8 is
/// replaced, an incomplete escape kept as written. Borrowed when there is nothing to decode.
pub(crate) fn percent_decode(text: &str, plus_is_space: bool) -> Cow<'_, str> {
    let escaped = text.contains('%') || (plus_is_space && text.contains('+'));
    if !escaped {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                match (hex_value(bytes[i + 1]), hex_value(bytes[i + 2])) {
                    (Some(hi), Some(lo)) => {
                        out.push(hi << 4 | lo);
                        i += 3;
                    }
                    _ => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// `url` without the user info of its authority (`https://user:token@host/v1` is
/// `https://host/v1`): a password or a token there must not reach a cassette, a report or a log.
/// Borrowed when there is none; text that is not a `scheme://` URL comes back as it is.
///
/// ```
/// use calltape_recorder::http::without_userinfo;
///
/// assert_eq!(without_userinfo("https://bob:s3cret@api.example.com/v1?x=1"), "https://api.example.com/v1?x=1");
/// assert_eq!(without_userinfo("https://tok_123@api.example.com"), "https://api.example.com");
/// assert_eq!(without_userinfo("https://api.example.com/a@b"), "https://api.example.com/a@b");
/// ```
pub fn without_userinfo(url: &str) -> Cow<'_, str> {
    let Some(scheme_end) = url.find("://") else {
        return Cow::Borrowed(url);
    };
    let scheme = &url.as_bytes()[..scheme_end];
    let is_scheme = scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'));
    if !is_scheme {
        return Cow::Borrowed(url);
    }
    let start = scheme_end + 3;
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@') {
        Some(at) => Cow::Owned(format!("{}{}", &url[..start], &url[start + at + 1..])),
        None => Cow::Borrowed(url),
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// An absolute `http(s)://` URL split into what comes before its path (scheme and authority), the
/// path, the query (without `?`) and the fragment (without `#`).
pub(crate) struct UrlParts<'a> {
    pub(crate) origin: &'a str,
    pub(crate) path: &'a str,
    pub(crate) query: Option<&'a str>,
    pub(crate) fragment: Option<&'a str>,
}

impl<'a> UrlParts<'a> {
    /// The parts of `text` when it is an absolute http or https URL.
    pub(crate) fn parse(text: &'a str) -> Option<Self> {
        let scheme_end = text.find("://")?;
        let scheme = &text[..scheme_end];
        if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
            return None;
        }
        let (rest, fragment) = match text.split_once('#') {
            Some((r, f)) => (r, Some(f)),
            None => (text, None),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let after_scheme = scheme_end + 3;
        let path_start = rest[after_scheme..]
            .find('/')
            .map_or(rest.len(), |i| after_scheme + i);
        Some(Self {
            origin: &rest[..path_start],
            path: &rest[path_start..],
            query,
            fragment,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_table() {
        let table = [
            ("ke%79", false, "key"),
            ("api%5Fkey", false, "api_key"),
            ("a+b", true, "a b"),
            ("a+b", false, "a+b"),
            ("100%", false, "100%"),
            ("%zz%4", false, "%zz%4"),
            ("%e2%82%ac", false, "€"),
            ("%ff", false, "\u{fffd}"),
            ("plain", true, "plain"),
        ];
        for (text, plus, expected) in table {
            assert_eq!(percent_decode(text, plus), expected, "{text}");
        }
    }

    #[test]
    fn user_info_is_stripped_from_urls_and_nothing_else() {
        let table = [
            (
                "https://user:tok@api.example.com/v1/x",
                "https://api.example.com/v1/x",
            ),
            ("https://tok@api.example.com", "https://api.example.com"),
            ("http://a:b@c@host:8080?q=1", "http://host:8080?q=1"),
            ("https://u:p@host#frag@x", "https://host#frag@x"),
            ("https://host/path@x?y=a@b", "https://host/path@x?y=a@b"),
            ("https://host", "https://host"),
            ("not a url user@host", "not a url user@host"),
            ("x=https://u:p@host", "x=https://u:p@host"),
            ("", ""),
        ];
        for (url, want) in table {
            assert_eq!(without_userinfo(url), want, "{url}");
        }
    }

    #[test]
    fn urls_split_into_parts() {
        let u = UrlParts::parse("https://u:p@h.example:8/a/b?x=1&y#frag").unwrap();
        assert_eq!(
            (u.origin, u.path, u.query, u.fragment),
            (
                "https://u:p@h.example:8",
                "/a/b",
                Some("x=1&y"),
                Some("frag")
            )
        );
        let u = UrlParts::parse("http://h.example?x=1").unwrap();
        assert_eq!(
            (u.origin, u.path, u.query),
            ("http://h.example", "", Some("x=1"))
        );
        assert!(UrlParts::parse("/relative?x=1").is_none());
        assert!(UrlParts::parse("ftp://h/x").is_none());
    }
}

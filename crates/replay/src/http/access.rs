//! Who gets past the front door: the answer to a refused request, and the per-run path prefix.

use http::{HeaderValue, StatusCode};

use super::response::{HttpResponse, full};
use crate::error::{ErrorKind, Result};

/// A plain-text refusal for a request that reached no upstream; clients must not retry it.
pub(crate) fn refuse(status: StatusCode, text: &str) -> HttpResponse {
    let mut resp = hyper::Response::new(full(format!("calltape: {text}\n")));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert("x-should-retry", HeaderValue::from_static("false"));
    resp
}

/// The path after the per-run prefix `/<token>`, or `None` when the request does not carry it.
pub(crate) fn strip_path_token<'a>(path: &'a str, token: &str) -> Option<&'a str> {
    let rest = path.strip_prefix('/')?;
    let (first, after) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    // Compared without an early exit, so the time taken says nothing about how much was right.
    let same = first.len() == token.len()
        && first
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    same.then_some(if after.is_empty() { "/" } else { after })
}

/// `ct-` and 128 random bits in hex.
pub(crate) fn random_path_token() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(ErrorKind::Random)?;
    let mut token = String::from("ct-");
    for b in bytes {
        token.push_str(&format!("{b:02x}"));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_token_is_the_whole_first_segment() {
        let token = "ct-00112233445566778899aabbccddeeff";
        let table = [
            (
                "/ct-00112233445566778899aabbccddeeff/openai/v1",
                Some("/openai/v1"),
            ),
            ("/ct-00112233445566778899aabbccddeeff", Some("/")),
            ("/ct-00112233445566778899aabbccddeeff/", Some("/")),
            ("/ct-00112233445566778899aabbccddeeffX/openai", None),
            ("/ct-00112233445566778899aabbccddeefe/openai", None),
            ("/ct-00112233445566778899aabbccddeeff", Some("/")),
            ("/openai/ct-00112233445566778899aabbccddeeff/v1", None),
            ("/openai/v1", None),
            ("/", None),
            ("", None),
        ];
        for (path, expected) in table {
            assert_eq!(strip_path_token(path, token), expected, "{path}");
        }
    }
}

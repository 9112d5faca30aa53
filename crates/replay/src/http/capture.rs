//! Turning HTTP messages into cassette records: header allow- and drop-lists, body classification,
//! content decoding (gzip, deflate, br, zstd).

use std::collections::BTreeMap;
use std::io::Write;

use calltape_recorder::http::{Blob, Body, Request};
use http::HeaderMap;
use serde_json::{Value, json};

/// Request headers that change answers; the only ones stored and keyed.
pub(crate) const KEY_HEADERS: &[&str] = &["anthropic-version", "anthropic-beta", "openai-beta"];

/// Request headers whose values are credentials the proxy learns and scrubs.
pub(crate) const AUTH_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
];

/// Headers that describe the transfer, not the content; never stored, never copied to the client.
pub(crate) const HOP_HEADERS: &[&str] = &[
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
];

pub(crate) fn name_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// The media type of a content-type value, lower case, without parameters.
pub(crate) fn mime(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Parses a raw query string into sorted pairs (kept as sent, not percent-decoded).
pub(crate) fn parse_query(query: Option<&str>) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (p.to_owned(), String::new()),
        })
        .collect();
    pairs.sort();
    pairs
}

/// The stored request headers: the allow-list and the content type (its media type only, so multipart
/// boundaries never reach the key).
pub(crate) fn request_headers(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for name in KEY_HEADERS {
        let values: Vec<&str> = headers
            .get_all(*name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        if !values.is_empty() {
            out.insert((*name).to_owned(), values.join(","));
        }
    }
    if let Some(ct) = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        let m = mime(ct);
        if !m.is_empty() {
            out.insert("content-type".to_owned(), m);
        }
    }
    out
}

/// Classifies a decoded body by its content type: JSON as JSON, text as text, the rest as a blob.
pub(crate) fn classify_body(content_type: Option<&str>, data: &[u8]) -> Body {
    if data.is_empty() {
        return Body::Empty;
    }
    let ct = content_type.unwrap_or("");
    let m = mime(ct);
    let jsonish = m.is_empty() || m.contains("json");
    if let Some(v) = jsonish
        .then(|| serde_json::from_slice::<Value>(data).ok())
        .flatten()
    {
        return Body::Json(v);
    }
    let textual = m.is_empty()
        || m.starts_with("text/")
        || m.contains("json")
        || m.contains("xml")
        || m == "application/x-www-form-urlencoded"
        || m == "application/javascript";
    if let Some(s) = textual.then(|| std::str::from_utf8(data).ok()).flatten() {
        return Body::Text(s.to_owned());
    }
    let ct = if m.is_empty() {
        "application/octet-stream".to_owned()
    } else {
        m
    };
    Body::Binary(Blob::new(ct, data.to_vec()))
}

/// A request body as stored: multipart bodies become a JSON summary of their parts (names, file names,
/// types, text values, and a SHA-256 and size for files), so the random boundary never matters.
pub(crate) fn request_body(content_type: Option<&str>, data: &[u8]) -> Body {
    let ct = content_type.unwrap_or("");
    if let Some(summary) = (mime(ct) == "multipart/form-data")
        .then(|| multipart_summary(ct, data))
        .flatten()
    {
        return Body::Json(summary);
    }
    classify_body(content_type, data)
}

fn multipart_summary(content_type: &str, data: &[u8]) -> Option<Value> {
    let boundary = content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        k.eq_ignore_ascii_case("boundary")
            .then(|| v.trim_matches('"').to_owned())
    })?;
    let delim = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut rest = data;
    let first = find(rest, delim.as_bytes())?;
    rest = &rest[first + delim.len()..];
    loop {
        if rest.starts_with(b"--") {
            break;
        }
        let rest_start = rest.strip_prefix(b"\r\n").unwrap_or(rest);
        let next = find(rest_start, delim.as_bytes())?;
        let mut part = &rest_start[..next];
        part = part.strip_suffix(b"\r\n").unwrap_or(part);
        let header_end = find(part, b"\r\n\r\n")?;
        let head = std::str::from_utf8(&part[..header_end]).ok()?;
        let content = &part[header_end + 4..];
        let mut entry = serde_json::Map::new();
        for line in head.split("\r\n") {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let name = name.trim().to_ascii_lowercase();
            if name == "content-disposition" {
                for p in value.split(';').skip(1) {
                    if let Some((k, v)) = p.trim().split_once('=') {
                        entry.insert(k.trim().to_owned(), v.trim().trim_matches('"').into());
                    }
                }
            } else if name == "content-type" {
                entry.insert("type".into(), mime(value).into());
            }
        }
        let is_file = entry.contains_key("filename");
        match std::str::from_utf8(content) {
            Ok(text) if !is_file => {
                entry.insert("value".into(), text.into());
            }
            _ => {
                let blob = Blob::new("application/octet-stream", content.to_vec());
                entry.insert("sha256".into(), blob.sha256().into());
                entry.insert("size".into(), content.len().into());
            }
        }
        parts.push(Value::Object(entry));
        rest = &rest_start[next + delim.len()..];
    }
    Some(json!({ "multipart": parts }))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Builds the (unredacted) request record; the key is filled in later.
pub(crate) fn request_record(
    method: &http::Method,
    upstream: &str,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
) -> Request {
    let ct = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    Request {
        method: method.as_str().to_ascii_uppercase(),
        upstream: upstream.to_owned(),
        path: path.to_owned(),
        query: parse_query(query),
        headers: request_headers(headers),
        body: request_body(ct, body),
        key: String::new(),
        seq: 0,
    }
}

/// Incremental decoder for a `content-encoding`.
pub(crate) enum Decoder {
    Identity,
    Gzip(Box<flate2::write::MultiGzDecoder<Vec<u8>>>),
    Deflate(Box<Deflate>),
    Brotli(Box<brotli_decompressor::DecompressorWriter<Vec<u8>>>),
    Zstd(Box<zstd::stream::write::Decoder<'static, Vec<u8>>>),
}

impl Decoder {
    /// A decoder for the encoding named in the header value, or an error naming an unsupported one.
    pub(crate) fn for_encoding(encoding: Option<&str>) -> Result<Self, String> {
        let enc = encoding.unwrap_or("").trim().to_ascii_lowercase();
        Ok(match enc.as_str() {
            "" | "identity" => Self::Identity,
            "gzip" | "x-gzip" => {
                Self::Gzip(Box::new(flate2::write::MultiGzDecoder::new(Vec::new())))
            }
            "deflate" => Self::Deflate(Box::new(Deflate::Sniffing(Vec::new()))),
            "br" => Self::Brotli(Box::new(brotli_decompressor::DecompressorWriter::new(
                Vec::new(),
                4096,
            ))),
            "zstd" => Self::Zstd(Box::new(
                zstd::stream::write::Decoder::new(Vec::new())
                    .map_err(|e| format!("cannot start a zstd decoder: {e}"))?,
            )),
            other => return Err(format!("unsupported content-encoding {other:?}")),
        })
    }

    /// Feeds encoded bytes; returns the decoded bytes available so far.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> std::io::Result<Vec<u8>> {
        match self {
            Self::Identity => Ok(chunk.to_vec()),
            Self::Gzip(d) => {
                d.write_all(chunk)?;
                d.flush()?;
                Ok(std::mem::take(d.get_mut()))
            }
            Self::Deflate(d) => d.feed(chunk),
            Self::Brotli(d) => {
                d.write_all(chunk)?;
                d.flush()?;
                Ok(std::mem::take(d.get_mut()))
            }
            Self::Zstd(d) => {
                d.write_all(chunk)?;
                d.flush()?;
                Ok(std::mem::take(d.get_mut()))
            }
        }
    }

    /// Ends the input; returns any decoded bytes still held.
    pub(crate) fn finish(self) -> std::io::Result<Vec<u8>> {
        match self {
            Self::Identity => Ok(Vec::new()),
            Self::Gzip(d) => d.finish(),
            Self::Deflate(d) => d.finish(),
            Self::Brotli(d) => d.into_inner().map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "brotli stream cut short")
            }),
            // An error when the input does not end on a complete frame.
            Self::Zstd(d) => d.finish(),
        }
    }
}

/// `deflate` as servers send it: zlib-wrapped as the HTTP spec says, or (commonly) raw; the first two
/// bytes tell which.
pub(crate) enum Deflate {
    Sniffing(Vec<u8>),
    Zlib(flate2::write::ZlibDecoder<Vec<u8>>),
    Raw(flate2::write::DeflateDecoder<Vec<u8>>),
}

impl Deflate {
    fn feed(&mut self, chunk: &[u8]) -> std::io::Result<Vec<u8>> {
        if let Self::Sniffing(head) = self {
            head.extend_from_slice(chunk);
            if head.len() < 2 {
                return Ok(Vec::new());
            }
            let head = std::mem::take(head);
            *self = Self::start(&head);
            return self.feed(&head);
        }
        match self {
            Self::Zlib(d) => {
                d.write_all(chunk)?;
                d.flush()?;
                Ok(std::mem::take(d.get_mut()))
            }
            Self::Raw(d) => {
                d.write_all(chunk)?;
                d.flush()?;
                Ok(std::mem::take(d.get_mut()))
            }
            Self::Sniffing(_) => unreachable!("handled above"),
        }
    }

    /// The decoder for a stream starting with `head` (at least two bytes).
    fn start(head: &[u8]) -> Self {
        let (cmf, flg) = (u16::from(head[0]), u16::from(head[1]));
        if cmf & 0x0f == 8 && (cmf << 8 | flg) % 31 == 0 {
            Self::Zlib(flate2::write::ZlibDecoder::new(Vec::new()))
        } else {
            Self::Raw(flate2::write::DeflateDecoder::new(Vec::new()))
        }
    }

    fn finish(self) -> std::io::Result<Vec<u8>> {
        match self {
            Self::Sniffing(head) if head.is_empty() => Ok(Vec::new()),
            Self::Sniffing(head) => {
                let mut d = flate2::write::DeflateDecoder::new(Vec::new());
                d.write_all(&head)?;
                d.finish()
            }
            Self::Zlib(d) => d.finish(),
            Self::Raw(d) => d.finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deflate_is_decoded_zlib_wrapped_or_raw() {
        let text =
            b"{\"object\":\"list\",\"data\":[]} and more text to compress, compress, compress";
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(text).unwrap();
        let mut r = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        r.write_all(text).unwrap();
        for encoded in [z.finish().unwrap(), r.finish().unwrap()] {
            for size in [1, 2, 5, 1000] {
                let mut d = Decoder::for_encoding(Some("deflate")).unwrap();
                let mut out = Vec::new();
                for chunk in encoded.chunks(size) {
                    out.extend(d.feed(chunk).unwrap());
                }
                out.extend(d.finish().unwrap());
                assert_eq!(out, text, "chunks of {size}");
            }
        }
    }

    #[test]
    fn gzip_is_decoded_incrementally() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(b"hello, world").unwrap();
        let gz = enc.finish().unwrap();
        let mut d = Decoder::for_encoding(Some("gzip")).unwrap();
        let mut out = Vec::new();
        for chunk in gz.chunks(3) {
            out.extend(d.feed(chunk).unwrap());
        }
        out.extend(d.finish().unwrap());
        assert_eq!(out, b"hello, world");
        assert!(Decoder::for_encoding(Some("compress")).is_err());
    }

    #[test]
    fn zstd_is_decoded_incrementally() {
        let text =
            b"{\"object\":\"list\"} and more text to compress, compress, compress".repeat(50);
        let encoded = zstd::encode_all(&text[..], 3).unwrap();
        for size in [1, 7, 100_000] {
            let mut d = Decoder::for_encoding(Some("zstd")).unwrap();
            let mut out = Vec::new();
            for chunk in encoded.chunks(size) {
                out.extend(d.feed(chunk).unwrap());
            }
            out.extend(d.finish().unwrap());
            assert_eq!(out, text, "chunks of {size}");
        }
        let mut d = Decoder::for_encoding(Some("zstd")).unwrap();
        let cut = d.feed(&encoded[..encoded.len() / 2]).unwrap();
        assert!(cut.len() < text.len());
        assert!(d.finish().is_err(), "a frame cut short is an error");
    }

    #[test]
    fn multipart_boundaries_do_not_matter() {
        let body = |b: &str| {
            format!(
                "--{b}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n\
                 --{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\
                 Content-Type: audio/wav\r\n\r\nRIFF\x01\x02\r\n--{b}--\r\n"
            )
        };
        let a = request_body(
            Some("multipart/form-data; boundary=aaa"),
            body("aaa").as_bytes(),
        );
        let b = request_body(
            Some("multipart/form-data; boundary=bbb"),
            body("bbb").as_bytes(),
        );
        assert_eq!(a, b);
        let Body::Json(v) = a else {
            panic!("not json: {a:?}")
        };
        assert_eq!(v["multipart"][0]["value"], "whisper-1");
        assert_eq!(v["multipart"][1]["filename"], "a.wav");
        assert_eq!(v["multipart"][1]["size"], 6);
    }

    #[test]
    fn bodies_are_classified_by_content_type() {
        assert!(matches!(
            classify_body(Some("application/json"), b"{\"a\":1}"),
            Body::Json(_)
        ));
        assert!(matches!(
            classify_body(Some("text/plain"), b"hi"),
            Body::Text(_)
        ));
        assert!(matches!(
            classify_body(Some("application/json"), b"not json"),
            Body::Text(_)
        ));
        assert!(matches!(
            classify_body(Some("audio/wav"), b"RIFF"),
            Body::Binary(_)
        ));
        assert!(matches!(classify_body(Some("audio/wav"), b""), Body::Empty));
    }
}

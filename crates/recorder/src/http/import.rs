//! Importing recordings made by other tools.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::Path;

use serde_json::Value;

use super::model::{
    Blob, Body, Cassette, Content, Interaction, Meta, Request, Response, Stream, StreamEnd,
    StreamEvent, StreamFormat, bucket_delay,
};
use super::normalize::Normalizer;
use super::scrub::Scrubber;
use crate::error::{Error, Result};

/// Response headers a cassette keeps (`prefix*` matches a prefix): the content type, what tells a
/// client to wait, and the providers' request ids. Every other header is dropped unless the recorder
/// is told to keep it, and a kept value is still redacted.
pub const KEPT_RESPONSE_HEADERS: &[&str] = &[
    "content-type",
    "retry-after",
    "x-ratelimit-*",
    "anthropic-ratelimit-*",
    // OpenAI's and Anthropic's request ids.
    "x-request-id",
    "request-id",
];

/// Whether a response header is on [`KEPT_RESPONSE_HEADERS`].
pub fn is_kept_response_header(name: &str) -> bool {
    super::volatile::on_header_list(KEPT_RESPONSE_HEADERS, name)
}

/// The upstream name used for a well-known API host.
fn upstream_for_host(host: &str) -> String {
    match host {
        "api.openai.com" => "openai".into(),
        "api.anthropic.com" => "anthropic".into(),
        "generativelanguage.googleapis.com" => "google".into(),
        "openrouter.ai" => "openrouter".into(),
        other => other.replace(['.', ':'], "-"),
    }
}

/// Converts one recording file of Mastra's LLM recorder (`{meta, recordings}`, or the older plain
/// array) into a cassette: URLs become upstream names and paths, streamed chunks become events with
/// their delays, binary artifacts are read from beside the file, and everything is redacted and keyed
/// as if it had been recorded by the proxy.
pub fn import_mastra(
    file: &Path,
    normalizer: &Normalizer,
    scrubber: &Scrubber,
) -> Result<Cassette> {
    let text = fs::read_to_string(file).map_err(|e| Error::io(file, "cannot read", e))?;
    let root: Value = serde_json::from_str(&text)
        .map_err(|e| Error::parse(file, e.line(), format!("not valid JSON: {e}")))?;
    let recordings = match &root {
        Value::Array(items) => items,
        Value::Object(m) => match m.get("recordings") {
            Some(Value::Array(items)) => items,
            _ => return Err(Error::parse(file, 1, "expected a `recordings` array")),
        },
        _ => return Err(Error::parse(file, 1, "expected an object or an array")),
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut cassette = Cassette::new(Meta {
        normalizer: normalizer.fingerprint().to_owned(),
        redaction: scrubber.fingerprint(),
    });
    let mut seqs: HashMap<String, u32> = HashMap::new();
    for (i, rec) in recordings.iter().enumerate() {
        let err = |m: &str| Error::parse(file, 1, format!("recording {i}: {m}"));
        let req = rec.get("request").ok_or_else(|| err("missing `request`"))?;
        let res = rec
            .get("response")
            .ok_or_else(|| err("missing `response`"))?;
        let mut request = mastra_request(req, &err)?;
        scrubber.scrub_request(&mut request);
        request.key = normalizer.key(&request);
        let seq = seqs.entry(request.key.clone()).or_default();
        request.seq = *seq;
        *seq += 1;
        let mut response = mastra_response(res, dir, scrubber, &err)?;
        scrubber.scrub_response(&mut response);
        cassette
            .interactions
            .push(Interaction { request, response });
    }
    Ok(cassette)
}

/// One recording's request as the proxy would have seen it, before redaction and keying.
fn mastra_request(req: &Value, err: &dyn Fn(&str) -> Error) -> Result<Request> {
    let url = req
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| err("missing `request.url`"))?;
    let after_scheme = url.split_once("://").map_or(url, |(_, r)| r);
    let (host, path_query) = after_scheme
        .split_once('/')
        .map_or((after_scheme, ""), |(h, p)| (h, p));
    let (path, query) = path_query.split_once('?').unwrap_or((path_query, ""));
    let mut query: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect();
    query.sort();
    let body = match req.get("body") {
        None | Some(Value::Null) => Body::Empty,
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => Body::Json(v),
            _ => Body::Text(s.clone()),
        },
        Some(v) => Body::Json(v.clone()),
    };
    let mut headers = BTreeMap::new();
    if matches!(body, Body::Json(_)) {
        headers.insert("content-type".to_owned(), "application/json".to_owned());
    }
    Ok(Request {
        method: req
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("POST")
            .to_ascii_uppercase(),
        upstream: upstream_for_host(host),
        path: format!("/{path}"),
        query,
        headers,
        body,
        key: String::new(),
        seq: 0,
    })
}

/// One recording's response, before redaction: kept headers, and a body, a stream of events or a
/// binary artifact read from beside the recordings file.
fn mastra_response(
    res: &Value,
    dir: &Path,
    scrubber: &Scrubber,
    err: &dyn Fn(&str) -> Error,
) -> Result<Response> {
    let status = res
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or(200);
    let mut headers: Vec<(String, String)> = res
        .get("headers")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(k, _)| is_kept_response_header(k) && !scrubber.is_secret_name(k))
                .filter_map(|(k, v)| v.as_str().map(|v| (k.to_ascii_lowercase(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    headers.sort();
    let content_type = headers
        .iter()
        .find(|(k, _)| k == "content-type")
        .map(|(_, v)| v.to_ascii_lowercase())
        .unwrap_or_default();
    let streaming = res
        .get("isStreaming")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let content = if let Some(artifact) = res.get("binaryArtifact").filter(|a| a.is_object()) {
        Content::Body(Body::Binary(mastra_artifact(artifact, dir, err)?))
    } else if streaming {
        let chunks: Vec<&str> = res
            .get("chunks")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let timings: Vec<u64> = res
            .get("chunkTimings")
            .and_then(Value::as_array)
            .map(|t| t.iter().map(|v| v.as_u64().unwrap_or(0)).collect())
            .unwrap_or_default();
        if content_type.contains("event-stream") {
            Content::Stream(split_chunks(&chunks, &timings))
        } else {
            Content::Body(Body::Text(chunks.concat()))
        }
    } else {
        Content::Body(match res.get("body") {
            None | Some(Value::Null) => Body::Empty,
            Some(Value::String(s)) => Body::Text(s.clone()),
            Some(v) => Body::Json(v.clone()),
        })
    };
    Ok(Response {
        status,
        headers,
        content,
    })
}

/// A binary artifact's bytes, read from a path inside the recordings folder only.
fn mastra_artifact(artifact: &Value, dir: &Path, err: &dyn Fn(&str) -> Error) -> Result<Blob> {
    let rel = artifact
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| err("binaryArtifact without a path"))?;
    let safe = !rel.is_empty()
        && !rel.starts_with('/')
        && !rel.contains('\\')
        && rel
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..");
    if !safe {
        return Err(err(&format!(
            "binaryArtifact path {rel:?} leaves the recordings folder; refusing to read it"
        )));
    }
    let data = fs::read(dir.join(rel)).map_err(|e| Error::io(&dir.join(rel), "cannot read", e))?;
    let ct = artifact
        .get("contentType")
        .and_then(Value::as_str)
        .unwrap_or("application/octet-stream");
    Ok(Blob::new(ct, data))
}

/// Cuts network chunks into SSE events; an event's delay is the time of the chunks up to the one
/// that completed it.
fn split_chunks(chunks: &[&str], timings: &[u64]) -> Stream {
    let mut events = Vec::new();
    let mut buf = String::new();
    let mut pending_delay = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        pending_delay += timings.get(i).copied().unwrap_or(0);
        buf.push_str(chunk);
        while let Some(end) = buf.find("\n\n") {
            let raw: String = buf.drain(..end + 2).collect();
            events.push(StreamEvent::from_raw(
                StreamFormat::Sse,
                &raw,
                bucket_delay(pending_delay),
            ));
            pending_delay = 0;
        }
    }
    let end = if buf.is_empty() {
        StreamEnd::Clean
    } else {
        events.push(StreamEvent::from_raw(
            StreamFormat::Sse,
            &buf,
            bucket_delay(pending_delay),
        ));
        StreamEnd::Truncated
    };
    Stream {
        format: StreamFormat::Sse,
        events,
        end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_mastra_file_becomes_a_cassette() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a1-response.wav"), b"RIFFdata").unwrap();
        let file = dir.path().join("suite.json");
        let doc = json!({
            "meta": {"name": "suite", "createdAt": "2026-01-01T00:00:00Z"},
            "recordings": [
                {"hash": "h1", "request": {"url": "https://api.openai.com/v1/chat/completions", "method": "POST",
                    "body": {"model": "gpt-4o", "messages": [], "api_key": "leak"}, "timestamp": 1},
                 "response": {"status": 200, "statusText": "OK",
                    "headers": {"content-type": "application/json", "set-cookie": "x", "x-request-id": "r", "x-session-hint": "h"},
                    "body": {"id": "c1"}, "isStreaming": false}},
                {"hash": "h2", "request": {"url": "https://api.anthropic.com/v1/messages", "method": "POST", "body": {"stream": true}, "timestamp": 2},
                 "response": {"status": 200, "headers": {"content-type": "text/event-stream"},
                    "chunks": ["event: ping\ndata: {}\n", "\nevent: message_stop\ndata: {}\n\n"], "chunkTimings": [30, 12],
                    "isStreaming": true}},
                {"hash": "h3", "request": {"url": "https://api.openai.com/v1/audio/speech?x=1", "method": "POST", "body": {"input": "hi"}, "timestamp": 3},
                 "response": {"status": 200, "headers": {"content-type": "audio/wav"},
                    "body": {"__binary": true, "contentType": "audio/wav", "size": 8},
                    "binaryArtifact": {"path": "a1-response.wav", "contentType": "audio/wav", "size": 8}, "isStreaming": false}}
            ]
        });
        fs::write(&file, doc.to_string()).unwrap();
        let c = import_mastra(&file, &Normalizer::new(), &Scrubber::new()).unwrap();
        assert_eq!(c.interactions.len(), 3);
        let first = &c.interactions[0];
        assert_eq!(
            (first.request.upstream.as_str(), first.request.path.as_str()),
            ("openai", "/v1/chat/completions")
        );
        assert_eq!(
            first.request.body,
            Body::Json(json!({"model": "gpt-4o", "messages": [], "api_key": "[REDACTED]"}))
        );
        assert_eq!(
            first.response.headers,
            vec![
                ("content-type".to_owned(), "application/json".to_owned()),
                ("x-request-id".to_owned(), "r".to_owned())
            ],
            "only allow-listed headers are kept"
        );
        let Content::Stream(s) = &c.interactions[1].response.content else {
            panic!("not a stream")
        };
        assert_eq!(s.events.len(), 2);
        assert_eq!((s.events[0].delay_ms, s.events[1].delay_ms), (40, 0));
        assert_eq!(s.events[1].event.as_deref(), Some("message_stop"));
        let third = &c.interactions[2];
        assert_eq!(third.request.query, vec![("x".to_owned(), "1".to_owned())]);
        assert!(
            matches!(&third.response.content, Content::Body(Body::Binary(b)) if &*b.data == b"RIFFdata")
        );

        let escape = json!([{"request": {"url": "https://api.openai.com/v1/x", "method": "POST"},
            "response": {"status": 200, "binaryArtifact": {"path": "../secret.wav"}}}]);
        fs::write(&file, escape.to_string()).unwrap();
        let e = import_mastra(&file, &Normalizer::new(), &Scrubber::new()).unwrap_err();
        assert!(
            e.to_string().contains("leaves the recordings folder"),
            "{e}"
        );
    }
}

//! Importing recordings made by other tools.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::Value;

use super::model::{
    Blob, Body, Cassette, Content, Interaction, Meta, Request, Response, Stream, StreamEnd,
    StreamEvent, StreamFormat, bucket_delay,
};
use super::normalize::Normalizer;
use super::scrub::Scrubber;
use super::url::without_userinfo;
use crate::error::{Error, ErrorKind, Result};

/// The largest recordings file [`import_mastra`] reads (256 MiB): it is parsed whole.
pub const MAX_IMPORT_FILE: u64 = 256 << 20;

/// The largest binary artifact [`import_mastra`] reads (64 MiB, as much as the proxy takes of a
/// request body).
pub const MAX_IMPORT_ARTIFACT: u64 = 64 << 20;

/// A file of another recorder's recordings, converted.
#[derive(Debug)]
#[non_exhaustive]
pub struct Imported {
    /// The cassette of the recordings that could be imported.
    pub cassette: Cassette,
    /// Each recording that could not be imported ([`ErrorKind::NotImported`]), naming it and why.
    pub skipped: Vec<Error>,
}

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
/// array) into a cassette: URLs become upstream names and paths (without their user info), streamed
/// chunks become events with their delays, binary artifacts are read from beside the file, and
/// everything is redacted and keyed as if it had been recorded by the proxy.
///
/// The file and its artifacts are read only as regular files inside the file's folder, never
/// through a symbolic link, and at most [`MAX_IMPORT_FILE`] and [`MAX_IMPORT_ARTIFACT`] bytes.
/// A recording that cannot be imported (an artifact missing, a link, too large; a recording
/// without its request) is left out and named in [`Imported::skipped`]; the others are imported.
/// Fails when the file itself cannot be read or is not such a file.
pub fn import_mastra(
    file: &Path,
    normalizer: &Normalizer,
    scrubber: &Scrubber,
) -> Result<Imported> {
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = file
        .file_name()
        .ok_or_else(|| Error::parse(file, 1, "not a file name"))?;
    let bytes = calltape_jsonl_store::fs::read_within(dir, name, MAX_IMPORT_FILE)
        .map_err(ErrorKind::Store)?;
    let root: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::parse(file, e.line(), format!("not valid JSON: {e}")))?;
    let recordings = match &root {
        Value::Array(items) => items,
        Value::Object(m) => match m.get("recordings") {
            Some(Value::Array(items)) => items,
            _ => return Err(Error::parse(file, 1, "expected a `recordings` array")),
        },
        _ => return Err(Error::parse(file, 1, "expected an object or an array")),
    };
    let mut cassette = Cassette::new(Meta {
        normalizer: normalizer.fingerprint().to_owned(),
        redaction: scrubber.fingerprint(),
    });
    let mut skipped = Vec::new();
    let mut seqs: HashMap<String, u32> = HashMap::new();
    for (i, rec) in recordings.iter().enumerate() {
        let skip = |request: Option<&Request>, reason: String| -> Error {
            ErrorKind::NotImported {
                path: file.to_owned(),
                recording: match request {
                    Some(r) => format!("recordings[{i}] ({} {} {})", r.method, r.upstream, r.path),
                    None => format!("recordings[{i}]"),
                },
                reason,
            }
            .into()
        };
        let (Some(req), Some(res)) = (rec.get("request"), rec.get("response")) else {
            skipped.push(skip(None, "it has no `request` or no `response`".into()));
            continue;
        };
        let mut request = match mastra_request(req) {
            Ok(request) => request,
            Err(reason) => {
                skipped.push(skip(None, reason));
                continue;
            }
        };
        scrubber.scrub_request(&mut request);
        let mut response = match mastra_response(res, dir, scrubber) {
            Ok(response) => response,
            Err(reason) => {
                skipped.push(skip(Some(&request), reason));
                continue;
            }
        };
        request.key = normalizer.key(&request);
        let seq = seqs.entry(request.key.clone()).or_default();
        request.seq = *seq;
        *seq += 1;
        scrubber.scrub_response(&mut response);
        cassette
            .interactions
            .push(Interaction { request, response });
    }
    Ok(Imported { cassette, skipped })
}

/// One recording's request as the proxy would have seen it, before redaction and keying; why not
/// when it cannot be.
fn mastra_request(req: &Value) -> Result<Request, String> {
    let url = req
        .get("url")
        .and_then(Value::as_str)
        .ok_or("its request has no `url`")?;
    // The user info of a URL (`https://user:token@host`) goes: it would be the upstream's name.
    let url = without_userinfo(url);
    let after_scheme = url.split_once("://").map_or(&*url, |(_, r)| r);
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
/// binary artifact read from beside the recordings file; why not when it cannot be.
fn mastra_response(res: &Value, dir: &Path, scrubber: &Scrubber) -> Result<Response, String> {
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
        Content::Body(Body::Binary(mastra_artifact(artifact, dir)?))
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

/// A binary artifact's bytes, read from a regular file inside the recordings folder only, never
/// through a link, and at most [`MAX_IMPORT_ARTIFACT`] bytes.
fn mastra_artifact(artifact: &Value, dir: &Path) -> Result<Blob, String> {
    let rel = artifact
        .get("path")
        .and_then(Value::as_str)
        .ok_or("its binaryArtifact has no path")?;
    let safe = !rel.is_empty()
        && !rel.starts_with('/')
        && !rel.contains('\\')
        && rel
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..");
    if !safe {
        return Err(format!(
            "its binaryArtifact path {rel:?} leaves the recordings folder; refusing to read it"
        ));
    }
    let data = calltape_jsonl_store::fs::read_within(dir, rel, MAX_IMPORT_ARTIFACT)
        .map_err(|e| format!("its binaryArtifact cannot be read: {e}"))?;
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
    use std::fs;

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
        let imported = import_mastra(&file, &Normalizer::new(), &Scrubber::new()).unwrap();
        assert!(imported.skipped.is_empty(), "{:?}", imported.skipped);
        let c = imported.cassette;
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
    }

    #[test]
    fn a_recording_that_cannot_be_imported_is_named_and_the_others_are_imported() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("__recordings__");
        fs::create_dir_all(dir.join("audio")).unwrap();
        fs::write(dir.join("audio/ok.wav"), b"RIFFok").unwrap();
        fs::write(root.path().join("outside.wav"), b"RIFFoutside").unwrap();
        fs::create_dir(root.path().join("elsewhere")).unwrap();
        fs::write(root.path().join("elsewhere/b.wav"), b"RIFFelsewhere").unwrap();
        #[cfg(unix)]
        {
            let link =
                |target: &Path, at: &str| std::os::unix::fs::symlink(target, dir.join(at)).unwrap();
            link(Path::new("/dev/zero"), "zero.wav");
            link(&root.path().join("outside.wav"), "outside.wav");
            link(&root.path().join("elsewhere"), "linked");
        }
        let big = fs::File::create(dir.join("big.wav")).unwrap();
        big.set_len(MAX_IMPORT_ARTIFACT + 1).unwrap();
        // (the artifact's path, or none for a recording without a request; the start of why it is
        // left out, or none when it is imported)
        let mut rows: Vec<(Option<&str>, Option<&str>)> = vec![(Some("audio/ok.wav"), None)];
        // The links, where the test can plant them.
        #[cfg(unix)]
        rows.extend([
            (
                Some("zero.wav"),
                Some("its binaryArtifact cannot be read: "),
            ),
            (
                Some("outside.wav"),
                Some("its binaryArtifact cannot be read: "),
            ),
            (
                Some("linked/b.wav"),
                Some("its binaryArtifact cannot be read: "),
            ),
        ]);
        rows.extend([
            (
                Some("missing.wav"),
                Some("its binaryArtifact cannot be read: "),
            ),
            (Some("big.wav"), Some("its binaryArtifact cannot be read: ")),
            (Some("audio"), Some("its binaryArtifact cannot be read: ")),
            (
                Some("../outside.wav"),
                Some("its binaryArtifact path \"../outside.wav\" leaves"),
            ),
            (None, Some("it has no `request` or no `response`")),
        ]);
        let recordings: Vec<Value> = rows
            .iter()
            .enumerate()
            .map(|(i, (artifact, _))| match artifact {
                Some(path) => json!({
                    "request": {"url": format!("https://api.openai.com/v1/audio/speech?n={i}"), "method": "POST"},
                    "response": {"status": 200, "headers": {"content-type": "audio/wav"},
                        "binaryArtifact": {"path": path, "contentType": "audio/wav"}}
                }),
                None => json!({"response": {"status": 200}}),
            })
            .collect();
        let file = dir.join("suite.json");
        fs::write(&file, json!({"recordings": recordings}).to_string()).unwrap();
        let imported = import_mastra(&file, &Normalizer::new(), &Scrubber::new()).unwrap();
        let c = &imported.cassette;
        assert_eq!(c.interactions.len(), 1);
        assert!(
            matches!(&c.interactions[0].response.content, Content::Body(Body::Binary(b)) if &*b.data == b"RIFFok")
        );
        let skipped: Vec<String> = imported.skipped.iter().map(ToString::to_string).collect();
        let left_out: Vec<(usize, &str)> = rows
            .iter()
            .enumerate()
            .filter_map(|(i, (_, why))| why.map(|why| (i, why)))
            .collect();
        assert_eq!(skipped.len(), left_out.len(), "{skipped:#?}");
        for ((i, why), message) in left_out.iter().zip(&skipped) {
            let named = match rows[*i].0 {
                Some(_) => format!(
                    "{}: recordings[{i}] (POST openai /v1/audio/speech) was not imported: {why}",
                    file.display()
                ),
                None => format!(
                    "{}: recordings[{i}] was not imported: {why}",
                    file.display()
                ),
            };
            assert!(message.starts_with(&named), "{message}\nwant {named}");
            assert!(!message.contains("RIFF"), "{message}");
        }
        // Links are named as links, never read through.
        #[cfg(unix)]
        for (i, path) in [(1, "zero.wav"), (2, "outside.wav"), (3, "linked")] {
            assert!(
                skipped[i - 1]
                    .contains(&format!("{}: is a symbolic link", dir.join(path).display())),
                "{}",
                skipped[i - 1]
            );
        }
    }

    #[test]
    fn user_info_in_a_url_reaches_no_upstream_name_and_no_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("suite.json");
        let doc = json!([
            {"request": {"url": "https://bob:s3cr3t-t0k3n@api.openai.com/v1/chat/completions", "method": "POST"},
             "response": {"status": 200, "body": {"id": "c1"}}},
            {"request": {"url": "https://t0k3n-only-user@llm.internal.example:8443/v1/x", "method": "POST"},
             "response": {"status": 200, "body": {"id": "c2"}}},
        ]);
        fs::write(&file, doc.to_string()).unwrap();
        let imported = import_mastra(&file, &Normalizer::new(), &Scrubber::new()).unwrap();
        let requests: Vec<(&str, &str)> = imported
            .cassette
            .interactions
            .iter()
            .map(|i| (i.request.upstream.as_str(), i.request.path.as_str()))
            .collect();
        assert_eq!(
            requests,
            [
                ("openai", "/v1/chat/completions"),
                ("llm-internal-example-8443", "/v1/x")
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_recordings_file_is_read_only_as_a_regular_file_never_through_a_link() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("__recordings__");
        fs::create_dir(&dir).unwrap();
        fs::write(root.path().join("real.json"), "[]").unwrap();
        std::os::unix::fs::symlink(root.path().join("real.json"), dir.join("linked.json")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.json")).unwrap();
        for name in ["linked.json", "zero.json"] {
            let e =
                import_mastra(&dir.join(name), &Normalizer::new(), &Scrubber::new()).unwrap_err();
            assert!(e.to_string().contains("is a symbolic link"), "{e}");
        }
    }
}

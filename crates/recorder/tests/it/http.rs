//! The cassette format end to end: files on disk, sidecars, determinism, the secret guard.

use std::collections::BTreeMap;
use std::fs;

use calltape_recorder::ErrorKind;
use calltape_recorder::http::{
    Blob, Body, Cassette, Content, Interaction, Meta, Normalizer, Request, Response, SaveOutcome,
    Scrubber, Stream, StreamEnd, StreamEvent, StreamFormat, blobs_dir, scan_file,
};
use serde_json::json;

const KEY: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz012345";

fn request(n: &Normalizer, s: &Scrubber, body: serde_json::Value, seq: u32) -> Request {
    let mut r = Request {
        method: "POST".into(),
        upstream: "openai".into(),
        path: "/v1/chat/completions".into(),
        query: vec![],
        headers: BTreeMap::from([("content-type".into(), "application/json".into())]),
        body: Body::Json(body),
        key: String::new(),
        seq,
    };
    s.scrub_request(&mut r);
    r.key = n.key(&r);
    r
}

fn sse(events: &[&str]) -> Content {
    Content::Stream(Stream {
        format: StreamFormat::Sse,
        events: events
            .iter()
            .map(|raw| StreamEvent::from_raw(StreamFormat::Sse, raw, 10))
            .collect(),
        end: StreamEnd::Clean,
    })
}

fn sample(s: &Scrubber) -> Vec<Interaction> {
    let n = Normalizer::new();
    vec![
        Interaction {
            request: request(&n, s, json!({"model": "m", "stream": true}), 0),
            response: Response {
                status: 200,
                headers: vec![("content-type".into(), "text/event-stream".into())],
                content: sse(&["data: {\"a\":1}\n\n", "data: [DONE]\n\n"]),
            },
        },
        Interaction {
            request: request(&n, s, json!({"model": "m", "input": "hi"}), 0),
            response: Response {
                status: 200,
                headers: vec![("content-type".into(), "audio/wav".into())],
                content: Content::Body(Body::Binary(Blob::new(
                    "audio/wav",
                    b"RIFF0000WAVE".to_vec(),
                ))),
            },
        },
        Interaction {
            request: request(&n, s, json!({"model": "m", "input": "hi"}), 1),
            response: Response {
                status: 429,
                headers: vec![],
                content: Content::Body(Body::Text("slow down".into())),
            },
        },
    ]
}

fn meta(s: &Scrubber) -> Meta {
    Meta {
        normalizer: Normalizer::new().fingerprint().into(),
        redaction: s.fingerprint(),
    }
}

#[test]
fn order_of_recording_never_changes_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let s = Scrubber::new();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    let mut forward = Cassette::new(meta(&s));
    forward.interactions = sample(&s);
    let mut backward = forward.clone();
    backward.interactions.reverse();
    forward.save(&a, &s).unwrap();
    backward.save(&b, &s).unwrap();
    // The blob reference names the cassette file, so compare with the name swapped.
    let ta = fs::read_to_string(&a)
        .unwrap()
        .replace("a.jsonl.blobs", "X");
    let tb = fs::read_to_string(&b)
        .unwrap()
        .replace("b.jsonl.blobs", "X");
    assert_eq!(ta, tb);
    assert!(ta.lines().next().unwrap().starts_with(r#"{"normalizer":"#));
    assert!(!ta.contains("\"at\""), "no wall-clock time in a cassette");
}

#[test]
fn round_trip_with_sidecars_and_no_leftovers() {
    let dir = tempfile::tempdir().unwrap();
    let s = Scrubber::new();
    let path = dir.path().join("chat.jsonl");
    let mut c = Cassette::new(meta(&s));
    c.interactions = sample(&s);
    assert_eq!(c.save(&path, &s).unwrap().outcome, SaveOutcome::Written);
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    assert_eq!(c.save(&path, &s).unwrap().outcome, SaveOutcome::Unchanged);
    assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), mtime);

    let blobs: Vec<String> = fs::read_dir(blobs_dir(&path))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(blobs.len(), 1);
    assert!(
        blobs[0].ends_with(".wav") && blobs[0].len() == 64 + 4,
        "{blobs:?}"
    );
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names.len(),
        2,
        "only the cassette and its blob folder: {names:?}"
    );

    let mut back = Cassette::load(&path).unwrap();
    let mut expected = c.clone();
    back.sort_canonical();
    expected.sort_canonical();
    assert_eq!(back, expected);

    // The folder can be moved as a whole.
    let moved = dir.path().join("moved");
    fs::create_dir(&moved).unwrap();
    fs::rename(&path, moved.join("chat.jsonl")).unwrap();
    fs::rename(blobs_dir(&path), blobs_dir(&moved.join("chat.jsonl"))).unwrap();
    assert_eq!(
        Cassette::load(&moved.join("chat.jsonl"))
            .unwrap()
            .interactions
            .len(),
        3
    );

    // Dropping the binary interaction removes its now unreferenced blob.
    let mut fewer = back.clone();
    fewer
        .interactions
        .retain(|i| !matches!(i.response.content, Content::Body(Body::Binary(_))));
    let p2 = moved.join("chat.jsonl");
    fewer.save(&p2, &s).unwrap();
    assert!(!blobs_dir(&p2).exists());
}

#[test]
fn an_interaction_holding_a_secret_that_slipped_through_is_left_out_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    fs::write(&path, "previous\n").unwrap();
    let plain = Scrubber::new();
    let mut c = Cassette::new(meta(&plain));
    c.interactions = sample(&plain);
    // The secret appears in a response the scrubber never saw (it was learnt afterwards), and a
    // provider token as a JSON key in another.
    c.interactions[2].response.content = Content::Body(Body::Text(format!("echo {KEY}")));
    c.interactions[1].response.content = Content::Body(Body::Json(
        serde_json::json!({"ghp_0123456789abcdefghijklmnopqrstuvwxyz": "stored"}),
    ));
    let guard = Scrubber::builder()
        .secret("OPENAI_API_KEY", KEY)
        .build()
        .unwrap();
    let saved = c.save(&path, &guard).unwrap();
    assert_eq!(saved.outcome, SaveOutcome::Written);
    let mut refused: Vec<String> = Vec::new();
    for err in &saved.refused {
        match err.kind() {
            ErrorKind::SecretInLine { what, record, .. } => {
                assert_eq!(record, "res");
                refused.push(what.clone());
            }
            other => panic!("unexpected error {other:?}"),
        }
        assert!(!err.to_string().contains(KEY), "{err}");
        assert!(!err.to_string().contains("ghp_0123"), "{err}");
    }
    refused.sort();
    assert_eq!(
        refused,
        ["a github-pat token", "the value of OPENAI_API_KEY"]
    );
    let text = fs::read_to_string(&path).unwrap();
    assert!(!text.contains(KEY) && !text.contains("ghp_0123"), "{text}");
    assert_eq!(
        Cassette::load(&path).unwrap().interactions.len(),
        c.interactions.len() - 2
    );

    // Scrubbing first makes it writable, and scan agrees the file is clean.
    guard.scrub_interaction(&mut c.interactions[2]);
    c.interactions[1].response.content = Content::Body(Body::Text("ok".into()));
    assert!(c.save(&path, &guard).unwrap().refused.is_empty());
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains("echo [REDACTED]"));
    assert_eq!(scan_file(&path, &guard).unwrap(), vec![]);
}

#[test]
fn request_secrets_are_redacted_before_keying() {
    let s = Scrubber::builder()
        .secret("OPENAI_API_KEY", KEY)
        .build()
        .unwrap();
    let n = Normalizer::new();
    let r = request(
        &n,
        &s,
        json!({"model": "m", "api_key": KEY, "note": format!("key={KEY}")}),
        0,
    );
    let Body::Json(v) = &r.body else { panic!() };
    assert_eq!(v["api_key"], "[REDACTED]");
    assert!(!v.to_string().contains(KEY));
    let other = request(
        &n,
        &s,
        json!({"model": "m", "api_key": "another-value-entirely", "note": format!("key={KEY}")}),
        0,
    );
    assert_eq!(r.key, other.key, "credential values never reach the key");
}

#[test]
fn bad_lines_are_named_with_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    let meta = r#"{"normalizer":"x","redaction":"y","t":"meta","v":1}"#;
    let table = [
        (
            format!("{meta}\n{{\"t\":\"req\",\"method\":1}}\n"),
            "bad.jsonl:2: field `method`: expected a string",
        ),
        (
            format!("{meta}\n{{\"t\":\"nope\"}}\n"),
            "bad.jsonl:2: field `t`: unknown record type \"nope\"",
        ),
        (
            r#"{"normalizer":"x","redaction":"y","t":"meta","v":9}"#.to_owned() + "\n",
            "version 9 is not supported",
        ),
        (
            format!(
                "{meta}\n{{\"t\":\"meta\",\"v\":1,\"normalizer\":\"\",\"redaction\":\"\",\"extra\":1}}\n"
            ),
            "bad.jsonl:2: a second meta record",
        ),
        (
            format!(
                "{meta}\n{{\"key\":\"k\",\"method\":\"GET\",\"path\":\"/\",\"seq\":0,\"t\":\"req\",\"upstream\":\"u\"}}\n{{\"t\":\"res\",\"status\":200,\"body\":{{\"blob\":\"../../etc/passwd\",\"type\":\"x\"}}}}\n"
            ),
            "is not a file inside the cassette's .blobs folder",
        ),
        (
            format!(
                "{meta}\n{{\"key\":\"k\",\"method\":\"GET\",\"path\":\"/\",\"seq\":0,\"t\":\"req\",\"upstream\":\"u\",\"color\":1}}\n"
            ),
            "bad.jsonl:2: unknown field `color`",
        ),
    ];
    for (text, expected) in table {
        fs::write(&path, &text).unwrap();
        let err = Cassette::load(&path).unwrap_err().to_string();
        assert!(
            err.contains(expected),
            "{err:?} should contain {expected:?}"
        );
    }
}

#[test]
fn a_refused_redaction_configuration_keeps_its_source_and_names_no_flag() {
    use std::error::Error as _;
    let error = Scrubber::builder()
        .redact_names(["authorization".to_owned()])
        .keep_names(["authorization".to_owned()])
        .build()
        .unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::Redaction(_)), "{error}");
    let source = error.source().expect("the redactor's error is the source");
    assert!(source.to_string().contains("authorization"), "{source}");
    assert!(!error.to_string().contains("--"), "{error}");
}

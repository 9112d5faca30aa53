//! Fast cassette reading for a server: every line is typed and checked in one pass without building
//! JSON trees, and an interaction's bodies are only parsed when it is asked for.

use std::borrow::Cow;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::file::{LineReader, blob_prefix, blobs_dir, is_blob_file_name};
use super::model::{Cassette, FORMAT_VERSION, Interaction, Meta};
use crate::error::{Error, ErrorKind, Result};

/// A cassette read for serving: its meta line and, per interaction, the match key and sequence number,
/// with the interaction itself built on demand.
///
/// Loading checks every line as strictly as [`Cassette::load`] does (unknown fields, wrong types,
/// misplaced records, blob references that leave the sidecar folder, missing blobs), so a broken file
/// fails at load time; only the work of building bodies is deferred to [`interaction`](Self::interaction).
#[derive(Debug, Clone)]
pub struct CassetteIndex {
    path: PathBuf,
    text: String,
    meta: Meta,
    entries: Vec<Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    key: Key,
    seq: u32,
    /// Byte range of the interaction's lines in the text.
    start: usize,
    end: usize,
    /// 1-based number of its first line.
    line: usize,
}

impl CassetteIndex {
    /// Reads and checks the cassette at `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = fs::read_to_string(path).map_err(|e| Error::io(path, "cannot read", e))?;
        Self::parse(path, text)
    }

    /// Checks cassette text; `path` locates blob files and names the file in errors.
    pub fn parse(path: &Path, text: String) -> Result<Self> {
        match scan(path, &text) {
            Ok((meta, entries)) => Ok(Self {
                path: path.to_path_buf(),
                text,
                meta,
                entries,
            }),
            // The field-by-field reader names the exact field at fault; the fast pass only knows that
            // something is wrong.
            Err(fast) => match Cassette::parse(path, &text) {
                Err(precise) => Err(precise),
                Ok(_) => Err(fast),
            },
        }
    }

    /// The meta line.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// How many interactions the cassette holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cassette holds no interaction.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The stored match key of interaction `index` (in file order).
    pub fn key(&self, index: usize) -> &str {
        match &self.entries[index].key {
            Key::At(start, end) => &self.text[*start..*end],
            Key::Owned(k) => k,
        }
    }

    /// The stored sequence number of interaction `index`.
    pub fn seq(&self, index: usize) -> u32 {
        self.entries[index].seq
    }

    /// Builds interaction `index`: parses its bodies and reads its blobs.
    pub fn interaction(&self, index: usize) -> Result<Interaction> {
        let e = &self.entries[index];
        let mut reader = LineReader::new(&self.path, true);
        for (n, line) in self.text[e.start..e.end].lines().enumerate() {
            reader.line(e.line + n, line)?;
        }
        let (_, mut interactions) = reader.finish(e.line)?;
        match interactions.pop() {
            Some(i) if interactions.is_empty() => Ok(i),
            _ => Err(Error::parse(
                &self.path,
                e.line,
                "expected exactly one interaction here",
            )),
        }
    }

    /// Builds every interaction: the whole cassette.
    pub fn into_cassette(self) -> Result<Cassette> {
        let interactions = (0..self.len())
            .map(|i| self.interaction(i))
            .collect::<Result<_>>()?;
        Ok(Cassette {
            meta: self.meta,
            interactions,
        })
    }
}

/// A key: where it sits in the text, or (when it was written with escapes) its value.
#[derive(Debug, Clone)]
enum Key {
    At(usize, usize),
    Owned(Box<str>),
}

impl Key {
    fn new(text: &str, key: Cow<'_, str>) -> Self {
        match key {
            Cow::Borrowed(k) => {
                let start = (k.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
                let end = start.wrapping_add(k.len());
                match text.get(start..end) {
                    Some(at) if std::ptr::eq(at, k) => Key::At(start, end),
                    _ => Key::Owned(k.into()),
                }
            }
            Cow::Owned(k) => Key::Owned(k.into()),
        }
    }
}

/// One pass over the text: typed lines, structure checks, and the key and position of each interaction.
fn scan(path: &Path, text: &str) -> Result<(Meta, Vec<Entry>)> {
    let prefix = blob_prefix(path);
    let blobs = blobs_dir(path);
    let mut meta: Option<Meta> = None;
    let mut entries = Vec::new();
    // The open interaction: its entry, and whether its response is a stream being read.
    let mut open: Option<Entry> = None;
    let mut in_stream = false;
    let mut offset = 0;
    let mut line_no = 0;
    for raw in text.split_inclusive('\n') {
        let start = offset;
        offset += raw.len();
        line_no += 1;
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let err = |m: &str| Error::parse(path, line_no, m);
        let l: Line<'_> = serde_json::from_str(line).map_err(|e| err(&e.to_string()))?;
        let ty = l.t.0.as_ref();
        if meta.is_none() && ty != "meta" {
            return Err(err("the first record must be a meta record"));
        }
        if in_stream && ty != "ev" && ty != "end" {
            return Err(err("a record inside a stream"));
        }
        let present = l.present();
        let Some(allowed) = allowed_fields(ty, &l) else {
            return Err(err("unknown record type"));
        };
        if let Some(extra) = present.into_iter().flatten().find(|f| !allowed.contains(f)) {
            return Err(err(&format!("unknown field `{extra}`")));
        }
        match ty {
            "meta" => {
                if meta.is_some() {
                    return Err(err("a second meta record"));
                }
                meta = Some(meta_record(path, &l, &err)?);
            }
            "req" => {
                if open.is_some() {
                    return Err(err("a request without a response"));
                }
                if l.method.is_none() || l.upstream.is_none() || l.path.is_none() {
                    return Err(err("missing field"));
                }
                if l.headers.as_ref().is_some_and(|h| *h != Headers::Object) {
                    return Err(err("field `headers`: expected an object"));
                }
                check_body(path, line_no, l.body.as_ref(), &prefix, &blobs)?;
                let seq = l
                    .seq
                    .and_then(|s| u32::try_from(s).ok())
                    .ok_or_else(|| err("field `seq`: missing or out of range"))?;
                let key = l.key.ok_or_else(|| err("missing field `key`"))?.0;
                open = Some(Entry {
                    key: Key::new(text, key),
                    seq,
                    start,
                    end: start,
                    line: line_no,
                });
            }
            "res" => {
                let Some(entry) = open.as_mut().filter(|_| !in_stream) else {
                    return Err(err("a response without a request"));
                };
                if l.status.and_then(|s| u16::try_from(s).ok()).is_none() {
                    return Err(err("field `status`: missing or out of range"));
                }
                if l.headers.as_ref().is_some_and(|h| *h != Headers::Pairs) {
                    return Err(err("field `headers`: expected a list of pairs"));
                }
                match &l.stream {
                    Some(s) if s.0 == "sse" || s.0 == "ndjson" => in_stream = true,
                    Some(_) => return Err(err("field `stream`: unknown stream format")),
                    None => {
                        check_body(path, line_no, l.body.as_ref(), &prefix, &blobs)?;
                        entry.end = offset;
                        entries.extend(open.take());
                    }
                }
            }
            "ev" => {
                if !in_stream {
                    return Err(err("an event outside a stream"));
                }
            }
            "end" => {
                if !in_stream {
                    return Err(err("an end record outside a stream"));
                }
                match l.how.as_ref().map(|h| h.0.as_ref()) {
                    Some("clean" | "truncated") => {}
                    Some("reset") if l.after.is_some() => {}
                    _ => return Err(err("field `how`: unknown stream end")),
                }
                in_stream = false;
                if let Some(mut entry) = open.take() {
                    entry.end = offset;
                    entries.push(entry);
                }
            }
            _ => unreachable!("record types were checked above"),
        }
    }
    if open.is_some() || in_stream {
        return Err(Error::parse(path, line_no, "file cut short"));
    }
    let meta = meta.ok_or_else(|| Error::parse(path, 1, "empty cassette: no meta record"))?;
    Ok((meta, entries))
}

/// The fields a record of type `ty` may hold, or `None` for an unknown type.
fn allowed_fields(ty: &str, l: &Line<'_>) -> Option<&'static [&'static str]> {
    Some(match ty {
        "meta" => &["t", "v", "normalizer", "redaction"],
        "req" => &[
            "t", "key", "seq", "method", "upstream", "path", "query", "headers", "body",
        ],
        "res" if l.stream.is_some() => &["t", "status", "headers", "stream"],
        "res" => &["t", "status", "headers", "body"],
        "ev" => &["t", "d", "event", "id", "data", "raw"],
        "end" if l.how.as_ref().is_some_and(|h| h.0 == "reset") => &["t", "how", "after"],
        "end" => &["t", "how"],
        _ => return None,
    })
}

/// The meta record's fields, refusing a format version this build does not read.
fn meta_record(path: &Path, l: &Line<'_>, err: &dyn Fn(&str) -> Error) -> Result<Meta> {
    let v = l.v.ok_or_else(|| err("missing field `v`"))?;
    if v != FORMAT_VERSION {
        return Err(ErrorKind::Version {
            path: path.to_path_buf(),
            found: v,
        }
        .into());
    }
    Ok(Meta {
        normalizer: l
            .normalizer
            .as_ref()
            .ok_or_else(|| err("missing field"))?
            .0
            .as_ref()
            .into(),
        redaction: l
            .redaction
            .as_ref()
            .ok_or_else(|| err("missing field"))?
            .0
            .as_ref()
            .into(),
    })
}

fn check_body(
    path: &Path,
    line: usize,
    body: Option<&BodyShape<'_>>,
    prefix: &str,
    blobs: &Path,
) -> Result<()> {
    let Some(b) = body else {
        return Ok(());
    };
    let err = |m: &str| Error::parse(path, line, m);
    match (&b.json, &b.text, &b.blob) {
        (Some(_), None, None) | (None, Some(_), None) if b.ty.is_none() && b.size.is_none() => {
            Ok(())
        }
        (None, None, Some(reference)) if b.ty.is_some() => {
            let name = reference
                .0
                .strip_prefix(prefix)
                .filter(|n| is_blob_file_name(n))
                .ok_or_else(|| err("blob reference outside the sidecar folder"))?;
            let file = blobs.join(name);
            // Not followed: a link in the sidecar folder is refused here, as it is when read.
            let meta =
                fs::symlink_metadata(&file).map_err(|e| Error::io(&file, "cannot read blob", e))?;
            if meta.file_type().is_symlink() {
                let refused = calltape_jsonl_store::ErrorKind::Symlink { path: file };
                return Err(ErrorKind::Store(refused.into()).into());
            }
            match b.size {
                Some(size) if size != meta.len() => Err(err("blob size differs")),
                _ => Ok(()),
            }
        }
        _ => Err(err(
            "field `body`: expected one of `json`, `text` or `blob`",
        )),
    }
}

/// Every field any record type may have; which ones a type allows is checked after parsing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    #[serde(borrow)]
    t: Str<'a>,
    #[serde(default, deserialize_with = "present")]
    v: Option<u64>,
    #[serde(borrow, default, deserialize_with = "present")]
    normalizer: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    redaction: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    key: Option<Str<'a>>,
    #[serde(default, deserialize_with = "present")]
    seq: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    method: Option<AnyStr>,
    #[serde(default, deserialize_with = "present")]
    upstream: Option<AnyStr>,
    #[serde(default, deserialize_with = "present")]
    path: Option<AnyStr>,
    #[serde(default, deserialize_with = "present")]
    query: Option<Pairs>,
    #[serde(default, deserialize_with = "present")]
    headers: Option<Headers>,
    #[serde(borrow, default, deserialize_with = "present")]
    body: Option<BodyShape<'a>>,
    #[serde(default, deserialize_with = "present")]
    status: Option<u64>,
    #[serde(borrow, default, deserialize_with = "present")]
    stream: Option<Str<'a>>,
    #[serde(default, deserialize_with = "present")]
    d: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    event: Option<AnyStr>,
    #[serde(default, deserialize_with = "present")]
    id: Option<AnyStr>,
    #[serde(default, deserialize_with = "present")]
    data: Option<AnyStr>,
    #[serde(default, deserialize_with = "present")]
    raw: Option<AnyStr>,
    #[serde(borrow, default, deserialize_with = "present")]
    how: Option<Str<'a>>,
    #[serde(default, deserialize_with = "present")]
    after: Option<u64>,
}

impl Line<'_> {
    /// The names of the fields the line has (besides `t`).
    fn present(&self) -> [Option<&'static str>; 20] {
        let fields = [
            ("v", self.v.is_some()),
            ("normalizer", self.normalizer.is_some()),
            ("redaction", self.redaction.is_some()),
            ("key", self.key.is_some()),
            ("seq", self.seq.is_some()),
            ("method", self.method.is_some()),
            ("upstream", self.upstream.is_some()),
            ("path", self.path.is_some()),
            ("query", self.query.is_some()),
            ("headers", self.headers.is_some()),
            ("body", self.body.is_some()),
            ("status", self.status.is_some()),
            ("stream", self.stream.is_some()),
            ("d", self.d.is_some()),
            ("event", self.event.is_some()),
            ("id", self.id.is_some()),
            ("data", self.data.is_some()),
            ("raw", self.raw.is_some()),
            ("how", self.how.is_some()),
            ("after", self.after.is_some()),
        ];
        fields.map(|(name, set)| set.then_some(name))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BodyShape<'a> {
    #[serde(default, deserialize_with = "present")]
    json: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    text: Option<AnyStr>,
    #[serde(borrow, default, deserialize_with = "present")]
    blob: Option<Str<'a>>,
    #[serde(rename = "type", default, deserialize_with = "present")]
    ty: Option<AnyStr>,
    #[serde(default, deserialize_with = "present")]
    size: Option<u64>,
}

/// A field that is present, even when its value is `null` (which then fails the value's own type,
/// or, for a JSON body, is the body).
fn present<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// A string, borrowed from the line when it has no escapes.
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(
                self,
                v: &'de str,
            ) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A string whose value is not needed now: checked, never copied.
struct AnyStr;

impl<'de> Deserialize<'de> for AnyStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = AnyStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<AnyStr, E> {
                Ok(AnyStr)
            }
        }
        d.deserialize_str(V)
    }
}

/// A list of `[name, value]` string pairs, checked, never copied.
struct Pairs;

impl<'de> Deserialize<'de> for Pairs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Pairs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of [name, value] pairs")
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Pairs, A::Error> {
                while seq.next_element::<(AnyStr, AnyStr)>()?.is_some() {}
                Ok(Pairs)
            }
        }
        d.deserialize_seq(V)
    }
}

/// Headers: an object of strings (requests) or a list of pairs (responses).
#[derive(PartialEq, Eq)]
enum Headers {
    Object,
    Pairs,
}

impl<'de> Deserialize<'de> for Headers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Headers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of strings or a list of [name, value] pairs")
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Headers, A::Error> {
                while seq.next_element::<(AnyStr, AnyStr)>()?.is_some() {}
                Ok(Headers::Pairs)
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Headers, A::Error> {
                while map.next_entry::<AnyStr, AnyStr>()?.is_some() {}
                Ok(Headers::Object)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Body, Content, Request, Response, Scrubber, StreamEvent, StreamFormat};
    use crate::http::{Stream, StreamEnd};
    use serde_json::json;
    use std::collections::BTreeMap;

    fn sample() -> Cassette {
        let req = |text: &str, seq| Request {
            method: "POST".into(),
            upstream: "openai".into(),
            path: "/v1/chat/completions".into(),
            query: vec![("a".into(), "b\"c".into())],
            headers: BTreeMap::from([("content-type".into(), "application/json".into())]),
            body: Body::Json(json!({"messages": [{"content": text}], "n": null})),
            key: format!("k-{text}"),
            seq,
        };
        let events = ["data: 1\n\n", ": ping\n\n", "data: [DONE]\n\n"]
            .iter()
            .map(|r| StreamEvent::from_raw(StreamFormat::Sse, r, 10))
            .collect();
        Cassette {
            meta: Meta {
                normalizer: "n".into(),
                redaction: "r".into(),
            },
            interactions: vec![
                Interaction {
                    request: req("one \u{e9}\n", 0),
                    response: Response {
                        status: 200,
                        headers: vec![("content-type".into(), "application/json".into())],
                        content: Content::Body(Body::Json(json!(null))),
                    },
                },
                Interaction {
                    request: req("two", 3),
                    response: Response {
                        status: 201,
                        headers: vec![],
                        content: Content::Stream(Stream {
                            format: StreamFormat::Sse,
                            events,
                            end: StreamEnd::Reset { after_bytes: 9 },
                        }),
                    },
                },
            ],
        }
    }

    #[test]
    fn the_index_gives_back_what_the_full_reader_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let c = sample();
        c.save(&path, &Scrubber::new()).unwrap();
        let index = CassetteIndex::load(&path).unwrap();
        let full = Cassette::load(&path).unwrap();
        assert_eq!(index.len(), 2);
        assert_eq!(index.meta(), &full.meta);
        for i in 0..index.len() {
            assert_eq!(index.key(i), full.interactions[i].request.key);
            assert_eq!(index.seq(i), full.interactions[i].request.seq);
            assert_eq!(index.interaction(i).unwrap(), full.interactions[i]);
        }
        assert_eq!(index.into_cassette().unwrap(), full);
    }

    #[test]
    fn fields_out_of_place_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let meta = r#"{"normalizer":"x","redaction":"y","t":"meta","v":1}"#;
        let req = r#"{"key":"k","method":"GET","path":"/","seq":0,"t":"req","upstream":"u"}"#;
        let bad = [
            format!(
                "{meta}\n{req}\n{{\"t\":\"res\",\"status\":200,\"stream\":\"sse\",\"body\":{{\"text\":\"x\"}}}}\n{{\"t\":\"end\",\"how\":\"clean\"}}\n"
            ),
            format!("{meta}\n{req}\n{{\"t\":\"res\",\"status\":200,\"how\":\"clean\"}}\n"),
            format!("{meta}\n{req}\n{{\"t\":\"res\",\"status\":70000}}\n"),
            format!("{meta}\n{req}\n{{\"t\":\"res\",\"status\":200,\"body\":null}}\n"),
            format!(
                "{meta}\n{req}\n{{\"t\":\"res\",\"status\":200,\"body\":{{\"json\":1,\"text\":\"a\"}}}}\n"
            ),
            format!(
                "{meta}\n{req}\n{{\"t\":\"res\",\"status\":200,\"stream\":\"sse\"}}\n{{\"t\":\"end\",\"how\":\"clean\",\"after\":3}}\n"
            ),
            format!("{meta}\n{req}\n"),
            format!("{req}\n"),
        ];
        for text in bad {
            assert!(
                CassetteIndex::parse(&path, text.clone()).is_err(),
                "accepted {text}"
            );
            assert!(
                Cassette::parse(&path, &text).is_err(),
                "slow path accepted {text}"
            );
        }
        let good =
            format!("{meta}\n{req}\n{{\"t\":\"res\",\"status\":200,\"body\":{{\"json\":null}}}}\n");
        assert_eq!(CassetteIndex::parse(&path, good).unwrap().len(), 1);
    }
}

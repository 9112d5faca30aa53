//! Reading and writing cassette files: canonical lines, sidecar blobs, atomic replacement.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use calltape_jsonl_store::fs as store_fs;

use serde_json::{Map, Value, json};

use super::canonical::to_canonical_string;
use super::model::{
    Blob, Body, Cassette, Content, FORMAT_VERSION, Interaction, Meta, Request, Response, Stream,
    StreamEnd, StreamEvent, StreamFormat,
};
use super::scrub::Scrubber;
use crate::error::{Error, ErrorKind, Result};

/// The folder holding a cassette's binary sidecars: `<cassette>.blobs` next to it.
pub fn blobs_dir(cassette: &Path) -> PathBuf {
    let mut name = cassette.file_name().unwrap_or_default().to_os_string();
    name.push(".blobs");
    cassette.with_file_name(name)
}

pub(crate) fn blob_prefix(cassette: &Path) -> String {
    format!(
        "{}.blobs/",
        cassette.file_name().unwrap_or_default().to_string_lossy()
    )
}

/// A stream response being read: its request, status and headers, and the events so far.
type OpenStream = (Request, u16, Vec<(String, String)>, Stream);

/// Whether [`Cassette::save`] touched the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveOutcome {
    /// The file already held exactly these bytes; nothing was touched.
    Unchanged,
    /// The file was (re)written.
    Written,
}

/// What [`Cassette::save`] did.
#[derive(Debug)]
#[non_exhaustive]
pub struct Saved {
    /// Whether the file was written.
    pub outcome: SaveOutcome,
    /// The interactions the final gate refused, left out of the file, each as the error that names
    /// it ([`ErrorKind::SecretInLine`] or [`ErrorKind::SecretInBlob`]).
    pub refused: Vec<Error>,
}

impl Cassette {
    /// An empty cassette with the given meta line.
    pub fn new(meta: Meta) -> Self {
        Self {
            meta,
            interactions: Vec::new(),
        }
    }

    /// Reads a cassette and its sidecar blobs. Unknown fields, wrong types and blob references that leave
    /// the sidecar folder are errors naming the file and line.
    pub fn load(path: &Path) -> Result<Self> {
        let text = fs::read_to_string(path).map_err(|e| Error::io(path, "cannot read", e))?;
        Self::parse(path, &text)
    }

    /// Parses cassette text; `path` locates blob files and names the file in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        let mut reader = LineReader::new(path, false);
        for (idx, line) in text.lines().enumerate() {
            reader.line(idx + 1, line)?;
        }
        let (meta, interactions) = reader.finish(text.lines().count())?;
        Ok(Cassette { meta, interactions })
    }

    /// Sorts the interactions into the canonical order: by upstream, path, method, key, then sequence
    /// number. Interleaving of different requests while recording therefore never shows in the file.
    pub fn sort_canonical(&mut self) {
        self.interactions.sort_by(|a, b| {
            let (a, b) = (&a.request, &b.request);
            (&a.upstream, &a.path, &a.method, &a.key, a.seq).cmp(&(
                &b.upstream,
                &b.path,
                &b.method,
                &b.key,
                b.seq,
            ))
        });
    }

    /// The cassette's canonical lines, without newlines, in canonical order, blob references relative
    /// to `path`'s folder.
    pub fn to_lines(&self, path: &Path) -> Vec<String> {
        let prefix = blob_prefix(path);
        let mut sorted = self.clone();
        sorted.sort_canonical();
        let mut lines = Vec::with_capacity(1 + sorted.interactions.len() * 2);
        lines.push(meta_line(&sorted.meta));
        for i in &sorted.interactions {
            lines.extend(interaction_lines(i, &prefix));
        }
        lines
    }

    /// The blobs the cassette references, by sidecar file name.
    pub fn blobs(&self) -> BTreeMap<String, Blob> {
        let mut out = BTreeMap::new();
        for i in &self.interactions {
            for body in [&i.request.body, response_body(&i.response)] {
                if let Body::Binary(b) = body {
                    out.insert(b.file_name(), b.clone());
                }
            }
        }
        out
    }

    /// Writes the cassette to `path` in canonical form.
    ///
    /// Every line and sidecar blob of each interaction first passes `scrubber`'s final gate: an
    /// interaction with a line or a blob that still holds a provider token or a known secret is
    /// left out, nothing of it written, and named in [`Saved::refused`]. Blobs go to
    /// `<path>.blobs/` (unreferenced ones there are removed). The file is replaced atomically (a
    /// temporary file in the same folder, renamed into place), and only when its bytes change.
    pub fn save(&self, path: &Path, scrubber: &Scrubber) -> Result<Saved> {
        let prefix = blob_prefix(path);
        let mut sorted = self.clone();
        sorted.sort_canonical();
        let mut lines = vec![meta_line(&sorted.meta)];
        let mut refused = Vec::new();
        sorted.interactions.retain(|interaction| {
            let these = interaction_lines(interaction, &prefix);
            match gate_interaction(path, interaction, &these, scrubber) {
                Ok(()) => {
                    lines.extend(these);
                    true
                }
                Err(refusal) => {
                    refused.push(refusal);
                    false
                }
            }
        });
        let mut content = lines.join("\n");
        content.push('\n');
        let blobs = sorted.blobs();
        let dir = blobs_dir(path);
        // Before anything is written: stale blobs are removed from this folder below.
        refuse_link(&dir)?;
        write_blobs(&dir, &blobs)?;
        let outcome = match fs::read(path) {
            Ok(existing) if existing == content.as_bytes() => SaveOutcome::Unchanged,
            _ => {
                if let Some(parent) = path.parent() {
                    // calltape-jsonl-store's: missing folders 0700, a link at the path refused.
                    store_fs::create_dir_all(parent).map_err(ErrorKind::Store)?;
                }
                calltape_jsonl_store::rewrite(path, &lines).map_err(ErrorKind::Store)?;
                SaveOutcome::Written
            }
        };
        remove_unreferenced_blobs(&dir, &blobs.keys().cloned().collect())?;
        Ok(Saved { outcome, refused })
    }
}

/// The canonical meta line.
fn meta_line(meta: &Meta) -> String {
    to_canonical_string(&json!({
        "t": "meta",
        "v": FORMAT_VERSION,
        "normalizer": meta.normalizer,
        "redaction": meta.redaction,
    }))
}

/// One interaction's canonical lines, blob references under `prefix`.
pub(crate) fn interaction_lines(i: &Interaction, prefix: &str) -> Vec<String> {
    let mut lines = Vec::with_capacity(2);
    let r = &i.request;
    let mut req = Map::new();
    req.insert("t".into(), "req".into());
    req.insert("key".into(), r.key.clone().into());
    req.insert("seq".into(), r.seq.into());
    req.insert("method".into(), r.method.clone().into());
    req.insert("upstream".into(), r.upstream.clone().into());
    req.insert("path".into(), r.path.clone().into());
    if !r.query.is_empty() {
        req.insert("query".into(), pairs_value(&r.query));
    }
    if !r.headers.is_empty() {
        let h: Map<String, Value> = r
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        req.insert("headers".into(), h.into());
    }
    if let Some(b) = body_value(&r.body, prefix) {
        req.insert("body".into(), b);
    }
    lines.push(to_canonical_string(&req.into()));
    let s = &i.response;
    let mut res = Map::new();
    res.insert("t".into(), "res".into());
    res.insert("status".into(), s.status.into());
    if !s.headers.is_empty() {
        res.insert("headers".into(), pairs_value(&s.headers));
    }
    match &s.content {
        Content::Body(body) => {
            if let Some(b) = body_value(body, prefix) {
                res.insert("body".into(), b);
            }
            lines.push(to_canonical_string(&res.into()));
        }
        Content::Stream(st) => {
            res.insert("stream".into(), st.format.as_str().into());
            lines.push(to_canonical_string(&res.into()));
            for ev in &st.events {
                let mut m = Map::new();
                m.insert("t".into(), "ev".into());
                m.insert("d".into(), ev.delay_ms.into());
                for (name, field) in [
                    ("event", &ev.event),
                    ("id", &ev.id),
                    ("data", &ev.data),
                    ("raw", &ev.raw),
                ] {
                    if let Some(v) = field {
                        m.insert(name.into(), v.clone().into());
                    }
                }
                lines.push(to_canonical_string(&m.into()));
            }
            let end = match st.end {
                StreamEnd::Clean => json!({"t": "end", "how": "clean"}),
                StreamEnd::Truncated => json!({"t": "end", "how": "truncated"}),
                StreamEnd::Reset { after_bytes } => {
                    json!({"t": "end", "how": "reset", "after": after_bytes})
                }
            };
            lines.push(to_canonical_string(&end));
        }
    }
    lines
}

/// The record-by-record reader behind [`Cassette::parse`]: it checks every field of every line and
/// builds owned interactions. The fast index reads files first; this reader builds the interactions it
/// hands out and names the exact field when a line is wrong.
pub(crate) struct LineReader<'p> {
    path: &'p Path,
    prefix: String,
    saw_meta: bool,
    meta: Meta,
    pending: Option<(Request, usize)>,
    stream: Option<OpenStream>,
    interactions: Vec<Interaction>,
}

impl<'p> LineReader<'p> {
    /// A reader of a whole file, or (`inside`) of a run of records after the meta line.
    pub(crate) fn new(path: &'p Path, inside: bool) -> Self {
        Self {
            path,
            prefix: blob_prefix(path),
            saw_meta: inside,
            meta: Meta::default(),
            pending: None,
            stream: None,
            interactions: Vec::new(),
        }
    }

    pub(crate) fn line(&mut self, line_no: usize, line: &str) -> Result<()> {
        let path = self.path;
        if line.trim().is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|e| Error::parse(path, line_no, format!("not valid JSON: {e}")))?;
        let mut f = Fields::new(path, line_no, value)?;
        let t = f.string("t")?;
        if !self.saw_meta && t != "meta" {
            return Err(Error::parse(
                path,
                line_no,
                "the first record must be a meta record",
            ));
        }
        if self.stream.is_some() && t != "ev" && t != "end" {
            return Err(Error::parse(
                path,
                line_no,
                format!("a `{t}` record inside a stream; expected `ev` or `end`"),
            ));
        }
        match t.as_str() {
            "meta" => self.meta_record(f),
            "req" => self.request(f),
            "res" => self.response(f),
            "ev" => self.event(f),
            "end" => self.end(f),
            other => Err(Error::parse(
                path,
                line_no,
                format!("field `t`: unknown record type {other:?}"),
            )),
        }
    }

    fn meta_record(&mut self, mut f: Fields<'_>) -> Result<()> {
        if self.saw_meta {
            return Err(f.err("a second meta record"));
        }
        let v = f.u64("v")?;
        if v != FORMAT_VERSION {
            return Err(ErrorKind::Version {
                path: self.path.to_path_buf(),
                found: v,
            }
            .into());
        }
        self.meta = Meta {
            normalizer: f.string("normalizer")?,
            redaction: f.string("redaction")?,
        };
        f.finish()?;
        self.saw_meta = true;
        Ok(())
    }

    fn request(&mut self, mut f: Fields<'_>) -> Result<()> {
        if self.pending.is_some() {
            return Err(f.err("a request without a response"));
        }
        let query = f.pairs("query")?;
        let headers = match f.take("headers") {
            None => BTreeMap::new(),
            Some(Value::Object(m)) => m
                .into_iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k, s)),
                    _ => Err(f.err(format!("field `headers.{k}`: expected a string"))),
                })
                .collect::<Result<_>>()?,
            Some(_) => return Err(f.err("field `headers`: expected an object")),
        };
        let body = f.body("body", &self.prefix)?;
        let req = Request {
            method: f.string("method")?,
            upstream: f.string("upstream")?,
            path: f.string("path")?,
            query,
            headers,
            body,
            key: f.string("key")?,
            seq: u32::try_from(f.u64("seq")?).map_err(|_| f.err("field `seq`: out of range"))?,
        };
        let line = f.line;
        f.finish()?;
        self.pending = Some((req, line));
        Ok(())
    }

    fn response(&mut self, mut f: Fields<'_>) -> Result<()> {
        let Some((request, _)) = self.pending.take() else {
            return Err(f.err("a response without a request"));
        };
        let status =
            u16::try_from(f.u64("status")?).map_err(|_| f.err("field `status`: out of range"))?;
        let headers = f.pairs("headers")?;
        let Some(format) = f.opt_string("stream")? else {
            let body = f.body("body", &self.prefix)?;
            f.finish()?;
            self.interactions.push(Interaction {
                request,
                response: Response {
                    status,
                    headers,
                    content: Content::Body(body),
                },
            });
            return Ok(());
        };
        let format = match format.as_str() {
            "sse" => StreamFormat::Sse,
            "ndjson" => StreamFormat::Ndjson,
            other => {
                return Err(f.err(format!("field `stream`: unknown stream format {other:?}")));
            }
        };
        f.finish()?;
        let stream = Stream {
            format,
            events: Vec::new(),
            end: StreamEnd::Clean,
        };
        self.stream = Some((request, status, headers, stream));
        Ok(())
    }

    fn event(&mut self, mut f: Fields<'_>) -> Result<()> {
        let Some((_, _, _, s)) = self.stream.as_mut() else {
            return Err(f.err("an event outside a stream"));
        };
        let ev = StreamEvent {
            delay_ms: f.opt_u64("d")?.unwrap_or(0),
            event: f.opt_string("event")?,
            id: f.opt_string("id")?,
            data: f.opt_string("data")?,
            raw: f.opt_string("raw")?,
        };
        f.finish()?;
        s.events.push(ev);
        Ok(())
    }

    fn end(&mut self, mut f: Fields<'_>) -> Result<()> {
        let Some((request, status, headers, mut s)) = self.stream.take() else {
            return Err(f.err("an end record outside a stream"));
        };
        s.end = match f.string("how")?.as_str() {
            "clean" => StreamEnd::Clean,
            "truncated" => StreamEnd::Truncated,
            "reset" => StreamEnd::Reset {
                after_bytes: f.u64("after")?,
            },
            other => {
                return Err(f.err(format!("field `how`: unknown stream end {other:?}")));
            }
        };
        f.finish()?;
        self.interactions.push(Interaction {
            request,
            response: Response {
                status,
                headers,
                content: Content::Stream(s),
            },
        });
        Ok(())
    }

    /// Ends the input (`last_line` is its last line number) and returns what was read.
    pub(crate) fn finish(self, last_line: usize) -> Result<(Meta, Vec<Interaction>)> {
        if let Some((_, line)) = self.pending {
            return Err(Error::parse(
                self.path,
                line,
                "a request without a response (file cut short?)",
            ));
        }
        if self.stream.is_some() {
            return Err(Error::parse(
                self.path,
                last_line,
                "a stream without its end record (file cut short?)",
            ));
        }
        if !self.saw_meta {
            return Err(Error::parse(self.path, 1, "empty cassette: no meta record"));
        }
        Ok((self.meta, self.interactions))
    }
}

/// The final gate on one interaction before anything of it is written to the cassette at `path`:
/// its canonical `lines` (as [`interaction_lines`] gives them) and its sidecar blobs. The error
/// names the interaction and what was found, never the value.
pub(crate) fn gate_interaction(
    path: &Path,
    interaction: &Interaction,
    lines: &[String],
    scrubber: &Scrubber,
) -> Result<()> {
    for line in lines {
        if let Some(hit) = scrubber.check_line(line) {
            return Err(ErrorKind::SecretInLine {
                path: path.to_path_buf(),
                interaction: describe(interaction),
                record: record_type(line),
                what: hit.to_string(),
                column: hit.at(),
            }
            .into());
        }
    }
    scrubber.check_blobs(path, interaction)
}

/// An interaction as errors name it: method, upstream, path and sequence number.
pub(crate) fn describe(interaction: &Interaction) -> String {
    let r = &interaction.request;
    format!("{} {} {} #{}", r.method, r.upstream, r.path, r.seq)
}

/// Writes the sidecar blobs that are not there yet, owner-only in an owner-only folder, each
/// replaced atomically. A blob already there as an owner-only file is kept (its name is its hash); a
/// symbolic link at a blob's path or as the folder is refused.
pub(crate) fn write_blobs(dir: &Path, blobs: &BTreeMap<String, Blob>) -> Result<()> {
    if blobs.is_empty() {
        return Ok(());
    }
    store_fs::private_dir(dir).map_err(ErrorKind::Store)?;
    for (name, blob) in blobs {
        let file = dir.join(name);
        if !is_owner_only_file(&file) {
            store_fs::write_atomic(&file, &blob.data).map_err(ErrorKind::Store)?;
        }
    }
    Ok(())
}

/// Whether `file` is a regular file (not a link) that only its owner can read and write, so that a
/// blob there can be kept as it is.
#[cfg(unix)]
fn is_owner_only_file(file: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    fs::symlink_metadata(file)
        .is_ok_and(|m| m.is_file() && m.mode() & 0o7777 == calltape_jsonl_store::DEFAULT_MODE)
}

/// Whether `file` can be kept as an owner-only blob. Elsewhere than on Unix a file's access is not
/// a mode that std can read, so no file counts as one: each blob is written again, through
/// calltape-jsonl-store's `fs`, which makes it owner-only (the same bytes, as its name is its hash).
#[cfg(not(unix))]
fn is_owner_only_file(_file: &Path) -> bool {
    false
}

/// Reads a sidecar blob, never through a symbolic link: a link planted in the sidecar folder could
/// otherwise serve any file the user can read.
pub(crate) fn read_blob(file: &Path) -> Result<Vec<u8>> {
    store_fs::read(file).map_err(|e| ErrorKind::Store(e).into())
}

fn response_body(r: &Response) -> &Body {
    match &r.content {
        Content::Body(b) => b,
        Content::Stream(_) => &Body::Empty,
    }
}

/// Refuses a symbolic link at `path`: calltape never writes, reads or removes a sidecar through one.
fn refuse_link(path: &Path) -> Result<()> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        let refused = calltape_jsonl_store::ErrorKind::Symlink {
            path: path.to_owned(),
        };
        return Err(ErrorKind::Store(refused.into()).into());
    }
    Ok(())
}

fn remove_unreferenced_blobs(dir: &Path, keep: &BTreeSet<String>) -> Result<()> {
    refuse_link(dir)?;
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(_) => return Ok(()),
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_blob_file_name(&name) && !keep.contains(&name) {
            let p = entry.path();
            fs::remove_file(&p).map_err(|e| Error::io(&p, "cannot remove stale blob", e))?;
        }
    }
    // Only succeeds when empty, which is what we want.
    let _ = fs::remove_dir(dir);
    Ok(())
}

pub(crate) fn is_blob_file_name(name: &str) -> bool {
    let Some((hash, ext)) = name.split_once('.') else {
        return false;
    };
    hash.len() == 64
        && hash
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        && !ext.is_empty()
        && ext.len() <= 8
        && ext
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

fn record_type(line: &str) -> String {
    serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|v| v.get("t").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

fn pairs_value(pairs: &[(String, String)]) -> Value {
    Value::Array(pairs.iter().map(|(k, v)| json!([k, v])).collect())
}

fn body_value(body: &Body, prefix: &str) -> Option<Value> {
    match body {
        Body::Empty => None,
        Body::Json(v) => Some(json!({ "json": v })),
        Body::Text(t) => Some(json!({ "text": t })),
        Body::Binary(b) => Some(json!({
            "blob": format!("{prefix}{}", b.file_name()),
            "type": b.content_type,
            "size": b.data.len(),
        })),
    }
}

/// Field access on one parsed line, with errors that name the file, line and field.
struct Fields<'a> {
    path: &'a Path,
    line: usize,
    map: Map<String, Value>,
}

impl<'a> Fields<'a> {
    fn new(path: &'a Path, line: usize, value: Value) -> Result<Self> {
        match value {
            Value::Object(map) => Ok(Self { path, line, map }),
            _ => Err(Error::parse(path, line, "expected a JSON object")),
        }
    }

    fn err(&self, message: impl Into<String>) -> Error {
        Error::parse(self.path, self.line, message)
    }

    fn take(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name)
    }

    fn string(&mut self, name: &str) -> Result<String> {
        self.opt_string(name)?
            .ok_or_else(|| self.err(format!("missing field `{name}`")))
    }

    fn opt_string(&mut self, name: &str) -> Result<Option<String>> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(format!("field `{name}`: expected a string"))),
        }
    }

    fn u64(&mut self, name: &str) -> Result<u64> {
        self.opt_u64(name)?
            .ok_or_else(|| self.err(format!("missing field `{name}`")))
    }

    fn opt_u64(&mut self, name: &str) -> Result<Option<u64>> {
        match self.take(name) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                self.err(format!("field `{name}`: expected a non-negative integer"))
            }),
        }
    }

    fn pairs(&mut self, name: &str) -> Result<Vec<(String, String)>> {
        let Some(v) = self.take(name) else {
            return Ok(Vec::new());
        };
        let bad = || {
            self.err(format!(
                "field `{name}`: expected a list of [name, value] pairs"
            ))
        };
        let Value::Array(items) = v else {
            return Err(bad());
        };
        items
            .into_iter()
            .map(|item| match item {
                Value::Array(pair) if pair.len() == 2 => match (&pair[0], &pair[1]) {
                    (Value::String(k), Value::String(v)) => Ok((k.clone(), v.clone())),
                    _ => Err(bad()),
                },
                _ => Err(bad()),
            })
            .collect()
    }

    fn body(&mut self, name: &str, prefix: &str) -> Result<Body> {
        let Some(v) = self.take(name) else {
            return Ok(Body::Empty);
        };
        let Value::Object(mut m) = v else {
            return Err(self.err(format!("field `{name}`: expected an object")));
        };
        if let Some(j) = m.remove("json") {
            if !m.is_empty() {
                return Err(self.err(format!("field `{name}`: unexpected fields beside `json`")));
            }
            return Ok(Body::Json(j));
        }
        if let Some(t) = m.remove("text") {
            return match (t, m.is_empty()) {
                (Value::String(t), true) => Ok(Body::Text(t)),
                _ => Err(self.err(format!("field `{name}.text`: expected a string alone"))),
            };
        }
        let reference = match m.remove("blob") {
            Some(Value::String(r)) => r,
            _ => {
                return Err(self.err(format!(
                    "field `{name}`: expected one of `json`, `text` or `blob`"
                )));
            }
        };
        let content_type = match m.remove("type") {
            Some(Value::String(t)) => t,
            _ => return Err(self.err(format!("field `{name}.type`: expected a string"))),
        };
        let size = m.remove("size").and_then(|s| s.as_u64());
        if let Some(k) = m.keys().next() {
            return Err(self.err(format!("field `{name}.{k}`: unknown field")));
        }
        let file_name = reference
            .strip_prefix(prefix)
            .filter(|n| is_blob_file_name(n))
            .ok_or_else(|| -> Error {
                ErrorKind::BlobPath {
                    path: self.path.to_path_buf(),
                    line: self.line,
                    reference: reference.clone(),
                }
                .into()
            })?;
        let file = blobs_dir(self.path).join(file_name);
        let data = read_blob(&file)?;
        if size.is_some_and(|s| s != data.len() as u64) {
            return Err(self.err(format!(
                "field `{name}.size`: blob {file_name} holds {} bytes, not {}",
                data.len(),
                size.unwrap_or(0)
            )));
        }
        Ok(Body::Binary(Blob::new(content_type, data)))
    }

    fn finish(self) -> Result<()> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(k) => Err(self.err(format!("unknown field `{k}`"))),
        }
    }
}

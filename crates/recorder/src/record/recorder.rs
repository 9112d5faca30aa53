//! The recorder: watches a session's frames in both directions and writes one redacted record per
//! answered call.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use calltape_jsonl_store::{JsonlWriter, Options, WriterReport};
use calltape_redact::Redactor;
use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind};
use crate::record::format::{CallRecord, Outcome};
use crate::record::redaction::{redact_name, redact_outcome};
use crate::record::time::{new_session_id, rfc3339_millis};

/// The methods recorded unless told otherwise.
pub const DEFAULT_METHODS: &[&str] = &["tools/call", "resources/read", "prompts/get"];

/// How a [`Recorder`] records: which methods, the file's size cap, and extra redaction names.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecorderOptions {
    /// The JSON-RPC methods recorded; [`DEFAULT_METHODS`] by default.
    pub methods: Vec<String>,
    /// The most bytes the recording may reach on disk; later calls are dropped and reported.
    pub max_bytes: u64,
    /// Field names redacted on top of the built-in credential names.
    pub redact_names: Vec<String>,
    /// Field names never redacted by name, such as `pageToken`.
    pub keep_names: Vec<String>,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        Self {
            methods: DEFAULT_METHODS.iter().map(|m| (*m).to_owned()).collect(),
            max_bytes: calltape_jsonl_store::DEFAULT_MAX_BYTES,
            redact_names: Vec::new(),
            keep_names: Vec::new(),
        }
    }
}

impl RecorderOptions {
    /// Records exactly these methods.
    pub fn methods<I, S>(mut self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.methods = methods.into_iter().map(Into::into).collect();
        self
    }

    /// Caps the recording's size on disk.
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Redacts these field names too.
    pub fn redact_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.redact_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// Never redacts these field names by name.
    pub fn keep_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.keep_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// The redactor these options describe.
    pub fn redactor(&self) -> Result<Redactor, Error> {
        Redactor::builder()
            .redact_names(self.redact_names.iter().map(String::as_str))
            .keep_names(self.keep_names.iter().map(String::as_str))
            .build()
            .map_err(|e| ErrorKind::Redaction(e.to_string()).into())
    }
}

/// Records answered calls to a JSONL file, redacted, without ever blocking or failing the traffic.
///
/// One recorder serves any number of client sessions: [`session`](Recorder::session) starts one and
/// returns the [`SessionRecorder`] that the session's frames are shown to. Cloning is cheap.
#[derive(Debug, Clone)]
pub struct Recorder {
    inner: Arc<Inner>,
}

struct Inner {
    writer: Mutex<Option<JsonlWriter>>,
    redactor: Redactor,
    methods: HashSet<String>,
    /// `"initialize"` and each recorded method as a JSON string: a client frame holding none of them
    /// (and no escape that could spell one) is passed over without being parsed.
    needles: Vec<String>,
    recorded: AtomicU64,
    unanswered: AtomicU64,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("methods", &self.methods)
            .field("recorded", &self.recorded)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Opens `path` for appending (created `0600`; an existing recording is extended) and returns a
    /// recorder writing to it. Must be called within a Tokio runtime.
    ///
    /// Fails only when the redaction names are refused; a file that cannot be written is reported by
    /// [`close`](Recorder::close) (and logged once), never here, so the traffic is never held up.
    pub async fn open(path: impl AsRef<Path>, options: RecorderOptions) -> Result<Self, Error> {
        let redactor = options.redactor()?;
        let writer = JsonlWriter::open(path, Options::default().max_bytes(options.max_bytes)).await;
        Ok(Self {
            inner: Arc::new(Inner {
                writer: Mutex::new(Some(writer)),
                redactor,
                needles: options
                    .methods
                    .iter()
                    .map(String::as_str)
                    .chain(["initialize"])
                    .map(|m| format!("\"{m}\""))
                    .collect(),
                methods: options.methods.into_iter().collect(),
                recorded: AtomicU64::new(0),
                unanswered: AtomicU64::new(0),
            }),
        })
    }

    /// Starts recording a new client session, with a fresh 8-character session id.
    pub fn session(&self) -> SessionRecorder {
        SessionRecorder {
            recorder: self.clone(),
            id: new_session_id(),
            state: Mutex::new(SessionState::default()),
        }
    }

    /// Waits until every recorded call is on disk and returns what was done. Calls recorded after
    /// this are dropped and counted.
    pub async fn close(&self) -> RecorderReport {
        let writer = lock(&self.inner.writer).take();
        let writer = match writer {
            Some(writer) => Some(writer.close().await),
            None => None,
        };
        RecorderReport {
            recorded: self.inner.recorded.load(Ordering::Acquire),
            unanswered: self.inner.unanswered.load(Ordering::Acquire),
            writer,
        }
    }

    fn write(&self, record: &CallRecord) {
        let line = record.to_line();
        if let Some(writer) = lock(&self.inner.writer).as_ref() {
            writer.append_line(line);
            self.inner.recorded.fetch_add(1, Ordering::AcqRel);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a recorder did, returned by [`Recorder::close`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecorderReport {
    /// Calls handed to the writer.
    pub recorded: u64,
    /// Requests whose session ended before they were answered: they have no line.
    pub unanswered: u64,
    /// What the writer did; `None` when the recorder had already been closed.
    pub writer: Option<WriterReport>,
}

impl RecorderReport {
    /// Whether every recorded call reached the file.
    pub fn is_complete(&self) -> bool {
        self.writer.as_ref().is_none_or(WriterReport::is_complete)
    }
}

impl fmt::Display for RecorderReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.recorded == 1 { "" } else { "s" };
        match &self.writer {
            Some(writer) => write!(f, "recorded {} call{s}; {writer}", self.recorded)?,
            None => write!(f, "recorded {} call{s}", self.recorded)?,
        }
        if self.unanswered > 0 {
            write!(
                f,
                "; {} unanswered at the end, not recorded",
                self.unanswered
            )?;
        }
        if let Some(error) = self.writer.as_ref().and_then(|w| w.first_error.as_ref()) {
            write!(f, "; first error: {error}")?;
        }
        Ok(())
    }
}

/// One client session's side of a [`Recorder`]: show it every frame the client sends and every frame
/// the client receives, with the time each passed.
///
/// Requests of the recorded methods are paired with their answers by id; `initialize` supplies the
/// client and server info and the protocol version. A request still unanswered when this is dropped
/// writes no line.
#[derive(Debug)]
pub struct SessionRecorder {
    recorder: Recorder,
    id: String,
    state: Mutex<SessionState>,
}

#[derive(Debug, Default)]
struct SessionState {
    client: Option<Map<String, Value>>,
    server: Option<Map<String, Value>>,
    protocol_version: Option<String>,
    initialize_id: Option<String>,
    pending: HashMap<String, Pending>,
}

#[derive(Debug)]
struct Pending {
    at: SystemTime,
    method: String,
    name: String,
    input: Option<Value>,
    /// Values the input held under credential names: hidden in the answer too, should the server
    /// echo one back.
    secrets: Vec<String>,
    client: Option<Map<String, Value>>,
    protocol_version: Option<String>,
}

impl SessionRecorder {
    /// The session's 8-character id, as written in its records.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Shows the recorder a frame (a message or a batch) the client sent, with the time it was read.
    pub fn client_frame(&self, frame: &[u8], at: SystemTime) {
        if !self.may_concern(frame) {
            return;
        }
        for_each_message(frame, |message| self.client_message(message, at));
    }

    /// Shows the recorder a frame the client received, with the time it was sent to the client.
    pub fn server_frame(&self, frame: &[u8], at: SystemTime) {
        {
            // Nothing awaits an answer: no frame to the client can matter, so none is parsed.
            let state = lock(&self.state);
            if state.pending.is_empty() && state.initialize_id.is_none() {
                return;
            }
        }
        for_each_message(frame, |message| self.server_message(message, at));
    }

    /// Whether a client frame may hold `initialize` or a recorded method: it names one as a JSON
    /// string, or holds an escape that could spell one.
    fn may_concern(&self, frame: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(frame) else {
            return false;
        };
        self.recorder
            .inner
            .needles
            .iter()
            .any(|needle| text.contains(needle.as_str()))
            || text.contains("\\/")
            || text.contains("\\u")
    }

    fn client_message(&self, message: Value, at: SystemTime) {
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return;
        };
        let Some(id) = message.get("id").filter(|id| !id.is_null()) else {
            return;
        };
        let inner = &self.recorder.inner;
        let is_initialize = method == "initialize";
        if !is_initialize && !inner.methods.contains(method) {
            return;
        }
        let method = method.to_owned();
        let params = message.get("params");
        let key = id_key(id);
        let mut state = lock(&self.state);
        if is_initialize {
            state.client = params
                .and_then(|p| p.get("clientInfo"))
                .and_then(Value::as_object)
                .cloned();
            state.protocol_version = params
                .and_then(|p| p.get("protocolVersion"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            state.initialize_id = Some(key.clone());
            if !inner.methods.contains(&method) {
                return;
            }
        }
        let meta = params
            .and_then(|p| p.get("_meta"))
            .and_then(Value::as_object);
        let client = meta
            .and_then(|m| meta_entry(m, "clientInfo"))
            .and_then(Value::as_object)
            .cloned();
        let protocol_version = meta
            .and_then(|m| meta_entry(m, "protocolVersion"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let (name, mut input) = name_and_input(&method, params);
        let name = redact_name(&inner.redactor, &method, &name);
        let mut secrets = Vec::new();
        if let Some(input) = &mut input {
            collect_secrets(&inner.redactor, input, &mut secrets);
            inner.redactor.redact_value(input);
        }
        state.pending.insert(
            key,
            Pending {
                at,
                method,
                name,
                input,
                secrets,
                client,
                protocol_version,
            },
        );
    }

    fn server_message(&self, mut message: Value, at: SystemTime) {
        if message.get("method").is_some() {
            return;
        }
        let Some(id) = message.get("id") else { return };
        let key = id_key(id);
        let mut state = lock(&self.state);
        let is_initialize = state.initialize_id.as_deref() == Some(key.as_str());
        if !is_initialize && !state.pending.contains_key(&key) {
            return;
        }
        if is_initialize {
            state.initialize_id = None;
            if let Some(result) = message.get("result") {
                if let Some(info) = result.get("serverInfo").and_then(Value::as_object) {
                    state.server = Some(info.clone());
                }
                if let Some(version) = result.get("protocolVersion").and_then(Value::as_str) {
                    state.protocol_version = Some(version.to_owned());
                }
            }
        }
        let Some(pending) = state.pending.remove(&key) else {
            return;
        };
        let client = pending.client.or_else(|| state.client.clone());
        let protocol_version = pending
            .protocol_version
            .or_else(|| state.protocol_version.clone());
        let server = state.server.clone();
        drop(state);
        let Some(mut outcome) = Outcome::take_from_response(&mut message) else {
            return;
        };
        let inner = &self.recorder.inner;
        redact_outcome(&inner.redactor, &mut outcome);
        if !pending.secrets.is_empty() {
            hide_values(&mut outcome, &pending.secrets);
        }
        let record = CallRecord {
            at: rfc3339_millis(pending.at),
            session: self.id.clone(),
            client,
            server,
            protocol_version,
            method: pending.method,
            name: pending.name,
            input: pending.input,
            outcome,
            duration_ms: at
                .duration_since(pending.at)
                .unwrap_or_default()
                .as_secs_f64()
                * 1000.0,
        };
        self.recorder.write(&record);
    }
}

impl Drop for SessionRecorder {
    fn drop(&mut self) {
        let pending = lock(&self.state).pending.len() as u64;
        self.recorder
            .inner
            .unanswered
            .fetch_add(pending, Ordering::AcqRel);
    }
}

/// The shortest credential value that is also hidden wherever it reappears: shorter ones would hide
/// ordinary words.
const MIN_ECHOED_SECRET: usize = 6;

/// Gathers the string values `input` holds under names the redactor hides.
fn collect_secrets(redactor: &Redactor, value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (name, item) in map {
                match item {
                    Value::String(s)
                        if redactor.is_redacted_name(name)
                            && s.len() >= MIN_ECHOED_SECRET
                            && s != calltape_redact::REDACTED =>
                    {
                        out.push(s.clone());
                    }
                    other => collect_secrets(redactor, other, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_secrets(redactor, v, out)),
        _ => {}
    }
}

/// Replaces every occurrence of each of `secrets` in the outcome's texts with `[REDACTED]`.
fn hide_values(outcome: &mut Outcome, secrets: &[String]) {
    fn hide_in(text: &mut String, secrets: &[String]) {
        for secret in secrets {
            if text.contains(secret.as_str()) {
                *text = text.replace(secret.as_str(), calltape_redact::REDACTED);
            }
        }
    }
    fn walk(value: &mut Value, secrets: &[String]) {
        match value {
            Value::String(s) => hide_in(s, secrets),
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, secrets)),
            Value::Object(map) => map.values_mut().for_each(|v| walk(v, secrets)),
            _ => {}
        }
    }
    match outcome {
        Outcome::Answer(answer) => walk(answer, secrets),
        Outcome::Error(error) => {
            if let Some(message) = &mut error.message {
                hide_in(message, secrets);
            }
        }
    }
}

/// Parses a frame, a message or a batch of them, and hands each message to `each`.
fn for_each_message(frame: &[u8], mut each: impl FnMut(Value)) {
    match serde_json::from_slice::<Value>(frame) {
        Ok(Value::Array(batch)) => batch.into_iter().for_each(each),
        Ok(message @ Value::Object(_)) => each(message),
        _ => {}
    }
}

/// A request id as a map key: its JSON text, so `1` and `"1"` stay apart.
fn id_key(id: &Value) -> String {
    id.to_string()
}

/// `_meta.clientInfo`, or a namespaced `_meta["…/clientInfo"]` as the stateless protocol sends it.
fn meta_entry<'a>(meta: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    meta.get(name).or_else(|| {
        meta.iter()
            .find(|(k, _)| k.rsplit('/').next() == Some(name))
            .map(|(_, v)| v)
    })
}

/// The name and input a request is recorded with. Request `_meta` (progress tokens included) is never
/// part of the input.
pub(crate) fn name_and_input(method: &str, params: Option<&Value>) -> (String, Option<Value>) {
    let text = |key: &str| {
        params
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match method {
        "tools/call" | "prompts/get" => (
            text("name"),
            Some(
                params
                    .and_then(|p| p.get("arguments"))
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            ),
        ),
        "resources/read" => (text("uri"), None),
        _ => {
            let name = match params.and_then(|p| p.get("name")) {
                Some(Value::String(name)) => name.clone(),
                _ => text("uri"),
            };
            let input = params.and_then(Value::as_object).and_then(|p| {
                let rest: Map<String, Value> = p
                    .iter()
                    .filter(|(k, _)| *k != "_meta")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                (!rest.is_empty()).then_some(Value::Object(rest))
            });
            (name, input)
        }
    }
}

/// The `params` of the JSON-RPC request that replays a recorded call: the inverse of how the recorder
/// took the name and input from a request.
pub fn request_params(record: &CallRecord) -> Value {
    let mut params = Map::new();
    match record.method.as_str() {
        "tools/call" | "prompts/get" => {
            params.insert("name".into(), Value::String(record.name.clone()));
            if let Some(input) = &record.input {
                params.insert("arguments".into(), input.clone());
            }
        }
        "resources/read" => {
            params.insert("uri".into(), Value::String(record.name.clone()));
        }
        _ => {
            if let Some(Value::Object(input)) = &record.input {
                params.extend(input.clone());
            }
        }
    }
    Value::Object(params)
}

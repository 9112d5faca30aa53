//! A recording as a server (feature `mcp`): [`Mock`] answers an MCP client from a call recording, with
//! no server running, so that a client or an agent can be tested offline against the answers a real
//! server once gave.
//!
//! [`Mock`] is an [`Upstream`]: put it behind `calltape_stdio_bridge::Bridge` for a stdio server, or
//! behind `calltape_stdio_bridge::serve::ServerBuilder` for Streamable HTTP. It speaks the handshake
//! era; wrap it in an [`EraUpstream`](calltape_stdio_bridge::EraUpstream) with
//! [`Protocol::Legacy`](calltape_stdio_bridge::Protocol::Legacy) and a 2026-07-28 client is answered
//! too, through the bridge's translation.
//!
//! How it answers:
//!
//! - `initialize`: the recorded server info (`server` of the first line that has one) and protocol
//!   version when the client asks for that one, else the version the client asks for when it is a
//!   handshake version; the capabilities are those of what the recording holds (`tools` when it holds
//!   a tool call or list, `prompts`, `resources`, `completions` likewise, and `logging`).
//! - `tools/list`, `prompts/list`, `resources/list` and `resources/templates/list`: the last recorded
//!   listing of that method, every page in one answer (a request for a later page gets an empty one).
//! - any other request: the recorded call of the same method, name and input (see
//!   [`name_and_input`]). A recorded `"[REDACTED]"` matches any value at its place and a `[REDACTED]`
//!   inside a recorded text any text there; the order of keys never matters; the request's input is
//!   redacted before it is compared. The same call asked again gets the next recorded answer of it, in
//!   file order, and once they are used up the last one again. The calls of every recorded session
//!   are answered alike, whichever session a client's request belongs to.
//! - the server's requests recorded during a call (sampling, elicitation, roots) are sent to the client
//!   in order before the call's answer; each answer the client gives is compared with the recorded one,
//!   and one that differs is a [`Miss`] of kind [`MissKind::AskAnswer`].
//! - `ping`, `logging/setLevel`, `resources/subscribe` and `resources/unsubscribe` get an empty result;
//!   notifications are read and dropped.
//!
//! [`Mock::open`] takes a [`Mode`], as the LLM proxy does: in [`Mode::Auto`] a request the recording
//! does not answer goes to the real server and its answer is recorded; [`Mode::Record`] forwards and
//! records everything anew; [`Mode::Verify`] forwards everything and makes each answer that differs
//! from the recorded one a [`Miss`]: a call's, a listing's (compared item by item, by name, as a
//! replay compares it: `tools[echo].description`) and the server info `initialize` gives.
//!
//! A request with no recorded answer gets a JSON-RPC error (`-32602` for a method the recording holds
//! calls of, `-32601` for one it holds none of) whose message names the closest recorded call and how
//! the request differs from it, with `data.reason` [`NOT_RECORDED`]; every miss is kept, for
//! [`Mock::misses`] to report at the end.
//!
//! # Example
//!
//! ```
//! use calltape_recorder::mcp::Recording;
//! use calltape_replay::mock::Mock;
//!
//! let line = r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"3f9a1c2e","server":{"name":"quotes","version":"1.0.0"},"method":"tools/call","name":"quote","input":{"symbol":"ACME"},"answer":{"content":[{"type":"text","text":"12"}]},"durationMs":1}"#;
//! let mock = Mock::new(Recording::parse("calls.jsonl", line.as_bytes())?);
//!
//! let answer = mock.answer(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"quote","arguments":{"symbol":"ACME"}}}"#);
//! assert_eq!(answer.unwrap()["result"]["content"][0]["text"], "12");
//!
//! let answer = mock.answer(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"quote","arguments":{"symbol":"XYZ"}}}"#).unwrap();
//! assert!(answer["error"]["message"].as_str().unwrap().contains("closest recorded call: tools/call quote (line 1)"));
//! assert_eq!(mock.misses().len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod matching;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use bytes::Bytes;
use calltape_recorder::mcp::{
    Ask, CURSOR, CallError, ErrorCode, LIST_METHODS, NEXT_CURSOR, Outcome, RecordedCall, Recorder,
    RecorderOptions, RecorderReport, Recording, SessionRecorder, list_items_key, name_and_input,
};
use calltape_recorder::terminal::{LineBreaks, escape_controls};
use calltape_redact::Redactor;
use calltape_stdio_bridge::vocab::{
    self, HANDSHAKE_VERSION, HANDSHAKE_VERSIONS, INITIALIZE, PING, RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE, SET_LOG_LEVEL,
};
use calltape_stdio_bridge::{BoxFuture, Frame, Link, Upstream, UpstreamEvent};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

pub use matching::{Closest, Miss, MissKind};

use crate::mcp::{Comparer, Difference, NOT_RECORDED, Status};
use crate::{ErrorKind, Mode};
use matching::Calls;

/// The server info a mock gives when the recording holds none.
const OWN_NAME: &str = "calltape-mock";

/// How many frames wait in each direction of a link.
const QUEUE: usize = 64;

/// The id of the `initialize` a mock sends the server before the first request it forwards, when it
/// answered the client's own handshake from the recording.
const HANDSHAKE_ID: &str = "calltape-mock-initialize";

/// A recording as an MCP server: an [`Upstream`] whose every link answers from the recording. Clones
/// share the recording's state (which answers were given) and the misses.
#[derive(Clone)]
pub struct Mock {
    state: Arc<State>,
}

impl std::fmt::Debug for Mock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mock")
            .field("recording", &self.state.shown)
            .finish_non_exhaustive()
    }
}

struct State {
    shown: String,
    calls: Mutex<Calls>,
    /// The calls written by hand with no answer yet, each answered with a miss that says so.
    unanswered: Mutex<Calls>,
    /// The last recorded listing of each list method.
    lists: HashMap<&'static str, Listing>,
    server: Value,
    /// The line the server info came from, when the recording holds one.
    server_line: Option<usize>,
    protocol_version: Option<String>,
    capabilities: Value,
    misses: Mutex<Vec<Miss>>,
    /// How many requests got a recorded answer.
    answered: AtomicU64,
    /// The id of the next request the mock sends a client.
    next_ask: AtomicU64,
    /// Where the requests go that the mock does not answer itself: in every mode but replay.
    forward: Option<Forward>,
    /// How many requests went to the server.
    forwarded: AtomicU64,
}

/// The server behind a mock, and what the mock does with it.
struct Forward {
    mode: Mode,
    upstream: Arc<dyn Upstream>,
    /// Where forwarded calls are recorded, in the modes that write.
    recorder: Option<Recorder>,
    /// Whether every request goes to the server: in every mode but auto, and in auto on a recording
    /// that holds no call yet.
    all: bool,
    /// In record mode: the file recorded into and the recording it replaces once complete, so a run
    /// that fails or is killed leaves the old recording whole.
    replaces: Option<(PathBuf, PathBuf)>,
}

impl Mock {
    /// A mock that answers from `recording`, comparing inputs after the default redaction.
    pub fn new(recording: Recording) -> Self {
        Self::with_redactor(recording, Redactor::new())
    }

    /// Reads the recording at `path` and answers from it.
    ///
    /// Fails as [`Recording::read`] does, naming each bad line.
    pub fn read(path: impl AsRef<Path>) -> crate::Result<Self> {
        Ok(Self::new(Recording::read(path)?))
    }

    /// A mock that redacts each request's input with `redactor` before comparing it (the recording's
    /// own rules, when it was made with names of its own).
    pub fn with_redactor(recording: Recording, redactor: Redactor) -> Self {
        Self::build(recording, redactor, None)
    }

    /// The mock of `mode` for the recording at `path`, with `upstream` as the real server and the
    /// recording's `options` (its redaction names):
    ///
    /// - [`Mode::Replay`]: answers from the recording only, and never reaches `upstream` (which may
    ///   be `None`).
    /// - [`Mode::Auto`]: answers what the recording holds and forwards every other request to
    ///   `upstream`, whose answers are added to the recording (created with its folders); without an
    ///   `upstream`, as replay does
    ///   (a missing file is an empty recording,
    ///   whose every request is forwarded, the handshake included). When the mock answered the
    ///   client's handshake itself, the server is sent the client's `initialize` before the first
    ///   request it gets.
    /// - [`Mode::Record`] (`update`): forwards everything and records the recording anew.
    /// - [`Mode::Verify`]: forwards everything, writes nothing, and compares the server's answer to
    ///   each call with the recorded one: a difference, or a call the recording does not hold, is a
    ///   [`Miss`] (of kind [`MissKind::Drift`] or [`MissKind::NotRecorded`]). The first page of a
    ///   list the recording holds is compared with the recorded listing when it is the whole list,
    ///   and `initialize`'s `serverInfo` with the recorded server info, each difference a `Drift`.
    /// - [`Mode::Live`]: forwards everything and writes nothing.
    ///
    /// Everything written passes the recorder's redaction, as `calltape record` writes it; call
    /// [`close`](Self::close) once the clients are gone. Fails when the mode forwards and there is no
    /// `upstream`, for [`Mode::Append`], and when the recording cannot be read (replay, verify, and
    /// auto on an existing file) or the redaction names are refused. Must be called within a Tokio
    /// runtime.
    pub async fn open(
        path: impl AsRef<Path>,
        mode: Mode,
        upstream: Option<Arc<dyn Upstream>>,
        options: RecorderOptions,
    ) -> crate::Result<Self> {
        let path = path.as_ref();
        let redactor = options.redactor()?;
        if mode == Mode::Replay || (mode == Mode::Auto && upstream.is_none()) {
            return Ok(Self::with_redactor(Recording::read(path)?, redactor));
        }
        if mode == Mode::Append {
            return Err(ErrorKind::Config(
                "a mock has no append mode; use auto, which answers what the recording holds and records the rest".to_owned(),
            )
            .into());
        }
        let Some(upstream) = upstream else {
            return Err(ErrorKind::Config(format!(
                "a mock in {mode} mode forwards requests to the real server; name it (-- CMD, --url or --socket)"
            ))
            .into());
        };
        let recording = match mode {
            Mode::Verify => Recording::read(path)?,
            Mode::Auto if path.exists() => Recording::read(path)?,
            _ => Recording::parse(path, b"")?,
        };
        if mode.writes()
            && let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty())
        {
            calltape_jsonl_store::fs::create_dir_all(folder).map_err(ErrorKind::Store)?;
        }
        // Record mode writes beside the recording and replaces it whole at the end.
        let replaces = (mode == Mode::Record).then(|| {
            let mut next = path.as_os_str().to_owned();
            next.push(".next");
            (PathBuf::from(next), path.to_owned())
        });
        if let Some((next, _)) = &replaces {
            calltape_jsonl_store::fs::truncate(next).map_err(ErrorKind::Store)?;
        }
        let recorder = match mode.writes() {
            true => {
                let into = replaces.as_ref().map_or(path, |(next, _)| next.as_path());
                Some(Recorder::open(into, options).await?)
            }
            false => None,
        };
        let all = mode != Mode::Auto || recording.calls.is_empty();
        let forward = Forward {
            mode,
            upstream,
            recorder,
            all,
            replaces,
        };
        Ok(Self::build(recording, redactor, Some(forward)))
    }

    /// Ends the recording of what was forwarded, in the modes that write, and reports what it holds;
    /// `None` in the others. Call it once every link is closed.
    pub async fn close(&self) -> Option<RecorderReport> {
        let forward = self.state.forward.as_ref()?;
        let report = forward.recorder.as_ref()?.close().await;
        if let Some((next, path)) = &forward.replaces {
            replace_recording(next, path);
        }
        Some(report)
    }

    fn build(recording: Recording, redactor: Redactor, forward: Option<Forward>) -> Self {
        let shown = recording.path.display().to_string();
        let mut lists = HashMap::new();
        let mut calls = Vec::new();
        let (mut server, mut protocol_version, mut server_line) = (None, None, None);
        let mut kinds = [false; 4];
        if let Some(first) = recording.unanswered.first() {
            tracing::warn!(
                "{shown}: {} call(s) with no answer yet, from line {}: each is a miss until \
                 `calltape replay --update` against the server fills them in",
                recording.unanswered.len(),
                first.line
            );
        }
        let unanswered = recording
            .unanswered
            .iter()
            .map(|call| {
                // Never answered: the stand-in only lets the call be found.
                let record = call.to_record("", Outcome::Answer(Value::Null));
                RecordedCall::new(call.line, record)
            })
            .collect();
        for call in recording.calls {
            let record = &call.record;
            if server.is_none() && record.server.is_some() {
                server = record.server.clone();
                server_line = Some(call.line);
            }
            if protocol_version.is_none() {
                protocol_version = record.protocol_version.clone();
            }
            let family = record.method.split('/').next().unwrap_or_default();
            for (at, word) in ["tools", "prompts", "resources", "completion"]
                .iter()
                .enumerate()
            {
                kinds[at] |= family == *word;
            }
            match LIST_METHODS.iter().find(|(m, _)| *m == record.method) {
                Some((method, _)) => {
                    if let Outcome::Answer(answer) = &record.outcome {
                        let listing = Listing {
                            line: call.line,
                            answer: handshake_era(answer.clone()),
                        };
                        lists.insert(*method, listing);
                    }
                }
                None => calls.push(call),
            }
        }
        let mut capabilities = Map::new();
        for (at, key) in ["tools", "prompts", "resources", "completions"]
            .iter()
            .enumerate()
        {
            if kinds[at] {
                capabilities.insert((*key).to_owned(), json!({}));
            }
        }
        capabilities.insert("logging".to_owned(), json!({}));
        let server = server
            .map(Value::Object)
            .unwrap_or_else(|| json!({"name": OWN_NAME, "version": env!("CARGO_PKG_VERSION")}));
        Self {
            state: Arc::new(State {
                shown,
                unanswered: Mutex::new(Calls::new(unanswered, redactor.clone())),
                calls: Mutex::new(Calls::new(calls, redactor)),
                lists,
                server,
                server_line,
                protocol_version,
                capabilities: Value::Object(capabilities),
                misses: Mutex::new(Vec::new()),
                answered: AtomicU64::new(0),
                next_ask: AtomicU64::new(1),
                forward,
                forwarded: AtomicU64::new(0),
            }),
        }
    }

    /// Every miss so far, in the order they happened.
    pub fn misses(&self) -> Vec<Miss> {
        self.state
            .misses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What the mock did, for a person: `calltape mock: N answered, M missed`, then one
    /// `  miss: …` line per miss, with control characters escaped.
    pub fn summary(&self) -> String {
        let misses = self.misses();
        let answered = self.state.answered.load(Ordering::Relaxed);
        let mut text = match &self.state.forward {
            Some(forward) => format!(
                "calltape mock ({}): {answered} answered, {} forwarded, {} {}",
                forward.mode,
                self.state.forwarded.load(Ordering::Relaxed),
                misses.len(),
                if forward.mode == Mode::Verify {
                    "differing"
                } else {
                    "missed"
                }
            ),
            None => format!(
                "calltape mock: {answered} answered, {} missed",
                misses.len()
            ),
        };
        for miss in &misses {
            text.push_str(&format!("\n  miss: {miss}"));
        }
        escape_controls(&text, LineBreaks::Keep).into_owned()
    }

    /// The answer to one JSON-RPC message (`None` for a notification, a response, or a request the
    /// mode sends the server), for a request
    /// whose recorded call made no request of its own to the client: the answer a link gives, without
    /// a link. A call with recorded asks is answered without them.
    pub fn answer(&self, message: &str) -> Option<Value> {
        let message: Value = serde_json::from_str(message).ok()?;
        match self.state.reply(&message)? {
            Reply::Now(answer) => Some(answer),
            Reply::AfterAsks { id, index } => Some(self.state.call_answer(&id, index)),
            Reply::Forward { .. } => None,
        }
    }
}

/// What a request gets.
enum Reply {
    /// This answer.
    Now(Value),
    /// The asks of the recorded call at `index` first, then its answer.
    AfterAsks { id: Value, index: usize },
    /// The server's answer; in verify mode, compared with the recorded one at `verify`.
    Forward { verify: Option<Recorded> },
}

/// What a forwarded request's answer is compared with in verify mode.
#[derive(Debug, Clone, Copy)]
enum Recorded {
    /// The recorded call at this index.
    Call(usize),
    /// The recorded listing of this list method.
    List(&'static str),
    /// The recorded server info, for `initialize`.
    ServerInfo,
}

/// The last recorded listing of a list method: its line, and its answer as a server of the
/// handshake era gives it.
struct Listing {
    line: usize,
    answer: Value,
}

impl State {
    fn calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn missed(&self, miss: Miss) {
        tracing::debug!("{miss}");
        self.misses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(miss);
    }

    /// What `message` gets, `None` for a notification or a response.
    fn reply(&self, message: &Value) -> Option<Reply> {
        let id = message.get("id")?.clone();
        let method = message.get("method").and_then(Value::as_str)?;
        let params = message.get("params");
        let forwards = self.forward.is_some();
        if let Some(forward) = self.forward.as_ref().filter(|f| f.all) {
            let call = !matches!(
                method,
                INITIALIZE | PING | SET_LOG_LEVEL | RESOURCES_SUBSCRIBE | RESOURCES_UNSUBSCRIBE
            ) && list_items_key(method).is_none();
            let first_page = params
                .and_then(|p| p.get(CURSOR))
                .is_none_or(Value::is_null);
            let verify = match forward.mode {
                Mode::Verify if call => {
                    let (name, input) = name_and_input(method, params);
                    let found = self.calls().find(method, &name, input.as_ref());
                    found
                        .map_err(|miss| self.missed(*miss))
                        .ok()
                        .map(Recorded::Call)
                }
                // A listing is compared whole, so only from its first page; a recording without
                // one (made before lists were recorded) has nothing to compare.
                Mode::Verify if method == INITIALIZE => {
                    self.server_line.map(|_| Recorded::ServerInfo)
                }
                Mode::Verify if first_page => self
                    .lists
                    .get_key_value(method)
                    .map(|(method, _)| Recorded::List(method)),
                _ => None,
            };
            return Some(Reply::Forward { verify });
        }
        let result = match method {
            INITIALIZE => self.initialize(params),
            PING | SET_LOG_LEVEL | RESOURCES_SUBSCRIBE | RESOURCES_UNSUBSCRIBE => json!({}),
            _ if list_items_key(method).is_some() => {
                if forwards && !self.lists.contains_key(method) {
                    return Some(Reply::Forward { verify: None });
                }
                return Some(Reply::Now(self.list(&id, method, params)));
            }
            _ => {
                let (name, input) = name_and_input(method, params);
                let found = self.calls().find(method, &name, input.as_ref());
                return Some(match found {
                    Ok(index) => {
                        self.answered.fetch_add(1, Ordering::Relaxed);
                        let asks = !self.calls().get(index).record.asks.is_empty();
                        if asks {
                            Reply::AfterAsks { id, index }
                        } else {
                            Reply::Now(self.call_answer(&id, index))
                        }
                    }
                    Err(_) if forwards => Reply::Forward { verify: None },
                    Err(miss) => {
                        let miss = self.unanswered(method, &name, input.as_ref(), *miss);
                        Reply::Now(self.miss_answer(&id, miss))
                    }
                });
            }
        };
        Some(Reply::Now(result_answer(&id, result)))
    }

    fn initialize(&self, params: Option<&Value>) -> Value {
        let asked = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        let version = match (asked, &self.protocol_version) {
            (Some(asked), Some(recorded)) if asked == recorded => asked,
            (Some(asked), _) if HANDSHAKE_VERSIONS.contains(&asked) => asked,
            (_, Some(recorded)) if HANDSHAKE_VERSIONS.contains(&recorded.as_str()) => recorded,
            _ => HANDSHAKE_VERSION,
        };
        json!({
            "protocolVersion": version,
            "capabilities": self.capabilities,
            "serverInfo": self.server,
        })
    }

    fn list(&self, id: &Value, method: &str, params: Option<&Value>) -> Value {
        let key = list_items_key(method).unwrap_or_default();
        if params
            .and_then(|p| p.get(CURSOR))
            .is_some_and(|c| !c.is_null())
        {
            // Every page was answered at once: a later page is empty.
            return result_answer(id, json!({ key: [] }));
        }
        match self.lists.get(method) {
            Some(listing) => {
                self.answered.fetch_add(1, Ordering::Relaxed);
                result_answer(id, listing.answer.clone())
            }
            None => {
                let miss = Miss {
                    method: method.to_owned(),
                    name: String::new(),
                    input: None,
                    kind: MissKind::NotRecorded,
                    closest: None,
                };
                let miss = self.unanswered(method, "", None, miss);
                self.miss_answer(id, miss)
            }
        }
    }

    /// `miss`, or a miss of kind [`MissKind::Unanswered`] when the recording holds the request as a
    /// call written by hand with no answer yet.
    fn unanswered(&self, method: &str, name: &str, input: Option<&Value>, miss: Miss) -> Miss {
        let mut unanswered = self
            .unanswered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match unanswered.find(method, name, input) {
            Ok(index) => Miss {
                kind: MissKind::Unanswered,
                closest: Some(Closest {
                    line: unanswered.get(index).line,
                    name: name.to_owned(),
                    differences: Vec::new(),
                }),
                ..miss
            },
            Err(_) => miss,
        }
    }

    /// The recorded outcome of the call at `index` as the answer to request `id`.
    fn call_answer(&self, id: &Value, index: usize) -> Value {
        match &self.calls().get(index).record.outcome {
            Outcome::Answer(answer) => result_answer(id, handshake_era(answer.clone())),
            Outcome::Error(error) => error_outcome(id, error),
        }
    }

    /// The error a missed request gets; the miss is kept.
    fn miss_answer(&self, id: &Value, miss: Miss) -> Value {
        let code = if miss.closest.is_some() {
            vocab::INVALID_PARAMS
        } else {
            vocab::METHOD_NOT_FOUND
        };
        let message = format!("calltape mock ({}): {miss}", self.shown);
        let mut data = json!({"reason": NOT_RECORDED, "method": miss.method, "name": miss.name});
        if let Some(closest) = &miss.closest {
            data["closest"] = json!({
                "line": closest.line,
                "name": closest.name,
                "differences": closest.differences.iter().map(difference_json).collect::<Vec<_>>(),
            });
        }
        self.missed(miss);
        vocab::error_answer_with_data(id, code, &message, data)
    }

    /// Checks the client's answer to the call's ask `at` against the recorded one.
    fn check_ask(&self, index: usize, at: usize, ask: &Ask, response: &Value) {
        let calls = self.calls();
        let mut response = response.clone();
        calls.redactor().redact_value(&mut response);
        let given = Outcome::from_response(&response).unwrap_or(Outcome::Answer(Value::Null));
        let comparison = Comparer::new().compare(&ask.answer, &given);
        if comparison.status == Status::Same {
            return;
        }
        let call = calls.get(index);
        let miss = Miss {
            method: call.record.method.clone(),
            name: call.record.name.clone(),
            input: call.record.input.clone(),
            kind: MissKind::AskAnswer {
                method: ask.method.clone(),
                index: at,
            },
            closest: Some(Closest {
                line: call.line,
                name: call.record.name.clone(),
                differences: comparison.differences,
            }),
        };
        drop(calls);
        self.missed(miss);
    }

    /// Compares the server's `response` to a forwarded request with what the recording holds for
    /// it, in verify mode, as a replay compares them (a list item by item, by its name): a
    /// difference is a miss. A listing the server gave in pages is not compared with the recorded
    /// one, which holds every page.
    fn check_drift(&self, recorded: Recorded, response: &Value) {
        let calls = self.calls();
        let mut response = response.clone();
        calls.redactor().redact_value(&mut response);
        let mut given = Outcome::from_response(&response).unwrap_or(Outcome::Answer(Value::Null));
        let (line, method, name, input, outcome) = match recorded {
            Recorded::Call(index) => {
                let call = calls.get(index);
                let record = &call.record;
                (
                    call.line,
                    record.method.as_str(),
                    record.name.as_str(),
                    record.input.clone(),
                    record.outcome.clone(),
                )
            }
            Recorded::List(method) => {
                let Some(listing) = self.lists.get(method) else {
                    return;
                };
                if response
                    .pointer(&format!("/result/{NEXT_CURSOR}"))
                    .is_some_and(|c| !c.is_null())
                {
                    return;
                }
                let outcome = Outcome::Answer(listing.answer.clone());
                (listing.line, method, "", None, outcome)
            }
            Recorded::ServerInfo => {
                let Some(line) = self.server_line else {
                    return;
                };
                // Only the server info is compared: the recording holds no capabilities of the
                // server's, and the protocol version is the client's to ask for.
                let info = response.pointer("/result/serverInfo").cloned();
                given = Outcome::Answer(json!({ "serverInfo": info }));
                let outcome = Outcome::Answer(json!({ "serverInfo": self.server }));
                (line, INITIALIZE, "", None, outcome)
            }
        };
        let comparison = Comparer::new().compare_call(method, &outcome, &given);
        if comparison.status == Status::Same {
            return;
        }
        let miss = Miss {
            method: method.to_owned(),
            name: name.to_owned(),
            input,
            kind: MissKind::Drift,
            closest: Some(Closest {
                line,
                name: name.to_owned(),
                differences: comparison.differences,
            }),
        };
        drop(calls);
        self.missed(miss);
    }
}

/// A recorded answer as a server of the handshake era gives it: without what a 2026-07-28 server puts
/// at the top of a complete result (`resultType`, the cache hints, the server-info stamp in `_meta`),
/// which the era translation adds again for a client of that era.
fn handshake_era(mut answer: Value) -> Value {
    let Value::Object(fields) = &mut answer else {
        return answer;
    };
    if fields.get("resultType").and_then(Value::as_str) == Some("complete") {
        fields.remove("resultType");
    }
    fields.remove("cacheScope");
    fields.remove("ttlMs");
    if let Some(Value::Object(meta)) = fields.get_mut("_meta") {
        meta.remove(vocab::META_SERVER_INFO);
        if meta.is_empty() {
            fields.remove("_meta");
        }
    }
    answer
}

fn difference_json(d: &Difference) -> Value {
    json!({"path": d.path, "recorded": d.recorded, "asked": d.replayed})
}

fn result_answer(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A recorded error as the client first received it: a JSON-RPC error for a numeric code, else a tool
/// result with `isError` (its code in `_meta.code` unless it is the generic `tool_error`).
fn error_outcome(id: &Value, error: &CallError) -> Value {
    let message = error.message.as_deref().unwrap_or_default();
    match &error.code {
        ErrorCode::Number(code) => vocab::error_answer(id, *code, message),
        ErrorCode::Text(code) => {
            let mut result = json!({
                "content": [{"type": "text", "text": message}],
                "isError": true,
            });
            if code != "tool_error" {
                result["_meta"] = json!({"code": code});
            }
            result_answer(id, result)
        }
    }
}

fn frame_of(value: &Value) -> Frame {
    Bytes::from(value.to_string())
}

impl Upstream for Mock {
    fn describe(&self) -> String {
        format!("the recording {}", self.state.shown)
    }

    fn connect(&self) -> BoxFuture<'_, Result<Link, calltape_stdio_bridge::Error>> {
        let state = Arc::clone(&self.state);
        Box::pin(async move {
            let (outgoing, requests) = mpsc::channel(QUEUE);
            let (events, received) = mpsc::channel(QUEUE);
            let server = Closer::default();
            let task = tokio::spawn(serve_link(state, requests, events, Arc::clone(&server)));
            Ok(Link {
                outgoing,
                events: received,
                close: Box::new(move || {
                    Box::pin(async move {
                        task.abort();
                        let close = server.lock().unwrap_or_else(PoisonError::into_inner).take();
                        if let Some(close) = close {
                            close().await;
                        }
                    })
                }),
            })
        })
    }
}

/// The client's answers the link waits for, by the id of the mock's request.
type Waiting = Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>;

/// The recorded call each forwarded request is compared with in verify mode, by request id.
type Pending = Arc<Mutex<HashMap<String, Recorded>>>;

/// How a link closes its server link, once it has one.
type Closer = Arc<Mutex<Option<Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>>>>;

/// One link's side of the server, in the modes that forward.
struct Server {
    outgoing: mpsc::Sender<Frame>,
    /// What the server is shown to: the session's recorder, in the modes that write.
    tap: Option<Arc<SessionRecorder>>,
}

impl Server {
    /// Sends `message` to the server, showing it to the recorder; `false` once the server is gone.
    async fn send(&self, message: &Value) -> bool {
        let frame = frame_of(message);
        if let Some(tap) = &self.tap {
            tap.client_frame(&frame, SystemTime::now());
        }
        self.outgoing.send(frame).await.is_ok()
    }
}

/// Answers one link's frames until the client side drops it.
async fn serve_link(
    state: Arc<State>,
    mut requests: mpsc::Receiver<Frame>,
    events: mpsc::Sender<UpstreamEvent>,
    closer: Closer,
) {
    let waiting: Waiting = Arc::default();
    let pending: Pending = Arc::default();
    let mut server: Option<Server> = None;
    // The client's initialize, when the mock answered it: the server gets it before the first
    // request forwarded.
    let mut handshake: Option<Value> = None;
    while let Some(frame) = requests.recv().await {
        let Ok(message) = serde_json::from_slice::<Value>(&frame) else {
            continue;
        };
        let messages = match message {
            Value::Array(batch) => batch,
            one => vec![one],
        };
        for message in messages {
            if message.get("method").is_none() {
                // The client's answer to a request of the mock's, or of the server's.
                let waiter = message.get("id").map(|id| id.to_string()).and_then(|id| {
                    waiting
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&id)
                });
                match (waiter, &server) {
                    (Some(waiter), _) => {
                        let _ = waiter.send(message);
                    }
                    (None, Some(server)) => {
                        server.send(&message).await;
                    }
                    (None, None) => {}
                }
                continue;
            }
            let answer = match state.reply(&message) {
                None => {
                    // A notification: the server gets those of a session it takes part in, but
                    // for the handshake the mock answered (it was told of it already).
                    let handshake_done =
                        message.get("method").and_then(Value::as_str) == Some(vocab::INITIALIZED);
                    if let Some(server) = &server
                        && !(handshake.is_some() && handshake_done)
                    {
                        server.send(&message).await;
                    }
                    continue;
                }
                Some(Reply::Now(answer)) => {
                    if state.forward.is_some()
                        && message.get("method").and_then(Value::as_str) == Some(INITIALIZE)
                    {
                        handshake = Some(message.clone());
                    }
                    answer
                }
                Some(Reply::AfterAsks { id, index }) => {
                    tokio::spawn(ask_then_answer(
                        Arc::clone(&state),
                        Arc::clone(&waiting),
                        events.clone(),
                        id,
                        index,
                    ));
                    continue;
                }
                Some(Reply::Forward { verify }) => {
                    let id = message.get("id").cloned().unwrap_or(Value::Null);
                    if server.is_none() {
                        match open_server(&state, &events, &pending, &closer, handshake.as_ref())
                            .await
                        {
                            Ok(opened) => server = Some(opened),
                            Err(reason) => {
                                let message = format!("calltape mock ({}): {reason}", state.shown);
                                let answer =
                                    vocab::error_answer(&id, vocab::INTERNAL_ERROR, &message);
                                if events
                                    .send(UpstreamEvent::Message(frame_of(&answer)))
                                    .await
                                    .is_err()
                                {
                                    return;
                                }
                                continue;
                            }
                        }
                    }
                    if let Some(recorded) = verify {
                        pending
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(id.to_string(), recorded);
                    }
                    state.forwarded.fetch_add(1, Ordering::Relaxed);
                    if let Some(server) = &server {
                        server.send(&message).await;
                    }
                    continue;
                }
            };
            if events
                .send(UpstreamEvent::Message(frame_of(&answer)))
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

/// Connects the link's server side: what the server sends goes to the client (and to the recorder),
/// and, when the mock answered the client's `handshake` itself, the server is sent it and its
/// `notifications/initialized` first.
async fn open_server(
    state: &Arc<State>,
    events: &mpsc::Sender<UpstreamEvent>,
    pending: &Pending,
    closer: &Closer,
    handshake: Option<&Value>,
) -> Result<Server, String> {
    let Some(forward) = &state.forward else {
        return Err("no server to forward to".to_owned());
    };
    let link = forward
        .upstream
        .connect()
        .await
        .map_err(|e| format!("cannot reach {}: {e}", forward.upstream.describe()))?;
    *closer.lock().unwrap_or_else(PoisonError::into_inner) = Some(link.close);
    let tap = forward
        .recorder
        .as_ref()
        .map(|recorder| Arc::new(recorder.session()));
    let (handshake_answered, answered) = oneshot::channel();
    tokio::spawn(pump(
        Arc::clone(state),
        link.events,
        events.clone(),
        tap.clone(),
        Arc::clone(pending),
        handshake_answered,
    ));
    let server = Server {
        outgoing: link.outgoing,
        tap,
    };
    if let Some(handshake) = handshake {
        let mut request = handshake.clone();
        request["id"] = json!(HANDSHAKE_ID);
        server.send(&request).await;
        if answered.await.is_err() {
            return Err(format!(
                "{} ended before answering initialize",
                forward.upstream.describe()
            ));
        }
        server
            .send(&json!({"jsonrpc": "2.0", "method": vocab::INITIALIZED}))
            .await;
    }
    Ok(server)
}

/// Passes what the server sends to the client, showing it to the recorder; the answer to the mock's
/// own `initialize` is kept from the client, and in verify mode each answer is compared.
async fn pump(
    state: Arc<State>,
    mut received: mpsc::Receiver<UpstreamEvent>,
    events: mpsc::Sender<UpstreamEvent>,
    tap: Option<Arc<SessionRecorder>>,
    pending: Pending,
    handshake_answered: oneshot::Sender<()>,
) {
    let mut handshake_answered = Some(handshake_answered);
    while let Some(event) = received.recv().await {
        if let UpstreamEvent::Message(frame) = &event {
            if let Some(tap) = &tap {
                tap.server_frame(frame, SystemTime::now());
            }
            let message = serde_json::from_slice::<Value>(frame).unwrap_or_default();
            if message.get("method").is_none()
                && let Some(id) = message.get("id")
            {
                if id == HANDSHAKE_ID {
                    if let Some(answered) = handshake_answered.take() {
                        let _ = answered.send(());
                    }
                    continue;
                }
                let recorded = pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id.to_string());
                if let Some(recorded) = recorded {
                    state.check_drift(recorded, &message);
                }
            }
        }
        if events.send(event).await.is_err() {
            return;
        }
    }
}

/// Sends the client each request the recorded call at `index` made, in order, checks each answer,
/// then answers the call.
async fn ask_then_answer(
    state: Arc<State>,
    waiting: Waiting,
    events: mpsc::Sender<UpstreamEvent>,
    id: Value,
    index: usize,
) {
    let asks = state.calls().get(index).record.asks.clone();
    for (at, ask) in asks.iter().enumerate() {
        let ask_id = Value::String(format!(
            "calltape-mock-{}",
            state.next_ask.fetch_add(1, Ordering::Relaxed)
        ));
        let (tx, rx) = oneshot::channel();
        waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(ask_id.to_string(), tx);
        let mut request = json!({"jsonrpc": "2.0", "id": ask_id, "method": ask.method});
        if let Some(params) = &ask.params {
            request["params"] = params.clone();
        }
        if events
            .send(UpstreamEvent::Message(frame_of(&request)))
            .await
            .is_err()
        {
            return;
        }
        let Ok(response) = rx.await else {
            return;
        };
        state.check_ask(index, at, ask, &response);
    }
    let answer = state.call_answer(&id, index);
    let _ = events.send(UpstreamEvent::Message(frame_of(&answer))).await;
}

/// Replaces the recording at `path` with the one recorded into `next`, atomically, and removes
/// `next`; on failure both are left as they are and the failure is logged.
fn replace_recording(next: &Path, path: &Path) {
    let replaced = calltape_jsonl_store::fs::read(next).and_then(|bytes| {
        let lines = bytes.split(|&b| b == b'\n').filter(|line| !line.is_empty());
        calltape_jsonl_store::rewrite(path, lines)
    });
    match replaced {
        Ok(()) => {
            let _ = std::fs::remove_file(next);
        }
        Err(err) => tracing::warn!(
            %err,
            recorded = %next.display(),
            "the new recording was kept beside the old one, which is unchanged"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mock(lines: &[Value]) -> Mock {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        Mock::new(Recording::parse("calls.jsonl", text.as_bytes()).unwrap())
    }

    fn line(method: &str, name: &str, input: Value, end: Value) -> Value {
        let mut line = json!({"v": 1, "at": "2026-11-29T20:46:45.123Z", "session": "aaaaaaaa",
            "server": {"name": "everything", "version": "2.0.0"}, "protocolVersion": "2025-06-18",
            "method": method, "name": name, "input": input, "durationMs": 1});
        line.as_object_mut()
            .unwrap()
            .extend(end.as_object().unwrap().clone());
        line
    }

    #[test]
    fn a_call_written_by_hand_with_no_answer_yet_is_a_miss_that_names_its_line() {
        let mock = mock(&[
            line(
                "tools/call",
                "echo",
                json!({"message": "a"}),
                json!({"answer": {"content": []}}),
            ),
            json!({"method": "tools/call", "name": "echo", "input": {"message": "b"}}),
            json!({"method": "tools/list"}),
        ]);
        let ask = |id: u64, method: &str, params: Value| {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            mock.answer(&request.to_string()).unwrap()
        };
        let answer = ask(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "b"}}),
        );
        assert_eq!(
            answer["error"]["message"],
            "calltape mock (calls.jsonl): no recorded answer for tools/call echo: line 2 holds it \
             with no answer yet; `calltape replay --update FILE -- SERVER…` fills in the answers \
             of the calls written by hand"
        );
        assert_eq!(answer["error"]["data"]["closest"]["line"], 2);
        let answer = ask(2, "tools/list", json!({}));
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("tools/list: line 3 holds it with no answer yet"),
            "{answer}"
        );
        // A call nobody wrote is an ordinary miss, closest to the answered call.
        let answer = ask(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "c"}}),
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("closest recorded call: tools/call echo (line 1)"),
            "{message}"
        );
        let kinds: Vec<MissKind> = mock.misses().into_iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            [
                MissKind::Unanswered,
                MissKind::Unanswered,
                MissKind::NotRecorded
            ]
        );
    }

    #[tokio::test]
    async fn record_mode_leaves_the_old_recording_whole_until_it_closes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let old = format!(
            "{}\n",
            line(
                "tools/call",
                "echo",
                json!({}),
                json!({"answer": {"content": []}})
            )
        );
        std::fs::write(&path, &old).unwrap();
        let upstream: Arc<dyn Upstream> = Arc::new(mock(&[]));
        let recording = Mock::open(
            &path,
            Mode::Record,
            Some(upstream),
            RecorderOptions::default(),
        )
        .await
        .unwrap();
        // A run killed now leaves the old recording as it was.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), old);
        recording.close().await.unwrap();
        assert!(
            !std::fs::read_to_string(&path).unwrap().contains("echo"),
            "the recording was not replaced"
        );
        assert!(!dir.path().join("calls.jsonl.next").exists());
    }

    #[test]
    fn the_handshake_and_lists_come_from_the_recording() {
        let mock = mock(&[
            line(
                "tools/list",
                "",
                json!({}),
                json!({"answer": {"tools": [{"name": "echo"}], "resultType": "complete", "ttlMs": 0,
                    "cacheScope": "public", "_meta": {"io.modelcontextprotocol/serverInfo": {}}}}),
            ),
            line(
                "tools/call",
                "fail",
                json!({}),
                json!({"error": {"code": "DECLINED", "message": "no"}}),
            ),
            line(
                "resources/read",
                "demo://x",
                json!({"uri": "demo://x"}),
                json!({"error": {"code": -32002, "message": "Resource not found"}}),
            ),
        ]);
        let init = mock
            .answer(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}"#)
            .unwrap();
        assert_eq!(
            init["result"],
            json!({"protocolVersion": "2025-03-26",
                "capabilities": {"tools": {}, "resources": {}, "logging": {}},
                "serverInfo": {"name": "everything", "version": "2.0.0"}})
        );
        let init = mock
            .answer(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}"#)
            .unwrap();
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
        let list = mock
            .answer(r#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#)
            .unwrap();
        assert_eq!(
            list,
            json!({"jsonrpc": "2.0", "id": "l", "result": {"tools": [{"name": "echo"}]}})
        );
        let page = mock
            .answer(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"2"}}"#)
            .unwrap();
        assert_eq!(page["result"], json!({"tools": []}));
        let tool_error = mock
            .answer(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail"}}"#)
            .unwrap();
        assert_eq!(
            tool_error["result"],
            json!({"content": [{"type": "text", "text": "no"}], "isError": true, "_meta": {"code": "DECLINED"}})
        );
        let error = mock
            .answer(
                r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"demo://x"}}"#,
            )
            .unwrap();
        assert_eq!(
            error["error"],
            json!({"code": -32002, "message": "Resource not found"})
        );
        assert_eq!(
            mock.answer(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert!(mock.misses().is_empty());
        let unlisted = mock
            .answer(r#"{"jsonrpc":"2.0","id":5,"method":"prompts/list"}"#)
            .unwrap();
        assert_eq!(unlisted["error"]["data"]["reason"], "not_recorded");
        assert_eq!(
            unlisted["error"]["message"],
            "calltape mock (calls.jsonl): no recorded answer for prompts/list; the recording holds no prompts/list call"
        );
        assert_eq!(mock.misses().len(), 1);
        assert_eq!(
            mock.summary(),
            "calltape mock: 3 answered, 1 missed\n  miss: no recorded answer for prompts/list; the recording holds no prompts/list call"
        );
    }

    #[tokio::test]
    async fn a_link_asks_the_client_what_the_recorded_call_asked_and_checks_the_answers() {
        let mut call = line(
            "tools/call",
            "sample",
            json!({}),
            json!({"answer": {"content": [{"type": "text", "text": "done"}]}}),
        );
        call["asks"] = json!([
            {"method": "sampling/createMessage", "params": {"maxTokens": 5}, "answer": {"role": "assistant", "content": {"type": "text", "text": "hi"}}},
            {"method": "roots/list", "answer": {"roots": []}},
        ]);
        let mock = mock(&[call]);
        let mut link = mock.connect().await.unwrap();
        let send = |value: Value| frame_of(&value);
        let next = |event: Option<UpstreamEvent>| -> Value {
            match event {
                Some(UpstreamEvent::Message(frame)) => serde_json::from_slice(&frame).unwrap(),
                other => panic!("{other:?}"),
            }
        };
        link.outgoing
            .send(send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "sample"}})))
            .await
            .unwrap();
        let ask = next(link.events.recv().await);
        assert_eq!(ask["method"], "sampling/createMessage");
        assert_eq!(ask["params"], json!({"maxTokens": 5}));
        link.outgoing
            .send(send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"content": {"text": "hi", "type": "text"}, "role": "assistant"}})))
            .await
            .unwrap();
        let ask = next(link.events.recv().await);
        assert_eq!(ask["method"], "roots/list");
        link.outgoing
            .send(send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": "file:///x"}]}})))
            .await
            .unwrap();
        let answer = next(link.events.recv().await);
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["result"]["content"][0]["text"], "done");
        let misses = mock.misses();
        assert_eq!(misses.len(), 1, "{misses:?}");
        assert_eq!(
            misses[0].to_string(),
            r#"the client answered the server's roots/list (asks.1) during tools/call sample unlike the recorded client (line 1), differing at roots[file:///x]: recorded absent, answered {"uri":"file:///x"}"#
        );
    }

    #[tokio::test]
    async fn a_mode_that_forwards_needs_a_server_and_there_is_no_append() {
        let path = "/nonexistent/calls.jsonl";
        for mode in [Mode::Record, Mode::Verify, Mode::Live] {
            let error = Mock::open(path, mode, None, RecorderOptions::default())
                .await
                .unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "a mock in {mode} mode forwards requests to the real server; name it (-- CMD, --url or --socket)"
                )
            );
        }
        let error = Mock::open(path, Mode::Append, None, RecorderOptions::default())
            .await
            .unwrap_err();
        assert!(error.to_string().starts_with("a mock has no append mode"));
        // Auto with no server is replay: the recording must be there.
        let error = Mock::open(path, Mode::Auto, None, RecorderOptions::default())
            .await
            .unwrap_err();
        assert!(error.to_string().contains("calls.jsonl"), "{error}");
    }

    #[test]
    fn public_types_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Mock>();
        check::<Miss>();
    }
}

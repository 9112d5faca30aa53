//! The recorder: watches a session's frames in both directions and writes one redacted record per
//! answered call, and one per list the session fetched (`lists.rs`) when the session ends.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::SystemTime;

use calltape_jsonl_store::{JsonlWriter, Options};
use calltape_redact::{Gate, KnownSecrets, Redactor};
use calltape_stdio_bridge::jsonrpc::{self, Json, Message};
use calltape_stdio_bridge::vocab::{INITIALIZE, PROMPTS_GET, RESOURCES_READ, TOOLS_CALL};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::Error;
use crate::known_secrets;
use crate::mcp::asks::{AskBook, declared_capabilities};
use crate::mcp::format::{CallError, Outcome, RecordLine};
use crate::mcp::input_required::{
    INPUT_REQUIRED, NOT_CALLS, SERVER_DISCOVER, SERVER_INFO_META, input_required_state, is_retry,
    retry_state,
};
use crate::mcp::json_text::{self, IdKey, IdMap};
use crate::mcp::lists::{CURSOR, list_items_key};
use crate::mcp::options::{DEFAULT_METHODS, RecorderOptions, RecorderReport};
use crate::mcp::params::{meta_capabilities, meta_info, name_and_input, raw_of, uri_input};
use crate::mcp::redaction::{hide_known, redact_name, redact_outcome};
use crate::mcp::tasks::{
    RELATED_TASK_META, TASKS_RESULT, created_task, fetched_task, strip_related_task,
};
use crate::mcp::time::{Rfc3339, new_session_id};
use crate::refusal::{Refusal, admit};

mod listings;

use listings::{Listings, listed, write_listings};

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
    /// A handful at most: a list is quicker to search than a hash set.
    methods: Vec<String>,
    /// Secret values of the run: those the caller knows, and every value a request held under a
    /// credential name, hidden in every record and looked for by the gate.
    known: KnownSecrets,
    /// The last check on every line, after redaction and hiding.
    gate: Gate,
    recorded: AtomicU64,
    unanswered: AtomicU64,
    refused: Mutex<Refused>,
    /// The recording's size cap: a listing that grows past it stops taking pages.
    max_bytes: u64,
    /// The sessions not yet dropped, by id: [`Recorder::close`] writes their lists.
    open: Mutex<Vec<(String, Weak<Mutex<SessionState>>)>>,
}

/// The calls the gate refused: the first ones named, the rest counted.
#[derive(Debug, Default)]
struct Refused {
    named: Vec<Refusal>,
    count: u64,
}

/// The most refused calls a report names; the rest are counted.
const MAX_NAMED_REFUSALS: usize = 100;

impl Inner {
    /// Whether calls of `method` are recorded.
    fn records(&self, method: &str) -> bool {
        self.methods.iter().any(|m| m == method)
    }
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
        let gate = Gate::new().watch(&options.known);
        Ok(Self {
            inner: Arc::new(Inner {
                writer: Mutex::new(Some(writer)),
                redactor,
                known: options.known,
                gate,
                refused: Mutex::default(),
                methods: options
                    .methods
                    .into_iter()
                    .filter(|m| !NOT_CALLS.contains(&m.as_str()))
                    .collect(),
                recorded: AtomicU64::new(0),
                unanswered: AtomicU64::new(0),
                max_bytes: options.max_bytes,
                open: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Starts recording a new client session, with a fresh 8-character session id.
    pub fn session(&self) -> SessionRecorder {
        let id = new_session_id();
        let state = Arc::new(Mutex::new(SessionState::default()));
        let mut open = lock(&self.inner.open);
        open.retain(|(_, state)| state.strong_count() > 0);
        open.push((id.clone(), Arc::downgrade(&state)));
        drop(open);
        SessionRecorder {
            recorder: self.clone(),
            id,
            state,
        }
    }

    /// Waits until every recorded call is on disk and returns what was done. A call answered after
    /// this writes no line, so close once the sessions have seen their last frames (`calltape record`
    /// waits for its tap thread to end first). A session still open (a server stopping with its
    /// sessions) has the lists it fetched written here, as its end would have written them.
    pub async fn close(&self) -> RecorderReport {
        let open = std::mem::take(&mut *lock(&self.inner.open));
        for (id, state) in open {
            if let Some(state) = state.upgrade() {
                write_listings(self, &id, &mut lock(&state));
            }
        }
        let writer = lock(&self.inner.writer).take();
        let writer = match writer {
            Some(writer) => Some(writer.close().await),
            None => None,
        };
        let refused = std::mem::take(&mut *lock(&self.inner.refused));
        RecorderReport {
            recorded: self.inner.recorded.load(Ordering::Acquire),
            unanswered: self.inner.unanswered.load(Ordering::Acquire),
            refused: refused.count,
            refusals: refused.named,
            writer,
        }
    }

    /// Hands `line` to the writer once the gate lets it through; else the call is dropped and its
    /// refusal kept for the report.
    fn write_line(&self, line: &[u8], call: impl FnOnce() -> String) {
        if let Err(refusal) = admit(&self.inner.gate, [line], call) {
            let mut refused = lock(&self.inner.refused);
            refused.count += 1;
            if refused.named.len() < MAX_NAMED_REFUSALS {
                refused.named.push(refusal);
            }
            return;
        }
        if let Some(writer) = lock(&self.inner.writer).as_ref() {
            writer.append_line(line);
            self.inner.recorded.fetch_add(1, Ordering::AcqRel);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One client session's side of a [`Recorder`]: show it every frame the client sends and every frame
/// the client receives, with the time each passed.
///
/// Requests of the recorded methods are paired with their answers by id; `initialize` supplies the
/// client and server info and the protocol version, or in 2026-07-28 each request's `_meta` the
/// client's and `server/discover` the server's. A call the server answers with `input_required` is
/// followed through the client's retries to its final result. What the server asks the client
/// meanwhile, and the client's answers, are the call's asks (`mcp/asks.rs`). A list the client
/// fetched (`tools/list` and its kin, when recorded) is written when this is dropped, once per
/// method: the last listing the client read to its end, all pages in one line. A request still
/// unanswered when this is dropped writes no line.
#[derive(Debug)]
pub struct SessionRecorder {
    recorder: Recorder,
    id: String,
    /// Shared with the recorder's list of open sessions only, which writes its lists at `close`.
    state: Arc<Mutex<SessionState>>,
}

#[derive(Debug, Default)]
struct SessionState {
    client: Option<Arc<RawValue>>,
    /// The capabilities the client declared in `initialize`, redacted.
    capabilities: Option<Arc<RawValue>>,
    server: Option<Arc<RawValue>>,
    protocol_version: Option<Arc<str>>,
    /// The `initialize` or `server/discover` in flight, whose answer names the server.
    initialize_id: Option<IdKey>,
    pending: IdMap<Pending>,
    /// Calls the server answered with `input_required`, each with the `requestState` it gave: each
    /// waits for the client's retry (`input_required.rs`).
    awaiting_input: Vec<(Option<String>, Pending)>,
    /// Task-augmented calls the server made a task of, by task id: each waits for the result the
    /// client fetches.
    tasks: HashMap<String, Pending>,
    /// `tasks/result` requests in flight, by request id, each with the task id it fetches.
    fetches: IdMap<String>,
    /// The lists the client fetched, one entry per list method, written when the session ends.
    listings: Vec<Listings>,
    /// What the server asked the client during each call in flight (`mcp/asks.rs`).
    asks: AskBook,
}

#[derive(Debug)]
struct Pending {
    at: SystemTime,
    method: Cow<'static, str>,
    name: String,
    /// The redacted arguments, compact JSON.
    input: Option<Box<str>>,
    client: Option<Arc<RawValue>>,
    /// The capabilities the request's `_meta` declared (2026-07-28), redacted.
    capabilities: Option<Arc<RawValue>>,
    protocol_version: Option<Arc<str>>,
    /// For a list request, the `cursor` it asked for, as the client sent it (the recorded input
    /// holds none): it tells a page after the first from a new listing.
    cursor: Option<Value>,
    /// The call's token in the session's [`AskBook`]; [`NO_ASKS`] for a list's page.
    asks: u64,
    /// The call's asks as written, once it ended.
    asked: Option<Box<str>>,
}

/// The ask token of a request that takes no asks (a list's page): the server's requests go to the
/// calls in flight, never to it.
const NO_ASKS: u64 = u64::MAX;

impl SessionState {
    /// Completes a call that ended: its asks, with every known secret hidden, and the session's
    /// capabilities when its request declared none of its own.
    fn finish(&mut self, pending: &mut Pending, known: &KnownSecrets) {
        pending.asked = self.asks.take(pending.asks, known);
        if pending.capabilities.is_none() {
            pending.capabilities = self.capabilities.clone();
        }
    }
}

/// What a call ended with, ready to be written: the redacted answer as compact JSON (borrowed from
/// the frame when it needed no change), or the error.
enum Ending<'a> {
    Answer(Cow<'a, str>),
    Error(CallError),
}

impl SessionRecorder {
    /// The session's 8-character id, as written in its records.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Shows the recorder a frame (a message or a batch) the client sent, with the time it was read.
    pub fn client_frame(&self, frame: &[u8], at: SystemTime) {
        let Ok(text) = std::str::from_utf8(frame) else {
            return;
        };
        for_each_message(text, |message| self.client_message(message, at));
    }

    /// Shows the recorder a frame the client received, with the time it was sent to the client.
    pub fn server_frame(&self, frame: &[u8], at: SystemTime) {
        // One lock for the whole frame: the tap's thread is the only one that usually takes it.
        let mut state = lock(&self.state);
        // Nothing awaits an answer: no frame to the client can matter but a request of the
        // server's, which the next call may own (`mcp/asks.rs`), so nothing else is parsed.
        if state.pending.is_empty()
            && state.initialize_id.is_none()
            && state.fetches.is_empty()
            && memchr::memmem::find(frame, b"\"method\"").is_none()
        {
            return;
        }
        let Ok(text) = std::str::from_utf8(frame) else {
            return;
        };
        for_each_message(text, |message| self.server_message(&mut state, message, at));
    }

    /// One message from the client, read as raw JSON text where it has a shape that reading covers,
    /// else as a `Value`.
    fn client_message(&self, text: &str, at: SystemTime) {
        let Some(message) = Message::parse(text) else {
            return self.client_value(text, at);
        };
        let Some(method) = message.method.and_then(jsonrpc::string) else {
            // Maybe the client's answer to what the server asked during a call.
            let mut state = lock(&self.state);
            if let Some(id) = message.id
                && state.asks.awaits_answers()
            {
                let error = message.error.and_then(|e| serde_json::from_str(e).ok());
                let result = message.result.map(|r| r.text);
                let (id, redactor) = (IdKey::of_raw(id), &self.recorder.inner.redactor);
                let known = &self.recorder.inner.known;
                state
                    .asks
                    .answered(&id, result, error.as_ref(), redactor, known);
            }
            return;
        };
        let Some(id) = message.id.filter(|id| !jsonrpc::is_null(id)) else {
            return;
        };
        let inner = &self.recorder.inner;
        if !inner.records(&method) {
            if method == INITIALIZE || method == TASKS_RESULT || method == SERVER_DISCOVER {
                self.client_value(text, at);
            }
            return;
        }
        // Maybe the retry of a call that asked for input: the `Value` reading tells.
        if !lock(&self.state).awaiting_input.is_empty() {
            return self.client_value(text, at);
        }
        let params = message.params.unwrap_or_default();
        let (name, input) = match &*method {
            TOOLS_CALL | PROMPTS_GET => {
                (params.name, Some(params.arguments.unwrap_or(NO_ARGUMENTS)))
            }
            RESOURCES_READ => (params.uri, None),
            _ => return self.client_value(text, at),
        };
        let name = name.and_then(jsonrpc::string).unwrap_or_default();
        let name = self.hidden_name(redact_name(&inner.redactor, &method, &name));
        let input = match input {
            // A resource read: its input is its URI, redacted as its name is.
            None => serde_json::to_string(&uri_input(&name))
                .ok()
                .map(String::into_boxed_str),
            Some(arguments) => {
                let redacted = inner.redactor.redact_json_text(arguments.text);
                if let Cow::Owned(_) = redacted
                    && let Ok(original) = serde_json::from_str::<Value>(arguments.text)
                {
                    collect_secrets(inner, &original);
                }
                // A value of the run's other calls: the `Value` reading hides it.
                if inner.known.occurs_in(&redacted) {
                    return self.client_value(text, at);
                }
                match compacted(redacted, arguments.compact) {
                    Some(input) => Some(input.into()),
                    None => return self.client_value(text, at),
                }
            }
        };
        let meta = params
            .meta
            .and_then(|meta| serde_json::from_str::<Map<String, Value>>(meta).ok());
        let (client, protocol_version) = meta_info(meta.as_ref());
        let capabilities = meta_capabilities(meta.as_ref(), &inner.redactor);
        let key = IdKey::of_raw(id);
        let mut state = lock(&self.state);
        let asks = state.asks.start_call();
        state.pending.insert(
            key,
            Pending {
                at,
                method: method_name(&method),
                name,
                input,
                client,
                capabilities,
                protocol_version,
                cursor: None,
                asks,
                asked: None,
            },
        );
    }

    /// A call's recorded name with the run's known values hidden.
    fn hidden_name(&self, name: String) -> String {
        match self.recorder.inner.known.hide_in_text(&name) {
            Cow::Borrowed(_) => name,
            Cow::Owned(hidden) => hidden,
        }
    }

    /// [`client_message`](Self::client_message) for any message, through a `Value`.
    fn client_value(&self, text: &str, at: SystemTime) {
        let Ok(message) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let inner = &self.recorder.inner;
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            lock(&self.state)
                .asks
                .answered_value(&message, &inner.redactor, &inner.known);
            return;
        };
        let Some(id) = message.get("id").filter(|id| !id.is_null()) else {
            return;
        };
        let params = message.get("params");
        let key = IdKey::of_value(id);
        if method == TASKS_RESULT
            && let Some(task) = fetched_task(params)
        {
            // The result of a task a recorded call created: it is that call's answer.
            let mut state = lock(&self.state);
            if state.tasks.contains_key(task) {
                state.fetches.insert(key, task.to_owned());
                return;
            }
        }
        if method == SERVER_DISCOVER {
            lock(&self.state).initialize_id = Some(key);
            return;
        }
        let is_initialize = method == INITIALIZE;
        if !is_initialize && !inner.records(method) {
            return;
        }
        if is_initialize {
            let mut state = lock(&self.state);
            state.client = params
                .and_then(|p| p.get("clientInfo"))
                .filter(|info| info.is_object())
                .and_then(raw_of);
            state.protocol_version = params
                .and_then(|p| p.get("protocolVersion"))
                .and_then(Value::as_str)
                .map(Arc::from);
            state.capabilities =
                declared_capabilities(params.and_then(|p| p.get("capabilities")), &inner.redactor);
            state.initialize_id = Some(key.clone());
            if !inner.records(method) {
                return;
            }
        }
        let meta = params
            .and_then(|p| p.get("_meta"))
            .and_then(Value::as_object);
        let (client, protocol_version) = meta_info(meta);
        let capabilities = meta_capabilities(meta, &inner.redactor);
        if list_items_key(method).is_some() {
            // A page of a list: its input is the list's (none), its cursor kept to tell pages apart.
            let cursor = params.and_then(|p| p.get(CURSOR)).cloned();
            let pending = Pending {
                at,
                method: method_name(method),
                name: String::new(),
                input: Some("{}".into()),
                client,
                capabilities,
                protocol_version,
                cursor,
                asks: NO_ASKS,
                asked: None,
            };
            lock(&self.state).pending.insert(key, pending);
            return;
        }
        let (name, mut input) = name_and_input(method, params);
        let name = self.hidden_name(redact_name(&inner.redactor, method, &name));
        if is_retry(params) && self.resume(key.clone(), method, &name, params) {
            return;
        }
        if method == RESOURCES_READ {
            // Its URI, redacted as its name is, on both readings.
            input = Some(uri_input(&name));
        } else if let Some(input) = &mut input {
            collect_secrets(inner, input);
            inner.redactor.redact_value(input);
            inner.known.hide_in_value(input);
        }
        let mut state = lock(&self.state);
        let asks = state.asks.start_call();
        state.pending.insert(
            key,
            Pending {
                at,
                method: method_name(method),
                name,
                input: input
                    .as_ref()
                    .and_then(|input| serde_json::to_string(input).ok())
                    .map(String::into_boxed_str),
                client,
                capabilities,
                protocol_version,
                cursor: None,
                asks,
                asked: None,
            },
        );
    }

    /// One message to the client: the answer to a recorded call is written as a record.
    fn server_message(&self, state: &mut SessionState, text: &str, at: SystemTime) {
        let Some(message) = Message::parse(text) else {
            return self.server_value(state, text, at);
        };
        if message.method.is_some() {
            if message.id.is_some() {
                self.server_request(state, text);
            }
            return;
        }
        let Some(id) = message.id else { return };
        let key = IdKey::of_raw(id);
        if state.initialize_id.as_ref() == Some(&key) {
            return self.server_value(state, text, at);
        }
        let Some(pending) = state.pending.remove(&key) else {
            if state.fetches.contains_key(&key) {
                self.server_value(state, text, at);
            }
            return;
        };
        // Maybe a task handle, or a request for input, rather than an answer, or the first word of
        // the server's info, or a page of a list: the `Value` reading tells.
        if list_items_key(&pending.method).is_some()
            || message.result.is_some_and(|r| {
                (pending.method == TOOLS_CALL && r.text.contains("\"taskId\""))
                    || r.text.contains(INPUT_REQUIRED)
                    || (state.server.is_none() && r.text.contains(SERVER_INFO_META))
            })
        {
            state.pending.insert(key, pending);
            return self.server_value(state, text, at);
        }
        let mut pending = pending;
        state.finish(&mut pending, &self.recorder.inner.known);
        let server = state.server.clone();
        let (client, protocol_version) = session_info(state, &pending);
        let inner = &self.recorder.inner;
        let ending = match (message.result, message.error) {
            (Some(result), _) => self.answer_ending(result),
            (None, Some(error)) => match serde_json::from_str::<Value>(error) {
                Ok(error) => {
                    let mut outcome = Outcome::Error(CallError::from_jsonrpc(&error));
                    redact_outcome(&inner.redactor, &mut outcome);
                    hide_known(&mut outcome, &inner.known);
                    ending_of(outcome)
                }
                Err(_) => None,
            },
            (None, None) => None,
        };
        if let Some(ending) = ending {
            self.write(pending, client, server, protocol_version, ending, at);
        }
    }

    /// The ending a `result` stands for: redacted as text unless it may be a tool error or echoes
    /// a secret value of the run, which the `Value` reading deals with.
    fn answer_ending<'a>(&self, result: Json<'a>) -> Option<Ending<'a>> {
        let inner = &self.recorder.inner;
        if !json_text::may_be_tool_error(result.text) && !inner.known.occurs_in(result.text) {
            let redacted = inner.redactor.redact_json_text(result.text);
            if let Some(answer) = compacted(redacted, result.compact) {
                return Some(Ending::Answer(answer));
            }
        }
        let result = serde_json::from_str::<Value>(result.text).ok()?;
        let mut outcome = Outcome::from_result(result);
        redact_outcome(&inner.redactor, &mut outcome);
        hide_known(&mut outcome, &inner.known);
        ending_of(outcome)
    }

    /// Takes a retried request (`id`, with `params`) as the call that asked for input it retries,
    /// when one of this `method` and `name` waits with the `requestState` the retry echoes: the call
    /// then waits for the retry's answer, with its first request's time and input, and the retry's
    /// `inputResponses` answer its asks.
    fn resume(&self, id: IdKey, method: &str, name: &str, params: Option<&Value>) -> bool {
        let request_state = retry_state(params);
        let mut state = lock(&self.state);
        let Some(at) = state.awaiting_input.iter().position(|(s, p)| {
            p.method == method && p.name == name && s.as_deref() == request_state
        }) else {
            return false;
        };
        let (_, pending) = state.awaiting_input.remove(at);
        if let Some(params) = params {
            let (redactor, known) = (&self.recorder.inner.redactor, &self.recorder.inner.known);
            state
                .asks
                .input_responses(pending.asks, params, redactor, known);
        }
        state.pending.insert(id, pending);
        true
    }

    /// A request of the server's to the client: an ask of the call it belongs to.
    fn server_request(&self, state: &mut SessionState, text: &str) {
        let Ok(message) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let related = message
            .pointer("/params/_meta")
            .and_then(|meta| meta.get(RELATED_TASK_META))
            .and_then(|task| task.get("taskId"))
            .and_then(Value::as_str)
            .and_then(|task| state.tasks.get(task))
            .map(|pending| pending.asks);
        let owner = state.asks.owner(
            related,
            state
                .pending
                .values()
                .map(|p| p.asks)
                .filter(|&asks| asks != NO_ASKS),
        );
        state
            .asks
            .asked(owner, &message, &self.recorder.inner.redactor);
    }

    /// [`server_message`](Self::server_message) for any message, through a `Value`.
    fn server_value(&self, state: &mut SessionState, text: &str, at: SystemTime) {
        let Ok(mut message) = serde_json::from_str::<Value>(text) else {
            return;
        };
        if message.get("method").is_some() {
            if message.get("id").is_some() {
                self.server_request(state, text);
            }
            return;
        }
        let Some(id) = message.get("id") else { return };
        let key = IdKey::of_value(id);
        if state.initialize_id.as_ref() == Some(&key) {
            state.initialize_id = None;
            if let Some(result) = message.get("result") {
                if let Some(info) = result.get("serverInfo").filter(|i| i.is_object()) {
                    state.server = raw_of(info);
                }
                if let Some(version) = result.get("protocolVersion").and_then(Value::as_str) {
                    state.protocol_version = Some(Arc::from(version));
                }
            }
        }
        let pending = match state.pending.remove(&key) {
            Some(pending) => {
                if pending.method == TOOLS_CALL
                    && let Some(task) = created_task(&message)
                {
                    // Recorded once the client fetches the task's result; the handle is not.
                    state.tasks.insert(task, pending);
                    return;
                }
                if let Some(request_state) = input_required_state(&message) {
                    // Recorded once the client's retry gets the final result, with what the
                    // rounds asked and the client answered as the call's asks.
                    if let Some(result) = message.get("result") {
                        let redactor = &self.recorder.inner.redactor;
                        state.asks.input_requests(pending.asks, result, redactor);
                    }
                    state.awaiting_input.push((request_state, pending));
                    return;
                }
                pending
            }
            None => match state
                .fetches
                .remove(&key)
                .and_then(|task| state.tasks.remove(&task))
            {
                Some(pending) => {
                    if let Some(result) = message.get_mut("result") {
                        strip_related_task(result);
                    }
                    pending
                }
                None => return,
            },
        };
        if state.server.is_none() {
            // A 2026-07-28 server says who it is on each result, not in a handshake.
            state.server = message
                .get("result")
                .and_then(|r| r.get("_meta"))
                .and_then(|m| m.get(SERVER_INFO_META))
                .filter(|info| info.is_object())
                .and_then(raw_of);
        }
        if list_items_key(&pending.method).is_some() {
            return listed(
                state,
                pending,
                &mut message,
                text.len() as u64,
                self.recorder.inner.max_bytes,
                at,
            );
        }
        let mut pending = pending;
        state.finish(&mut pending, &self.recorder.inner.known);
        let server = state.server.clone();
        let (client, protocol_version) = session_info(state, &pending);
        let Some(mut outcome) = Outcome::take_from_response(&mut message) else {
            return;
        };
        redact_outcome(&self.recorder.inner.redactor, &mut outcome);
        hide_known(&mut outcome, &self.recorder.inner.known);
        if let Some(ending) = ending_of(outcome) {
            self.write(pending, client, server, protocol_version, ending, at);
        }
    }

    /// Writes the record of an answered call.
    fn write(
        &self,
        pending: Pending,
        client: Option<Arc<RawValue>>,
        server: Option<Arc<RawValue>>,
        protocol_version: Option<Arc<str>>,
        ending: Ending<'_>,
        at: SystemTime,
    ) {
        let parties = Parties {
            client,
            server,
            protocol_version,
        };
        self.recorder
            .write_record(&self.id, pending, parties, ending, at);
    }
}

/// Who a record is between: the client's and the server's info, and the protocol version.
struct Parties {
    client: Option<Arc<RawValue>>,
    server: Option<Arc<RawValue>>,
    protocol_version: Option<Arc<str>>,
}

impl Recorder {
    /// Writes the record of an answered call of session `session`.
    fn write_record(
        &self,
        session: &str,
        pending: Pending,
        parties: Parties,
        ending: Ending<'_>,
        at: SystemTime,
    ) {
        let Parties {
            client,
            server,
            protocol_version,
        } = parties;
        let error = match &ending {
            Ending::Error(error) => Some(error.to_value()),
            Ending::Answer(_) => None,
        };
        let started = Rfc3339::of(pending.at);
        let line = RecordLine {
            at: started.as_str(),
            session,
            client: client.as_deref(),
            capabilities: pending.capabilities.as_deref(),
            server: server.as_deref(),
            protocol_version: protocol_version.as_deref(),
            method: &pending.method,
            name: &pending.name,
            input: pending.input.as_deref(),
            asks: pending.asked.as_deref(),
            answer: match &ending {
                Ending::Answer(answer) => Some(&**answer),
                Ending::Error(_) => None,
            },
            error: error.as_ref(),
            duration_ms: at
                .duration_since(pending.at)
                .unwrap_or_default()
                .as_secs_f64()
                * 1000.0,
        };
        // The keys, the time, the session id and the duration take about 200 bytes.
        let size = 224
            + pending.method.len()
            + protocol_version.as_ref().map_or(0, |v| v.len())
            + pending.name.len()
            + pending.input.as_ref().map_or(0, |i| i.len())
            + pending.asked.as_ref().map_or(0, |a| a.len() + 8)
            + pending
                .capabilities
                .as_ref()
                .map_or(0, |c| c.get().len() + 16)
            + match &ending {
                Ending::Answer(answer) => answer.len(),
                Ending::Error(_) => 64,
            }
            + client.as_ref().map_or(0, |c| c.get().len())
            + server.as_ref().map_or(0, |s| s.get().len());
        // The writer copies the line into its queue: one buffer per thread serves every line.
        thread_local! {
            static LINE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        }
        let call = || {
            format!(
                "the {} call {} of session {} at {}",
                pending.method,
                pending.name,
                session,
                started.as_str()
            )
        };
        let write = |out: &mut Vec<u8>| {
            out.clear();
            out.reserve(size);
            line.write_to(out);
            self.write_line(out, call);
        };
        LINE.with(|buf| match buf.try_borrow_mut() {
            Ok(mut out) => {
                write(&mut out);
                if out.capacity() > KEEP_LINE_BUFFER {
                    *out = Vec::new();
                }
            }
            // Taken only by a write this one re-entered.
            Err(_) => write(&mut Vec::new()),
        });
    }
}

/// A recorded method's name, without allocating for the default ones.
fn method_name(method: &str) -> Cow<'static, str> {
    match DEFAULT_METHODS.iter().find(|m| **m == method) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(method.to_owned()),
    }
}

/// The client info and protocol version a call is recorded with: its own (from request `_meta`), or
/// the session's.
fn session_info(
    state: &SessionState,
    pending: &Pending,
) -> (Option<Arc<RawValue>>, Option<Arc<str>>) {
    (
        pending.client.clone().or_else(|| state.client.clone()),
        pending
            .protocol_version
            .clone()
            .or_else(|| state.protocol_version.clone()),
    )
}

/// An outcome as it is written.
fn ending_of(outcome: Outcome) -> Option<Ending<'static>> {
    match outcome {
        Outcome::Answer(answer) => serde_json::to_string(&answer)
            .ok()
            .map(|answer| Ending::Answer(Cow::Owned(answer))),
        Outcome::Error(error) => Some(Ending::Error(error)),
    }
}

/// A line buffer that grew past this for a large record is given back once the line is queued.
const KEEP_LINE_BUFFER: usize = 1024 * 1024;

/// `{}`: the input of a call sent without arguments.
const NO_ARGUMENTS: Json<'static> = Json {
    text: "{}",
    compact: true,
};

/// Redacted JSON text without blanks between its tokens: as it is when the original had none (the
/// redactor adds none). `None` when the redactor rewrote it into text that is not JSON, which it
/// never should: the record is then written from the `Value` reading instead of holding a broken line.
fn compacted(redacted: Cow<'_, str>, compact: bool) -> Option<Cow<'_, str>> {
    if let Cow::Owned(text) = &redacted
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
    {
        return None;
    }
    Some(if compact {
        redacted
    } else {
        json_text::compact_redacted(redacted)
    })
}

impl Drop for SessionRecorder {
    fn drop(&mut self) {
        let mut state = lock(&self.state);
        write_listings(&self.recorder, &self.id, &mut state);
        let pending = (state.pending.len() + state.tasks.len() + state.awaiting_input.len()) as u64;
        drop(state);
        self.recorder
            .inner
            .unanswered
            .fetch_add(pending, Ordering::AcqRel);
    }
}

/// Remembers, for the rest of the run, the string values `input` holds under names the redactor
/// hides.
fn collect_secrets(inner: &Inner, value: &Value) {
    known_secrets::learn_named(&inner.known, value, &|name| {
        inner.redactor.is_redacted_name(name)
    });
}

/// Hands each message of a frame (a message, or a batch of them) to `each` as JSON text.
fn for_each_message<'a>(text: &'a str, mut each: impl FnMut(&'a str)) {
    if text.trim_start().starts_with('[') {
        if let Ok(batch) = serde_json::from_str::<Vec<&RawValue>>(text) {
            batch.into_iter().for_each(|message| each(message.get()));
        }
    } else {
        each(text);
    }
}

#[cfg(test)]
mod tests;

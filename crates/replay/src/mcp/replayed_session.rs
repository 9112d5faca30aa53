//! Replaying a recording: each recorded session through a fresh connection, calls in order, sessions
//! in parallel.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use calltape_recorder::mcp::{
    CallRecord, Outcome, RecordedCall, Recording, hide_known, hide_sent_values, list_items_key,
    new_session_id, redact_name, redact_outcome, request_params, timestamp,
};
use calltape_redact::{KnownSecrets, Redactor};
use calltape_stdio_bridge::vocab::{
    INITIALIZE, INITIALIZED, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION,
    MODERN_VERSION, TOOLS_CALL,
};
use calltape_stdio_bridge::{EraUpstream, Link, Protocol, Upstream, UpstreamEvent};
use futures::StreamExt;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::error::{Error, ErrorKind};
use crate::mcp::asks::{Answerer, AskReport};
use crate::mcp::compare::{Comparer, Comparison};
use crate::mcp::fill::Fills;
use crate::mcp::follow::{Answered, Follower, Substitution};
use crate::mcp::mask::{CallRules, Mask, Scopes};
use crate::mcp::report::{CallReport, ReplayReport};
use crate::mcp::surface;

/// The protocol version a replay asks for when the recording names none.
pub const DEFAULT_PROTOCOL_VERSION: &str = "2025-06-18";

/// How long a replayed call may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Called after each replayed call with (calls done, calls in all).
pub type Progress = Arc<dyn Fn(usize, usize) + Send + Sync>;

/// How to replay: the comparison rules, the redactor, parallelism and the per-call timeout.
#[derive(Clone)]
#[non_exhaustive]
pub struct ReplayOptions {
    /// Compares each recorded outcome with the replayed one.
    pub comparer: Comparer,
    /// Masks applied to copies of both outcomes of every call before they are compared.
    pub mask: Mask,
    /// Ignore globs and masks for some calls only, on top of `comparer`'s and `mask`.
    pub call_rules: CallRules,
    /// Redacts replayed outcomes before comparison; use the rules the recording was made with.
    pub redactor: Redactor,
    /// Sessions replayed at once (at least 1).
    pub jobs: usize,
    /// The longest a call (or the handshake) may take.
    pub timeout: Duration,
    /// Told of progress after each call.
    pub progress: Option<Progress>,
    /// Values sent in place of recorded `"[REDACTED]"` inputs, by field name.
    pub fills: Fills,
    /// Whether strings an earlier answer created are followed into later inputs (on by default).
    pub follow: bool,
    /// The protocol era the server speaks, found on each connection by default.
    pub protocol: Protocol,
    /// Other secret values of the run (a header sent to the server, say): hidden, as the filled
    /// values are, in every replayed outcome and in every reason a replay fails with.
    pub known: KnownSecrets,
}

impl fmt::Debug for ReplayOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayOptions")
            .field("comparer", &self.comparer)
            .field("mask", &self.mask)
            .field("call_rules", &self.call_rules)
            .field("jobs", &self.jobs)
            .field("timeout", &self.timeout)
            .field("fills", &self.fills)
            .field("follow", &self.follow)
            .field("protocol", &self.protocol)
            .field("known", &self.known)
            .finish_non_exhaustive()
    }
}

impl Default for ReplayOptions {
    fn default() -> Self {
        Self {
            comparer: Comparer::new(),
            mask: Mask::default(),
            call_rules: CallRules::new(),
            redactor: Redactor::new(),
            jobs: 1,
            timeout: DEFAULT_TIMEOUT,
            progress: None,
            fills: Fills::new(),
            follow: true,
            protocol: Protocol::Auto,
            known: KnownSecrets::new(),
        }
    }
}

impl ReplayOptions {
    /// Uses `comparer`.
    pub fn comparer(mut self, comparer: Comparer) -> Self {
        self.comparer = comparer;
        self
    }

    /// Masks copies of both outcomes of every call with `mask` before comparing them: what its
    /// patterns match compares equal, the rest of each string is still compared.
    pub fn mask(mut self, mask: Mask) -> Self {
        self.mask = mask;
        self
    }

    /// Applies `rules` to the calls they name, on top of the comparer and the mask for every call.
    pub fn call_rules(mut self, rules: CallRules) -> Self {
        self.call_rules = rules;
        self
    }

    /// Uses `redactor` on replayed outcomes.
    pub fn redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// Replays up to `jobs` sessions at once.
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs.max(1);
        self
    }

    /// Gives each call (and each handshake) at most `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Reports progress to `progress`.
    pub fn progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Sends `fills`' values in place of recorded `"[REDACTED]"` inputs at fields of their names. A
    /// value never reaches the report or the outcomes: each is hidden in what the server answers.
    pub fn fills(mut self, fills: Fills) -> Self {
        self.fills = fills;
        self
    }

    /// Follows strings an earlier answer created into later inputs (`true`, the default), or sends
    /// every input as recorded (`false`).
    pub fn follow(mut self, follow: bool) -> Self {
        self.follow = follow;
        self
    }

    /// Hides the values of `known` too (those added to it later included), wherever a replayed
    /// outcome or a failure's reason holds them.
    pub fn known_secrets(mut self, known: KnownSecrets) -> Self {
        self.known = known;
        self
    }

    /// Tells which protocol era the server speaks ([`Protocol::Auto`], the default: found on each
    /// connection). A recording of the other era is translated on its way to the server.
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }
}

/// What a replay sent differently from the recording for one call.
#[derive(Debug, Clone, Default)]
struct Notes {
    substitutions: Vec<Substitution>,
    unfilled: Vec<String>,
    asks: AskReport,
    /// When the call was sent, and how long its answer took.
    sent: Option<(SystemTime, Duration)>,
}

/// What one session's run gave: each call's outcome and notes, and what the server said of itself
/// in the handshake (`serverInfo`, the protocol version).
struct SessionRun {
    calls: Vec<(Outcome, Notes)>,
    server: Option<Map<String, Value>>,
    protocol_version: Option<String>,
}

/// What a replay produced: the report, and each call's replayed (redacted) outcome for `--update`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Replayed {
    /// The comparison of every call.
    pub report: ReplayReport,
    /// The replayed outcomes, in recording order.
    pub outcomes: Vec<Outcome>,
    /// The recording's calls with no answer yet, answered: one full record each (redacted, as the
    /// recorder writes it), in the order of [`Recording::unanswered`]. They are compared with
    /// nothing, so the report leaves them out.
    pub filled: Vec<CallRecord>,
}

/// Replays every call of `recording` against `upstream` and compares the answers.
///
/// Each recorded session gets its own link (a fresh child process, a new HTTP session); its calls
/// are sent in recorded order, as the recorded client sent them. The recorded protocol version
/// decides how: a session of the handshake era is initialized with the recorded client info first,
/// a 2026-07-28 session sends each call with that info in its `_meta`, either declaring the recorded
/// client's capabilities. What the server asks the client during a call (sampling, elicitation,
/// roots, a 2026-07-28 `input_required`) is answered from the call's recorded asks; a request
/// nothing recorded answers gets an error and is a difference of its call. The link goes through
/// [`EraUpstream`] with the options' [`protocol`](ReplayOptions::protocol), so a server of the other
/// era gets the calls translated: pass `upstream` unwrapped. Fails when the server cannot be started
/// or stops answering, naming the call.
///
/// The recording's calls with no answer yet ([`Recording::unanswered`]) are sent too, in order, in a
/// session of their own (declaring the first recorded client's info and capabilities, or calltape's
/// own when the recording holds no answered call), and come back as [`Replayed::filled`].
pub async fn replay(
    recording: &Recording,
    upstream: Arc<dyn Upstream>,
    options: &ReplayOptions,
) -> Result<Replayed, Error> {
    let upstream: Arc<dyn Upstream> = Arc::new(EraUpstream::from_arc(upstream, options.protocol));
    let total = recording.calls.len() + recording.unanswered.len();
    let done = AtomicUsize::new(0);
    let sessions = recording.sessions();
    let runs = futures::stream::iter(sessions.into_iter().map(|(_, indexes)| {
        let upstream = upstream.clone();
        let done = &done;
        async move {
            let calls: Vec<(usize, &RecordedCall)> =
                indexes.iter().map(|&i| (i, &recording.calls[i])).collect();
            let run = run_session(&*upstream, &calls, options, || {
                let n = done.fetch_add(1, Ordering::AcqRel) + 1;
                if let Some(progress) = &options.progress {
                    progress(n, total);
                }
            })
            .await?;
            Ok::<_, Error>(indexes.into_iter().zip(run.calls).collect::<Vec<_>>())
        }
    }))
    .buffer_unordered(options.jobs.max(1));
    let mut outcomes: Vec<Option<Outcome>> = vec![None; total];
    let mut notes: Vec<Notes> = vec![Notes::default(); total];
    let mut runs = std::pin::pin!(runs);
    while let Some(run) = runs.next().await {
        for (index, (outcome, note)) in run? {
            outcomes[index] = Some(outcome);
            notes[index] = note;
        }
    }
    let outcomes: Vec<Outcome> = outcomes
        .into_iter()
        .map(|o| o.unwrap_or(Outcome::Answer(Value::Null)))
        .collect();
    let filled = fill(recording, &*upstream, options, || {
        let n = done.fetch_add(1, Ordering::AcqRel) + 1;
        if let Some(progress) = &options.progress {
            progress(n, total);
        }
    })
    .await?;
    let mut replayed = compare_with_notes(recording, outcomes, notes, options);
    replayed.filled = filled;
    Ok(replayed)
}

/// Sends the recording's calls with no answer yet in a session of their own and makes each a full
/// record: the answer redacted as the recorder redacts it (the input and a resource's URI too), the
/// time it was sent, a fresh session id, the server's info and protocol version from the handshake.
async fn fill(
    recording: &Recording,
    upstream: &dyn Upstream,
    options: &ReplayOptions,
    tick: impl FnMut(),
) -> Result<Vec<CallRecord>, Error> {
    if recording.unanswered.is_empty() {
        return Ok(Vec::new());
    }
    let session = new_session_id();
    let first = recording.calls.first().map(|call| &call.record);
    let calls: Vec<RecordedCall> = recording
        .unanswered
        .iter()
        .map(|call| {
            // Nothing is compared with this answer: it only stands in until the server's comes.
            let mut record = call.to_record(session.as_str(), Outcome::Answer(Value::Null));
            if let Some(first) = first {
                record.client = first.client.clone();
                record.capabilities = first.capabilities.clone();
                // A 2026-07-28 session sends its calls without a handshake, as the recorded ones.
                record.protocol_version = first.protocol_version.clone();
            }
            RecordedCall::new(call.line, record)
        })
        .collect();
    let offset = recording.calls.len();
    let indexed: Vec<(usize, &RecordedCall)> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| (offset + i, call))
        .collect();
    let run = run_session(upstream, &indexed, options, tick).await?;
    let filled = calls
        .into_iter()
        .zip(run.calls)
        .map(|(call, (mut outcome, notes))| {
            let mut record = call.record;
            hide_sent_values(&mut outcome, options.fills.values());
            hide_known(&mut outcome, &options.known);
            redact_outcome(&options.redactor, &mut outcome);
            record.outcome = outcome;
            if let Some(input) = &mut record.input {
                options.redactor.redact_value(input);
            }
            record.name = redact_name(&options.redactor, &record.method, &record.name);
            if let Some((at, took)) = notes.sent {
                record.at = timestamp(at);
                record.duration_ms = took.as_secs_f64() * 1000.0;
            }
            if run.server.is_some() {
                record.server = run.server.clone();
            }
            if run.protocol_version.is_some() {
                record.protocol_version = run.protocol_version.clone();
            }
            record
        })
        .collect();
    Ok(filled)
}

/// Redacts the replayed outcomes (one per call of `recording`, in order, as the server gave them),
/// compares each with its recorded outcome, and builds the report.
///
/// A replayed outcome equal to the recorded one is kept as it is and is `same`: the recording already
/// holds exactly that value, and redacting is idempotent, so redacting it would change nothing. Every
/// other outcome is redacted with the options' redactor before it is compared or kept.
pub fn compare_outcomes(
    recording: &Recording,
    outcomes: Vec<Outcome>,
    options: &ReplayOptions,
) -> Replayed {
    let notes = vec![Notes::default(); outcomes.len()];
    compare_with_notes(recording, outcomes, notes, options)
}

/// [`compare_outcomes`], each call's report carrying what its request was sent with instead of the
/// recording. Every filled value is hidden in the outcomes first.
fn compare_with_notes(
    recording: &Recording,
    mut outcomes: Vec<Outcome>,
    notes: Vec<Notes>,
    options: &ReplayOptions,
) -> Replayed {
    let mut scopes = Scopes::new(&options.comparer, &options.mask, &options.call_rules);
    let calls = recording
        .calls
        .iter()
        .zip(&mut outcomes)
        .zip(notes)
        .enumerate()
        .map(|(i, ((call, replayed), notes))| {
            hide_sent_values(replayed, options.fills.values());
            hide_known(replayed, &options.known);
            let recorded = &call.record.outcome;
            let mut comparison = if recorded == replayed {
                Comparison::same()
            } else {
                redact_outcome(&options.redactor, replayed);
                let (method, name) = (&call.record.method, &call.record.name);
                scopes.compare(method, name, recorded, replayed)
            };
            let mut asks = notes.asks;
            asks.apply(&mut comparison.status, &mut comparison.differences);
            let method = call.record.method.as_str();
            let surface = surface::classify(method, &comparison, recorded, replayed);
            CallReport::new(
                i + 1,
                call.line,
                call.record.session.as_str(),
                method,
                call.record.name.as_str(),
                comparison.status,
                comparison.differences,
            )
            .with_answer(comparison.answer)
            .with_substitutions(notes.substitutions)
            .with_unfilled(notes.unfilled)
            .with_surface(surface)
            .with_asks(asks.notes)
        })
        .collect();
    Replayed {
        report: ReplayReport::new(recording.path.clone(), calls),
        outcomes,
        filled: Vec::new(),
    }
}

/// One session: connect, initialize as the recorded client did, send each call, close.
async fn run_session(
    upstream: &dyn Upstream,
    calls: &[(usize, &RecordedCall)],
    options: &ReplayOptions,
    mut tick: impl FnMut(),
) -> Result<SessionRun, Error> {
    let describe = upstream.describe();
    // A server's error may quote what it was sent (an HTTP error body, say): the filled values and
    // the run's other secrets never reach a reason.
    let secrets = options.fills.known();
    secrets.extend(&options.known);
    let fail = |reason: String| -> Error {
        ErrorKind::ReplayUpstream {
            upstream: describe.clone(),
            reason: secrets.hide_in_text(&reason).into_owned(),
        }
        .into()
    };
    let Some((_, first)) = calls.first() else {
        return Ok(SessionRun {
            calls: Vec::new(),
            server: None,
            protocol_version: None,
        });
    };
    let session = first.record.session.clone();
    let link = upstream.connect().await.map_err(|e| {
        fail(format!(
            "cannot start the server for recorded session {session}: {e}"
        ))
    })?;
    let stateless = is_stateless(first.record.protocol_version.as_deref());
    let mut conn = Conn {
        link,
        timeout: options.timeout,
        initialize: initialize_request(&first.record),
        meta: stateless.then(|| stateless_meta(&first.record)),
        task_tools: None,
        server: None,
        protocol_version: None,
        asks: Answerer::new(
            calls.iter().map(|(_, call)| &call.record),
            &options.redactor,
            &options.fills,
        ),
    };
    let result = async {
        if conn.meta.is_none() {
            conn.handshake()
                .await
                .map_err(|why| fail(format!("initialize for recorded session {session}: {why}")))?;
        }
        let mut outcomes = Vec::with_capacity(calls.len());
        let mut follower = Follower::default();
        let sent: Vec<&str> = options.fills.values().collect();
        for (n, (index, call)) in calls.iter().enumerate() {
            let record = &call.record;
            let (params, notes) = prepare(record, &mut follower, options);
            if conn.meta.is_some() {
                // Each stateless request carries its own client's info, as recorded.
                conn.meta = Some(stateless_meta(record));
            }
            let request = json!({
                "jsonrpc": "2.0",
                "id": n + 1,
                "method": record.method,
                "params": params,
            });
            let failed = |why: String| {
                fail(format!(
                    "call {} ({} {}, line {}): {why}",
                    index + 1,
                    record.method,
                    record.name,
                    call.line
                ))
            };
            conn.asks.start(n);
            let (sent_at, started) = (SystemTime::now(), Instant::now());
            let answer = conn.send_call(&request, record).await.map_err(failed)?;
            let mut notes = notes;
            notes.sent = Some((sent_at, started.elapsed()));
            // Redacted in `compare_outcomes`, before anything compares or keeps it.
            let outcome = Outcome::from_response(&answer).unwrap_or(Outcome::Answer(Value::Null));
            if options.follow {
                follower.learn(&Answered {
                    call: index + 1,
                    method: &record.method,
                    input: record.input.as_ref(),
                    recorded: &record.outcome,
                    replayed: &outcome,
                    redactor: &options.redactor,
                    sent: &sent,
                });
            }
            outcomes.push((outcome, notes));
            tick();
        }
        // Only now is it known which created strings later calls used: each answer gets back the
        // recorded value of those, the creating call's own included.
        for ((outcome, notes), asks) in outcomes.iter_mut().zip(conn.asks.finish()) {
            follower.restore(outcome);
            notes.asks = asks;
        }
        Ok(outcomes)
    }
    .await;
    let result = result.map(|calls| SessionRun {
        calls,
        server: conn.server.take(),
        protocol_version: conn.protocol_version.take(),
    });
    let close = conn.link.close;
    drop(conn.link.outgoing);
    close().await;
    result
}

/// The params a recorded call is sent with: its input with created strings followed (unless turned
/// off) and `"[REDACTED]"` filled where a fill names the field, and what was changed or left.
fn prepare(
    record: &CallRecord,
    follower: &mut Follower,
    options: &ReplayOptions,
) -> (Value, Notes) {
    let mut notes = Notes::default();
    let Some(mut input) = record.input.clone() else {
        return (request_params(record), notes);
    };
    if options.follow {
        notes.substitutions = follower.substitute(&mut input);
    }
    notes.unfilled = options.fills.apply(&mut input);
    let mut sent = CallRecord::new(
        String::new(),
        record.method.as_str(),
        record.name.as_str(),
        Outcome::Answer(Value::Null),
    );
    sent.input = Some(input);
    (request_params(&sent), notes)
}

/// The first protocol revision without `initialize`: each request carries the client's info and
/// protocol version in `params._meta` instead.
const STATELESS_SINCE: &str = MODERN_VERSION;

/// Whether a session recorded with `version` speaks the stateless revision (dated versions compare
/// as text).
fn is_stateless(version: Option<&str>) -> bool {
    version.is_some_and(|v| v >= STATELESS_SINCE)
}

/// The recorded client info, or calltape's own when the recording has none.
fn client_info(record: &CallRecord) -> Map<String, Value> {
    record.client.clone().unwrap_or_else(|| {
        let mut m = Map::new();
        m.insert("name".into(), json!("calltape-replay"));
        m.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
        m
    })
}

/// The capabilities the recorded client declared, or none: the server offers what it offered it.
fn capabilities(record: &CallRecord) -> Value {
    Value::Object(record.capabilities.clone().unwrap_or_default())
}

/// The request `_meta` a stateless client sends: the recorded protocol version, client info and
/// capabilities.
fn stateless_meta(record: &CallRecord) -> Value {
    json!({
        META_PROTOCOL_VERSION: record.protocol_version.as_deref().unwrap_or(STATELESS_SINCE),
        META_CLIENT_INFO: client_info(record),
        META_CLIENT_CAPABILITIES: capabilities(record),
    })
}

fn initialize_request(record: &CallRecord) -> Value {
    let client = client_info(record);
    json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": INITIALIZE,
        "params": {
            "protocolVersion": record.protocol_version.as_deref().unwrap_or(DEFAULT_PROTOCOL_VERSION),
            "capabilities": capabilities(record),
            "clientInfo": client,
        }
    })
}

pub(super) struct Conn {
    pub(super) link: Link,
    pub(super) timeout: Duration,
    initialize: Value,
    /// The `_meta` every request carries when the session speaks the stateless revision: then no
    /// `initialize`, ever.
    meta: Option<Value>,
    /// The tools the server runs only as tasks, once asked.
    pub(super) task_tools: Option<Vec<String>>,
    /// The `serverInfo` the server answered `initialize` with.
    server: Option<Map<String, Value>>,
    /// The protocol version the handshake agreed on.
    protocol_version: Option<String>,
    /// The recorded answers to what the server asks the client (`asks.rs`).
    pub(super) asks: Answerer,
}

impl Conn {
    /// Sends one recorded call and returns the server's final answer: a list read page by page as it
    /// was recorded, a 2026-07-28 `input_required` result answered as recorded, and a call the server
    /// runs only as a task sent again as one and polled to its end.
    async fn send_call(&mut self, request: &Value, record: &CallRecord) -> Result<Value, String> {
        let mut answer = if list_items_key(&record.method).is_some() {
            let recorded = match &record.outcome {
                Outcome::Answer(answer) => Some(answer),
                Outcome::Error(_) => None,
            };
            self.list(request, recorded).await?
        } else {
            self.request(request).await?
        };
        if self.meta.is_some() {
            answer = self.answer_input_required(request, answer).await?;
        }
        if record.method == TOOLS_CALL
            && is_error(&answer)
            && self.requires_task(&record.name).await?
        {
            answer = self.run_task(request).await?;
        }
        Ok(answer)
    }

    async fn send(&self, message: &Value) -> Result<(), String> {
        self.send_text(serde_json::to_string(message).unwrap_or_default())
            .await
    }

    /// Sends a message already written as JSON text.
    async fn send_text(&self, message: String) -> Result<(), String> {
        self.link
            .outgoing
            .send(Bytes::from(message))
            .await
            .map_err(|_| "the server's connection is closed".to_owned())
    }

    async fn handshake(&mut self) -> Result<(), String> {
        let answer = self.request(&self.initialize.clone()).await?;
        if let Some(error) = answer.get("error") {
            return Err(format!("the server refused initialize: {error}"));
        }
        if let Some(Value::Object(info)) = answer.pointer("/result/serverInfo") {
            self.server = Some(info.clone());
        }
        if let Some(Value::String(version)) = answer.pointer("/result/protocolVersion") {
            self.protocol_version = Some(version.clone());
        }
        self.send(&json!({"jsonrpc": "2.0", "method": INITIALIZED}))
            .await
    }

    /// Sends `request` and waits for its answer, answering the server's own requests meanwhile. In
    /// a stateless session the request carries the session's `_meta`.
    pub(super) async fn request(&mut self, request: &Value) -> Result<Value, String> {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        match &self.meta {
            Some(meta) => {
                let mut request = request.clone();
                if let Some(params) = request.get_mut("params").and_then(Value::as_object_mut) {
                    params.insert("_meta".into(), meta.clone());
                }
                self.send(&request).await?;
            }
            None => self.send(request).await?,
        }
        let deadline = Instant::now() + self.timeout;
        loop {
            let event = match tokio::time::timeout_at(deadline, self.link.events.recv()).await {
                Err(_) => {
                    return Err(format!("no answer within {}", humanize(self.timeout)));
                }
                Ok(None) => return Err("the server's connection closed".to_owned()),
                Ok(Some(event)) => event,
            };
            match event {
                UpstreamEvent::Message(frame) => {
                    let Ok(message) = serde_json::from_slice::<Value>(&frame) else {
                        continue;
                    };
                    for message in into_messages(message) {
                        if let Some(answer) = self.handle(message, &id).await? {
                            return Ok(answer);
                        }
                    }
                }
                UpstreamEvent::SessionExpired { frame } => {
                    if self.meta.is_none() {
                        self.reinitialize().await?;
                    }
                    self.link
                        .outgoing
                        .send(frame)
                        .await
                        .map_err(|_| "the server's connection is closed".to_owned())?;
                }
                UpstreamEvent::Undelivered { reason, .. } => {
                    return Err(format!("the request could not be delivered: {reason}"));
                }
                UpstreamEvent::ProtocolError {
                    status, message, ..
                } => {
                    return Err(match status {
                        Some(status) => format!("the server answered HTTP {status}: {message}"),
                        None => format!("the server's answer is not MCP: {message}"),
                    });
                }
                UpstreamEvent::Closed { reason } => {
                    return Err(format!("the server stopped: {reason}"));
                }
            }
        }
    }

    /// Handles one message from the server: `Some` when it is the answer to `id`.
    async fn handle(&mut self, message: Value, id: &Value) -> Result<Option<Value>, String> {
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (Some(_), Some(_)) => {
                let answer = self.answer_server_request(&message);
                self.send_text(answer).await?;
                Ok(None)
            }
            (Some(_), None) => Ok(None),
            (None, Some(answer_id)) if answer_id == id => Ok(Some(message)),
            _ => Ok(None),
        }
    }

    /// The HTTP session expired: initialize again (its answer swallowed) before resending.
    async fn reinitialize(&mut self) -> Result<(), String> {
        let mut init = self.initialize.clone();
        init["id"] = json!("calltape-reinit");
        self.send(&init).await?;
        let deadline = Instant::now() + self.timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.link.events.recv()).await {
                Ok(Some(UpstreamEvent::Message(frame))) => {
                    let Ok(message) = serde_json::from_slice::<Value>(&frame) else {
                        continue;
                    };
                    if message.get("id") == Some(&init["id"]) && message.get("method").is_none() {
                        break;
                    }
                }
                Ok(Some(UpstreamEvent::Closed { reason })) => {
                    return Err(format!("the server stopped: {reason}"));
                }
                Ok(Some(_)) => {}
                Ok(None) => return Err("the server's connection closed".to_owned()),
                Err(_) => {
                    return Err("no answer to a new initialize after the session expired".into());
                }
            }
        }
        self.send(&json!({"jsonrpc": "2.0", "method": INITIALIZED}))
            .await
    }
}

/// Whether a response is an error: a JSON-RPC error or a tool result with `isError` set.
fn is_error(response: &Value) -> bool {
    response.get("error").is_some()
        || response.pointer("/result/isError") == Some(&Value::Bool(true))
}

fn into_messages(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items,
        other => vec![other],
    }
}

pub(super) fn humanize(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Status;

    #[test]
    fn replayed_outcomes_are_redacted_unless_they_equal_the_recording() {
        let lines = [
            r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"3f9a1c2e","method":"tools/call","name":"a","answer":{"apiKey":"[REDACTED]","n":1},"durationMs":1}"#,
            r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"3f9a1c2e","method":"tools/call","name":"b","answer":{"n":1},"durationMs":1}"#,
            r#"{"v":1,"at":"2026-11-29T20:46:45.123Z","session":"3f9a1c2e","method":"tools/call","name":"c","answer":{"n":1},"durationMs":1}"#,
        ]
        .join("\n");
        let recording = Recording::parse("calls.jsonl", lines.as_bytes()).unwrap();
        let outcomes = vec![
            Outcome::Answer(json!({"apiKey": "sk-live-abcdefghijklmnop", "n": 1})),
            Outcome::Answer(json!({"n": 1})),
            Outcome::Answer(json!({"n": 2, "note": "Bearer abc123"})),
        ];
        let replayed = compare_outcomes(&recording, outcomes, &ReplayOptions::default());
        let statuses: Vec<Status> = replayed.report.calls.iter().map(|c| c.status).collect();
        assert_eq!(statuses, [Status::Same, Status::Same, Status::Changed]);
        assert_eq!(
            replayed.outcomes,
            [
                Outcome::Answer(json!({"apiKey": "[REDACTED]", "n": 1})),
                Outcome::Answer(json!({"n": 1})),
                Outcome::Answer(json!({"n": 2, "note": "Bearer [REDACTED]"})),
            ]
        );
        let note = &replayed.report.calls[2].differences[1];
        assert_eq!(note.path, "note");
        assert_eq!(note.replayed, Some(json!("Bearer [REDACTED]")));
    }

    #[test]
    fn masks_and_call_rules_compare_copies_and_the_kept_outcomes_stay_whole() {
        let line = |name: &str, at: &str| {
            json!({"v": 1, "at": "2026-11-29T20:46:45.123Z", "session": "3f9a1c2e", "method": "tools/call",
                   "name": name, "answer": {"text": format!("created: {at}"), "id": "a"}, "durationMs": 1})
            .to_string()
        };
        let lines = [
            line("info", "2026-11-29T20:46:45Z"),
            line("other", "2026-11-29T20:46:45Z"),
        ];
        let recording = Recording::parse("calls.jsonl", lines.join("\n").as_bytes()).unwrap();
        let replayed = || {
            vec![
                Outcome::Answer(json!({"text": "created: 2026-12-01T08:00:00Z", "id": "b"})),
                Outcome::Answer(json!({"text": "created: 2026-12-01T08:00:00Z", "id": "a"})),
            ]
        };
        // (mask for every call, rules for some, the statuses)
        let rules = CallRules::builder()
            .rule(crate::mcp::CallRule::new("in*").ignore(["id"]))
            .build()
            .unwrap();
        let timestamp = Mask::new(["timestamp"]).unwrap();
        let rows = [
            (
                Mask::default(),
                CallRules::new(),
                [Status::Changed, Status::Changed],
            ),
            (
                timestamp.clone(),
                CallRules::new(),
                [Status::Changed, Status::Same],
            ),
            (timestamp, rules, [Status::Same, Status::Same]),
        ];
        for (mask, rules, statuses) in rows {
            let options = ReplayOptions::default().mask(mask).call_rules(rules);
            let done = compare_outcomes(&recording, replayed(), &options);
            let found: Vec<Status> = done.report.calls.iter().map(|c| c.status).collect();
            assert_eq!(found, statuses, "{options:?}");
            // What --update would write is the server's answer, never a masked copy.
            assert_eq!(done.outcomes, replayed());
        }
    }
}

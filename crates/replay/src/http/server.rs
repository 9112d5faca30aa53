//! The HTTP side: accepting connections, routing, and the replay / forward / record flow.

use std::convert::Infallible;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use calltape_recorder::http::{Body, Content, Interaction, Request, Response};
use futures::channel::mpsc;
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use super::access::{refuse, strip_path_token};
use super::capture::{self, AUTH_HEADERS, Decoder, HOP_HEADERS, name_matches};
use super::miss::{self, Provider, error_response};
use super::options::{Exhaustion, Mode};
use super::stream::{Splitter, stream_format};
use super::tape::{Lookup, Recording, Tape, diff_text};
use super::{CASSETTE_HEADER, ProxyBody, State, UpstreamCfg};

pub(crate) type HttpResponse = hyper::Response<ProxyBody>;

const MAX_REQUEST_BODY: usize = 64 * 1024 * 1024;

pub(crate) async fn serve(
    listener: TcpListener,
    state: Arc<State>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let state = Arc::clone(&state);
                tokio::spawn(async move {
                    let svc = service_fn(move |req| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, Infallible>(handle(state, req).await) }
                    });
                    // Flattened writes: frames (one per replayed event) are copied into one buffer
                    // that is flushed when the body has nothing ready, instead of queueing a
                    // vectored write for every few events.
                    let _ = http1::Builder::new()
                        .keep_alive(true)
                        .writev(false)
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
            _ = stop.changed() => break,
        }
    }
}

pub(crate) fn full(bytes: impl Into<Bytes>) -> ProxyBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

async fn handle(state: Arc<State>, req: hyper::Request<Incoming>) -> HttpResponse {
    if let Err(refusal) = state.guard.check(req.headers()) {
        return refuse(refusal.status(), refusal.message());
    }
    match route(&state, req).await {
        Ok(r) | Err(r) => r,
    }
}

/// Splits `/[_cassette/NAME/]<upstream>/<rest>`.
fn split_path(path: &str) -> (Option<&str>, &str, &str) {
    let (cassette, path) = match path.strip_prefix("/_cassette/") {
        Some(rest) => {
            let (name, rest) = rest.split_once('/').unwrap_or((rest, ""));
            (Some(name), rest)
        }
        None => (None, path.strip_prefix('/').unwrap_or(path)),
    };
    let up = path.split_once('/').map_or(path, |(up, _)| up);
    let rest = &path[up.len()..];
    (cassette, up, if rest.is_empty() { "/" } else { rest })
}

fn cassette_path(state: &State, chosen: Option<&str>) -> Result<PathBuf, String> {
    let Some(name) = chosen else {
        return state.cassette.clone().ok_or_else(|| {
            format!("this request names no cassette: send the {CASSETTE_HEADER} header or use the /_cassette/NAME/ path prefix")
        });
    };
    let Some(dir) = &state.cassette_dir else {
        return Err(format!(
            "cassette {name:?} was requested, but the proxy has no cassette folder; give it one"
        ));
    };
    let ok = !name.is_empty()
        && !name.starts_with('/')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
        && !name
            .split('/')
            .any(|seg| seg.is_empty() || seg == "." || seg == "..");
    if !ok {
        return Err(format!(
            "cassette name {name:?} is not allowed: use letters, digits, `.`, `_`, `-` and `/` between non-empty segments, never `..`"
        ));
    }
    let mut file = name.to_owned();
    if !file.ends_with(".jsonl") {
        file.push_str(".jsonl");
    }
    Ok(dir.join(file))
}

async fn route(
    state: &Arc<State>,
    req: hyper::Request<Incoming>,
) -> Result<HttpResponse, HttpResponse> {
    let (parts, body) = req.into_parts();
    let path = match &state.path_token {
        Some(token) => strip_path_token(parts.uri.path(), token).ok_or_else(|| {
            refuse(
                StatusCode::NOT_FOUND,
                "this proxy adds an API key upstream, so it serves only under its per-run path \
                 prefix; use the URL it printed or gave the command (CALLTAPE_PROXY_URL)",
            )
        })?,
        None => parts.uri.path(),
    }
    .to_owned();
    let query = parts.uri.query().map(str::to_owned);
    let (prefix_cassette, upstream_name, rest) = split_path(&path);
    let (upstream_name, rest) = (upstream_name.to_owned(), rest.to_owned());
    let header_cassette = parts
        .headers
        .get(CASSETTE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(upstream) = state.upstreams.get(&upstream_name) else {
        let mut names: Vec<&str> = state.upstreams.keys().map(String::as_str).collect();
        names.sort_unstable();
        return Err(error_response(
            Provider::OpenAi,
            StatusCode::NOT_FOUND,
            "unknown_upstream",
            &format!(
                "calltape: no upstream named {upstream_name:?}; the proxy serves /<name>/… for {}",
                names.join(", ")
            ),
        ));
    };
    let provider = upstream.provider;
    let chosen = header_cassette.as_deref().or(prefix_cassette);
    let cassette = if state.mode == Mode::Live {
        None
    } else {
        Some(cassette_path(state, chosen).map_err(|m| {
            error_response(
                provider,
                StatusCode::BAD_REQUEST,
                "cassette_error",
                &format!("calltape: {m}"),
            )
        })?)
    };
    let body = match http_body_util::Limited::new(body, MAX_REQUEST_BODY)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Err(error_response(
                provider,
                StatusCode::BAD_REQUEST,
                "request_body",
                &format!("calltape: cannot read the request body: {e}"),
            ));
        }
    };
    for name in AUTH_HEADERS {
        for v in parts.headers.get_all(*name) {
            if let Ok(v) = v.to_str() {
                state.scrubber.add_header_secret(name, v);
            }
        }
    }
    let mut request = capture::request_record(
        &parts.method,
        &upstream_name,
        &rest,
        query.as_deref(),
        &parts.headers,
        &body,
    );
    state.scrubber.scrub_request(&mut request);
    request.key = state.normalizer.key(&request);

    let tape = match &cassette {
        Some(path) => Some(state.tape(path).map_err(|e| {
            tracing::error!("{e}");
            error_response(
                provider,
                StatusCode::INTERNAL_SERVER_ERROR,
                "cassette_error",
                &format!("calltape: {e}"),
            )
        })?),
        None => None,
    };
    let forward = Forward {
        method: parts.method.clone(),
        url: format!(
            "{}{}{}",
            upstream.base,
            rest,
            query
                .as_deref()
                .map(|q| format!("?{q}"))
                .unwrap_or_default()
        ),
        headers: parts.headers.clone(),
        body,
        upstream_name: upstream_name.clone(),
    };

    match state.mode {
        Mode::Live => Ok(exchange(state, upstream, forward, request, Sink::Nothing).await),
        Mode::Record => {
            let Some(tape) = tape else {
                unreachable!("record mode always has a cassette")
            };
            request.seq = lock(&tape).next_seq(&request.key);
            Ok(exchange(state, upstream, forward, request, Sink::Record(tape)).await)
        }
        Mode::Verify => {
            let Some(tape) = tape else {
                unreachable!("verify mode always has a cassette")
            };
            let expected = match lock(&tape).lookup(&request.key, state.exhaustion) {
                Ok(Lookup::Hit(r)) => Some(r),
                Ok(_) => None,
                Err(e) => return Err(broken(state, provider, &e)),
            };
            Ok(exchange(state, upstream, forward, request, Sink::Verify(expected)).await)
        }
        Mode::Replay | Mode::Auto | Mode::Append => {
            let Some(tape) = tape else {
                unreachable!("replay modes always have a cassette")
            };
            // `append` grows the cassette: only an exact, unused recording answers, and anything else
            // (a new request, a repeat beyond the recorded count, a near match) is recorded. The other
            // modes let the exhaustion policy and fuzzy matching answer from the cassette first.
            let exhaustion = match state.mode {
                Mode::Append => Exhaustion::Error,
                _ => state.exhaustion,
            };
            let found = lock(&tape)
                .lookup(&request.key, exhaustion)
                .map_err(|e| broken(state, provider, &e))?;
            let why = match found {
                Lookup::Hit(r) => {
                    state.report().replayed += 1;
                    return Ok(r.reply.response(state.replay_timing));
                }
                Lookup::Exhausted(n) => {
                    format!("all {n} recordings of this request were already served")
                }
                Lookup::Miss => "no recording".to_owned(),
            };
            if state.mode != Mode::Append
                && let Some(resp) = try_fuzzy(state, &tape, &request, provider)
            {
                return Ok(resp);
            }
            if state.mode == Mode::Replay {
                let (short, long) = {
                    let mut t = lock(&tape);
                    miss::describe_miss(
                        &mut t,
                        &request,
                        &state.normalizer,
                        &why,
                        &state.rerecord_hint,
                    )
                };
                tracing::error!("{long}");
                state.report().misses.push(short.clone());
                return Err(error_response(
                    provider,
                    StatusCode::NOT_FOUND,
                    "cassette_miss",
                    &short,
                ));
            }
            request.seq = lock(&tape).next_seq(&request.key);
            Ok(exchange(state, upstream, forward, request, Sink::Record(tape)).await)
        }
    }
}

/// The answer when a recording cannot be read back (its blob went missing, say).
fn broken(state: &State, provider: Provider, e: &calltape_recorder::Error) -> HttpResponse {
    tracing::error!("{e}");
    state.report().errors.push(e.to_string());
    error_response(
        provider,
        StatusCode::INTERNAL_SERVER_ERROR,
        "cassette_error",
        &format!("calltape: {e}"),
    )
}

fn lock(tape: &Mutex<Tape>) -> std::sync::MutexGuard<'_, Tape> {
    tape.lock().unwrap_or_else(|e| e.into_inner())
}

fn try_fuzzy(
    state: &State,
    tape: &Mutex<Tape>,
    request: &Request,
    provider: Provider,
) -> Option<HttpResponse> {
    let threshold = state.fuzzy?;
    let mut t = lock(tape);
    let &(index, ratio) = t
        .ranked(request, &state.normalizer, true)
        .first()
        .filter(|(_, r)| *r >= threshold)?;
    let recorded = &t.get(index).request;
    let diff = similar::TextDiff::from_lines(
        &diff_text(&state.normalizer, recorded),
        &diff_text(&state.normalizer, request),
    )
    .unified_diff()
    .context_radius(2)
    .header("recorded", "request")
    .to_string();
    let line = format!(
        "{} {} {} (key {}) matched recording key {} seq {} at {:.0}% similarity",
        request.method,
        request.upstream,
        request.path,
        request.key,
        recorded.key,
        recorded.seq,
        ratio * 100.0
    );
    if state.mode == Mode::Replay && !state.allow_fuzzy {
        let short = format!(
            "calltape: fuzzy match refused in replay mode (allow fuzzy matches in replay to accept it): {line}"
        );
        tracing::error!("{short}\n{}", miss::indent(&diff, "    "));
        state.report().misses.push(short.clone());
        return Some(error_response(
            provider,
            StatusCode::NOT_FOUND,
            "cassette_miss",
            &short,
        ));
    }
    tracing::warn!(
        "fuzzy hit: {line}; re-record to make it exact\n{}",
        miss::indent(&diff, "    ")
    );
    let recording = match t.take(index) {
        Ok(r) => r,
        Err(e) => return Some(broken(state, provider, &e)),
    };
    drop(t);
    let mut report = state.report();
    report.fuzzy_hits.push(line);
    report.replayed += 1;
    drop(report);
    Some(recording.reply.response(state.replay_timing))
}

struct Forward {
    method: http::Method,
    url: String,
    headers: HeaderMap,
    body: Bytes,
    upstream_name: String,
}

enum Sink {
    Nothing,
    Record(Arc<Mutex<Tape>>),
    Verify(Option<Arc<Recording>>),
}

/// Counts an answer being produced, so shutdown can wait for it.
struct InFlight(Arc<State>);

impl InFlight {
    fn new(state: &Arc<State>) -> Self {
        state.inflight.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(state))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.inflight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Forwards the request and produces the client's response. The work runs in its own task, so a
/// client that goes away does not cut the recording.
async fn exchange(
    state: &Arc<State>,
    upstream: &UpstreamCfg,
    forward: Forward,
    request: Request,
    sink: Sink,
) -> HttpResponse {
    let provider = upstream.provider;
    let Some(client) = state.client.clone() else {
        return error_response(
            provider,
            StatusCode::INTERNAL_SERVER_ERROR,
            "calltape_error",
            "calltape: no upstream client in this mode",
        );
    };
    let (head_tx, head_rx) = oneshot::channel::<HttpResponse>();
    let guard = InFlight::new(state);
    let state = Arc::clone(state);
    tokio::spawn(async move {
        let _guard = guard;
        run_exchange(&state, client, provider, forward, request, sink, head_tx).await;
    });
    head_rx.await.unwrap_or_else(|_| {
        error_response(
            provider,
            StatusCode::BAD_GATEWAY,
            "upstream_error",
            "calltape: the upstream exchange failed",
        )
    })
}

#[allow(clippy::too_many_arguments)]
async fn run_exchange(
    state: &Arc<State>,
    client: reqwest::Client,
    provider: Provider,
    forward: Forward,
    request: Request,
    sink: Sink,
    head_tx: oneshot::Sender<HttpResponse>,
) {
    let mut headers = HeaderMap::new();
    for (name, value) in &forward.headers {
        let n = name.as_str();
        if HOP_HEADERS.contains(&n)
            || n == "host"
            || n == "accept-encoding"
            || n.starts_with("x-calltape")
        {
            continue;
        }
        headers.append(name.clone(), value.clone());
    }
    headers.insert(
        http::header::ACCEPT_ENCODING,
        HeaderValue::from_static("gzip, deflate, br, zstd"),
    );
    if let Some((name, value)) = state.auth.get(&forward.upstream_name) {
        headers.insert(name.clone(), value.clone());
    }
    state.report().forwarded += 1;
    let sent = client
        .request(forward.method.clone(), &forward.url)
        .headers(headers)
        .body(forward.body.clone())
        .send()
        .await;
    let mut upstream_resp = match sent {
        Ok(r) => r,
        Err(e) => {
            let msg = format!(
                "calltape: upstream {} unreachable: {}",
                forward.upstream_name,
                error_chain(&e)
            );
            tracing::error!("{msg}");
            state.report().errors.push(msg.clone());
            let _ = head_tx.send(error_response(
                provider,
                StatusCode::BAD_GATEWAY,
                "upstream_error",
                &msg,
            ));
            return;
        }
    };
    let start = Instant::now();
    let status = upstream_resp.status();
    let up_headers = upstream_resp.headers().clone();
    let content_type = up_headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let encoding = up_headers
        .get(http::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (mut decoder, undecodable) = match Decoder::for_encoding(encoding.as_deref()) {
        Ok(d) => (d, false),
        Err(msg) => {
            tracing::warn!("{msg}; storing the body as received");
            (Decoder::Identity, true)
        }
    };
    let mut client_headers = HeaderMap::new();
    for (name, value) in &up_headers {
        if HOP_HEADERS.contains(&name.as_str())
            && !(undecodable && name == http::header::CONTENT_ENCODING)
        {
            continue;
        }
        client_headers.append(name.clone(), value.clone());
    }
    let kept = kept_headers(state, &up_headers);

    let content = match stream_format(content_type.as_deref()).filter(|_| !undecodable) {
        Some(format) => {
            let (tx, rx) = mpsc::unbounded::<Result<Frame<Bytes>, io::Error>>();
            let mut resp = hyper::Response::new(StreamBody::new(rx).boxed_unsync());
            *resp.status_mut() = status;
            *resp.headers_mut() = client_headers;
            let _ = head_tx.send(resp);
            let mut splitter = Splitter::new(format, state.record_timing, start);
            let mut failed = false;
            loop {
                match upstream_resp.chunk().await {
                    Ok(Some(chunk)) => match decoder.feed(&chunk) {
                        Ok(decoded) if !decoded.is_empty() => {
                            splitter.push(&decoded, Instant::now());
                            // A client that went away does not stop the recording.
                            let _ = tx.unbounded_send(Ok(Frame::data(Bytes::from(decoded))));
                        }
                        Ok(_) => {}
                        Err(e) => {
                            tracing::warn!("cannot decode the upstream stream: {e}");
                            failed = true;
                            break;
                        }
                    },
                    Ok(None) => {
                        let decoder = std::mem::replace(&mut decoder, Decoder::Identity);
                        if let Some(tail) = decoder.finish().ok().filter(|t| !t.is_empty()) {
                            splitter.push(&tail, Instant::now());
                            let _ = tx.unbounded_send(Ok(Frame::data(Bytes::from(tail))));
                        }
                        break;
                    }
                    Err(e) => {
                        tracing::warn!("upstream stream failed: {}", error_chain(&e));
                        failed = true;
                        break;
                    }
                }
            }
            if failed {
                let _ = tx.unbounded_send(Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "upstream connection failed",
                )));
            }
            drop(tx);
            Content::Stream(splitter.finish(Instant::now(), failed))
        }
        None => {
            let mut data = Vec::new();
            let mut failure = None;
            loop {
                match upstream_resp.chunk().await {
                    Ok(Some(chunk)) => match decoder.feed(&chunk) {
                        Ok(d) => data.extend(d),
                        Err(e) => {
                            failure = Some(format!("cannot decode the upstream body: {e}"));
                            break;
                        }
                    },
                    Ok(None) => {
                        let decoder = std::mem::replace(&mut decoder, Decoder::Identity);
                        match decoder.finish() {
                            Ok(tail) => data.extend(tail),
                            Err(e) => {
                                failure = Some(format!("cannot decode the upstream body: {e}"))
                            }
                        }
                        break;
                    }
                    Err(e) => {
                        failure = Some(format!("the upstream body failed: {}", error_chain(&e)));
                        break;
                    }
                }
            }
            if let Some(msg) = failure {
                let msg = format!(
                    "calltape: {} {}: {msg}",
                    forward.upstream_name, request.path
                );
                tracing::error!("{msg}");
                state.report().errors.push(msg.clone());
                let _ = head_tx.send(error_response(
                    provider,
                    StatusCode::BAD_GATEWAY,
                    "upstream_error",
                    &msg,
                ));
                return;
            }
            let body = if undecodable {
                Body::Binary(calltape_recorder::http::Blob::new(
                    content_type
                        .clone()
                        .unwrap_or_else(|| "application/octet-stream".into()),
                    data.clone(),
                ))
            } else {
                capture::classify_body(content_type.as_deref(), &data)
            };
            let mut resp = hyper::Response::new(full(data));
            *resp.status_mut() = status;
            *resp.headers_mut() = client_headers;
            let _ = head_tx.send(resp);
            Content::Body(body)
        }
    };
    let mut response = Response {
        status: status.as_u16(),
        headers: kept,
        content,
    };
    match sink {
        Sink::Nothing => {}
        Sink::Record(tape) => {
            state.scrubber.scrub_response(&mut response);
            let interaction = Interaction { request, response };
            let saved = lock(&tape).record(interaction, state.mode, &state.scrubber);
            let mut report = state.report();
            match saved {
                Ok(()) => report.recorded += 1,
                Err(e) => {
                    tracing::error!("{e}");
                    if matches!(
                        e.kind(),
                        calltape_recorder::ErrorKind::SecretInBlob { .. }
                            | calltape_recorder::ErrorKind::SecretInLine { .. }
                    ) {
                        report.refused.push(e.to_string());
                    } else {
                        report.errors.push(e.to_string());
                    }
                }
            }
        }
        Sink::Verify(expected) => {
            let mut report = state.report();
            match expected {
                None => {
                    let line = format!(
                        "{} {} {}: nothing recorded to compare with",
                        request.method, request.upstream, request.path
                    );
                    tracing::warn!("{line}");
                    report.drift.push(line);
                }
                Some(recorded) => {
                    for d in super::verify::compare(&recorded.interaction.response, &response) {
                        let line = format!(
                            "{} {} {}: {d}",
                            request.method, request.upstream, request.path
                        );
                        tracing::warn!("drift: {line}");
                        report.drift.push(line);
                    }
                }
            }
        }
    }
}

fn kept_headers(state: &State, headers: &HeaderMap) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, value) in headers {
        let n = name.as_str();
        if HOP_HEADERS.contains(&n) || state.scrubber.is_secret_name(n) {
            continue;
        }
        // An allow-list: what is not kept by default or by name is dropped.
        let keep = state.keep_headers.iter().any(|k| name_matches(k, n))
            || (calltape_recorder::http::is_kept_response_header(n)
                && !state.drop_headers.iter().any(|p| name_matches(p, n)));
        if !keep {
            continue;
        }
        if let Ok(v) = value.to_str() {
            out.push((n.to_owned(), v.to_owned()));
        }
    }
    out
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_cassette_upstream_and_rest() {
        let table = [
            (
                "/openai/v1/chat/completions",
                None,
                "openai",
                "/v1/chat/completions",
            ),
            ("/openai", None, "openai", "/"),
            (
                "/_cassette/t1/anthropic/v1/messages",
                Some("t1"),
                "anthropic",
                "/v1/messages",
            ),
        ];
        for (path, cassette, up, rest) in table {
            assert_eq!(split_path(path), (cassette, up, rest), "{path}");
        }
    }
}

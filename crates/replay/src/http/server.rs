//! The HTTP side: accepting connections, routing, and answering from a cassette (forwarding and
//! recording are in `exchange`).

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use calltape_recorder::http::Request;
use http::StatusCode;
use http::request::Parts;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::access::{refuse, strip_path_token};
use super::capture::{self, AUTH_HEADERS};
use super::cassette_choice::cassette_path;
use super::exchange::{Forward, Sink, exchange};
use super::flush::{CountingIo, FlushBeforeError};
use super::miss::{self, Provider, error_response, request_diff};
use super::options::Exhaustion;
use super::report::{Closest, FuzzyHit};
use super::response::HttpResponse;
use super::status;
use super::tape::{Lookup, Tape, lock};
use super::{CASSETTE_HEADER, State, UpstreamCfg};
use crate::Mode;
use crate::cassette_name_in_path;

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
                    // A body that fails holds its error until the bytes before it are sent.
                    let (io, flushes) = CountingIo::new(stream);
                    let svc = service_fn(move |req| {
                        let state = Arc::clone(&state);
                        let flushes = Arc::clone(&flushes);
                        async move {
                            let resp = handle(state, req).await;
                            Ok::<_, Infallible>(resp.map(|b| FlushBeforeError::new(b, flushes)))
                        }
                    });
                    // Flattened writes: frames (one per replayed event) are copied into one buffer
                    // that is flushed when the body has nothing ready, instead of queueing a
                    // vectored write for every few events.
                    let _ = http1::Builder::new()
                        .keep_alive(true)
                        .writev(false)
                        .serve_connection(TokioIo::new(io), svc)
                        .await;
                });
            }
            _ = stop.changed() => break,
        }
    }
}

async fn handle(state: Arc<State>, req: hyper::Request<Incoming>) -> HttpResponse {
    if let Err(refusal) = state.guard.check(req.headers()) {
        return refuse(refusal.status(), refusal.message());
    }
    match route(&state, req).await {
        Ok(r) => r,
        Err(r) => *r,
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

/// Where a request goes: its upstream, the rest of its path and its query, and its cassette (none
/// in live mode).
struct Target<'s> {
    upstream_name: String,
    upstream: &'s UpstreamCfg,
    rest: String,
    query: Option<String>,
    cassette: Option<PathBuf>,
}

/// The request's path after the per-run path prefix, if the proxy serves under one.
fn request_path<'p>(state: &State, parts: &'p Parts) -> Result<&'p str, Box<HttpResponse>> {
    match &state.path_token {
        Some(token) => strip_path_token(parts.uri.path(), token).ok_or_else(|| {
            Box::new(refuse(
                StatusCode::NOT_FOUND,
                "this proxy adds an API key upstream, so it serves only under its per-run path \
                 prefix; use the URL it printed or gave the command (CALLTAPE_PROXY_URL)",
            ))
        }),
        None => Ok(parts.uri.path()),
    }
}

/// Resolves a request's upstream and cassette from its path and headers.
fn target<'s>(state: &'s State, parts: &Parts) -> Result<Target<'s>, Box<HttpResponse>> {
    let path = request_path(state, parts)?;
    let (prefix_cassette, upstream_name, rest) = split_path(path);
    let Some(upstream) = state.upstreams.get(upstream_name) else {
        let mut names: Vec<&str> = state.upstreams.keys().map(String::as_str).collect();
        names.sort_unstable();
        return Err(Box::new(error_response(
            Provider::OpenAi,
            StatusCode::NOT_FOUND,
            "unknown_upstream",
            &format!(
                "calltape: no upstream named {upstream_name:?}; the proxy serves /<name>/… for {}",
                names.join(", ")
            ),
        )));
    };
    let header_cassette = parts
        .headers
        .get(CASSETTE_HEADER)
        .and_then(|v| v.to_str().ok());
    let cassette = if state.mode == Mode::Live {
        None
    } else {
        let prefix_cassette = prefix_cassette.map(cassette_name_in_path);
        let chosen = header_cassette.or(prefix_cassette.as_deref());
        Some(cassette_path(state, chosen).map_err(|m| {
            Box::new(error_response(
                upstream.provider,
                StatusCode::BAD_REQUEST,
                "cassette_error",
                &format!("calltape: {m}"),
            ))
        })?)
    };
    Ok(Target {
        upstream_name: upstream_name.to_owned(),
        upstream,
        rest: rest.to_owned(),
        query: parts.uri.query().map(str::to_owned),
        cassette,
    })
}

async fn read_body(body: Incoming, provider: Provider) -> Result<Bytes, Box<HttpResponse>> {
    match http_body_util::Limited::new(body, MAX_REQUEST_BODY)
        .collect()
        .await
    {
        Ok(b) => Ok(b.to_bytes()),
        Err(e) => Err(Box::new(error_response(
            provider,
            StatusCode::BAD_REQUEST,
            "request_body",
            &format!("calltape: cannot read the request body: {e}"),
        ))),
    }
}

/// The request as a cassette holds it: scrubbed, with its match key. The credentials it carried
/// become secrets the scrubber looks for from now on.
fn request_record(state: &State, parts: &Parts, target: &Target<'_>, body: &Bytes) -> Request {
    for name in AUTH_HEADERS {
        for v in parts.headers.get_all(*name) {
            if let Ok(v) = v.to_str() {
                state.scrubber.add_header_secret(name, v);
            }
        }
    }
    let mut request = capture::request_record(
        &parts.method,
        &target.upstream_name,
        &target.rest,
        target.query.as_deref(),
        &parts.headers,
        body,
    );
    state.scrubber.scrub_request(&mut request);
    request.key = state.normalizer.key(&request);
    request
}

/// The cassette's tape, loaded on first use; the report lists every cassette the run used.
fn open_tape(
    state: &State,
    path: &Path,
    provider: Provider,
) -> Result<Arc<Mutex<Tape>>, Box<HttpResponse>> {
    let tape = state.tape(path).map_err(|e| {
        tracing::error!("{e}");
        Box::new(error_response(
            provider,
            StatusCode::INTERNAL_SERVER_ERROR,
            "cassette_error",
            &format!("calltape: {e}"),
        ))
    })?;
    let missing = lock(&tape).missing();
    state.report().cassette(path).missing = missing;
    Ok(tape)
}

async fn route(
    state: &Arc<State>,
    req: hyper::Request<Incoming>,
) -> Result<HttpResponse, Box<HttpResponse>> {
    let (parts, body) = req.into_parts();
    if let Some(name) = request_path(state, &parts)?.strip_prefix(status::PREFIX) {
        return Ok(status::answer(state, &parts.method, name));
    }
    let target = target(state, &parts)?;
    let (upstream, provider) = (target.upstream, target.upstream.provider);
    let body = read_body(body, provider).await?;
    let mut request = request_record(state, &parts, &target, &body);
    let tape = match &target.cassette {
        Some(path) => Some(open_tape(state, path, provider)?),
        None => None,
    };
    let query = target.query.as_deref().map(|q| format!("?{q}"));
    let forward = Forward {
        method: parts.method,
        url: format!(
            "{}{}{}",
            upstream.base,
            target.rest,
            query.unwrap_or_default()
        ),
        headers: parts.headers,
        body,
        upstream_name: target.upstream_name,
    };
    let (Some(tape), Some(cassette)) = (tape, target.cassette) else {
        // Live mode: no cassette.
        return Ok(exchange(state, upstream, forward, request, Sink::Nothing).await);
    };
    match state.mode {
        Mode::Live => Ok(exchange(state, upstream, forward, request, Sink::Nothing).await),
        Mode::Record => {
            request.seq = lock(&tape).next_seq(&request.key);
            Ok(exchange(state, upstream, forward, request, Sink::Record(tape)).await)
        }
        Mode::Verify => {
            let expected = match lock(&tape).lookup(&request.key, state.exhaustion) {
                Ok(Lookup::Hit(r)) => Some(r),
                Ok(_) => None,
                Err(e) => return Err(Box::new(broken(state, provider, &e))),
            };
            let sink = Sink::Verify { cassette, expected };
            Ok(exchange(state, upstream, forward, request, sink).await)
        }
        Mode::Replay | Mode::Auto | Mode::Append => {
            from_cassette(state, upstream, forward, request, &tape, &cassette).await
        }
    }
}

/// Replay, auto and append: the cassette answers what it can; replay answers the rest with a 404,
/// the other modes forward and record it.
async fn from_cassette(
    state: &Arc<State>,
    upstream: &UpstreamCfg,
    forward: Forward,
    mut request: Request,
    tape: &Arc<Mutex<Tape>>,
    cassette: &Path,
) -> Result<HttpResponse, Box<HttpResponse>> {
    let provider = upstream.provider;
    // `append` grows the cassette: only an exact, unused recording answers, and anything else
    // (a new request, a repeat beyond the recorded count, a near match) is recorded. The other
    // modes let the exhaustion policy and fuzzy matching answer from the cassette first.
    let exhaustion = match state.mode {
        Mode::Append => Exhaustion::Error,
        _ => state.exhaustion,
    };
    let found = lock(tape)
        .lookup(&request.key, exhaustion)
        .map_err(|e| Box::new(broken(state, provider, &e)))?;
    let why = match found {
        Lookup::Hit(r) => {
            let mut report = state.report();
            report.replayed += 1;
            report.cassette(cassette).hits += 1;
            return Ok(r.reply.response(state.replay_timing));
        }
        Lookup::Exhausted(n) => {
            format!("all {n} recordings of this request were already served")
        }
        Lookup::Miss => "no recording".to_owned(),
    };
    if state.mode != Mode::Append
        && let Some(resp) = try_fuzzy(state, tape, &request, provider, cassette)
    {
        return Ok(resp);
    }
    if state.mode == Mode::Replay {
        let (miss, short, long) = miss::describe_miss(
            &mut lock(tape),
            &request,
            &state.normalizer,
            &why,
            &state.rerecord_hint,
        );
        tracing::error!("{long}");
        let mut report = state.report();
        report.misses.push(short.clone());
        report.cassette(cassette).misses.push(miss);
        return Err(Box::new(error_response(
            provider,
            StatusCode::NOT_FOUND,
            "cassette_miss",
            &short,
        )));
    }
    request.seq = lock(tape).next_seq(&request.key);
    let sink = Sink::Record(Arc::clone(tape));
    Ok(exchange(state, upstream, forward, request, sink).await)
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

fn try_fuzzy(
    state: &State,
    tape: &Mutex<Tape>,
    request: &Request,
    provider: Provider,
    cassette: &Path,
) -> Option<HttpResponse> {
    let threshold = state.fuzzy?;
    let mut t = lock(tape);
    let &(index, ratio) = t
        .ranked(request, &state.normalizer, true)
        .first()
        .filter(|(_, r)| *r >= threshold)?;
    let recorded = &t.get(index).request;
    let diff = request_diff(&state.normalizer, recorded, request);
    let line = miss::shown(&format!(
        "{} {} {} (key {}) matched recording key {} seq {} at {:.0}% similarity",
        request.method,
        request.upstream,
        request.path,
        request.key,
        recorded.key,
        recorded.seq,
        ratio * 100.0
    ));
    let mut hit = FuzzyHit {
        method: request.method.clone(),
        upstream: request.upstream.clone(),
        path: request.path.clone(),
        refused: false,
        matched: Closest::new(recorded, ratio, diff),
    };
    if state.mode == Mode::Replay && !state.allow_fuzzy {
        let short = format!(
            "calltape: fuzzy match refused in replay mode (allow fuzzy matches in replay to accept it): {line}"
        );
        let diff = miss::indent(&hit.matched.diff, "    ");
        tracing::error!("{short}\n{}", miss::shown(&diff));
        hit.refused = true;
        let mut report = state.report();
        report.misses.push(short.clone());
        report.cassette(cassette).fuzzy.push(hit);
        return Some(error_response(
            provider,
            StatusCode::NOT_FOUND,
            "cassette_miss",
            &short,
        ));
    }
    tracing::warn!(
        "fuzzy hit: {line}; re-record to make it exact\n{}",
        miss::shown(&miss::indent(&hit.matched.diff, "    "))
    );
    let recording = match t.take(index) {
        Ok(r) => r,
        Err(e) => return Some(broken(state, provider, &e)),
    };
    drop(t);
    let mut report = state.report();
    report.fuzzy_hits.push(line);
    report.replayed += 1;
    report.cassette(cassette).fuzzy.push(hit);
    drop(report);
    Some(recording.reply.response(state.replay_timing))
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

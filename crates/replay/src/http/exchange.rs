//! Forwarding a request upstream, passing the answer on to the client as it arrives, and recording
//! it or comparing it with its recording.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use calltape_recorder::http::{Blob, Body, Content, Interaction, Request, Response, Stream};
use futures::channel::mpsc;
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tokio::sync::oneshot;

use super::capture::{self, Decoder, HOP_HEADERS, name_matches};
use super::events::{Splitter, stream_format};
use super::miss::{Provider, error_response};
use super::report::Drift;
use super::response::{HttpResponse, full};
use super::tape::lock;
use super::tape::{Recording, Tape};
use super::{State, UpstreamCfg};

/// What goes upstream.
pub(crate) struct Forward {
    pub(crate) method: http::Method,
    pub(crate) url: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) upstream_name: String,
}

/// What becomes of the upstream's answer besides reaching the client.
pub(crate) enum Sink {
    /// Nothing (live mode).
    Nothing,
    /// It is recorded into the tape.
    Record(Arc<Mutex<Tape>>),
    /// Its structure is compared with the recording of the same request, if there is one.
    Verify {
        cassette: PathBuf,
        expected: Option<Arc<Recording>>,
    },
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
pub(crate) async fn exchange(
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
        let answer = Answer { provider, head_tx };
        run_exchange(&state, client, forward, request, sink, answer).await;
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

/// Where the client's response goes, once its head is known.
struct Answer {
    provider: Provider,
    head_tx: oneshot::Sender<HttpResponse>,
}

impl Answer {
    /// Answers with a provider-shaped 502 and notes the failure in the report.
    fn fail(self, state: &State, msg: String) {
        tracing::error!("{msg}");
        state.report().errors.push(msg.clone());
        let _ = self.head_tx.send(error_response(
            self.provider,
            StatusCode::BAD_GATEWAY,
            "upstream_error",
            &msg,
        ));
    }
}

async fn run_exchange(
    state: &Arc<State>,
    client: reqwest::Client,
    forward: Forward,
    request: Request,
    sink: Sink,
    answer: Answer,
) {
    state.report().forwarded += 1;
    let sent = client
        .request(forward.method.clone(), &forward.url)
        .headers(upstream_headers(state, &forward))
        .body(forward.body.clone())
        .send()
        .await;
    let mut upstream = match sent {
        Ok(r) => r,
        Err(e) => {
            let msg = format!(
                "calltape: upstream {} unreachable: {}",
                forward.upstream_name,
                error_chain(&e)
            );
            return answer.fail(state, msg);
        }
    };
    let start = Instant::now();
    let head = Head::new(state, &upstream);
    let format = stream_format(head.content_type.as_deref()).filter(|_| !head.undecodable);
    let (mut decoder, status) = (head.decoder, head.status);
    let content = match format {
        Some(format) => {
            let (tx, rx) = mpsc::unbounded::<Result<Frame<Bytes>, io::Error>>();
            let mut resp = hyper::Response::new(StreamBody::new(rx).boxed_unsync());
            *resp.status_mut() = status;
            *resp.headers_mut() = head.client_headers;
            let _ = answer.head_tx.send(resp);
            let splitter = Splitter::new(format, state.record_timing, start);
            Content::Stream(tee(&mut upstream, decoder, splitter, tx).await)
        }
        None => {
            let data = match read_whole(&mut upstream, &mut decoder).await {
                Ok(data) => data,
                Err(msg) => {
                    let msg = format!(
                        "calltape: {} {}: {msg}",
                        forward.upstream_name, request.path
                    );
                    return answer.fail(state, msg);
                }
            };
            let content_type = head.content_type.as_deref();
            let body = if head.undecodable {
                let media = content_type.unwrap_or("application/octet-stream");
                Body::Binary(Blob::new(media, data.clone()))
            } else {
                capture::classify_body(content_type, &data)
            };
            let mut resp = hyper::Response::new(full(data));
            *resp.status_mut() = status;
            *resp.headers_mut() = head.client_headers;
            let _ = answer.head_tx.send(resp);
            Content::Body(body)
        }
    };
    let response = Response {
        status: status.as_u16(),
        headers: head.kept,
        content,
    };
    settle(state, request, response, sink);
}

/// The headers sent upstream: the client's, without hop-by-hop ones, calltape's own and the host,
/// with the encodings the proxy decodes and the key the proxy holds for this upstream.
fn upstream_headers(state: &State, forward: &Forward) -> HeaderMap {
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
    headers
}

/// The upstream answer's head: what the client gets, what the cassette keeps, and how to decode
/// the body.
struct Head {
    status: StatusCode,
    client_headers: HeaderMap,
    kept: Vec<(String, String)>,
    content_type: Option<String>,
    decoder: Decoder,
    /// The body's encoding is one calltape cannot decode: it is passed on and stored as received.
    undecodable: bool,
}

impl Head {
    fn new(state: &State, upstream: &reqwest::Response) -> Self {
        let headers = upstream.headers();
        let text = |name| {
            headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = text(http::header::CONTENT_TYPE);
        let encoding = text(http::header::CONTENT_ENCODING);
        let (decoder, undecodable) = match Decoder::for_encoding(encoding.as_deref()) {
            Ok(d) => (d, false),
            Err(msg) => {
                tracing::warn!("{msg}; storing the body as received");
                (Decoder::Identity, true)
            }
        };
        let mut client_headers = HeaderMap::new();
        for (name, value) in headers {
            if HOP_HEADERS.contains(&name.as_str())
                && !(undecodable && name == http::header::CONTENT_ENCODING)
            {
                continue;
            }
            client_headers.append(name.clone(), value.clone());
        }
        Self {
            status: upstream.status(),
            client_headers,
            kept: kept_headers(state, headers),
            content_type,
            decoder,
            undecodable,
        }
    }
}

/// Passes a stream on to the client as it arrives and splits it into events. A client that went
/// away does not stop the recording; an upstream failure reaches the client after every byte
/// before it.
async fn tee(
    upstream: &mut reqwest::Response,
    mut decoder: Decoder,
    mut splitter: Splitter,
    tx: mpsc::UnboundedSender<Result<Frame<Bytes>, io::Error>>,
) -> Stream {
    let forward = |data: Vec<u8>, splitter: &mut Splitter| {
        splitter.push(&data, Instant::now());
        let _ = tx.unbounded_send(Ok(Frame::data(Bytes::from(data))));
    };
    let failed = loop {
        match upstream.chunk().await {
            Ok(Some(chunk)) => match decoder.feed(&chunk) {
                Ok(decoded) if !decoded.is_empty() => forward(decoded, &mut splitter),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!("cannot decode the upstream stream: {e}");
                    break true;
                }
            },
            Ok(None) => {
                let decoder = std::mem::replace(&mut decoder, Decoder::Identity);
                if let Some(tail) = decoder.finish().ok().filter(|t| !t.is_empty()) {
                    forward(tail, &mut splitter);
                }
                break false;
            }
            Err(e) => {
                tracing::warn!("upstream stream failed: {}", error_chain(&e));
                break true;
            }
        }
    };
    if failed {
        let _ = tx.unbounded_send(Err(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "upstream connection failed",
        )));
    }
    splitter.finish(Instant::now(), failed)
}

/// Reads and decodes a whole body, or says why it could not.
async fn read_whole(
    upstream: &mut reqwest::Response,
    decoder: &mut Decoder,
) -> Result<Vec<u8>, String> {
    let mut data = Vec::new();
    loop {
        match upstream.chunk().await {
            Ok(Some(chunk)) => match decoder.feed(&chunk) {
                Ok(d) => data.extend(d),
                Err(e) => return Err(format!("cannot decode the upstream body: {e}")),
            },
            Ok(None) => {
                let decoder = std::mem::replace(decoder, Decoder::Identity);
                return match decoder.finish() {
                    Ok(tail) => {
                        data.extend(tail);
                        Ok(data)
                    }
                    Err(e) => Err(format!("cannot decode the upstream body: {e}")),
                };
            }
            Err(e) => return Err(format!("the upstream body failed: {}", error_chain(&e))),
        }
    }
}

/// Records the answer, or compares it with its recording, as the sink says.
fn settle(state: &State, request: Request, mut response: Response, sink: Sink) {
    match sink {
        Sink::Nothing => {}
        Sink::Record(tape) => {
            state.scrubber.scrub_response(&mut response);
            let interaction = Interaction { request, response };
            let saved = lock(&tape).record(interaction, state.mode, &state.scrubber);
            let saved = saved.map(|refused| state.refused(refused));
            let mut report = state.report();
            match saved {
                Ok(()) => report.recorded += 1,
                Err(e) => {
                    tracing::error!("{e}");
                    if e.is_refusal() {
                        report.refused.push(e.to_string());
                    } else {
                        report.errors.push(e.to_string());
                    }
                }
            }
        }
        Sink::Verify { cassette, expected } => {
            let differences = match expected {
                None => vec!["nothing recorded to compare with".to_owned()],
                Some(recorded) => super::verify::compare(&recorded.interaction.response, &response),
            };
            let mut report = state.report();
            for difference in differences {
                let line = super::miss::shown(&format!(
                    "{} {} {}: {difference}",
                    request.method, request.upstream, request.path
                ));
                tracing::warn!("drift: {line}");
                report.drift.push(line);
                report.cassette(&cassette).drift.push(Drift {
                    method: request.method.clone(),
                    upstream: request.upstream.clone(),
                    path: request.path.clone(),
                    difference,
                });
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

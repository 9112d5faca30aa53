//! Event streams: the one answering a POST (resumed with `Last-Event-ID` when it ends early) and the
//! server's own GET stream, both read by one pump; and the check that makes a body or an event a frame.

use std::{sync::Arc, time::Duration};

use bytes::{Bytes, BytesMut};
use http::{Method, StatusCode, header::ACCEPT};
use tokio::sync::{Notify, mpsc};

use super::{
    ACCEPT_SSE, Core, DEFAULT_RETRY, GET_ATTEMPTS, LAST_EVENT_ID, MAX_MESSAGE, MAX_RETRY,
    content_type, header_value,
    post::{broken, protocol_error, quote},
    send_event,
};
use crate::{
    jsonrpc::{IncomingPeek, OutgoingPeek},
    upstream::{
        Frame, UpstreamEvent,
        http::transport::{BodyStream, HttpRequest, SendError, Transport, next_chunk},
        sse::{SseEvent, SseParser},
    },
};

/// What reading one event stream found.
#[derive(Debug, Default)]
struct StreamState {
    /// The answer to the request arrived (or none is expected).
    answered: bool,
    /// An event that was not JSON-RPC, and why.
    bad_event: Option<String>,
    /// The id of the last event, for `Last-Event-ID`.
    last_event_id: String,
    /// The reconnection delay the server asked for.
    retry_ms: Option<u64>,
    /// How many events arrived.
    events: usize,
}

/// How an event stream ended.
#[derive(Debug)]
enum StreamEnd {
    /// The server closed it.
    Ended,
    /// The connection broke.
    Broke(String),
    /// An event outgrew the size limit.
    TooLarge,
}

/// Relays the messages of one event stream until it ends, watching for the answer to `info`.
async fn pump<T: Transport>(
    core: &Core<T>,
    mut body: BodyStream,
    info: &OutgoingPeek,
    events: &mpsc::Sender<UpstreamEvent>,
    state: &mut StreamState,
) -> StreamEnd {
    let mut parser = SseParser::new(MAX_MESSAGE);
    let mut batch = Vec::new();
    let end = loop {
        let chunk = match next_chunk(&mut body).await {
            None => break StreamEnd::Ended,
            Some(Err(reason)) => break StreamEnd::Broke(reason),
            Some(Ok(chunk)) => chunk,
        };
        if parser.feed(&chunk, &mut batch).is_err() {
            break StreamEnd::TooLarge;
        }
        for event in batch.drain(..) {
            state.events += 1;
            match message_of(event) {
                None => {}
                Some(Ok((message, incoming))) => {
                    if incoming.response_id.is_some() && incoming.response_id == info.id {
                        if info.is_initialize()
                            && let Some(version) = incoming.protocol_version
                            && let Err(reason) = core.adopt_version(version)
                        {
                            // Not passed on: the request is answered with an upstream protocol error.
                            state.bad_event = Some(reason);
                            continue;
                        }
                        state.answered = true;
                    }
                    send_event(events, UpstreamEvent::Message(message)).await;
                }
                Some(Err(reason)) => {
                    tracing::warn!(%reason, "skipping an event from the upstream that is not JSON-RPC");
                    state.bad_event = Some(reason);
                }
            }
        }
        if !parser.last_event_id().is_empty() {
            state.last_event_id = parser.last_event_id().to_owned();
        }
    };
    if let Some(ms) = parser.retry_ms() {
        state.retry_ms = Some(ms);
    }
    end
}

/// Reads the event stream answering one POST. When it ends before the answer and its events had ids,
/// the stream is resumed with a GET carrying `Last-Event-ID`, as servers that close streams early expect.
pub(super) async fn read_post_stream<T: Transport>(
    core: &Core<T>,
    body: BodyStream,
    frame: Frame,
    info: &OutgoingPeek,
    events: &mpsc::Sender<UpstreamEvent>,
) {
    let mut state = StreamState {
        answered: !info.is_request() || info.batch,
        ..StreamState::default()
    };
    let mut end = pump(core, body, info, events, &mut state).await;
    let mut attempts = 0;
    while !state.answered
        && state.bad_event.is_none()
        && !matches!(end, StreamEnd::TooLarge)
        && !state.last_event_id.is_empty()
        && info.meta_version.is_none()
        && attempts < GET_ATTEMPTS
    {
        attempts += 1;
        let delay = state
            .retry_ms
            .map_or(DEFAULT_RETRY, Duration::from_millis)
            .min(MAX_RETRY);
        tokio::time::sleep(delay).await;
        let (mut headers, _, _) = core.session_headers();
        headers.insert(ACCEPT, ACCEPT_SSE);
        if let Some(id) = header_value(&state.last_event_id) {
            headers.insert(LAST_EVENT_ID, id);
        }
        let request = HttpRequest {
            method: Method::GET,
            headers,
            body: None,
        };
        match core.transport.send(request).await {
            Err(err) => {
                tracing::debug!(?err, "resuming the answer's event stream failed");
                end = StreamEnd::Broke(err.reason().to_owned());
            }
            Ok(response)
                if response.status.is_success()
                    && content_type(&response.headers) == "text/event-stream" =>
            {
                tracing::debug!(last_event_id = %state.last_event_id, "resumed the answer's event stream");
                end = pump(core, response.body, info, events, &mut state).await;
            }
            Ok(response) => {
                tracing::debug!(status = %response.status, "the upstream refused to resume the answer's event stream");
                break;
            }
        }
    }
    if state.answered {
        return;
    }
    let event = match (state.bad_event, end) {
        (Some(reason), _) => protocol_error(
            frame,
            StatusCode::OK,
            format!("upstream sent an event with {reason}"),
        ),
        (None, StreamEnd::TooLarge) => protocol_error(
            frame,
            StatusCode::OK,
            format!("upstream sent an event over the {MAX_MESSAGE}-byte limit"),
        ),
        (None, StreamEnd::Broke(reason)) => broken(frame, StatusCode::OK, reason),
        (None, StreamEnd::Ended) => UpstreamEvent::Undelivered {
            frame,
            maybe_delivered: true,
            reason: "the upstream's event stream ended before the answer".to_owned(),
        },
    };
    send_event(events, event).await;
}

/// The server's own stream (GET), opened after the handshake and reopened after a drop with
/// `Last-Event-ID`, until the server says it offers none, the session changes, or the link closes.
/// When the endpoint refuses the connection, it says so on `refused` and ends.
pub(super) async fn get_stream<T: Transport>(
    core: Arc<Core<T>>,
    events: mpsc::Sender<UpstreamEvent>,
    refused: &Notify,
) {
    let session_at_start = core.session().id.clone();
    let mut last_event_id = String::new();
    let mut delay = DEFAULT_RETRY;
    let mut failures = 0;
    loop {
        let (mut headers, session, _) = core.session_headers();
        if session != session_at_start {
            return;
        }
        headers.insert(ACCEPT, ACCEPT_SSE);
        if let Some(id) = header_value(&last_event_id).filter(|_| !last_event_id.is_empty()) {
            headers.insert(LAST_EVENT_ID, id);
        }
        let request = HttpRequest {
            method: Method::GET,
            headers,
            body: None,
        };
        let mut received = false;
        match core.transport.send(request).await {
            Err(SendError::NotSent(reason)) => {
                tracing::debug!(%reason, "the upstream refused the connection of its event stream");
                refused.notify_one();
                return;
            }
            Err(err) => tracing::debug!(?err, "the upstream's event stream could not be opened"),
            Ok(response) => {
                let status = response.status;
                if status == StatusCode::METHOD_NOT_ALLOWED {
                    tracing::debug!("the upstream offers no event stream of its own");
                    return;
                }
                if status.is_client_error() || status.is_redirection() {
                    tracing::debug!(%status, "the upstream refused its event stream");
                    return;
                }
                if status.is_success() {
                    if content_type(&response.headers) != "text/event-stream" {
                        tracing::debug!(%status, "the upstream's GET answer is not an event stream");
                        return;
                    }
                    failures = 0;
                    let mut state = StreamState {
                        last_event_id: last_event_id.clone(),
                        ..StreamState::default()
                    };
                    let end = pump(
                        &core,
                        response.body,
                        &OutgoingPeek::default(),
                        &events,
                        &mut state,
                    )
                    .await;
                    if matches!(end, StreamEnd::TooLarge) {
                        tracing::warn!(
                            "the upstream's event stream sent an event over the size limit"
                        );
                    }
                    received = state.events > 0 || state.last_event_id != last_event_id;
                    last_event_id = state.last_event_id;
                    if let Some(ms) = state.retry_ms {
                        delay = Duration::from_millis(ms).min(MAX_RETRY);
                    }
                } else {
                    tracing::debug!(%status, "the upstream's event stream failed");
                }
            }
        }
        if received {
            failures = 0;
        } else {
            failures += 1;
            if failures >= GET_ATTEMPTS {
                tracing::debug!("giving up on the upstream's event stream");
                return;
            }
        }
        let wait = delay.saturating_mul(1 << failures.min(5)).min(MAX_RETRY);
        tokio::time::sleep(wait).await;
    }
}

/// The JSON-RPC message an SSE event carries; `None` for events of other types and empty ones.
fn message_of(event: SseEvent) -> Option<Result<(Frame, IncomingPeek), String>> {
    if !event.is_message() || event.data.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(to_frame(event.data))
}

/// Checks that `body` is one JSON-RPC message (an object or a batch) and makes it a frame: trimmed, and
/// on one line, which is safe because a raw line break in valid JSON can only be whitespace.
pub(super) fn to_frame(body: Bytes) -> Result<(Frame, IncomingPeek), String> {
    let Some(incoming) = IncomingPeek::peek(&body) else {
        return Err(format!("a body that is not JSON-RPC ({})", quote(&body)));
    };
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    let end = body
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    let body = body.slice(start..end);
    let frame = if memchr::memchr2(b'\n', b'\r', &body).is_some() {
        let mut one_line = BytesMut::with_capacity(body.len());
        for part in body.split(|b| *b == b'\n' || *b == b'\r') {
            one_line.extend_from_slice(part);
        }
        one_line.freeze()
    } else {
        body
    };
    Ok((frame, incoming))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_trimmed_and_put_on_one_line() {
        let (frame, incoming) =
            to_frame(Bytes::from_static(b"\n {\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 1,\n  \"result\": {\"text\": \"a\\nb\"}\n}\n")).unwrap();
        assert_eq!(
            &frame[..],
            br#"{  "jsonrpc": "2.0",  "id": 1,  "result": {"text": "a\nb"}}"#
        );
        assert_eq!(incoming.response_id, Some(serde_json::json!(1)));
        let (frame, _) = to_frame(Bytes::from_static(br#"{"a":1}"#)).unwrap();
        assert_eq!(&frame[..], br#"{"a":1}"#);
        let err =
            to_frame(Bytes::from_static(b"<html><body>Bad Gateway</body></html>")).unwrap_err();
        assert_eq!(
            err,
            "a body that is not JSON-RPC (<html><body>Bad Gateway</body></html>)"
        );
    }
}

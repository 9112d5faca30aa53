//! A recorded answer serialised once into the bytes replay sends, so serving it again costs no
//! allocation per event.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use calltape_recorder::http::{Body, Content, Response, StreamEnd, to_canonical_string};
use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;

use super::ProxyBody;
use super::capture::HOP_HEADERS;
use super::events::rechunk;
use super::options::ReplayTiming;

/// The head and body of a recorded answer, ready to send any number of times.
pub(crate) struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: ReplyBody,
}

enum ReplyBody {
    Whole(Bytes),
    Stream(Arc<Events>),
}

/// A stream's events: all bytes in one buffer, and each event a slice of it.
struct Events {
    all: Bytes,
    frames: Vec<Bytes>,
    delays: Vec<u64>,
    reset: bool,
}

type Item = Result<Frame<Bytes>, io::Error>;

impl Reply {
    pub(crate) fn new(r: &Response) -> Self {
        let mut headers = HeaderMap::with_capacity(r.headers.len());
        for (name, value) in &r.headers {
            if HOP_HEADERS.contains(&name.as_str()) {
                continue;
            }
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                headers.append(n, v);
            }
        }
        let body = match &r.content {
            Content::Body(b) => ReplyBody::Whole(body_bytes(b)),
            Content::Stream(s) => {
                let mut all = BytesMut::new();
                let mut ends = Vec::with_capacity(s.events.len());
                for e in &s.events {
                    all.extend_from_slice(&e.to_bytes(s.format));
                    ends.push(all.len());
                }
                let all = all.freeze();
                let mut start = 0;
                let frames = ends
                    .into_iter()
                    .map(|end| {
                        let f = all.slice(start..end);
                        start = end;
                        f
                    })
                    .collect();
                ReplyBody::Stream(Arc::new(Events {
                    all,
                    frames,
                    delays: s.events.iter().map(|e| e.delay_ms).collect(),
                    reset: matches!(s.end, StreamEnd::Reset { .. }),
                }))
            }
        };
        Self {
            status: StatusCode::from_u16(r.status).unwrap_or(StatusCode::OK),
            headers,
            body,
        }
    }

    /// The HTTP response that replays this answer.
    pub(crate) fn response(&self, timing: ReplayTiming) -> hyper::Response<ProxyBody> {
        let body = match &self.body {
            ReplyBody::Whole(b) => Full::new(b.clone())
                .map_err(|never| match never {})
                .boxed_unsync(),
            ReplyBody::Stream(ev) => stream_body(ev, timing),
        };
        let mut resp = hyper::Response::new(body);
        *resp.status_mut() = self.status;
        *resp.headers_mut() = self.headers.clone();
        resp
    }
}

/// The bytes of a stored whole body as served on replay.
pub(crate) fn body_bytes(body: &Body) -> Bytes {
    match body {
        Body::Empty => Bytes::new(),
        Body::Json(v) => Bytes::from(to_canonical_string(v)),
        Body::Text(t) => Bytes::from(t.clone()),
        Body::Binary(b) => Bytes::copy_from_slice(&b.data),
    }
}

fn stream_body(ev: &Arc<Events>, timing: ReplayTiming) -> ProxyBody {
    let reset = reset_at_end(ev.reset);
    match timing {
        // One frame per event, each a slice of the shared buffer.
        ReplayTiming::Fast => {
            let ev = Arc::clone(ev);
            let frames = futures::stream::iter(0..ev.frames.len())
                .map(move |i| Ok(Frame::data(ev.frames[i].clone())));
            StreamBody::new(frames.chain(reset)).boxed_unsync()
        }
        ReplayTiming::Rechunk { seed } => {
            let items: Vec<Item> = rechunk(&ev.all, seed)
                .into_iter()
                .map(|c| Ok(Frame::data(c)))
                .collect();
            StreamBody::new(futures::stream::iter(items).chain(reset)).boxed_unsync()
        }
        ReplayTiming::Realtime { max_delay } => {
            let ev = Arc::clone(ev);
            let frames = futures::stream::iter(0..ev.frames.len())
                .then(move |i| {
                    let d = Duration::from_millis(ev.delays[i]).min(max_delay);
                    let frame = ev.frames[i].clone();
                    async move {
                        if !d.is_zero() {
                            tokio::time::sleep(d).await;
                        }
                        Ok::<_, io::Error>(Frame::data(frame))
                    }
                })
                .chain(reset);
            StreamBody::new(frames).boxed_unsync()
        }
    }
}

/// Ends a replayed stream the way the recorded one ended: with a connection failure (which the
/// server sends only after the bytes before it, see `flush`).
fn reset_at_end(reset: bool) -> impl futures::Stream<Item = Item> {
    let e = reset.then(|| {
        Err(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "the recorded upstream connection was reset here",
        ))
    });
    futures::stream::iter(e)
}

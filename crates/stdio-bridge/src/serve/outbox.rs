//! A session's GET stream: the events it is sent, each with an id, bounded in what waits unread, and
//! the recent ones retained so that a client can resume with `Last-Event-ID`; and the outbox of a
//! POST's answers, bounded the same way.
//!
//! A client that stops reading while its stream is busy would otherwise make the server hold every
//! message for it. An outbox (a GET stream's, or a POST's answer stream's) holds at most
//! [`MAX_QUEUED`] messages or [`MAX_QUEUED_BYTES`] unread; a stream that falls behind that far is
//! closed (its connection with it). Each session retains its last [`RETAINED`] events (at most
//! [`RETAINED_BYTES`]), shared with every other session they went to, and a client that opens its
//! stream again with `Last-Event-ID` gets the retained events after that id; older ones are counted
//! as dropped.

use std::{
    collections::VecDeque,
    convert::Infallible,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    task::{Context, Poll},
};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use super::conn::Conn;
use crate::{Direction, tap::TapSender};

/// Messages a GET stream's client may leave unread before the stream is closed.
pub(crate) const MAX_QUEUED: usize = 1024;
/// Bytes a GET stream's client may leave unread before the stream is closed.
pub(crate) const MAX_QUEUED_BYTES: usize = 16 * 1024 * 1024;
/// Events a session retains for a client that resumes.
pub(crate) const RETAINED: usize = 1024;
/// Bytes of events a session retains for a client that resumes.
pub(crate) const RETAINED_BYTES: usize = 16 * 1024 * 1024;

/// One event: its id in the session (none for a POST's answers) and the message.
pub(crate) struct Event {
    id: Option<u64>,
    frame: Bytes,
}

/// What waits unread in one stream's outbox.
#[derive(Default)]
struct Queued {
    messages: AtomicUsize,
    bytes: AtomicUsize,
    /// The stream was closed for falling behind: it takes nothing more.
    closed: AtomicBool,
}

/// The sending side of one open stream: a GET stream, or a POST's answers.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Event>,
    queued: Arc<Queued>,
    conn: Arc<Conn>,
}

/// The reading side of an [`Outbox`]: what it takes off counts as read.
pub(crate) struct Inbox {
    rx: mpsc::UnboundedReceiver<Event>,
    queued: Arc<Queued>,
}

impl Inbox {
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let polled = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(event)) = &polled {
            self.queued.messages.fetch_sub(1, Ordering::SeqCst);
            self.queued
                .bytes
                .fetch_sub(event.frame.len(), Ordering::SeqCst);
        }
        polled
    }

    pub(crate) async fn recv(&mut self) -> Option<Bytes> {
        std::future::poll_fn(|cx| self.poll_recv(cx))
            .await
            .map(|event| event.frame)
    }
}

impl Event {
    pub(crate) fn into_frame(self) -> Bytes {
        self.frame
    }
}

/// Why an event did not go into a stream.
pub(crate) enum Refused {
    /// The stream is gone (its client left).
    Gone,
    /// Its client left too much unread: the stream was closed.
    Behind,
}

impl Outbox {
    /// A stream on `conn`, and the body that sends it.
    pub(crate) fn open(
        conn: &Arc<Conn>,
        tap: Option<TapSender>,
        guard: impl Send + 'static,
    ) -> (Self, StreamBody) {
        let (outbox, inbox) = Self::bounded(conn);
        let body = StreamBody {
            inbox,
            tap,
            _guard: Box::new(guard),
        };
        (outbox, body)
    }

    /// An outbox for the answers of a POST on `conn`, and its reading side.
    pub(crate) fn bounded(conn: &Arc<Conn>) -> (Self, Inbox) {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(Queued::default());
        let outbox = Self {
            tx,
            queued: Arc::clone(&queued),
            conn: Arc::clone(conn),
        };
        (outbox, Inbox { rx, queued })
    }

    /// Sends a POST's answer (or a message tied to its request); a client that left [`MAX_QUEUED`]
    /// messages or [`MAX_QUEUED_BYTES`] unread has its stream closed instead.
    pub(crate) fn send_answer(&self, frame: &Bytes) -> Result<(), Refused> {
        self.send(None, frame)
    }

    fn send(&self, id: Option<u64>, frame: &Bytes) -> Result<(), Refused> {
        let messages = self.queued.messages.load(Ordering::SeqCst);
        let bytes = self.queued.bytes.load(Ordering::SeqCst);
        if self.queued.closed.load(Ordering::SeqCst) {
            return Err(Refused::Gone);
        }
        if messages >= MAX_QUEUED || bytes + frame.len() > MAX_QUEUED_BYTES {
            // Closing the connection drops the body and everything queued in it.
            self.queued.closed.store(true, Ordering::SeqCst);
            self.conn.close();
            return Err(Refused::Behind);
        }
        self.queued.messages.fetch_add(1, Ordering::SeqCst);
        self.queued.bytes.fetch_add(frame.len(), Ordering::SeqCst);
        self.tx
            .send(Event {
                id,
                frame: frame.clone(),
            })
            .map_err(|_| Refused::Gone)
    }
}

/// A session's events: the open stream, if any, and the recent ones retained.
pub(crate) struct Events {
    stream: Option<Outbox>,
    retained: VecDeque<(u64, Bytes)>,
    retained_bytes: usize,
    next_id: u64,
    /// The last id handed to a stream's outbox.
    sent_up_to: u64,
    /// Events the client will never get: evicted unsent, or evicted before it resumed.
    dropped: u64,
}

impl Default for Events {
    fn default() -> Self {
        Self {
            stream: None,
            retained: VecDeque::new(),
            retained_bytes: 0,
            next_id: 1,
            sent_up_to: 0,
            dropped: 0,
        }
    }
}

impl Events {
    /// Sends `frame` to the open stream, and retains it.
    pub(crate) fn deliver(&mut self, session: u64, frame: Bytes) {
        let id = self.next_id;
        self.next_id += 1;
        self.retained_bytes += frame.len();
        self.retained.push_back((id, frame.clone()));
        while self.retained.len() > RETAINED || self.retained_bytes > RETAINED_BYTES {
            let Some((old, bytes)) = self.retained.pop_front() else {
                break;
            };
            self.retained_bytes -= bytes.len();
            if old > self.sent_up_to {
                self.dropped += 1;
            }
        }
        self.send(session, id, &frame);
    }

    fn send(&mut self, session: u64, id: u64, frame: &Bytes) {
        let Some(stream) = &self.stream else { return };
        match stream.send(Some(id), frame) {
            Ok(()) => self.sent_up_to = id,
            Err(Refused::Gone) => self.stream = None,
            Err(Refused::Behind) => {
                self.stream = None;
                tracing::warn!(
                    session,
                    "a GET stream's client left {MAX_QUEUED} messages or {} MiB unread; closed the stream (the client may resume with Last-Event-ID)",
                    MAX_QUEUED_BYTES >> 20
                );
            }
        }
    }

    /// Opens a stream: it gets the retained events after `last_event` (the client's `Last-Event-ID`),
    /// or, without one, those never sent to a stream.
    pub(crate) fn open(&mut self, session: u64, outbox: Outbox, last_event: Option<u64>) {
        let after = match last_event {
            Some(last) => {
                let oldest = self.retained.front().map_or(self.next_id, |(id, _)| *id);
                // Events after `last` that are no longer retained; those never sent were counted
                // when they were evicted.
                let lost = oldest
                    .saturating_sub(1)
                    .min(self.sent_up_to)
                    .saturating_sub(last);
                if lost > 0 {
                    self.dropped += lost;
                }
                if oldest > last.saturating_add(1) {
                    tracing::warn!(
                        session,
                        "a GET stream resumed after event {last}, but events up to {} are no longer retained ({} dropped in this session)",
                        oldest - 1,
                        self.dropped
                    );
                }
                last
            }
            None => self.sent_up_to,
        };
        self.stream = Some(outbox);
        let replay: Vec<(u64, Bytes)> = self
            .retained
            .iter()
            .filter(|(id, _)| *id > after)
            .cloned()
            .collect();
        for (id, frame) in replay {
            self.send(session, id, &frame);
        }
    }

    /// Events this session's client will never get.
    #[cfg(test)]
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// The SSE body of a GET stream; each event carries its id.
pub(crate) struct StreamBody {
    inbox: Inbox,
    tap: Option<TapSender>,
    /// Counts the stream as open while it lives.
    _guard: Box<dyn Send>,
}

impl Body for StreamBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.inbox.poll_recv(cx) {
            Poll::Ready(Some(Event { id, frame })) => {
                if let Some(tap) = &self.tap {
                    tap.send(Direction::ToClient, &frame);
                }
                let id = id.unwrap_or_default().to_string();
                let mut event = Vec::with_capacity(frame.len() + id.len() + 28);
                event.extend_from_slice(b"id: ");
                event.extend_from_slice(id.as_bytes());
                event.extend_from_slice(b"\nevent: message\ndata: ");
                event.extend_from_slice(&frame);
                event.extend_from_slice(b"\n\n");
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(event)))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        false
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;

    fn frame(n: u64) -> Bytes {
        Bytes::from(format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{{\"n\":{n}}}}}"
        ))
    }

    fn ids(body: &mut StreamBody) -> Vec<u64> {
        let mut ids = Vec::new();
        while let Ok(event) = body.inbox.rx.try_recv() {
            ids.push(event.id.expect("a GET stream's event has an id"));
        }
        ids
    }

    #[test]
    fn a_stream_whose_client_falls_behind_is_closed_and_resumes_from_what_is_retained() {
        let conn = Conn::detached();
        let mut events = Events::default();
        let (outbox, mut body) = Outbox::open(&conn, None, ());
        events.open(1, outbox, None);
        for n in 1..=1500 {
            events.deliver(1, frame(n));
        }
        // The first 1,024 waited unread; the next one closed the stream and its connection.
        assert!(events.stream.is_none());
        assert!(conn.closing().now_or_never().is_some());
        assert_eq!(ids(&mut body), (1..=1024).collect::<Vec<_>>());
        assert_eq!(events.dropped(), 0);
        // The client read up to 300 before it was cut: the retained events after that come again,
        // and the ones no longer retained (301 to 476) count as dropped.
        let conn = Conn::detached();
        let (outbox, mut body) = Outbox::open(&conn, None, ());
        events.open(1, outbox, Some(300));
        assert_eq!(ids(&mut body), (477..=1500).collect::<Vec<_>>());
        assert_eq!(events.dropped(), 176);
        assert!(conn.closing().now_or_never().is_none());
    }

    #[test]
    fn a_session_without_a_stream_retains_the_last_events_within_bounds() {
        let mut events = Events::default();
        for n in 1..=2000 {
            events.deliver(1, frame(n));
        }
        assert_eq!(events.dropped(), 976);
        let (outbox, mut body) = Outbox::open(&Conn::detached(), None, ());
        events.open(1, outbox, None);
        assert_eq!(ids(&mut body), (977..=2000).collect::<Vec<_>>());
        // Large events are bounded by bytes as well.
        let big = Bytes::from(vec![b' '; 1024 * 1024]);
        for _ in 0..40 {
            events.deliver(1, big.clone());
        }
        assert!(events.retained_bytes <= RETAINED_BYTES);
        assert_eq!(events.retained.len(), 16);
    }
}

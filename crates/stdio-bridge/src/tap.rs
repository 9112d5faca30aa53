//! The observer hook: every frame the client sends or receives, with a timestamp.
//!
//! A [`Tap`] runs on a thread of its own behind a queue bounded in frames and in bytes
//! ([`TAP_QUEUE_BYTES`]). When the queue is full the frame is not given to the tap and the drop is
//! counted ([`Summary::tap_dropped`](crate::Summary::tap_dropped)): a slow
//! or failing tap never slows the session.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime},
};

use tokio::sync::mpsc::{self, error::TryRecvError};

use crate::upstream::Frame;

/// The most bytes of frames queued for (or being observed by) a tap; later frames are dropped and
/// counted until it catches up (64 MiB).
pub const TAP_QUEUE_BYTES: usize = 64 * 1024 * 1024;

/// How long the tap's thread naps between batches of frames while the session is busy.
const TAP_NAP: Duration = Duration::from_millis(1);
/// Empty naps in a row after which the tap's thread waits on its queue instead.
const TAP_NAPS: u32 = 20;

/// Which way a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Direction {
    /// From the client, to be forwarded upstream.
    FromClient,
    /// To the client: an upstream message or an error the bridge made.
    ToClient,
}

/// One frame seen by the bridge.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TapEvent {
    /// Which way it went.
    pub direction: Direction,
    /// When the bridge read it from the client or queued it for the client.
    pub at: SystemTime,
    /// The message, without its newline.
    pub frame: Frame,
}

/// Sees every frame in both directions. Runs on its own thread, so it may block.
pub trait Tap: Send + 'static {
    /// Called once per frame, in order.
    fn observe(&mut self, event: TapEvent);
}

impl<F: FnMut(TapEvent) + Send + 'static> Tap for F {
    fn observe(&mut self, event: TapEvent) {
        self(event);
    }
}

/// The session's side of a tap: never waits.
#[derive(Debug, Clone)]
pub(crate) struct TapSender {
    tx: mpsc::Sender<TapEvent>,
    dropped: Arc<AtomicU64>,
    /// Bytes of frames queued or being observed.
    held: Arc<AtomicUsize>,
    max_bytes: usize,
}

impl TapSender {
    /// Starts the tap's thread with a queue of `capacity` frames.
    ///
    /// While frames keep coming, the thread takes them in batches, napping `TAP_NAP` between
    /// batches instead of waiting on the queue: a session then never pays for waking the thread once
    /// per frame. After `TAP_NAPS` empty naps in a row it waits on the queue, so an idle session
    /// costs nothing.
    pub(crate) fn start(tap: Box<dyn Tap>, capacity: usize) -> std::io::Result<Self> {
        Self::start_with_bytes(tap, capacity, TAP_QUEUE_BYTES)
    }

    /// [`start`](Self::start) with a queue of at most `max_bytes` of frames.
    fn start_with_bytes(
        mut tap: Box<dyn Tap>,
        capacity: usize,
        max_bytes: usize,
    ) -> std::io::Result<Self> {
        let (tx, mut rx) = mpsc::channel::<TapEvent>(capacity.max(1));
        let held = Arc::new(AtomicUsize::new(0));
        let released = held.clone();
        std::thread::Builder::new()
            .name("calltape-tap".to_owned())
            .spawn(move || {
                let mut naps = 0;
                loop {
                    let event = match rx.try_recv() {
                        Ok(event) => event,
                        Err(TryRecvError::Disconnected) => break,
                        Err(TryRecvError::Empty) if naps < TAP_NAPS => {
                            naps += 1;
                            std::thread::sleep(TAP_NAP);
                            continue;
                        }
                        Err(TryRecvError::Empty) => match rx.blocking_recv() {
                            Some(event) => event,
                            None => break,
                        },
                    };
                    naps = 0;
                    let len = event.frame.len();
                    // A panicking tap loses its frames, not the session.
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        tap.observe(event);
                    }));
                    released.fetch_sub(len, Ordering::AcqRel);
                    if outcome.is_err() {
                        tracing::error!("the tap panicked; no more frames go to it");
                        break;
                    }
                }
            })?;
        Ok(Self {
            tx,
            dropped: Arc::new(AtomicU64::new(0)),
            held,
            max_bytes,
        })
    }

    pub(crate) fn send(&self, direction: Direction, frame: &Frame) {
        let len = frame.len();
        if self.held.fetch_add(len, Ordering::AcqRel) + len > self.max_bytes {
            self.held.fetch_sub(len, Ordering::AcqRel);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let event = TapEvent {
            direction,
            at: SystemTime::now(),
            frame: frame.clone(),
        };
        if self.tx.try_send(event).is_err() {
            self.held.fetch_sub(len, Ordering::AcqRel);
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_tap_holds_at_most_its_bytes_and_the_rest_is_counted() {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (seen_tx, seen) = std::sync::mpsc::channel::<usize>();
        let tap = move |event: TapEvent| {
            let _ = wait.recv();
            let _ = seen_tx.send(event.frame.len());
        };
        let sender = TapSender::start_with_bytes(Box::new(tap), 1000, 10_000).unwrap();
        let frame = Frame::from(vec![b'x'; 1000]);
        for _ in 0..100 {
            sender.send(Direction::FromClient, &frame);
        }
        // The first ten fill the 10,000 bytes (one is being observed, nine wait); the other ninety
        // are dropped, however far the tap's thread has got.
        assert_eq!(sender.dropped(), 90);
        for _ in 0..10 {
            release.send(()).unwrap();
        }
        for _ in 0..10 {
            let len = seen.recv_timeout(Duration::from_secs(10)).unwrap();
            assert_eq!(len, 1000);
        }
        // Once observed, the frames no longer count: the queue takes more.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while sender.held.load(Ordering::Acquire) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        sender.send(Direction::ToClient, &frame);
        release.send(()).unwrap();
        assert_eq!(seen.recv_timeout(Duration::from_secs(10)).unwrap(), 1000);
        assert_eq!(sender.dropped(), 90);
    }
}

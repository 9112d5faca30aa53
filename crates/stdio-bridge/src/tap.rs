//! The observer hook: every frame the client sends or receives, with a timestamp.
//!
//! A [`Tap`] runs on a thread of its own. The session copies each frame into a queue bounded in
//! frames and in bytes ([`TAP_QUEUE_BYTES`]) and goes on; the tap's thread takes the whole queue at
//! once and shows it the frames in order. When the queue is full the frame is not queued and the
//! drop is counted ([`Summary::tap_dropped`](crate::Summary::tap_dropped)): a slow or failing tap
//! never slows the session. Its end is waited for instead: [`Bridge::run`](crate::Bridge::run)
//! returns once the tap has seen the last frame and its thread has ended.

use std::{
    sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError},
    thread::JoinHandle,
    time::{Duration, SystemTime},
};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::jsonrpc::Frame;

/// The most bytes of frames queued for (or being observed by) a tap; later frames are dropped and
/// counted until it catches up (64 MiB).
pub const TAP_QUEUE_BYTES: usize = 64 * 1024 * 1024;

/// How long the tap's thread naps between batches of frames while the session is busy.
const TAP_NAP: Duration = Duration::from_millis(1);
/// Empty naps in a row after which the tap's thread waits to be woken instead.
const TAP_NAPS: u32 = 20;
/// The most bytes the next batch's buffer is allocated with ahead of time.
const FRESH_BATCH_BYTES: usize = 1024 * 1024;

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

/// The session's side of a tap: never waits for it.
#[derive(Debug, Clone)]
pub(crate) struct TapSender {
    shared: Arc<Shared>,
    /// Held by every sender: when the last one goes, the tap's thread sees the rest of the queue and
    /// ends.
    _open: Arc<Open>,
}

#[derive(Debug)]
struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the tap's thread when it waits for frames.
    ready: Condvar,
    /// Wakes [`TapThread`]'s waiters when every frame queued has been seen, or the thread ended.
    seen: Notify,
    capacity: usize,
    max_bytes: usize,
}

/// Frames waiting for the tap: their bytes one after the other, and where each ends.
#[derive(Debug, Default)]
struct Queue {
    bytes: Vec<u8>,
    frames: Vec<Queued>,
    /// Bytes of frames queued, or taken by the tap's thread in the batch it is observing.
    held: usize,
    dropped: u64,
    /// The tap's thread waits on `ready`.
    waiting: bool,
    /// Every sender is gone.
    closed: bool,
    /// The tap panicked: nothing more is queued.
    failed: bool,
    /// The tap's thread has ended: the tap has seen its last frame and is dropped.
    ended: bool,
    /// Somebody waits for the tap to catch up: the thread says when it has.
    flushing: bool,
}

/// The tap's thread, to wait for: the session's frames are all seen once it says so.
#[derive(Debug)]
pub(crate) struct TapThread {
    shared: Arc<Shared>,
    handle: JoinHandle<()>,
}

/// Marks the thread's end however it ends, even by a panic outside the tap.
struct Ended(Arc<Shared>);

impl Drop for Ended {
    fn drop(&mut self) {
        lock(&self.0.queue).ended = true;
        self.0.seen.notify_waiters();
    }
}

#[derive(Debug)]
struct Queued {
    direction: Direction,
    at: SystemTime,
    end: usize,
}

#[derive(Debug)]
struct Open(Arc<Shared>);

impl Drop for Open {
    fn drop(&mut self) {
        lock(&self.0.queue).closed = true;
        self.0.ready.notify_one();
    }
}

fn lock(queue: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

impl TapSender {
    /// Starts the tap's thread with a queue of `capacity` frames.
    ///
    /// While frames keep coming, the thread takes them in batches, napping `TAP_NAP` between
    /// batches instead of being woken: a session then never pays for waking the thread once per
    /// frame. After `TAP_NAPS` empty naps in a row it waits to be woken, so an idle session costs
    /// nothing.
    pub(crate) fn start(tap: Box<dyn Tap>, capacity: usize) -> std::io::Result<(Self, TapThread)> {
        Self::start_with_bytes(tap, capacity, TAP_QUEUE_BYTES)
    }

    /// [`start`](Self::start) with a queue of at most `max_bytes` of frames.
    fn start_with_bytes(
        tap: Box<dyn Tap>,
        capacity: usize,
        max_bytes: usize,
    ) -> std::io::Result<(Self, TapThread)> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
            seen: Notify::new(),
            capacity: capacity.max(1),
            max_bytes,
        });
        let observer = shared.clone();
        let handle = std::thread::Builder::new()
            .name("calltape-tap".to_owned())
            .spawn(move || {
                let ended = Ended(observer);
                observe(&ended.0, tap);
            })?;
        let thread = TapThread {
            shared: shared.clone(),
            handle,
        };
        let sender = Self {
            _open: Arc::new(Open(shared.clone())),
            shared,
        };
        Ok((sender, thread))
    }

    /// Queues a copy of `frame`, or counts it as dropped when the queue is full.
    pub(crate) fn send(&self, direction: Direction, frame: &Frame) {
        let at = SystemTime::now();
        let shared = &*self.shared;
        let mut queue = lock(&shared.queue);
        if queue.failed
            || queue.frames.len() >= shared.capacity
            || queue.held + frame.len() > shared.max_bytes
        {
            queue.dropped += 1;
            return;
        }
        queue.held += frame.len();
        queue.bytes.extend_from_slice(frame);
        let end = queue.bytes.len();
        queue.frames.push(Queued { direction, at, end });
        let wake = std::mem::take(&mut queue.waiting);
        drop(queue);
        if wake {
            shared.ready.notify_one();
        }
    }

    pub(crate) fn dropped(&self) -> u64 {
        lock(&self.shared.queue).dropped
    }
}

impl TapThread {
    /// Waits until the tap has seen every frame queued so far (or cannot see them: it panicked).
    /// The senders may live on.
    #[cfg(any(test, feature = "serve"))]
    pub(crate) async fn flush(&self) {
        loop {
            // Made before the check, so that a wake-up between the check and the wait is not lost.
            let seen = self.shared.seen.notified();
            {
                let mut queue = lock(&self.shared.queue);
                if queue.held == 0 || queue.failed || queue.ended {
                    return;
                }
                queue.flushing = true;
            }
            seen.await;
        }
    }

    /// Waits until the thread has ended: every sender is gone and the tap has seen the rest of the
    /// queue and been dropped.
    pub(crate) async fn join(self) {
        loop {
            let seen = self.shared.seen.notified();
            if lock(&self.shared.queue).ended {
                break;
            }
            seen.await;
        }
        // Ended: only the thread's last steps are left.
        let _ = self.handle.join();
    }

    /// Whether the thread has ended.
    #[cfg(feature = "serve")]
    pub(crate) fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }
}

/// The tap's thread: takes the queue a batch at a time and shows the tap each frame, until every
/// sender is gone and the queue is empty.
fn observe(shared: &Shared, mut tap: Box<dyn Tap>) {
    let mut spare = Vec::new();
    // The bytes of the last batch, no longer held once it has been observed.
    let mut observed = 0;
    let mut last_batch = 0;
    // The next batch's buffer, allocated outside the lock.
    let mut fresh = Vec::new();
    let mut naps = 0;
    loop {
        // Sized for a busy session's batch, not for a backlog: a buffer that must hold more grows.
        let wanted = last_batch.min(FRESH_BATCH_BYTES);
        if fresh.capacity() < wanted {
            fresh = Vec::with_capacity(wanted);
        }
        let mut queue = lock(&shared.queue);
        queue.held -= std::mem::take(&mut observed);
        if queue.held == 0 && std::mem::take(&mut queue.flushing) {
            shared.seen.notify_waiters();
        }
        if queue.frames.is_empty() {
            if queue.closed {
                return;
            }
            if naps < TAP_NAPS {
                naps += 1;
                drop(queue);
                std::thread::sleep(TAP_NAP);
                continue;
            }
            queue.waiting = true;
            queue = shared
                .ready
                .wait_while(queue, |q| q.frames.is_empty() && !q.closed)
                .unwrap_or_else(PoisonError::into_inner);
            queue.waiting = false;
            if queue.frames.is_empty() {
                return;
            }
        }
        naps = 0;
        let bytes = Bytes::from(std::mem::replace(
            &mut queue.bytes,
            std::mem::take(&mut fresh),
        ));
        std::mem::swap(&mut queue.frames, &mut spare);
        drop(queue);
        observed = bytes.len();
        last_batch = observed;
        let mut start = 0;
        for queued in spare.drain(..) {
            let event = TapEvent {
                direction: queued.direction,
                at: queued.at,
                frame: bytes.slice(start..queued.end),
            };
            start = queued.end;
            // A panicking tap loses its frames, not the session.
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                tap.observe(event);
            }));
            if outcome.is_err() {
                tracing::error!("the tap panicked; no more frames go to it");
                let mut queue = lock(&shared.queue);
                queue.failed = true;
                queue.bytes = Vec::new();
                queue.frames = Vec::new();
                return;
            }
        }
        // Unless the tap kept a frame, the batch's buffer is free again: it serves a later batch
        // rather than going back to the allocator.
        if let Ok(mut buffer) = bytes.try_into_mut() {
            // Emptied first: turning it into a `Vec` moves its bytes to the front.
            buffer.clear();
            let buffer = Vec::from(buffer);
            if buffer.capacity() <= FRESH_BATCH_BYTES && buffer.capacity() > fresh.capacity() {
                fresh = buffer;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_frame_reaches_the_tap_in_order_and_the_thread_ends_with_the_last_sender() {
        let (seen_tx, seen) = std::sync::mpsc::channel::<(Direction, Vec<u8>)>();
        let tap = move |event: TapEvent| {
            let _ = seen_tx.send((event.direction, event.frame.to_vec()));
        };
        let (sender, _thread) = TapSender::start(Box::new(tap), 100_000).unwrap();
        let other = sender.clone();
        let frame =
            |i: usize| Frame::from(format!("{{\"id\":{i},\"pad\":\"{}\"}}", "p".repeat(i % 7)));
        for i in 0..20_000 {
            // Pauses now and then, so that the frames arrive over many batches.
            if i % 5_000 == 0 {
                std::thread::sleep(Duration::from_millis(3));
            }
            let direction = if i % 2 == 0 {
                Direction::FromClient
            } else {
                Direction::ToClient
            };
            let from = if i % 3 == 0 { &sender } else { &other };
            from.send(direction, &frame(i));
        }
        assert_eq!(sender.dropped(), 0);
        drop(sender);
        drop(other);
        for i in 0..20_000 {
            let (direction, bytes) = seen.recv_timeout(Duration::from_secs(10)).unwrap();
            assert_eq!(direction == Direction::FromClient, i % 2 == 0);
            assert_eq!(bytes, frame(i).to_vec());
        }
        // The tap (and the sending half of `seen` it holds) is dropped once the thread ends.
        assert!(matches!(
            seen.recv_timeout(Duration::from_secs(10)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
        ));
    }

    #[test]
    fn frames_a_tap_keeps_keep_their_bytes_while_later_batches_go_by() {
        let (kept_tx, kept) = std::sync::mpsc::channel::<(usize, Bytes)>();
        let mut n = 0;
        let tap = move |event: TapEvent| {
            // Every tenth frame of every other stretch of 500 is kept: the batches in between give
            // their buffers back for reuse while the kept frames still point into theirs.
            if (n / 500) % 2 == 0 && n % 10 == 0 {
                let _ = kept_tx.send((n, event.frame));
            }
            n += 1;
        };
        let (sender, _thread) = TapSender::start(Box::new(tap), 100_000).unwrap();
        let frame = |i: usize| Frame::from(format!("{{\"id\":{i},\"pad\":\"{}\"}}", i % 97));
        for i in 0..20_000 {
            if i % 50 == 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
            sender.send(Direction::FromClient, &frame(i));
        }
        drop(sender);
        let kept: Vec<(usize, Bytes)> = kept.iter().collect();
        assert_eq!(kept.len(), 1_000);
        for (i, bytes) in kept {
            assert_eq!(bytes, frame(i), "frame {i} changed after the tap took it");
        }
    }

    #[test]
    fn a_tap_that_panics_loses_the_later_frames_not_the_session() {
        let (seen_tx, seen) = std::sync::mpsc::channel::<usize>();
        let tap = move |event: TapEvent| {
            assert!(event.frame.len() < 10, "a frame the tap cannot take");
            let _ = seen_tx.send(event.frame.len());
        };
        let (sender, _thread) = TapSender::start(Box::new(tap), 1000).unwrap();
        sender.send(Direction::FromClient, &Frame::from_static(b"{}"));
        assert_eq!(seen.recv_timeout(Duration::from_secs(10)).unwrap(), 2);
        sender.send(
            Direction::FromClient,
            &Frame::from_static(b"{\"long\":true}"),
        );
        // The panic ended the thread: the tap is gone, and later frames are counted, not queued.
        assert!(matches!(
            seen.recv_timeout(Duration::from_secs(10)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
        ));
        for _ in 0..5 {
            sender.send(Direction::ToClient, &Frame::from_static(b"{}"));
        }
        assert_eq!(sender.dropped(), 5);
    }

    #[test]
    fn a_slow_tap_holds_at_most_its_bytes_and_the_rest_is_counted() {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (seen_tx, seen) = std::sync::mpsc::channel::<usize>();
        let tap = move |event: TapEvent| {
            let _ = wait.recv();
            let _ = seen_tx.send(event.frame.len());
        };
        let (sender, thread) = TapSender::start_with_bytes(Box::new(tap), 1000, 10_000).unwrap();
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
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), thread.flush())
                .await
                .expect("the tap caught up within 10 s");
        });
        sender.send(Direction::ToClient, &frame);
        release.send(()).unwrap();
        assert_eq!(seen.recv_timeout(Duration::from_secs(10)).unwrap(), 1000);
        assert_eq!(sender.dropped(), 90);
    }
}

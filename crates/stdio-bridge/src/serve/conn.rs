//! The connections a server holds open: at most a fixed number, and the ones that wait longest for a
//! request's headers go first when a new one comes past that number.
//!
//! A connection is *waiting* while no request of it is being answered: before its first request's
//! headers came in, and between the requests of a kept-alive connection. A connection that answers a
//! request (a GET stream, a POST whose answers stream) is busy and is never closed to make room.

use std::{
    collections::BTreeMap,
    convert::Infallible,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::Notify;

/// The connections open at once, by default.
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// The open connections, oldest first.
pub(crate) struct Connections {
    max: usize,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next: u64,
    open: BTreeMap<u64, Arc<Conn>>,
}

/// One open connection.
pub(crate) struct Conn {
    /// Requests being answered.
    active: AtomicUsize,
    /// Fires when the connection must close (made room for a newer one, or fell behind).
    close: Notify,
}

impl Conn {
    /// A connection outside any [`Connections`], for tests.
    #[cfg(test)]
    pub(crate) fn detached() -> Arc<Self> {
        Arc::new(Self {
            active: AtomicUsize::new(0),
            close: Notify::new(),
        })
    }

    /// Closes the connection: its task drops it, and with it every body it was sending.
    pub(crate) fn close(&self) {
        self.close.notify_one();
    }

    /// Completes once the connection must close.
    pub(crate) async fn closing(&self) {
        self.close.notified().await;
    }

    /// Counts a request as being answered for as long as the returned body lives.
    pub(crate) fn busy<B>(self: &Arc<Self>, body: B) -> Busy<B> {
        self.active.fetch_add(1, Ordering::SeqCst);
        Busy {
            body,
            conn: Arc::clone(self),
        }
    }
}

/// A connection's place in [`Connections`]; gives it up when dropped.
pub(crate) struct Admitted {
    no: u64,
    conn: Arc<Conn>,
    connections: Arc<Connections>,
}

impl Admitted {
    pub(crate) fn conn(&self) -> &Arc<Conn> {
        &self.conn
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        lock(&self.connections.table).open.remove(&self.no);
    }
}

impl Connections {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            table: Mutex::new(Table::default()),
        })
    }

    /// Takes a new connection in. When `max` are open, the oldest one waiting for headers is closed to
    /// make room; when none is waiting, the new one is refused (`None`).
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut table = lock(&self.table);
        if table.open.len() >= self.max {
            let oldest_waiting = table
                .open
                .iter()
                .find(|(_, c)| c.active.load(Ordering::SeqCst) == 0)
                .map(|(no, _)| *no);
            let no = oldest_waiting?;
            if let Some(conn) = table.open.remove(&no) {
                tracing::debug!(
                    "{} connections are open: closing the oldest one still waiting for a request",
                    self.max
                );
                conn.close();
            }
        }
        let no = table.next;
        table.next += 1;
        let conn = Arc::new(Conn {
            active: AtomicUsize::new(0),
            close: Notify::new(),
        });
        table.open.insert(no, Arc::clone(&conn));
        Some(Admitted {
            no,
            conn,
            connections: Arc::clone(self),
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A response body that keeps its connection busy until it is dropped (sent whole, or cut).
pub(crate) struct Busy<B> {
    body: B,
    conn: Arc<Conn>,
}

impl<B> Drop for Busy<B> {
    fn drop(&mut self) {
        self.conn.active.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<B: Body<Data = Bytes, Error = Infallible> + Unpin> Body for Busy<B> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_waiting_connection_makes_room_and_busy_ones_stay() {
        let connections = Connections::new(3);
        let first = connections.admit().expect("room");
        let second = connections.admit().expect("room");
        let third = connections.admit().expect("room");
        // The first is busy answering a request: the second is the oldest waiting one.
        let body = first.conn().busy(http_body_util::Empty::<Bytes>::new());
        let fourth = connections.admit().expect("room made");
        assert_eq!(lock(&connections.table).open.len(), 3);
        assert!(lock(&connections.table).open.contains_key(&first.no));
        assert!(!lock(&connections.table).open.contains_key(&second.no));
        // With every open connection busy, a new one is refused.
        let _b3 = third.conn().busy(http_body_util::Empty::<Bytes>::new());
        let _b4 = fourth.conn().busy(http_body_util::Empty::<Bytes>::new());
        assert!(connections.admit().is_none());
        // Once a body is done, its connection waits again and can make room.
        drop(body);
        assert!(connections.admit().is_some());
        assert!(!lock(&connections.table).open.contains_key(&first.no));
    }
}

//! A response body's failure reaches the client only after every byte before it.
//!
//! hyper writes a body's data into the connection's buffer and sends the buffer when the body has
//! nothing ready. When a body fails, hyper closes the connection at once, and whatever is still
//! in the buffer is never sent: an upstream that sends its last bytes and resets right after would
//! reach the client shorter than it left the upstream. So each connection's socket counts its
//! flushes (hyper flushes only once its buffer is written out), and a body that fails after data
//! holds its error until a flush has happened since that data: then the client gets every byte,
//! and only then the reset.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures::task::AtomicWaker;
use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::ProxyBody;

/// How many times a connection's socket was flushed, and who waits for the next flush.
#[derive(Debug, Default)]
pub(crate) struct Flushes {
    count: AtomicU64,
    waiter: AtomicWaker,
}

impl Flushes {
    fn count(&self) -> u64 {
        self.count.load(Ordering::Acquire)
    }
}

/// A connection's socket that counts its completed flushes.
pub(crate) struct CountingIo<T> {
    inner: T,
    flushes: Arc<Flushes>,
}

impl<T> CountingIo<T> {
    pub(crate) fn new(inner: T) -> (Self, Arc<Flushes>) {
        let flushes = Arc::new(Flushes::default());
        let io = Self {
            inner,
            flushes: Arc::clone(&flushes),
        };
        (io, flushes)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for CountingIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for CountingIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(Pin::new(&mut self.inner).poll_flush(cx))?;
        self.flushes.count.fetch_add(1, Ordering::AcqRel);
        self.flushes.waiter.wake();
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A response body whose error waits for the bytes before it to be flushed.
pub(crate) struct FlushBeforeError {
    inner: ProxyBody,
    flushes: Arc<Flushes>,
    /// The flush count when the last data went out, while no flush has followed it yet.
    unflushed_since: Option<u64>,
    held: Option<io::Error>,
}

impl FlushBeforeError {
    pub(crate) fn new(inner: ProxyBody, flushes: Arc<Flushes>) -> Self {
        Self {
            inner,
            flushes,
            unflushed_since: None,
            held: None,
        }
    }

    /// Whether every byte handed out so far was flushed; if not, wakes this task at the next flush.
    fn flushed(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(mark) = self.unflushed_since else {
            return true;
        };
        // Registered before the count is read, so a flush in between still wakes us.
        self.flushes.waiter.register(cx.waker());
        if self.flushes.count() > mark {
            self.unflushed_since = None;
            return true;
        }
        false
    }
}

impl Body for FlushBeforeError {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        if this.held.is_none() {
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    if frame.data_ref().is_some_and(|d| !d.is_empty()) {
                        this.unflushed_since = Some(this.flushes.count());
                    }
                    return Poll::Ready(Some(Ok(frame)));
                }
                Some(Err(e)) => this.held = Some(e),
                None => return Poll::Ready(None),
            }
        }
        if !this.flushed(cx) {
            return Poll::Pending;
        }
        Poll::Ready(this.held.take().map(Err))
    }

    fn is_end_stream(&self) -> bool {
        self.held.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

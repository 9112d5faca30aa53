//! The process's own stdin and stdout, for [`Bridge::run`](crate::Bridge::run).
//!
//! When they are pipes or sockets (as when an MCP client starts the bridge) they are read and written
//! directly through the runtime's event loop; otherwise (a terminal, a file) through tokio's standard
//! handles, which use a thread per blocking call. The direct way saves two thread hand-offs per message.
//!
//! The direct way is Unix only: on Windows they are always tokio's standard handles.

#[cfg(unix)]
use std::os::fd::{AsFd, OwnedFd};
use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
};

#[cfg(unix)]
use rustix::fs::{FileType, OFlags};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
#[cfg(unix)]
use tokio::net::{UnixStream, unix::pipe};

/// The process's stdin. Create it inside a tokio runtime.
#[derive(Debug)]
pub struct Stdin(Input);

#[derive(Debug)]
enum Input {
    #[cfg(unix)]
    Pipe(Restore<pipe::Receiver>),
    #[cfg(unix)]
    Socket(Restore<UnixStream>),
    Tokio(tokio::io::Stdin),
}

/// The process's stdout. Create it inside a tokio runtime.
#[derive(Debug)]
pub struct Stdout(Output);

#[derive(Debug)]
enum Output {
    #[cfg(unix)]
    Pipe(Restore<pipe::Sender>),
    #[cfg(unix)]
    Socket(Restore<UnixStream>),
    Tokio(tokio::io::Stdout),
}

/// A pipe or socket made non-blocking for the runtime. Its original flags are put back on drop, since
/// the open file may be shared with other processes.
#[cfg(unix)]
#[derive(Debug)]
struct Restore<T: AsFd> {
    io: T,
    flags: OFlags,
}

#[cfg(unix)]
impl<T: AsFd> Drop for Restore<T> {
    fn drop(&mut self) {
        let _ = rustix::fs::fcntl_setfl(self.io.as_fd(), self.flags);
    }
}

#[cfg(unix)]
enum Kind {
    Pipe(OwnedFd, OFlags),
    Socket(OwnedFd, OFlags),
}

#[cfg(unix)]
fn kind(fd: impl AsFd) -> Option<Kind> {
    let stat = rustix::fs::fstat(&fd).ok()?;
    let file_type = FileType::from_raw_mode(stat.st_mode);
    if !matches!(file_type, FileType::Fifo | FileType::Socket) {
        return None;
    }
    let owned = fd.as_fd().try_clone_to_owned().ok()?;
    let flags = rustix::fs::fcntl_getfl(&owned).ok()?;
    Some(if file_type == FileType::Fifo {
        Kind::Pipe(owned, flags)
    } else {
        Kind::Socket(owned, flags)
    })
}

#[cfg(unix)]
fn socket(owned: OwnedFd, flags: OFlags) -> Option<Restore<UnixStream>> {
    let keep = owned.try_clone().ok()?;
    rustix::fs::fcntl_setfl(&owned, flags | OFlags::NONBLOCK).ok()?;
    match UnixStream::from_std(std::os::unix::net::UnixStream::from(owned)) {
        Ok(io) => Some(Restore { io, flags }),
        Err(e) => {
            tracing::debug!("stdio is not pollable: {e}");
            let _ = rustix::fs::fcntl_setfl(&keep, flags);
            None
        }
    }
}

/// The process's stdin; must be called inside a tokio runtime.
#[cfg(unix)]
pub fn stdin() -> Stdin {
    let input = match kind(io::stdin()) {
        Some(Kind::Pipe(owned, flags)) => pipe::Receiver::from_owned_fd(owned)
            .ok()
            .map(|io| Input::Pipe(Restore { io, flags })),
        Some(Kind::Socket(owned, flags)) => socket(owned, flags).map(Input::Socket),
        None => None,
    };
    Stdin(input.unwrap_or_else(|| Input::Tokio(tokio::io::stdin())))
}

/// The process's stdin; must be called inside a tokio runtime.
#[cfg(not(unix))]
pub fn stdin() -> Stdin {
    Stdin(Input::Tokio(tokio::io::stdin()))
}

/// The process's stdout; must be called inside a tokio runtime.
#[cfg(unix)]
pub fn stdout() -> Stdout {
    let output = match kind(io::stdout()) {
        Some(Kind::Pipe(owned, flags)) => pipe::Sender::from_owned_fd(owned)
            .ok()
            .map(|io| Output::Pipe(Restore { io, flags })),
        Some(Kind::Socket(owned, flags)) => socket(owned, flags).map(Output::Socket),
        None => None,
    };
    Stdout(output.unwrap_or_else(|| Output::Tokio(tokio::io::stdout())))
}

/// The process's stdout; must be called inside a tokio runtime.
#[cfg(not(unix))]
pub fn stdout() -> Stdout {
    Stdout(Output::Tokio(tokio::io::stdout()))
}

impl AsyncRead for Stdin {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Input::Tokio(io) => Pin::new(io).poll_read(cx, buf),
            #[cfg(unix)]
            Input::Pipe(r) => Pin::new(&mut r.io).poll_read(cx, buf),
            #[cfg(unix)]
            Input::Socket(r) => Pin::new(&mut r.io).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stdout {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            Output::Tokio(io) => Pin::new(io).poll_write(cx, data),
            #[cfg(unix)]
            Output::Pipe(w) => Pin::new(&mut w.io).poll_write(cx, data),
            #[cfg(unix)]
            Output::Socket(w) => Pin::new(&mut w.io).poll_write(cx, data),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Output::Tokio(io) => Pin::new(io).poll_flush(cx),
            #[cfg(unix)]
            Output::Pipe(w) => Pin::new(&mut w.io).poll_flush(cx),
            #[cfg(unix)]
            Output::Socket(w) => Pin::new(&mut w.io).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Output::Tokio(io) => Pin::new(io).poll_shutdown(cx),
            // Shutting a shared stdout down would end it for others; flushing is all that is needed.
            #[cfg(unix)]
            Output::Pipe(w) => Pin::new(&mut w.io).poll_flush(cx),
            #[cfg(unix)]
            Output::Socket(w) => Pin::new(&mut w.io).poll_flush(cx),
        }
    }
}

//! The child-process upstream: a stdio MCP server the bridge runs, and restarts.

#[cfg(windows)]
mod windows;

use std::{
    ffi::OsString,
    io::{PipeReader, Read, Write},
    path::PathBuf,
    process::{ExitStatus, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

#[cfg(unix)]
use rustix::process::{Pid, Signal};
use tokio::{
    io::AsyncWriteExt,
    process::{Child, ChildStdin, ChildStdout, Command},
    sync::{mpsc, oneshot, watch},
    time::{Instant, sleep_until},
};

use super::{BoxFuture, Frame, Link, Upstream, UpstreamEvent};
use crate::{
    Error, ErrorKind,
    jsonrpc::{DEFAULT_MAX_FRAME, FrameReader, Incoming},
};

/// How long a child gets to exit after its stdin closes, before SIGTERM goes to its process group
/// (Unix; Windows has no such step).
const TERM_AFTER: Duration = Duration::from_millis(500);
/// When SIGKILL goes to the group (Unix) or the job is terminated (Windows), counted from the stdin
/// close.
const KILL_AFTER: Duration = Duration::from_millis(1500);
/// How long the child's stdout is still read after the child exited (a grandchild may hold it open).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

/// Where a child's stderr goes.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Stderr {
    /// Passed through to the bridge's own stderr.
    #[default]
    Inherit,
    /// Appended to a file, created owner-only (`0o600`) when missing; a symbolic link at the path is
    /// refused, as calltape-jsonl-store's [`fs::append`](calltape_jsonl_store::fs::append) refuses one.
    File(PathBuf),
    /// Copied, as it arrives, into a writer that every child of the upstream shares: where a caller
    /// puts a filter, such as calltape-redact's `RedactingWriter` in front of a log file, so that what
    /// a server logs about its credentials never reaches the disk.
    Writer(SharedWriter),
    /// Discarded.
    Null,
}

/// A writer that children's stderr is copied into ([`Stderr::Writer`]), shared by every child an
/// upstream starts and cheap to clone.
///
/// A thread per child reads its stderr and writes each piece it reads under the writer's lock, then
/// flushes it when the child's stderr ends; the child's exit is reported once that is done (or a
/// second after the child exited, when a process it started keeps its stderr open).
///
/// ```
/// use calltape_stdio_bridge::{ChildUpstream, SharedWriter, Stderr};
///
/// let child = ChildUpstream::new(["my-mcp-server"])
///     .unwrap()
///     .stderr(Stderr::Writer(SharedWriter::new(std::io::stderr())));
/// # drop(child);
/// ```
#[derive(Clone)]
pub struct SharedWriter(Arc<Mutex<Box<dyn Write + Send>>>);

impl SharedWriter {
    /// Shares `writer` between the children of an upstream.
    pub fn new(writer: impl Write + Send + 'static) -> Self {
        Self(Arc::new(Mutex::new(Box::new(writer))))
    }

    /// Runs `f` on the writer under its lock; a writer whose holder panicked is still used, since a
    /// log line cut short is better than a lost log.
    fn with<T>(&self, f: impl FnOnce(&mut dyn Write) -> T) -> T {
        let mut guard = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(guard.as_mut())
    }
}

impl std::fmt::Debug for SharedWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedWriter").finish_non_exhaustive()
    }
}

/// Copies a child's stderr into `to` on a thread of its own; the receiver hears when it is done.
fn copy_stderr(mut from: PipeReader, to: SharedWriter) -> Result<oneshot::Receiver<()>, Error> {
    let (done_tx, done) = oneshot::channel();
    std::thread::Builder::new()
        .name("calltape-stderr".into())
        .spawn(move || {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if let Err(e) = to.with(|w| w.write_all(&buf[..n])) {
                            // The rest is still read, so that the child never blocks on a full pipe.
                            tracing::debug!("writing the child's stderr failed: {e}");
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = to.with(|w| w.flush());
            let _ = done_tx.send(());
        })
        .map_err(|e| Error::io("cannot start the thread that copies the child's stderr", e))?;
    Ok(done)
}

/// A stdio MCP server run as a child process.
///
/// It is started from an argument vector (no shell), in a process group of its own, with the
/// parent-death signal set so that it never outlives the bridge. Stopping it closes its stdin, sends
/// SIGTERM to the group after 500 ms and SIGKILL at 1.5 s, so wrappers such as `npx` take their children
/// with them. Every [`connect`](Upstream::connect) starts a fresh process.
///
/// On Windows it is started in a process group of its own (`CREATE_NEW_PROCESS_GROUP`) and put in a
/// job object that terminates its processes when the job's handle closes, so it never outlives the
/// bridge either. A console program has no SIGTERM: stopping it closes its stdin and, if it still runs
/// at 1.5 s, terminates the job, which stops every process it started at once.
#[derive(Debug, Clone)]
pub struct ChildUpstream {
    program: OsString,
    args: Vec<OsString>,
    stderr: Stderr,
    current_dir: Option<PathBuf>,
    envs: Vec<(OsString, OsString)>,
    max_frame: usize,
}

impl ChildUpstream {
    /// A child run from `argv`: the program, then its arguments. Fails when `argv` is empty.
    pub fn new<I, S>(argv: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut argv = argv.into_iter().map(Into::into);
        let program = argv
            .next()
            .ok_or_else(|| Error::config("the child command is empty: give a program to run"))?;
        Ok(Self {
            program,
            args: argv.collect(),
            stderr: Stderr::Inherit,
            current_dir: None,
            envs: Vec::new(),
            max_frame: DEFAULT_MAX_FRAME,
        })
    }

    /// Where the child's stderr goes (default: the bridge's stderr).
    #[must_use]
    pub fn stderr(mut self, stderr: Stderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// The folder the child runs in (default: the bridge's).
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// Sets an environment variable for the child.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// Lines the child writes longer than this are dropped (default 16 MiB).
    #[must_use]
    pub fn max_frame(mut self, max_frame: usize) -> Self {
        self.max_frame = max_frame;
        self
    }

    fn program_name(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }

    fn spawn(&self) -> Result<Link, Error> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        #[cfg(windows)]
        command.creation_flags(windows_sys::Win32::System::Threading::CREATE_NEW_PROCESS_GROUP);
        if let Some(dir) = &self.current_dir {
            command.current_dir(dir);
        }
        let mut stderr_pipe = None;
        match &self.stderr {
            Stderr::Inherit => command.stderr(Stdio::inherit()),
            Stderr::Null => command.stderr(Stdio::null()),
            Stderr::File(path) => {
                let file = calltape_jsonl_store::fs::append(path).map_err(ErrorKind::File)?;
                command.stderr(Stdio::from(file))
            }
            Stderr::Writer(writer) => {
                let (reader, pipe) = std::io::pipe()
                    .map_err(|e| Error::io("cannot make a pipe for the child's stderr", e))?;
                stderr_pipe = Some((reader, writer.clone()));
                command.stderr(pipe)
            }
        };
        #[cfg(unix)]
        set_parent_death_signal(&mut command);
        // Made before the child starts: a child that could not be put in a job is never left running.
        #[cfg(windows)]
        let job = windows::Job::new()
            .map_err(|e| Error::io("cannot make a job object for the child", e))?;
        let spawned = command.spawn();
        // The command holds the pipe's writing end: the copy only ends once the child's copy closes.
        drop(command);
        let mut child = spawned.map_err(|source| ErrorKind::Spawn {
            program: self.program_name(),
            source,
        })?;
        let stderr_done = match stderr_pipe {
            Some((reader, writer)) => Some(copy_stderr(reader, writer)?),
            None => None,
        };
        #[cfg(unix)]
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw)
            .ok_or_else(|| Error::config("the child exited before it could be watched"))?;
        #[cfg(windows)]
        job.assign(&child).map_err(|e| {
            // Dropping `child` kills it (`kill_on_drop`).
            Error::io(
                format!(
                    "cannot put {} in a job object, without which it could outlive the bridge",
                    self.describe()
                ),
                e,
            )
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::config("the child's stdio pipes are missing"));
        };
        #[cfg(unix)]
        tracing::debug!(
            pid = pgid.as_raw_nonzero().get(),
            "started {}",
            self.describe()
        );
        #[cfg(windows)]
        tracing::debug!(pid = child.id(), "started {}", self.describe());

        let (outgoing, outgoing_rx) = mpsc::channel(64);
        let (events_tx, events) = mpsc::channel(64);
        let (stop_tx, stop_rx) = mpsc::unbounded_channel();
        let (close_stdin_tx, close_stdin_rx) = watch::channel(false);
        let writer = tokio::spawn(write_stdin(
            stdin,
            outgoing_rx,
            close_stdin_rx,
            stop_tx.clone(),
            events_tx.clone(),
        ));
        tokio::spawn(
            Supervisor {
                child,
                #[cfg(unix)]
                guard: GroupGuard(Some(pgid)),
                #[cfg(windows)]
                guard: GroupGuard(job),
                close_stdin: close_stdin_tx,
                events: Some(events_tx),
                waiters: Vec::new(),
                stderr_done,
            }
            .run(stdout, stop_rx, self.max_frame, writer),
        );
        Ok(Link {
            outgoing,
            events,
            close: Box::new(move || {
                Box::pin(async move {
                    let (done_tx, done_rx) = oneshot::channel();
                    if stop_tx.send(Some(done_tx)).is_ok() {
                        // An error only means the supervisor already finished.
                        let _ = done_rx.await;
                    }
                })
            }),
        })
    }
}

impl Upstream for ChildUpstream {
    fn describe(&self) -> String {
        let mut text = format!("child `{}`", self.program_name());
        if !self.args.is_empty() {
            text.pop();
            for arg in &self.args {
                text.push(' ');
                text.push_str(&arg.to_string_lossy());
            }
            text.push('`');
        }
        text
    }

    fn connect(&self) -> BoxFuture<'_, Result<Link, Error>> {
        Box::pin(async move { self.spawn() })
    }

    /// Another process of the same command: a process of a stdio server is one session.
    #[cfg(feature = "era")]
    fn connect_apart(&self) -> Option<BoxFuture<'_, Result<Link, Error>>> {
        Some(self.connect())
    }
}

/// Sets the parent-death signal in the child, so it never outlives the bridge.
///
/// Linux delivers it when the *thread* that forked exits; tokio forks from the runtime's worker threads,
/// which live as long as the runtime.
#[cfg(unix)]
fn set_parent_death_signal(command: &mut Command) {
    let parent = rustix::process::getpid();
    let hook = move || -> std::io::Result<()> {
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        // The parent may have died between fork and prctl: then the signal will never come.
        if rustix::process::getppid() != Some(parent) {
            return Err(rustix::io::Errno::SRCH.into());
        }
        Ok(())
    };
    #[allow(unsafe_code)]
    // SAFETY: the hook runs in the forked child before exec. It only makes the prctl and getppid
    // system calls, which are async-signal-safe, and allocates nothing (the error is a raw OS error).
    unsafe {
        command.pre_exec(hook);
    }
}

/// Sends SIGKILL to the child's process group if it is dropped while armed (the bridge is going away
/// without a graceful stop).
#[cfg(unix)]
struct GroupGuard(Option<Pid>);

#[cfg(unix)]
impl GroupGuard {
    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.0 {
            // ESRCH: the whole group is gone already.
            let _ = rustix::process::kill_process_group(pgid, signal);
        }
    }

    /// The leader exited: whatever it left behind in its group goes with it.
    fn leader_exited(&self) {
        self.signal(Signal::TERM);
    }

    /// The first step after the stdin close.
    fn ask_to_stop(&self) {
        tracing::debug!(
            "the child did not exit after its stdin closed; sending SIGTERM to its group"
        );
        self.signal(Signal::TERM);
    }

    /// The last step.
    fn force_stop(&self) {
        tracing::debug!("the child did not exit after SIGTERM; sending SIGKILL to its group");
        self.signal(Signal::KILL);
    }

    /// The leader is reaped; signalling the group id again could hit an unrelated new group.
    fn disarm(&mut self) {
        self.0 = None;
    }
}

#[cfg(unix)]
impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.signal(Signal::KILL);
    }
}

/// The child's job object: dropping it closes the job, and the system terminates whatever still runs
/// in it (the bridge is going away without a graceful stop, or the child left processes behind).
#[cfg(windows)]
struct GroupGuard(windows::Job);

#[cfg(windows)]
impl GroupGuard {
    fn terminate(&self) {
        if let Err(e) = self.0.terminate() {
            tracing::debug!("terminating the child's job failed: {e}");
        }
    }

    /// The leader exited: whatever it left behind in its job goes with it.
    fn leader_exited(&self) {
        self.terminate();
    }

    /// The first step after the stdin close: a console program has no SIGTERM, so the child is only
    /// given until the last step.
    fn ask_to_stop(&self) {
        tracing::debug!("the child did not exit after its stdin closed; waiting a little longer");
    }

    /// The last step.
    fn force_stop(&self) {
        tracing::debug!("the child did not exit after its stdin closed; terminating its job");
        self.terminate();
    }

    /// Nothing to do: a job has no id that a new process could reuse, and it stays armed until it
    /// is dropped.
    fn disarm(&mut self) {}
}

async fn write_stdin(
    mut stdin: ChildStdin,
    mut outgoing: mpsc::Receiver<Frame>,
    mut close: watch::Receiver<bool>,
    stop: mpsc::UnboundedSender<Option<oneshot::Sender<()>>>,
    events: mpsc::Sender<UpstreamEvent>,
) {
    let mut batch: Vec<Frame> = Vec::new();
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        let frame = tokio::select! {
            biased;
            _ = close.wait_for(|closed| *closed) => break,
            frame = outgoing.recv() => frame,
        };
        let Some(frame) = frame else {
            // The bridge dropped the link: stop the child.
            let _ = stop.send(None);
            break;
        };
        // One write per batch of waiting frames: cheap, and a failed write tells which frames never
        // left.
        batch.clear();
        bytes.clear();
        batch.push(frame);
        while let Ok(frame) = outgoing.try_recv() {
            batch.push(frame);
        }
        for frame in &batch {
            bytes.extend_from_slice(frame);
            bytes.push(b'\n');
        }
        let mut written = 0;
        let failed = loop {
            if written == bytes.len() {
                break None;
            }
            let mut close_during_write = close.clone();
            tokio::select! {
                biased;
                _ = close_during_write.wait_for(|closed| *closed) => return,
                result = stdin.write(&bytes[written..]) => match result {
                    Ok(0) => break Some(std::io::Error::from(std::io::ErrorKind::WriteZero)),
                    Ok(n) => written += n,
                    Err(e) => break Some(e),
                },
            }
        };
        let Some(error) = failed else { continue };
        tracing::debug!("writing to the child's stdin failed: {error}");
        // Frames that start at or after the failure point never reached the child; the bridge holds
        // them for the next process. One cut in the middle may have been read: its outcome is unknown.
        let mut start = 0;
        for frame in batch.drain(..) {
            let end = start + frame.len() + 1;
            if end > written {
                let event = UpstreamEvent::Undelivered {
                    frame,
                    maybe_delivered: start < written,
                    reason: format!("the child's stdin is closed: {error}"),
                };
                if events.send(event).await.is_err() {
                    break;
                }
            }
            start = end;
        }
        break;
    }
    // Dropping stdin closes the child's end.
}

struct Supervisor {
    child: Child,
    guard: GroupGuard,
    close_stdin: watch::Sender<bool>,
    events: Option<mpsc::Sender<UpstreamEvent>>,
    waiters: Vec<oneshot::Sender<()>>,
    /// Hears when the copy of the child's stderr into a [`SharedWriter`] is done.
    stderr_done: Option<oneshot::Receiver<()>>,
}

impl Supervisor {
    async fn run(
        mut self,
        stdout: ChildStdout,
        mut stop_rx: mpsc::UnboundedReceiver<Option<oneshot::Sender<()>>>,
        max_frame: usize,
        writer: tokio::task::JoinHandle<()>,
    ) {
        let mut reader = FrameReader::with_max_frame(stdout, max_frame);
        let mut stdout_open = true;
        let mut status: Option<std::io::Result<ExitStatus>> = None;
        let mut stopping: Option<Instant> = None;
        let mut signals_sent = 0u8;
        let mut drain_until: Option<Instant> = None;
        let mut stop_open = true;
        while status.is_none() || stdout_open {
            let next_signal = stopping.map(|start| {
                start
                    + match signals_sent {
                        0 => TERM_AFTER,
                        _ => KILL_AFTER,
                    }
            });
            tokio::select! {
                line = reader.next(), if stdout_open => match line {
                    Ok(Some(incoming)) => {
                        self.on_line(incoming).await;
                        // The lines the same read brought in, without a wake each.
                        while let Some(incoming) = reader.next_buffered() {
                            self.on_line(incoming).await;
                        }
                    }
                    Ok(None) | Err(_) => {
                        stdout_open = false;
                        if status.is_none() && stopping.is_none() {
                            tracing::debug!("the child closed its stdout; stopping it");
                            stopping = Some(self.begin_stop());
                        }
                    }
                },
                exited = self.child.wait(), if status.is_none() => {
                    // Whatever the leader left behind in its group goes with it.
                    self.guard.leader_exited();
                    status = Some(exited);
                    drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
                }
                request = stop_rx.recv(), if stop_open => match request {
                    None => stop_open = false,
                    Some(waiter) => {
                        self.waiters.extend(waiter);
                        // The bridge no longer wants what the child says.
                        self.events = None;
                        if stopping.is_none() && status.is_none() {
                            stopping = Some(self.begin_stop());
                        }
                    }
                },
                () = sleep_until(next_signal.unwrap_or_else(far_future)),
                    if next_signal.is_some() && status.is_none() => {
                    signals_sent += 1;
                    if signals_sent == 1 {
                        self.guard.ask_to_stop();
                    } else {
                        self.guard.force_stop();
                        stopping = None;
                    }
                }
                () = sleep_until(drain_until.unwrap_or_else(far_future)),
                    if drain_until.is_some() && stdout_open => {
                    stdout_open = false;
                }
            }
        }
        // The leader is reaped; signalling the group id again could hit an unrelated new group.
        self.guard.disarm();
        let reason = match status {
            Some(Ok(status)) => describe_status(status),
            Some(Err(e)) => format!("could not be waited for: {e}"),
            None => "stopped".to_owned(),
        };
        tracing::debug!("the child {reason}");
        // The writer reports frames it could not deliver; those reports must come before `Closed`.
        let _ = self.close_stdin.send(true);
        let _ = writer.await;
        if let Some(done) = self.stderr_done.take() {
            // What the child wrote last reaches the writer before anyone hears that it is gone; a
            // process it started that keeps its stderr open is not waited for long.
            let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, done).await;
        }
        self.emit(UpstreamEvent::Closed { reason }).await;
        for waiter in self.waiters.drain(..) {
            let _ = waiter.send(());
        }
    }

    async fn on_line(&mut self, incoming: Incoming) {
        match incoming {
            Incoming::Frame(frame) => self.emit(UpstreamEvent::Message(frame)).await,
            Incoming::Invalid(invalid) => tracing::warn!(
                "the child wrote a line that is not a JSON-RPC message ({}); dropped it",
                invalid.reason()
            ),
        }
    }

    fn begin_stop(&self) -> Instant {
        let _ = self.close_stdin.send(true);
        Instant::now()
    }

    async fn emit(&mut self, event: UpstreamEvent) {
        if let Some(events) = &self.events
            && events.send(event).await.is_err()
        {
            self.events = None;
        }
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400)
}

#[cfg(unix)]
fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        _ => "exited".to_owned(),
    }
}

#[cfg(not(unix))]
fn describe_status(status: ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "exited".to_owned(),
    }
}

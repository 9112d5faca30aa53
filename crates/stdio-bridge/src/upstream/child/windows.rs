//! The job object a child process runs in on Windows: what the process group and the parent-death
//! signal are on Unix. Every process the child starts joins its job, [`Job::terminate`] stops them all
//! at once, and the system terminates them when the job's last handle closes, which happens when the
//! [`Job`] is dropped or the bridge exits, however it exits.

#![allow(unsafe_code)]

use std::{
    io,
    os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle},
};

use tokio::process::Child;
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject,
};

/// The exit code the processes of a terminated job get.
const TERMINATED: u32 = 1;

/// An unnamed job object whose processes are terminated when its handle closes.
#[derive(Debug)]
pub(super) struct Job(OwnedHandle);

impl Job {
    /// A new job with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` set. Its handle is not inheritable, so no
    /// process the bridge starts keeps it open.
    pub(super) fn new() -> io::Result<Self> {
        // SAFETY: a null security descriptor (default security, handle not inheritable) and a null
        // name (an unnamed job) are valid arguments; nothing is borrowed past the call.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is the handle CreateJobObjectW just returned, open and owned by nothing
        // else; the OwnedHandle closes it exactly once.
        let job = Self(unsafe { OwnedHandle::from_raw_handle(raw) });
        let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        let size = u32::try_from(size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>())
            .expect("the limit structure is a few hundred bytes");
        // SAFETY: the job handle is open (owned by `job`); the pointer and size describe `limits`, a
        // JOBOBJECT_EXTENDED_LIMIT_INFORMATION that lives across the call, which is what
        // JobObjectExtendedLimitInformation asks for. The call only reads it.
        let set = unsafe {
            SetInformationJobObject(
                job.0.as_raw_handle(),
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                size,
            )
        };
        if set == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    }

    /// Puts `child` in the job; the processes it starts from then on join it too.
    pub(super) fn assign(&self, child: &Child) -> io::Result<()> {
        let process = child.raw_handle().ok_or_else(|| {
            io::Error::other("the child exited before it could be put in its job")
        })?;
        // SAFETY: both handles are open for the whole call: the job's is owned by `self`, and the
        // process handle belongs to `child`, which is borrowed and has not been reaped (`raw_handle`
        // returns it only then).
        let assigned = unsafe { AssignProcessToJobObject(self.0.as_raw_handle(), process) };
        if assigned == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Terminates every process in the job at once.
    pub(super) fn terminate(&self) -> io::Result<()> {
        // SAFETY: the job handle is open, owned by `self`; the call takes nothing else.
        let terminated = unsafe { TerminateJobObject(self.0.as_raw_handle(), TERMINATED) };
        if terminated == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

//! The platform's side of the file rules, behind one interface: `unix.rs` and `windows.rs` give the
//! same functions, and the rest of the crate calls only these.
//!
//! - [`open_checked`]: opens a file to write under the rules (no link followed, owner-only, owned by
//!   this process's user), the way every file the crate writes is opened;
//! - [`open_read`]: opens a file to read without following a link at the path;
//! - [`open_within`]: opens a file a relative path names inside a folder, never through a link;
//! - [`make_dirs`], [`make_private`]: create owner-only folders, make an existing one owner-only;
//! - [`create_temp`], [`sync_dir`]: the temporary file of a rewrite, and the folder's sync after it;
//! - [`lock`], [`unlock`]: an exclusive lock on a whole file;
//! - [`is_owner_only`]: whether a file is owned by this process's user and closed to everyone else;
//! - [`is_link`], [`is_fifo`], [`open_error`], [`ends_in_a_cut_line`]: what the shared code asks of
//!   a file it opened.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::*;

/// How [`open_checked`] opens a file. None of them truncates: a file is only emptied once it passed
/// the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Writing a new file; anything already at the path is an error.
    CreateNew,
    /// Appending, creating the file when missing.
    Append,
    /// Writing from the start, creating the file when missing.
    Write,
    /// Reading and writing, creating the file when missing (a lock file).
    ReadWrite,
}

//! Writer options.

/// The default cap on a file's size, and on the bytes waiting in a writer's queue: 10 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// The default mode of a written file: readable and writable by its owner only. On Windows every
/// written file is owner-only through its access list, whatever the mode.
pub const DEFAULT_MODE: u32 = 0o600;

/// When a writer asks the OS to put written lines on stable storage (`fsync`).
///
/// Lines reach the page cache either way, so other readers see them at once and a crash of the
/// process loses nothing written; `fsync` matters only for a crash of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Fsync {
    /// Never: the OS writes the page cache back in its own time.
    Never,
    /// Once, when the writer is closed.
    #[default]
    OnClose,
    /// After every `n` written lines, and when the writer is closed. `EveryLines(0)` acts as
    /// `EveryLines(1)`.
    EveryLines(u64),
}

/// How a [`JsonlWriter`](crate::JsonlWriter) or [`SyncJsonlWriter`](crate::SyncJsonlWriter) treats its
/// file.
///
/// Start from [`Options::default()`] and change what you need, either through the fields or the
/// chainable setters of the same names:
///
/// ```
/// use calltape_jsonl_store::{Fsync, Options};
///
/// let options = Options::default().max_bytes(1 << 20).fsync(Fsync::EveryLines(100));
/// assert_eq!(options.mode, 0o600);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// The most bytes the file may hold on disk (lines other processes appended count too), and the
    /// most bytes of lines an asynchronous writer keeps waiting in memory. Default 10 MiB.
    pub max_bytes: u64,
    /// The mode a new file is created with, and that an existing file is set to before its first line.
    /// Default `0o600`. On Windows the file is owner-only through its access list whatever the mode.
    pub mode: u32,
    /// When to `fsync`. Default [`Fsync::OnClose`].
    pub fsync: Fsync,
    /// Whether to create a missing parent folder (mode `0o700`; on Windows, an owner-only access
    /// list). Default `false`.
    pub create_dirs: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_BYTES,
            mode: DEFAULT_MODE,
            fsync: Fsync::default(),
            create_dirs: false,
        }
    }
}

impl Options {
    /// Sets [`max_bytes`](Options::max_bytes).
    #[must_use]
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Sets [`mode`](Options::mode); only the permission bits (`0o777`) are used.
    #[must_use]
    pub fn mode(mut self, mode: u32) -> Self {
        self.mode = mode;
        self
    }

    /// Sets [`fsync`](Options::fsync).
    #[must_use]
    pub fn fsync(mut self, fsync: Fsync) -> Self {
        self.fsync = fsync;
        self
    }

    /// Sets [`create_dirs`](Options::create_dirs).
    #[must_use]
    pub fn create_dirs(mut self, create_dirs: bool) -> Self {
        self.create_dirs = create_dirs;
        self
    }

    pub(crate) fn file_mode(&self) -> u32 {
        self.mode & 0o777
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_values() {
        let o = Options::default();
        assert_eq!(o.max_bytes, 10 * 1024 * 1024);
        assert_eq!(o.mode, 0o600);
        assert_eq!(o.fsync, Fsync::OnClose);
        assert!(!o.create_dirs);
    }

    #[test]
    fn setters_change_only_their_field_and_mode_keeps_permission_bits() {
        let o = Options::default()
            .max_bytes(5)
            .mode(0o104_644)
            .fsync(Fsync::Never)
            .create_dirs(true);
        assert_eq!(
            (o.max_bytes, o.fsync, o.create_dirs),
            (5, Fsync::Never, true)
        );
        assert_eq!(o.file_mode(), 0o644);
    }
}

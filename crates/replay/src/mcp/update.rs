//! `--update`: rewrite a recording with the replayed answers, atomically, keeping the calls' order.

use std::os::unix::fs::PermissionsExt;

use calltape_recorder::record::{Outcome, Recording};

use crate::error::{Error, ErrorKind};

/// Rewrites `recording`'s file with each call's outcome replaced by the replayed one (already
/// redacted), every other field kept, in the same order. The file is replaced atomically and stays
/// owner-only.
pub fn update_recording(recording: &Recording, outcomes: &[Outcome]) -> Result<(), Error> {
    let lines = recording.calls.iter().zip(outcomes).map(|(call, outcome)| {
        let mut record = call.record.clone();
        record.outcome = outcome.clone();
        record.to_line()
    });
    // The new file takes the old one's mode: make that owner-only first, as every recording is.
    let path = &recording.path;
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && meta.is_file()
        && meta.permissions().mode() & 0o777 != 0o600
    {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(
            |source| {
                Error::from(ErrorKind::Io {
                    path: path.clone(),
                    source,
                })
            },
        )?;
    }
    calltape_jsonl_store::rewrite(path, lines).map_err(|e| ErrorKind::Store(e).into())
}

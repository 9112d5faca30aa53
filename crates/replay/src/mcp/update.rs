//! `--update`: rewrite a recording with the replayed answers, atomically, keeping the calls' order.

use calltape_recorder::mcp::{Outcome, Recording};

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
    // The rewrite makes the new file owner-only whatever the old mode, and refuses a link at the path.
    calltape_jsonl_store::rewrite(&recording.path, lines).map_err(|e| ErrorKind::Store(e).into())
}

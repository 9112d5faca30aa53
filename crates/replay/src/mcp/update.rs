//! `--update`: rewrite a recording with the replayed answers, atomically, keeping the calls' order.

use calltape_recorder::mcp::{CallRecord, Recording};
use calltape_recorder::{Refusal, admit};
use calltape_redact::Gate;

use crate::error::{Error, ErrorKind};
use crate::mcp::Replayed;

/// Rewrites `recording`'s file with each call's outcome replaced by the replayed one (already
/// redacted), every other field kept, and each call that had no answer yet replaced by its filled
/// record ([`Replayed::filled`]), in the same order. The file is replaced atomically and stays
/// owner-only.
///
/// Every line passes `gate` last: a call whose line still holds a provider token or a secret value
/// the gate watches (a filled value, say) is left out of the file, nothing of it written, and its
/// refusal returned, so that a recording meant to be committed never holds one.
pub fn update_recording(
    recording: &Recording,
    replayed: &Replayed,
    gate: &Gate,
) -> Result<Vec<Refusal>, Error> {
    // (line in the file, the record written there)
    let mut records: Vec<(usize, CallRecord)> = recording
        .calls
        .iter()
        .zip(&replayed.outcomes)
        .map(|(call, outcome)| {
            let mut record = call.record.clone();
            record.outcome = outcome.clone();
            (call.line, record)
        })
        .chain(
            recording
                .unanswered
                .iter()
                .zip(&replayed.filled)
                .map(|(call, record)| (call.line, record.clone())),
        )
        .collect();
    records.sort_by_key(|(line, _)| *line);
    let mut refused = Vec::new();
    let mut lines = Vec::with_capacity(records.len());
    for (n, (at, record)) in records.iter().enumerate() {
        let line = record.to_line();
        let item = || {
            format!(
                "call {} ({} {}, line {at})",
                n + 1,
                record.method,
                record.name,
            )
        };
        match admit(gate, [line.as_bytes()], item) {
            Ok(()) => lines.push(line),
            Err(refusal) => refused.push(refusal),
        }
    }
    // The rewrite makes the new file owner-only whatever the old mode, and refuses a link at the path.
    calltape_jsonl_store::rewrite(&recording.path, lines)
        .map_err(|e| Error::from(ErrorKind::Store(e)))?;
    Ok(refused)
}

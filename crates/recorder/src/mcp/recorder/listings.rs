//! The lists a session fetched (`tools/list` and its kin, `lists.rs`): each page taken into the
//! listing it belongs to as its answer arrives, and the listings written once, when the session
//! ends or the recorder closes first.

use std::borrow::Cow;
use std::time::SystemTime;

use serde_json::Value;

use super::{Parties, Pending, Recorder, SessionState, ending_of, session_info};
use crate::mcp::format::{CallError, Outcome};
use crate::mcp::lists::ListPages;
use crate::mcp::redaction::{hide_known, redact_outcome};

/// The listings of one list method in a session: the last one the client read to its end, and the
/// one it is paging through.
#[derive(Debug)]
pub(super) struct Listings {
    method: Cow<'static, str>,
    finished: Option<Listing>,
    current: Option<Listing>,
}

/// One listing: its first request (time, client), what its pages gave, and when the last came.
#[derive(Debug)]
struct Listing {
    first: Pending,
    pages: Result<ListPages, CallError>,
    ended: SystemTime,
    /// The bytes of the pages' frames: past the recording's size cap, no more pages are taken.
    bytes: u64,
}

/// Writes the line of each list session `id` fetched: the last listing read to its end, else the
/// one left unfinished, in the order the listings started. Taken from `state`, so written once.
pub(super) fn write_listings(recorder: &Recorder, id: &str, state: &mut SessionState) {
    let mut listings: Vec<Listing> = std::mem::take(&mut state.listings)
        .into_iter()
        .filter_map(|l| l.finished.or(l.current))
        .collect();
    listings.sort_by_key(|l| l.first.at);
    let server = state.server.clone();
    for mut listing in listings {
        let (client, protocol_version) = session_info(state, &listing.first);
        // A replay lists with the capabilities a line declares, and a server may offer tools by
        // them (server-everything offers its sampling and elicitation tools only to a client that
        // can answer them): a list line holds the session's, as a call's does.
        if listing.first.capabilities.is_none() {
            listing.first.capabilities = state.capabilities.clone();
        }
        let mut outcome = match listing.pages {
            Ok(pages) => Outcome::Answer(pages.into_answer()),
            Err(error) => Outcome::Error(error),
        };
        redact_outcome(&recorder.inner.redactor, &mut outcome);
        // The run's known values are hidden in a list as in any answer (a tool's description may
        // quote a key a request sent).
        hide_known(&mut outcome, &recorder.inner.known);
        if let Some(ending) = ending_of(outcome) {
            let parties = Parties {
                client,
                server: server.clone(),
                protocol_version,
            };
            recorder.write_record(id, listing.first, parties, ending, listing.ended);
        }
    }
}

/// Takes the answer to one page of a list (`pending`) into the session's listings: the first page
/// starts a listing, a page asked with the cursor the listing stopped at continues it, and an error
/// ends it. `bytes` is the frame's size, counted against `max_bytes`.
pub(super) fn listed(
    state: &mut SessionState,
    pending: Pending,
    message: &mut Value,
    bytes: u64,
    max_bytes: u64,
    at: SystemTime,
) {
    let Some(outcome) = Outcome::take_from_response(message) else {
        return;
    };
    let at_index = match state
        .listings
        .iter()
        .position(|l| l.method == pending.method)
    {
        Some(i) => i,
        None => {
            state.listings.push(Listings {
                method: pending.method.clone(),
                finished: None,
                current: None,
            });
            state.listings.len() - 1
        }
    };
    let listings = &mut state.listings[at_index];
    let result = match outcome {
        Outcome::Error(error) => {
            listings.current = None;
            listings.finished = Some(Listing {
                first: pending,
                pages: Err(error),
                ended: at,
                bytes,
            });
            return;
        }
        Outcome::Answer(result) => result,
    };
    let continues = |l: &Listing| match (&l.pages, &pending.cursor) {
        (Ok(pages), Some(cursor)) => pages.next_cursor() == Some(cursor),
        _ => false,
    };
    let mut listing = match listings.current.take() {
        Some(listing) if continues(&listing) => {
            if listing.bytes.saturating_add(bytes) > max_bytes {
                // Past the size cap: the listing stays as far as it got, its cursor saying so.
                listings.current = Some(listing);
                return;
            }
            listing
        }
        _ => match ListPages::new(&pending.method) {
            Some(pages) => Listing {
                first: pending,
                pages: Ok(pages),
                ended: at,
                bytes: 0,
            },
            None => return,
        },
    };
    if let Ok(pages) = &mut listing.pages {
        pages.add(result);
    }
    listing.ended = at;
    listing.bytes = listing.bytes.saturating_add(bytes);
    if listing.pages.as_ref().is_ok_and(ListPages::is_finished) {
        listings.finished = Some(listing);
    } else {
        listings.current = Some(listing);
    }
}

//! The HTTP record/replay proxy against a fake upstream on loopback.

mod fake;
mod flows;
mod guard;
mod load;
mod misses;
mod rerecord;
mod reset;
mod status;
mod stored;

//! Modes and knobs of the proxy.

use std::str::FromStr;
use std::time::Duration;

/// How replayed streams are paced and cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayTiming {
    /// One write per event, no delay.
    Fast,
    /// The recorded delays, each capped at the given maximum.
    Realtime {
        /// The longest pause between two events.
        max_delay: Duration,
    },
    /// The stream's bytes split at reproducible arbitrary positions (chosen from the seed), to test
    /// clients' parsers; no delay.
    Rechunk {
        /// The seed for the split positions.
        seed: u64,
    },
}

/// How recorded stream delays are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordTiming {
    /// Rounded to 10 ms buckets, so re-recording gives the same file.
    Bucketed,
    /// Exact milliseconds.
    Full,
    /// No delays: every event is stored with a delay of 0, so timing never changes a re-recorded
    /// cassette (realtime replay then has no pauses).
    Off,
}

/// What replay does when every recording for a key has been served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhaustion {
    /// Treat it as a miss.
    Error,
    /// Serve the last recording again.
    RepeatLast,
    /// Start again from the first recording.
    Cycle,
}

impl FromStr for Exhaustion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "error" => Ok(Self::Error),
            "repeat-last" => Ok(Self::RepeatLast),
            "cycle" => Ok(Self::Cycle),
            other => Err(format!(
                "unknown exhaustion policy {other:?}; expected error, repeat-last or cycle"
            )),
        }
    }
}

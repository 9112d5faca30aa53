//! Timestamps and session ids, without a calendar crate.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A time as an RFC 3339 UTC timestamp with milliseconds (`2026-11-29T20:46:45.123Z`), held in
/// place: the recorder writes one per call.
#[derive(Clone, Copy)]
pub(crate) struct Rfc3339([u8; 24]);

impl Rfc3339 {
    pub(crate) fn of(time: SystemTime) -> Self {
        // Calls come many to a second: the date and time of the last second a thread saw are kept.
        thread_local! {
            static LAST: Cell<(u64, Rfc3339)> = const { Cell::new((u64::MAX, Rfc3339([0; 24]))) };
        }
        let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since.as_secs();
        let millis = since.subsec_millis();
        let (last_secs, last) = LAST.get();
        let mut out = if last_secs == secs {
            last
        } else {
            let whole = Self::of_second(secs);
            LAST.set((secs, whole));
            whole
        };
        let millis = [millis / 100, millis / 10 % 10, millis % 10];
        for (place, digit) in out.0[20..23].iter_mut().zip(millis) {
            *place = b'0' + digit as u8;
        }
        out
    }

    /// The timestamp of a whole second, its milliseconds `000`.
    fn of_second(secs: u64) -> Self {
        let days = (secs / 86_400) as i64;
        let rem = secs % 86_400;
        let (year, month, day) = civil_from_days(days);
        let mut out = *b"0000-00-00T00:00:00.000Z";
        let mut digits = |at: usize, mut value: u64, width: usize| {
            for place in (at..at + width).rev() {
                out[place] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        digits(0, year.clamp(0, 9999) as u64, 4);
        digits(5, u64::from(month), 2);
        digits(8, u64::from(day), 2);
        digits(11, rem / 3600, 2);
        digits(14, rem / 60 % 60, 2);
        digits(17, rem % 60, 2);
        Self(out)
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII digits and separators are ever written.
        std::str::from_utf8(&self.0).unwrap_or("1970-01-01T00:00:00.000Z")
    }
}

/// `time` as an RFC 3339 UTC timestamp with milliseconds, e.g. `2026-11-29T20:46:45.123Z`: the form
/// of a call record's `at`, for anything else that dates what it writes (a report).
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
///
/// let at = UNIX_EPOCH + Duration::from_millis(1_764_441_605_123);
/// assert_eq!(calltape_recorder::mcp::timestamp(at), "2025-11-29T18:40:05.123Z");
/// ```
pub fn timestamp(time: SystemTime) -> String {
    Rfc3339::of(time).as_str().to_owned()
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A fresh 8-character session id: random per process (the standard library's hash keys are seeded
/// from the OS), distinct per call.
pub fn new_session_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    format!("{:08x}", hasher.finish() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_rfc3339_utc_with_millis() {
        let cases = [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_123, "2000-02-29T00:00:00.123Z"),
            (1_795_985_205_123, "2026-11-29T20:46:45.123Z"),
            // The same second again, then the one before it: the kept second must not leak.
            (1_795_985_205_007, "2026-11-29T20:46:45.007Z"),
            (1_795_985_204_990, "2026-11-29T20:46:44.990Z"),
            (1_795_985_205_000, "2026-11-29T20:46:45.000Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
        ];
        for (millis, want) in cases {
            let time = UNIX_EPOCH + Duration::from_millis(millis);
            assert_eq!(Rfc3339::of(time).as_str(), want);
        }
    }

    #[test]
    fn session_ids_are_eight_hex_characters_and_differ() {
        let a = new_session_id();
        let b = new_session_id();
        assert_eq!(a.len(), 8);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}

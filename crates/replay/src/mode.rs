//! The record/replay modes that `http`'s proxy and `mock` share, and how the environment chooses one.

use std::fmt;
use std::str::FromStr;

/// What a proxy or a mock does with each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Replay hits, record misses, per interaction. The default outside CI.
    ///
    /// The cassette answers whatever it can: an unused recording of the same request, then the
    /// [`Exhaustion`](crate::http::Exhaustion) policy and fuzzy matching when they are enabled. Only a request it cannot answer
    /// is forwarded, and its answer added.
    Auto,
    /// Strict replay: a miss is an error and no upstream connection is ever opened. The default in CI.
    Replay,
    /// Re-record every touched cassette from scratch (alias `update`).
    Record,
    /// Keep what is recorded and grow the cassette: each recording answers its exact request once, and
    /// everything else (a new request, a repeat beyond the recorded count, a near match) is forwarded
    /// and added. The [`Exhaustion`](crate::http::Exhaustion) policy and fuzzy matching do not apply.
    Append,
    /// Forward only; write nothing.
    Live,
    /// Forward, compare the live answer's structure to the recording, report drift; write nothing.
    Verify,
}

impl Mode {
    /// The mode's name as accepted on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Replay => "replay",
            Self::Record => "record",
            Self::Append => "append",
            Self::Live => "live",
            Self::Verify => "verify",
        }
    }

    /// Whether this mode may open connections to upstreams.
    pub fn forwards(self) -> bool {
        self != Self::Replay
    }

    /// Whether this mode writes cassettes.
    pub fn writes(self) -> bool {
        matches!(self, Self::Auto | Self::Record | Self::Append)
    }

    /// Resolves the mode: `explicit` (the `--mode` flag) wins, then `CALLTAPE_MODE`, then the reference
    /// recorder's variables (`UPDATE_RECORDINGS=true`, `LLM_TEST_MODE`, `RECORD_LLM=true`), then `replay`
    /// when `CI` is set to anything but empty, `0` or `false`, else `auto`.
    pub fn resolve(explicit: Option<Mode>) -> Result<Mode, String> {
        Self::resolve_with(explicit, |name| std::env::var(name).ok())
    }

    /// [`resolve`](Self::resolve) with a custom environment lookup.
    pub fn resolve_with(
        explicit: Option<Mode>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Mode, String> {
        if let Some(m) = explicit {
            return Ok(m);
        }
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(v) = set("CALLTAPE_MODE") {
            return v.parse().map_err(|e: String| format!("CALLTAPE_MODE: {e}"));
        }
        if set("UPDATE_RECORDINGS").is_some_and(|v| truthy(&v)) {
            return Ok(Mode::Record);
        }
        if let Some(v) = set("LLM_TEST_MODE") {
            return v.parse().map_err(|e: String| format!("LLM_TEST_MODE: {e}"));
        }
        if set("RECORD_LLM").is_some_and(|v| truthy(&v)) {
            return Ok(Mode::Record);
        }
        if set("CI")
            .is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "0" | "false"))
        {
            return Ok(Mode::Replay);
        }
        Ok(Mode::Auto)
    }
}

fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Self::Auto,
            "replay" => Self::Replay,
            "record" | "update" => Self::Record,
            "append" => Self::Append,
            "live" => Self::Live,
            "verify" => Self::Verify,
            other => {
                return Err(format!(
                    "unknown mode {other:?}; expected auto, replay, record, update, append, live or verify"
                ));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_resolution_order() {
        type Env = &'static [(&'static str, &'static str)];
        let table: &[(Env, Option<Mode>, Mode)] = &[
            (&[], None, Mode::Auto),
            (&[("CI", "true")], None, Mode::Replay),
            (&[("CI", "1")], None, Mode::Replay),
            (&[("CI", "0")], None, Mode::Auto),
            (&[("CI", "false")], None, Mode::Auto),
            (&[("CI", "")], None, Mode::Auto),
            (
                &[("CI", "true"), ("CALLTAPE_MODE", "record")],
                None,
                Mode::Record,
            ),
            (&[("CI", "true")], Some(Mode::Auto), Mode::Auto),
            (
                &[("CALLTAPE_MODE", "live")],
                Some(Mode::Replay),
                Mode::Replay,
            ),
            (&[("UPDATE_RECORDINGS", "true")], None, Mode::Record),
            (&[("LLM_TEST_MODE", "replay")], None, Mode::Replay),
            (&[("LLM_TEST_MODE", "update")], None, Mode::Record),
            (&[("RECORD_LLM", "true")], None, Mode::Record),
        ];
        for (env, explicit, expected) in table {
            let got = Mode::resolve_with(*explicit, |name| {
                env.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            })
            .unwrap();
            assert_eq!(got, *expected, "{env:?} {explicit:?}");
        }
        assert!(
            Mode::resolve_with(None, |n| (n == "CALLTAPE_MODE").then(|| "nope".into())).is_err()
        );
    }
}

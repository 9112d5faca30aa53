//! Instructions a child process runs while a workload goes through it: a figure that a noisy machine
//! moves far less than CPU time.
//!
//! The hardware counter is read with `perf stat -e instructions -p PID` around the workload. Where
//! counters are not available (many virtual machines answer `<not supported>`), the process is run
//! under valgrind's callgrind instead, which counts the instructions it runs in all its threads and
//! writes the total when the process ends: then the caller runs a small and a larger workload and
//! takes the difference, so that start-up and shut-down cancel out.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// How instructions are counted on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// The hardware counter, through `perf stat`.
    Perf,
    /// valgrind's callgrind (a process it runs is about 50 times slower).
    Callgrind,
}

impl Counter {
    /// The counter this machine offers, or why there is none.
    pub fn detect() -> Result<Self, String> {
        let perf = Command::new("perf")
            .args(["stat", "-x,", "-e", "instructions", "true"])
            .output();
        if let Ok(out) = &perf
            && out.status.success()
            && perf_count(&String::from_utf8_lossy(&out.stderr)).is_some()
        {
            return Ok(Self::Perf);
        }
        match Command::new("valgrind").arg("--version").output() {
            Ok(out) if out.status.success() => Ok(Self::Callgrind),
            _ => Err(match perf {
                Ok(_) => {
                    "perf counts no instructions here and valgrind is not installed".to_owned()
                }
                Err(_) => "neither perf nor valgrind is installed".to_owned(),
            }),
        }
    }
}

/// The instructions the process `pid` runs (all its threads, user and kernel as allowed) while
/// `workload` runs; `None` when `perf` could not count them.
pub fn perf_around(pid: u32, workload: impl FnOnce()) -> Option<u64> {
    let perf = Command::new("perf")
        .args(["stat", "-x,", "-e", "instructions", "-p"])
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    // perf attaches to the process's threads before it counts; give it the time to.
    std::thread::sleep(Duration::from_millis(300));
    workload();
    let stopped = Command::new("kill")
        .args(["-INT", &perf.id().to_string()])
        .status();
    let out = perf.wait_with_output().ok()?;
    stopped.ok()?;
    perf_count(&String::from_utf8_lossy(&out.stderr))
}

/// The count in `perf stat -x,` output: the first field of the `instructions` line.
fn perf_count(text: &str) -> Option<u64> {
    text.lines()
        .find(|line| line.contains(",instructions"))
        .and_then(|line| line.split(',').next())
        .and_then(|count| count.trim().parse().ok())
}

/// A command that runs `program` under callgrind, and where callgrind writes its counts.
#[derive(Debug)]
pub struct Callgrind {
    out: PathBuf,
}

impl Callgrind {
    /// `program` with `args`, run under callgrind; its counts go to a file of this value's own.
    pub fn command(
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> (Command, Self) {
        static RUN: AtomicU32 = AtomicU32::new(0);
        let out = std::env::temp_dir().join(format!(
            "calltape-bench-callgrind-{}-{}.out",
            std::process::id(),
            RUN.fetch_add(1, Ordering::Relaxed)
        ));
        let mut command = Command::new("valgrind");
        command
            .arg("--tool=callgrind")
            .arg("--quiet")
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg(program)
            .args(args);
        (command, Self { out })
    }

    /// The instructions the process ran in all its threads; call it once the process has ended.
    pub fn total(self) -> Option<u64> {
        let text = std::fs::read_to_string(&self.out).ok()?;
        let _ = std::fs::remove_file(&self.out);
        text.lines()
            .find_map(|line| {
                line.strip_prefix("totals:")
                    .or_else(|| line.strip_prefix("summary:"))
            })
            .and_then(|count| count.split_whitespace().next())
            .and_then(|count| count.parse().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::perf_count;

    #[test]
    fn perf_count_reads_the_instructions_line() {
        let cases = [
            ("1234567,,instructions,1000000,100.00,,\n", Some(1_234_567)),
            (
                "\n98765,,instructions:u,52,100.00,0.51,insn per cycle\n",
                Some(98_765),
            ),
            ("<not supported>,,instructions,0,100.00,,\n", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(perf_count(text), want, "{text:?}");
        }
    }
}

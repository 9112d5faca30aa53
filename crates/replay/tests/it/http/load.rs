//! Another process that keeps the machine's cores busy while a test runs, as a loaded CI runner
//! would.

use std::process::{Child, Command, Stdio};

/// Busy-loop child processes, one per core (at least two); killed when dropped.
pub(super) struct CpuLoad(Vec<Child>);

impl CpuLoad {
    pub(super) fn start() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
        let children = (0..cores)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("start a busy-loop process")
            })
            .collect();
        Self(children)
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

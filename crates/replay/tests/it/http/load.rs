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
                busy_loop()
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("start a busy-loop process")
            })
            .collect();
        Self(children)
    }
}

/// A shell that loops until it is killed.
#[cfg(unix)]
fn busy_loop() -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", "while :; do :; done"]);
    command
}

/// A shell that loops until it is killed: a `for /L` whose step is 0 never ends.
#[cfg(windows)]
fn busy_loop() -> Command {
    use std::os::windows::process::CommandExt;
    let mut command = Command::new("cmd");
    // As written: the standard quoting of an argument with spaces is not what `cmd /C` parses.
    command
        .args(["/D", "/Q", "/C"])
        .raw_arg("for /L %i in (0,0,1) do @rem");
    command
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

//! `calltape demo`: record a scripted session against the built-in demo server v1 through the real
//! record path, replay it against v1 and v2, and print the report. No network, all files in a
//! temporary folder it names.
//!
//! The demo server itself is the hidden `calltape demo-server 1|2` subcommand; it and the scripted
//! client are calltape-replay's `demo` module, this file only runs the steps and says what they show.

use std::ffi::OsString;
use std::io::{BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use calltape_recorder::mcp::{Recording, list_items_key};
use calltape_replay::mcp::{
    CallReport, Comparer, Fills, ReplayOptions, ReplayReport, Replayed, Status, TextOptions, replay,
};
use calltape_replay::{ReportContext, demo};
use calltape_stdio_bridge::vocab::{TOOLS_CALL, TOOLS_LIST};
use calltape_stdio_bridge::{ChildUpstream, Stderr, Upstream};
use clap::Args;
use serde_json::Value;

use crate::error::{Error, Outcome};
use crate::exit;
use crate::output::{errln, outln};

/// The secret the scripted client sends in `pay`'s input; the recording must not hold it.
const SECRET: &str = demo::CARD_TOKEN;

/// The fields that vary per call in the demo server's quotes.
const VOLATILE: &str = demo::VOLATILE_FIELDS;

const EXAMPLES: &str = "\
Examples:
  calltape demo
  calltape demo --dir /tmp/calltape-demo

Runs offline in a few seconds, with calltape's own demo server (the hidden `calltape demo-server 1` \
and `2`): exit 0 when every step went as described, 1 when one did not.";

/// The arguments of `calltape demo`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct DemoArgs {
    /// Put the files in DIR (created 0700 if missing; not a symbolic link) instead of a new temporary
    /// folder.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// The arguments of the hidden `calltape demo-server`.
#[derive(Debug, Args)]
pub(crate) struct DemoServerArgs {
    /// The server version: 1, or 2 with a new price, a failing pay and a working refund, and a tool
    /// surface that changed (one tool gone, one new, a new required argument for pay).
    #[arg(value_parser = clap::value_parser!(u8).range(1..=2))]
    version: u8,
}

/// Runs the demo MCP server on stdin and stdout until stdin closes.
pub(crate) fn run_server(args: DemoServerArgs) -> Outcome {
    // A reader that went away ends the server as the end of its input does.
    let _ = demo::serve(
        args.version,
        std::io::stdin().lock(),
        std::io::stdout().lock(),
    );
    Ok(exit::OK)
}

pub(crate) fn run(args: DemoArgs) -> Outcome {
    match demo(args).map_err(Error::Demo)? {
        true => Ok(exit::OK),
        false => Ok(exit::DIFFERENCES),
    }
}

fn demo(args: DemoArgs) -> Result<bool, String> {
    let started = Instant::now();
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the calltape binary: {e}"))?;
    let dir = folder(args.dir)?;
    let path = dir.join("calls.jsonl");
    let _ = std::fs::remove_file(&path);
    let color = crate::logging::color_enabled(std::io::stdout().is_terminal());

    outln!("calltape demo: files in {}", dir.display());
    outln!();
    outln!(
        "{}",
        bold("1. Record a client session against demo server v1", color)
    );
    outln!(
        "   $ calltape record -o {} -- calltape demo-server 1",
        path.display()
    );
    let calls = record(&exe, &path)?;
    outln!("   the client read the server's tools, resources and prompts, then made quote, pay");
    outln!("   (with cardToken \"{SECRET}\"), a refund of the new payment, a resource read");
    outln!("   and a receipt prompt for the payment: {calls} requests");

    outln!();
    outln!("{}", bold("2. Check the recording", color));
    let (recording, recorded_ok) = check(&path, calls)?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let replayer = Replayer {
        runtime,
        exe,
        recording,
        color,
    };
    outln!();
    outln!("{}", bold("3. Replay it against v1", color));
    let v1_ok = replayer.against_v1()?;
    outln!();
    outln!("{}", bold("4. Replay it against v2", color));
    let v2_ok = replayer.against_v2(calls)?;
    outln!();
    outln!(
        "{}",
        bold(
            "5. Serve the recording to the client, with no server running",
            color
        )
    );
    outln!("   $ calltape mock {}", path.display());
    let mocked_ok = mock(&replayer.exe, &path, calls)?;
    outln!();
    outln!(
        "done in {:.1} s; the recording is {}",
        started.elapsed().as_secs_f64(),
        path.display()
    );
    let as_expected = recorded_ok && v1_ok && v2_ok && mocked_ok;
    if !as_expected {
        errln!("calltape demo: the demo did not go as expected (see above)");
    }
    Ok(as_expected)
}

/// The folder the demo writes to: `dir` (missing folders made owner-only, a link refused), or a new
/// temporary one that is kept.
fn folder(dir: Option<PathBuf>) -> Result<PathBuf, String> {
    match dir {
        Some(dir) => {
            calltape_jsonl_store::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            Ok(dir)
        }
        None => Ok(tempfile::Builder::new()
            .prefix("calltape-demo-")
            .tempdir()
            .map_err(|e| format!("cannot create a temporary folder: {e}"))?
            .keep()),
    }
}

fn bold(text: &str, color: bool) -> String {
    if color {
        format!("\x1b[1m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// How the file at `path` is protected (`mode 0600`), and whether that is owner-only.
#[cfg(unix)]
fn protection(path: &Path) -> Result<(String, bool), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| format!("cannot stat {}: {e}", path.display()))?
        .permissions()
        .mode()
        & 0o777;
    Ok((format!("mode {mode:04o}"), mode == 0o600))
}

/// How the file at `path` is protected (its access list grants the owner alone, or more), and
/// whether that is owner-only.
#[cfg(windows)]
fn protection(path: &Path) -> Result<(String, bool), String> {
    let only = calltape_jsonl_store::fs::is_owner_only(path).map_err(|e| e.to_string())?;
    let said = if only {
        "owner-only access list"
    } else {
        "access list NOT owner-only"
    };
    Ok((said.to_owned(), only))
}

/// Step 2: reads the recording back and shows that it is owner-only and holds no secret. Returns it,
/// and whether it is as it should be.
fn check(path: &Path, calls: usize) -> Result<(Recording, bool), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let (protection, owner_only) = protection(path)?;
    let recording = Recording::read(path).map_err(|e| e.to_string())?;
    let lists = recording
        .calls
        .iter()
        .filter(|c| list_items_key(&c.record.method).is_some())
        .count();
    outln!(
        "   {} lines ({} calls, then the {lists} lists), {protection}, secret present: {}",
        recording.calls.len(),
        recording.calls.len() - lists,
        if text.contains(SECRET) {
            "YES (a bug)"
        } else {
            "no"
        }
    );
    if let Some(pay) = recording.calls.iter().find(|c| c.record.name == "pay") {
        let input = pay.record.input.clone().unwrap_or(Value::Null);
        outln!("   pay's recorded input: {input}");
    }
    let ok = !text.contains(SECRET) && owner_only && recording.calls.len() == calls;
    Ok((recording, ok))
}

/// Replays the demo's recording against a version of the demo server, in process.
struct Replayer {
    runtime: tokio::runtime::Runtime,
    exe: PathBuf,
    recording: Recording,
    color: bool,
}

impl Replayer {
    /// Replays against demo server `version`, ignoring `ignore`, with the card token filled in when
    /// `fill` (what `--fill cardToken=env:CARD_TOKEN` does, with the value in hand).
    fn against(&self, version: &str, ignore: &str, fill: bool) -> Result<Replayed, String> {
        let upstream: Arc<dyn Upstream> = Arc::new(
            ChildUpstream::new([
                self.exe.clone().into_os_string(),
                OsString::from("demo-server"),
                version.into(),
            ])
            .map_err(|e| e.to_string())?
            .stderr(Stderr::Null),
        );
        let comparer = Comparer::builder()
            .ignore([ignore])
            .build()
            .map_err(|e| e.to_string())?;
        let fills = if fill {
            Fills::new().value("cardToken", SECRET)
        } else {
            Fills::new()
        };
        let options = ReplayOptions::default()
            .comparer(comparer)
            .fills(fills)
            .timeout(Duration::from_secs(10));
        self.runtime
            .block_on(replay(&self.recording, upstream, &options))
            .map_err(|e| e.to_string())
    }

    /// Step 3: against v1, without the token, with it, and with the varying fields ignored; the
    /// refund follows the new payment id. Returns whether it went as it should.
    fn against_v1(&self) -> Result<bool, String> {
        let path = self.recording.path.display();
        outln!("   $ calltape replay {path} -- calltape demo-server 1");
        let unfilled = self.against("1", VOLATILE, false)?;
        outln!(
            "   pay is sent with cardToken \"[REDACTED]\", as recorded, and the server refuses it:"
        );
        print_calls(&unfilled, |c| c.name == "pay", self.color);
        outln!("   so give the token back from the environment (never on the command line):");
        outln!(
            "   $ calltape replay {path} --fill cardToken=env:CARD_TOKEN -- calltape demo-server 1"
        );
        let plain = self.against("1", "", true)?;
        let varying: Vec<String> = plain
            .report
            .calls
            .iter()
            .flat_map(|c| c.differences.iter().map(|d| d.path.clone()))
            .collect();
        outln!(
            "   {}: only fields that vary per call differ: {}",
            plain.report.summary(),
            varying.join(", ")
        );
        outln!(
            "   $ calltape replay {path} --fill cardToken=env:CARD_TOKEN --ignore '{VOLATILE}' -- calltape demo-server 1"
        );
        let clean = self.against("1", VOLATILE, true)?;
        outln!("   {}  → exit 0", clean.report.summary());
        outln!("   the new server made a new payment id; the refund and the receipt followed it:");
        print_calls(&clean, |c| !c.substitutions.is_empty(), self.color);
        let followed = |c: &CallReport| c.name == "refund" && !c.substitutions.is_empty();
        Ok(!clean.report.has_differences()
            && clean.report.calls.iter().any(followed)
            && unfilled
                .report
                .calls
                .iter()
                .any(|c| c.name == "pay" && c.unfilled == ["cardToken"]))
    }

    /// Step 4: against v2, where three calls changed and the tool list did: two breaking changes,
    /// three compatible ones. Returns whether exactly those did.
    fn against_v2(&self, calls: usize) -> Result<bool, String> {
        outln!(
            "   $ calltape replay {} --fill cardToken=env:CARD_TOKEN --ignore '{VOLATILE}' -- calltape demo-server 2",
            self.recording.path.display()
        );
        let v2 = self.against("2", VOLATILE, true)?;
        outln!();
        for line in v2.report.to_text(self.color).lines() {
            if line.is_empty() {
                outln!();
            } else {
                outln!("   {line}");
            }
        }
        outln!("   → exit 1: CI fails and shows this report (with --fail-on breaking too: a tool");
        outln!("     is gone and pay needs a new argument; a new tool alone would pass)");
        let page = self.recording.path.with_file_name("report.html");
        let context = ReportContext::new()
            .server("calltape demo-server 2")
            .date(calltape_recorder::mcp::timestamp(SystemTime::now()))
            .ignore(VOLATILE.split(','))
            .fills(["cardToken"]);
        let html = v2.report.to_html(&context);
        // The final gate, as before every report calltape writes: the filled token among what it
        // watches.
        let gate = crate::logging::gate().watch(&Fills::new().value("cardToken", SECRET).known());
        calltape_recorder::admit(&gate, [html.as_bytes()], || "the demo's HTML report".into())
            .map_err(|refusal| refusal.to_string())?;
        calltape_jsonl_store::fs::write_atomic(&page, html)
            .map_err(|e| format!("cannot write {}: {e}", page.display()))?;
        outln!(
            "   the same report as a page to open in a browser: {}",
            page.display()
        );
        let want = [
            (TOOLS_CALL, "quote", Status::Changed),
            (TOOLS_CALL, "pay", Status::NewError),
            (TOOLS_CALL, "refund", Status::GoneError),
            (TOOLS_LIST, "", Status::Changed),
        ];
        let surface = v2.report.surface();
        Ok(want.iter().all(|(method, name, status)| {
            v2.report
                .calls
                .iter()
                .any(|c| c.method == *method && c.name == *name && c.status == *status)
        }) && v2.report.summary().same == calls - want.len()
            && (surface.breaking, surface.compatible) == (2, 3))
    }
}

/// Prints the text report's lines of the calls `which` picks, indented.
fn print_calls(replayed: &Replayed, which: impl Fn(&CallReport) -> bool, color: bool) {
    let calls = replayed
        .report
        .calls
        .iter()
        .filter(|c| which(c))
        .cloned()
        .collect();
    let report = ReplayReport::new(replayed.report.file.clone(), calls);
    let options = TextOptions::new().color(color).verbose(true);
    for line in report
        .to_text_with(options)
        .lines()
        .take_while(|l| !l.is_empty())
    {
        outln!("   {line}");
    }
}

/// Runs `calltape record` around demo server v1 and drives it as the scripted client. Returns how
/// many calls were answered.
fn record(exe: &Path, path: &Path) -> Result<usize, String> {
    let mut child = Command::new(exe)
        .arg("--quiet")
        .arg("record")
        .arg("-o")
        .arg(path)
        .arg("--")
        .arg(exe)
        .args(["demo-server", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run calltape record: {e}"))?;
    let result = match (child.stdin.take(), child.stdout.take()) {
        (Some(stdin), Some(stdout)) => demo::run_script(stdin, BufReader::new(stdout))
            .map_err(|e| format!("calltape record: {e}")),
        _ => Err("no stdin or stdout for calltape record".to_owned()),
    };
    let status = child
        .wait()
        .map_err(|e| format!("calltape record did not finish: {e}"))?;
    let calls = result?;
    if !status.success() {
        return Err(format!("calltape record failed: {status}"));
    }
    Ok(calls)
}

/// Step 5: runs `calltape mock` on the recording and drives it as the scripted client, which gets
/// every answer with no server running. Returns whether it did: all `calls` answered, no miss.
fn mock(exe: &Path, path: &Path, calls: usize) -> Result<bool, String> {
    let mut child = Command::new(exe)
        .args(["--quiet", "mock", "--mode", "replay"])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run calltape mock: {e}"))?;
    let result = match (child.stdin.take(), child.stdout.take()) {
        (Some(stdin), Some(stdout)) => demo::run_script(stdin, BufReader::new(stdout))
            .map_err(|e| format!("calltape mock: {e}")),
        _ => Err("no stdin or stdout for calltape mock".to_owned()),
    };
    let status = child
        .wait()
        .map_err(|e| format!("calltape mock did not finish: {e}"))?;
    let answered = result?;
    let ok = answered == calls && status.success();
    if ok {
        outln!(
            "   the same client session got all {answered} answers from the recording, none missed:"
        );
        outln!("   a client's tests need no server, offline and in CI");
    } else {
        outln!("   the client got {answered} of {calls} answers and the mock ended with {status}");
    }
    Ok(ok)
}

//! `calltape show`: summarise and validate a call recording.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use calltape_recorder::record::{Outcome, Recording};
use calltape_recorder::{Cassette, Content};
use clap::Args;

use crate::exit;

pub(crate) const EXAMPLES: &str = "\
Examples:
  calltape show calls.jsonl

Prints the calls per method and name (with their errors), the sessions and clients, and the time
span of an MCP call recording; or the interactions per upstream, method and path of an HTTP cassette.
Exit 2 when the file is not valid, each bad line named as FILE:LINE.";

/// The arguments of `calltape show`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct ShowArgs {
    /// The call recording or HTTP cassette to summarise.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

pub(crate) fn run(args: ShowArgs) -> u8 {
    if is_cassette(&args.file) {
        return match Cassette::load(&args.file) {
            Ok(cassette) => {
                print!("{}", summarise_cassette(&args.file, &cassette));
                exit::OK
            }
            Err(e) => {
                eprintln!("calltape: {e}");
                exit::USAGE
            }
        };
    }
    match Recording::read(&args.file) {
        Ok(recording) => {
            print!("{}", summarise(&recording));
            exit::OK
        }
        Err(e) => {
            eprintln!("calltape: {e}");
            exit::USAGE
        }
    }
}

#[derive(Default)]
struct Tally {
    calls: usize,
    errors: BTreeMap<String, usize>,
    total_ms: f64,
}

/// The summary `calltape show` prints.
pub(crate) fn summarise(recording: &Recording) -> String {
    let mut out = String::new();
    let calls = &recording.calls;
    let sessions = recording.sessions();
    let _ = writeln!(
        out,
        "{}: {} call{} in {} session{}",
        recording.path.display(),
        calls.len(),
        plural(calls.len()),
        sessions.len(),
        plural(sessions.len())
    );
    if calls.is_empty() {
        return out;
    }
    let first = calls
        .iter()
        .map(|c| c.record.at.as_str())
        .min()
        .unwrap_or("");
    let last = calls
        .iter()
        .map(|c| c.record.at.as_str())
        .max()
        .unwrap_or("");
    let _ = writeln!(out, "time span: {first} … {last}");

    let mut per_call: BTreeMap<(&str, &str), Tally> = BTreeMap::new();
    let mut errors = 0usize;
    for call in calls {
        let r = &call.record;
        let tally = per_call.entry((&r.method, &r.name)).or_default();
        tally.calls += 1;
        tally.total_ms += r.duration_ms;
        if let Outcome::Error(e) = &r.outcome {
            errors += 1;
            *tally.errors.entry(e.code.to_string()).or_default() += 1;
        }
    }
    let _ = writeln!(out, "\ncalls:");
    let width = per_call
        .keys()
        .map(|(m, n)| m.len() + n.len() + 1)
        .max()
        .unwrap_or(0);
    for ((method, name), tally) in &per_call {
        let label = format!("{method} {name}");
        let _ = write!(
            out,
            "  {label:<width$}  {:>4} call{}  avg {:.1} ms",
            tally.calls,
            plural(tally.calls),
            tally.total_ms / tally.calls as f64
        );
        if !tally.errors.is_empty() {
            let list: Vec<String> = tally
                .errors
                .iter()
                .map(|(code, n)| format!("{code} ×{n}"))
                .collect();
            let _ = write!(out, "  errors: {}", list.join(", "));
        }
        out.push('\n');
    }

    let _ = writeln!(out, "\nsessions:");
    for (session, indexes) in &sessions {
        let record = &calls[indexes[0]].record;
        let client = record
            .client
            .as_ref()
            .map(|c| {
                let field = |k: &str| c.get(k).and_then(|v| v.as_str()).unwrap_or("?").to_owned();
                format!("{} {}", field("name"), field("version"))
            })
            .unwrap_or_else(|| "unknown client".to_owned());
        let mut line = format!(
            "  {session}  {client}  {} call{}",
            indexes.len(),
            plural(indexes.len())
        );
        if let Some(version) = &record.protocol_version {
            let _ = write!(line, "  protocol {version}");
        }
        if let Some(server) = &record.server {
            let name = server.get("name").and_then(|v| v.as_str()).unwrap_or("?");
            let version = server
                .get("version")
                .and_then(|v| v.as_str())
                .unwrap_or("?");
            let _ = write!(line, "  server {name} {version}");
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(
        out,
        "\nerrors: {errors} of {} call{}",
        calls.len(),
        plural(calls.len())
    );
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Whether the file's first line is a cassette's meta line (`"t":"meta"`).
fn is_cassette(path: &std::path::Path) -> bool {
    use std::io::BufRead as _;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut first = String::new();
    let _ = std::io::BufReader::new(file).read_line(&mut first);
    serde_json::from_str::<serde_json::Value>(&first)
        .ok()
        .and_then(|v| v.get("t").and_then(|t| t.as_str()).map(|t| t == "meta"))
        .unwrap_or(false)
}

/// The summary of an HTTP cassette: interactions per upstream, method and path, with statuses.
fn summarise_cassette(path: &std::path::Path, cassette: &Cassette) -> String {
    let mut out = String::new();
    let n = cassette.interactions.len();
    let _ = writeln!(
        out,
        "{}: HTTP cassette, {n} interaction{}",
        path.display(),
        plural(n)
    );
    /// Interactions of one route: how many, how many streamed, and their statuses.
    #[derive(Default)]
    struct Route {
        count: usize,
        streams: usize,
        statuses: BTreeMap<u16, usize>,
    }
    let mut per: BTreeMap<(&str, &str, &str), Route> = BTreeMap::new();
    for i in &cassette.interactions {
        let key = (
            i.request.upstream.as_str(),
            i.request.method.as_str(),
            i.request.path.as_str(),
        );
        let route = per.entry(key).or_default();
        route.count += 1;
        if matches!(i.response.content, Content::Stream(_)) {
            route.streams += 1;
        }
        *route.statuses.entry(i.response.status).or_default() += 1;
    }
    if !per.is_empty() {
        let _ = writeln!(out, "\ninteractions:");
    }
    for ((upstream, method, path), route) in &per {
        let Route {
            count,
            streams,
            statuses,
        } = route;
        let route = path;
        let statuses: Vec<String> = statuses.iter().map(|(s, n)| format!("{s} ×{n}")).collect();
        let _ = write!(
            out,
            "  {upstream} {method} {route}  {count}  status {}",
            statuses.join(", ")
        );
        if *streams > 0 {
            let _ = write!(out, "  ({streams} streamed)");
        }
        out.push('\n');
    }
    out
}

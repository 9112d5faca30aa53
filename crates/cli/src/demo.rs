//! `calltape demo`: record a scripted session against the built-in demo server v1 through the real
//! record path, replay it against v1 and v2, and print the report. No network, all files in a
//! temporary folder it names.
//!
//! The demo server itself is the hidden `calltape demo-server 1|2` subcommand.

use std::collections::hash_map::RandomState;
use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use calltape_recorder::mcp::{Recording, list_items_key};
use calltape_replay::ReportContext;
use calltape_replay::mcp::{
    CallReport, Comparer, Fills, ReplayOptions, ReplayReport, Replayed, Status, TextOptions, replay,
};
use calltape_stdio_bridge::vocab::{INITIALIZE, INITIALIZED, PING, TOOLS_CALL, TOOLS_LIST};
use calltape_stdio_bridge::{ChildUpstream, Stderr, Upstream, vocab};
use clap::Args;
use serde_json::{Value, json};

use crate::error::{Error, Outcome};
use crate::exit;
use crate::output::{errln, outln};

/// The secret the scripted client sends in `pay`'s input; the recording must not hold it.
const SECRET: &str = "tok_live_4eC39HqLyjWDarjtT1zdp7dc";

/// The fields that vary per call in the demo server's quotes.
const VOLATILE: &str = "**.quotedAt,**.quoteId";

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

// ---------------------------------------------------------------------------------------------------
// The demo server.

/// Runs the demo MCP server on stdin and stdout until stdin closes.
pub(crate) fn run_server(args: DemoServerArgs) -> Outcome {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let mut payments = Payments::new();
    for line in stdin.lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(message) => handle(args.version, &mut payments, &message),
            Err(e) => Some(vocab::error_answer(
                &Value::Null,
                vocab::PARSE_ERROR,
                &format!("parse error: {e}"),
            )),
        };
        if let Some(reply) = reply
            && (writeln!(stdout, "{reply}").is_err() || stdout.flush().is_err())
        {
            break;
        }
    }
    Ok(exit::OK)
}

fn handle(version: u8, payments: &mut Payments, message: &Value) -> Option<Value> {
    let id = message.get("id")?.clone();
    let method = message.get("method").and_then(Value::as_str)?;
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let result = match method {
        INITIALIZE => {
            let asked = params.get("protocolVersion").and_then(Value::as_str);
            let supported = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
            let version_text = asked
                .filter(|v| supported.contains(v))
                .unwrap_or("2025-06-18");
            Ok(json!({
                "protocolVersion": version_text,
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                "serverInfo": {"name": "calltape-demo", "version": format!("{version}.0.0")},
            }))
        }
        PING => Ok(json!({})),
        TOOLS_LIST => Ok(json!({"tools": tools(version)})),
        TOOLS_CALL => call_tool(version, payments, &params),
        "resources/list" => Ok(json!({"resources": [
            {"uri": "demo://terms", "name": "terms", "mimeType": "text/plain"}]})),
        "resources/read" => match params.get("uri").and_then(Value::as_str) {
            Some(uri @ "demo://terms") => {
                Ok(json!({"contents": [{"uri": uri, "mimeType": "text/plain",
                "text": "Quotes are valid for 15 minutes. Payments settle the next day."}]}))
            }
            other => Err((
                vocab::LEGACY_RESOURCE_NOT_FOUND,
                format!("Resource not found: {}", other.unwrap_or("")),
            )),
        },
        "prompts/list" => Ok(json!({"prompts": [{"name": "receipt",
            "arguments": [{"name": "paymentId", "required": true}]}]})),
        "prompts/get" => {
            let payment = params
                .pointer("/arguments/paymentId")
                .and_then(Value::as_str)
                .unwrap_or("?");
            Ok(
                json!({"messages": [{"role": "user", "content": {"type": "text",
                "text": format!("Write a short receipt for payment {payment}.")}}]}),
            )
        }
        other => Err((
            vocab::METHOD_NOT_FOUND,
            format!("Method not found: {other}"),
        )),
    };
    Some(match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => vocab::error_answer(&id, code, &message),
    })
}

/// The tools of each version. v2 dropped `convert` and added `balance`, pay needs an
/// `idempotencyKey` now, refund takes an optional `reason`, and quote is described anew: two
/// breaking changes and three compatible ones.
fn tools(version: u8) -> Vec<Value> {
    let v1 = version == 1;
    let mut pay = json!({"amount": {"type": "number"}, "currency": {"type": "string"},
        "cardToken": {"type": "string"}});
    let mut refund = json!({"paymentId": {"type": "string"}});
    let (quote, pay_required) = if v1 {
        ("The price of a symbol", &["amount", "cardToken"][..])
    } else {
        pay["idempotencyKey"] = json!({"type": "string"});
        refund["reason"] = json!({"type": "string"});
        (
            "The price of a symbol, in US dollars",
            &["amount", "cardToken", "idempotencyKey"][..],
        )
    };
    let mut tools = vec![
        tool(
            "quote",
            quote,
            json!({"symbol": {"type": "string"}}),
            &["symbol"],
        ),
        tool("pay", "Pay an amount with a card token", pay, pay_required),
        tool("refund", "Refund a payment", refund, &["paymentId"]),
    ];
    tools.push(if v1 {
        tool(
            "convert",
            "Convert an amount to another currency",
            json!({"amount": {"type": "number"}, "to": {"type": "string"}}),
            &["amount", "to"],
        )
    } else {
        tool("balance", "The balance of the account", json!({}), &[])
    });
    tools
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({"name": name, "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required}})
}

fn tool_error(code: &str, text: &str) -> Value {
    json!({"isError": true, "content": [{"type": "text", "text": text}], "_meta": {"code": code}})
}

fn structured(value: Value) -> Value {
    json!({"content": [{"type": "text", "text": value.to_string()}], "structuredContent": value})
}

/// The payments one server process made: each gets a fresh id, so a replay against a new process
/// sees new ids.
struct Payments {
    next: u64,
    made: Vec<String>,
}

impl Payments {
    fn new() -> Self {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        Self {
            next: 1000 + hasher.finish() % 9000,
            made: Vec::new(),
        }
    }

    fn make(&mut self) -> String {
        let id = format!("pay_{}", self.next);
        self.next += 1;
        self.made.push(id.clone());
        id
    }
}

fn call_tool(version: u8, payments: &mut Payments, params: &Value) -> Result<Value, (i64, String)> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    match (name, version) {
        ("quote", _) => {
            let symbol = args.get("symbol").and_then(Value::as_str).unwrap_or("ACME");
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let mut hasher = RandomState::new().build_hasher();
            hasher.write_u128(now.as_nanos());
            Ok(structured(json!({
                "symbol": symbol,
                "price": if version == 1 { 12 } else { 15 },
                "currency": "USD",
                "quotedAt": now.as_millis() as u64,
                "quoteId": format!("q-{:08x}", hasher.finish() as u32),
            })))
        }
        ("pay", 1) => {
            let token = args.get("cardToken").and_then(Value::as_str).unwrap_or("");
            if !token.starts_with("tok_") {
                return Ok(tool_error(
                    "invalid_card",
                    "the card token is not a card token",
                ));
            }
            let amount = args.get("amount").cloned().unwrap_or(json!(0));
            Ok(structured(
                json!({"status": "paid", "amount": amount, "currency": "USD", "paymentId": payments.make()}),
            ))
        }
        ("pay", _) => Ok(tool_error(
            "card_declined",
            "card declined: the payment provider refused the card",
        )),
        ("refund", 1) => {
            let payment = args.get("paymentId").and_then(Value::as_str).unwrap_or("");
            if !payments.made.iter().any(|p| p == payment) {
                return Ok(tool_error(
                    "unknown_payment",
                    &format!("no payment {payment}"),
                ));
            }
            Ok(tool_error(
                "not_supported",
                "refunds are not supported by this version",
            ))
        }
        ("refund", _) => {
            let payment = args.get("paymentId").cloned().unwrap_or(Value::Null);
            Ok(structured(
                json!({"status": "refunded", "paymentId": payment}),
            ))
        }
        (other, _) => Err((vocab::INVALID_PARAMS, format!("Unknown tool: {other}"))),
    }
}

// ---------------------------------------------------------------------------------------------------
// The demo.

/// The scripted client session: (method, params). As a client does, it reads the server's lists
/// first; the recorder writes them once the session ends.
fn script() -> Vec<(&'static str, Value)> {
    vec![
        (TOOLS_LIST, json!({})),
        ("resources/list", json!({})),
        ("prompts/list", json!({})),
        (
            TOOLS_CALL,
            json!({"name": "quote", "arguments": {"symbol": "ACME"}}),
        ),
        (
            TOOLS_CALL,
            json!({"name": "pay", "arguments": {"amount": 12, "currency": "USD", "cardToken": SECRET}}),
        ),
        (
            TOOLS_CALL,
            json!({"name": "refund", "arguments": {"paymentId": PAYMENT_ID}}),
        ),
        ("resources/read", json!({"uri": "demo://terms"})),
        (
            "prompts/get",
            json!({"name": "receipt", "arguments": {"paymentId": PAYMENT_ID}}),
        ),
    ]
}

/// Stands in the script for the id of the payment `pay` made.
const PAYMENT_ID: &str = "$paymentId";

/// `params` with each [`PAYMENT_ID`] replaced by `payment`.
fn with_payment(params: Value, payment: &str) -> Value {
    match params {
        Value::String(s) if s == PAYMENT_ID => Value::String(payment.to_owned()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, with_payment(v, payment)))
                .collect(),
        ),
        other => other,
    }
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
        "done in {:.1} s; the recording is {}",
        started.elapsed().as_secs_f64(),
        path.display()
    );
    let as_expected = recorded_ok && v1_ok && v2_ok;
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

/// Step 2: reads the recording back and shows that it is owner-only and holds no secret. Returns it,
/// and whether it is as it should be.
fn check(path: &Path, calls: usize) -> Result<(Recording, bool), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mode = std::fs::metadata(path)
        .map_err(|e| format!("cannot stat {}: {e}", path.display()))?
        .permissions()
        .mode()
        & 0o777;
    let recording = Recording::read(path).map_err(|e| e.to_string())?;
    let lists = recording
        .calls
        .iter()
        .filter(|c| list_items_key(&c.record.method).is_some())
        .count();
    outln!(
        "   {} lines ({} calls, then the {lists} lists), mode {mode:04o}, secret present: {}",
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
    let ok = !text.contains(SECRET) && mode == 0o600 && recording.calls.len() == calls;
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
    let result = drive(&mut child);
    drop(child.stdin.take());
    let status = child
        .wait()
        .map_err(|e| format!("calltape record did not finish: {e}"))?;
    let calls = result?;
    if !status.success() {
        return Err(format!("calltape record failed: {status}"));
    }
    Ok(calls)
}

fn drive(child: &mut Child) -> Result<usize, String> {
    let stdin = child.stdin.take().ok_or("no stdin for calltape record")?;
    let stdout = child.stdout.take().ok_or("no stdout for calltape record")?;
    let mut client = ScriptClient {
        stdin,
        stdout: BufReader::new(stdout),
        next_id: 0,
    };
    client.request(
        INITIALIZE,
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "calltape-demo-client", "version": env!("CARGO_PKG_VERSION")}}),
    )?;
    client.notify(INITIALIZED)?;
    let mut answered = 0;
    let mut payment = String::new();
    for (method, params) in script() {
        let answer = client.request(method, with_payment(params, &payment))?;
        if let Some(id) = answer
            .pointer("/result/structuredContent/paymentId")
            .and_then(Value::as_str)
        {
            payment = id.to_owned();
        }
        answered += 1;
    }
    child.stdin = Some(client.stdin);
    Ok(answered)
}

struct ScriptClient {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl ScriptClient {
    fn send(&mut self, message: &Value) -> Result<(), String> {
        writeln!(self.stdin, "{message}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("cannot write to calltape record: {e}"))
    }

    fn notify(&mut self, method: &str) -> Result<(), String> {
        self.send(&json!({"jsonrpc": "2.0", "method": method}))
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .stdout
                .read_line(&mut line)
                .map_err(|e| format!("cannot read from calltape record: {e}"))?;
            if n == 0 {
                return Err(format!(
                    "calltape record closed its output before answering {method}"
                ));
            }
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return Ok(message);
            }
        }
    }
}

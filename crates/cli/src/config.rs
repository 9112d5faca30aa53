//! `calltape config CLIENT -- CMD…`: the snippet that puts a server, wrapped in `calltape record`
//! (or `bridge`, `shared`), into an MCP client's configuration, and the file that client reads it
//! from.
//!
//! This lives in the CLI, not in a library: it writes command lines of this binary into other
//! programs' configuration files, which no user of the crates builds on.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{ArgGroup, Args, ValueEnum};

use crate::error::{Error, Outcome};
use crate::exit;
use crate::output::{errln, outln, shown};

const EXAMPLES: &str = "\
Examples:
  calltape config cursor -- node dist/index.js
  calltape config claude-desktop --name notes -- npx -y @modelcontextprotocol/server-memory
  calltape config vscode --bridge -- cargo run -q
  calltape config claude-code --shared notes -- uvx mcp-server-fetch
  calltape config inspector --url http://127.0.0.1:3000/mcp

Prints the snippet on stdout (JSON, ready to merge into the file) and, on stderr, the file the \
client reads it from. The server runs as `calltape record -o FILE -- CMD…` (FILE made absolute, as \
clients start servers in a folder of their own), `calltape bridge` with --bridge, or `calltape \
shared --key KEY` with --shared KEY; --url wraps a Streamable HTTP server instead of a command \
(with --shared too: one shared server of the remote for every session).

calltape is started the way this one was: `npx -y calltape` when run through npm's launcher \
(which sets CALLTAPE_LAUNCHER=npx), `uvx calltape` when run by uv (which sets UV), else \
`calltape`, or this binary's path when `calltape` on PATH is another one. --launcher chooses.";

/// The MCP clients whose configuration `calltape config` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Client {
    /// Claude Desktop: claude_desktop_config.json.
    ClaudeDesktop,
    /// Claude Code: .mcp.json at the project's root.
    ClaudeCode,
    /// Cursor: .cursor/mcp.json.
    Cursor,
    /// Visual Studio Code: .vscode/mcp.json.
    Vscode,
    /// The MCP Inspector: a file given to its --config.
    Inspector,
}

/// How the client starts calltape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Launcher {
    /// `calltape` from PATH, or this binary's path when PATH finds another one or none.
    Calltape,
    /// `npx -y calltape`.
    Npx,
    /// `uvx calltape`.
    Uvx,
}

/// The arguments of `calltape config`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
#[command(group(ArgGroup::new("server").required(true).args(["url", "command"])))]
pub(crate) struct ConfigArgs {
    /// The client whose configuration to print.
    #[arg(value_enum)]
    client: Client,

    /// The server's name in the configuration [default: this folder's name].
    #[arg(long, value_name = "NAME")]
    name: Option<String>,

    /// The recording `calltape record` writes, made absolute.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "calls.jsonl",
        conflicts_with_all = ["bridge", "shared"]
    )]
    output: PathBuf,

    /// Wrap the server in `calltape bridge` (restarts survived, nothing recorded).
    #[arg(long, conflicts_with = "shared")]
    bridge: bool,

    /// Wrap the server in `calltape shared --key KEY` (one server for every session of the key).
    #[arg(long, value_name = "KEY")]
    shared: Option<String>,

    /// How the client starts calltape: calltape, npx or uvx [default: as this one was started].
    #[arg(long, value_enum, value_name = "calltape|npx|uvx")]
    launcher: Option<Launcher>,

    /// A Streamable HTTP server to wrap instead of a command, e.g. http://127.0.0.1:3000/mcp.
    #[arg(long, value_name = "URL")]
    url: Option<String>,

    /// The server to run, with its arguments.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<OsString>,
}

pub(crate) fn run(args: ConfigArgs) -> Outcome {
    let cwd = std::env::current_dir().map_err(Error::CurrentDir)?;
    let name = match &args.name {
        Some(name) => name.clone(),
        None => default_name(&cwd),
    };
    let (program, program_args) = launch(args.launcher.unwrap_or_else(detect_launcher));
    let mut argv = program_args;
    argv.extend(calltape_args(&args, &cwd)?);
    outln!("{}", snippet(args.client, &name, &program, &argv));
    errln!("{}", shown(&where_it_goes(args.client, &name)));
    let relative: Vec<String> = args
        .command
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .filter(|a| !a.starts_with('-') && Path::new(a).is_relative() && cwd.join(a).exists())
        .map(str::to_owned)
        .collect();
    if !relative.is_empty() {
        errln!(
            "the client starts the server in a folder of its own: {} names a path in this folder, \
             so write it as an absolute path",
            shown(&relative.join(", "))
        );
    }
    Ok(exit::OK)
}

/// The calltape command line the client runs, after the launcher.
fn calltape_args(args: &ConfigArgs, cwd: &Path) -> Result<Vec<String>, Error> {
    let mut argv: Vec<String> = Vec::new();
    if let Some(key) = &args.shared {
        argv.extend(["shared".into(), "--key".into(), key.clone()]);
    } else if args.bridge {
        argv.push("bridge".into());
    } else {
        let output = cwd.join(&args.output);
        let output = output.to_str().ok_or(Error::NotUtf8("-o"))?;
        argv.extend(["record".into(), "-o".into(), output.to_owned()]);
    }
    if let Some(url) = &args.url {
        argv.extend(["--url".into(), url.clone()]);
    } else {
        argv.push("--".into());
        for word in &args.command {
            argv.push(
                word.to_str()
                    .ok_or(Error::NotUtf8("the command"))?
                    .to_owned(),
            );
        }
    }
    Ok(argv)
}

/// The launcher this calltape was started by: npm's sets `CALLTAPE_LAUNCHER=npx`, uv sets `UV` in
/// every process it runs.
fn detect_launcher() -> Launcher {
    match std::env::var_os("CALLTAPE_LAUNCHER") {
        Some(v) if v == "npx" => Launcher::Npx,
        Some(v) if v == "uvx" => Launcher::Uvx,
        _ if std::env::var_os("UV").is_some() => Launcher::Uvx,
        _ => Launcher::Calltape,
    }
}

/// The program and the arguments before calltape's own.
fn launch(launcher: Launcher) -> (String, Vec<String>) {
    match launcher {
        Launcher::Npx => ("npx".into(), vec!["-y".into(), "calltape".into()]),
        Launcher::Uvx => ("uvx".into(), vec!["calltape".into()]),
        Launcher::Calltape => (this_calltape(), Vec::new()),
    }
}

/// `calltape` when PATH finds this binary by that name, else this binary's absolute path (a build
/// in a checkout, a venv that is not activated).
fn this_calltape() -> String {
    let Ok(me) = std::env::current_exe().and_then(|p| p.canonicalize()) else {
        return "calltape".into();
    };
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("calltape"))
            .any(|c| c.is_file() && c.canonicalize().is_ok_and(|c| c == me))
    });
    match me.to_str() {
        Some(path) if !on_path => path.to_owned(),
        _ => "calltape".into(),
    }
}

/// The working folder's name, as a name clients accept (letters, digits, `.`, `_`, `-`).
fn default_name(cwd: &Path) -> String {
    let folder = cwd
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let name: String = folder
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches('-');
    if name.is_empty() {
        "server".into()
    } else {
        name.to_owned()
    }
}

/// The snippet: the whole file's shape, with this one server.
fn snippet(client: Client, name: &str, program: &str, args: &[String]) -> String {
    let quote = |s: &str| serde_json::Value::from(s).to_string();
    let (servers, kind) = match client {
        Client::Vscode => ("servers", Some("stdio")),
        Client::ClaudeCode => ("mcpServers", Some("stdio")),
        Client::ClaudeDesktop | Client::Cursor | Client::Inspector => ("mcpServers", None),
    };
    let kind = kind
        .map(|k| format!("      \"type\": {},\n", quote(k)))
        .unwrap_or_default();
    let args: Vec<String> = args.iter().map(|a| quote(a)).collect();
    format!(
        "{{\n  \"{servers}\": {{\n    {}: {{\n{kind}      \"command\": {},\n      \"args\": [{}]\n    }}\n  }}\n}}",
        quote(name),
        quote(program),
        args.join(", ")
    )
}

/// Where the client reads the snippet from, as a sentence for stderr.
fn where_it_goes(client: Client, name: &str) -> String {
    match client {
        Client::ClaudeDesktop => {
            "merge it into claude_desktop_config.json (Settings > Developer > \
            Edit Config): ~/Library/Application Support/Claude/ on macOS, %APPDATA%\\Claude\\ on \
            Windows; then restart Claude Desktop"
                .into()
        }
        Client::ClaudeCode => "merge it into .mcp.json at the project's root (Claude Code reads \
            it when started in the project)"
            .into(),
        Client::Cursor => "merge it into .cursor/mcp.json in the project, or ~/.cursor/mcp.json \
            for every project"
            .into(),
        Client::Vscode => "merge it into .vscode/mcp.json in the workspace, or the user's \
            mcp.json (MCP: Open User Configuration)"
            .into(),
        Client::Inspector => format!(
            "save it as mcp.json and run: npx @modelcontextprotocol/inspector --config mcp.json \
             --server {name}"
        ),
    }
}

//! `calltape config CLIENT`: each client's snippet has the shape that client reads (its top-level
//! key, the fields it takes for a stdio server), it starts calltape the way this one was started,
//! and the command it holds runs: the official Python SDK starts it as a client would and the
//! recording gets the calls.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::record::client;
use crate::support::{calltape, everything};

const BIN: &str = env!("CARGO_BIN_EXE_calltape");

/// The binary under test as `calltape config` names itself: its canonical path.
fn bin() -> String {
    std::fs::canonicalize(BIN).unwrap().display().to_string()
}

/// Runs `calltape config ARGS…` in `cwd` with no launcher in the environment and `env` on top.
fn config(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = calltape();
    cmd.arg("config")
        .args(args)
        .current_dir(cwd)
        .env_remove("CALLTAPE_LAUNCHER")
        .env_remove("UV")
        .env("PATH", "/usr/bin:/bin");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run calltape config")
}

/// The snippet printed on stdout, checked against `client`'s documented shape: the one top-level
/// key it reads servers from, one server, and only the fields that client takes for a stdio server
/// (VS Code requires `type`). Returns the server's name, command and arguments.
fn parse(client: &str, out: &Output) -> (String, String, Vec<String>) {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{client}: {stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}:\n{stdout}"));
    // (top-level key, the fields a stdio server may have, the `type` it must have if any)
    let (key, fields, kind): (&str, &[&str], Option<&str>) = match client {
        "vscode" => (
            "servers",
            &["type", "command", "args", "env", "envFile"],
            Some("stdio"),
        ),
        "claude-code" => ("mcpServers", &["type", "command", "args", "env"], None),
        "claude-desktop" | "cursor" | "inspector" => {
            ("mcpServers", &["command", "args", "env"], None)
        }
        other => panic!("no shape for {other}"),
    };
    let top = doc.as_object().expect("an object");
    assert_eq!(top.keys().collect::<Vec<_>>(), [key], "{client}: {stdout}");
    let servers = top[key].as_object().expect("servers are an object");
    assert_eq!(servers.len(), 1, "{client}: {stdout}");
    let (name, server) = servers.iter().next().unwrap();
    let server = server.as_object().expect("a server is an object");
    for field in server.keys() {
        assert!(
            fields.contains(&field.as_str()),
            "{client}: {field} in {stdout}"
        );
    }
    if let Some(kind) = kind {
        assert_eq!(server["type"], kind, "{client}: {stdout}");
    }
    if let Some(t) = server.get("type") {
        assert_eq!(t, "stdio", "{client}: {stdout}");
    }
    let command = server["command"]
        .as_str()
        .expect("command is a string")
        .to_owned();
    let args = server["args"]
        .as_array()
        .expect("args is an array")
        .iter()
        .map(|a| a.as_str().expect("each argument is a string").to_owned())
        .collect();
    (name.clone(), command, args)
}

#[test]
fn each_clients_snippet_has_its_shape_and_names_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("weather server");
    std::fs::create_dir(&cwd).unwrap();
    let recording = cwd.join("calls.jsonl").display().to_string();
    // (client, what stderr says about the file it reads)
    let rows = [
        ("claude-desktop", "claude_desktop_config.json"),
        ("claude-code", ".mcp.json at the project's root"),
        ("cursor", ".cursor/mcp.json"),
        ("vscode", ".vscode/mcp.json"),
        (
            "inspector",
            "npx @modelcontextprotocol/inspector --config mcp.json --server weather-server",
        ),
    ];
    for (client, file) in rows {
        let out = config(&cwd, &[client, "--", "node", "dist/index.js"], &[]);
        let (name, command, args) = parse(client, &out);
        assert_eq!(name, "weather-server", "{client}");
        assert_eq!(command, bin(), "{client}");
        assert_eq!(
            args,
            ["record", "-o", &recording, "--", "node", "dist/index.js"],
            "{client}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(file), "{client}: {stderr}");
    }
}

#[test]
fn the_snippet_wraps_the_server_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let output = cwd.join("rec/a.jsonl").display().to_string();
    let url = "http://127.0.0.1:3000/mcp";
    // (flags before the server, the server, the arguments after the launcher)
    let rows: &[(&[&str], &[&str], &[&str])] = &[
        (
            &["-o", "rec/a.jsonl"],
            &["--", "srv"],
            &["record", "-o", &output, "--", "srv"],
        ),
        (
            &["--bridge"],
            &["--", "srv", "-v"],
            &["bridge", "--", "srv", "-v"],
        ),
        (
            &["--shared", "notes"],
            &["--", "srv"],
            &["shared", "--key", "notes", "--", "srv"],
        ),
        (&["--bridge"], &["--url", url], &["bridge", "--url", url]),
        (
            &["--shared", "notes"],
            &["--url", url],
            &["shared", "--key", "notes", "--url", url],
        ),
        (
            &["-o", "rec/a.jsonl"],
            &["--url", url],
            &["record", "-o", &output, "--url", url],
        ),
    ];
    for (flags, server, want) in rows {
        let args = [&["cursor", "--name", "n"], *flags, *server].concat();
        let (name, _, got) = parse("cursor", &config(cwd, &args, &[]));
        assert_eq!(name, "n");
        assert_eq!(got, *want, "{args:?}");
    }
    // What does not make one snippet is a usage error.
    let wrong: &[&[&str]] = &[
        &["cursor"],
        &["cursor", "--url", url, "--", "srv"],
        &["cursor", "--bridge", "--shared", "k", "--", "srv"],
        &["cursor", "--bridge", "-o", "x.jsonl", "--", "srv"],
        &["zed", "--", "srv"],
    ];
    for args in wrong {
        let out = config(cwd, args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn the_snippet_starts_calltape_as_this_one_was_started() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let bin = bin();
    let bin_dir = Path::new(&bin).parent().unwrap().display().to_string();
    let with_bin = format!("{bin_dir}:/usr/bin:/bin");
    // (the environment, --launcher if any, the command, the arguments before calltape's own)
    type Row<'a> = (
        &'a [(&'a str, &'a str)],
        Option<&'a str>,
        &'a str,
        &'a [&'a str],
    );
    let rows: &[Row<'_>] = &[
        (&[], None, &bin, &[]),
        (&[("PATH", &with_bin)], None, "calltape", &[]),
        (
            &[("CALLTAPE_LAUNCHER", "npx")],
            None,
            "npx",
            &["-y", "calltape"],
        ),
        (&[("UV", "/usr/local/bin/uv")], None, "uvx", &["calltape"]),
        (
            &[("CALLTAPE_LAUNCHER", "npx"), ("UV", "/usr/local/bin/uv")],
            None,
            "npx",
            &["-y", "calltape"],
        ),
        (
            &[("UV", "/usr/local/bin/uv")],
            Some("npx"),
            "npx",
            &["-y", "calltape"],
        ),
        (&[("CALLTAPE_LAUNCHER", "npx")], Some("calltape"), &bin, &[]),
    ];
    for (env, launcher, want_command, want_before) in rows {
        let mut args = vec!["claude-desktop"];
        if let Some(l) = launcher {
            args.extend(["--launcher", l]);
        }
        args.extend(["--", "srv"]);
        let (_, command, got) = parse("claude-desktop", &config(cwd, &args, env));
        assert_eq!(command, *want_command, "{env:?} {launcher:?}");
        assert_eq!(
            &got[..want_before.len()],
            *want_before,
            "{env:?} {launcher:?}"
        );
        assert_eq!(got[want_before.len()], "record", "{env:?} {launcher:?}");
    }
}

#[test]
fn the_snippets_command_runs_under_a_real_client_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let server = everything().display().to_string();
    let out = config(dir.path(), &["cursor", "--", &server], &[]);
    let (_, command, args) = parse("cursor", &out);
    // The official Python SDK starts the snippet's command as an MCP client does.
    let mut argv = vec![command.as_str()];
    argv.extend(args.iter().map(String::as_str));
    let result = client("everything", &argv);
    assert!(result.is_object(), "{result}");
    let recorded = std::fs::read_to_string(dir.path().join("calls.jsonl")).unwrap();
    // The client's four calls, and the tool list it fetched before them, recorded at the end.
    assert_eq!(recorded.lines().count(), 5, "{recorded}");
    assert!(
        recorded
            .lines()
            .last()
            .unwrap()
            .contains(r#""method":"tools/list""#),
        "{recorded}"
    );
}

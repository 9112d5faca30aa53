//! The Vitest helper (`integrations/vitest`) installed with npm and run by Vitest against the
//! official OpenAI npm SDK, with the local fake API as the upstream: a cassette per test, replay
//! offline, a changed request failing exactly its test, a live block, byte-identical re-records,
//! and test files in parallel threads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::http::FakeApi;
use crate::support::{QuickStart, peers, repo_root, run_runner, sh};

const PACKAGE: &str = r#"{
  "name": "chat-app",
  "private": true,
  "type": "module",
  "calltape": { "cassetteDir": "tests/cassettes" }
}
"#;

const CONFIG: &str = r#"import { defineConfig } from "vitest/config";

export default defineConfig({
  test: { globalSetup: ["calltape-vitest/setup"], pool: "threads" },
});
"#;

const ASK: &str = r#"import OpenAI from "openai";

export async function ask(text, options = {}) {
  const client = new OpenAI({ apiKey: "sk-proj-vitestTestKey0123456789abcdef", maxRetries: 0, ...options });
  const r = await client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: text }],
  });
  return r.choices[0].message.content;
}
"#;

const CHAT: &str = r#"import { describe, expect, it } from "vitest";
import { useCalltape } from "calltape-vitest";
import { ask } from "./ask.js";

describe("chat", () => {
  const calltape = useCalltape();

  it("says hello", async () => {
    expect(await ask("hello")).toBe("echo: hello");
  });

  it("swallows errors", async () => {
    // The application swallows a failed call, as many do: the helper must still fail this test.
    try {
      await ask(process.env.QUESTION ?? "what is calltape?");
    } catch {}
  });

  it("takes its base URL from calltape", async () => {
    const baseURL = calltape.baseURL("openai");
    expect(baseURL).toContain("/_cassette/chat.test%2Fchat%2Ftakes_its_base_URL_from_calltape/openai/v1");
    expect(await ask("explicit", { baseURL })).toBe("echo: explicit");
  });

  describe("live", () => {
    const live = useCalltape({ live: true });
    it("goes live", async () => {
      expect(live.live).toBe(true);
      expect(process.env.OPENAI_BASE_URL).not.toContain("_cassette");
      expect(await ask("live")).toBe("echo: live");
    });
  });
});
"#;

const OTHER: &str = r#"import { describe, expect, it } from "vitest";
import { useCalltape } from "calltape-vitest";
import { ask } from "./ask.js";

describe("other file", () => {
  useCalltape();
  it("runs in its own thread", async () => {
    expect(await ask("parallel")).toBe("echo: parallel");
  });
});
"#;

/// A project with the helper installed by npm from the repository, as its README says, and the
/// peers' vitest and openai linked in.
fn write_project(dir: &Path) -> PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(project.join("package.json"), PACKAGE).unwrap();
    std::fs::write(project.join("vitest.config.js"), CONFIG).unwrap();
    std::fs::write(project.join("tests/ask.js"), ASK).unwrap();
    std::fs::write(project.join("tests/chat.test.js"), CHAT).unwrap();
    std::fs::write(project.join("tests/other.test.js"), OTHER).unwrap();
    install(&project, &["--no-save"]);
    project
}

/// Installs the helper into `project` with npm from the repository (offline, with `how`), with the
/// `calltape` launcher package it depends on (copies of both, so npm resolves the one in the
/// other; offline, the launcher's platform packages are skipped: the tests set CALLTAPE_BIN), and
/// links the peers' vitest and openai beside it, with vitest's command where `npx vitest` finds
/// it: what `npm install -D vitest openai calltape-vitest` would add, offline.
fn install(project: &Path, how: &[&str]) {
    let out = Command::new("npm")
        .arg("install")
        .args(how)
        .args(["--offline", "--legacy-peer-deps", "--install-links"])
        .args(["--no-audit", "--no-fund", "--loglevel=error"])
        .arg(repo_root().join("packaging/npm/calltape"))
        .arg(repo_root().join("integrations/vitest"))
        .current_dir(project)
        .output()
        .expect("run npm");
    assert!(
        out.status.success(),
        "npm install failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in ["vitest", "openai"] {
        std::os::unix::fs::symlink(
            peers().join("node/node_modules").join(name),
            project.join("node_modules").join(name),
        )
        .unwrap();
    }
    std::fs::create_dir_all(project.join("node_modules/.bin")).unwrap();
    std::os::unix::fs::symlink(
        "../vitest/vitest.mjs",
        project.join("node_modules/.bin/vitest"),
    )
    .unwrap();
}

/// Runs `vitest run` in `project` with the openai upstream at `upstream` and the extra environment;
/// returns whether it passed, each test's full name with its status, and the output.
fn vitest(
    project: &Path,
    upstream: &str,
    env: &[(&str, &str)],
    args: &[&str],
) -> (bool, Vec<String>, String) {
    let results = project.join("results.json");
    let _ = std::fs::remove_file(&results);
    let mut cmd = Command::new("node");
    cmd.arg(project.join("node_modules/vitest/vitest.mjs"))
        .args([
            "run",
            "--reporter=default",
            "--reporter=json",
            "--outputFile.json",
        ])
        .arg(&results)
        .args(args);
    let (out, text) = run_runner(cmd, project, upstream, env);
    let json: Value = std::fs::read(&results)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("vitest wrote no results:\n{text}"));
    let mut tests: Vec<String> = json["testResults"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["assertionResults"].as_array().unwrap().iter())
        .filter(|t| t["status"] != "skipped" && t["status"] != "pending")
        .map(|t| {
            format!(
                "{} {}",
                t["status"].as_str().unwrap(),
                t["fullName"].as_str().unwrap()
            )
        })
        .collect();
    tests.sort_unstable();
    (out.status.success(), tests, text)
}

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut all = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                all.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    all
}

const NOT_LIVE: &[&str] = &["-t", "^(?!.*live).*$"];

#[test]
fn vitest_records_a_cassette_per_test_replays_offline_and_fails_the_test_that_missed() {
    let dir = tempfile::tempdir().unwrap();
    let project = write_project(dir.path());
    let cassettes = project.join("tests/cassettes");
    let fake = FakeApi::start(dir.path());

    let (ok, tests, text) = vitest(&project, &fake.url(), &[("CALLTAPE_MODE", "record")], &[]);
    assert!(ok, "{text}");
    assert_eq!(tests.len(), 5, "{text}");
    let recorded = files(&cassettes);
    let names: Vec<&str> = recorded.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "chat.test/chat/says_hello.jsonl",
            "chat.test/chat/swallows_errors.jsonl",
            "chat.test/chat/takes_its_base_URL_from_calltape.jsonl",
            "other.test/other_file/runs_in_its_own_thread.jsonl",
        ],
        "{text}"
    );
    assert!(
        !recorded
            .values()
            .any(|b| String::from_utf8_lossy(b).contains("vitestTestKey"))
    );

    // Re-recording gives the same bytes.
    let (ok, _, text) = vitest(&project, &fake.url(), &[("UPDATE_RECORDINGS", "true")], &[]);
    assert!(ok, "{text}");
    assert_eq!(
        files(&cassettes),
        recorded,
        "re-recording changed a cassette"
    );

    // The live block reaches the upstream straight, in strict replay.
    let before = fake.connections();
    let (ok, tests, text) = vitest(
        &project,
        &fake.url(),
        &[("LLM_TEST_MODE", "replay")],
        &["-t", "live"],
    );
    assert!(ok, "{text}");
    assert_eq!(tests, ["passed chat live goes live"], "{text}");
    assert_eq!(fake.connections(), before + 1, "{text}");

    // Replay with the upstream gone; CI alone chooses replay mode.
    drop(fake);
    let dead = "http://127.0.0.1:9";
    let (ok, tests, text) = vitest(&project, dead, &[("CI", "true")], NOT_LIVE);
    assert!(ok, "{text}");
    assert_eq!(tests.len(), 4, "{text}");
    assert_eq!(files(&cassettes), recorded, "replay changed a cassette");

    // A changed request fails exactly the test that sent it, with the diagnosis, although the test
    // swallowed the 404.
    let env = [("CI", "true"), ("QUESTION", "what is calltape, really?")];
    let (ok, tests, text) = vitest(&project, dead, &env, NOT_LIVE);
    assert!(!ok, "{text}");
    assert_eq!(
        tests,
        [
            "failed chat swallows errors",
            "passed chat says hello",
            "passed chat takes its base URL from calltape",
            "passed other file runs in its own thread",
        ],
        "{text}"
    );
    assert!(
        text.contains("calltape: 1 request(s) of this test failed against cassette"),
        "{text}"
    );
    assert!(
        text.contains(
            "chat.test/chat/swallows_errors.jsonl: POST openai /v1/chat/completions: no recording"
        ),
        "{text}"
    );
    assert!(
        text.contains("closest recording: POST openai /v1/chat/completions"),
        "{text}"
    );
    assert!(
        text.contains("+      \"content\": \"what is calltape, really?\""),
        "{text}"
    );
    assert_eq!(files(&cassettes), recorded);

    // A renamed test has no cassette yet: it fails, alone.
    let renamed = CHAT.replace("it(\"says hello\"", "it(\"says hello again\"");
    std::fs::write(project.join("tests/chat.test.js"), renamed).unwrap();
    let (ok, tests, text) = vitest(&project, dead, &[("CI", "true")], NOT_LIVE);
    assert!(!ok, "{text}");
    assert_eq!(
        tests,
        [
            "failed chat says hello again",
            "passed chat swallows errors",
            "passed chat takes its base URL from calltape",
            "passed other file runs in its own thread",
        ],
        "{text}"
    );
    // The test says that its cassette is missing, and the one command that records it.
    let record =
        "CALLTAPE_MODE=record npx vitest run tests/chat.test.js -t '^chat says hello again$'";
    assert!(
        text.contains(&format!(
            "calltape: no cassette at tests/cassettes/chat.test/chat/says_hello_again.jsonl; record it with: {record}\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "chat.test/chat/says_hello_again.jsonl: POST openai /v1/chat/completions found nothing to replay"
        ),
        "{text}"
    );
    assert_eq!(files(&cassettes), recorded, "a miss wrote a cassette");

    // That command records exactly that cassette, and the run in CI passes again.
    let fake = FakeApi::start(dir.path());
    let (out, text) = sh(&project, &fake.url(), record, &[]);
    assert!(out.status.success(), "{text}");
    let mut now = files(&cassettes);
    assert!(
        now.remove("chat.test/chat/says_hello_again.jsonl")
            .is_some(),
        "{text}"
    );
    assert_eq!(
        now, recorded,
        "recording one test changed another's cassette"
    );
    drop(fake);
    let (ok, _, text) = vitest(&project, dead, &[("CI", "true")], NOT_LIVE);
    assert!(ok, "{text}");
}

/// How a user's project may stand around the README's quick start: (what it is, whether its
/// package.json says `"type": "module"`, the config file it writes instead of the README's).
type Shape = (&'static str, bool, Option<(&'static str, &'static str)>);

const SHAPES: &[Shape] = &[
    ("CommonJS, as npm install makes it", false, None),
    ("an ES module package", true, None),
    (
        "CommonJS, vitest.config.js",
        false,
        Some((
            "vitest.config.js",
            "module.exports = { test: { globalSetup: [\"calltape-vitest/setup\"] } };\n",
        )),
    ),
    (
        "CommonJS, vitest.config.cjs",
        false,
        Some((
            "vitest.config.cjs",
            "const config = { test: { globalSetup: [\"calltape-vitest/setup\"] } };\nmodule.exports = config;\n",
        )),
    ),
    (
        "CommonJS, vitest.config.ts",
        false,
        Some((
            "vitest.config.ts",
            "import { defineConfig } from \"vitest/config\";\n\nexport default defineConfig({ test: { globalSetup: [\"calltape-vitest/setup\"] } });\n",
        )),
    ),
    (
        "an ES module package, vitest.config.js",
        true,
        Some((
            "vitest.config.js",
            "import { defineConfig } from \"vitest/config\";\n\nexport default defineConfig({ test: { globalSetup: [\"calltape-vitest/setup\"] } });\n",
        )),
    ),
];

#[test]
fn vitest_quick_start_replays_in_ci_with_no_api_key_in_commonjs_and_esm_projects() {
    let dir = tempfile::tempdir().unwrap();
    let quick = QuickStart::read(&repo_root().join("integrations/vitest/README.md"));
    // The test installs what this installs, offline.
    assert_eq!(quick.install.len(), 1, "{:?}", quick.install);
    let dead = "http://127.0.0.1:9";
    for (n, (shape, esm, config)) in SHAPES.iter().enumerate() {
        let project = dir.path().join(format!("quick{n}"));
        std::fs::create_dir(&project).unwrap();
        // `npm install -D … calltape-vitest`: it writes a package.json of its own.
        install(&project, &["-D"]);
        let package = project.join("package.json");
        let mut manifest: Value =
            serde_json::from_slice(&std::fs::read(&package).unwrap()).unwrap();
        assert_eq!(manifest.get("type"), None, "{manifest}");
        if *esm {
            manifest["type"] = "module".into();
            std::fs::write(&package, manifest.to_string()).unwrap();
        }
        let (out, text) = sh(&project, dead, &quick.files, &[]);
        assert!(out.status.success(), "{shape}: {text}");
        if let Some((name, text)) = config {
            for entry in std::fs::read_dir(&project).unwrap() {
                let path = entry.unwrap().path();
                let file = path.file_name().unwrap().to_string_lossy().into_owned();
                if file.starts_with("vitest.config.") {
                    std::fs::remove_file(&path).unwrap();
                }
            }
            std::fs::write(project.join(name), text).unwrap();
        }

        // Recorded where a key is at hand, as on a developer's machine.
        let fake = FakeApi::start(&project);
        let key = [("OPENAI_API_KEY", "sk-proj-quickStartKey0123456789abcdef")];
        let (out, text) = sh(&project, &fake.url(), &quick.record, &key);
        assert!(out.status.success(), "{shape}: {}: {text}", quick.record);
        let cassettes = project.join("tests/cassettes");
        let recorded = files(&cassettes);
        assert_eq!(
            recorded.keys().collect::<Vec<_>>(),
            ["chat.test/chat/says_hi.jsonl"],
            "{shape}: {text}"
        );
        drop(fake);

        // In CI: no key in the environment, and no upstream.
        let (out, text) = sh(&project, dead, &quick.replay, &[]);
        assert!(out.status.success(), "{shape}: {}: {text}", quick.replay);
        assert!(text.contains("1 passed"), "{shape}: {text}");
        assert_eq!(
            text.matches("calltape: OPENAI_API_KEY, ANTHROPIC_API_KEY unset, so a placeholder key stands in for this replay run").count(),
            1,
            "{shape}: {text}"
        );
        if config.is_none() {
            // The README's config is read the same way in both kinds of package, with no warning.
            assert!(!text.contains("ESM syntax"), "{shape}: {text}");
        }
        assert_eq!(
            files(&cassettes),
            recorded,
            "{shape}: replay changed a cassette"
        );
    }
}

/// A test whose call goes to the `echo` upstream when the settings define it, else to `openai`.
const WHERE: &str = r#"import { describe, expect, it } from "vitest";
import { useCalltape } from "calltape-vitest";
import { ask } from "./ask.js";

describe("where", () => {
  useCalltape();
  it("goes where the settings say", async () => {
    const baseURL = process.env.ECHO_BASE_URL;
    expect(await ask("where", baseURL ? { baseURL } : {})).toBe("echo: where");
  });
});
"#;

/// A `calltape.toml` with the cassette folder `cassettes` and an `echo` upstream at `url`, beside
/// rules only a replay reads, which the helper skips.
fn calltape_toml(cassettes: &str, url: &str) -> String {
    format!(
        "cassette_dir = \"{cassettes}\"   # relative to this file's folder\n\n\
         [replay]\nmask = [\"uuid\", 'req-[0-9]+']\nignore = [\n  \"**.requestId\",  # [not a table]\n]\n\n\
         [[replay.call]]\nname = \"get_file_info\"\nmask = [\"timestamp\"]\n\n\
         [upstreams]\necho = {{ url = \"{url}\", env = \"ECHO_BASE_URL\", path = \"v1\" }}\n"
    )
}

/// The project's package.json, with `"calltape": field` when given.
fn package_json(field: Option<String>) -> String {
    let field = field.map_or(String::new(), |f| format!(",\n  \"calltape\": {f}"));
    format!("{{\n  \"name\": \"app\",\n  \"private\": true,\n  \"type\": \"module\"{field}\n}}\n")
}

/// (what the row is, the files written around the project and their text, the package.json's
/// "calltape" field, the cassette folder, the upstream reached)
type SettingsRow<'a> = (
    &'a str,
    Vec<(&'a str, String)>,
    Option<String>,
    &'a str,
    &'a str,
);

#[test]
fn vitest_takes_its_settings_from_calltape_toml_or_package_json_as_calltape_replay_finds_them() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().join("top");
    let app = top.join("app");
    std::fs::create_dir_all(app.join("tests")).unwrap();
    std::fs::write(app.join("package.json"), package_json(None)).unwrap();
    std::fs::write(app.join("vitest.config.js"), CONFIG).unwrap();
    std::fs::write(app.join("tests/ask.js"), ASK).unwrap();
    std::fs::write(app.join("tests/where.test.js"), WHERE).unwrap();
    install(&app, &["--no-save"]);
    let fake = FakeApi::start(dir.path());
    let url = fake.url();
    let field = format!(
        r#"{{ "cassetteDir": "near", "upstreams": {{ "echo": {{ "url": "{url}", "env": "ECHO_BASE_URL", "path": "v1" }} }} }}"#
    );
    // Each row: the files around the project `top/app` (a `.git` folder marks a repository's
    // root), the package.json's "calltape" field, the cassette the test records (from `top`), and
    // the upstream it reached.
    let rows: [SettingsRow<'_>; 4] = [
        (
            "a calltape.toml in the repository's root, above the project",
            vec![
                (".git/HEAD", String::new()),
                ("calltape.toml", calltape_toml("shared", &url)),
            ],
            None,
            "shared",
            "echo",
        ),
        (
            "a calltape.toml beside a package.json with a \"calltape\" field: calltape.toml",
            vec![("app/calltape.toml", calltape_toml("beside", &url))],
            Some(field.clone()),
            "app/beside",
            "echo",
        ),
        (
            "a nearer package.json field before a calltape.toml above",
            vec![
                (".git/HEAD", String::new()),
                ("calltape.toml", calltape_toml("shared", &url)),
            ],
            Some(field.clone()),
            "app/near",
            "echo",
        ),
        (
            "a calltape.toml above the repository's root is not looked for",
            vec![
                ("app/.git/HEAD", String::new()),
                ("calltape.toml", calltape_toml("shared", &url)),
            ],
            None,
            "app/tests/cassettes",
            "openai",
        ),
    ];
    let around = [".git", "calltape.toml", "app/.git", "app/calltape.toml"];
    for (what, files_around, field, cassettes, upstream) in rows {
        for name in
            around
                .iter()
                .chain(&["shared", "app/beside", "app/near", "app/tests/cassettes"])
        {
            let path = top.join(name);
            let _ = std::fs::remove_dir_all(&path);
            let _ = std::fs::remove_file(&path);
        }
        for (name, text) in &files_around {
            let path = top.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::write(app.join("package.json"), package_json(field)).unwrap();

        let (ok, tests, text) = vitest(&app, &url, &[("CALLTAPE_MODE", "record")], &[]);
        assert!(ok, "{what}: {text}");
        assert_eq!(
            tests,
            ["passed where goes where the settings say"],
            "{what}: {text}"
        );
        let cassette = top
            .join(cassettes)
            .join("where.test/where/goes_where_the_settings_say.jsonl");
        let recorded = std::fs::read_to_string(&cassette).unwrap_or_else(|e| {
            panic!("{what}: no cassette at {}: {e}\n{text}", cassette.display())
        });
        assert!(
            recorded.contains(&format!(r#""upstream":"{upstream}""#)),
            "{what}: {recorded}"
        );
    }

    // What the helper cannot use is an error that names the file, the line and what to write.
    for (file, problem) in [
        (
            "[upstreams]\necho = { url = \"http://127.0.0.1:9\", token = \"x\" }\n",
            ":2: upstreams.echo: unknown key token; an upstream takes url, env, path, key",
        ),
        (
            "cassette_dir = [\"tests\"]\n",
            ":1: cassette_dir: is not a one-line string; write a folder, e.g. cassette_dir = \"tests/cassettes\"",
        ),
        (
            "[upstream]\n",
            ":1: [upstream]: unknown table; the file takes cassette_dir, [upstreams] and [replay]",
        ),
    ] {
        std::fs::write(app.join("calltape.toml"), file).unwrap();
        let (ok, _, text) = vitest(&app, &url, &[], &[]);
        assert!(!ok, "{text}");
        let expected = format!("calltape: {}{problem}", app.join("calltape.toml").display());
        assert!(text.contains(&expected), "{expected}\n{text}");
    }
}

/// A Vitest test file of two tests of `useCalltapeMcp(OPTIONS)` that call `get-sum`, the client
/// connected with `CONNECT` (after `IMPORT`).
const MCP_TEST: &str = r#"import { describe, expect, it } from "vitest";
import { useCalltapeMcp } from "calltape-vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
IMPORT

async function getSum(server, a, b) {
  const client = new Client({ name: "vitest-client", version: "0.0.0" });
  await client.connect(CONNECT);
  try {
    const result = await client.callTool({ name: "get-sum", arguments: { a, b } });
    return result.content[0].text;
  } catch (error) {
    // The client swallows a failed call, as many do: the helper must still fail this test.
    return String(error);
  } finally {
    await client.close();
  }
}

describe("tools", () => {
  const server = useCalltapeMcp({ OPTIONSserver: process.env.EVERYTHING ? [process.env.EVERYTHING] : undefined });

  it("sums", async () => {
    expect(await getSum(server, 2, Number(process.env.B ?? 40))).toBeTruthy();
  });

  it("sums again", async () => {
    expect(await getSum(server, 1, 1)).toBe("The sum of 1 and 1 is 2.");
  });
});
"#;

/// [`MCP_TEST`] on stdio.
fn mcp_stdio_test() -> String {
    MCP_TEST
        .replace(
            "IMPORT",
            r#"import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";"#,
        )
        .replace(
            "CONNECT",
            "new StdioClientTransport({ command: server.command, args: server.args })",
        )
        .replace("OPTIONS", "")
}

/// [`MCP_TEST`] over Streamable HTTP; the URL names the test's recording.
fn mcp_http_test() -> String {
    MCP_TEST
        .replace(
            "IMPORT",
            r#"import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";"#,
        )
        .replace(
            "CONNECT",
            r#"new StreamableHTTPClientTransport(new URL(server.url))"#,
        )
        .replace("OPTIONS", r#"transport: "http", "#)
        .replace(
            "    expect(await getSum(server, 2,",
            "    expect(server.url).toContain(\"/_cassette/tools.test%2Ftools%2Fsums.mcp/mcp\");\n    expect(await getSum(server, 2,",
        )
}

#[test]
fn use_calltape_mcp_records_each_test_in_auto_mode_then_answers_offline_and_a_miss_fails_its_test()
{
    use_calltape_mcp_records_then_answers_offline_and_a_miss_fails(&mcp_stdio_test());
}

/// A Vitest project whose `tests/tools.test.js` is `test`, two tests of `useCalltapeMcp()` ("tools
/// sums", "tools sums again"): run first with the real server in auto mode, it records each test's
/// own recording; then in CI with no server the recordings answer; then a changed call fails
/// exactly its test, though the test swallowed the error, showing the closest recorded call.
fn use_calltape_mcp_records_then_answers_offline_and_a_miss_fails(test: &str) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(project.join("package.json"), PACKAGE).unwrap();
    std::fs::write(project.join("tests/tools.test.js"), test).unwrap();
    install(&project, &["--no-save"]);
    std::os::unix::fs::symlink(
        peers().join("node/node_modules/@modelcontextprotocol"),
        project.join("node_modules/@modelcontextprotocol"),
    )
    .unwrap();
    let everything = crate::support::everything().display().to_string();
    let unused = "http://127.0.0.1:9";

    let (passed, tests, text) = vitest(&project, unused, &[("EVERYTHING", &everything)], &[]);
    assert!(passed, "{text}");
    assert_eq!(tests, ["passed tools sums", "passed tools sums again"]);
    let recording = project.join("tests/cassettes/tools.test/tools/sums.mcp.jsonl");
    let recorded = std::fs::read_to_string(&recording).unwrap_or_default();
    assert!(
        recorded.contains(r#""input":{"a":2,"b":40}"#),
        "{recorded}\n{text}"
    );

    let (passed, _, text) = vitest(&project, unused, &[("CI", "true")], &[]);
    assert!(passed, "{text}");

    let (passed, tests, text) = vitest(&project, unused, &[("CI", "true"), ("B", "41")], &[]);
    assert!(!passed, "{text}");
    assert_eq!(
        tests,
        ["failed tools sums", "passed tools sums again"],
        "{text}"
    );
    crate::support::assert_shows_the_closest_get_sum(&text);
}

#[test]
fn use_calltape_mcp_over_http_records_in_auto_mode_then_answers_offline_and_a_miss_fails_its_test()
{
    use_calltape_mcp_records_then_answers_offline_and_a_miss_fails(&mcp_http_test());
}

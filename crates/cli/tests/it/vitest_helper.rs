//! The Vitest helper (`integrations/vitest`) installed with npm and run by Vitest against the
//! official OpenAI npm SDK, with the local fake API as the upstream: a cassette per test, replay
//! offline, a changed request failing exactly its test, a live block, byte-identical re-records,
//! and test files in parallel threads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::http::FakeApi;
use crate::support::{peers, repo_root};

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
    let out = Command::new("npm")
        .args([
            "install",
            "--install-links",
            "--no-save",
            "--offline",
            "--legacy-peer-deps",
        ])
        .args(["--no-audit", "--no-fund", "--loglevel=error"])
        .arg(repo_root().join("integrations/vitest"))
        .current_dir(&project)
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
    project
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
        .args(args)
        .current_dir(project)
        .env("CALLTAPE_BIN", env!("CARGO_BIN_EXE_calltape"))
        .env("CALLTAPE_UPSTREAM_OPENAI", upstream)
        .env("CALLTAPE_UPSTREAM_ANTHROPIC", upstream)
        .env("NO_COLOR", "1")
        .env_remove("CALLTAPE_LOG");
    for var in [
        "CI",
        "CALLTAPE_MODE",
        "LLM_TEST_MODE",
        "UPDATE_RECORDINGS",
        "RECORD_LLM",
        "OPENAI_BASE_URL",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run vitest");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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
    assert!(
        text.contains(
            "chat.test/chat/says_hello_again.jsonl: POST openai /v1/chat/completions: no recording"
        ),
        "{text}"
    );
    assert_eq!(files(&cassettes), recorded, "a miss wrote a cassette");
}

//! The pytest plugin (`integrations/pytest`) installed with pip and run by pytest against the
//! official OpenAI and Anthropic Python SDKs, with the local fake API as the upstream: a cassette per
//! test, replay offline, a changed request failing exactly its test, a live test, byte-identical
//! re-records, and parallel workers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::http::FakeApi;
use crate::support::{self, QuickStart, python, repo_root};

const PYPROJECT: &str = r#"[project]
name = "chat-app"
version = "0"

[tool.pytest.ini_options]
addopts = "-p no:cacheprovider"

[tool.calltape]
cassette_dir = "tests/cassettes"

# Read by calltape replay; the plugin reads the same table around it.
[tool.calltape.replay]
mask = ["uuid"]

[[tool.calltape.replay.call]]
name = "get_file_info"
mask = ["timestamp"]
"#;

const TESTS: &str = r#"import os

import anthropic
import openai
import pytest

pytestmark = pytest.mark.calltape


def ask(text):
    client = openai.OpenAI(api_key="sk-proj-pluginTestKey0123456789abcdef", max_retries=0)
    r = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": text}])
    return r.choices[0].message.content


def test_hello():
    assert ask("hello") == "echo: hello"


@pytest.mark.parametrize("topic", ["cats", "dogs/wolves"])
def test_topic(topic):
    assert ask(topic) == "echo: " + topic


def test_swallowed():
    # The application swallows a failed call, as many do: the plugin must still fail this test.
    try:
        ask(os.environ.get("QUESTION", "what is calltape?"))
    except openai.APIStatusError:
        pass


def test_anthropic(calltape):
    client = anthropic.Anthropic(api_key="sk-ant-api03-pluginTestKey0123456789", max_retries=0)
    assert str(client.base_url).rstrip("/") == calltape.base_url("anthropic")
    text = ""
    for event in client.messages.create(
        model="claude-test-model", max_tokens=20, stream=True, messages=[{"role": "user", "content": "hi"}]
    ):
        if event.type == "content_block_delta":
            text += event.delta.text
    assert text == "You said hi"


@pytest.mark.calltape(live=True)
def test_live(calltape):
    assert calltape.live
    assert "_cassette" not in os.environ["OPENAI_BASE_URL"]
    assert ask("live") == "echo: live"
"#;

/// A test with no marker: the plugin leaves it alone unless `calltape_mode = "auto"`, and then it
/// reaches the `echo` upstream a conftest.py adds.
const PLAIN: &str = r#"import os

import openai


def test_unmarked():
    url = os.environ.get("ECHO_BASE_URL")
    if url is None:
        return
    client = openai.OpenAI(api_key="sk-proj-pluginTestKey0123456789abcdef", max_retries=0, base_url=url)
    r = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "plain"}])
    assert r.choices[0].message.content == "echo: plain"
"#;

const CONFTEST: &str = r#"def pytest_calltape_upstreams(config):
    return {"echo": {"url": "http://127.0.0.1:9", "env": "ECHO_BASE_URL", "path": "v1"}}
"#;

/// Installs the plugin with pip into a folder of its own (from a copy, so the build leaves nothing
/// in the repository) and returns that folder, for PYTHONPATH.
fn install_plugin(dir: &Path) -> PathBuf {
    let source = dir.join("src-copy");
    copy_dir(&repo_root().join("integrations/pytest"), &source);
    let site = dir.join("site");
    let out = Command::new(python())
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args([
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
        ])
        .arg(&site)
        .arg(&source)
        .output()
        .expect("run pip");
    assert!(
        out.status.success(),
        "pip install failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    site
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn write_project(dir: &Path) -> PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(project.join("pyproject.toml"), PYPROJECT).unwrap();
    std::fs::write(project.join("tests/test_chat.py"), TESTS).unwrap();
    // A conftest.py below the test folder: pytest loads it only when it collects that folder.
    std::fs::create_dir_all(project.join("tests/plain")).unwrap();
    std::fs::write(project.join("tests/plain/test_plain.py"), PLAIN).unwrap();
    std::fs::write(project.join("tests/plain/conftest.py"), CONFTEST).unwrap();
    project
}

/// Runs pytest in `project` with the plugin on PYTHONPATH, the upstream `openai` and `anthropic`
/// at `upstream`, and the given extra environment; returns its output (stdout then stderr).
fn pytest(
    site: &Path,
    project: &Path,
    upstream: &str,
    env: &[(&str, &str)],
    args: &[&str],
) -> (Output, String) {
    let mut cmd = Command::new(python());
    cmd.args(["-m", "pytest", "-v", "-rA"])
        .args(args)
        .env("PYTHONPATH", site);
    support::run_runner(cmd, project, upstream, env)
}

/// Runs one line of a README through `sh` in `project`, as [`support::sh`] does, with the Python
/// peers' `pytest` first on PATH and the plugin on PYTHONPATH.
fn sh(
    site: &Path,
    project: &Path,
    upstream: &str,
    line: &str,
    env: &[(&str, &str)],
) -> (Output, String) {
    let bin = python().parent().unwrap().display().to_string();
    let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    let site = site.display().to_string();
    let mut all = vec![("PATH", path.as_str()), ("PYTHONPATH", site.as_str())];
    all.extend_from_slice(env);
    support::sh(project, upstream, line, &all)
}

/// Every file under `dir`, by its path relative to `dir`, with its bytes.
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

/// The outcome pytest -rA printed for each test, e.g. `PASSED tests/test_chat.py::test_hello`.
fn outcomes(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("PASSED ") || l.starts_with("FAILED ") || l.starts_with("ERROR "))
        .map(|l| l.split(" - ").next().unwrap())
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn pytest_records_a_cassette_per_test_and_replays_offline() {
    let dir = tempfile::tempdir().unwrap();
    let site = install_plugin(dir.path());
    let project = write_project(dir.path());
    let cassettes = project.join("tests/cassettes");
    let fake = FakeApi::start(dir.path());
    // calltape replay reads the same [tool.calltape] table as the plugin.
    let out = Command::new(env!("CARGO_BIN_EXE_calltape"))
        .args(["replay", "--print-config"])
        .current_dir(&project)
        .output()
        .unwrap();
    let config = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{config}");
    for row in [
        "pyproject.toml:13  replay.mask   uuid (preset)",
        "pyproject.toml:15  replay.call   get_file_info: mask timestamp (preset)",
        "pyproject.toml:9   cassette_dir  tests/cassettes",
    ] {
        assert!(config.contains(row), "{config}");
    }

    let (out, text) = pytest(
        &site,
        &project,
        &fake.url(),
        &[],
        &["--calltape-mode", "record"],
    );
    assert!(out.status.success(), "{text}");
    let recorded = files(&cassettes);
    let names: Vec<&str> = recorded.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "test_chat/test_anthropic.jsonl",
            "test_chat/test_hello.jsonl",
            "test_chat/test_swallowed.jsonl",
            "test_chat/test_topic-cats.jsonl",
            "test_chat/test_topic-dogs_wolves.jsonl",
        ],
        "{text}"
    );
    let hello = String::from_utf8(recorded["test_chat/test_hello.jsonl"].clone()).unwrap();
    assert!(
        hello.contains("echo: hello") && !hello.contains("dogs"),
        "{hello}"
    );
    assert!(
        !recorded
            .values()
            .any(|b| String::from_utf8_lossy(b).contains("pluginTestKey")),
        "a key reached a cassette"
    );
    assert!(
        text.contains("calltape: record mode, 5 cassettes"),
        "{text}"
    );

    // Replay with the upstream gone; CI alone chooses replay mode.
    drop(fake);
    let dead = "http://127.0.0.1:9";
    let (out, text) = pytest(
        &site,
        &project,
        dead,
        &[("CI", "true")],
        &["-k", "not live"],
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("calltape: replay mode, 5 cassettes, 5 replayed, 0 with failures"),
        "{text}"
    );
    assert_eq!(files(&cassettes), recorded, "replay changed a cassette");

    // The same tests on two xdist workers, each with its own proxy.
    let (out, text) = pytest(
        &site,
        &project,
        dead,
        &[("CI", "true")],
        &["-k", "not live", "-p", "xdist", "-n", "2"],
    );
    assert!(out.status.success(), "{text}");
    assert_eq!(outcomes(&text).len(), 6, "{text}");

    // A changed request fails exactly the test that sent it, with the proxy's diagnosis, although
    // the test swallowed the 404.
    let env = [("CI", "true"), ("QUESTION", "what is calltape, really?")];
    let (out, text) = pytest(&site, &project, dead, &env, &["-k", "not live"]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(
        outcomes(&text),
        [
            "FAILED tests/test_chat.py::test_swallowed",
            "PASSED tests/plain/test_plain.py::test_unmarked",
            "PASSED tests/test_chat.py::test_anthropic",
            "PASSED tests/test_chat.py::test_hello",
            "PASSED tests/test_chat.py::test_topic[cats]",
            "PASSED tests/test_chat.py::test_topic[dogs/wolves]",
        ],
        "{text}"
    );
    assert!(
        text.contains("calltape: 1 request(s) of this test failed against cassette"),
        "{text}"
    );
    assert!(text.contains("miss in "), "{text}");
    assert!(
        text.contains(
            "test_chat/test_swallowed.jsonl: POST openai /v1/chat/completions: no recording"
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
    assert_eq!(
        files(&cassettes),
        recorded,
        "a failed replay changed a cassette"
    );

    // A renamed test has no cassette yet: it fails, alone.
    let renamed = TESTS.replace("def test_hello(", "def test_hello_again(");
    std::fs::write(project.join("tests/test_chat.py"), renamed).unwrap();
    let (out, text) = pytest(
        &site,
        &project,
        dead,
        &[("CI", "true")],
        &["-k", "not live"],
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(
        outcomes(&text),
        [
            "FAILED tests/test_chat.py::test_hello_again",
            "PASSED tests/plain/test_plain.py::test_unmarked",
            "PASSED tests/test_chat.py::test_anthropic",
            "PASSED tests/test_chat.py::test_swallowed",
            "PASSED tests/test_chat.py::test_topic[cats]",
            "PASSED tests/test_chat.py::test_topic[dogs/wolves]",
        ],
        "{text}"
    );
    // The test says that its cassette is missing, and the one command that records it.
    let record = "pytest --calltape-mode record tests/test_chat.py::test_hello_again";
    assert!(
        text.contains(&format!(
            "calltape: no cassette at tests/cassettes/test_chat/test_hello_again.jsonl; record it with: {record}\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("test_chat/test_hello_again.jsonl: POST openai /v1/chat/completions found nothing to replay"),
        "{text}"
    );
    assert_eq!(files(&cassettes), recorded, "a miss wrote a cassette");

    // That command records exactly that cassette, and the run in CI passes again.
    let fake = FakeApi::start(dir.path());
    let (out, text) = sh(&site, &project, &fake.url(), record, &[]);
    assert!(out.status.success(), "{text}");
    let mut now = files(&cassettes);
    assert!(
        now.remove("test_chat/test_hello_again.jsonl").is_some(),
        "{text}"
    );
    assert_eq!(
        now, recorded,
        "recording one test changed another's cassette"
    );
    drop(fake);
    let (out, text) = pytest(
        &site,
        &project,
        dead,
        &[("CI", "true")],
        &["-k", "not live"],
    );
    assert!(out.status.success(), "{text}");
}

#[test]
fn pytest_quick_start_replays_in_ci_with_no_api_key() {
    let dir = tempfile::tempdir().unwrap();
    let site = install_plugin(dir.path());
    let quick = QuickStart::read(&repo_root().join("integrations/pytest/README.md"));
    // The test installs what this installs, offline.
    assert_eq!(quick.install.len(), 1, "{:?}", quick.install);
    let project = dir.path().join("quick");
    std::fs::create_dir(&project).unwrap();
    let (out, text) = sh(&site, &project, "http://127.0.0.1:9", &quick.files, &[]);
    assert!(out.status.success(), "{text}");

    // Recorded where a key is at hand, as on a developer's machine.
    let fake = FakeApi::start(dir.path());
    let key = [("OPENAI_API_KEY", "sk-proj-quickStartKey0123456789abcdef")];
    let (out, text) = sh(&site, &project, &fake.url(), &quick.record, &key);
    assert!(out.status.success(), "{}: {text}", quick.record);
    let cassettes = project.join("tests/cassettes");
    let recorded = files(&cassettes);
    assert_eq!(
        recorded.keys().collect::<Vec<_>>(),
        ["test_chat/test_hello.jsonl"],
        "{text}"
    );
    drop(fake);

    // In CI: no key in the environment, and no upstream.
    let (out, text) = sh(&site, &project, "http://127.0.0.1:9", &quick.replay, &[]);
    assert!(out.status.success(), "{}: {text}", quick.replay);
    assert!(text.contains("1 passed"), "{text}");
    assert!(!text.contains("api_key"), "{text}");
    assert_eq!(
        text.matches("calltape: OPENAI_API_KEY, ANTHROPIC_API_KEY unset, so a placeholder key stood in for this replay run").count(),
        1,
        "{text}"
    );
    assert_eq!(files(&cassettes), recorded, "replay changed a cassette");
}

#[test]
fn pytest_sends_a_live_test_live_and_re_records_byte_identically() {
    let dir = tempfile::tempdir().unwrap();
    let site = install_plugin(dir.path());
    let project = write_project(dir.path());
    // Every test gets a cassette, the unmarked one too, and it reaches the conftest's upstream.
    let auto = PYPROJECT.replace(
        "[tool.pytest.ini_options]\n",
        "[tool.pytest.ini_options]\ncalltape_mode = \"auto\"\n",
    );
    std::fs::write(project.join("pyproject.toml"), auto).unwrap();
    let cassettes = project.join("tests/cassettes");
    let fake = FakeApi::start(dir.path());
    let echo = [("CALLTAPE_UPSTREAM_ECHO", fake.url())];
    let echo: Vec<(&str, &str)> = echo.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let (out, text) = pytest(
        &site,
        &project,
        &fake.url(),
        &echo,
        &["--calltape-mode", "record"],
    );
    assert!(out.status.success(), "{text}");
    let first = files(&cassettes);
    assert!(
        !first.keys().any(|k| k.contains("live")),
        "{:?}",
        first.keys()
    );
    let plain = String::from_utf8_lossy(&first["test_plain/test_unmarked.jsonl"]);
    assert!(
        plain.contains(r#""upstream":"echo""#) && plain.contains("echo: plain"),
        "{plain}"
    );

    let (out, text) = pytest(
        &site,
        &project,
        &fake.url(),
        &echo,
        &["--calltape-mode", "record"],
    );
    assert!(out.status.success(), "{text}");
    assert_eq!(files(&cassettes), first, "re-recording changed a cassette");

    // In strict replay, the live test still reaches the upstream, straight and not through a cassette.
    let before = fake.connections();
    let (out, text) = pytest(
        &site,
        &project,
        &fake.url(),
        &[],
        &["--calltape-mode", "replay", "-k", "live"],
    );
    assert!(out.status.success(), "{text}");
    assert_eq!(
        outcomes(&text),
        ["PASSED tests/test_chat.py::test_live"],
        "{text}"
    );
    assert_eq!(fake.connections(), before + 1, "{text}");
    assert_eq!(files(&cassettes), first);
}

#[test]
fn pytest_says_what_is_wrong_with_its_setup() {
    let dir = tempfile::tempdir().unwrap();
    let site = install_plugin(dir.path());
    let project = write_project(dir.path());
    let missing = dir.path().join("no-such-calltape");
    let missing = missing.to_str().unwrap();

    // A binary that is not there: each marked test errors, saying what to set.
    let (out, text) = pytest(
        &site,
        &project,
        "http://127.0.0.1:9",
        &[("CALLTAPE_BIN", missing)],
        &["-k", "hello"],
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "calltape: CALLTAPE_BIN={missing} is not an executable file; point it at the calltape binary"
        )),
        "{text}"
    );

    // An upstream without its variable: a usage error before any test runs.
    let broken = format!(
        "{PYPROJECT}\n[tool.calltape.upstreams]\nmistral = {{ url = \"http://127.0.0.1:9\" }}\n"
    );
    std::fs::write(project.join("pyproject.toml"), broken).unwrap();
    let (out, text) = pytest(&site, &project, "http://127.0.0.1:9", &[], &[]);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(
        text.contains("upstream 'mistral' needs url and env, e.g. mistral = { url = \"https://api.example.com\", env = \"MISTRAL_BASE_URL\" }"),
        "{text}"
    );
}

/// A test whose call goes to the `echo` upstream when the settings define it, else to `openai`.
const WHERE: &str = r#"import os

import openai
import pytest


@pytest.mark.calltape
def test_where():
    url = os.environ.get("ECHO_BASE_URL")
    client = openai.OpenAI(api_key="sk-proj-pluginTestKey0123456789abcdef", max_retries=0, **({"base_url": url} if url else {}))
    r = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "where"}])
    assert r.choices[0].message.content == "echo: where"
"#;

/// The settings of a `calltape.toml` (or, under `prefix` `tool.calltape.`, of a `pyproject.toml`):
/// the cassette folder `cassettes` and an `echo` upstream at `url`, beside rules only a replay reads.
fn settings(prefix: &str, cassettes: &str, url: &str) -> String {
    let top = if prefix.is_empty() {
        String::new()
    } else {
        format!("[{}]\n", prefix.trim_end_matches('.'))
    };
    format!(
        "{top}cassette_dir = \"{cassettes}\"\n\n[{prefix}upstreams]\n\
         echo = {{ url = \"{url}\", env = \"ECHO_BASE_URL\", path = \"v1\", key = \"ECHO_KEY\" }}\n\n\
         [{prefix}replay]\nmask = [\"uuid\"]\n\n[[{prefix}replay.call]]\nname = \"get_file_info\"\n\
         ignore = [\n  \"structuredContent\",\n]\n"
    )
}

/// (what the row is, the files written around the project and their text, the file the settings
/// come from, the cassette recorded, the upstream reached)
type SettingsRow<'a> = (&'a str, Vec<(&'a str, String)>, &'a str, &'a str, &'a str);

#[test]
fn pytest_takes_its_settings_from_the_file_calltape_replay_finds() {
    let dir = tempfile::tempdir().unwrap();
    let site = install_plugin(dir.path());
    let fake = FakeApi::start(dir.path());
    let url = fake.url();
    let ini = "[project]\nname = \"app\"\nversion = \"0\"\n\n[tool.pytest.ini_options]\naddopts = \"-p no:cacheprovider\"\n";
    let with_table = format!("{ini}\n{}", settings("tool.calltape.", "near", &url));
    // Each row: the files around the project `top/app` (a `.git` folder marks a repository's root),
    // the file both the plugin and `calltape replay` take their settings from, the cassette the
    // test records, and the upstream it reached.
    let rows: [SettingsRow<'_>; 5] = [
        (
            "a calltape.toml in the repository's root, above the project",
            vec![
                ("top/.git/HEAD", String::new()),
                ("top/calltape.toml", settings("", "shared", &url)),
            ],
            "top/calltape.toml",
            "top/shared/test_settings/test_where.jsonl",
            "echo",
        ),
        (
            "a calltape.toml beside a pyproject.toml with [tool.calltape]: calltape.toml",
            vec![
                ("top/app/calltape.toml", settings("", "beside", &url)),
                ("top/app/pyproject.toml", with_table.clone()),
            ],
            "top/app/calltape.toml",
            "top/app/beside/test_settings/test_where.jsonl",
            "echo",
        ),
        (
            "a nearer [tool.calltape] before a calltape.toml above",
            vec![
                ("top/.git/HEAD", String::new()),
                ("top/calltape.toml", settings("", "shared", &url)),
                ("top/app/pyproject.toml", with_table.clone()),
            ],
            "top/app/pyproject.toml",
            "top/app/near/test_settings/test_where.jsonl",
            "echo",
        ),
        (
            "a calltape.toml above the repository's root is not looked for",
            vec![
                ("top/calltape.toml", settings("", "shared", &url)),
                ("top/app/.git/HEAD", String::new()),
            ],
            "none",
            "top/app/tests/cassettes/test_settings/test_where.jsonl",
            "openai",
        ),
        (
            "a cassette_dir that is absolute",
            vec![(
                "top/calltape.toml",
                settings("", &dir.path().join("abs").display().to_string(), &url),
            )],
            "top/calltape.toml",
            "abs/test_settings/test_where.jsonl",
            "echo",
        ),
    ];
    for (i, (what, files_around, config_file, cassette, upstream)) in rows.into_iter().enumerate() {
        let root = dir.path().join(format!("row{i}"));
        let app = root.join("top/app");
        std::fs::create_dir_all(app.join("tests")).unwrap();
        std::fs::write(app.join("pyproject.toml"), ini).unwrap();
        std::fs::write(app.join("tests/test_settings.py"), WHERE).unwrap();
        for (name, text) in &files_around {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let cassette = if cassette.starts_with("abs/") {
            dir.path().join(cassette)
        } else {
            root.join(cassette)
        };

        let out = Command::new(env!("CARGO_BIN_EXE_calltape"))
            .args(["replay", "--print-config"])
            .current_dir(&app)
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{what}: {shown}");
        let expected = match config_file {
            "none" => "config file: none\n".to_owned(),
            file => format!("config file: {}\n", root.join(file).display()),
        };
        assert!(shown.starts_with(&expected), "{what}: {shown}");

        let (out, text) = pytest(&site, &app, &url, &[], &["--calltape-mode", "record"]);
        assert!(out.status.success(), "{what}: {text}");
        let recorded = std::fs::read_to_string(&cassette).unwrap_or_else(|e| {
            panic!("{what}: no cassette at {}: {e}\n{text}", cassette.display())
        });
        assert!(
            recorded.contains(&format!(r#""upstream":"{upstream}""#)),
            "{what}: {recorded}"
        );
        let _ = std::fs::remove_dir_all(dir.path().join("abs"));
    }
}

const MCP_CONFTEST: &str = r#"import os

import pytest


@pytest.fixture
def calltape_mcp_upstream():
    server = os.environ.get("EVERYTHING")
    return [server] if server else None
"#;

const MCP_TESTS: &str = r#"import asyncio
import os

from mcp import ClientSession
from mcp.client.stdio import stdio_client


async def get_sum(mcp_server, a, b):
    async with stdio_client(mcp_server.params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("get-sum", {"a": a, "b": b})
            return result.content[0].text


def test_sum(mcp_server):
    # The client swallows a failed call, as many do: the plugin must still fail this test.
    try:
        text = asyncio.run(get_sum(mcp_server, 2, int(os.environ.get("B", "40"))))
    except Exception as error:
        text = str(error)
    assert text


def test_other(mcp_server):
    assert asyncio.run(get_sum(mcp_server, 1, 1)) == "The sum of 1 and 1 is 2."
"#;

#[test]
fn mcp_server_records_each_test_in_auto_mode_then_answers_offline_and_a_miss_fails_its_test() {
    mcp_fixture_records_then_answers_offline_and_a_miss_fails("test_tools", MCP_TESTS);
}

/// A pytest project whose `tests/<module>.py` is `tests`, two tests of a fixture for MCP
/// (`test_sum`, `test_other`): run first with the real server in auto mode, it records each test's
/// own recording; then in CI with no server the recordings answer; then a changed call fails
/// exactly its test, though the test swallowed the error, showing the closest recorded call.
fn mcp_fixture_records_then_answers_offline_and_a_miss_fails(module: &str, tests: &str) {
    let dir = tempfile::tempdir().unwrap();
    let site = install_plugin(dir.path());
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(
        project.join("pyproject.toml"),
        "[tool.calltape]\ncassette_dir = \"tests/cassettes\"\n",
    )
    .unwrap();
    std::fs::write(project.join("tests/conftest.py"), MCP_CONFTEST).unwrap();
    std::fs::write(project.join(format!("tests/{module}.py")), tests).unwrap();
    let everything = support::everything().display().to_string();
    let unused = "http://127.0.0.1:9";

    let (out, text) = pytest(&site, &project, unused, &[("EVERYTHING", &everything)], &[]);
    assert!(out.status.success(), "{text}");
    let recordings = project.join("tests/cassettes").join(module);
    let recorded = std::fs::read_to_string(recordings.join("test_sum.mcp.jsonl"))
        .unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(recorded.contains(r#""input":{"a":2,"b":40}"#), "{recorded}");
    assert!(recordings.join("test_other.mcp.jsonl").exists());

    let (out, text) = pytest(&site, &project, unused, &[("CI", "true")], &[]);
    assert!(out.status.success(), "{text}");

    let (out, text) = pytest(&site, &project, unused, &[("CI", "true"), ("B", "41")], &[]);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains(&format!("{module}.py::test_other PASSED")),
        "{text}"
    );
    assert!(
        text.contains(&format!("{module}.py::test_sum FAILED")),
        "{text}"
    );
    support::assert_shows_the_closest_get_sum(&text);
}

const MCP_HTTP_TESTS: &str = r#"import asyncio
import os

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def get_sum(url, a, b):
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("get-sum", {"a": a, "b": b})
            return result.content[0].text


def test_sum(mcp_server_url):
    assert "/_cassette/test_http%2Ftest_sum.mcp/mcp" in mcp_server_url
    # The client swallows a failed call, as many do: the plugin must still fail this test.
    try:
        text = asyncio.run(get_sum(mcp_server_url, 2, int(os.environ.get("B", "40"))))
    except Exception as error:
        text = str(error)
    assert text


def test_other(mcp_server_url):
    assert asyncio.run(get_sum(mcp_server_url, 1, 1)) == "The sum of 1 and 1 is 2."
"#;

#[test]
fn mcp_server_url_serves_each_test_its_recording_over_http_made_in_auto_mode_and_a_miss_fails_it() {
    mcp_fixture_records_then_answers_offline_and_a_miss_fails("test_http", MCP_HTTP_TESTS);
}

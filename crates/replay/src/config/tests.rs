use super::*;

const FULL: &str = r#"cassette_dir = "tests/cassettes"

[upstreams]
openai = { url = "https://api.openai.com", env = "OPENAI_BASE_URL", path = "v1", key = "OPENAI_API_KEY" }
mistral = "https://api.mistral.ai"

[replay]
ignore = ["**.requestId", "content.*.text.etag"]
mask = ["uuid", 'req-[0-9]+']
fill = { cardToken = "env:CARD", apiKey = "file:secrets/key.txt" }

[[replay.call]]
name = "get_file_info"
mask = ["timestamp"]

[[replay.call]]
name = "file:///tmp/*"
ignore = ["contents.*.text"]
"#;

#[test]
fn a_file_is_read_whole_and_described_with_the_line_of_each_setting() {
    let mut config = Config::parse(FULL, "/project/calltape.toml").unwrap();
    config
        .replay
        .mask
        .push(Sourced::new("timestamp", Origin::given("--mask")));
    // Taken from the file's folder, with the platform's separator.
    let key = Path::new("/project").join("secrets/key.txt");
    assert_eq!(
        config.describe(),
        format!(
            "config file: /project/calltape.toml
calltape.toml:8   replay.ignore  **.requestId
calltape.toml:8   replay.ignore  content.*.text.etag
calltape.toml:9   replay.mask    uuid (preset)
calltape.toml:9   replay.mask    req-[0-9]+
--mask            replay.mask    timestamp (preset)
calltape.toml:10  replay.fill    apiKey from file:{}
calltape.toml:10  replay.fill    cardToken from env:CARD
calltape.toml:12  replay.call    get_file_info: mask timestamp (preset)
calltape.toml:16  replay.call    file:///tmp/*: ignore contents.*.text
calltape.toml:1   cassette_dir   tests/cassettes
calltape.toml:5   upstreams      mistral: url https://api.mistral.ai
calltape.toml:4   upstreams      openai: url https://api.openai.com, env OPENAI_BASE_URL, path v1, key OPENAI_API_KEY
",
            key.display()
        )
    );
    let rules = config.replay.call_rules().unwrap();
    assert_eq!(rules.len(), 2);
    let mask = config.replay.mask().unwrap();
    assert_eq!(
        mask.mask_text("req-7 at 2026-12-01T10:15:30Z"),
        "[MASKED] at [MASKED]"
    );
    assert!(config.replay.comparer().unwrap().build().is_ok());
}

#[test]
fn an_empty_configuration_says_so() {
    assert_eq!(
        Config::default().describe(),
        "config file: none\nno rules: every answer is compared whole\n"
    );
    let config = Config::parse("", "calltape.toml").unwrap();
    assert!(config.replay.calls.is_empty() && config.upstreams.is_empty());
}

/// The `[tool.calltape]` table the pytest integration documents, with replay rules beside it.
const PYPROJECT_TEXT: &str = r#"[project]
name = "chat-app"

[tool.other]
anything = 1

[tool.calltape]
cassette_dir = "tests/cassettes"

[tool.calltape.upstreams]
openai = { url = "https://api.openai.com", env = "OPENAI_BASE_URL", path = "v1" }
mistral = { url = "https://api.mistral.ai", env = "MISTRAL_BASE_URL", path = "v1" }

[[tool.calltape.replay.call]]
name = "get_file_info"
mask = ["timestamp"]
"#;

#[test]
fn a_pyproject_gives_its_tool_calltape_table_alone() {
    let config = Config::parse(PYPROJECT_TEXT, "pyproject.toml").unwrap();
    assert_eq!(config.upstreams.len(), 2);
    assert_eq!(config.cassette_dir.unwrap().value, "tests/cassettes");
    let call = &config.replay.calls[0];
    assert_eq!(call.value.name, "get_file_info");
    assert_eq!(call.origin.short(), "pyproject.toml:14");
    // Without the table, nothing; the rest of the file is not calltape's.
    let config = Config::parse("[project]\nname = \"x\"\nweird = 1\n", "pyproject.toml").unwrap();
    assert!(config.upstreams.is_empty() && config.replay.calls.is_empty());
    // Another file name is read whole.
    let error = Config::parse(PYPROJECT_TEXT, "other.toml")
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "other.toml:1: project: unknown key; the file takes cassette_dir, upstreams and replay"
    );
}

#[test]
fn wrong_settings_name_the_file_line_key_and_what_is_allowed() {
    // (file, text, the error): a row per case.
    let rows: &[(&str, &str, &str)] = &[
        (
            "calltape.toml",
            "[replay]\nignores = []\n",
            "calltape.toml:2: replay.ignores: unknown key; [replay] takes ignore, mask, fill and call",
        ),
        (
            "calltape.toml",
            "cassettes = \"x\"\n",
            "calltape.toml:1: cassettes: unknown key; the file takes cassette_dir, upstreams and replay",
        ),
        (
            "pyproject.toml",
            "[tool.calltape]\nreplays = 1\n",
            "pyproject.toml:2: tool.calltape.replays: unknown key; [tool.calltape] takes cassette_dir, upstreams and replay",
        ),
        (
            "calltape.toml",
            "[replay]\nignore = 3\n",
            "calltape.toml:2: replay.ignore: is an integer; write an array of dot-path globs, e.g. ignore = [\"**.requestId\"]",
        ),
        (
            "calltape.toml",
            "[replay]\nmask = [\"uuid\",\n  true]\n",
            "calltape.toml:3: replay.mask: item 2 is a boolean; write an array of presets or regular expressions, e.g. mask = [\"timestamp\"]",
        ),
        (
            "calltape.toml",
            "replay = \"yes\"\n",
            "calltape.toml:1: replay: is a string; write a table: [replay]",
        ),
        (
            "calltape.toml",
            "[replay]\nmask = [\"[a-\"]\n",
            "calltape.toml:2: replay.mask: cannot compile the mask `[a-` (a regular expression in the regex crate's syntax, or a preset: timestamp, uuid): regex parse error:",
        ),
        (
            "calltape.toml",
            "[replay]\nignore = [\"a.[b\"]\n",
            "calltape.toml:2: replay.ignore: cannot ignore answer paths: ",
        ),
        (
            "calltape.toml",
            "[replay]\nfill = { cardToken = \"tok_live_4242\" }\n",
            "calltape.toml:2: replay.fill.cardToken: a fill names where its value comes from, \"env:VAR\" or \"file:PATH\", never the value itself; e.g. fill = { NAME = \"env:VAR\" }",
        ),
        (
            "calltape.toml",
            "[replay]\nfill = { cardToken = 4242 }\n",
            "calltape.toml:2: replay.fill.cardToken: a fill names where its value comes from",
        ),
        (
            "calltape.toml",
            "[replay]\nfill = [\"cardToken=env:CARD\"]\n",
            "calltape.toml:2: replay.fill: is an array; write a table of NAME = \"env:VAR\" or \"file:PATH\", e.g. fill = { NAME = \"env:VAR\" }",
        ),
        (
            "calltape.toml",
            "[replay]\ncall = { name = \"a\" }\n",
            "calltape.toml:2: replay.call: is a table; write [[replay.call]] tables, each with name and ignore or mask",
        ),
        (
            "calltape.toml",
            "[[replay.call]]\nmask = [\"uuid\"]\n",
            "calltape.toml:1: replay.call: a [[replay.call]] needs name, a glob on a tool's or prompt's name or a resource's URI, e.g. name = \"get_file_info\"",
        ),
        (
            "calltape.toml",
            "[[replay.call]]\nname = \"a\"\n",
            "calltape.toml:1: replay.call: a [[replay.call]] with neither ignore nor mask does nothing; give one",
        ),
        (
            "calltape.toml",
            "[[replay.call]]\nname = \"a\"\nmask = [\"uuid\"]\nwhere = 1\n",
            "calltape.toml:4: replay.call.where: unknown key; [[replay.call]] takes name, ignore and mask",
        ),
        (
            "calltape.toml",
            "\n[[replay.call]]\nname = \"get_[file\"\nmask = [\"uuid\"]\n",
            "calltape.toml:2: replay.call: cannot match calls by `get_[file`: ",
        ),
        (
            "calltape.toml",
            "[[replay.call]]\nname = 7\nmask = [\"uuid\"]\n",
            "calltape.toml:2: replay.call.name: is an integer; write a glob, e.g. name = \"get_file_info\"",
        ),
        (
            "calltape.toml",
            "[upstreams]\n\"bad name\" = \"https://x\"\n",
            "calltape.toml:2: upstreams.bad name: an upstream's name is letters, digits, '_' and '-', starting with a letter or digit",
        ),
        (
            "calltape.toml",
            "[upstreams]\nopenai = { url = \"https://x\", base = \"v1\" }\n",
            "calltape.toml:2: upstreams.openai.base: unknown key; an upstream takes url, env, path and key",
        ),
        (
            "calltape.toml",
            "[upstreams]\nopenai = { env = 1 }\n",
            "calltape.toml:2: upstreams.openai.env: is an integer; write a string",
        ),
        (
            "calltape.toml",
            "[upstreams]\nopenai = 1\n",
            "calltape.toml:2: upstreams.openai: is an integer; write a URL or a table of NAME = ",
        ),
        (
            "calltape.toml",
            "cassette_dir = [\"a\"]\n",
            "calltape.toml:1: cassette_dir: is an array; write a folder, e.g. cassette_dir = \"tests/cassettes\"",
        ),
        (
            "calltape.toml",
            "[replay]\nmask = [\"uuid\"\n",
            "calltape.toml:2: not valid TOML: ",
        ),
    ];
    for (file, text, expected) in rows {
        let error = Config::parse(text, file).unwrap_err().to_string();
        assert!(
            error.starts_with(expected),
            "{text}\n got: {error}\nwant: {expected}"
        );
        assert!(!error.contains("tok_live"), "{error}");
    }
}

#[test]
fn settings_from_the_caller_are_named_by_its_label_and_a_later_fill_wins() {
    let mut config = Config::parse(
        "[replay]\nfill = { cardToken = \"env:CALLTAPE_TEST_UNSET_VARIABLE\" }\n",
        "calltape.toml",
    )
    .unwrap();
    let error = config.replay.fills().unwrap_err().to_string();
    assert!(
        error.starts_with("calltape.toml:2: replay.fill: cannot fill `cardToken`: the environment variable CALLTAPE_TEST_UNSET_VARIABLE is not set"),
        "{error}"
    );
    // A fill of the same name from the caller replaces the file's, which is then not read.
    let dir = tempfile::tempdir().unwrap();
    let card = dir.path().join("card.txt");
    std::fs::write(&card, "tok_test_4242\n").unwrap();
    let spec: FillSpec = format!("cardToken=file:{}", card.display())
        .parse()
        .unwrap();
    config
        .replay
        .fill
        .push(Sourced::new(spec, Origin::given("--fill")));
    let fills = config.replay.fills().unwrap();
    assert_eq!(fills.names().collect::<Vec<_>>(), ["cardToken"]);

    config
        .replay
        .mask
        .push(Sourced::new("(", Origin::given("--mask")));
    let error = config.replay.mask().unwrap_err().to_string();
    assert!(
        error.starts_with("--mask: cannot compile the mask `(`"),
        "{error}"
    );
    config
        .replay
        .ignore
        .push(Sourced::new("a.[b", Origin::given("--ignore")));
    let error = config.replay.comparer().unwrap_err().to_string();
    assert!(
        error.starts_with("--ignore: cannot ignore answer paths"),
        "{error}"
    );
    config.replay.calls.push(Sourced::new(
        CallRule::new("[x").mask(["uuid"]),
        Origin::given("--mask-in"),
    ));
    let error = config.replay.call_rules().unwrap_err().to_string();
    assert!(
        error.starts_with("--mask-in: cannot match calls by `[x`"),
        "{error}"
    );
}

#[test]
fn discovery_goes_upward_to_the_repository_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("outside/calltape.toml", "");
    write("outside/repo/.git", "gitdir: elsewhere\n");
    write("outside/repo/a/pyproject.toml", "[project]\nname = \"x\"\n");
    write("outside/repo/a/b/c/.keep", "");
    write(
        "outside/repo/p/pyproject.toml",
        "[tool.calltape]\ncassette_dir = \"c\"\n",
    );
    write("outside/repo/p/q/.keep", "");
    write("outside/repo/t/calltape.toml", "");
    write("outside/repo/t/pyproject.toml", "[tool.calltape]\n");
    write("outside/repo/t/u/.keep", "");
    write("outside/repo/t/u/pyproject.toml", "[tool.other]\n");
    write("plain/x/.keep", "");
    write("plain/calltape.toml", "");
    // (start, what is found)
    let rows: &[(&str, Option<&str>)] = &[
        // A pyproject.toml without [tool.calltape] is passed by; the search stops at the root.
        ("outside/repo/a/b/c", None),
        ("outside/repo", None),
        ("outside/repo/p/q", Some("outside/repo/p/pyproject.toml")),
        ("outside/repo/p", Some("outside/repo/p/pyproject.toml")),
        // calltape.toml first.
        ("outside/repo/t/u", Some("outside/repo/t/calltape.toml")),
        ("outside", Some("outside/calltape.toml")),
        // Outside a repository, upward as far as it goes.
        ("plain/x", Some("plain/calltape.toml")),
    ];
    for (start, found) in rows {
        let got = discover(&root.join(start)).unwrap();
        assert_eq!(got, found.map(|f| root.join(f)), "from {start}");
    }
    write("outside/repo/bad/pyproject.toml", "[tool.calltape\n");
    let error = discover(&root.join("outside/repo/bad"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("pyproject.toml:1: not valid TOML"),
        "{error}"
    );
    let config = Config::load(&root.join("outside/repo/p/q")).unwrap();
    assert_eq!(config.cassette_dir.unwrap().value, "c");
    assert!(
        Config::load(&root.join("outside/repo/a"))
            .unwrap()
            .file
            .is_none()
    );
}

#[test]
fn the_readme_example_is_a_valid_file() {
    let readme = include_str!("../../../../README.md");
    let start = readme
        .find("```toml\ncassette_dir")
        .expect("the README shows a calltape.toml");
    let block = &readme[start + "```toml\n".len()..];
    let block = &block[..block.find("```").unwrap()];
    let config = Config::parse(block, "calltape.toml").unwrap();
    assert_eq!(config.replay.calls.len(), 1);
    assert!(config.replay.mask().is_ok() && config.replay.call_rules().is_ok());
}

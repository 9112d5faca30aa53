//! Values that vary per run, by rule, end to end: the official Python MCP SDK records a session
//! against a published release of the filesystem reference server, whose `get_file_info` prints
//! each file's times inside its text; the files' times change; a replay against the same release
//! differs without a rule, and is clean with `--mask timestamp`, with a rule for that tool in a
//! `calltape.toml` (a mask or ignore globs), with ignore globs for every call there, and with a mask
//! in `pyproject.toml`'s `[tool.calltape]`.

use std::fs::{File, FileTimes};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, SystemTime};

use crate::support::{calltape, published_server};

const BIN: &str = env!("CARGO_BIN_EXE_calltape");

/// Sets a file's (or folder's) modified and accessed times to `secs` after the epoch.
fn set_times(path: &Path, secs: u64) {
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
    File::open(path)
        .unwrap()
        .set_times(FileTimes::new().set_accessed(at).set_modified(at))
        .unwrap();
}

/// The data folder the server serves: `a.txt` and `sub/b.txt`, with the times `secs`.
fn touch_all(data: &Path, secs: u64) {
    for path in ["a.txt", "sub/b.txt", "sub"] {
        set_times(&data.join(path), secs);
    }
}

/// Records the `filesystem` scenario against `server` (a published release) serving `data`.
fn record(server: &Path, data: &Path, file: &Path) {
    let (file, server, data) = (path(file), path(server), path(data));
    let command = [
        BIN,
        "record",
        "--methods",
        "tools/call",
        "-o",
        file,
        "--",
        "node",
        server,
        data,
    ];
    crate::record::client("filesystem", &command);
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// `calltape replay` of `file` in the folder `cwd` with `flags`, against `server` serving `data`.
fn replay(cwd: &Path, file: &Path, flags: &[&str], server: &Path, data: &Path) -> Output {
    calltape()
        .current_dir(cwd)
        .arg("replay")
        .arg(file)
        .args(flags)
        .args(["--timeout", "20s", "--", "node"])
        .arg(server)
        .arg(data)
        .output()
        .expect("run calltape replay")
}

/// Whether a line of `text` holds `start` and, after it, each of `parts`.
fn has_line(text: &str, start: &str, parts: &[&str]) -> bool {
    text.lines().any(|line| {
        line.find(start)
            .is_some_and(|at| parts.iter().all(|p| line[at..].contains(p)))
    })
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A `calltape.toml` with a rule for `get_file_info` alone.
const CALLTAPE_TOML: &str = r#"# Times of files vary per run; every other text is compared.
[[replay.call]]
name = "get_file_info"
mask = ["timestamp"]
"#;

/// A `calltape.toml` that skips the texts of `get_file_info` alone, where its times are.
const CALL_IGNORE: &str = r#"[[replay.call]]
name = "get_file_info"
ignore = ["content.*.text", "structuredContent.content"]
"#;

/// A `calltape.toml` that skips every call's texts.
const IGNORE: &str = r#"[replay]
ignore = ["content.*.text", "structuredContent.content"]
"#;

/// The `[tool.calltape]` table the pytest integration documents, with a replay rule beside it.
const PYPROJECT: &str = r#"[project]
name = "fs-app"
version = "0"

[tool.calltape]
cassette_dir = "tests/cassettes"

[tool.calltape.upstreams]
openai = { url = "https://api.openai.com", env = "OPENAI_BASE_URL", path = "v1" }

[tool.calltape.replay]
mask = ["timestamp"]
"#;

#[test]
fn a_same_version_replay_of_the_filesystem_server_is_clean_with_a_timestamp_mask() {
    for release in ["filesystem-old", "filesystem-new"] {
        let server = published_server(release);
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let data = root.join("data");
        std::fs::create_dir_all(data.join("sub")).unwrap();
        std::fs::write(data.join("a.txt"), "hello\n").unwrap();
        std::fs::write(data.join("sub/b.txt"), "world\n").unwrap();
        touch_all(&data, 1_000_000_000);
        let file = root.join("calls.jsonl");
        record(&server, &data, &file);
        // What the release prints: JavaScript's Date.prototype.toString() (in the zone of the
        // machine, so only the year is checked), e.g. "modified: Sun Sep 09 2001 01:46:40 GMT+0000
        // (Coordinated Universal Time)".
        let recorded = std::fs::read_to_string(&file).unwrap();
        assert!(
            has_line(
                &recorded.replace("\\n", "\n"),
                "modified: ",
                &[" 2001 ", " GMT"]
            ),
            "{release} prints its times otherwise: {recorded}"
        );
        // The times change, as they do between a recording and a run in CI.
        touch_all(&data, 1_100_000_000);

        // Each project folder is a repository's root, so that no file above it counts.
        let project = |name: &str, files: &[(&str, &str)]| {
            let folder = root.join(name);
            std::fs::create_dir_all(folder.join(".git")).unwrap();
            for (path, text) in files {
                std::fs::write(folder.join(path), text).unwrap();
            }
            folder
        };
        let bare = project("bare", &[]);
        let toml = project("toml", &[("calltape.toml", CALLTAPE_TOML)]);
        let nested = toml.join("src/deep");
        std::fs::create_dir_all(&nested).unwrap();
        let py = project("py", &[("pyproject.toml", PYPROJECT)]);
        let call_ignore = project("call-ignore", &[("calltape.toml", CALL_IGNORE)]);
        let other = CALL_IGNORE.replace("get_file_info", "read_*");
        let call_other = project("call-other", &[("calltape.toml", &other)]);
        let ignore = project("ignore", &[("calltape.toml", IGNORE)]);
        let text_only = IGNORE.replace(", \"structuredContent.content\"", "");
        let ignore_text = project("ignore-text", &[("calltape.toml", &text_only)]);
        let config = toml.join("calltape.toml");
        let config = config.to_str().unwrap();

        // (folder, flags, exit code)
        let rows: [(&Path, &[&str], i32); 14] = [
            (&bare, &[], 1),
            (&bare, &["--mask", "timestamp"], 0),
            (&nested, &[], 0),
            (&toml, &["--no-config"], 1),
            (&bare, &["--config", config], 0),
            (&py, &[], 0),
            (&bare, &["--mask-in", "get_file_*", "timestamp"], 0),
            // A rule for another tool leaves get_file_info's differences.
            (&bare, &["--mask-in", "read_*", "timestamp"], 1),
            (&bare, &["--ignore-in", "get_file_info", "*.text"], 1),
            (
                &bare,
                &[
                    "--ignore-in",
                    "get_file_info",
                    "content.*.text",
                    "--ignore-in",
                    "get_file_info",
                    "structuredContent.content",
                ],
                0,
            ),
            // The same ignore globs from a file: for get_file_info only, for another tool, for
            // every call, and for every call with the flag adding the second glob.
            (&call_ignore, &[], 0),
            (&call_other, &[], 1),
            (&ignore, &[], 0),
            (&ignore_text, &["--ignore", "structuredContent.content"], 0),
        ];
        for (cwd, flags, code) in rows {
            let out = replay(cwd, &file, flags, &server, &data);
            let report = text(&out);
            assert_eq!(
                out.status.code(),
                Some(code),
                "{release} in {cwd:?} with {flags:?}:\n{report}"
            );
            if code == 0 {
                assert!(report.contains("7 calls, 7 same, 0 changed"), "{report}");
                continue;
            }
            // Only the three get_file_info calls differ, and only in their times.
            assert!(
                report.contains("7 calls, 4 same, 3 changed"),
                "{release}: {report}"
            );
            let changed: Vec<&str> = report
                .lines()
                .filter(|l| l.starts_with("changed"))
                .collect();
            assert!(
                changed
                    .iter()
                    .all(|l| l.starts_with("changed    tools/call get_file_info ")),
                "{report}"
            );
            assert!(
                has_line(&report, "      - modified: ", &[" 2001 "]),
                "{report}"
            );
            assert!(
                has_line(&report, "      + modified: ", &[" 2004 "]),
                "{report}"
            );
        }
    }
}

#[test]
fn print_config_says_what_is_in_force_and_where_it_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("pyproject.toml"), PYPROJECT).unwrap();
    let out = calltape()
        .current_dir(root.join("src"))
        .args([
            "replay",
            "--print-config",
            "--mask",
            "uuid",
            "--ignore-in",
            "file:///*",
            "contents",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "config file: {}
pyproject.toml:12  replay.mask   timestamp (preset)
--mask             replay.mask   uuid (preset)
--ignore-in        replay.call   file:///*: ignore contents
pyproject.toml:6   cassette_dir  tests/cassettes
pyproject.toml:9   upstreams     openai: url https://api.openai.com, env OPENAI_BASE_URL, path v1
",
            root.join("pyproject.toml").display()
        )
    );

    // A file that is wrong, or a mask that does not compile: exit 2, naming it.
    std::fs::write(
        root.join("calltape.toml"),
        "[replay]\nmask = [\"timestamp\", \"(\"]\n",
    )
    .unwrap();
    let rows: [(&[&str], &str); 4] = [
        (&["--print-config"], "calltape: "),
        (
            &["--print-config", "--no-config", "--mask", "[a-"],
            "calltape: --mask: cannot compile the mask `[a-`",
        ),
        (
            &[
                "--print-config",
                "--no-config",
                "--mask-in",
                "get_[x",
                "uuid",
            ],
            "calltape: --mask-in: cannot match calls by `get_[x`",
        ),
        (
            &["--print-config", "--config", "missing.toml"],
            "calltape: missing.toml: ",
        ),
    ];
    for (flags, said) in rows {
        let out = calltape()
            .current_dir(&root)
            .arg("replay")
            .args(flags)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", text(&out));
        assert!(text(&out).starts_with(said), "{flags:?}: {}", text(&out));
    }
    // A fill written as a value: refused, and the value is not repeated.
    let literal = root.join("literal.toml");
    std::fs::write(
        &literal,
        "[replay]\nfill = { cardToken = \"tok_live_4242\" }\n",
    )
    .unwrap();
    let out = calltape()
        .current_dir(&root)
        .args(["replay", "--print-config", "--config"])
        .arg(&literal)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(":2: replay.fill.cardToken: a fill names where its value comes from"),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("tok_live_4242"), "{}", text(&out));

    let out = calltape()
        .current_dir(&root)
        .args(["replay", "--print-config"])
        .output()
        .unwrap();
    assert!(
        text(&out).starts_with(&format!(
            "calltape: {}:2: replay.mask: cannot compile the mask `(`",
            root.join("calltape.toml").display()
        )),
        "{}",
        text(&out)
    );
}

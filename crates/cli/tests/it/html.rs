//! The HTML reports in a real browser: headless Chromium (installed by `.ci/install-peers`) opens the
//! page from its file, runs its script, and the tests read the DOM it dumps. Chromium is pointed at a
//! closed loopback proxy with every host name unresolvable, so nothing but the local file can load.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;

use crate::support::calltape;

const BIN: &str = env!("CARGO_BIN_EXE_calltape");

/// What the injected markup would set on the page's root element if it ran.
const MARKER: &str = "data-pwned=\"yes\"";

/// Runs headless Chromium on the local file `page` with `args` (`--dump-dom`, `--screenshot=…`).
fn chromium(page: &Path, args: &[&str]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("timeout")
        .args([
            "120",
            "chromium",
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args([
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--proxy-server=127.0.0.1:9",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run chromium ({e}): run .ci/install-peers"));
    assert!(
        out.status.success(),
        "chromium failed ({}): run .ci/install-peers\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The DOM of `page` once Chromium loaded it and ran its script.
pub(crate) fn dom(page: &Path) -> String {
    let out = chromium(page, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    // The page's own script ran: the absence of the marker below means something.
    assert!(dom.contains("data-js=\"on\""), "{dom}");
    dom
}

/// The row group of the call or cassette named `name`.
pub(crate) fn row<'a>(dom: &'a str, name: &str) -> &'a str {
    let start = dom
        .find(&format!("data-name=\"{name}\""))
        .unwrap_or_else(|| panic!("no row {name} in {dom}"));
    // Up to the next row group or the end of the rows.
    let end = ["data-status=", "</div>\n<footer"]
        .iter()
        .filter_map(|next| dom[start + 1..].find(next))
        .min()
        .unwrap()
        + start
        + 1;
    &dom[start..end]
}

fn run_demo(dir: &Path) -> (String, PathBuf) {
    let out = calltape()
        .arg("demo")
        .arg("--dir")
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    (stdout, dir.join("report.html"))
}

#[test]
fn the_demo_writes_a_report_page_that_a_browser_shows_with_its_counts_and_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, page) = run_demo(dir.path());
    assert!(
        stdout.contains(&format!(
            "   the same report as a page to open in a browser: {}\n",
            page.display()
        )),
        "{stdout}"
    );
    let mode = std::fs::metadata(&page).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dom = dom(&page);
    // The three lists count too: the tool list changed, the others are the same.
    for (status, n) in [
        ("same", 4),
        ("changed", 2),
        ("new-error", 1),
        ("gone-error", 1),
    ] {
        let want = format!("data-count=\"{status}\"><b>{n}</b> {status}</span>");
        assert!(dom.contains(&want), "{want}\n{dom}");
    }
    let quote = row(&dom, "quote");
    assert!(
        quote.contains("<span class=\"status s-changed\">changed</span>"),
        "{quote}"
    );
    assert!(quote.contains("price: 12 → 15 (+1 more)</span>"), "{quote}");
    assert!(
        quote.contains("<td><pre>12</pre></td><td><pre>15</pre></td>"),
        "{quote}"
    );
    assert!(dom.contains("<dd>calltape demo-server 2</dd>"), "{dom}");
    assert!(
        dom.contains("<p id=\"surface\">surface: 2 breaking, 3 compatible</p>"),
        "{dom}"
    );
    assert!(
        dom.contains("<li>breaking: tools[convert] removed</li>"),
        "{dom}"
    );

    // Without its script (as with JavaScript off: --dump-dom itself needs JavaScript) the page
    // reads the same; only the filters, which need the script, stay hidden.
    let text = std::fs::read_to_string(&page).unwrap();
    let (head, rest) = text.split_once("<script>").unwrap();
    let (_, tail) = rest.split_once("</script>").unwrap();
    let scriptless = dir.path().join("scriptless.html");
    std::fs::write(&scriptless, format!("{head}{tail}")).unwrap();
    let out = chromium(&scriptless, &["--dump-dom"]);
    let plain = String::from_utf8_lossy(&out.stdout);
    assert!(!plain.contains("data-js=\"on\""), "{plain}");
    assert!(
        plain.contains("<div id=\"filters\" hidden=\"\">"),
        "{plain}"
    );
    assert!(
        row(&plain, "quote").contains("price: 12 → 15 (+1 more)</span>"),
        "{plain}"
    );
    assert_eq!(plain.matches("<details open=\"\">").count(), 4, "{plain}");
    assert!(dom.contains("<dd>cardToken</dd>"), "{dom}");
    assert!(!dom.contains("tok_live_"), "{dom}");
}

/// A recording whose answer holds markup: a `<script>` in the recorded symbol and an `<img>` with
/// an `onerror` in the input, which demo server v2 echoes in its answer.
fn hostile_recording(dir: &Path) -> PathBuf {
    let set = "document.documentElement.setAttribute('data-pwned','yes')";
    let input = json!({"symbol": format!("\"><img src=x onerror={set}>")});
    let quote =
        json!({"symbol": format!("<script>{set}</script>"), "price": 12, "currency": "USD"});
    let line = json!({"v": 1, "at": "2026-11-29T20:46:40.123Z", "session": "3f9a1c2e",
        "client": {"name": "test-client", "version": "1.0"}, "method": "tools/call", "name": "quote",
        "input": input, "answer": {"structuredContent": quote}, "durationMs": 1.5});
    let path = dir.join("calls.jsonl");
    std::fs::write(&path, format!("{line}\n")).unwrap();
    path
}

/// Replays `file` against demo server `version` into the HTML report `page`; the answers differ.
fn replay_to_page(file: &Path, page: &Path, version: &str) {
    let out = calltape()
        .arg("replay")
        .arg(file)
        .args([
            "--ignore",
            "**.quotedAt,**.quoteId",
            "--format",
            "html",
            "--output",
        ])
        .arg(page)
        .args(["--", BIN, "demo-server", version])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn markup_in_an_answer_shows_as_text_and_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = hostile_recording(dir.path());
    let page = dir.path().join("report.html");
    replay_to_page(&file, &page, "2");
    let dom = dom(&page);
    assert!(!dom.contains(MARKER), "{dom}");
    assert!(
        dom.contains("&lt;script&gt;document.documentElement"),
        "{dom}"
    );
    assert!(dom.contains("&lt;img src=x onerror="), "{dom}");
    assert!(!dom.contains("<img"), "{dom}");
    assert!(
        dom.contains("data-count=\"changed\"><b>1</b> changed</span>"),
        "{dom}"
    );
}

#[test]
fn a_screenshot_of_the_demo_report_is_kept_under_target() {
    let dir = tempfile::tempdir().unwrap();
    let (_, page) = run_demo(dir.path());
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("html-report");
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join("replay.png");
    let _ = std::fs::remove_file(&png);
    chromium(
        &page,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1280,900",
            "--hide-scrollbars",
        ],
    );
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.len() > 1000, "{} bytes", bytes.len());
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
}

/// A recording of two calls whose answers hold a long path of long keys and long values without a
/// space, which demo server v1 does not answer: the calls differ at the same paths, each its own
/// way, so that the page shows them as one group with a table of their values.
fn long_words_recording(dir: &Path) -> PathBuf {
    let key = "k".repeat(120);
    let lines: Vec<String> = ["v", "w"]
        .iter()
        .map(|letter| {
            let value = letter.repeat(600);
            let uri = format!("demo://resource/{}", format!("{letter}segment/").repeat(40));
            let answer = json!({"structuredContent": {
                "price": 12, "currency": "USD", "symbol": "ACME",
                &key: {&key: value, "links": [{"uri": uri, "name": "long"}]},
            }});
            json!({"v": 1, "at": "2026-11-29T20:46:40.123Z", "session": "3f9a1c2e",
                "client": {"name": "test-client", "version": "1.0"}, "method": "tools/call",
                "name": "quote", "input": {"symbol": "ACME"}, "answer": answer, "durationMs": 1.5})
            .to_string()
        })
        .collect();
    let path = dir.join("calls.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn long_paths_and_values_stay_inside_their_column() {
    let dir = tempfile::tempdir().unwrap();
    let file = long_words_recording(dir.path());
    let page = dir.path().join("report.html");
    replay_to_page(&file, &page, "1");
    // The page as it is, and a script of the test's own that counts the cells whose content is
    // wider than they are, at the width of a laptop's window.
    let html = std::fs::read_to_string(&page).unwrap();
    let check = "<script>var bad=[];document.querySelectorAll('table.diff td, .calls .row>span')\
        .forEach(function(e){if(e.scrollWidth>e.clientWidth+1)bad.push(e.textContent.slice(0,30))});\
        document.documentElement.setAttribute('data-overflow',bad.length+':'+bad.join('|'))</script>";
    let measured = dir.path().join("measured.html");
    std::fs::write(
        &measured,
        html.replace("</body>", &format!("{check}</body>")),
    )
    .unwrap();
    let out = chromium(&measured, &["--dump-dom", "--window-size=1280,900"]);
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("data-overflow=\"0:\""),
        "{}",
        &dom[..dom.len().min(600)]
    );
    assert!(dom.contains(&"k".repeat(120)), "the long key is shown");
    // Both calls' values, in the table of the group they make.
    assert!(dom.contains("<table class=\"diff vals\">"), "{dom}");
    for value in ["v", "w"] {
        assert!(dom.contains(&value.repeat(600)), "{value}");
    }
    // And a picture of it, for people to look at.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("html-report");
    std::fs::create_dir_all(&shots).unwrap();
    chromium(
        &page,
        &[
            &format!("--screenshot={}", shots.join("long-words.png").display()),
            "--window-size=1280,900",
            "--hide-scrollbars",
        ],
    );
}

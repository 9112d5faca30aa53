//! `calltape http import`: it reads only regular files inside the recordings folder, never through
//! a link; a recording it cannot import is named and left out, and the run exits 1; a URL's user
//! info reaches no cassette and no line of output.

use std::path::Path;

use serde_json::json;

use crate::support::calltape;

use crate::userinfo::USERINFO_TOKEN;

/// What a file outside the recordings folder holds, which no cassette may.
const OUTSIDE: &[u8] = b"RIFF-outside-the-folder";

/// A recording of a speech request whose answer is the artifact at `path`.
fn speech(n: usize, path: &str) -> serde_json::Value {
    json!({
        "request": {"url": format!("https://bob:{USERINFO_TOKEN}@api.openai.com/v1/audio/speech?n={n}"),
                    "method": "POST", "body": {"input": format!("line {n}")}},
        "response": {"status": 200, "headers": {"content-type": "audio/wav"},
                     "binaryArtifact": {"path": path, "contentType": "audio/wav"}}
    })
}

fn import(recordings: &Path, out: &Path) -> (Option<i32>, String, String) {
    let run = calltape()
        .args(["http", "import", "--from", "mastra"])
        .arg(recordings)
        .arg("--out")
        .arg(out)
        .output()
        .expect("run calltape http import");
    (
        run.status.code(),
        String::from_utf8_lossy(&run.stdout).into_owned(),
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

/// Every file under `dir`, read whole and joined.
fn everything_under(dir: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read the folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                all.extend(std::fs::read(&path).expect("read a file"));
            }
        }
    }
    all
}

#[test]
fn import_reads_no_link_names_each_recording_it_leaves_out_and_exits_1() {
    let root = tempfile::tempdir().unwrap();
    let recordings = root.path().join("__recordings__");
    std::fs::create_dir_all(recordings.join("audio")).unwrap();
    std::fs::write(recordings.join("audio/ok.wav"), b"RIFF-inside").unwrap();
    std::fs::write(root.path().join("outside.wav"), OUTSIDE).unwrap();
    let link = |target: &Path, at: &str| std::os::unix::fs::symlink(target, recordings.join(at));
    link(Path::new("/dev/zero"), "zero.wav").unwrap();
    link(&root.path().join("outside.wav"), "outside.wav").unwrap();
    // (the artifact, and the recording's line on stderr when it is left out)
    let rows = [
        ("audio/ok.wav", None),
        ("zero.wav", Some("zero.wav: is a symbolic link")),
        ("outside.wav", Some("outside.wav: is a symbolic link")),
        ("audio/missing.wav", Some("audio/missing.wav: cannot open")),
    ];
    let doc = json!({"recordings": rows.iter().enumerate().map(|(n, (path, _))| speech(n, path)).collect::<Vec<_>>()});
    std::fs::write(recordings.join("speech.json"), doc.to_string()).unwrap();
    let out = root.path().join("cassettes");

    let (code, stdout, stderr) = import(&recordings, &out);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("(1 interactions, 3 left out)"), "{stdout}");
    let file = recordings.join("speech.json");
    for (n, (_, why)) in rows.iter().enumerate() {
        let named = format!(
            "{}: recordings[{n}] (POST openai /v1/audio/speech) was not imported: ",
            file.display()
        );
        match why {
            Some(why) => {
                let line = stderr
                    .lines()
                    .find(|l| l.contains(&named))
                    .unwrap_or_else(|| panic!("recordings[{n}] is not named:\n{stderr}"));
                assert!(line.contains(why), "{line}");
            }
            None => assert!(!stderr.contains(&named), "{stderr}"),
        }
    }
    let cassette = std::fs::read_to_string(out.join("speech.jsonl")).unwrap();
    assert_eq!(cassette.matches("\"t\":\"req\"").count(), 1, "{cassette}");
    let stored = everything_under(&out);
    assert!(
        !stored.windows(OUTSIDE.len()).any(|w| w == OUTSIDE),
        "a file outside the folder was read into the cassette"
    );
    for text in [&stdout, &stderr, &cassette] {
        assert!(!text.contains(USERINFO_TOKEN), "{text}");
    }

    // A recordings file that is a link is not read: the run fails on it, naming it.
    std::fs::write(root.path().join("elsewhere.json"), doc.to_string()).unwrap();
    std::os::unix::fs::symlink(
        root.path().join("elsewhere.json"),
        recordings.join("linked.json"),
    )
    .unwrap();
    let (code, _, stderr) = import(&recordings, &out);
    assert_eq!(code, Some(2), "{stderr}");
    let linked = format!(
        "{}: is a symbolic link",
        recordings.join("linked.json").display()
    );
    assert!(stderr.contains(&linked), "{stderr}");
    assert!(!out.join("linked.jsonl").exists());
}

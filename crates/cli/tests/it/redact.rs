//! `calltape redact` end to end.

use std::io::Write;
use std::process::Stdio;

use crate::support::{calltape, repo_root};

/// Every secret planted in `samples/leaky-session.log`.
const SAMPLE_SECRETS: &[&str] = &[
    "hunter2",
    "sk-proj-4f9a1c2e7b6d5a4f3e2d1c0b9a8f7e6d",
    "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "3f9a1c2e-0b1d-4c4e-9a7f-8d2b1e6f0a11",
    "ghp_R2d2C3p0R2d2C3p0R2d2C3p0R2d2C3p0R2d2",
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "AKIAIOSFODNN7EXAMPLE",
];

/// `calltape redact ARGS` with `input` on stdin.
pub(crate) fn run_with_stdin(args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = calltape()
        .arg("redact")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn calltape");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    out
}

#[test]
fn sample_file_loses_every_secret_and_keeps_the_rest() {
    let sample = repo_root().join("samples/leaky-session.log");
    let out = calltape().arg("redact").arg(&sample).output().expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    for secret in SAMPLE_SECRETS {
        assert!(!text.contains(secret), "{secret} survived:\n{text}");
    }
    let input = std::fs::read_to_string(&sample).expect("sample");
    assert_eq!(text.lines().count(), input.lines().count());
    // JSON lines stay one line of valid JSON, with the innocent fields as they were.
    for line in text.lines().filter(|l| l.starts_with('{')) {
        let value: serde_json::Value = serde_json::from_str(line).expect("valid JSON out");
        assert_eq!(value["jsonrpc"], "2.0");
    }
    assert!(text.contains(r#""apiKey":"[REDACTED]""#), "{text}");
    assert!(text.contains(r#""pageSize":20"#), "{text}");
    assert!(
        text.contains("a Bearer token goes in the Authorization header; see the Basic usage guide"),
        "prose was changed:\n{text}"
    );
    assert!(
        text.contains("postgres://[REDACTED]@db.internal:5432/app"),
        "{text}"
    );
}

#[test]
fn stdin_json_and_text_lines() {
    let input = b"{\"password\":\"p4ss\",\"user\":\"ann\"}\nAuthorization: Bearer abc.def-123\nplain line\n";
    let out = run_with_stdin(&[], input);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0], r#"{"password":"[REDACTED]","user":"ann"}"#);
    assert!(!lines[1].contains("abc.def-123"), "{text}");
    assert_eq!(lines[2], "plain line");
}

#[test]
fn keep_and_extra_names() {
    let input = b"{\"pageToken\":\"cursor-1\",\"tenant\":\"acme\",\"token\":\"t\"}\n";
    // --redact and --keep, and the spellings of earlier versions.
    let spellings: &[&[&str]] = &[
        &["--keep", "pageToken", "--redact", "tenant"],
        &["--keep", "pageToken", "--name", "tenant"],
        &["--keep-name", "pageToken", "--redact-name", "tenant"],
    ];
    for args in spellings {
        let out = run_with_stdin(args, input);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let text = String::from_utf8(out.stdout).expect("utf-8");
        assert_eq!(
            text.trim_end(),
            r#"{"pageToken":"cursor-1","tenant":"[REDACTED]","token":"[REDACTED]"}"#,
            "{args:?}"
        );
    }
}

#[test]
fn unreadable_file_is_named_and_the_others_still_processed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good.log");
    std::fs::write(&good, "TOKEN=supersecretvalue\n").expect("write");
    let missing = dir.path().join("missing.log");
    let out = calltape()
        .arg("redact")
        .arg(&missing)
        .arg(&good)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("missing.log"))
        .collect();
    assert_eq!(errors.len(), 1, "one line naming the file: {stderr}");
    assert!(errors[0].contains("no such file"), "{stderr}");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(text, "TOKEN=[REDACTED]\n");
}

#[test]
fn invalid_utf8_is_passed_through_lossily_and_said_once() {
    let input = b"bad \xff byte password=hunter2\nagain \xfe\n";
    let out = run_with_stdin(&[], input);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("output is UTF-8");
    assert_eq!(
        text,
        "bad \u{FFFD} byte password=[REDACTED]\nagain \u{FFFD}\n"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("UTF-8").count(), 1, "{stderr}");
}

#[test]
fn a_line_longer_than_the_limit_is_redacted_in_pieces() {
    // 20 MiB of words with a credential near the start and one near the end of the single line.
    let mut line = String::from("start Bearer abc123XYZ789tok ");
    while line.len() < 20 * 1024 * 1024 {
        line.push_str("lorem ipsum dolor sit amet ");
    }
    line.push_str("end token=zyxwvutsrq\n");
    let out = run_with_stdin(&[], line.as_bytes());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(!text.contains("abc123XYZ789tok"));
    assert!(!text.contains("zyxwvutsrq"));
    assert!(
        text.ends_with("end token=[REDACTED]\n"),
        "{}",
        &text[text.len() - 60..]
    );
    assert_eq!(text.lines().count(), 1);
    assert!(text.len() > 20 * 1024 * 1024);
}

#[test]
fn a_secret_across_the_old_cut_of_a_line_over_16_mib_is_still_redacted() {
    // Before, a line over 16 MiB was cut after the last whitespace of its first 16 MiB + 1 bytes (or
    // at that byte, with none), and each piece redacted alone. Each row puts a secret across that cut:
    // (filler, the text before the cut, the secret after it, the parts of the secret that must go).
    const CUT: usize = 16 * 1024 * 1024 + 1;
    let cases: [(&str, &str, &str, &[&str]); 3] = [
        (
            "lorem ipsum ",
            "password: ",
            "Hunter2Secret9xQ",
            &["Hunter2Secret9xQ"],
        ),
        (
            "lorem ipsum ",
            "Authorization: Bearer ",
            "tok7Rq2LmX9vBn4ZpK8w",
            &["tok7Rq2LmX9vBn4ZpK8w"],
        ),
        // Minified JSON has no whitespace: the cut fell inside the token.
        (
            "{\"n\":1},",
            "{\"note\":\"sk-proj-abcdefghijk",
            "lmnopqrstuvwxyz0123456789\"}",
            &["abcdefghijk", "lmnopqrstuvwxyz0123456789"],
        ),
    ];
    for (filler, before, secret, parts) in cases {
        let mut line = filler.repeat((CUT - before.len()) / filler.len());
        line.push_str(&"x".repeat(CUT - before.len() - line.len()));
        line.push_str(before);
        assert_eq!(line.len(), CUT);
        line.push_str(secret);
        line.push_str(" end\n");
        let out = run_with_stdin(&[], line.as_bytes());
        assert_eq!(out.status.code(), Some(0), "{before}");
        let text = String::from_utf8(out.stdout).expect("utf-8");
        for part in parts {
            assert!(!text.contains(part), "{before}: {part} leaked");
        }
        assert!(text.contains("[REDACTED]"), "{before}");
        assert!(text.ends_with(" end\n"), "{before}");
        assert_eq!(text.lines().count(), 1, "{before}");
    }
}

#[test]
fn help_shows_an_example() {
    let out = calltape().args(["redact", "--help"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.contains("Examples:"), "{text}");
    assert!(text.contains("calltape redact server.log"), "{text}");
}

/// Cookie headers written by Python's own `http.cookies` (a date with a comma
/// in `expires`, attributes in its order) and a JSON log line whose `cookie`
/// member is a number: `calltape redact` leaves no cookie value and no
/// password, keeps the attributes, and gives the same text when run again.
#[test]
fn cookie_headers_from_python_lose_their_values_and_what_follows_them_is_still_read() {
    let script = r#"
import json
from http.cookies import SimpleCookie
c = SimpleCookie()
c["sid"] = "Zq8xW3vT9kL2mN7pHx4L"
c["sid"]["path"] = "/"
c["sid"]["expires"] = "Thu, 01 Jan 2026 00:00:00 GMT"
c["sid"]["httponly"] = True
c["sid"]["secure"] = True
c["theme"] = "Q7fK2xV9mP4rT8wL3zN6"
print(c.output())
print(c.output(attrs=[], header="Cookie:", sep=";"))
print(json.dumps({"cookie": -64, "note": "see postgres://app:Hx4Lm9Qw2Rt7Yp3K@db/app"}))
"#;
    let made = std::process::Command::new(crate::support::python())
        .args(["-c", script])
        .output()
        .expect("run python");
    assert!(made.status.success(), "{made:?}");
    let input = String::from_utf8(made.stdout).expect("utf-8");
    assert!(
        input.contains("Set-Cookie: sid=Zq8xW3vT9kL2mN7pHx4L"),
        "{input}"
    );

    let out = run_with_stdin(&[], input.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    for secret in [
        "Zq8xW3vT9kL2mN7pHx4L",
        "Q7fK2xV9mP4rT8wL3zN6",
        "Hx4Lm9Qw2Rt7Yp3K",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    for kept in [
        "expires=Thu, 01 Jan 2026 00:00:00 GMT",
        "HttpOnly",
        "Path=/",
        "postgres://",
    ] {
        assert!(text.contains(kept), "{kept} lost in {text}");
    }
    let again = run_with_stdin(&[], text.as_bytes());
    assert_eq!(String::from_utf8(again.stdout).expect("utf-8"), text);
}

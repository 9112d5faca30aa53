//! `calltape redact` on private keys that `ssh-keygen` and `openssl` make while the test runs: each
//! key alone (a file and stdin), in a log, and in JSON loses every line of its body, and the lines
//! around it stay.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::calltape;

/// How each key is made: its name, and the command line (`''` is an empty argument, `{out}` the key
/// file's path).
const KEYS: &[(&str, &str)] = &[
    ("OpenSSH Ed25519", "ssh-keygen -q -t ed25519 -N '' -f {out}"),
    ("OpenSSH RSA", "ssh-keygen -q -t rsa -b 2048 -N '' -f {out}"),
    ("OpenSSH ECDSA", "ssh-keygen -q -t ecdsa -N '' -f {out}"),
    (
        "OpenSSH Ed25519, passphrase",
        "ssh-keygen -q -t ed25519 -N correct-horse -f {out}",
    ),
    (
        "PKCS#1 RSA (ssh-keygen -m PEM)",
        "ssh-keygen -q -t rsa -b 2048 -m PEM -N '' -f {out}",
    ),
    (
        "PKCS#1 RSA, passphrase (ssh-keygen -m PEM)",
        "ssh-keygen -q -t rsa -b 2048 -m PEM -N correct-horse -f {out}",
    ),
    (
        "traditional EC (ssh-keygen -m PEM)",
        "ssh-keygen -q -t ecdsa -m PEM -N '' -f {out}",
    ),
    (
        "PKCS#8 ECDSA (ssh-keygen -m PKCS8)",
        "ssh-keygen -q -t ecdsa -m PKCS8 -N '' -f {out}",
    ),
    (
        "PKCS#8 RSA (openssl genpkey)",
        "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out {out}",
    ),
    (
        "PKCS#8 EC (openssl genpkey)",
        "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out {out}",
    ),
    (
        "PKCS#8 Ed25519 (openssl genpkey)",
        "openssl genpkey -algorithm ED25519 -out {out}",
    ),
    (
        "encrypted PKCS#8 RSA (openssl genpkey -aes-256-cbc)",
        "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -aes-256-cbc \
         -pass pass:correct-horse -out {out}",
    ),
    (
        "encrypted PKCS#8 EC (openssl genpkey -aes-256-cbc)",
        "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -aes-256-cbc \
         -pass pass:correct-horse -out {out}",
    ),
    (
        "traditional RSA (openssl genrsa -traditional)",
        "openssl genrsa -traditional -out {out} 2048",
    ),
    (
        "traditional RSA, passphrase (openssl genrsa -traditional -aes256)",
        "openssl genrsa -traditional -aes256 -passout pass:correct-horse -out {out} 2048",
    ),
    (
        "traditional EC (openssl ecparam -genkey)",
        "openssl ecparam -name prime256v1 -genkey -noout -out {out}",
    ),
];

/// The lines a log holds around the key.
const BEFORE: &str = "2026-05-01T10:00:00Z INFO deploy: loading the signing key from /etc/app/key";
const AFTER: &str = "2026-05-01T10:00:01Z INFO deploy: key loaded, listening on 127.0.0.1:8443";

/// Makes the key file `path` as the command line `command` says.
fn make_key(path: &Path, command: &str) -> String {
    let out = path.to_str().expect("a UTF-8 path");
    let mut words = command.split_whitespace().map(|word| match word {
        "''" => String::new(),
        word => word.replace("{out}", out),
    });
    let program = words.next().expect("a program");
    let args: Vec<String> = words.collect();
    let made = Command::new(&program)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program} is needed: {e}"));
    assert!(
        made.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    std::fs::read_to_string(path).expect("the key file")
}

/// The lines between the key's BEGIN and END lines.
fn body(pem: &str) -> Vec<&str> {
    let lines: Vec<&str> = pem.lines().collect();
    let begin = lines
        .iter()
        .position(|l| l.starts_with("-----BEGIN "))
        .expect("a BEGIN line");
    let end = lines
        .iter()
        .position(|l| l.starts_with("-----END "))
        .expect("an END line");
    let body: Vec<&str> = lines[begin + 1..end]
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(!body.is_empty(), "{pem}");
    body
}

/// Fails when `out` holds a line of `body`, or any 16 characters in a row of one.
fn assert_no_body(what: &str, out: &str, body: &[&str]) {
    for line in body {
        assert!(
            !out.contains(line),
            "{what}: the body line {line:?} survived:\n{out}"
        );
        for run in line.as_bytes().windows(16) {
            let run = std::str::from_utf8(run).expect("ASCII");
            assert!(!out.contains(run), "{what}: {run:?} survived:\n{out}");
        }
    }
}

/// `calltape redact` with `input` as a file argument, or on stdin.
fn redact(dir: &Path, input: &str, stdin: bool) -> Output {
    if stdin {
        return crate::redact::run_with_stdin(&[], input.as_bytes());
    }
    let file = dir.join("input");
    std::fs::write(&file, input).expect("write the input");
    calltape()
        .arg("redact")
        .arg(&file)
        .output()
        .expect("run calltape redact")
}

#[test]
fn no_line_of_a_generated_private_key_survives_alone_in_a_log_or_in_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (i, (name, command)) in KEYS.iter().enumerate() {
        let pem = make_key(&dir.path().join(format!("key{i}")), command);
        let body = body(&pem);
        let log = format!("{BEFORE}\n{pem}{AFTER}\n");
        let jsonl = [
            serde_json::json!({"level": "info", "msg": BEFORE}).to_string(),
            serde_json::json!({"level": "debug", "msg": "key", "pem": pem, "after": AFTER})
                .to_string(),
            serde_json::json!({"level": "info", "msg": AFTER}).to_string(),
        ]
        .join("\n")
            + "\n";
        let document = serde_json::to_string_pretty(
            &serde_json::json!({"before": BEFORE, "signing": {"pem": pem}, "after": AFTER}),
        )
        .expect("JSON");
        for stdin in [false, true] {
            let how = if stdin { "on stdin" } else { "as a file" };
            let cases = [
                ("alone", &pem),
                ("in a log", &log),
                ("in JSON lines", &jsonl),
                ("in a JSON document", &document),
            ];
            for (context, input) in cases {
                let what = format!("{name}, {context}, {how}");
                let out = redact(dir.path(), input, stdin);
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{what}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let text = String::from_utf8(out.stdout).expect("UTF-8 out");
                assert_no_body(&what, &text, &body);
                assert!(text.contains("[REDACTED]"), "{what}: {text}");
                match context {
                    "in a log" => {
                        let lines: Vec<&str> = text.lines().collect();
                        assert_eq!(lines.first(), Some(&BEFORE), "{what}: {text}");
                        assert_eq!(lines.last(), Some(&AFTER), "{what}: {text}");
                    }
                    "in JSON lines" => {
                        // Each line stays one line of valid JSON, the others as they were.
                        let lines: Vec<serde_json::Value> = text
                            .lines()
                            .map(|l| serde_json::from_str(l).expect("a JSON line"))
                            .collect();
                        assert_eq!(lines.len(), 3, "{what}: {text}");
                        assert_eq!(lines[0]["msg"], BEFORE, "{what}");
                        assert_eq!(lines[1]["after"], AFTER, "{what}");
                        assert_eq!(lines[2]["msg"], AFTER, "{what}");
                    }
                    "in a JSON document" => {
                        let doc: serde_json::Value =
                            serde_json::from_str(&text).expect("valid JSON out");
                        assert_eq!(doc["before"], BEFORE, "{what}");
                        assert_eq!(doc["after"], AFTER, "{what}");
                    }
                    _ => {}
                }
            }
        }
    }
}

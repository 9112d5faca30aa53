//! Texts past the writer's line limit (64 KiB): `redact_text` applies the
//! bound the writer applies, so the two agree at any size, and a secret that
//! straddles the bound or a cut of a long line is still hidden by both.
//!
//! One row per case: `(what, head, unit, fill, tail, gone, kept)`. The text is
//! `head`, then `unit` repeated to `fill` bytes, then `tail`; every string of
//! `gone` must be absent from the output, every string of `kept` present.
//! Adding a case is adding a row.

use std::io::Write;

use calltape_redact::{RedactingWriter, Redactor};

type Row = (
    &'static str,
    &'static str,
    &'static str,
    usize,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

/// Where the writer cuts a line of `a ` repeated, and where a held group
/// reaches the limit: a secret placed around it straddles the cut.
const CUT: usize = 64 * 1024;

const ROWS: &[Row] = &[
    // ---- (a) a construct held open for more than the limit ----
    (
        "a key block over more lines than the limit holds",
        "start\n-----BEGIN RSA PRIVATE KEY-----\n",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n",
        100_000,
        "TAILOFTHEKEYBODY==\n-----END RSA PRIVATE KEY----- done\nkept after the key\n",
        &["MIIEowIBAAKCAQEA", "TAILOFTHEKEYBODY"],
        &["start\n", " done\nkept after the key\n"],
    ),
    (
        "a YAML block over more lines than the limit holds",
        "config:\n  api_token: |\n",
        "    c2VjcmV0LWxpbmU=\n",
        100_000,
        "    TAILOFTHEBLOCK\n  user: kept\n",
        &["c2VjcmV0LWxpbmU", "TAILOFTHEBLOCK"],
        &["config:\n  api_token: ", "\n  user: kept\n"],
    ),
    (
        "a pair's name, then blank lines past the limit, then its value",
        "env:\n  - name: DB_PASSWORD\n",
        "\n",
        100_000,
        "    value: hunter2-past-the-bound\n  - name: kept\n",
        &["hunter2-past-the-bound"],
        &["- name: DB_PASSWORD\n", "  - name: kept\n"],
    ),
    (
        "an element without a closing tag, then more lines than the limit",
        "<password>\nhunter2-in-the-element\n",
        "log line of no secret\n",
        100_000,
        "last line kept\n",
        &["hunter2-in-the-element"],
        &[
            "log line of no secret\nlog line of no secret\n",
            "last line kept\n",
        ],
    ),
    (
        "an element held open over the limit, then one closed within it",
        "<password>\nhunter2-in-the-element\n",
        "log line\n",
        100_000,
        "<apiToken>\nsecond-secret\n</apiToken>\nkept\n",
        &["hunter2-in-the-element", "second-secret"],
        &["log line\nlog line\n", "kept\n"],
    ),
    (
        "a pair's name on every line, past the limit",
        "",
        "name: token\n",
        100_000,
        "value: pw-after-the-last-name\n",
        &["pw-after-the-last-name"],
        &["name: token\nname: token\n"],
    ),
    // ---- (b) a line longer than the limit, a secret across a cut ----
    (
        "a line of 1 MiB of words stays as it is",
        "",
        "word ",
        1 << 20,
        "\n",
        &[],
        &["word word word word"],
    ),
    (
        "a JWT across the first cut of a long line",
        "",
        "a ",
        CUT - 40,
        concat!(
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlc2lnbmF0dXJlc2ln",
            " b b b\n"
        ),
        &["eyJzdWIiOiIxMjM0NTY3ODkwIn0", "c2lnbmF0dXJl"],
        &[" b b b\n"],
    ),
    (
        "a provider token across the first cut of a long line",
        "",
        "a ",
        CUT - 20,
        "ghp_0123456789abcdefghijklmnopqrstuvwxyz b b\n",
        &["0123456789abcdefghij"],
        &[" b b\n"],
    ),
    (
        "a long Authorization value across the first cut of a long line",
        "",
        "a ",
        CUT - 120,
        concat!(
            "Authorization: Digest username=\"bob\", realm=\"api\", nonce=\"dcd98b7102dd2f0e\", ",
            "uri=\"/v1\", response=\"6629fae49393a05397450978507c4ef1\", opaque=\"5ccc069c403ebaf9\"",
            "\nnext line kept\n"
        ),
        &[
            "6629fae49393a05397450978507c4ef1",
            "5ccc069c403ebaf9",
            "dcd98b7102dd2f0e",
        ],
        &["Authorization: Digest ", "\nnext line kept\n"],
    ),
    (
        "a Bearer credential across the first cut of a long line",
        "",
        "a ",
        CUT - 24,
        "Authorization: Bearer abc123def456ghi789jkl b b\n",
        &["abc123def456ghi789jkl"],
        &["Authorization: Bearer ", " b b\n"],
    ),
    (
        "a key block in a JSON string across the first cut of a long line",
        "{\"note\": \"",
        "a ",
        CUT - 60,
        concat!(
            "-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\\n",
            "TAILOFTHEKEYBODY==\\n-----END RSA PRIVATE KEY-----\\n\", \"b\": 1}\n"
        ),
        &["MIIEowIBAAKCAQEA", "TAILOFTHEKEYBODY"],
        &["\"b\": 1}\n"],
    ),
    (
        "a quoted password with blanks across the first cut of a long line",
        "",
        "a ",
        CUT - 30,
        "password=\"correct horse battery staple\" b b\n",
        &["horse", "battery", "staple"],
        &[" b b\n"],
    ),
    (
        "a name in one piece of a long line, its value in the next",
        "",
        "a ",
        CUT - 12,
        "api_key:                    k3y-in-the-next-piece b b\n",
        &["k3y-in-the-next-piece"],
        &[" b b\n"],
    ),
    (
        "a credential in a word longer than half the limit",
        "",
        "x",
        CUT - 10,
        "&access_token=s3cr3t-across-the-cut&y=1 b b\n",
        &["s3cr3t-across-the-cut"],
        &[" b b\n"],
    ),
    (
        "an unterminated quote of 200 KiB",
        "password=\"",
        "ab ",
        200 << 10,
        "\nnext line kept\n",
        &["ab ab"],
        &["password=\"", "\nnext line kept\n"],
    ),
];

fn text_of(row: &Row) -> String {
    let (_, head, unit, fill, tail, _, _) = *row;
    let mut text = String::with_capacity(head.len() + fill + tail.len() + unit.len());
    text.push_str(head);
    while text.len() - head.len() < fill {
        text.push_str(unit);
    }
    text.push_str(tail);
    text
}

/// `text` written through a default `RedactingWriter` in chunks of `chunk`
/// bytes (cut anywhere, even inside a character), then flushed.
pub(crate) fn written(text: &str, chunk: usize) -> String {
    let mut writer = RedactingWriter::new(Redactor::new(), Vec::new());
    for piece in text.as_bytes().chunks(chunk) {
        writer.write_all(piece).expect("writing to a Vec");
    }
    writer.flush().expect("flushing a Vec");
    String::from_utf8(writer.get_ref().clone()).expect("utf-8")
}

#[test]
fn every_row_holds() {
    let redactor = Redactor::new();
    let mut failures = Vec::new();
    for row in ROWS {
        let (what, .., gone, kept) = *row;
        let text = text_of(row);
        let out = redactor.redact_text(&text);
        for secret in gone {
            if out.contains(secret) {
                failures.push(format!("{what}: {secret:?} leaked"));
            }
        }
        for keep in kept {
            if !out.contains(keep) {
                failures.push(format!("{what}: {keep:?} was not kept"));
            }
        }
        for chunk in [text.len(), 4096, 777] {
            if written(&text, chunk) != out {
                failures.push(format!("{what}: the writer (writes of {chunk}) differs"));
            }
        }
        if redactor.redact_text(&out) != out {
            failures.push(format!("{what}: redacting again changes the output"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_table_covers_both_bounds() {
    let texts: Vec<String> = ROWS.iter().map(text_of).collect();
    let long_line = |t: &String| t.split('\n').any(|l| l.len() > CUT);
    assert!(texts.iter().filter(|t| long_line(t)).count() >= 5);
    assert!(
        texts
            .iter()
            .filter(|t| !long_line(t) && t.len() > CUT)
            .count()
            >= 5
    );
}

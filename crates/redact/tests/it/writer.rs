//! The redacting writer.

use std::io::Write;
use std::sync::{Arc, Mutex};

use calltape_redact::{Gate, KnownSecrets, RedactingWriter, Redactor, RefusedLines};

fn written(f: impl FnOnce(&mut RedactingWriter<&mut Vec<u8>>)) -> String {
    let mut out = Vec::new();
    {
        let mut w = RedactingWriter::new(Redactor::new(), &mut out);
        f(&mut w);
    }
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn complete_lines_are_redacted() {
    let out = written(|w| {
        w.write_all(b"GET /x?access_token=abc HTTP/1.1\n{\"password\":\"x\"}\r\nplain\n")
            .expect("write");
    });
    assert_eq!(
        out,
        "GET /x?access_token=[REDACTED] HTTP/1.1\n{\"password\":\"[REDACTED]\"}\r\nplain\n"
    );
}

#[test]
fn a_line_split_across_writes_waits_for_its_end() {
    let mut out = Vec::new();
    let mut w = RedactingWriter::new(Redactor::new(), &mut out);
    w.write_all(b"Authorization: Bea").expect("write");
    w.write_all(b"rer abc123").expect("write");
    assert!(
        w.get_ref().is_empty(),
        "nothing is written before the line ends"
    );
    w.write_all(b"def\nnext").expect("write");
    assert_eq!(
        w.get_ref().as_slice(),
        b"Authorization: Bearer [REDACTED]\n"
    );
    w.flush().expect("flush");
    assert_eq!(
        w.get_ref().as_slice(),
        b"Authorization: Bearer [REDACTED]\nnext"
    );
    drop(w);
}

#[test]
fn flush_then_continuation_does_not_leak_the_rest_of_a_secret() {
    let out = written(|w| {
        w.write_all(b"token=abc").expect("write");
        w.flush().expect("flush");
        w.write_all(b"def ghi\n").expect("write");
    });
    assert_eq!(out, "token=[REDACTED] ghi\n");
}

#[test]
fn drop_writes_the_partial_line() {
    let out = written(|w| w.write_all(b"password=hunter2").expect("write"));
    assert_eq!(out, "password=[REDACTED]");
}

#[test]
fn long_lines_are_redacted_in_bounded_chunks() {
    let secret = "S".repeat(5000);
    let mut line = String::new();
    for i in 0..200 {
        line.push_str(&format!("word{i} "));
        if i % 50 == 0 {
            line.push_str("password: ");
            line.push_str(&secret);
            line.push(' ');
            line.push_str("Authorization: Bearer abc123def ");
        }
    }
    line.push('\n');
    let mut out = Vec::new();
    {
        let mut w = RedactingWriter::new(Redactor::new(), &mut out).with_line_limit(1024);
        for piece in line.as_bytes().chunks(100) {
            w.write_all(piece).expect("write");
        }
    }
    let out = String::from_utf8(out).expect("utf-8");
    assert!(!out.contains("SSS"), "a piece of a long secret leaked");
    assert!(!out.contains("abc123"), "a bearer token leaked");
    assert!(out.contains("word199 \n"));
    assert!(out.contains("word0 password: [REDACTED]"));
}

#[test]
fn a_name_and_its_value_in_different_chunks_are_still_found() {
    // Whitespace-cut chunks can end between a name and its value.
    let mut text = "x ".repeat(200);
    text.push_str("password:      hunter2 ");
    text.push_str(&"y ".repeat(300));
    text.push('\n');
    for limit in [256, 300, 411, 420, 430, 512] {
        let mut out = Vec::new();
        {
            let mut w = RedactingWriter::new(Redactor::new(), &mut out).with_line_limit(limit);
            w.write_all(text.as_bytes()).expect("write");
        }
        let out = String::from_utf8(out).expect("utf-8");
        assert!(!out.contains("hunter2"), "limit {limit}: {out}");
        assert_eq!(
            out.len(),
            text.len() - "hunter2".len() + "[REDACTED]".len(),
            "limit {limit}"
        );
    }
}

#[test]
fn invalid_utf8_is_passed_lossily() {
    let out = written(|w| w.write_all(b"caf\xe9 token=abc\n").expect("write"));
    assert_eq!(out, "caf\u{fffd} token=[REDACTED]\n");
}

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn tracing_output_never_carries_a_credential() {
    let sink = Shared::default();
    let redactor = Redactor::new();
    let make = {
        let sink = sink.clone();
        move || RedactingWriter::new(redactor.clone(), sink.clone())
    };
    let subscriber = tracing_subscriber::fmt()
        .with_writer(make)
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!(
            api_key = "sk-proj-abcdefghijklmnopqrstuvwx",
            "calling upstream"
        );
        tracing::warn!("retry with Authorization: Bearer abc123def456");
    });
    let logged = String::from_utf8(sink.0.lock().expect("lock").clone()).expect("utf-8");
    assert!(logged.contains("calling upstream"), "{logged}");
    assert!(logged.contains("api_key=\"[REDACTED]\""), "{logged}");
    assert!(logged.contains("Bearer [REDACTED]"), "{logged}");
    assert!(
        !logged.contains("abcdefghijklmnopqrstuvwx") && !logged.contains("abc123def456"),
        "{logged}"
    );
}

#[test]
fn a_private_key_written_line_by_line_is_hidden_whole() {
    let text = "loading key\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyu\r\nKEYBODYLINE2==\n-----END RSA PRIVATE KEY----- loaded\ndone\n";
    let out = written(|w| {
        for line in text.split_inclusive('\n') {
            w.write_all(line.as_bytes()).expect("write");
        }
    });
    assert!(
        !out.contains("MIIE") && !out.contains("KEYBODY"),
        "a line of the key leaked: {out:?}"
    );
    assert_eq!(out, Redactor::new().redact_text(text));
    // A key block that never ends hides every later line, up to the flush;
    // the line break that ends the text stays.
    let out = written(|w| {
        w.write_all(b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\nabc\n")
            .expect("write");
    });
    assert_eq!(out, "[REDACTED]\n");
    let text =
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIAbc\n-----END EC PRIVATE KEY----- password=x";
    let out = written(|w| w.write_all(text.as_bytes()).expect("write"));
    assert_eq!(out, Redactor::new().redact_text(text));
    assert_eq!(out, "[REDACTED] password=[REDACTED]");
}

#[test]
fn a_value_on_the_line_after_its_name_is_hidden() {
    // Each line is scanned with the end of the line before it, so the
    // multi-line forms read as they do in the whole text.
    let text = "<password>\n   hunter2\n</password>\nauth:\n  api_token: |\n    s3cr3t\n  user: bob\nenv:\n  - name: DB_PASSWORD\n    value: pw123\n";
    let out = written(|w| {
        for line in text.split_inclusive('\n') {
            w.write_all(line.as_bytes()).expect("write");
        }
    });
    for secret in ["hunter2", "s3cr3t", "pw123"] {
        assert!(!out.contains(secret), "{secret} leaked: {out:?}");
    }
    assert_eq!(out, Redactor::new().redact_text(text));
    // A JSON line is still read on its own, as JSON.
    let out = written(|w| {
        w.write_all(b"name: token\n{\"password\": {\"a\": 1}}\n")
            .expect("write")
    });
    assert_eq!(out, "name: token\n{\"password\": \"[REDACTED]\"}\n");
}

/// Texts whose constructs span lines, or that look as if they might: the
/// writer must give what `redact_text` gives for the whole text, however the
/// text is cut into writes.
const WHOLE_TEXTS: &[&str] = &[
    // An element whose value is on the next line, then another element
    // opened on the same line as text that follows.
    ">J\n\u{1e}a<Jetoken>J\0\0\0>J\n\u{1e}a<Jetoken>J\0\0",
    "<apiToken>\n  hunter2\n\n</apiToken>\nafter\n",
    "<apiToken>abc\ndef\nghi</apiToken> ok\n",
    "<password>first line\nsecond line\n",
    // A YAML block, with a blank line inside it, and the key after it.
    "auth:\n  api_token: |\n    s3cr3t\n\n    more\n  user: bob\nnext: line\n",
    "api_token: >-\n  folded\n  value\n",
    // A pair whose value comes lines later.
    "env:\n  - name: DB_PASSWORD\n\n    value: pw123\n  - name: HOME\n    value: /root\n",
    "key: X-Api-Key\n\nvalue: abc123\n",
    // A private key block, alone and inside a value.
    "key follows\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\r\nBODY==\n-----END RSA PRIVATE KEY----- password=x\ndone\n",
    "secret: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n",
    // A mysql command whose line an element's value runs over.
    "mysql <password>\nx\n</p> -phunter2\n",
    // Lines that open nothing.
    "plain line\nAuthorization: Bearer abc123def\n\npassword=\"open quote\nnext\n",
];

#[test]
fn the_writer_gives_what_redact_text_gives_on_the_whole_text() {
    let redactor = Redactor::new();
    for text in WHOLE_TEXTS {
        let expected = redactor.redact_text(text);
        for size in [1, 2, 3, 7, 64, text.len()] {
            let out = written(|w| {
                for piece in text.as_bytes().chunks(size) {
                    w.write_all(piece).expect("write");
                }
            });
            assert_eq!(out, expected, "writes of {size} bytes of {text:?}");
        }
    }
}

#[test]
fn a_line_is_written_when_no_construct_is_open_at_its_end() {
    let mut out = Vec::new();
    let mut w = RedactingWriter::new(Redactor::new(), &mut out);
    w.write_all(b"token=abc\n").expect("write");
    assert_eq!(w.get_ref().as_slice(), b"token=[REDACTED]\n");
    // The element's value may still come: the line is held.
    w.write_all(b"<apiToken>\n").expect("write");
    assert_eq!(w.get_ref().as_slice(), b"token=[REDACTED]\n");
    w.write_all(b"hunter2\n</apiToken>\n").expect("write");
    assert_eq!(
        w.get_ref().as_slice(),
        b"token=[REDACTED]\n<apiToken>\n[REDACTED]\n</apiToken>\n"
    );
    drop(w);
}

#[test]
fn held_lines_are_written_past_the_carry_bound() {
    // An element never closed holds lines up to the line limit, then they
    // are written out as the text rules read them then, and the lines after
    // them as they come.
    let mut text = String::from("<apiToken>\n");
    for i in 0..100 {
        text.push_str(&format!("line {i}\n"));
    }
    text.push_str("</apiToken>\n");
    let mut out = Vec::new();
    let mut w = RedactingWriter::new(Redactor::new(), &mut out).with_line_limit(256);
    w.write_all(text.as_bytes()).expect("write");
    let written = String::from_utf8_lossy(w.get_ref()).into_owned();
    assert!(
        written.starts_with("<apiToken>\n[REDACTED]\nline 1\n"),
        "{written}"
    );
    assert!(written.ends_with("line 99\n</apiToken>\n"), "{written}");
    // The whole text, read at once, hides every line up to the closing tag.
    let whole = Redactor::new().redact_text(&text);
    assert_eq!(whole, "<apiToken>\n[REDACTED]\n</apiToken>\n");
    drop(w);
}

#[test]
fn json_lines_among_text_lines_read_the_same_in_the_writer_and_redact_text() {
    // A line that looks like JSON is read on its own, as JSON, by both; the
    // lines around it by the text rules, together. A nested object under a
    // credential name then goes whole, a key block left open before a JSON
    // line still hides its lines up to its end, and a last line without its
    // line break reads as a complete one.
    let cases = [
        (
            "start\n{\"apiKey\": {\"id\": 7}, \"n\": 1}\npassword=x done\n",
            "start\n{\"apiKey\": \"[REDACTED]\", \"n\": 1}\npassword=[REDACTED] done\n",
        ),
        (
            "<password>\n{\"token\": [1, 2]}\r\nend</password>\n",
            "<password>\n{\"token\": \"[REDACTED]\"}\r\nend</password>\n",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n[1]\nMIIE\n-----END RSA PRIVATE KEY----- after\n",
            "[REDACTED]\n[1]\n after\n",
        ),
        (
            "note\n{\"secret\": {\"a\": 1}}",
            "note\n{\"secret\": \"[REDACTED]\"}",
        ),
    ];
    let redactor = Redactor::new();
    for (text, expected) in cases {
        assert_eq!(
            redactor.redact_text(text),
            expected,
            "redact_text of {text:?}"
        );
        for size in [1, 3, 7, text.len()] {
            let out = written(|w| {
                for piece in text.as_bytes().chunks(size) {
                    w.write_all(piece).expect("write");
                }
            });
            assert_eq!(
                out, expected,
                "the writer, in pieces of {size}, on {text:?}"
            );
        }
    }
}

/// What a writer with these limits (else the defaults) writes for `text`, written whole.
fn through(line: Option<usize>, hold: Option<usize>, text: &str) -> String {
    let mut out = Vec::new();
    {
        let mut w = RedactingWriter::new(Redactor::new(), &mut out);
        if let Some(line) = line {
            w = w.with_line_limit(line);
        }
        if let Some(hold) = hold {
            w = w.with_hold_limit(hold);
        }
        w.write_all(text.as_bytes()).expect("write");
    }
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn a_long_line_limit_with_the_default_hold_limit_reads_long_lines_whole_and_holds_as_redact_text() {
    let (line_limit, hold_limit) = (Some(1 << 20), Some(64 << 10));
    // A JSON line of 200 KiB is read whole, as JSON: the object under a credential name goes.
    let line = format!(
        "{{\"apiKey\": {{\"id\": 7}}, \"pad\": \"{}\"}}\n",
        "x ".repeat(100 << 10)
    );
    let out = through(line_limit, hold_limit, &line);
    let value: serde_json::Value = serde_json::from_str(&out).expect("one line of JSON");
    assert_eq!(value["apiKey"], "[REDACTED]");
    // Read in chunks of the default limit, as text, the object stays.
    assert!(through(None, None, &line).contains("\"id\": 7"));

    // An element held over 100 KiB of lines: settled after 64 KiB, as `redact_text` reads it,
    // where the line limit alone would hold it to its end.
    let mut held = String::from("<password>\n");
    for i in 0..10_000 {
        held.push_str(&format!("line {i}\n"));
    }
    held.push_str("</password>\nafter\n");
    let expected = Redactor::new().redact_text(&held);
    assert_eq!(through(line_limit, hold_limit, &held), expected);
    assert_ne!(
        through(line_limit, None, &held),
        expected,
        "the hold limit changes nothing here"
    );
}

#[test]
fn known_values_added_after_the_writer_was_made_are_hidden_wherever_the_writes_cut_them() {
    let known = KnownSecrets::new();
    let mut out = Vec::new();
    {
        let mut w = RedactingWriter::new(Redactor::new(), &mut out).hiding(known.clone());
        w.write_all(b"before: tok_test_4eC39HqLy\n").expect("write");
        // Learnt by the program after the writer was made, as `calltape replay --fill` does.
        known.add("CARD", "tok_test_4eC39HqLy");
        for piece in [
            &b"upstream said: {\"error\": \"card tok_te"[..],
            b"st_4eC39",
            b"HqLy declined\"}\n",
        ] {
            w.write_all(piece).expect("write");
        }
        w.write_all(b"json: \"quote\\\"d-secret\" html: quote&quot;d-secret\n")
            .expect("write");
        known.add("QUOTED", "quote\"d-secret");
        w.write_all(b"json: \"quote\\\"d-secret\" html: quote&quot;d-secret\n")
            .expect("write");
    }
    let out = String::from_utf8(out).expect("utf-8");
    assert_eq!(
        out,
        concat!(
            "before: tok_test_4eC39HqLy\n",
            "upstream said: {\"error\": \"card [REDACTED] declined\"}\n",
            "json: \"quote\\\"d-secret\" html: quote&quot;d-secret\n",
            "json: \"[REDACTED]\" html: [REDACTED]\n",
        )
    );
}

#[test]
fn the_writer_says_whether_it_replaced_bytes_that_are_not_utf8() {
    for (input, replaced) in [
        (&b"caf\xc3\xa9 token=abc\n"[..], false),
        (b"caf\xe9 token=abc\n", true),
        (b"partial line \xff", true),
        (b"<password>\nx\xfe\n</password>\n", true),
    ] {
        let mut out = Vec::new();
        let mut w = RedactingWriter::new(Redactor::new(), &mut out);
        w.write_all(input).expect("write");
        w.flush().expect("flush");
        assert_eq!(w.replaced_invalid_utf8(), replaced, "{input:?}");
    }
}

#[test]
fn a_gated_writer_refuses_a_line_that_holds_a_known_value_and_counts_it() {
    let known = KnownSecrets::new();
    known.add("CARD", "tok_test_4eC39HqLy");
    let refused = RefusedLines::new();
    let gate = Gate::new().watch(&known);
    let mut out = Vec::new();
    {
        // Without hiding, the gate is what stops the known value.
        let mut w = RedactingWriter::new(Redactor::new(), &mut out).gated(gate, refused.clone());
        w.write_all(b"clean line\n").expect("write");
        w.write_all(b"card tok_test_4eC39HqLy\n").expect("write");
        w.write_all(b"{\"ok\": 1}\nlast").expect("write");
    }
    let out = String::from_utf8(out).expect("utf-8");
    assert!(
        !out.contains("tok_test") && !out.contains("ghp_0123"),
        "{out}"
    );
    assert!(
        out.starts_with("clean line\n[a line that held the value of CARD was not written]\n"),
        "{out}"
    );
    assert!(out.ends_with("last"), "{out}");
    assert_eq!(refused.count(), 1, "{out}");
}

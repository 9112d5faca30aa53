//! The MCP vocabulary is spelled once, in `calltape_stdio_bridge::vocab`: this walks the source of
//! every crate of the workspace and fails on a copy outside it — a word the module spells (a method or
//! header name, a protocol version) as a whole string literal, a `_meta` key or the modern protocol
//! version as a string literal, a JSON-RPC or MCP error code as a number, or an error answer built by
//! hand. Tests may spell the words out (they check what goes on the wire): files under `tests/`,
//! files named `tests.rs` and everything after a `#[cfg(test)]` are not read.

use std::{
    fs,
    path::{Path, PathBuf},
};

use crate::support::source::skip_trivia;

/// The module that holds the vocabulary, relative to the workspace's `crates/`.
const VOCABULARY: &str = "stdio-bridge/src/vocab.rs";

/// The codes that must be named, not written: JSON-RPC's and those MCP defines. (-32002 is the
/// bridge's own `BUFFER_FULL` as well as the handshake era's "resource not found", so it is not
/// here.)
const CODES: &[&str] = &[
    "-32700", "-32600", "-32601", "-32602", "-32603", "-32020", "-32021", "-32022",
];

/// One source file as the guard reads it: its code without comments and whitespace, with string
/// literals kept (between `"`), and for each byte whether it is inside a string and on which line.
struct Lexed {
    flat: Vec<u8>,
    in_string: Vec<bool>,
    line: Vec<usize>,
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Reads `src` up to its first `#[cfg(test)]`. Enough of Rust's lexical rules for this check:
/// line and nested block comments, strings with escapes, raw strings, char literals and lifetimes.
fn lex(src: &str) -> Lexed {
    let s = src.as_bytes();
    let mut out = Lexed {
        flat: Vec::new(),
        in_string: Vec::new(),
        line: Vec::new(),
    };
    let mut line = 1;
    let mut i = 0;
    let push = |out: &mut Lexed, b: u8, string: bool, line: usize| {
        out.flat.push(b);
        out.in_string.push(string);
        out.line.push(line);
    };
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if let Some(end) = skip_trivia(s, i, &mut line) {
            i = end;
        } else if c == b'r'
            && (i == 0
                || !is_ident(s[i - 1])
                || (s[i - 1] == b'b' && (i < 2 || !is_ident(s[i - 2]))))
            && matches!(next, Some(b'"' | b'#'))
        {
            let hashes = s[i + 1..].iter().take_while(|b| **b == b'#').count();
            if s.get(i + 1 + hashes) != Some(&b'"') {
                push(&mut out, c, false, line);
                i += 1;
                continue;
            }
            let mut end = vec![b'"'];
            end.extend(std::iter::repeat_n(b'#', hashes));
            i += 2 + hashes;
            push(&mut out, b'"', false, line);
            while i < s.len() && !s[i..].starts_with(&end) {
                line += usize::from(s[i] == b'\n');
                push(&mut out, s[i], true, line);
                i += 1;
            }
            push(&mut out, b'"', false, line);
            i += end.len();
        } else if c == b'"' {
            push(&mut out, b'"', false, line);
            i += 1;
            while i < s.len() && s[i] != b'"' {
                if s[i] == b'\\' {
                    push(&mut out, s[i], true, line);
                    i += 1;
                }
                line += usize::from(s[i] == b'\n');
                push(&mut out, s[i], true, line);
                i += 1;
            }
            push(&mut out, b'"', false, line);
            i += 1;
        } else if c == b'\'' {
            // A char literal ('a', '\n', '\u{7f}'), or a lifetime ('a).
            if next == Some(b'\\') {
                let close = s[i + 3..].iter().position(|b| *b == b'\'').unwrap_or(0);
                i += close + 4;
            } else if s.get(i + 2) == Some(&b'\'') {
                i += 3;
            } else {
                push(&mut out, c, false, line);
                i += 1;
            }
        } else {
            push(&mut out, c, false, line);
            i += 1;
            if out.flat.ends_with(b"#[cfg(test)]") {
                break;
            }
        }
    }
    out
}

/// The copies of the vocabulary in one file, as `line: what`.
/// The words the vocabulary module spells (`pub const NAME: &str = "word";`): method names, header
/// names, protocol versions and `_meta` keys, each with its constant's name.
fn words(vocabulary: &str) -> Vec<(String, String)> {
    vocabulary
        .lines()
        .filter_map(|line| line.strip_prefix("pub const "))
        .filter_map(|rest| {
            let (name, rest) = rest.split_once(": &str = \"")?;
            let (word, _) = rest.split_once("\";")?;
            Some((name.to_owned(), word.to_owned()))
        })
        .collect()
}

fn copies(src: &str, words: &[(String, String)]) -> Vec<String> {
    let lexed = lex(src);
    let flat = &lexed.flat;
    let mut found = Vec::new();
    let code_at = |at: usize, needle: &[u8]| {
        flat[at..].starts_with(needle) && (at..at + needle.len()).all(|k| !lexed.in_string[k])
    };
    for at in 0..flat.len() {
        let opens_string =
            flat[at] == b'"' && !lexed.in_string[at] && lexed.in_string.get(at + 1) == Some(&true);
        if opens_string {
            let rest = &flat[at + 1..];
            let len = lexed.in_string[at + 1..].iter().take_while(|s| **s).count();
            let content = &rest[..len];
            // A serde attribute takes only a literal; the scanner beside it reads the constant.
            let serde_rename = flat[..at].ends_with(b"rename=");
            if content.starts_with(b"io.modelcontextprotocol/") && !serde_rename {
                found.push(format!("{}: a `_meta` key as a literal", lexed.line[at]));
            }
            if content == b"2026-07-28" {
                found.push(format!(
                    "{}: the modern protocol version as a literal",
                    lexed.line[at]
                ));
            }
            if let Some((name, _)) = words
                .iter()
                .find(|(_, word)| content == word.as_bytes() && !serde_rename)
                .filter(|_| !content.starts_with(b"io.modelcontextprotocol/"))
            {
                found.push(format!(
                    "{}: {:?} as a literal (vocab::{name})",
                    lexed.line[at],
                    String::from_utf8_lossy(content)
                ));
            }
            if content == b"error" && flat[at + 1 + len..].starts_with(b"\":{\"code\"") {
                found.push(format!("{}: an error answer built by hand", lexed.line[at]));
            }
        }
        for code in CODES {
            let before = at.checked_sub(1).map(|k| flat[k]);
            let after = flat.get(at + code.len()).copied();
            if code_at(at, code.as_bytes())
                && !before.is_some_and(|b| is_ident(b) && !lexed.in_string[at - 1])
                && !after.is_some_and(|b| b.is_ascii_digit())
            {
                found.push(format!(
                    "{}: the error code {code} as a number",
                    lexed.line[at]
                ));
            }
        }
    }
    found
}

/// The Rust files the guard reads under `dir`: not under a `tests` folder, not named `tests.rs`.
fn sources(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "tests" {
                sources(&path, files);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && name != "tests.rs" {
            files.push(path);
        }
    }
}

#[test]
fn the_vocabulary_is_spelled_only_in_the_vocab_module() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in fs::read_dir(&crates).unwrap().flatten() {
        sources(&krate.path().join("src"), &mut files);
    }
    files.sort();
    assert!(
        files.len() > 100,
        "the guard read only {} files under {}",
        files.len(),
        crates.display()
    );
    let vocabulary = crates.join(VOCABULARY);
    assert!(vocabulary.is_file(), "{} is gone", vocabulary.display());
    let words = words(&fs::read_to_string(&vocabulary).unwrap());
    assert!(
        words.len() > 30,
        "the guard read only {} words from {}",
        words.len(),
        vocabulary.display()
    );
    // calltape-redact depends on no calltape crate: its bench's sample traffic spells methods out.
    let redact = crates.join("redact");
    let mut found = Vec::new();
    for file in files
        .iter()
        .filter(|f| **f != vocabulary && !f.starts_with(&redact))
    {
        let src = fs::read_to_string(file).unwrap();
        for copy in copies(&src, &words) {
            let shown = file.strip_prefix(&crates).unwrap_or(file);
            found.push(format!("crates/{}:{copy}", shown.display()));
        }
    }
    assert!(
        found.is_empty(),
        "the MCP vocabulary is spelled again outside calltape_stdio_bridge::vocab; use its \
         constants and error_answer instead:\n{}",
        found.join("\n")
    );
}

/// Each row is a piece of source and the copies the guard finds in it: what it must catch, and what
/// it must leave alone (prose, comments, tests, other numbers).
#[test]
fn the_guard_finds_copies_and_nothing_else() {
    let cases: &[(&str, &[&str])] = &[
        (
            r#"const K: &str = "io.modelcontextprotocol/clientInfo";"#,
            &["1: a `_meta` key as a literal"],
        ),
        (
            r##"const K: &[u8] = br#"io.modelcontextprotocol/x"#;"##,
            &["1: a `_meta` key as a literal"],
        ),
        (
            "let v = \"2026-07-28\";",
            &["1: the modern protocol version as a literal"],
        ),
        (
            "match c {\n    -32601 => 1,\n    _ => 0 }",
            &["2: the error code -32601 as a number"],
        ),
        (
            "let e = json!({\"code\": - 32602});",
            &["1: the error code -32602 as a number"],
        ),
        (
            "json!({\"id\": id, \"error\": {\n \"code\": code, \"message\": m}})",
            &["1: an error answer built by hand"],
        ),
        ("let m = \"a 2026-07-28 client gets -32601 here\";", &[]),
        (
            "// \"io.modelcontextprotocol/x\" and -32601\n/* \"2026-07-28\" */ let x = 1;",
            &[],
        ),
        (
            "#[serde(rename = \"io.modelcontextprotocol/protocolVersion\")]\nv: u8,",
            &[],
        ),
        (
            "let a = -326010; let b = x-32601; let c = '\"'; let q = '\\''; let d: &'static str = \"\";",
            &[],
        ),
        (
            "fn f() {}\n#[cfg(test)]\nmod tests { const V: &str = \"2026-07-28\"; }",
            &[],
        ),
        ("json!({\"error\": error})", &[]),
    ];
    let words = words(
        "pub const PROMPTS_GET: &str = \"prompts/get\";\npub const HEADER_NAME: &str = \"mcp-name\";\n\
         pub const MODERN_VERSION: &str = \"2026-07-28\";",
    );
    assert_eq!(words.len(), 3, "{words:?}");
    for (src, want) in cases {
        let want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
        let mut got = copies(src, &words);
        // The modern version is named twice (as a word of the module, and by its own rule).
        got.retain(|c| !c.contains("(vocab::MODERN_VERSION)"));
        assert_eq!(got, want, "in {src:?}");
    }
    assert_eq!(
        copies(
            "match m { \"prompts/get\" => 1, _ => 0 }\nh.get(\"mcp-name\");\nlet s = \"prompts/get is a method\";",
            &words
        ),
        [
            "1: \"prompts/get\" as a literal (vocab::PROMPTS_GET)",
            "2: \"mcp-name\" as a literal (vocab::HEADER_NAME)",
        ]
    );
}

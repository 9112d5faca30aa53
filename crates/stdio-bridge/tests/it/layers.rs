//! The crate's layers point down: every file under `src/` belongs to the layer of its top module, and
//! no `crate::…` or `super::…` path in it names a module of a layer above. The layers, bottom up, are
//! the ones the crate doc lists; an item the crate root re-exports (`crate::Error`) belongs to the
//! layer of the module it comes from.

use std::{
    collections::HashMap,
    fs,
    path::{Path, PathBuf},
};

use crate::support::source::skip_trivia;

/// The layers, bottom up, and the top modules of each.
const LAYERS: &[(&str, &[&str])] = &[
    ("wire", &["error", "jsonrpc", "vocab"]),
    ("upstream", &["guard", "upstream"]),
    ("session", &["bridge", "session", "stdio", "tap", "watch"]),
    ("era", &["era"]),
    ("serve", &["serve", "shared"]),
];

/// The rank of a top module's layer (0 = wire), or `None` for a module no layer names.
fn rank(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Path,
    Open,
    Close,
    Comma,
    Semi,
    Other,
}

/// The tokens of `src` with their lines: enough of Rust's lexical rules to find paths, with comments,
/// strings, char literals and lifetimes skipped.
fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let s = src.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if let Some(end) = skip_trivia(s, i, &mut line) {
            i = end;
        } else if (c == b'r' || (c == b'b' && next == Some(b'r')))
            && matches!(s.get(i + 1 + usize::from(c == b'b')), Some(b'"' | b'#'))
        {
            // A raw string: r"…", r#"…"#, br"…".
            let mut j = i + 1 + usize::from(c == b'b');
            let hashes = s[j..].iter().take_while(|&&b| b == b'#').count();
            j += hashes;
            if s.get(j) != Some(&b'"') {
                out.push((Tok::Ident("r".into()), line));
                i += 1;
                continue;
            }
            j += 1;
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            while j < s.len() && !s[j..].starts_with(&close) {
                line += usize::from(s[j] == b'\n');
                j += 1;
            }
            i = j + close.len();
            out.push((Tok::Other, line));
        } else if c == b'"' {
            i += 1;
            while i < s.len() && s[i] != b'"' {
                line += usize::from(s[i] == b'\n');
                i += if s[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push((Tok::Other, line));
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some(b'\\') {
                i += 2;
                while i < s.len() && s[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            } else if let Some(len) = src[i + 1..].chars().next().map(char::len_utf8)
                && s.get(i + 1 + len) == Some(&b'\'')
            {
                i += len + 2;
            } else {
                i += 1;
            }
            out.push((Tok::Other, line));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_owned()), line));
        } else {
            let tok = match c {
                b':' if next == Some(b':') => {
                    i += 1;
                    Tok::Path
                }
                b'{' => Tok::Open,
                b'}' => Tok::Close,
                b',' => Tok::Comma,
                b';' => Tok::Semi,
                _ => Tok::Other,
            };
            i += 1;
            out.push((tok, line));
        }
    }
    out
}

/// The names a path reaches right after `at` (the token after a `::`): one name, or the first name
/// of each item of a `{…}` group.
fn first_names(toks: &[(Tok, usize)], at: usize) -> Vec<(String, usize)> {
    match toks.get(at) {
        Some((Tok::Ident(name), line)) => vec![(name.clone(), *line)],
        Some((Tok::Open, _)) => {
            let mut names = Vec::new();
            let mut depth = 0;
            let mut expect = true;
            for (tok, line) in &toks[at..] {
                match tok {
                    Tok::Open => {
                        depth += 1;
                        expect = depth == 1;
                    }
                    Tok::Close => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Tok::Comma if depth == 1 => expect = true,
                    Tok::Ident(name) if expect => {
                        names.push((name.clone(), *line));
                        expect = false;
                    }
                    _ => expect = false,
                }
            }
            names
        }
        _ => Vec::new(),
    }
}

/// An import of a layer above: file, line, the path's first name, and why.
#[derive(Debug, PartialEq, Eq)]
struct Violation {
    file: String,
    line: usize,
    import: String,
    why: String,
}

/// What the crate root re-exports: each name (and each path segment of a `pub use`) to the top module
/// it comes from.
fn root_exports(lib: &str) -> HashMap<String, String> {
    let toks = tokens(lib);
    let mut map = HashMap::new();
    for i in 0..toks.len() {
        if toks[i].0 != Tok::Ident("use".into()) || i == 0 || toks[i - 1].0 == Tok::Path {
            continue;
        }
        let Some((Tok::Ident(module), _)) = toks.get(i + 1) else {
            continue;
        };
        for (tok, _) in toks[i + 2..].iter().take_while(|(t, _)| *t != Tok::Semi) {
            if let Tok::Ident(name) = tok {
                map.entry(name.clone()).or_insert_with(|| module.clone());
            }
        }
    }
    map
}

/// Checks one file of module path `module` (`["era", "pump"]`) against the layers.
fn check_file(
    file: &str,
    module: &[String],
    src: &str,
    exports: &HashMap<String, String>,
) -> Vec<Violation> {
    let Some(own) = rank(&module[0]) else {
        return vec![Violation {
            file: file.into(),
            line: 1,
            import: module[0].clone(),
            why: "its top module is in no layer: add it to LAYERS and to the crate doc".into(),
        }];
    };
    let toks = tokens(src);
    let mut found = Vec::new();
    // Inline modules (`mod tests { … }`) the scan is in, by the brace depth they opened at.
    let mut inline: Vec<usize> = Vec::new();
    let mut depth = 0;
    let check = |target: &str, line: usize, found: &mut Vec<Violation>| {
        let top = if rank(target).is_some() {
            target.to_owned()
        } else if let Some(module) = exports.get(target) {
            module.clone()
        } else {
            // A macro or item of the root itself (`crate::fuzzing`), or `self`/`*`.
            return;
        };
        if let Some(theirs) = rank(&top)
            && theirs > own
        {
            found.push(Violation {
                file: file.into(),
                line,
                import: target.into(),
                why: format!(
                    "layer `{}` imports from `{top}` in layer `{}` above it",
                    LAYERS[own].0, LAYERS[theirs].0
                ),
            });
        }
    };
    for i in 0..toks.len() {
        match &toks[i].0 {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth -= 1;
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
            }
            Tok::Ident(word) if word == "mod" => {
                if let (Some((Tok::Ident(_), _)), Some((Tok::Open, _))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    inline.push(depth);
                }
            }
            Tok::Ident(word)
                if word == "crate"
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path)
                    && (i == 0 || toks[i - 1].0 != Tok::Path) =>
            {
                for (name, line) in first_names(&toks, i + 2) {
                    check(&name, line, &mut found);
                }
            }
            Tok::Ident(word)
                if word == "super"
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path)
                    && (i == 0 || toks[i - 1].0 != Tok::Path) =>
            {
                let mut ups = 0;
                let mut j = i;
                while toks.get(j).map(|t| &t.0) == Some(&Tok::Ident("super".into()))
                    && toks.get(j + 1).map(|t| &t.0) == Some(&Tok::Path)
                {
                    ups += 1;
                    j += 2;
                }
                // Only a path that climbs to the crate root leaves the top module.
                if ups >= module.len() + inline.len() {
                    for (name, line) in first_names(&toks, j) {
                        check(&name, line, &mut found);
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// The module path of a file under `src/`: `era/legacy_on_modern/wire.rs` is `era::legacy_on_modern::wire`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    if stem != "mod" {
        parts.push(stem.to_owned());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src") {
        let path = entry.expect("read src entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let exports = root_exports(&fs::read_to_string(src.join("lib.rs")).expect("read lib.rs"));
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(&src).expect("under src");
        if relative == Path::new("lib.rs") {
            continue;
        }
        let text = fs::read_to_string(path).expect("read source");
        let name = format!("src/{}", relative.display());
        found.extend(check_file(&name, &module_path(relative), &text, &exports));
    }
    assert!(
        files.len() > 50,
        "found only {} files under src",
        files.len()
    );
    let report: Vec<String> = found
        .iter()
        .map(|v| format!("{}:{}: `{}`: {}", v.file, v.line, v.import, v.why))
        .collect();
    assert!(
        report.is_empty(),
        "imports that point up:\n{}",
        report.join("\n")
    );
}

#[test]
fn the_check_names_an_import_that_points_up() {
    let exports: HashMap<String, String> = [("EraUpstream".to_owned(), "era".to_owned())].into();
    let module = |path: &str| module_path(Path::new(path));
    let src = "//! crate::serve in a comment is no import.\n\
               use crate::{jsonrpc::Frame,\n    era::lanes};\n\
               fn f() -> crate::EraUpstream { let _ = \"crate::shared\"; todo!() }\n\
               mod tests { use super::super::super::serve::ServerBuilder; }\n";
    let found = check_file(
        "src/upstream/child.rs",
        &module("upstream/child.rs"),
        src,
        &exports,
    );
    let got: Vec<(usize, &str)> = found.iter().map(|v| (v.line, v.import.as_str())).collect();
    assert_eq!(got, [(3, "era"), (4, "EraUpstream"), (5, "serve")]);
    assert!(
        found[0].why.contains("`upstream` imports from `era`"),
        "{}",
        found[0].why
    );

    // Going down, or staying within the top module, is fine.
    let down =
        "use super::lanes;\nuse crate::{upstream::Link, vocab};\nuse super::super::jsonrpc;\n";
    assert_eq!(
        check_file("src/era/pump.rs", &module("era/pump.rs"), down, &exports),
        []
    );
    assert_eq!(module("jsonrpc/mod.rs"), ["jsonrpc"]);
    assert_eq!(
        check_file("src/nowhere.rs", &module("nowhere.rs"), "", &exports)[0].import,
        "nowhere"
    );
}

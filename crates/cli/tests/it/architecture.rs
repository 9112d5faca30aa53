//! ARCHITECTURE.md stays true: its crate arrows are the workspace's dependencies as `cargo metadata`
//! reports them, and its table of the bridge's layers names every top-level module of
//! `calltape-stdio-bridge` once, with no module importing from a layer above its own.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn architecture_md() -> String {
    std::fs::read_to_string(workspace().join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md is readable")
}

/// The rows of the first Markdown table after the heading `heading`, each as its cells.
fn table_after(text: &str, heading: &str) -> Vec<Vec<String>> {
    let start = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no heading {heading:?}"));
    text[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2) // the header and its rule
        .map(|line| {
            line.trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect()
}

/// The names written in backticks in `cell`, each with whether a parenthesis follows it (the
/// features an optional dependency comes with).
fn ticked(cell: &str) -> Vec<(String, bool)> {
    let mut names = Vec::new();
    let mut parts = cell.split('`');
    parts.next();
    while let (Some(name), Some(after)) = (parts.next(), parts.next()) {
        names.push((name.to_owned(), after.trim_start().starts_with('(')));
    }
    names
}

/// Each workspace package's normal dependencies on other workspace packages, with whether each is
/// optional.
fn metadata_arrows() -> BTreeMap<String, BTreeSet<(String, bool)>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let members: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("a package name"))
        .collect();
    packages
        .iter()
        .map(|package| {
            let name = package["name"].as_str().expect("a package name");
            let arrows = package["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|dep| dep["kind"].is_null())
                .filter_map(|dep| {
                    let target = dep["name"].as_str()?;
                    (members.contains(target) && target != name)
                        .then(|| (target.to_owned(), dep["optional"] == true))
                })
                .collect();
            (name.to_owned(), arrows)
        })
        .collect()
}

#[test]
fn the_crate_arrows_of_architecture_md_are_the_workspace_dependencies() {
    let documented: BTreeMap<String, BTreeSet<(String, bool)>> =
        table_after(&architecture_md(), "## Crates")
            .into_iter()
            .map(|row| {
                assert_eq!(
                    row.len(),
                    3,
                    "a row of the crates table has three cells: {row:?}"
                );
                let (name, _) = ticked(&row[0])
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| panic!("no crate name in {:?}", row[0]));
                let arrows = ticked(&row[2])
                    .into_iter()
                    .filter(|(name, _)| name.starts_with("calltape"))
                    .collect();
                (name, arrows)
            })
            .collect();
    let actual = metadata_arrows();
    let mut wrong = Vec::new();
    for name in actual
        .keys()
        .chain(documented.keys())
        .collect::<BTreeSet<_>>()
    {
        match (documented.get(name), actual.get(name)) {
            (None, _) => wrong.push(format!("{name}: a workspace crate the table does not list")),
            (_, None) => wrong.push(format!(
                "{name}: listed, but no workspace crate has that name"
            )),
            (Some(said), Some(is)) if said != is => wrong.push(format!(
                "{name}: the table says {said:?}, Cargo.toml says {is:?} (name, optional)"
            )),
            _ => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's crates table disagrees with cargo metadata (an optional dependency is \
         written with its features in parentheses after it):\n{}",
        wrong.join("\n")
    );
}

/// The bridge's layers from ARCHITECTURE.md, lowest first: each module's layer index, and the names.
fn documented_layers() -> (BTreeMap<String, usize>, Vec<String>) {
    let rows = table_after(&architecture_md(), "## The bridge's layers");
    assert!(
        rows.len() >= 3,
        "the layers table lists the layers: {rows:?}"
    );
    let mut layer_of = BTreeMap::new();
    let mut names = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        names.push(row[0].clone());
        for (module, _) in ticked(&row[1]) {
            if let Some(before) = layer_of.insert(module.clone(), index) {
                panic!(
                    "the module `{module}` is in two layers, {} and {}",
                    rows[before][0], row[0]
                );
            }
        }
    }
    (layer_of, names)
}

fn bridge_src() -> PathBuf {
    workspace().join("crates/stdio-bridge/src")
}

/// Every `.rs` file under `dir`, as its path relative to the bridge's `src`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the bridge's source folder is readable") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(
                path.strip_prefix(bridge_src())
                    .expect("under src")
                    .to_owned(),
            );
        }
    }
}

/// The crate's top-level modules: a file or a folder of `src` other than `lib.rs`.
fn top_level_modules() -> BTreeSet<String> {
    std::fs::read_dir(bridge_src())
        .expect("the bridge's source folder is readable")
        .map(|entry| {
            let path = entry.expect("a folder entry").path();
            path.file_stem()
                .expect("a name")
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name != "lib")
        .collect()
}

/// The crate root's re-exports (`pub use module::{A, B}`): each name, with the module it comes from.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    let mut rest = lib;
    while let Some(at) = rest.find("pub use ") {
        rest = &rest[at + "pub use ".len()..];
        let statement = &rest[..rest.find(';').expect("a use statement ends")];
        let module = statement
            .split("::")
            .next()
            .expect("a path")
            .trim()
            .to_owned();
        let items = statement
            .split_once('{')
            .map_or(statement.rsplit("::").next().unwrap_or(""), |(_, items)| {
                items
            });
        for item in items.split([',', '}']) {
            let item = item.trim().rsplit("::").next().unwrap_or("").trim();
            if !item.is_empty() && item != "self" {
                names.insert(item.to_owned(), module.clone());
            }
        }
    }
    names
}

/// The top-level names a file reaches through `crate::` (inside `use crate::{…}` groups too), each
/// with its line. Comments are left out, and so are the unit tests at the end of a file, which may use
/// the whole crate.
fn crate_paths(source: &str) -> Vec<(usize, String)> {
    let code = source
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or(source);
    let code: String = code
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let line_at = |at: usize| code[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].ends_with(|c: char| is_word(c) || c == '$') {
            continue; // `calltape_crate::`, `$crate::`
        }
        let rest = &code[at + "crate::".len()..];
        if !rest.starts_with('{') {
            let name: String = rest.chars().take_while(|&c| is_word(c)).collect();
            if !name.is_empty() {
                found.push((line_at(at), name));
            }
            continue;
        }
        // A group: the first word of each path at depth 1 is a top-level name.
        let (mut depth, mut expecting) = (0usize, true);
        let mut word = String::new();
        for (offset, c) in rest.char_indices() {
            if is_word(c) {
                word.push(c);
                continue;
            }
            if !word.is_empty() {
                if depth == 1 && expecting {
                    let start = at + "crate::".len() + offset - word.len();
                    found.push((line_at(start), word.clone()));
                    expecting = false;
                }
                word.clear();
            }
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                ',' if depth == 1 => expecting = true,
                _ => {}
            }
        }
    }
    found
}

#[test]
fn the_bridge_layers_of_architecture_md_name_every_module_and_no_module_imports_from_above() {
    let (layer_of, layer_names) = documented_layers();
    let modules = top_level_modules();
    let documented: BTreeSet<String> = layer_of.keys().cloned().collect();
    assert_eq!(
        documented, modules,
        "ARCHITECTURE.md's layers table names the bridge's top-level modules (crates/stdio-bridge/src), each once"
    );
    let lib = std::fs::read_to_string(bridge_src().join("lib.rs")).expect("lib.rs is readable");
    let reexports = root_reexports(&lib);

    let mut files = Vec::new();
    rust_files(&bridge_src(), &mut files);
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in files {
        let Some(top) = file.iter().next().map(|c| {
            Path::new(c)
                .file_stem()
                .expect("a name")
                .to_string_lossy()
                .into_owned()
        }) else {
            continue;
        };
        if top == "lib"
            || file.file_name().is_some_and(|n| n == "tests.rs")
            || file.iter().any(|c| c == "tests")
        {
            continue;
        }
        let own = layer_of[&top];
        let source =
            std::fs::read_to_string(bridge_src().join(&file)).expect("a source file is readable");
        for (line, name) in crate_paths(&source) {
            let module = reexports.get(&name).cloned().unwrap_or(name.clone());
            let Some(&used) = layer_of.get(&module) else {
                continue; // an item of lib.rs itself, or a macro
            };
            checked += 1;
            if used > own {
                wrong.push(format!(
                    "crates/stdio-bridge/src/{}:{line}: `crate::{name}` ({module}, layer {}) from layer {}",
                    file.display(),
                    layer_names[used],
                    layer_names[own]
                ));
            }
        }
    }
    assert!(
        checked > 100,
        "the import reader found only {checked} crate paths; it has stopped reading them"
    );
    assert!(
        wrong.is_empty(),
        "modules import from a layer above their own (ARCHITECTURE.md, \"The bridge's layers\"):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_import_reader_finds_paths_groups_and_nested_groups() {
    let source = "use crate::{\n    Bridge, Error,\n    jsonrpc::{self, peek},\n};\nuse crate::era::Protocol;\nlet x = crate::vocab::INITIALIZE; // crate::serve in a comment\n#[cfg(test)]\nmod tests {\n    use crate::shared::Thing;\n}\n";
    let names: Vec<String> = crate_paths(source).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["Bridge", "Error", "jsonrpc", "era", "vocab"]);
}

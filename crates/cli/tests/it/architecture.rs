//! ARCHITECTURE.md stays true: its crate arrows are the workspace's dependencies as `cargo metadata`
//! reports them, and its table of the bridge's layers is the one the bridge's layer test
//! (crates/stdio-bridge/tests/it/layers.rs) holds every import to, naming every top-level module.

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

/// The bridge's layers as a table's rows give them, lowest first: each layer's name and modules.
fn layers_of(rows: &[Vec<String>]) -> Vec<(String, BTreeSet<String>)> {
    rows.iter()
        .map(|row| {
            let modules = ticked(&row[1]).into_iter().map(|(m, _)| m).collect();
            (row[0].clone(), modules)
        })
        .collect()
}

/// The layers the bridge's own layer test holds every import to (`LAYERS` in
/// crates/stdio-bridge/tests/it/layers.rs): rows like `("wire", &["error", "jsonrpc", "vocab"]),`.
fn tested_layers() -> Vec<(String, BTreeSet<String>)> {
    let path = workspace().join("crates/stdio-bridge/tests/it/layers.rs");
    let source = std::fs::read_to_string(&path).expect("the bridge's layer test is readable");
    let start = source
        .find("const LAYERS")
        .expect("the layer test declares LAYERS");
    let end = start + source[start..].find("];").expect("LAYERS ends");
    source[start..end]
        .lines()
        .filter_map(|line| line.trim().strip_prefix("(\""))
        .map(|row| {
            let mut words = row.split('"').step_by(2).map(str::to_owned);
            let name = words.next().expect("a layer's name");
            let modules = row
                .split('"')
                .skip(2)
                .step_by(2)
                .map(str::to_owned)
                .collect();
            (name, modules)
        })
        .collect()
}

/// The crate's top-level modules: a file or a folder of `src` other than `lib.rs`.
fn top_level_modules() -> BTreeSet<String> {
    std::fs::read_dir(workspace().join("crates/stdio-bridge/src"))
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

#[test]
fn the_bridge_layers_of_architecture_md_are_the_ones_its_layer_test_holds_imports_to() {
    let documented = layers_of(&table_after(&architecture_md(), "## The bridge's layers"));
    let tested = tested_layers();
    assert!(
        tested.len() >= 3,
        "the layer test's LAYERS were read: {tested:?}"
    );
    assert_eq!(
        documented, tested,
        "ARCHITECTURE.md's layers table and LAYERS in crates/stdio-bridge/tests/it/layers.rs (lowest first)"
    );
    let named: BTreeSet<String> = documented
        .iter()
        .flat_map(|(_, m)| m.iter().cloned())
        .collect();
    assert_eq!(
        named,
        top_level_modules(),
        "the layers name the bridge's top-level modules (crates/stdio-bridge/src), each once"
    );
}

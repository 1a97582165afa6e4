//! Repository policy checks, as ordinary tests.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_rust_file_opens_with_a_module_doc_line() {
    let root = super::root();
    let mut files = Vec::new();
    for dir in ["crates", "benches", "xtask"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 20, "found only {} files", files.len());
    let missing: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("utf-8 source");
            !text.trim_start().starts_with("//!")
        })
        .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a leading `//!` line: {missing:?}"
    );
}

#[test]
fn generated_files_are_current() {
    let root = super::root();
    let stale: Vec<String> = super::artefacts()
        .into_iter()
        .filter(|(path, contents)| {
            std::fs::read(root.join(path)).ok().as_deref() != Some(contents.as_slice())
        })
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(
        stale.is_empty(),
        "run `cargo xtask codegen`: stale {stale:?}"
    );
}

/// The arrows of ARCHITECTURE.md's crate graph: `crate ──► dep, dep` lines in the first
/// fenced block after the line naming this test.
fn documented_graph(text: &str) -> std::collections::BTreeSet<(String, String)> {
    let after = text
        .split_once("the_crate_graph_matches_cargo_metadata")
        .expect("ARCHITECTURE.md names the crate-graph test")
        .1;
    let block = after.split("```").nth(1).expect("a fenced crate graph");
    let mut arrows = std::collections::BTreeSet::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let (from, to) = line.split_once("──►").expect("`crate ──► deps` lines");
        for dep in to.split(',') {
            arrows.insert((from.trim().to_owned(), dep.trim().to_owned()));
        }
    }
    arrows
}

#[test]
fn the_crate_graph_matches_cargo_metadata() {
    let root = super::root();
    #[expect(
        clippy::disallowed_methods,
        reason = "a repository check asks cargo for the workspace's graph"
    )]
    let output = std::process::Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let packages = metadata["packages"].as_array().expect("packages");
    let hyoka: std::collections::BTreeSet<&str> =
        packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut actual = std::collections::BTreeSet::new();
    for package in packages {
        let name = package["name"].as_str().expect("name");
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let dep_name = dep["name"].as_str().expect("name");
            if dep["kind"].is_null() && hyoka.contains(dep_name) && dep_name != name {
                actual.insert((name.to_owned(), dep_name.to_owned()));
            }
        }
    }
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let documented = documented_graph(&text);
    let missing: Vec<_> = actual.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&actual).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "ARCHITECTURE.md's crate graph differs from cargo metadata: missing {missing:?}, \
         not real {extra:?}"
    );
}

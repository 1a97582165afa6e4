//! Repository automation, run as `cargo xtask <task>`.
//!
//! - `codegen`: writes the man page (`docs/man/hyoka.1`), shell completions
//!   (`docs/completions/`) and JSON Schemas (`schemas/`) from the code itself;
//!   `codegen --check` fails if any checked-in file differs, which CI runs to catch drift.
//!
//! The tidy checks (every `.rs` file opens with `//!`, …) are ordinary tests of this crate.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::CommandFactory;

#[expect(clippy::print_stderr, reason = "xtask reports to the developer")]
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (task, check) = match args.as_slice() {
        [task] => (task.as_str(), false),
        [task, flag] if flag == "--check" => (task.as_str(), true),
        _ => ("help", false),
    };
    if task != "codegen" {
        eprintln!("usage: cargo xtask codegen [--check]");
        return ExitCode::from(2);
    }
    match codegen(check) {
        Ok(()) => ExitCode::SUCCESS,
        Err(stale) => {
            eprintln!(
                "error: generated files are out of date: {}",
                stale.join(", ")
            );
            eprintln!("run `cargo xtask codegen` and commit the result");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the root")
        .to_owned()
}

/// Every generated file: its path relative to the root, and its contents.
fn artefacts() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let command = hyoka_cli::Cli::command();
    let mut man = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut man)
        .expect("render the man page");
    files.push((PathBuf::from("docs/man/hyoka.1"), man));
    for (shell, name) in [
        (clap_complete::Shell::Bash, "hyoka.bash"),
        (clap_complete::Shell::Zsh, "_hyoka"),
        (clap_complete::Shell::Fish, "hyoka.fish"),
    ] {
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut command.clone(), "hyoka", &mut out);
        files.push((PathBuf::from("docs/completions").join(name), out));
    }
    for (name, schema) in hyoka_cli::schemas() {
        let mut json = serde_json::to_vec_pretty(&schema).expect("schemas serialize");
        json.push(b'\n');
        files.push((
            PathBuf::from("schemas").join(format!("{name}.schema.json")),
            json,
        ));
    }
    files
}

fn codegen(check: bool) -> Result<(), Vec<String>> {
    let root = root();
    let mut stale = Vec::new();
    for (path, contents) in artefacts() {
        let full = root.join(&path);
        if std::fs::read(&full).ok().as_deref() == Some(contents.as_slice()) {
            continue;
        }
        if check {
            stale.push(path.display().to_string());
        } else {
            std::fs::create_dir_all(full.parent().expect("files sit in a directory"))
                .and_then(|()| std::fs::write(&full, contents))
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", full.display()));
        }
    }
    if stale.is_empty() { Ok(()) } else { Err(stale) }
}

#[cfg(test)]
mod tidy;

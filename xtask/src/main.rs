//! Repository automation, run as `cargo xtask <task>`.
//!
//! - `codegen`: writes the JSON Schemas (`schemas/`) from the library crates' types, and the
//!   man pages (`docs/man/hyoka.1` and one per subcommand) and shell completions
//!   (`docs/completions/`) from the CLI's clap definition; `codegen --check` fails if any checked-in file differs, which CI
//!   runs to catch drift.
//!
//! xtask depends on libraries only. The man pages and completions are rendered by
//! `hyoka-cli`'s own `codegen` test, which compares them with the checked-in files and
//! rewrites them when `HYOKA_UPDATE_GENERATED=1`; xtask runs that test.
//!
//! The tidy checks (every `.rs` file opens with `//!`, …) are ordinary tests of this crate.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

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

/// The JSON Schemas of the records hyoka writes, by file stem: `report`, `run` and
/// `action-timeline` (`hyoka-eval`), `ledger` (the parsed `pids.txt`, as `hyoka ps --json`
/// and `hyoka clean --json` show it), `respawn-event` (one line of `hyoka respawn
/// --events`), `session` and `orphaned-session` (the rows of `hyoka sessions --json`).
fn schemas() -> Vec<(&'static str, schemars::Schema)> {
    let mut schemas = hyoka_eval::schemas();
    schemas.push(("ledger", schemars::schema_for!(hyoka_proctrack::Ledger)));
    schemas.push(("respawn-event", hyoka_respawn::event_line_schema()));
    schemas.push((
        "session",
        schemars::schema_for!(hyoka_respawn::SessionStatus),
    ));
    schemas.push((
        "orphaned-session",
        schemars::schema_for!(hyoka_respawn::OrphanedSession),
    ));
    schemas
}

/// Every generated file xtask writes itself: its path relative to the root, and its
/// contents.
fn artefacts() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for (name, schema) in schemas() {
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
    if !cli_codegen(&root, check) {
        stale.push("docs/man/ or docs/completions/ (hyoka-cli's codegen test)".to_owned());
    }
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

/// Runs `hyoka-cli`'s `codegen` test, which renders the man page and completions from the
/// clap definition: with `check`, it fails on drift; without, it rewrites the files.
fn cli_codegen(root: &Path, check: bool) -> bool {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command.current_dir(root).args([
        "test",
        "--quiet",
        "-p",
        "hyoka-cli",
        "--test",
        "it",
        "codegen::",
    ]);
    if !check {
        command.env("HYOKA_UPDATE_GENERATED", "1");
    }
    command.status().is_ok_and(|status| status.success())
}

#[cfg(test)]
mod tidy;

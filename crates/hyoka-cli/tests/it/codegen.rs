//! The man page and shell completions, rendered from the clap definition: the checked-in
//! files must match (`cargo xtask codegen` rewrites them through this test, with
//! `HYOKA_UPDATE_GENERATED=1`).

use std::path::{Path, PathBuf};

use clap::CommandFactory;

/// Every file rendered from `hyoka_cli::Cli`: its path relative to the repository root, and
/// its contents.
fn rendered() -> Vec<(PathBuf, Vec<u8>)> {
    let command = hyoka_cli::Cli::command();
    let mut files = Vec::new();
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
    files
}

#[test]
fn the_man_page_and_completions_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let update = std::env::var_os("HYOKA_UPDATE_GENERATED").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (path, contents) in rendered() {
        let full = root.join(&path);
        if std::fs::read(&full).ok().as_deref() == Some(contents.as_slice()) {
            continue;
        }
        if update {
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, contents).unwrap();
        } else {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "out of date: {} (run `cargo xtask codegen` and commit the result)",
        stale.join(", ")
    );
}

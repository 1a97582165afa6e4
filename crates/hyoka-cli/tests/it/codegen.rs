//! The man pages and shell completions, rendered from the clap definition: the checked-in
//! files must match (`cargo xtask codegen` rewrites them through this test, with
//! `HYOKA_UPDATE_GENERATED=1`), and they name only what is shipped.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

/// The man pages: `hyoka.1` and one page per visible subcommand (`hyoka-run.1`,
/// `hyoka-report-merge.1`, …), which the pages above them name in their SEE ALSO lists.
fn man_pages() -> Vec<(PathBuf, Vec<u8>)> {
    fn render(command: clap::Command, pages: &mut Vec<(PathBuf, Vec<u8>)>) {
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            render(sub.clone(), pages);
        }
        let man = clap_mangen::Man::new(command);
        let mut page = Vec::new();
        man.render(&mut page).expect("render a man page");
        pages.push((PathBuf::from("docs/man").join(man.get_filename()), page));
    }
    // `hyoka help` is clap's, not a page of its own.
    let mut command = hyoka_cli::Cli::command().disable_help_subcommand(true);
    command.build();
    let mut pages = Vec::new();
    render(command, &mut pages);
    pages.sort();
    pages
}

/// Every file rendered from `hyoka_cli::Cli`: its path relative to the repository root, and
/// its contents.
fn rendered() -> Vec<(PathBuf, Vec<u8>)> {
    let command = hyoka_cli::Cli::command();
    let mut files = man_pages();
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

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_man_pages_and_completions_are_current() {
    let root = root();
    let update = std::env::var_os("HYOKA_UPDATE_GENERATED").is_some_and(|v| v == "1");
    let rendered = rendered();
    let mut stale = Vec::new();
    for (path, contents) in &rendered {
        let full = root.join(path);
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
    // A page of a command that no longer exists is stale too.
    for dir in ["docs/man", "docs/completions"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = Path::new(dir).join(entry.unwrap().file_name());
            if rendered.iter().any(|(p, _)| *p == path) {
                continue;
            }
            if update {
                std::fs::remove_file(root.join(&path)).unwrap();
            } else {
                stale.push(format!("{} (no longer generated)", path.display()));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "out of date: {} (run `cargo xtask codegen` and commit the result)",
        stale.join(", ")
    );
}

/// Regression test for issue 12: the man page named pages that were not shipped
/// (`hyoka-run(1)`, …) and the completions offered the hidden `sim-agent`. Every page a
/// page names is generated, and no completion offers a hidden command or argument.
#[test]
fn the_man_pages_name_only_shipped_pages_and_completions_only_visible_commands() {
    let pages = man_pages();
    let shipped: Vec<String> = pages
        .iter()
        .map(|(path, _)| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for (path, page) in &pages {
        let text = String::from_utf8_lossy(page).replace("\\-", "-");
        for named in text
            .split_whitespace()
            .filter_map(|w| w.strip_suffix("(1)"))
        {
            let named = named.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
            assert!(
                shipped.iter().any(|s| s == named),
                "{} names {named}(1), which is not shipped ({shipped:?})",
                path.display()
            );
        }
    }
    assert!(
        shipped.iter().any(|s| s == "hyoka-report-merge"),
        "{shipped:?}"
    );
    for (path, text) in rendered() {
        let text = String::from_utf8_lossy(&text);
        for hidden in ["sim-agent", "--role", "stray", "__shim"] {
            assert!(
                !text.contains(hidden),
                "{} offers the hidden {hidden}",
                path.display()
            );
        }
    }
}

//! `--install-claude-hooks` of `hyoka hook` and `hyoka respawn`: the hook entries that call
//! this executable, merged by `hyoka-respawn`, and the line that says what was done.

use std::path::Path;

use hyoka_respawn::{HooksInstalled, RespawnError, install_claude_hooks};

use crate::exit::Fail;

/// Installs the hooks in `dir`; a settings file that is not Claude Code's exits 2.
pub(crate) fn install(dir: &Path) -> Result<HooksInstalled, Fail> {
    let exe = std::env::current_exe()
        .map_err(|e| Fail::failure(format!("cannot find the hyoka executable: {e}")))?;
    install_claude_hooks(dir, &exe).map_err(|err| match err {
        RespawnError::ClaudeSettings {
            bad_input: true, ..
        } => Fail::usage(err.to_string()),
        err => Fail::failure(err.to_string()),
    })
}

#[expect(clippy::print_stdout, reason = "the command reports what it did")]
pub(crate) fn print_install(report: &HooksInstalled) {
    println!(
        "installed {} Claude Code hook(s) in {} ({} already there)",
        report.added,
        report.path.display(),
        report.present
    );
}

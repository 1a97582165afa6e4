//! `hyoka clean`: stop what abandoned runs left behind, and nothing else.
//!
//! The repair is `hyoka-eval`'s [`clean_abandoned`]: processes whose identity still matches
//! a ledger line, cgroup leaves, workspaces; then marked workspaces whose owner is gone.
//! Live runs, identity mismatches, unmarked directories and hostile ledger lines are
//! reported and never acted on; so is a run directory that fails `hyoka-proctrack`'s checks
//! (links, loose modes, another user's files), and a run of another user is cleaned with
//! that user's power only.

use hyoka_eval::{CleanupOptions, clean_abandoned};

use crate::args::CleanArgs;
use crate::exit::{ExitStatus, Fail};
use crate::out::outln;

pub(crate) async fn exec(args: CleanArgs, verbose: bool) -> Result<ExitStatus, Fail> {
    if let Some(root) = &args.workspace_root {
        crate::input::require_dir(root, "workspace root")?;
    }
    let now = std::time::SystemTime::now();
    let remove_kept = args
        .kept
        .then(|| now.checked_sub(args.older_than.unwrap_or_default()))
        .map(|cutoff| cutoff.unwrap_or(std::time::UNIX_EPOCH));
    let (json, dry_run) = (args.json, args.dry_run);
    let options = CleanupOptions {
        reports: args.reports,
        workspace_root: args.workspace_root.unwrap_or_else(std::env::temp_dir),
        grace: args.grace,
        dry_run,
        remove_kept,
    };
    let output = tokio::task::spawn_blocking(move || clean_abandoned(&options))
        .await
        .map_err(|e| Fail::failure(format!("clean failed: {e}")))??;
    if json {
        crate::out::json(&output);
    } else {
        outln!("{}", output.render(verbose).trim_end());
    }
    Ok(if output.remaining {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

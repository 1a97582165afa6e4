//! The cleanup phase: the workspace closed (removed, or kept per the policy), the isolated
//! home and the private temp directory removed, and what the teardowns of every phase found
//! added up into `report.json` `cleanup`.

use hyoka_proctrack::{Layers, TeardownReport};

use super::{PhaseClock, RunContext};
use crate::host::{EvalWorkspace, Processes, WorkspaceEnd};
use crate::report::{Cleanup, PhaseRecord, PhaseStatus, Status};

/// Runs the cleanup phase. The workspace is closed with `status`, the status decided so far
/// (cleanup may still turn a pass into an infrastructure error); `dirs` are the isolated
/// home, the temp directory and the model server's directory, when the eval has them;
/// `teardowns` are every phase's; `leftovers` what could not be removed of a task's
/// directories, closed before. The phase fails when a process survived or something could
/// not be removed.
pub(crate) fn cleanup(
    (ctx, eval_id): (&RunContext, &str),
    workspace: Box<dyn EvalWorkspace>,
    status: Status,
    dirs: [(&str, Option<Box<dyn EvalWorkspace>>); 3],
    (teardowns, leftovers): (&[TeardownReport], Vec<String>),
    layers: Layers,
) -> (Cleanup, PhaseRecord) {
    let phase = PhaseClock::start(&*ctx.harness.clock, "cleanup");
    let mut cleanup = close_workspace(ctx, eval_id, workspace, status);
    cleanup.workspace_leftovers.extend(leftovers);
    for (what, dir) in dirs {
        let Some(dir) = dir else { continue };
        let path = dir.path().to_owned();
        match dir.close(Status::Passed) {
            WorkspaceEnd::Removed => forget(&*ctx.harness.processes, &path),
            WorkspaceEnd::Kept(_) => {}
            WorkspaceEnd::Incomplete(leftovers) => {
                tracing::error!("cannot remove the {what} completely");
                cleanup.workspace_leftovers.extend(leftovers);
            }
            WorkspaceEnd::Failed(err) => {
                tracing::error!(error = %err, "cannot remove the {what}");
                cleanup.workspace_leftovers.push(err);
            }
        }
    }
    for teardown in teardowns {
        cleanup.processes_seen += teardown.processes_seen as u64;
        cleanup.processes_killed += teardown.processes_killed as u64;
        cleanup.survivors = cleanup
            .survivors
            .map(|n| n + teardown.survivors as u64)
            .filter(|_| teardown.survivors_unknown.is_none());
        if let Some(why) = &teardown.survivors_unknown {
            cleanup.survivors_unknown.get_or_insert_with(|| why.clone());
        }
        for layer in &teardown.layers_lost {
            let name = layer.as_str().to_owned();
            if !cleanup.layers_lost.contains(&name) {
                cleanup.layers_lost.push(name);
            }
        }
    }
    cleanup.layers = layer_names(layers);
    let cleaned = cleanup.survivors == Some(0) && cleanup.workspace_leftovers.is_empty();
    let record = phase.finish(
        if cleaned {
            PhaseStatus::Passed
        } else {
            PhaseStatus::Failed
        },
        None,
        (!cleaned).then(|| {
            let mut detail = format!(
                "{} survivor(s), {} leftover(s)",
                cleanup
                    .survivors
                    .map_or_else(|| "unknown".to_owned(), |n| n.to_string()),
                cleanup.workspace_leftovers.len()
            );
            // The first leftover says what was left (a mount point, an immutable file).
            if let Some(first) = cleanup.workspace_leftovers.first() {
                detail.push_str(": ");
                detail.push_str(&hyoka_events::truncate_chars(first, 200));
            }
            detail
        }),
    );
    (cleanup, record)
}

fn layer_names(layers: Layers) -> Vec<String> {
    [
        (layers.cgroup, "cgroup"),
        (layers.shim, "shim"),
        (layers.session, "session"),
        (layers.marker, "marker"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| name.to_owned())
    .collect()
}

/// Closes the workspace of the attempt `eval_id` with `status`: what was removed, kept or
/// left behind. A kept one is recorded as kept in the ledger too, where no eval's process
/// can unmark it.
pub(crate) fn close_workspace(
    ctx: &RunContext,
    eval_id: &str,
    workspace: Box<dyn EvalWorkspace>,
    status: Status,
) -> Cleanup {
    let mut cleanup = Cleanup::default();
    let path = workspace.path().to_owned();
    match workspace.close(status) {
        WorkspaceEnd::Removed => {
            cleanup.workspace_removed = true;
            forget(&*ctx.harness.processes, &path);
        }
        WorkspaceEnd::Kept(path) => {
            if let Err(err) = ctx.harness.processes.record_kept(eval_id, &path) {
                // Its marker still says kept.
                tracing::error!(error = %err, "cannot record the kept workspace in the ledger");
            }
            cleanup.workspace_kept_at = Some(path.display().to_string());
        }
        WorkspaceEnd::Incomplete(leftovers) => cleanup.workspace_leftovers = leftovers,
        WorkspaceEnd::Failed(err) => tracing::error!(error = %err, "cannot remove the workspace"),
    }
    cleanup
}

/// Drops the ledger's record of a workspace (or a marked directory) that is gone: a run of
/// any number of evals keeps a ledger the size of what is live. Failing leaves a stale line
/// `clean` finds nothing behind.
pub(crate) fn forget(processes: &dyn Processes, path: &std::path::Path) {
    if let Err(err) = processes.forget_workspace(path) {
        tracing::debug!(error = %err, "cannot drop the removed workspace from the ledger");
    }
}

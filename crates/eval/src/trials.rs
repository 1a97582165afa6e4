//! Trials: each eval of a plan runs `epochs` times (once per agent of a suite's `agents:`
//! map too), each trial with its own workspace and records; and what a resumed run keeps.
//!
//! # Layout
//!
//! A trial's records go to `reports/<run>/<trial>/`, where the trial's id is the eval's id
//! when the eval has a single trial (`reports/<run>/<eval>/report.json`, as without
//! repeats), and otherwise the eval's id, the agent's name (when the suite names agents) and
//! the epoch, joined by dots: `fix-bug.2`, `fix-bug.claude`, `fix-bug.claude.2`. The same id
//! names the trial's processes in the ledger (`hyoka ps`, `hyoka clean`), its cgroup leaf
//! and its workspace (`hyoka-<run>-<trial>-XXXXXX`), so concurrent trials of one eval never
//! share any of them. `report.json` and `run.json` `evals[]` carry the eval's id, the epoch
//! and the agent as fields, so nothing has to be parsed back out of the id.
//!
//! # Resume
//!
//! A resumed run reads each planned trial's `report.json` (as evidence: no links, bounded,
//! see `hyoka-proctrack`'s `read_reports_file`). A trial whose record is finished (passed,
//! failed, or a scorer error) and whose identity (see [`EvalSpec::identity`]) is unchanged
//! is kept and not run again; one whose identity changed makes the resume refuse
//! ([`EvalError::Changed`]) unless changed trials are to be rerun; every other trial (no
//! record, not run, an infrastructure error, an unreadable record) runs. A plan that lacks
//! trials the earlier run recorded (fewer epochs, agents or evals) would change the run's
//! shape under its id: the resume refuses ([`EvalError::Reshaped`]) unless told to accept
//! it ([`Resume::allow_reshape`]).

use std::sync::Arc;

use hyoka_workspace::EvalId;

use crate::error::EvalError;
use crate::identity::trial_identity;
use crate::report::{ErrorKind, Report, Status};
use crate::settings::EvalSpec;

/// The largest `report.json` a resume reads back.
const MAX_REPORT: u64 = 16 << 20;

/// One trial of an eval.
#[derive(Debug, Clone)]
pub struct Trial {
    /// The trial's id: its records' directory under the run, its processes' id in the
    /// ledger, and part of its workspace's name. The eval's id when the eval has one trial;
    /// else the eval's id, the agent's name (when a suite names agents) and the epoch,
    /// joined by dots (`fix-bug.claude.2`).
    pub id: EvalId,
    /// Which repeat of the eval, from 1.
    pub epoch: u32,
    /// The eval's settings.
    pub spec: Arc<EvalSpec>,
}

/// How a resumed run treats the trials an earlier run with the same id finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resume {
    /// Rerun the trials whose eval changed since the run began, instead of refusing.
    pub rerun_changed: bool,
    /// Accept a plan that lacks trials the earlier run recorded (fewer epochs, agents or
    /// evals: `--allow-reshape`), instead of refusing; they are left out of the run.
    pub allow_reshape: bool,
}

/// A trial of the plan, and what to do with it.
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    pub(crate) trial: Trial,
    pub(crate) identity: String,
    /// The finished record an earlier run left, kept instead of running the trial again.
    pub(crate) kept: Option<Box<Report>>,
}

/// The trials of `evals` in plan order (each eval's epochs together), with their
/// identities; with `resume`, what an earlier run under `run_dir` finished is kept.
///
/// # Errors
/// [`EvalError::InvalidValue`] when a trial id breaks the id grammar or leaves no room for
/// the phases' suffixes, or two trials would share an id; [`EvalError::Io`] when a starter or
/// an injected file cannot be read; [`EvalError::Changed`] when a finished trial's eval
/// changed and `resume` does not rerun changed trials.
pub(crate) fn plan_trials(
    evals: &[Arc<EvalSpec>],
    run_dir: &std::path::Path,
    resume: Option<Resume>,
) -> Result<Vec<Planned>, EvalError> {
    let trials = evals.iter().map(|spec| spec.epochs.max(1) as usize).sum();
    let mut planned = Vec::with_capacity(trials);
    let mut seen = std::collections::HashMap::new();
    let mut changed: Vec<String> = Vec::new();
    for spec in evals {
        let identity = spec.identity()?;
        for epoch in 1..=spec.epochs.max(1) {
            let id = trial_id(spec, epoch)?;
            if let Some(other) = seen.insert(id.to_string(), spec.eval_id.to_string()) {
                return Err(EvalError::invalid(
                    "trial id",
                    id.as_str(),
                    format!(
                        "evals {other} and {} would both record it; rename one",
                        spec.eval_id
                    ),
                ));
            }
            let identity = trial_identity(&identity, epoch);
            let kept = match resume {
                Some(resume) => match finished(run_dir, &id) {
                    Some(report) if report.identity == identity => Some(Box::new(report)),
                    Some(_) if resume.rerun_changed => None,
                    Some(_) => {
                        if !changed.contains(&spec.eval_id.to_string()) {
                            changed.push(spec.eval_id.to_string());
                        }
                        None
                    }
                    None => None,
                },
                None => None,
            };
            planned.push(Planned {
                trial: Trial {
                    id,
                    epoch,
                    spec: Arc::clone(spec),
                },
                identity,
                kept,
            });
        }
    }
    if !changed.is_empty() {
        return Err(EvalError::Changed { evals: changed });
    }
    if let Some(resume) = resume
        && !resume.allow_reshape
    {
        let dropped = dropped_trials(run_dir, &planned);
        if !dropped.is_empty() {
            return Err(EvalError::Reshaped { trials: dropped });
        }
    }
    Ok(planned)
}

/// The trials an earlier run under `run_dir` recorded (a directory holding a `report.json`)
/// that `planned` lacks, sorted: what a resume with fewer epochs, agents or evals would
/// drop.
fn dropped_trials(run_dir: &std::path::Path, planned: &[Planned]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return Vec::new();
    };
    let mut dropped: Vec<String> = entries
        .flatten()
        .take(1 << 20)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| !planned.iter().any(|p| p.trial.id.as_str() == name))
        .filter(|name| {
            std::fs::symlink_metadata(run_dir.join(name).join("report.json"))
                .is_ok_and(|m| m.is_file())
        })
        .collect();
    dropped.sort();
    dropped
}

/// The id a trial's processes and workspaces are tracked under on attempt `attempt` (from
/// 1): the trial's id, then `<trial>.r<attempt>` for a retry, since a run's tracker gives an
/// id to one attempt's processes only.
pub(crate) fn attempt_id(trial: &Trial, attempt: u32) -> Result<EvalId, EvalError> {
    if attempt <= 1 {
        return Ok(trial.id.clone());
    }
    Ok(EvalId::new(format!("{}.r{attempt}", trial.id))?)
}

/// The trial's id (see the [module docs](self)), checked to leave room for the ids of its
/// phases on its last attempt: `<trial>[.r<n>]` followed by `.build`, `.review`, `.home` or
/// `.s.<service>`.
fn trial_id(spec: &EvalSpec, epoch: u32) -> Result<EvalId, EvalError> {
    let mut id = spec.eval_id.to_string();
    if let Some(agent) = &spec.agent {
        id = format!("{id}.{agent}");
    }
    if spec.epochs > 1 {
        id = format!("{id}.{epoch}");
    }
    let retry = if spec.retries > 0 {
        format!(".r{}", spec.retries + 1)
    } else {
        String::new()
    };
    let suffixes = [".review", ".build", ".home"]
        .into_iter()
        .map(|s| format!("{retry}{s}"))
        .chain((spec.phases.services.iter()).map(|s| format!("{retry}.s.{}", s.name)));
    for suffix in suffixes {
        if EvalId::new(format!("{id}{suffix}")).is_err() {
            return Err(EvalError::invalid(
                "trial id",
                &id,
                format!(
                    "{id}{suffix} would be longer than 64 characters; shorten the eval id, \
                     the agent's or service's name"
                ),
            ));
        }
    }
    Ok(EvalId::new(id)?)
}

/// The record of a finished trial under `run_dir`, if there is one: passed, failed or a
/// scorer error. A missing, unreadable or unfinished record (not run, an infrastructure
/// error) is `None`: the trial runs again.
fn finished(run_dir: &std::path::Path, id: &EvalId) -> Option<Report> {
    let path = run_dir.join(id.as_str()).join("report.json");
    let bytes = match hyoka_proctrack::read_reports_file(&path, MAX_REPORT) {
        Ok(bytes) => bytes,
        Err(err) => {
            if path.exists() {
                tracing::warn!(path = %path.display(), error = %err, "not reading an earlier record; the trial runs again");
            }
            return None;
        }
    };
    let report: Report = serde_json::from_slice(&bytes)
        .inspect_err(|err| {
            tracing::warn!(path = %path.display(), error = %err, "an earlier record is not a report; the trial runs again");
        })
        .ok()?;
    let done = match report.status {
        Status::Passed | Status::Failed => true,
        Status::Error => report.error_kind == Some(ErrorKind::Scorer),
        Status::NotRun => false,
    };
    done.then_some(report)
}

#[cfg(test)]
mod tests;

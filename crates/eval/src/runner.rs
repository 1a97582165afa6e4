//! A run: evals on a pool of workers, each with its records, then `run.json`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyoka_proctrack::{Launcher, SandboxSupport, Tracker, TrackerOptions};
use hyoka_workspace::{KeepPolicy, RunId};

use crate::error::EvalError;
use crate::eval::{RunContext, not_started, run_eval};
use crate::host::Harness;
use crate::records::{millis, rfc3339, write_json};
use crate::report::{Report, RunSummary};
use crate::sandbox::decide;
use crate::settings::{DEFAULT_GRACE, EvalSpec};
use crate::stop::Stop;

/// Everything a run needs, validated by the caller.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The run id.
    pub run_id: RunId,
    /// Where the run's records go: `<reports>/<run_id>`.
    pub reports: PathBuf,
    /// Where workspaces are created.
    pub workspace_root: PathBuf,
    /// When workspaces are kept.
    pub keep: KeepPolicy,
    /// Whether workspace names carry the eval id (`hyoka-<run>-<eval>-XXXXXX`), as suites'
    /// do.
    pub name_with_eval: bool,
    /// The evals, in the order they start.
    pub evals: Vec<EvalSpec>,
    /// How many evals run at once (at least one).
    pub workers: usize,
    /// The caller's environment, from which an isolated home passes the basics (`PATH`,
    /// locale, `TERM`, `TZ`, `USER`, `LOGNAME`) and an eval's `pass_env` through. The
    /// harness reads no environment itself.
    pub inherited_env: Vec<(OsString, OsString)>,
}

impl RunPlan {
    /// A plan for `evals` under `<reports>/<run_id>`, with workspaces in `workspace_root`,
    /// one worker, workspaces never kept, and an empty inherited environment.
    pub fn new(
        run_id: RunId,
        reports: impl Into<PathBuf>,
        workspace_root: impl Into<PathBuf>,
        evals: Vec<EvalSpec>,
    ) -> Self {
        Self {
            run_id,
            reports: reports.into(),
            workspace_root: workspace_root.into(),
            keep: KeepPolicy::Never,
            name_with_eval: true,
            evals,
            workers: 1,
            inherited_env: Vec::new(),
        }
    }

    /// `<reports>/<run_id>`.
    pub fn run_dir(&self) -> PathBuf {
        self.reports.join(self.run_id.as_str())
    }
}

/// How the run's processes are contained (for [`run_tracked`]).
#[derive(Debug, Clone, Default)]
pub struct Containment {
    /// The subreaper shim to start agents through (the CLI's `hyoka __shim`); without one,
    /// agents still get their cgroup leaf, session and marker.
    pub shim: Option<Launcher>,
    /// How long the shim gives the agent's tree if the run's owner dies.
    pub shim_grace: Option<Duration>,
}

/// Progress of a run, as it happens. Called from the evals' tasks: keep it quick.
pub trait Observer: Send + Sync {
    /// An eval starts (it has a worker).
    fn eval_started(&self, spec: &EvalSpec) {
        let _ = spec;
    }

    /// An eval ended (or was recorded as not started) and its records are written.
    fn eval_finished(&self, report: &Report) {
        let _ = report;
    }

    /// Every eval ended and `run.json` is written.
    fn run_finished(&self, summary: &RunSummary) {
        let _ = summary;
    }
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// What a finished run left: its reports, in plan order, and the summary in `run.json`.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Each eval's `report.json`.
    pub reports: Vec<Report>,
    /// `run.json`.
    pub summary: RunSummary,
    /// `<reports>/<run_id>`.
    pub run_dir: PathBuf,
}

/// Runs `plan` with real containment: takes the run's owner lock and ledger (a
/// `hyoka-proctrack` [`Tracker`]), runs every eval through it, writes `run.json`, and
/// closes the ledger. The one call an embedder needs.
///
/// # Errors
/// [`EvalError::Tracker`] when the run cannot start (its id is live, or an earlier run with
/// it was never cleaned, or the reports directory is unusable, which is checked before
/// anything is created); [`EvalError::Sandbox`] (before anything is created) when an eval
/// asks for a sandbox the machine cannot give; otherwise as [`run`].
pub async fn run_tracked(
    plan: &RunPlan,
    containment: Containment,
    stop: Stop,
    observer: Arc<dyn Observer>,
) -> Result<RunOutcome, EvalError> {
    hyoka_proctrack::check_reports_dir(&plan.reports, hyoka_proctrack::ReportsUse::Write)?;
    // A sandbox the machine cannot give is refused before the run's directory exists.
    check_sandboxes(plan, SandboxSupport::detect)?;
    let mut options = TrackerOptions::new(plan.run_id.as_str(), &plan.reports);
    options.shim = containment.shim;
    options.shim_grace = containment.shim_grace.unwrap_or(DEFAULT_GRACE);
    let tracker = Tracker::start(options)?;
    if let Some(reason) = tracker.cgroup_unavailable() {
        tracing::info!(
            reason,
            "no cgroup layer; containment uses the shim, sessions and the marker"
        );
    }
    let result = run(plan, &Harness::tracked(tracker.clone()), stop, observer).await;
    // Marks the ledger cleaned and releases the owner lock: the run is over.
    if let Err(err) = tracker.close() {
        tracing::error!(error = %err, "cannot close the run's ledger");
    }
    result
}

/// Runs the evals of `plan` on `harness`, up to `plan.workers` at once, in plan order, and
/// writes `run.json`. Each eval writes its own records as it ends. A requested stop stops the
/// running evals and records the others as not started.
///
/// # Errors
/// [`EvalError::Eval`] for the first eval that could not run or record (the others still
/// ran, and `run.json` was written); [`EvalError::Record`] when `run.json` cannot be
/// written.
pub async fn run(
    plan: &RunPlan,
    harness: &Harness,
    stop: Stop,
    observer: Arc<dyn Observer>,
) -> Result<RunOutcome, EvalError> {
    check_sandboxes(plan, || harness.processes.sandbox_support())?;
    let run_dir = plan.run_dir();
    std::fs::create_dir_all(&run_dir).map_err(|e| EvalError::io("create", &run_dir, e))?;
    let ctx = Arc::new(RunContext {
        run_id: plan.run_id.clone(),
        run_dir: run_dir.clone(),
        workspace_root: plan.workspace_root.clone(),
        keep: plan.keep,
        name_with_eval: plan.name_with_eval,
        inherited_env: plan.inherited_env.clone().into(),
        harness: harness.clone(),
    });
    let clock = &*harness.clock;
    let started_at = clock.wall();
    let started = clock.now();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(plan.workers.max(1)));
    let mut tasks = Vec::with_capacity(plan.evals.len());
    for spec in plan.evals.iter().cloned() {
        // Permits are taken here, in plan order, so evals start in the order the plan lists
        // them (tasks would otherwise race for permits on a multi-threaded runtime). The
        // semaphore is never closed.
        let Ok(permit) = semaphore.clone().acquire_owned().await else {
            break;
        };
        let (ctx, observer, stop) = (Arc::clone(&ctx), Arc::clone(&observer), stop.clone());
        tasks.push(tokio::spawn(async move {
            let _permit = permit;
            let eval_id = spec.eval_id.to_string();
            let result = eval_task(&ctx, &spec, stop, &*observer).await;
            result.map_err(|source| EvalError::Eval {
                eval_id,
                source: Box::new(source),
            })
        }));
    }
    let mut reports = Vec::with_capacity(tasks.len());
    let mut first_error = None;
    for task in tasks {
        match task.await {
            Ok(Ok(report)) => reports.push(report),
            Ok(Err(err)) => {
                first_error.get_or_insert(err);
            }
            Err(source) => {
                first_error.get_or_insert(EvalError::Task { source });
            }
        }
    }
    let summary = RunSummary::from_reports(
        ctx.run_id.as_str(),
        rfc3339(started_at),
        rfc3339(clock.wall()),
        millis(clock.now().saturating_duration_since(started)),
        &reports,
    );
    write_json(&run_dir.join("run.json"), &summary)?;
    observer.run_finished(&summary);
    if let Some(err) = first_error {
        return Err(err);
    }
    Ok(RunOutcome {
        reports,
        summary,
        run_dir,
    })
}

/// Refuses the plan when an eval asks for a sandbox or an isolated network the machine
/// cannot give. The machine is probed (`support`) only when some eval asks for one.
fn check_sandboxes(
    plan: &RunPlan,
    support: impl FnOnce() -> SandboxSupport,
) -> Result<(), EvalError> {
    if !plan.evals.iter().any(|e| e.sandbox.is_requested()) {
        return Ok(());
    }
    let support = support();
    for spec in &plan.evals {
        let refuse = |reason| EvalError::Sandbox {
            eval_id: spec.eval_id.to_string(),
            reason,
        };
        decide(&spec.sandbox, &support).map_err(refuse)?;
    }
    Ok(())
}

/// One eval's task: its run, or its not-started record once a stop was requested.
async fn eval_task(
    ctx: &RunContext,
    spec: &EvalSpec,
    stop: Stop,
    observer: &dyn Observer,
) -> Result<Report, EvalError> {
    if let Some(reason) = stop.reason() {
        let report = not_started(ctx, spec, reason);
        let dir = ctx.run_dir.join(spec.eval_id.as_str());
        std::fs::create_dir_all(&dir).map_err(|e| EvalError::io("create", &dir, e))?;
        let written = write_json(&dir.join("report.json"), &report);
        observer.eval_finished(&report);
        return written.map(|()| report);
    }
    observer.eval_started(spec);
    let report = run_eval(ctx, spec, stop).await?;
    observer.eval_finished(&report);
    Ok(report)
}

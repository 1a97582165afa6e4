//! A run: trials on a pool of workers, each with its records, then `run.json`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hyoka_proctrack::{Launcher, SandboxSupport, Tracker, TrackerOptions};
use hyoka_workspace::{KeepPolicy, RunId};

use crate::error::EvalError;
use crate::eval::{not_started, run_eval};
use crate::host::Harness;
use crate::phases::RunContext;
use crate::records::{millis, rfc3339, write_json};
use crate::report::{Attempt, EvalSummary, Report, RunInfo, RunSummary, Termination};
use crate::sandbox::decide;
use crate::settings::{DEFAULT_GRACE, EvalSpec};
use crate::shard::Shard;
use crate::stop::Stop;
use crate::trials::{Planned, Resume, Trial, plan_trials};

/// The wait before the first retry of a trial; each further retry waits twice as long, up
/// to [`MAX_RETRY_BACKOFF`].
pub const RETRY_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between two attempts of a trial.
pub const MAX_RETRY_BACKOFF: Duration = Duration::from_mins(1);

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
    /// Whether workspace names carry the trial's id (`hyoka-<run>-<trial>-XXXXXX`), as
    /// suites' do.
    pub name_with_eval: bool,
    /// The evals, in the order they start; each runs `epochs` trials. Shared with the
    /// trials, so a long suite's settings are held once.
    pub evals: Vec<Arc<EvalSpec>>,
    /// How many trials run at once (at least one).
    pub workers: usize,
    /// The caller's environment, from which an isolated home passes the basics (`PATH`,
    /// locale, `TERM`, `TZ`, `USER`, `LOGNAME`) and an eval's `pass_env` through. The
    /// harness reads no environment itself.
    pub inherited_env: Vec<(OsString, OsString)>,
    /// Continue an earlier run with this id: keep the trials it finished (see
    /// [`Resume`]). Without an earlier run, the run starts afresh.
    pub resume: Option<Resume>,
    /// The suite's identity, recorded in `run.json` for `report merge` (see
    /// [`suite_identity`](crate::suite_identity)).
    pub suite: Option<String>,
    /// The shard of the suite this run is, recorded in `run.json`.
    pub shard: Option<Shard>,
    /// Whether [`RunOutcome::reports`] holds every trial's report (the default). A long
    /// run sets it false: it then keeps only each trial's line of `run.json` in memory, so
    /// its memory does not grow with its trials' reports (they are on disk, in
    /// `<trial>/report.json`).
    pub keep_reports: bool,
}

impl RunPlan {
    /// A plan for `evals` under `<reports>/<run_id>`, with workspaces in `workspace_root`,
    /// one worker, workspaces never kept, an empty inherited environment, and no resume.
    pub fn new(
        run_id: RunId,
        reports: impl Into<PathBuf>,
        workspace_root: impl Into<PathBuf>,
        evals: Vec<EvalSpec>,
    ) -> Self {
        let evals: Vec<Arc<EvalSpec>> = crate::drain::draining(evals).map(Arc::new).collect();
        Self {
            run_id,
            reports: reports.into(),
            workspace_root: workspace_root.into(),
            keep: KeepPolicy::Never,
            name_with_eval: true,
            evals,
            workers: 1,
            inherited_env: Vec::new(),
            resume: None,
            suite: None,
            shard: None,
            keep_reports: true,
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

/// Progress of a run, as it happens. Called from the trials' tasks: keep it quick.
pub trait Observer: Send + Sync {
    /// A trial starts (it has a worker).
    fn eval_started(&self, trial: &Trial) {
        let _ = trial;
    }

    /// An attempt of a trial ended in an infrastructure error; it runs again after
    /// `retry_in`.
    fn attempt_failed(&self, report: &Report, retry_in: Duration) {
        let _ = (report, retry_in);
    }

    /// A trial ended (or was recorded as not run) and its records are written and synced.
    fn eval_finished(&self, report: &Report) {
        let _ = report;
    }

    /// A resumed run keeps a trial an earlier run finished; it does not run again.
    fn eval_kept(&self, report: &Report) {
        let _ = report;
    }

    /// Every trial ended and `run.json` is written.
    fn run_finished(&self, summary: &RunSummary) {
        let _ = summary;
    }
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// What a finished run left: its trials' reports, in plan order, and the summary in
/// `run.json`.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Each trial's `report.json`, in plan order; empty unless [`RunPlan::keep_reports`].
    pub reports: Vec<Report>,
    /// The workspaces kept (`--keep-workspace`), in plan order: the eval's id and the
    /// workspace's path.
    pub kept_workspaces: Vec<(String, String)>,
    /// `run.json`.
    pub summary: RunSummary,
    /// `<reports>/<run_id>`.
    pub run_dir: PathBuf,
    /// How many trials a resumed run kept from the earlier run.
    pub kept: usize,
}

/// Runs `plan` with real containment: takes the run's owner lock and ledger (a
/// `hyoka-proctrack` [`Tracker`]), runs every trial through it, writes `run.json`, and
/// closes the ledger. The one call an embedder needs.
///
/// With [`RunPlan::resume`], an earlier run with this id that was abandoned (its owner died)
/// is repaired first, as `hyoka clean` would (its processes stopped, its workspaces
/// removed), and the trials it finished are kept.
///
/// # Errors
/// [`EvalError::Tracker`] when the run cannot start (its id is live, or an earlier run with
/// it was never cleaned, or the reports directory is unusable, which is checked before
/// anything is created); [`EvalError::Sandbox`] (before anything is created) when an eval
/// asks for a sandbox the machine cannot give; [`EvalError::Changed`] when a resume finds
/// finished trials of evals that changed; otherwise as [`run`].
pub async fn run_tracked(
    mut plan: RunPlan,
    containment: Containment,
    stop: Stop,
    observer: Arc<dyn Observer>,
) -> Result<RunOutcome, EvalError> {
    hyoka_proctrack::check_reports_dir(&plan.reports, hyoka_proctrack::ReportsUse::Write)?;
    // A sandbox the machine cannot give is refused before the run's directory exists.
    check_sandboxes(&plan, SandboxSupport::detect)?;
    let trials = take_trials(&mut plan)?;
    if plan.resume.is_some() && plan.run_dir().is_dir() {
        let (run_dir, root) = (plan.run_dir(), plan.workspace_root.clone());
        tokio::task::spawn_blocking(move || {
            crate::clean::clean_abandoned_run(&run_dir, &root, DEFAULT_GRACE)
        })
        .await
        .map_err(|source| EvalError::Task { source })??;
    }
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
    let harness = Harness::tracked(tracker.clone());
    let result = run_trials(&plan, trials, &harness, stop, observer).await;
    // Marks the ledger cleaned and releases the owner lock: the run is over.
    if let Err(err) = tracker.close() {
        tracing::error!(error = %err, "cannot close the run's ledger");
    }
    result
}

/// Runs the trials of `plan` on `harness`, up to `plan.workers` at once, in plan order, and
/// writes `run.json`. Each trial writes its own records as it ends (synced before it counts
/// as finished); a trial that ends in an infrastructure error runs again, with backoff, up to
/// its eval's `retries`. A requested stop stops the running trials and records the others as
/// not run; so does an error that leaves a trial without records (those already running
/// finish). With [`RunPlan::resume`], trials an earlier run finished are kept.
///
/// # Errors
/// [`EvalError::InvalidValue`] and [`EvalError::Changed`] before anything runs (see
/// [`RunPlan`]); [`EvalError::Eval`] for the first trial that could not run or record (the
/// others were recorded, and `run.json` was written); [`EvalError::Record`] when `run.json`
/// cannot be written.
pub async fn run(
    mut plan: RunPlan,
    harness: &Harness,
    stop: Stop,
    observer: Arc<dyn Observer>,
) -> Result<RunOutcome, EvalError> {
    check_sandboxes(&plan, || harness.processes.sandbox_support())?;
    let trials = take_trials(&mut plan)?;
    run_trials(&plan, trials, harness, stop, observer).await
}

/// What the run keeps of its trials as they end: each one's line of `run.json` (and, with
/// [`RunPlan::keep_reports`], its whole report), by its place in the plan, put in plan order
/// at the end. A trial's task is joined as soon as it ends, so a finished trial holds no task
/// and no report in memory, and a trial not yet ended holds no room either.
struct Results {
    lines: Vec<(usize, EvalSummary)>,
    reports: Option<Vec<(usize, Report)>>,
    kept_workspaces: Vec<(usize, (String, String))>,
    first_error: Option<EvalError>,
}

impl Results {
    fn new(keep_reports: bool) -> Self {
        Self {
            lines: Vec::new(),
            reports: keep_reports.then(Vec::new),
            kept_workspaces: Vec::new(),
            first_error: None,
        }
    }

    fn add(&mut self, index: usize, report: Report) {
        self.lines.push((index, EvalSummary::of(&report)));
        if let Some(path) = &report.cleanup.workspace_kept_at {
            (self.kept_workspaces).push((index, (report.eval_id.clone(), path.clone())));
        }
        if let Some(reports) = &mut self.reports {
            reports.push((index, report));
        }
    }

    /// A joined trial task: its report, or the first error of the run.
    fn settle(
        &mut self,
        joined: Result<(usize, Result<Report, EvalError>), tokio::task::JoinError>,
    ) {
        match joined {
            Ok((index, Ok(report))) => self.add(index, report),
            Ok((_, Err(err))) => {
                self.first_error.get_or_insert(err);
            }
            Err(source) => {
                self.first_error.get_or_insert(EvalError::Task { source });
            }
        }
    }
}

async fn run_trials(
    plan: &RunPlan,
    trials: Vec<Planned>,
    harness: &Harness,
    stop: Stop,
    observer: Arc<dyn Observer>,
) -> Result<RunOutcome, EvalError> {
    let run_dir = plan.run_dir();
    std::fs::create_dir_all(&run_dir).map_err(|e| EvalError::io("create", &run_dir, e))?;
    // Every path the trials hand an agent, a service or a scorer (`$HYOKA_EVENTS`, the
    // workspace, its home) is absolute: they run in other directories than ours.
    let absolute =
        |path: &Path| std::path::absolute(path).map_err(|e| EvalError::io("resolve", path, e));
    let ctx = Arc::new(RunContext {
        run_id: plan.run_id.clone(),
        run_dir: absolute(&run_dir)?,
        workspace_root: absolute(&plan.workspace_root)?,
        keep: plan.keep,
        name_with_eval: plan.name_with_eval,
        inherited_env: plan.inherited_env.clone().into(),
        harness: harness.clone(),
    });
    let clock = &*harness.clock;
    let started_at = clock.wall();
    let started = clock.now();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(plan.workers.max(1)));
    // Set by the first trial that cannot record: the trials after it are skipped.
    let fatal: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
    let mut results = Results::new(plan.keep_reports);
    let mut tasks = tokio::task::JoinSet::new();
    let mut kept = 0;
    for (index, planned) in trials.into_iter().enumerate() {
        if let Some(report) = planned.kept {
            observer.eval_kept(&report);
            kept += 1;
            results.add(index, *report);
            continue;
        }
        // The trials that ended are joined before the next starts: none waits in memory.
        while let Some(joined) = tasks.try_join_next() {
            results.settle(joined);
        }
        // Permits are taken here, in plan order, so trials start in the order the plan
        // lists them (tasks would otherwise race for permits on a multi-threaded runtime).
        // The semaphore is never closed.
        let Ok(permit) = semaphore.clone().acquire_owned().await else {
            break;
        };
        let (ctx, observer, stop, fatal) = (
            Arc::clone(&ctx),
            Arc::clone(&observer),
            stop.clone(),
            Arc::clone(&fatal),
        );
        tasks.spawn(async move {
            let _permit = permit;
            let eval_id = planned.trial.id.to_string();
            let result = trial_task(&ctx, &planned, stop, &fatal, &*observer).await;
            let result = result.map_err(|source| {
                let _ = fatal.set(format!("trial {eval_id} could not record: {source}"));
                EvalError::Eval {
                    eval_id,
                    source: Box::new(source),
                }
            });
            (index, result)
        });
    }
    while let Some(joined) = tasks.join_next().await {
        results.settle(joined);
    }
    let Results {
        lines,
        reports,
        kept_workspaces,
        first_error,
    } = results;
    let summary = RunSummary::from_evals(
        RunInfo {
            run_id: ctx.run_id.to_string(),
            started_at: rfc3339(started_at),
            ended_at: rfc3339(clock.wall()),
            duration_ms: millis(clock.now().saturating_duration_since(started)),
            suite: plan.suite.clone(),
            shard: plan.shard.map(|s| format!("{}/{}", s.index, s.count)),
        },
        in_plan_order(lines),
    );
    write_json(&run_dir.join("run.json"), &summary)?;
    observer.run_finished(&summary);
    if let Some(err) = first_error {
        return Err(err);
    }
    Ok(RunOutcome {
        reports: reports.map(in_plan_order).unwrap_or_default(),
        kept_workspaces: in_plan_order(kept_workspaces),
        summary,
        run_dir,
        kept,
    })
}

/// The plan's trials (see [`plan_trials`]), which take its evals: each eval's settings then
/// live in its trials alone, and go with the last of them.
fn take_trials(plan: &mut RunPlan) -> Result<Vec<Planned>, EvalError> {
    let trials = plan_trials(&plan.evals, &plan.run_dir(), plan.resume)?;
    plan.evals = Vec::new();
    Ok(trials)
}

/// What [`Results`] holds, in plan order.
fn in_plan_order<T>(mut by_place: Vec<(usize, T)>) -> Vec<T> {
    by_place.sort_unstable_by_key(|(place, _)| *place);
    by_place.into_iter().map(|(_, item)| item).collect()
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

/// How long to wait before attempt `attempt + 1` of a trial.
fn backoff(attempt: usize) -> Duration {
    let doublings = u32::try_from(attempt.saturating_sub(1))
        .unwrap_or(u32::MAX)
        .min(16);
    (RETRY_BACKOFF * 2u32.pow(doublings)).min(MAX_RETRY_BACKOFF)
}

/// One trial's task: its attempts and its records, or its not-run record once a stop was
/// requested or an earlier trial could not record.
async fn trial_task(
    ctx: &RunContext,
    planned: &Planned,
    stop: Stop,
    fatal: &OnceLock<String>,
    observer: &dyn Observer,
) -> Result<Report, EvalError> {
    let trial = &planned.trial;
    let dir = ctx.run_dir.join(trial.id.as_str());
    let skip = match (stop.reason(), fatal.get()) {
        (Some(reason), _) => Some((
            Termination::Interrupted,
            format!("not started: {} arrived first", reason.name()),
        )),
        (None, Some(error)) => Some((Termination::Skipped, format!("not started: {error}"))),
        (None, None) => None,
    };
    if let Some((termination, why)) = skip {
        let report = not_started(ctx, trial, &planned.identity, termination, why);
        std::fs::create_dir_all(&dir).map_err(|e| EvalError::io("create", &dir, e))?;
        write_json(&dir.join("report.json"), &report)?;
        observer.eval_finished(&report);
        return Ok(report);
    }
    observer.eval_started(trial);
    let mut earlier: Vec<Attempt> = Vec::new();
    let mut report = loop {
        let attempt = earlier.len() + 1;
        let number = u32::try_from(attempt).unwrap_or(u32::MAX);
        let mut report = run_eval(ctx, trial, &planned.identity, number, stop.clone()).await?;
        let retry = report.is_retryable()
            && attempt <= trial.spec.retries as usize
            && stop.reason().is_none();
        report.attempts = number;
        if !retry {
            break report;
        }
        let delay = backoff(attempt);
        observer.attempt_failed(&report, delay);
        tracing::warn!(trial = %trial.id, attempt, reason = report.reason().unwrap_or_default(), "infrastructure error; retrying in {}", humantime::format_duration(delay));
        let mut stopped = stop.clone();
        tokio::select! {
            () = tokio::time::sleep(delay) => earlier.push(Attempt::of(&report)),
            // A stop during the wait ends the trial with the attempt it has.
            _ = stopped.requested() => break report,
        }
    };
    report.earlier_attempts = earlier;
    // Written atomically and synced (the attempt's logs and timeline already are): from here
    // on the trial counts as finished, also for a resume after a crash.
    write_json(&dir.join("report.json"), &report)?;
    observer.eval_finished(&report);
    Ok(report)
}

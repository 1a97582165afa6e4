//! `hyoka run`: one command, or the evals of a suite, in isolated workspaces, with records.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use hyoka_proctrack::{Launcher, ProcTrackError, Tracker, TrackerOptions};
use hyoka_workspace::{EvalId, Injection, RunId};

use crate::args::RunArgs;
use crate::eval::{EvalPhases, EvalSpec, RunContext, not_started, run_eval};
use crate::events::EventSource;
use crate::interrupt::{Interrupt, Level};
use crate::limits::PartialLimits;
use crate::out::outln;
use crate::records::{millis, rfc3339, write_json};
use crate::report::{Report, RunSummary, Status};
use crate::suite::{self, DEFAULT_PHASE_TIMEOUT, PhaseCommand, PhaseSettings, Settings};
use crate::{ExitStatus, Fail};

/// The built-in timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_mins(10);
/// The built-in SIGTERM→SIGKILL grace.
const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// Validated inputs of a run.
#[derive(Debug)]
pub(crate) struct RunPlan {
    pub(crate) ctx: RunPlanContext,
    pub(crate) evals: Vec<EvalSpec>,
    pub(crate) workers: usize,
}

pub(crate) async fn exec(args: RunArgs) -> Result<ExitStatus, Fail> {
    let json = args.json;
    let plan = plan(&args)?;
    let (interrupt, _signals) = crate::interrupt::install()
        .map_err(|e| Fail::failure(format!("cannot install signal handlers: {e}")))?;
    let outcome = execute(&plan, Progress::new(plan.evals.len()), interrupt.clone()).await?;
    print_summary(&outcome.summary, &plan.ctx.run_dir, json);
    Ok(match interrupt.level() {
        Level::Graceful(sig) | Level::Force(sig) => sig.exit_status(),
        Level::Running if outcome.summary.status == Status::Passed => ExitStatus::Success,
        Level::Running => ExitStatus::Failure,
    })
}

/// Checks every input before anything is created.
pub(crate) fn plan(args: &RunArgs) -> Result<RunPlan, Fail> {
    let run_id = args.run_id.clone().unwrap_or_else(default_run_id);
    let workspace_root = args
        .workspace_root
        .clone()
        .unwrap_or_else(std::env::temp_dir);
    require_dir(&workspace_root, "workspace root")?;
    if let Some(starter) = &args.starter {
        require_dir(starter, "starter")?;
    }
    check_reports_dir(&args.reports)?;
    let run_dir = args.reports.join(run_id.as_str());
    if run_dir.exists() {
        return Err(Fail::usage(format!(
            "run id {run_id} already has reports at {}; pick another --run-id",
            run_dir.display()
        )));
    }
    let cli = Settings {
        timeout: args.timeout,
        grace: args.grace,
        events: args.events,
        limits: PartialLimits {
            max_turns: args.max_turns,
            max_files: args.max_files,
            max_output_size: args.max_output_size,
            max_session_actions: args.max_session_actions,
        },
        env: Vec::new(),
        phases: cli_phases(args)?,
    };
    let (evals, name_with_eval) = if let Some(path) = &args.suite {
        let suite = suite::load(path).map_err(Fail::usage)?;
        let evals: Vec<EvalSpec> = suite
            .evals
            .iter()
            .enumerate()
            .filter(|(position, _)| args.shard.is_none_or(|shard| shard.includes(*position)))
            .map(|(_, eval)| {
                spec(
                    eval.id.clone(),
                    eval.command.clone(),
                    eval.starter.clone(),
                    &[&cli, &eval.settings, &suite.defaults],
                )
            })
            .collect();
        (evals, true)
    } else {
        if args.command.first().is_none_or(|p| p.is_empty()) {
            return Err(Fail::usage("the command after `--` is empty"));
        }
        let eval = spec(
            EvalId::main(),
            args.command.clone(),
            args.starter.clone(),
            &[&cli],
        );
        (vec![eval], false)
    };
    Ok(RunPlan {
        ctx: RunPlanContext {
            run_id,
            run_dir,
            workspace_root,
            keep: args.keep_workspace,
            name_with_eval,
            shim_grace: args.grace.unwrap_or(DEFAULT_GRACE),
        },
        evals,
        workers: usize::from(args.workers),
    })
}

/// The phase flags of `hyoka run` (single-command runs; suites set phases per eval).
fn cli_phases(args: &RunArgs) -> Result<PhaseSettings, Fail> {
    let shell = |cmd: &str, timeout: Option<Duration>| PhaseCommand {
        command: vec!["sh".into(), "-c".into(), cmd.into()],
        timeout: timeout.unwrap_or(DEFAULT_PHASE_TIMEOUT),
    };
    let mut files = Vec::new();
    for spec in &args.files {
        let (source, target) = if let Some((source, target)) = spec.split_once(':') {
            (PathBuf::from(source), PathBuf::from(target))
        } else {
            let source = PathBuf::from(spec);
            let name = source
                .file_name()
                .map(PathBuf::from)
                .ok_or_else(|| Fail::usage(format!("--file {spec:?} has no file name")))?;
            (source, name)
        };
        if target.is_absolute()
            || target
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(Fail::usage(format!(
                "--file target {} must stay inside the workspace",
                target.display()
            )));
        }
        let injection = Injection { source, target };
        hyoka_workspace::check_injection(&injection)
            .map_err(|e| Fail::usage(format!("--file {spec}: {e}")))?;
        files.push(injection);
    }
    for name in &args.pass_env {
        if name.is_empty() || name.contains('=') {
            return Err(Fail::usage(format!(
                "--pass-env {name:?} is not a variable name"
            )));
        }
    }
    Ok(PhaseSettings {
        files: (!files.is_empty()).then_some(files),
        services: None,
        build: args.build.as_deref().map(|c| shell(c, args.build_timeout)),
        review: args
            .review
            .as_deref()
            .map(|c| shell(c, args.review_timeout)),
        isolate_home: args.isolate_home.then_some(true),
        pass_env: (!args.pass_env.is_empty()).then(|| args.pass_env.clone()),
    })
}

/// What a run needs before its tracker exists.
#[derive(Debug, Clone)]
pub(crate) struct RunPlanContext {
    pub(crate) run_id: RunId,
    pub(crate) run_dir: PathBuf,
    pub(crate) workspace_root: PathBuf,
    pub(crate) keep: hyoka_workspace::KeepPolicy,
    pub(crate) name_with_eval: bool,
    /// How long the shim gives the agent's tree if hyoka itself dies.
    pub(crate) shim_grace: Duration,
}

/// Builds an eval's effective settings from levels ordered strongest first.
fn spec(
    eval_id: EvalId,
    command: Vec<std::ffi::OsString>,
    starter: Option<PathBuf>,
    levels: &[&Settings],
) -> EvalSpec {
    let pick = |f: &dyn Fn(&Settings) -> Option<Duration>| levels.iter().find_map(|l| f(l));
    let limits = levels
        .iter()
        .fold(PartialLimits::default(), |acc, level| acc.or(level.limits))
        .resolve();
    // Environment: weakest level first, so stronger levels override.
    let env = levels
        .iter()
        .rev()
        .flat_map(|l| l.env.iter().cloned())
        .collect();
    // Each phase field comes from the strongest level that sets it.
    let phases = EvalPhases {
        files: levels
            .iter()
            .find_map(|l| l.phases.files.clone())
            .unwrap_or_default(),
        services: levels
            .iter()
            .find_map(|l| l.phases.services.clone())
            .unwrap_or_default(),
        build: levels.iter().find_map(|l| l.phases.build.clone()),
        review: levels.iter().find_map(|l| l.phases.review.clone()),
        isolate_home: levels
            .iter()
            .find_map(|l| l.phases.isolate_home)
            .unwrap_or(false),
        pass_env: levels
            .iter()
            .find_map(|l| l.phases.pass_env.clone())
            .unwrap_or_default(),
    };
    EvalSpec {
        eval_id,
        command,
        starter,
        timeout: pick(&|l| l.timeout).unwrap_or(DEFAULT_TIMEOUT),
        grace: pick(&|l| l.grace).unwrap_or(DEFAULT_GRACE),
        env,
        limits,
        events: levels
            .iter()
            .find_map(|l| l.events)
            .unwrap_or(EventSource::None),
        phases,
    }
}

/// What a finished run left: its reports and summary.
pub(crate) struct RunOutcome {
    pub(crate) reports: Vec<Report>,
    pub(crate) summary: RunSummary,
}

/// Creates the run directory, takes the owner lock, runs the evals (up to `workers` at
/// once) and writes `run.json`.
pub(crate) async fn execute(
    plan: &RunPlan,
    progress: Progress,
    interrupt: Interrupt,
) -> Result<RunOutcome, Fail> {
    let plan_ctx = &plan.ctx;
    let reports_dir = plan_ctx.run_dir.parent().unwrap_or(Path::new("."));
    let mut options = TrackerOptions::new(plan_ctx.run_id.as_str(), reports_dir);
    options.shim = Some(Launcher {
        program: std::env::current_exe()
            .map_err(|e| Fail::failure(format!("cannot find the hyoka executable: {e}")))?,
        args: vec!["__shim".into()],
    });
    options.shim_grace = plan_ctx.shim_grace;
    let tracker = Tracker::start(options).map_err(|e| match e {
        ProcTrackError::RunLive { .. }
        | ProcTrackError::UncleanRun { .. }
        | ProcTrackError::InvalidId { .. } => Fail::usage(e.to_string()),
        other => Fail::failure(format!("cannot start the run: {other}")),
    })?;
    if let Some(reason) = tracker.cgroup_unavailable() {
        tracing::info!(
            reason,
            "no cgroup layer; containment uses the shim, sessions and the marker"
        );
    }
    let ctx = &RunContext {
        run_id: plan_ctx.run_id.clone(),
        run_dir: plan_ctx.run_dir.clone(),
        workspace_root: plan_ctx.workspace_root.clone(),
        keep: plan_ctx.keep,
        name_with_eval: plan_ctx.name_with_eval,
        tracker: tracker.clone(),
    };
    let started_at = SystemTime::now();
    let started = Instant::now();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(plan.workers.max(1)));
    let ctx_shared = Arc::new(ctx.clone());
    let progress = Arc::new(progress);
    let mut tasks = Vec::with_capacity(plan.evals.len());
    for spec in plan.evals.iter().cloned() {
        // Permits are taken here, in suite order, so evals start in the order the suite lists
        // them (tasks would otherwise race for permits on a multi-threaded runtime).
        let permit = semaphore
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let (ctx, progress) = (ctx_shared.clone(), progress.clone());
        let interrupt = interrupt.clone();
        tasks.push(tokio::spawn(async move {
            let _permit = permit;
            if let Level::Graceful(sig) | Level::Force(sig) = interrupt.level() {
                let report = not_started(&ctx, &spec, sig.name());
                let dir = ctx.run_dir.join(spec.eval_id.as_str());
                let written = std::fs::create_dir_all(&dir)
                    .and_then(|()| write_json(&dir.join("report.json"), &report));
                progress.finished(&report);
                return written
                    .map(|()| report)
                    .map_err(|e| format!("eval {}: {e}", spec.eval_id));
            }
            progress.started(&spec.eval_id);
            let result = run_eval(&ctx, &spec, interrupt).await;
            if let Ok(report) = &result {
                progress.finished(report);
            }
            result.map_err(|e| format!("eval {}: {e}", spec.eval_id))
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
            Err(err) => {
                first_error.get_or_insert(format!("an eval task failed: {err}"));
            }
        }
    }
    progress.done();
    let summary = RunSummary::from_reports(
        ctx.run_id.as_str(),
        rfc3339(started_at),
        rfc3339(SystemTime::now()),
        millis(started.elapsed()),
        &reports,
    );
    write_json(&ctx.run_dir.join("run.json"), &summary)
        .map_err(|e| Fail::failure(format!("cannot write run.json: {e}")))?;
    drop(ctx_shared);
    // Marks the ledger cleaned and releases the owner lock: the run is over.
    if let Err(err) = tracker.close() {
        tracing::error!(error = %err, "cannot close the run's ledger");
    }
    if let Some(err) = first_error {
        return Err(Fail::failure(err));
    }
    Ok(RunOutcome { reports, summary })
}

/// Progress on stderr: a bar on a terminal, plain lines otherwise.
pub(crate) struct Progress {
    bar: Option<indicatif::ProgressBar>,
    total: usize,
    finished: std::sync::atomic::AtomicUsize,
}

impl Progress {
    pub(crate) fn new(total: usize) -> Self {
        let bar = (total > 1 && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Self {
            bar,
            total,
            finished: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// No output at all (the demo narrates itself).
    pub(crate) fn silent() -> Self {
        Self {
            bar: None,
            total: 0,
            finished: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn started(&self, eval: &EvalId) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("running {eval}"));
        }
    }

    #[expect(
        clippy::print_stderr,
        reason = "progress lines when stderr is not a terminal"
    )]
    fn finished(&self, report: &Report) {
        let n = self
            .finished
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let line = format!(
            "[{n}/{}] {}: {} ({}) in {}",
            self.total,
            report.eval_id,
            report.status.as_str(),
            report.termination.as_str(),
            humantime::format_duration(Duration::from_millis(report.duration_ms))
        );
        match &self.bar {
            Some(bar) => {
                bar.println(line);
                bar.inc(1);
            }
            None if self.total > 1 => eprintln!("{line}"),
            None => {}
        }
    }

    fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn print_summary(summary: &RunSummary, run_dir: &Path, json: bool) {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(summary).unwrap_or_default()
        );
        return;
    }
    let t = &summary.totals;
    outln!(
        "run {}: {} — {} passed, {} failed, {} errors in {}",
        summary.run_id,
        summary.status.as_str(),
        t.passed,
        t.failed,
        t.errors,
        humantime::format_duration(Duration::from_millis(summary.duration_ms))
    );
    let shown = summary.evals.len().min(20);
    for eval in &summary.evals[..shown] {
        outln!(
            "  {:<7} {:<24} {:<20} turns {:>3}  actions {:>3}  files {:>4}  {}",
            eval.status.as_str(),
            eval.eval_id,
            eval.termination.as_str(),
            eval.counts.turns,
            eval.counts.actions,
            eval.counts.files,
            humantime::format_duration(Duration::from_millis(eval.duration_ms))
        );
    }
    if summary.evals.len() > shown {
        outln!(
            "  … and {} more (see run.json)",
            summary.evals.len() - shown
        );
    }
    outln!("reports: {}", run_dir.display());
}

pub(crate) fn require_dir(path: &Path, what: &str) -> Result<(), Fail> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Fail::usage(format!(
            "{what} {} is not a directory",
            path.display()
        ))),
        Err(err) => Err(Fail::usage(format!("{what} {}: {err}", path.display()))),
    }
}

pub(crate) fn check_reports_dir(path: &Path) -> Result<(), Fail> {
    hyoka_proctrack::check_reports_dir(path, hyoka_proctrack::ReportsUse::Write)
        .map_err(|e| Fail::usage(e.to_string()))
}

/// `YYYYMMDD-HHMMSS-xxxxxx` in UTC, with a random suffix so two runs in one second differ.
pub(crate) fn default_run_id() -> RunId {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let digits: String = stamp.chars().filter(char::is_ascii_digit).collect();
    let suffix: String = (0..6)
        .map(|_| fastrand::alphanumeric().to_ascii_lowercase())
        .collect();
    RunId::new(format!("{}-{}-{suffix}", &digits[..8], &digits[8..14]))
        .expect("generated run ids are valid")
}

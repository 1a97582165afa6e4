//! `hyoka run`: one command, or the evals of a suite, in isolated workspaces, with records.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyoka_eval::{
    Containment, EvalSpec, Observer, PartialLimits, PhaseCommand, PhaseSettings, Report,
    RunOutcome, RunPlan, RunSummary, SandboxSettings, Settings, Status, Suite, injection,
    valid_env_name,
};
use hyoka_workspace::EvalId;

use crate::args::RunArgs;
use crate::exit::{ExitStatus, Fail};
use crate::input::{check_reports_dir, default_run_id, require_dir};
use crate::out::outln;

pub(crate) async fn exec(args: RunArgs) -> Result<ExitStatus, Fail> {
    let json = args.json;
    let plan = plan(&args)?;
    let (stop, _signals) = crate::interrupt::install("every eval")
        .map_err(|e| Fail::failure(format!("cannot install signal handlers: {e}")))?;
    let containment = Containment {
        shim: Some(crate::harness::shim()?),
        shim_grace: args.grace,
    };
    let progress = Arc::new(Progress::new(plan.evals.len()));
    let outcome = hyoka_eval::run_tracked(&plan, containment, stop.clone(), progress)
        .await
        .map_err(crate::harness::run_failure)?;
    print_summary(&outcome, json);
    Ok(match stop.reason() {
        Some(reason) => crate::interrupt::exit_status(reason),
        None if outcome.summary.status == Status::Passed => ExitStatus::Success,
        None => ExitStatus::Failure,
    })
}

/// Checks every input before anything is created.
fn plan(args: &RunArgs) -> Result<RunPlan, Fail> {
    let run_id = args.run_id.clone().unwrap_or_else(default_run_id);
    let workspace_root = args
        .workspace_root
        .clone()
        .unwrap_or_else(std::env::temp_dir);
    require_dir(&workspace_root, "workspace root")?;
    if let Some(starter) = &args.starter {
        require_dir(starter, "starter")?;
    }
    if args.shard.is_some() && args.suite.is_none() {
        return Err(Fail::usage(
            "--shard needs --suite: only a suite's evals are sharded",
        ));
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
        sandbox: SandboxSettings {
            mode: args.sandbox,
            network: args.network,
            ..SandboxSettings::default()
        },
    };
    let (evals, name_with_eval) = if let Some(path) = &args.suite {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Fail::usage(format!("cannot read suite {}: {e}", path.display())))?;
        let suite = Suite::from_yaml(&text, path).map_err(|e| Fail::usage(e.to_string()))?;
        (suite.specs(&cli, args.shard), true)
    } else {
        match args.command.first() {
            None => {
                return Err(Fail::usage(
                    "no agent command: hyoka run [OPTIONS] -- COMMAND [ARGS]... (or --suite FILE)",
                ));
            }
            Some(program) if program.is_empty() => {
                return Err(Fail::usage("the command after `--` is empty"));
            }
            Some(_) => {}
        }
        let eval = EvalSpec::resolve(
            EvalId::main(),
            args.command.clone(),
            args.starter.clone(),
            &[&cli],
        );
        (vec![eval], false)
    };
    Ok(RunPlan {
        keep: args.keep_workspace,
        name_with_eval,
        workers: usize::from(args.workers),
        inherited_env: std::env::vars_os().collect(),
        ..RunPlan::new(run_id, &args.reports, workspace_root, evals)
    })
}

/// The phase flags of `hyoka run` (single-command runs; suites set phases per eval).
fn cli_phases(args: &RunArgs) -> Result<PhaseSettings, Fail> {
    let mut files = Vec::new();
    for spec in &args.files {
        let (source, target) = match spec.split_once(':') {
            Some((source, target)) => (source, Some(PathBuf::from(target))),
            None => (spec.as_str(), None),
        };
        files.push(
            injection(PathBuf::from(source), target)
                .map_err(|e| Fail::usage(format!("--file {spec:?}: {e}")))?,
        );
    }
    if let Some(name) = args.pass_env.iter().find(|n| !valid_env_name(n)) {
        return Err(Fail::usage(format!(
            "--pass-env {name:?} is not a variable name"
        )));
    }
    Ok(PhaseSettings {
        files: (!files.is_empty()).then_some(files),
        services: None,
        build: (args.build.as_deref()).map(|c| PhaseCommand::shell(c, args.build_timeout)),
        review: (args.review.as_deref()).map(|c| PhaseCommand::shell(c, args.review_timeout)),
        isolate_home: args.isolate_home.then_some(true),
        pass_env: (!args.pass_env.is_empty()).then(|| args.pass_env.clone()),
    })
}

/// Progress on stderr: a bar on a terminal, plain lines otherwise.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    total: usize,
    finished: AtomicUsize,
}

impl Progress {
    fn new(total: usize) -> Self {
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
            finished: AtomicUsize::new(0),
        }
    }
}

impl Observer for Progress {
    fn eval_started(&self, spec: &EvalSpec) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("running {}", spec.eval_id));
        }
    }

    #[expect(
        clippy::print_stderr,
        reason = "progress lines when stderr is not a terminal"
    )]
    fn eval_finished(&self, report: &Report) {
        let n = self.finished.fetch_add(1, Ordering::Relaxed) + 1;
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

    fn run_finished(&self, _summary: &RunSummary) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn print_summary(outcome: &RunOutcome, json: bool) {
    let summary = &outcome.summary;
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
    for report in &outcome.reports {
        if let Some(path) = &report.cleanup.workspace_kept_at {
            outln!("kept workspace ({}): {path}", report.eval_id);
        }
    }
    outln!("reports: {}", outcome.run_dir.display());
}

//! `hyoka run`: one command, or the evals of a suite, in isolated workspaces, with records.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use hyoka_eval::{
    Containment, EvalSpec, PartialLimits, PhaseCommand, PhaseSettings, ProgressLines, ProgressSink,
    Resume, RunPlan, SandboxSettings, Settings, Suite, injection_arg, suite_identity,
    valid_env_name,
};
use hyoka_workspace::EvalId;

use crate::args::RunArgs;
use crate::exit::{ExitStatus, Fail};
use crate::input::{check_reports_dir, default_run_id, require_dir};
use crate::out::outln;

pub(crate) async fn exec(args: RunArgs) -> Result<ExitStatus, Fail> {
    let (json, fail_on) = (args.json, args.fail_on);
    let plan = plan(&args)?;
    let (stop, _signals) = crate::interrupt::install("every eval")
        .map_err(|e| Fail::failure(format!("cannot install signal handlers: {e}")))?;
    let containment = Containment {
        shim: Some(crate::harness::shim()?),
        shim_grace: args.grace,
    };
    let trials = plan.evals.iter().map(|e| e.epochs as usize).sum();
    let progress = Arc::new(Progress::new(trials));
    let outcome = hyoka_eval::run_tracked(&plan, containment, stop.clone(), progress)
        .await
        .map_err(crate::harness::run_failure)?;
    if json {
        crate::out::json(&outcome.summary);
    } else {
        if outcome.kept > 0 {
            outln!("resumed: {} finished trial(s) kept", outcome.kept);
        }
        crate::out::text(&hyoka_eval::render_summary(
            &outcome.summary,
            &outcome.run_dir,
        ));
        for report in &outcome.reports {
            if let Some(path) = &report.cleanup.workspace_kept_at {
                outln!("kept workspace ({}): {path}", report.eval_id);
            }
        }
    }
    Ok(match stop.reason() {
        Some(reason) => crate::interrupt::exit_status(reason),
        None if outcome.summary.fails(fail_on) => ExitStatus::Failure,
        None => ExitStatus::Success,
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
    if run_dir.exists() && !args.resume {
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
            max_tokens: args.max_tokens,
            max_cost: args.max_cost,
        },
        env: Vec::new(),
        phases: cli_phases(args)?,
        sandbox: SandboxSettings {
            mode: args.sandbox,
            network: args.network,
            ..SandboxSettings::default()
        },
        epochs: args.epochs,
        retries: args.retries,
    };
    let (evals, name_with_eval, suite) = if let Some(path) = &args.suite {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Fail::usage(format!("cannot read suite {}: {e}", path.display())))?;
        let suite = Suite::from_yaml(&text, path)?;
        (suite.specs(&cli, args.shard), true, suite.identity(&cli))
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
        let identity = suite_identity(std::slice::from_ref(&eval));
        (vec![eval], false, identity)
    };
    Ok(RunPlan {
        keep: args.keep_workspace,
        name_with_eval,
        workers: usize::from(args.workers),
        inherited_env: std::env::vars_os().collect(),
        resume: args.resume.then_some(Resume {
            rerun_changed: args.rerun_changed,
        }),
        suite: Some(suite.map_err(|e| Fail::usage(e.to_string()))?),
        shard: args.shard,
        ..RunPlan::new(run_id, &args.reports, workspace_root, evals)
    })
}

/// The phase flags of `hyoka run` (single-command runs; suites set phases per eval).
fn cli_phases(args: &RunArgs) -> Result<PhaseSettings, Fail> {
    let files = (args.files.iter())
        .map(|spec| injection_arg(spec).map_err(|e| Fail::usage(format!("--file {spec:?}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
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
    many: bool,
}

impl Progress {
    fn new(total: usize) -> ProgressLines<Self> {
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
        ProgressLines::new(
            total,
            Self {
                bar,
                many: total > 1,
            },
        )
    }
}

impl ProgressSink for Progress {
    #[expect(
        clippy::print_stderr,
        reason = "progress lines when stderr is not a terminal"
    )]
    fn line(&self, line: &str, finished: bool) {
        match &self.bar {
            Some(bar) => {
                bar.println(line);
                bar.inc(u64::from(finished));
            }
            None if self.many || !finished => eprintln!("{line}"),
            None => {}
        }
    }

    fn started(&self, trial: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("running {trial}"));
        }
    }

    fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

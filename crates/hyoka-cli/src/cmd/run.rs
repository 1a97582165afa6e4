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
    let outcome = hyoka_eval::run_tracked(plan, containment, stop.clone(), progress)
        .await
        .map_err(crate::harness::run_failure)?;
    if json {
        crate::out::json(&outcome.summary);
    } else {
        if outcome.kept > 0 {
            outln!("resumed: {} finished trial(s) kept", outcome.kept);
        }
        crate::out::text(&hyoka_report::render_summary(
            &outcome.summary,
            &outcome.run_dir,
        ));
        for (eval_id, path) in &outcome.kept_workspaces {
            outln!("kept workspace ({eval_id}): {path}");
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
    if args.shard.is_some() && args.suite.is_none() && args.task.tasks.is_none() {
        return Err(Fail::usage(
            "--shard needs --suite or --tasks: only a suite's evals and a dataset's tasks are sharded",
        ));
    }
    let how = &args.task.how;
    let task_flags = args.task.agent.is_some()
        || how.environment.is_some()
        || how.reward_threshold.is_some()
        || how.reward_key.is_some()
        || how.skip_build_steps;
    if task_flags && args.task.tasks.is_none() && args.suite.is_none() {
        return Err(Fail::usage(
            "--agent, --environment, --reward-threshold, --reward-key and --skip-build-steps apply to Harbor tasks: give --tasks DIR (or a suite with tasks:)",
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
    let cli = cli_settings(args)?;
    let (evals, name_with_eval, suite) = if let Some(path) = &args.suite {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Fail::usage(format!("cannot read suite {}: {e}", path.display())))?;
        let mut suite = Suite::from_yaml(&text, path)?;
        if !suite.tasks.is_empty() {
            suite.task_run =
                crate::cmd::tasks::run_options(&args.task.how, crate::cmd::tasks::agent(args))?;
            if !suite.tasks_have_agents() {
                return Err(Fail::usage(format!(
                    "{}: its tasks need an agent: name agents: in the suite, or give --agent oracle|nop or a command after `--`",
                    path.display()
                )));
            }
        }
        // The identity is of every eval, whatever the shard: unsharded, of the run's own
        // specs (resolving them twice would hold a long suite's settings twice over).
        let sharded_identity = args.shard.map(|_| suite.identity(&cli));
        let mut evals = suite.into_specs(&cli, args.shard);
        let identity = sharded_identity.unwrap_or_else(|| suite_identity(&evals));
        // A `model:` entry is served by this very binary's `hyoka model-stub serve`.
        if let Ok(exe) = std::env::current_exe() {
            for stub in evals.iter_mut().filter_map(|e| e.phases.model.as_mut()) {
                stub.program = vec![exe.clone().into(), "model-stub".into(), "serve".into()];
            }
        }
        (evals, true, identity)
    } else if let Some(dir) = &args.task.tasks {
        let evals = crate::cmd::tasks::run_specs(dir, args, &cli, args.shard)?;
        // The identity is of every task, whatever the shard, as a suite's is.
        let all = if args.shard.is_some() {
            crate::cmd::tasks::run_specs(dir, args, &cli, None)?
        } else {
            evals.clone()
        };
        (evals, true, suite_identity(&all))
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
            allow_reshape: args.allow_reshape,
        }),
        suite: Some(suite.map_err(|e| Fail::usage(e.to_string()))?),
        shard: args.shard,
        // The reports are on disk; a run of many trials keeps only their lines.
        keep_reports: false,
        ..RunPlan::new(run_id, &args.reports, workspace_root, evals)
    })
}

/// The command line's level of settings.
fn cli_settings(args: &RunArgs) -> Result<Settings, Fail> {
    Ok(Settings {
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
            max_memory: args.max_memory,
            max_pids: args.max_pids,
            cpu_millis: args.cpus,
            max_disk: args.max_disk,
        },
        env: Vec::new(),
        phases: cli_phases(args)?,
        sandbox: SandboxSettings {
            mode: args.sandbox,
            network: args.network,
            read: (!args.sandbox_read.is_empty()).then(|| {
                args.sandbox_read
                    .iter()
                    .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
                    .collect()
            }),
            ..SandboxSettings::default()
        },
        epochs: args.epochs,
        retries: args.retries,
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
        model: None,
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

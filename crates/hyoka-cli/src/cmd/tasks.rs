//! Harbor task folders: the options of `hyoka run --tasks` (and a suite's `tasks:`), and
//! `hyoka tasks check`.

use std::path::Path;
use std::sync::Arc;

use hyoka_eval::{
    Containment, EvalSpec, NoObserver, PhaseSettings, RewardRules, RunPlan, SandboxSettings,
    Settings, Shard, TaskAgent, TaskEnvironment, TaskOptions, TaskRunOptions, check_agents,
    check_tasks, hidden_dirs, load_tasks, render_check, suite_identity, task_specs, valid_env_name,
};

use crate::args::{BuiltinAgent, RunArgs, TaskFlags, TasksCheckArgs};
use crate::exit::{ExitStatus, Fail};
use crate::input::{check_reports_dir, default_run_id, require_dir};

/// The agent `hyoka run --tasks` names: `--agent`, or the command after `--`.
pub(crate) fn agent(args: &RunArgs) -> Option<TaskAgent> {
    match args.task.agent {
        Some(BuiltinAgent::Oracle) => Some(TaskAgent::Oracle),
        Some(BuiltinAgent::Nop) => Some(TaskAgent::Nop),
        None if !args.command.is_empty() => Some(TaskAgent::Command {
            name: None,
            argv: args.command.clone(),
        }),
        None => None,
    }
}

/// How tasks run, from the flags; a container environment must have its engine here.
pub(crate) fn run_options(
    flags: &TaskFlags,
    agent: Option<TaskAgent>,
) -> Result<TaskRunOptions, Fail> {
    let environment = flags.environment.unwrap_or_default();
    if environment != TaskEnvironment::Host {
        probe_engine(environment)?;
    }
    let defaults = RewardRules::default();
    Ok(TaskRunOptions {
        agent,
        environment,
        rules: RewardRules {
            threshold: flags.reward_threshold.unwrap_or(defaults.threshold),
            key: flags.reward_key.clone().unwrap_or(defaults.key),
        },
        options: TaskOptions {
            skip_build_steps: flags.skip_build_steps,
            host_env: std::env::vars_os().collect(),
        },
    })
}

/// Refuses a container environment whose engine does not answer here.
fn probe_engine(environment: TaskEnvironment) -> Result<(), Fail> {
    let (program, args): (&str, &[&str]) = match environment {
        TaskEnvironment::Podman => ("podman", &["info", "--format", "{{.Host.Arch}}"]),
        TaskEnvironment::Docker => ("docker", &["version", "--format", "{{.Server.Version}}"]),
        TaskEnvironment::Host => return Ok(()),
    };
    let output = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output();
    match output {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => {
            let why = String::from_utf8_lossy(&out.stderr);
            let why = why
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no reason given");
            Err(Fail::usage(format!(
                "--environment {}: no {program} engine answers here ({program} {}: {why})",
                environment.as_str(),
                args[0]
            )))
        }
        Err(e) => Err(Fail::usage(format!(
            "--environment {}: {program} is not installed here ({e}); use --environment host",
            environment.as_str()
        ))),
    }
}

/// The evals of `hyoka run --tasks DIR`, with the command line as the strongest level.
pub(crate) fn run_specs(
    dir: &Path,
    args: &RunArgs,
    cli: &Settings,
    shard: Option<Shard>,
) -> Result<Vec<EvalSpec>, Fail> {
    let Some(agent) = agent(args) else {
        return Err(Fail::usage(
            "--tasks needs an agent: --agent oracle, --agent nop, or the command after `--`",
        ));
    };
    if let TaskAgent::Command { argv, .. } = &agent
        && argv.first().is_some_and(|p| p.is_empty())
    {
        return Err(Fail::usage("the command after `--` is empty"));
    }
    let tasks = load_tasks(dir).map_err(|e| Fail::usage(e.to_string()))?;
    let run = run_options(&args.task.how, Some(agent.clone()))?;
    let hide = hidden_dirs(dir);
    let mut specs = Vec::new();
    for (position, task) in tasks.iter().enumerate() {
        if shard.is_some_and(|shard| !shard.includes(position)) {
            continue;
        }
        specs.extend(task_specs(
            std::slice::from_ref(task),
            std::slice::from_ref(&agent),
            &run,
            cli,
            None,
            &hide,
        ));
    }
    Ok(specs)
}

/// `hyoka tasks check DIR`: the oracle and the nop agent on every task; exit 1 when a task
/// does not behave.
pub(crate) async fn check(args: TasksCheckArgs) -> Result<ExitStatus, Fail> {
    let run_id = args.run_id.clone().unwrap_or_else(default_run_id);
    let workspace_root = args
        .workspace_root
        .clone()
        .unwrap_or_else(std::env::temp_dir);
    require_dir(&workspace_root, "workspace root")?;
    check_reports_dir(&args.reports)?;
    let run_dir = args.reports.join(run_id.as_str());
    if run_dir.exists() {
        return Err(Fail::usage(format!(
            "run id {run_id} already has reports at {}; pick another --run-id",
            run_dir.display()
        )));
    }
    let tasks = load_tasks(&args.dir).map_err(|e| Fail::usage(e.to_string()))?;
    let run = run_options(&args.how, None)?;
    if let Some(name) = args.pass_env.iter().find(|n| !valid_env_name(n)) {
        return Err(Fail::usage(format!(
            "--pass-env {name:?} is not a variable name"
        )));
    }
    let cli = Settings {
        timeout: args.timeout,
        grace: args.grace,
        phases: PhaseSettings {
            pass_env: (!args.pass_env.is_empty()).then(|| args.pass_env.clone()),
            ..PhaseSettings::default()
        },
        sandbox: SandboxSettings {
            read: (!args.sandbox_read.is_empty()).then(|| {
                args.sandbox_read
                    .iter()
                    .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
                    .collect()
            }),
            ..SandboxSettings::default()
        },
        ..Settings::default()
    };
    let hide = hidden_dirs(&args.dir);
    let specs = task_specs(&tasks, &check_agents(), &run, &cli, None, &hide);
    let identity = suite_identity(&specs).map_err(|e| Fail::usage(e.to_string()))?;
    let plan = RunPlan {
        keep: args.keep_workspace,
        name_with_eval: true,
        workers: usize::from(args.workers),
        inherited_env: std::env::vars_os().collect(),
        suite: Some(identity),
        ..RunPlan::new(run_id, &args.reports, workspace_root, specs)
    };
    let (stop, _signals) = crate::interrupt::install("every trial")
        .map_err(|e| Fail::failure(format!("cannot install signal handlers: {e}")))?;
    let containment = Containment {
        shim: Some(crate::harness::shim()?),
        shim_grace: args.grace,
    };
    let outcome = hyoka_eval::run_tracked(plan, containment, stop.clone(), Arc::new(NoObserver))
        .await
        .map_err(crate::harness::run_failure)?;
    let result = check_tasks(&outcome.reports);
    if args.json {
        crate::out::json(&result);
    } else {
        crate::out::text(&render_check(&result));
        crate::out::outln!("reports: {}", outcome.run_dir.display());
    }
    Ok(match stop.reason() {
        Some(reason) => crate::interrupt::exit_status(reason),
        None if result.misbehave > 0 => ExitStatus::Failure,
        None => ExitStatus::Success,
    })
}

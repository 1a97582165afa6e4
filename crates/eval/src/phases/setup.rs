//! The setup phase: the workspace (the starter copied, files injected), the isolated home
//! and the sandbox's private temp directory (each marked and recorded in the ledger before it
//! exists), the sandbox every process of the eval runs in, and the environments of the
//! phases and of the agent.

use std::path::{Path, PathBuf};

use hyoka_proctrack::{Clock, Controller, NetNamespace, Network, ResourceLimits, Sandbox};
use hyoka_workspace::{EvalId, KeepPolicy, WorkspaceOptions};

use super::{PhaseClock, PhaseEnv, RunContext};
use crate::error::EvalError;
use crate::host::{EvalWorkspace, WorkspaceEnd};
use crate::report::{PhaseRecord, PhaseStatus, Status};
use crate::sandbox::{
    SandboxDecision, SandboxMode, SandboxRecord, View, Writable, decide, hidden_dirs,
};
use crate::settings::{EvalSpec, ServiceSpec};
use crate::tasks::trial::TaskFiles;
use hyoka_events::EventSource;

/// What setup made ready.
pub(crate) struct Prepared {
    /// The workspace.
    pub(crate) workspace: Box<dyn EvalWorkspace>,
    /// The isolated home, with `isolate_home`.
    pub(crate) home: Option<Box<dyn EvalWorkspace>>,
    /// The scripted model server's directory (the agents' settings), with `model:`.
    pub(crate) model_dir: Option<Box<dyn EvalWorkspace>>,
    /// The services to start: the eval's, after the model server when there is one; `Err`
    /// when the model server's settings could not be written (the agent must not start
    /// without them: it would talk to the real API).
    pub(crate) services: Result<Vec<ServiceSpec>, String>,
    /// The sandbox, when the eval asks for one.
    pub(crate) sandbox: Option<EvalSandbox>,
    /// The environment of the phase processes (services, build, review).
    pub(crate) env: PhaseEnv,
    /// The agent's: its events file writable, a read-only workspace with `read_only`.
    pub(crate) agent_env: PhaseEnv,
    /// The setup phase's record.
    pub(crate) record: PhaseRecord,
    /// The limits the machine could not enforce (`--sandbox=best-effort`), and why.
    pub(crate) resources_unavailable: Vec<String>,
    /// A Harbor task's directories (`/logs`, the oracle's `/solution`, …), whose view the
    /// agent's environment shows.
    pub(crate) task: Option<TaskFiles>,
}

/// Runs the setup phase of the attempt `process_id`, whose records go to `eval_dir`: what
/// every eval needs, then a Harbor task's directories.
/// `Ok(Err((record, why)))` when the workspace, the home or a task's directories could not be
/// made (the machine's fault, retried); `Err` when the eval asks for a sandbox the machine
/// cannot give.
pub(crate) fn setup(
    ctx: &RunContext,
    spec: &EvalSpec,
    process_id: &EvalId,
    eval_dir: &Path,
    clock: &dyn Clock,
) -> Result<Result<Prepared, (PhaseRecord, String)>, EvalError> {
    match prepare(ctx, spec, process_id, eval_dir, clock)? {
        Ok(prepared) => with_task(ctx, spec, process_id, prepared),
        Err(failed) => Ok(Err(failed)),
    }
}

/// A Harbor task's directories added to what setup made, and the agent's environment made
/// to show the agent its view; what setup made removed again when they cannot be made.
fn with_task(
    ctx: &RunContext,
    spec: &EvalSpec,
    process_id: &EvalId,
    mut prepared: Prepared,
) -> Result<Result<Prepared, (PhaseRecord, String)>, EvalError> {
    let files = match task_files(ctx, spec, process_id) {
        Ok(None) => return Ok(Ok(prepared)),
        Ok(Some(files)) => files,
        Err(why) => {
            // The trial's directories could not be made: the machine's fault, retried.
            let Prepared {
                workspace,
                home,
                model_dir,
                mut sandbox,
                mut record,
                ..
            } = prepared;
            let tmp = sandbox.as_mut().and_then(|s| s.tmp.take());
            discard(ctx, process_id, workspace, [home, model_dir, tmp]);
            record.status = PhaseStatus::Error;
            record.detail = Some(why.clone());
            return Ok(Err((record, why)));
        }
    };
    let view = files.agent_view(prepared.workspace.path());
    if let Err(err) = crate::tasks::trial::show(&mut prepared.agent_env, &view) {
        let _ = files.close();
        return Err(err);
    }
    prepared.task = Some(files);
    Ok(Ok(prepared))
}

/// What setup makes for every eval (see [`setup`]).
fn prepare(
    ctx: &RunContext,
    spec: &EvalSpec,
    process_id: &EvalId,
    eval_dir: &Path,
    clock: &dyn Clock,
) -> Result<Result<Prepared, (PhaseRecord, String)>, EvalError> {
    let phase = PhaseClock::start(clock, "setup");
    let created = create_recorded(
        ctx,
        process_id.as_str(),
        &WorkspaceOptions {
            root: ctx.workspace_root.clone(),
            run_id: ctx.run_id.clone(),
            eval_id: ctx.name_with_eval.then(|| process_id.clone()),
            keep: ctx.keep,
            starter: spec.starter.clone(),
            inject: spec.phases.files.clone(),
            instance: ctx.harness.processes.instance(),
            owner: ctx.harness.processes.marker_owner(),
        },
    )
    .and_then(|workspace| {
        if !spec.phases.isolate_home {
            return Ok((workspace, None));
        }
        match isolated_home(ctx, process_id) {
            Ok(home) => Ok((workspace, Some(home))),
            Err(err) => {
                let _ = super::cleanup::close_workspace(
                    ctx,
                    process_id.as_str(),
                    workspace,
                    Status::Error,
                );
                Err(err)
            }
        }
    });
    let (workspace, home) = match created {
        Ok(created) => created,
        Err(err) => {
            let why = format!("cannot prepare the workspace: {err}");
            let record = phase.finish(PhaseStatus::Error, None, Some(why.clone()));
            return Ok(Err((record, why)));
        }
    };
    // The scripted model server's directory: the agents' settings.
    let model_dir = (spec.phases.model.as_ref())
        .map(|_| marked_dir(ctx, &spec.eval_id, "model"))
        .transpose()?;
    let shared: Vec<&Path> = home
        .iter()
        .chain(model_dir.iter())
        .map(|dir| dir.path())
        .collect();
    let sandbox = eval_sandbox(ctx, spec, workspace.path(), &shared)?;
    let (resources, resources_unavailable) = resource_limits(ctx, spec)?;
    let skipped_links = workspace.skipped_links();
    let record = phase.finish(
        PhaseStatus::Passed,
        None,
        (skipped_links > 0)
            .then(|| format!("{skipped_links} link(s) leading outside were not copied")),
    );
    let mut env = PhaseEnv::new(
        workspace.path(),
        &spec.env,
        home.as_ref().map(|home| home.path()),
        &spec.phases.pass_env,
        &ctx.inherited_env,
    );
    env.resources = resources;
    let services = with_model(
        spec,
        model_dir.as_deref(),
        sandbox.as_ref(),
        eval_dir,
        &mut env,
    );
    // The agent's sandbox differs from its phases': its events file, and a read-only
    // workspace with `sandbox_read_only`.
    let mut agent_env = env.clone();
    if let Some(sandbox) = &sandbox {
        if let Some(tmp) = &sandbox.tmp {
            // With a mount namespace the temp directory is the private `/tmp`.
            let seen = if sandbox.decision.mounts {
                Path::new("/tmp")
            } else {
                tmp.path()
            };
            env.vars.push(("TMPDIR".into(), seen.into()));
        }
        env.sandbox = sandbox.process(true, false);
        agent_env = PhaseEnv {
            sandbox: sandbox.process(!spec.sandbox.read_only, true),
            ..env.clone()
        };
    }
    Ok(Ok(Prepared {
        workspace,
        home,
        model_dir,
        services,
        sandbox,
        env,
        agent_env,
        record,
        resources_unavailable,
        task: None,
    }))
}

/// A Harbor task's directories, when the eval is a task's trial; why not, when they cannot
/// be made.
fn task_files(
    ctx: &RunContext,
    spec: &EvalSpec,
    process_id: &EvalId,
) -> Result<Option<TaskFiles>, String> {
    spec.task
        .as_ref()
        .map(|task| TaskFiles::prepare(ctx, task, process_id))
        .transpose()
        .map_err(|err| format!("cannot prepare the task's directories: {err}"))
}

/// Removes what setup made of an attempt that cannot go on: the workspace and `dirs`.
fn discard(
    ctx: &RunContext,
    process_id: &EvalId,
    workspace: Box<dyn EvalWorkspace>,
    dirs: [Option<Box<dyn EvalWorkspace>>; 3],
) {
    let _ = super::cleanup::close_workspace(ctx, process_id.as_str(), workspace, Status::Error);
    for dir in dirs.into_iter().flatten() {
        let path = dir.path().to_owned();
        if dir.close(Status::Error) == WorkspaceEnd::Removed {
            super::cleanup::forget(&*ctx.harness.processes, &path);
        }
    }
}

/// The eval's services: with a `model:` entry, the scripted model server first (its settings
/// written into `model_dir`, its request log in `eval_dir`), and the variables that point
/// the agents at it added to `env`.
fn with_model(
    spec: &EvalSpec,
    model_dir: Option<&dyn EvalWorkspace>,
    sandbox: Option<&EvalSandbox>,
    eval_dir: &Path,
    env: &mut PhaseEnv,
) -> Result<Vec<ServiceSpec>, String> {
    let mut services = spec.phases.services.clone();
    if let (Some(stub), Some(dir)) = (&spec.phases.model, model_dir) {
        let isolated = sandbox.is_some_and(|s| s.namespace.is_some());
        let log = eval_dir.join("model-requests.jsonl");
        let prepared = crate::model::prepare(stub, dir.path(), &log, isolated)
            .map_err(|err| format!("cannot write the model stub's settings: {err}"))?;
        services.insert(0, prepared.service);
        env.vars.extend(prepared.env);
    }
    Ok(services)
}

/// The sandbox of one eval: what is in force, the paths its processes may write, and its
/// record.
pub(crate) struct EvalSandbox {
    decision: SandboxDecision,
    writable: Writable,
    /// What the processes see besides the host (the mount plan's hidden and read paths).
    view: View,
    /// The events file the agent appends to (`jsonl`), which it may write too.
    agent_files: Vec<PathBuf>,
    /// `report.json` `sandbox`.
    pub(crate) record: SandboxRecord,
    /// The private temp directory (`TMPDIR`), removed with the eval.
    pub(crate) tmp: Option<Box<dyn EvalWorkspace>>,
    /// With `network: none`, the namespace every process of the eval shares.
    namespace: Option<NetNamespace>,
}

impl EvalSandbox {
    /// One process's sandbox: with or without the workspace, with or without the agent's
    /// files, in the eval's network namespace.
    fn process(&self, workspace: bool, agent: bool) -> Sandbox {
        let files: Vec<&Path> = if agent {
            self.agent_files.iter().map(PathBuf::as_path).collect()
        } else {
            Vec::new()
        };
        Sandbox {
            namespace: self.namespace.clone(),
            ..self
                .decision
                .sandbox(&self.writable, &self.view, workspace, &files)
        }
    }
}

/// Decides the eval's sandbox and, with one, creates its private temp directory (marked and
/// recorded in the ledger before it exists, like the isolated home). `None` when the eval
/// asks for nothing.
fn eval_sandbox(
    ctx: &RunContext,
    spec: &EvalSpec,
    workspace: &Path,
    shared: &[&Path],
) -> Result<Option<EvalSandbox>, EvalError> {
    if !spec.sandbox.is_requested() {
        return Ok(None);
    }
    let refuse = |reason| EvalError::Sandbox {
        eval_id: spec.eval_id.to_string(),
        reason,
    };
    let decision =
        decide(&spec.sandbox, &ctx.harness.processes.sandbox_support()).map_err(refuse)?;
    // One namespace for the whole eval: its services, agent, build and review share a
    // loopback.
    let namespace = if decision.network == Network::None {
        ctx.harness
            .processes
            .network_namespace()
            .map_err(|e| refuse(e.to_string()))?
    } else {
        None
    };
    let tmp = if spec.sandbox.mode == SandboxMode::Off {
        None
    } else {
        Some(marked_dir(ctx, &spec.eval_id, "tmp")?)
    };
    let writable = Writable {
        workspace: workspace.to_owned(),
        shared: shared
            .iter()
            .copied()
            .chain(tmp.as_ref().map(|t| t.path()))
            .map(Path::to_path_buf)
            .chain(spec.sandbox.write.iter().cloned())
            .collect(),
    };
    let agent_files: Vec<PathBuf> = (spec.events.resolve(&spec.command) == EventSource::Jsonl)
        .then(|| ctx.run_dir.join(spec.eval_id.as_str()).join("events.jsonl"))
        .into_iter()
        .collect();
    let files: Vec<&Path> = agent_files.iter().map(PathBuf::as_path).collect();
    let record = decision.record(&writable, !spec.sandbox.read_only, &files);
    let view = View {
        hidden: hidden_dirs(&ctx.inherited_env),
        read: spec.sandbox.read.clone(),
        tmp: tmp.as_ref().map(|t| t.path().to_owned()),
        protected: std::path::absolute(&ctx.run_dir).into_iter().collect(),
    };
    if decision.mounts
        && let Some(program) = spec.command.first().map(Path::new)
        && program.is_absolute()
        && view.hidden.iter().any(|h| program.starts_with(h))
        && !view.read.iter().any(|r| program.starts_with(r))
    {
        return Err(refuse(format!(
            "{} is inside a directory the sandbox hides; pass it with --sandbox-read (suite: sandbox_read)",
            program.display()
        )));
    }
    Ok(Some(EvalSandbox {
        decision,
        writable,
        view,
        agent_files,
        record,
        tmp,
        namespace,
    }))
}

/// Creates a marked directory of the run for `<eval>.<suffix>` (an isolated home, a temp
/// directory), listed in the ledger so `clean` removes it after a crash.
fn marked_dir(
    ctx: &RunContext,
    eval_id: &EvalId,
    suffix: &str,
) -> Result<Box<dyn EvalWorkspace>, EvalError> {
    let id = EvalId::new(format!("{eval_id}.{suffix}"))?;
    create_recorded(
        ctx,
        id.as_str(),
        &WorkspaceOptions {
            root: ctx.workspace_root.clone(),
            run_id: ctx.run_id.clone(),
            eval_id: Some(id.clone()),
            keep: KeepPolicy::Never,
            starter: None,
            inject: Vec::new(),
            instance: ctx.harness.processes.instance(),
            owner: ctx.harness.processes.marker_owner(),
        },
    )
}

/// Creates the eval's isolated home (a marked directory like a workspace, listed in the ledger
/// so `clean` removes it after a crash) with its XDG directories.
fn isolated_home(ctx: &RunContext, eval_id: &EvalId) -> Result<Box<dyn EvalWorkspace>, EvalError> {
    let home = marked_dir(ctx, eval_id, "home")?;
    prepare_home(&*home)?;
    Ok(home)
}

/// Creates the directories an isolated home needs.
fn prepare_home(home: &dyn EvalWorkspace) -> Result<(), hyoka_workspace::WorkspaceError> {
    for dir in [".config", ".local/share", ".local/state", ".cache"] {
        home.create_dir(Path::new(dir))?;
    }
    Ok(())
}

/// Creates a workspace of `id` (or an isolated home), recording it in the run's ledger
/// *before* it exists, so an owner that dies while it is made or filled leaves nothing
/// `clean` does not know of. When recording fails nothing is created.
pub(crate) fn create_recorded(
    ctx: &RunContext,
    id: &str,
    options: &WorkspaceOptions,
) -> Result<Box<dyn EvalWorkspace>, EvalError> {
    let processes = &ctx.harness.processes;
    let always = options.keep == KeepPolicy::Always;
    Ok(ctx.harness.workspaces.create(options, &mut |path| {
        processes.record_workspace(id, path)?;
        if always {
            processes.record_kept(id, path)?;
        }
        Ok(())
    })?)
}

/// The resource limits each process of the eval runs with, as far as the machine enforces
/// them: a limit whose controller is missing is refused (bad input, like a sandbox the
/// machine cannot give), or with `--sandbox=best-effort` left out and recorded.
fn resource_limits(
    ctx: &RunContext,
    spec: &EvalSpec,
) -> Result<(ResourceLimits, Vec<String>), EvalError> {
    let mut limits = spec.limits.resources();
    if limits.is_unlimited() {
        return Ok((limits, Vec::new()));
    }
    let support = ctx.harness.processes.resource_support();
    let mut unavailable = Vec::new();
    for (flag, controller, on) in [
        ("--max-memory", Controller::Memory, limits.memory.is_some()),
        ("--max-pids", Controller::Pids, limits.pids.is_some()),
        ("--cpus", Controller::Cpu, limits.cpu_millis.is_some()),
    ] {
        let Err(reason) = support.get(controller) else {
            continue;
        };
        if !on {
            continue;
        }
        // A Harbor task's limits are its `task.toml`'s request: where the machine cannot
        // enforce one, the task runs without it and the report says so.
        if spec.sandbox.mode != SandboxMode::BestEffort && spec.task.is_none() {
            return Err(EvalError::Sandbox {
                eval_id: spec.eval_id.to_string(),
                reason: format!(
                    "{flag} needs the {} cgroup controller: {reason} (--sandbox=best-effort runs without the limit)",
                    controller.as_str()
                ),
            });
        }
        unavailable.push(format!("{flag}: {reason}"));
        match controller {
            Controller::Memory => limits.memory = None,
            Controller::Pids => limits.pids = None,
            Controller::Cpu => limits.cpu_millis = None,
        }
    }
    Ok((limits, unavailable))
}

//! Running one eval: its phases in order (`phases/`: setup, services, agent, scorers,
//! cleanup), whose result it is ([`classify`]), and its report.

use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use hyoka_proctrack::Escalation;
use hyoka_workspace::EvalId;
use tokio::sync::mpsc::unbounded_channel;

use crate::error::EvalError;
use crate::phases::agent::{AgentOutcome, agent};
use crate::phases::cleanup::cleanup;
use crate::phases::scorers::{Scored, scorers};
use crate::phases::services::{Started, services, stop_services};
use crate::phases::setup::{Prepared, setup};
use crate::phases::{PhaseContext, RunContext, skipped};
use crate::ps::LiveStatus;
use crate::records::{millis, rfc3339, write_json_before_report};
use crate::report::{
    Cleanup, Counts, ErrorKind, Limits, PhaseRecord, PhaseStatus, Report, ResourcesRecord, Status,
    Termination,
};
use crate::sandbox::SandboxRecord;
use crate::settings::EvalSpec;
use crate::stop::Stop;
use crate::tasks::trial::{TaskFiles, TaskRecord};
use crate::timeline::TimelineBuilder;
use crate::trials::{Trial, attempt_id};

/// A report of `trial` with nothing done yet: no workspace, no counts, no phases.
fn blank_report(ctx: &RunContext, trial: &Trial, identity: &str, status: Status) -> Report {
    let spec = &trial.spec;
    let now = rfc3339(ctx.harness.clock.wall());
    Report {
        run_id: ctx.run_id.to_string(),
        eval_id: spec.eval_id.to_string(),
        trial: trial.id.to_string(),
        epoch: trial.epoch,
        agent: spec.agent.clone(),
        command: spec
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        workspace: String::new(),
        started_at: now.clone(),
        ended_at: now,
        duration_ms: 0,
        status,
        error_kind: None,
        termination: Termination::Interrupted,
        exit_code: None,
        signal: None,
        limits: limits_of(spec),
        counts: Counts::default(),
        usage: None,
        events: None,
        cleanup: Cleanup {
            workspace_removed: true,
            ..Cleanup::default()
        },
        error: None,
        phases: Vec::new(),
        review: None,
        sandbox: None,
        resources: None,
        attempts: 1,
        earlier_attempts: Vec::new(),
        identity: identity.to_owned(),
        task: spec.task.as_deref().map(TaskRecord::new),
    }
}

/// The report of a trial that never started: a stop was requested first, or an earlier
/// trial could not record.
pub(crate) fn not_started(
    ctx: &RunContext,
    trial: &Trial,
    identity: &str,
    termination: Termination,
    why: String,
) -> Report {
    Report {
        termination,
        error: Some(why),
        attempts: 0,
        ..blank_report(ctx, trial, identity, Status::NotRun)
    }
}

fn limits_of(spec: &EvalSpec) -> Limits {
    Limits {
        max_turns: spec.limits.max_turns,
        max_files: spec.limits.max_files,
        max_output_size: spec.limits.max_output_size,
        max_session_actions: spec.limits.max_session_actions,
        max_tokens: spec.limits.max_tokens,
        max_cost: spec.limits.max_cost,
        max_memory: spec.limits.max_memory,
        max_pids: spec.limits.max_pids,
        cpus: f64::from(spec.limits.cpu_millis) / 1000.0,
        max_disk: spec.limits.max_disk,
        timeout_ms: millis(spec.timeout),
        grace_ms: millis(spec.grace),
    }
}

/// Whose result a trial is, from how its agent and phases ended (see [`Status`] and
/// [`ErrorKind`]): the infrastructure's faults first (including an interruption), then the
/// agent's result, then the scorer's faults, then the phases' verdicts.
fn classify(
    outcome: &AgentOutcome,
    phases: &[PhaseRecord],
    interrupted: bool,
    task: bool,
) -> (Status, Option<ErrorKind>) {
    let phase = |name: &str, status: PhaseStatus| {
        phases.iter().any(|p| p.name == name && p.status == status)
    };
    // A Harbor task's agent is judged by the verifier's reward, as Harbor judges it, not by
    // its exit code; a limit or a timeout still fails it.
    let agent_passed =
        outcome.termination == Termination::Exited && (task || outcome.exit_code == Some(0));
    let scorer = |status| phase("build", status) || phase("review", status);
    if outcome.infra
        || interrupted
        || outcome.termination == Termination::Interrupted
        || phase("cleanup", PhaseStatus::Failed)
    {
        (Status::Error, Some(ErrorKind::Infra))
    } else if !agent_passed {
        (Status::Failed, None)
    } else if scorer(PhaseStatus::Error) {
        (Status::Error, Some(ErrorKind::Scorer))
    } else if scorer(PhaseStatus::Failed) {
        (Status::Failed, None)
    } else {
        (Status::Passed, None)
    }
}

/// Runs one attempt of a trial through its phases (setup, services, agent, build, review,
/// cleanup) and writes its logs and timeline; the caller writes `report.json` once it
/// decides whether the attempt is the last. Every outcome of the agent and of every phase,
/// and a workspace that cannot be made, becomes a report; only records that cannot be
/// written are an error.
pub(crate) async fn run_eval(
    ctx: &RunContext,
    trial: &Trial,
    identity: &str,
    attempt: u32,
    stop: Stop,
) -> Result<Report, EvalError> {
    let clock = &*ctx.harness.clock;
    let process_id = attempt_id(trial, attempt)?;
    let eval_dir = ctx.run_dir.join(trial.id.as_str());
    std::fs::create_dir_all(&eval_dir).map_err(|e| EvalError::io("create", &eval_dir, e))?;
    if let Some(task) = &trial.spec.task
        && let Some(why) = crate::tasks::trial::unavailable(
            task,
            &trial.spec,
            &ctx.harness.processes.sandbox_support(),
        )
    {
        return Ok(not_started(
            ctx,
            trial,
            identity,
            Termination::Unavailable,
            why,
        ));
    }
    let started_at = clock.wall();
    let attempt = Attempt {
        ctx,
        trial,
        identity,
        started: clock.now(),
        started_at,
        live: LiveStatus::start(&eval_dir, started_at),
        eval_dir,
    };
    attempt.live.phase("setup", clock.wall());
    match setup(ctx, &trial.spec, &process_id, &attempt.eval_dir, clock)? {
        Ok(prepared) => attempt.run(&process_id, prepared, stop).await,
        Err((record, why)) => {
            // The workspace or the home could not be made: the machine's fault, retried.
            attempt.live.close();
            Ok(Report {
                termination: Termination::SetupFailed,
                error_kind: Some(ErrorKind::Infra),
                started_at: rfc3339(started_at),
                duration_ms: millis(clock.now().saturating_duration_since(attempt.started)),
                phases: vec![record],
                error: Some(why),
                ..blank_report(ctx, trial, identity, Status::Error)
            })
        }
    }
}

/// One attempt of a trial, as it runs.
struct Attempt<'a> {
    ctx: &'a RunContext,
    trial: &'a Trial,
    identity: &'a str,
    /// `reports/<run_id>/<trial>`.
    eval_dir: PathBuf,
    started_at: SystemTime,
    started: Instant,
    /// Its `status.json`.
    live: std::sync::Arc<LiveStatus>,
}

/// How an attempt's phases ended, for its report.
struct Ended {
    outcome: AgentOutcome,
    phases: Vec<PhaseRecord>,
    cleanup: Cleanup,
    workspace: String,
    scored: Scored,
    sandbox: Option<SandboxRecord>,
    /// The limits the machine could not enforce, and why.
    resources_unavailable: Vec<String>,
    /// A Harbor task's record.
    task: Option<TaskRecord>,
}

impl Attempt<'_> {
    /// Runs the phases after a setup that made `prepared` ready, as the process id
    /// `process_id`.
    async fn run(
        &self,
        process_id: &EvalId,
        prepared: Prepared,
        stop: Stop,
    ) -> Result<Report, EvalError> {
        let (ctx, spec, live) = (self.ctx, &*self.trial.spec, &*self.live);
        let clock = &*ctx.harness.clock;
        let Prepared {
            mut workspace,
            home,
            model_dir,
            services: service_specs,
            mut sandbox,
            env,
            agent_env,
            record,
            resources_unavailable,
            task: mut task_files,
        } = prepared;
        let mut phases = vec![record];
        let workspace_path = workspace.path().to_owned();
        let pcx = PhaseContext {
            processes: &*ctx.harness.processes,
            clock,
            eval_id: process_id.as_str(),
            workspace: &workspace_path,
            eval_dir: &self.eval_dir,
            env: &env,
            grace: spec.grace,
        };

        let (service_tx, service_rx) = unbounded_channel();
        let Started {
            services: running,
            failure,
            record,
            mut teardowns,
        } = services(pcx, &mut *workspace, service_specs, live, &service_tx).await;
        phases.extend(record);
        drop(service_tx);

        let mut outcome = if let Some(reason) = failure {
            phases.push(skipped(clock, "agent", "a service failed"));
            let timeline = TimelineBuilder::new(self.started);
            AgentOutcome::not_run(Termination::ServiceFailed, reason, true, timeline)
        } else {
            let agent_pcx = PhaseContext {
                env: &agent_env,
                ..pcx
            };
            let live = (self.started, live);
            let scratch = [
                sandbox.as_ref().and_then(|s| s.tmp.as_deref()),
                home.as_deref(),
            ];
            let dirs = (&*workspace, &scratch);
            let (outcome, record) =
                agent(spec, dirs, agent_pcx, live, stop.clone(), service_rx).await;
            phases.push(record);
            outcome
        };
        teardowns.extend(outcome.teardown.take());

        let proceed = !matches!(
            outcome.termination,
            Termination::Interrupted | Termination::SpawnFailed | Termination::ServiceFailed
        );
        let timeline = (live, &mut outcome.timeline);
        let (records, reports) = (&mut phases, &mut teardowns);
        let task = task_files.as_mut().map(|files| (ctx, files));
        let scored = scorers(
            pcx,
            &spec.phases,
            proceed,
            &stop,
            timeline,
            records,
            reports,
            task,
        )
        .await?;
        teardowns.extend(stop_services(running, &Escalation::new()).await);

        // The eval passes only if the agent and every phase that ran passed: a later phase
        // can never turn a limit, a timeout or a failed agent into a pass. Cleanup may still
        // turn a pass into an infrastructure error (survivors, leftovers), so the workspace
        // is closed with the status decided so far.
        let (status, _) = classify(&outcome, &phases, scored.interrupted, spec.task.is_some());
        live.phase("cleanup", clock.wall());
        let (task, task_leftovers) = TaskFiles::finish(task_files, &self.eval_dir);
        let tmp = sandbox.as_mut().and_then(|s| s.tmp.take());
        let dirs = [
            ("isolated home", home),
            ("temp directory", tmp),
            ("model stub directory", model_dir),
        ];
        let owner = (ctx, process_id.as_str());
        let torn = (&teardowns[..], task_leftovers);
        let (cleanup, record) = cleanup(owner, workspace, status, dirs, torn, outcome.layers);
        phases.push(record);
        let record = Ended {
            outcome,
            phases,
            cleanup,
            workspace: workspace_path.display().to_string(),
            scored,
            sandbox: sandbox.map(|s| s.record),
            resources_unavailable,
            task,
        };
        self.record(record)
    }

    /// The attempt's report from how it ended, with its `action_timeline.json` written.
    fn record(&self, ended: Ended) -> Result<Report, EvalError> {
        let (ctx, spec) = (self.ctx, &*self.trial.spec);
        let clock = &*ctx.harness.clock;
        let Ended {
            outcome,
            phases,
            cleanup,
            workspace,
            scored,
            sandbox,
            resources_unavailable,
            task,
        } = ended;
        let (status, error_kind) =
            classify(&outcome, &phases, scored.interrupted, spec.task.is_some());
        let base = agent_report(
            &outcome,
            blank_report(ctx, self.trial, self.identity, status),
        );
        let duration = clock.now().saturating_duration_since(self.started);
        let timeline = outcome.timeline.finish(
            ctx.run_id.as_str(),
            spec.eval_id.as_str(),
            outcome.counts,
            duration,
            outcome.lines.unknown,
            outcome.lines.malformed,
        );
        let report = Report {
            workspace,
            started_at: rfc3339(self.started_at),
            ended_at: rfc3339(clock.wall()),
            duration_ms: millis(duration),
            error_kind,
            cleanup,
            phases,
            review: scored.verdict,
            sandbox,
            task: task.or(base.task.clone()),
            resources: (!spec.limits.resources().is_unlimited() || spec.limits.max_disk > 0).then(
                || ResourcesRecord {
                    unavailable: resources_unavailable,
                    ..outcome.resources.clone()
                },
            ),
            ..base
        };
        write_json_before_report(&self.eval_dir.join("action_timeline.json"), &timeline)?;
        self.live.close();
        Ok(report)
    }
}

/// `report` with what the agent did and how it ended.
fn agent_report(outcome: &AgentOutcome, report: Report) -> Report {
    Report {
        termination: outcome.termination,
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        counts: outcome.counts,
        usage: outcome.usage,
        events: outcome.events.clone(),
        error: outcome.error.clone(),
        ..report
    }
}

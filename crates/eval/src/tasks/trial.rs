//! A Harbor task's trial inside `run_eval`: the directories Harbor provides (`/logs`, the
//! oracle's `/solution`, the build context's files outside the `WORKDIR`, `/tests` after the
//! agent), what each process sees, the reward as the review's verdict, and the logs kept in
//! the trial's records.
//!
//! # Theory of operation
//!
//! Setup makes the trial's directories as marked directories of the run (like an isolated
//! home: recorded in the ledger before they exist, removed with the trial, repaired by
//! `clean` after a crash): `<trial>.logs` (with `agent/`, `verifier/` and `artifacts/`),
//! `<trial>.sol` (the oracle's copy of `solution/`), `<trial>.root` (build-context files the
//! Dockerfile puts outside the `WORKDIR`). The task folder itself is only ever read. The
//! agent's view binds the workspace at the `WORKDIR`, the logs at `/logs`, the solution at
//! `/solution` (oracle only) and the root files where they belong, and hides the task folder
//! and its dataset, so neither its `tests/` nor its `solution/` can be read. Only when the
//! agent's tree is gone are the tests copied (`<trial>.tests`) and the verifier started with
//! a view that has `/tests` and no `/solution`. Its reward ([`read_reward`]) becomes the
//! review's verdict, and what it and the agent left in `/logs` is copied, bounded, into
//! `reports/<run>/<trial>/logs/`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use hyoka_proctrack::{Mount, SandboxSupport, TeardownReport};
use hyoka_workspace::{EntryKind, EvalId, Injection, KeepPolicy, WorkspaceOptions};
use serde::{Deserialize, Serialize};

use crate::error::EvalError;
use crate::host::{EvalWorkspace, WorkspaceEnd};
use crate::phases::scorers::{PhaseRun, run_phase};
use crate::phases::setup::create_recorded;
use crate::phases::{PhaseClock, PhaseContext, PhaseEnv, RunContext};
use crate::report::{PhaseStatus, ReviewVerdict, Status};
use crate::sandbox::SandboxMode;
use crate::settings::{EvalSpec, PhaseCommand};
use crate::stop::Stop;
use crate::tasks::plan::{LOGS_DIR, SOLUTION_DIR, TESTS_DIR, TaskTrial};
use hyoka_harbor::{Reward, read_reward};

/// What `report.json` `task` records about a Harbor task's trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskRecord {
    /// The task folder.
    pub dir: String,
    /// Where it ran: `host`, `podman` or `docker`.
    pub environment: String,
    /// Where the agent's workspace was seen (the `WORKDIR`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// The verifier's reward, when it wrote a valid one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<Reward>,
    /// Why there is no reward, when the verifier ran and left none that is valid (a scorer
    /// error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_error: Option<String>,
    /// Dockerfile steps the host did not perform (`--skip-build-steps`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_steps: Vec<String>,
    /// What the agent and the verifier left in `/logs`, copied to `<trial>/logs/` (paths
    /// relative to it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
    /// Files of `/logs` not copied (links, special files, past the caps), with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs_skipped: Vec<String>,
}

impl TaskRecord {
    /// The record of a trial of `task` before anything ran.
    pub(crate) fn new(task: &TaskTrial) -> Self {
        Self {
            dir: task.task_dir.display().to_string(),
            environment: task.environment.as_str().to_owned(),
            workdir: task.view.as_ref().map(|v| v.workdir.display().to_string()),
            reward: None,
            reward_error: None,
            skipped_steps: task
                .view
                .as_ref()
                .map(|v| v.skipped.clone())
                .unwrap_or_default(),
            logs: Vec::new(),
            logs_skipped: Vec::new(),
        }
    }
}

/// One entry of what a process of a task's trial sees (the spawn layer's mount plan speaks
/// the same language).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ViewEntry {
    /// `source` (a host path) seen at `target`.
    Bind {
        source: PathBuf,
        target: PathBuf,
        writable: bool,
    },
    /// `target` hidden under an empty, read-only file system.
    Hide { target: PathBuf },
}

/// What one process of a task's trial sees besides the sandbox's own view, and where it
/// starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskView {
    pub(crate) entries: Vec<ViewEntry>,
    pub(crate) cwd: PathBuf,
}

/// Why a task's trial cannot run here, checked before anything is made: its own reason, a
/// sandbox turned off, or a machine whose sandbox cannot show a task its view.
pub(crate) fn unavailable(
    task: &TaskTrial,
    spec: &EvalSpec,
    support: &SandboxSupport,
) -> Option<String> {
    if let Some(why) = &task.unavailable {
        return Some(why.clone());
    }
    if spec.sandbox.mode == SandboxMode::Off {
        return Some(
            "runs only in hyoka's sandbox, which was turned off (the host environment shows the task its WORKDIR, /tests and /logs in a mount namespace)"
                .to_owned(),
        );
    }
    view_support(support).err()
}

/// Whether the spawn layer can show a process a task's view on this machine: a mount
/// namespace with the host read-only, in which the view is built.
fn view_support(support: &SandboxSupport) -> Result<(), String> {
    support.mounts.clone().map_err(|reason| {
        format!("needs a mount namespace to show the task its WORKDIR, /tests and /logs: {reason}")
    })
}

/// Makes `env`'s processes see `view`: its entries on top of the sandbox's mount plan (the
/// task folder hidden, the trial's directories bound where Harbor puts them and writable),
/// the working directory inside it, and `HYOKA_WORKSPACE` naming the `WORKDIR`.
///
/// # Errors
/// [`EvalError::Sandbox`] when the eval's sandbox has no mount namespace (a best-effort
/// sandbox on a machine without one).
pub(crate) fn show(env: &mut PhaseEnv, view: &TaskView) -> Result<(), EvalError> {
    let Some(plan) = env.sandbox.mounts.as_mut() else {
        return Err(EvalError::Sandbox {
            eval_id: String::new(),
            reason: "a Harbor task needs the sandbox's mount namespace, which this machine cannot give (--sandbox=best-effort ran without it)".to_owned(),
        });
    };
    for entry in &view.entries {
        match entry {
            ViewEntry::Hide { target } => {
                if !plan.hides(target) {
                    plan.mounts.push(Mount::Tmpfs {
                        target: target.clone(),
                        writable: false,
                    });
                }
            }
            ViewEntry::Bind {
                source,
                target,
                writable,
            } => {
                plan.mounts.push(Mount::Bind {
                    source: source.clone(),
                    target: target.clone(),
                    writable: *writable,
                });
                if *writable && let Some(paths) = env.sandbox.writable.as_mut() {
                    paths.push(source.clone());
                }
            }
        }
    }
    plan.cwd = Some(view.cwd.clone());
    env.vars.retain(|(k, _)| k != "HYOKA_WORKSPACE");
    env.vars
        .push(("HYOKA_WORKSPACE".into(), view.cwd.clone().into_os_string()));
    Ok(())
}

/// Runs the verifier: the tests copied in now that the agent has finished, a view with
/// `/tests` and without `/solution`, `[verifier] env`, and the reward as the verdict.
///
/// # Errors
/// [`EvalError::Sandbox`] when the spawn layer cannot show the verifier its view.
pub(crate) async fn verify(
    ctx: &RunContext,
    files: &mut TaskFiles,
    pcx: PhaseContext<'_>,
    command: &PhaseCommand,
    stop: Stop,
) -> Result<PhaseRun, EvalError> {
    if let Err(err) = files.add_tests(ctx) {
        return Ok(PhaseRun {
            record: PhaseClock::start(pcx.clock, "review").finish(
                PhaseStatus::Error,
                None,
                Some(format!("cannot copy the task's tests: {err}")),
            ),
            teardown: TeardownReport::default(),
            verdict: None,
            interrupted: false,
        });
    }
    let mut env = pcx.env.clone();
    env.vars.extend(files.verifier_env().iter().cloned());
    show(&mut env, &files.verifier_view(pcx.workspace))?;
    let mut run = run_phase(PhaseContext { env: &env, ..pcx }, "review", command, stop).await;
    run.verdict = files.judge(
        &mut run.record.status,
        &mut run.record.detail,
        run.record.exit_code,
    );
    Ok(run)
}

/// The directories of one task trial.
pub(crate) struct TaskFiles {
    task: std::sync::Arc<TaskTrial>,
    /// `<trial>.logs`: `/logs`.
    logs: Box<dyn EvalWorkspace>,
    /// `<trial>.sol`: `/solution`, for the oracle.
    solution: Option<Box<dyn EvalWorkspace>>,
    /// `<trial>.root`: build-context files outside the `WORKDIR`.
    root: Option<Box<dyn EvalWorkspace>>,
    /// `<trial>.tests`: `/tests`, once the agent has finished.
    tests: Option<Box<dyn EvalWorkspace>>,
    /// The trial's process id, which the directories' ids extend.
    id: EvalId,
    /// Where the directories are recorded, to drop each record once it is removed.
    processes: std::sync::Arc<dyn crate::host::Processes>,
    /// What `report.json` says.
    pub(crate) record: TaskRecord,
}

/// The most bytes of `/logs` copied into a trial's records, and of one file.
const LOGS_CAP: u64 = 16 << 20;
const LOG_FILE_CAP: u64 = 4 << 20;
/// The most files of `/logs` copied, and how deep.
const LOG_FILES: usize = 1000;
const LOG_DEPTH: usize = 8;

impl TaskFiles {
    /// Makes the trial's directories (see the module docs).
    ///
    /// # Errors
    /// [`EvalError`] when one cannot be made or filled: the machine's fault.
    pub(crate) fn prepare(
        ctx: &RunContext,
        task: &std::sync::Arc<TaskTrial>,
        id: &EvalId,
    ) -> Result<Self, EvalError> {
        let logs = marked(ctx, id, "logs", Vec::new())?;
        let mut made = Self {
            task: std::sync::Arc::clone(task),
            logs,
            solution: None,
            root: None,
            tests: None,
            id: id.clone(),
            processes: std::sync::Arc::clone(&ctx.harness.processes),
            record: TaskRecord::new(task),
        };
        let filled = (|| {
            for dir in ["agent", "verifier", "artifacts"] {
                made.logs.create_dir(Path::new(dir))?;
            }
            if let Some(solution) = &task.solution {
                let dir = marked(ctx, id, "sol", entries(solution)?)?;
                made.solution = Some(dir);
            }
            if let Some(view) = &task.view
                && !view.root_files.is_empty()
            {
                made.root = Some(marked(ctx, id, "root", view.root_files.clone())?);
            }
            Ok::<(), EvalError>(())
        })();
        match filled {
            Ok(()) => Ok(made),
            Err(err) => {
                let _ = made.close();
                Err(err)
            }
        }
    }

    /// Ends a trial's directories, when it has them: what its processes left in `/logs`
    /// copied into the records in `eval_dir` first, then every directory removed. Returns the
    /// task's record and what could not be removed.
    pub(crate) fn finish(
        files: Option<Self>,
        eval_dir: &Path,
    ) -> (Option<TaskRecord>, Vec<String>) {
        let Some(mut files) = files else {
            return (None, Vec::new());
        };
        files.collect_logs(eval_dir);
        let record = files.record.clone();
        (Some(record), files.close())
    }

    /// Copies the task's `tests/` for the verifier; the agent has finished.
    ///
    /// # Errors
    /// [`EvalError`] when the copy cannot be made.
    pub(crate) fn add_tests(&mut self, ctx: &RunContext) -> Result<(), EvalError> {
        let tests = marked(ctx, &self.id, "tests", entries(&self.task.tests)?)?;
        self.tests = Some(tests);
        Ok(())
    }

    /// What the agent sees: the workspace at the `WORKDIR`, `/logs`, the oracle's
    /// `/solution`, the root files, the task folder hidden.
    pub(crate) fn agent_view(&self, workspace: &Path) -> TaskView {
        let mut view = self.base_view(workspace);
        if let Some(solution) = &self.solution {
            view.entries.push(ViewEntry::Bind {
                source: solution.path().to_owned(),
                target: PathBuf::from(SOLUTION_DIR),
                writable: true,
            });
        }
        view
    }

    /// What the verifier sees: as the agent, without `/solution`, with `/tests`.
    pub(crate) fn verifier_view(&self, workspace: &Path) -> TaskView {
        let mut view = self.base_view(workspace);
        if let Some(tests) = &self.tests {
            view.entries.push(ViewEntry::Bind {
                source: tests.path().to_owned(),
                target: PathBuf::from(TESTS_DIR),
                writable: true,
            });
        }
        view
    }

    fn base_view(&self, workspace: &Path) -> TaskView {
        let mut entries: Vec<ViewEntry> = self
            .task
            .hide
            .iter()
            .map(|dir| ViewEntry::Hide {
                target: dir.clone(),
            })
            .collect();
        let workdir = self
            .task
            .view
            .as_ref()
            .map_or_else(|| PathBuf::from("/app"), |v| v.workdir.clone());
        if let Some(root) = &self.root
            && let Ok(listed) = root.list(Path::new(""))
        {
            for entry in listed {
                entries.push(ViewEntry::Bind {
                    source: root.path().join(&entry.name),
                    target: Path::new("/").join(&entry.name),
                    writable: true,
                });
            }
        }
        entries.push(ViewEntry::Bind {
            source: workspace.to_owned(),
            target: workdir.clone(),
            writable: true,
        });
        entries.push(ViewEntry::Bind {
            source: self.logs.path().to_owned(),
            target: PathBuf::from(LOGS_DIR),
            writable: true,
        });
        TaskView {
            entries,
            cwd: workdir,
        }
    }

    /// The environment of the verifier, on top of the eval's: `[verifier] env`.
    pub(crate) fn verifier_env(&self) -> &[(OsString, OsString)] {
        &self.task.verifier_env
    }

    /// Turns the verifier's run into the reward's verdict: a phase that ran to its end
    /// (whatever its exit code, as Harbor ignores it) is judged by the reward; a pass needs
    /// the threshold, a lower reward fails with its score, no valid reward is the scorer's
    /// error. A verifier that crashed, timed out or was stopped stays an error.
    pub(crate) fn judge(
        &mut self,
        status: &mut PhaseStatus,
        detail: &mut Option<String>,
        exit_code: Option<i32>,
    ) -> Option<ReviewVerdict> {
        let ran = exit_code.is_some();
        if !ran {
            return None;
        }
        match read_reward(&*self.logs, Path::new("verifier"), &self.task.rules) {
            Ok(reward) => {
                let pass = reward.passes();
                *status = if pass {
                    PhaseStatus::Passed
                } else {
                    PhaseStatus::Failed
                };
                *detail = (!pass)
                    .then(|| format!("reward {} is below {}", reward.score, reward.threshold));
                let notes = (reward.metrics.len() > 1).then(|| {
                    reward
                        .metrics
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                });
                let verdict = ReviewVerdict {
                    pass,
                    score: Some(reward.score),
                    notes,
                };
                self.record.reward = Some(reward);
                Some(verdict)
            }
            Err(err) => {
                *status = PhaseStatus::Error;
                *detail = Some(err.to_string());
                self.record.reward_error = Some(err.to_string());
                None
            }
        }
    }

    /// Copies what `/logs` holds into `<eval_dir>/logs/`, bounded (regular files only, no
    /// links followed, [`LOG_FILES`] files, [`LOG_FILE_CAP`] each, [`LOGS_CAP`] in all).
    pub(crate) fn collect_logs(&mut self, eval_dir: &Path) {
        let mut budget = LOGS_CAP;
        let mut stack = vec![(PathBuf::new(), 0usize)];
        while let Some((dir, depth)) = stack.pop() {
            let Ok(listed) = self.logs.list(&dir) else {
                continue;
            };
            for entry in listed {
                let rel = dir.join(&entry.name);
                let shown = rel.display().to_string();
                match entry.kind {
                    EntryKind::Dir if depth < LOG_DEPTH => stack.push((rel, depth + 1)),
                    EntryKind::File
                        if self.record.logs.len() < LOG_FILES
                            && entry.len <= LOG_FILE_CAP
                            && entry.len <= budget =>
                    {
                        let copied = self.logs.read_file(&rel).ok().filter(|b| {
                            b.len() as u64 <= LOG_FILE_CAP && b.len() as u64 <= budget
                        });
                        let target = eval_dir.join("logs").join(&rel);
                        match copied.map(|bytes| {
                            let parent = target.parent().unwrap_or(eval_dir);
                            std::fs::create_dir_all(parent)
                                .and_then(|()| std::fs::write(&target, &bytes))
                                .map(|()| bytes.len() as u64)
                        }) {
                            Some(Ok(n)) => {
                                budget -= n;
                                self.record.logs.push(shown);
                            }
                            Some(Err(e)) => self.record.logs_skipped.push(format!("{shown}: {e}")),
                            None => self
                                .record
                                .logs_skipped
                                .push(format!("{shown}: changed or too large")),
                        }
                    }
                    EntryKind::Dir => self
                        .record
                        .logs_skipped
                        .push(format!("{shown}: deeper than {LOG_DEPTH} levels")),
                    EntryKind::File => self.record.logs_skipped.push(format!(
                        "{shown}: {} bytes, past the caps ({LOG_FILE_CAP} a file, {LOGS_CAP} in all, {LOG_FILES} files)",
                        entry.len
                    )),
                    EntryKind::Symlink => self
                        .record
                        .logs_skipped
                        .push(format!("{shown}: a symbolic link")),
                    _ => self
                        .record
                        .logs_skipped
                        .push(format!("{shown}: not a regular file")),
                }
            }
        }
        self.record.logs.sort();
    }

    /// Removes the trial's directories; what could not be removed.
    pub(crate) fn close(self) -> Vec<String> {
        let mut leftovers = Vec::new();
        let dirs = std::iter::once(self.logs)
            .chain(self.solution)
            .chain(self.root)
            .chain(self.tests);
        for dir in dirs {
            let path = dir.path().to_owned();
            match dir.close(Status::Passed) {
                WorkspaceEnd::Removed => crate::phases::cleanup::forget(&*self.processes, &path),
                WorkspaceEnd::Kept(_) => {}
                WorkspaceEnd::Incomplete(more) => leftovers.extend(more),
                WorkspaceEnd::Failed(err) => leftovers.push(err),
            }
        }
        leftovers
    }
}

/// A directory's entries as injections of the same names (its contents, copied in).
fn entries(dir: &Path) -> Result<Vec<Injection>, EvalError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| EvalError::io("read", dir, e))? {
        let entry = entry.map_err(|e| EvalError::io("read", dir, e))?;
        out.push(Injection {
            source: entry.path(),
            target: PathBuf::from(entry.file_name()),
        });
    }
    out.sort_by(|a, b| a.target.cmp(&b.target));
    Ok(out)
}

/// A marked directory `<id>.<suffix>` of the run, filled with `inject` and listed in the
/// ledger so `clean` removes it after a crash.
fn marked(
    ctx: &RunContext,
    id: &EvalId,
    suffix: &str,
    inject: Vec<Injection>,
) -> Result<Box<dyn EvalWorkspace>, EvalError> {
    let dir_id = EvalId::new(format!("{id}.{suffix}"))?;
    create_recorded(
        ctx,
        dir_id.as_str(),
        &WorkspaceOptions {
            root: ctx.workspace_root.clone(),
            run_id: ctx.run_id.clone(),
            eval_id: Some(dir_id.clone()),
            keep: KeepPolicy::Never,
            starter: None,
            inject,
            instance: ctx.harness.processes.instance(),
            owner: ctx.harness.processes.marker_owner(),
        },
    )
}

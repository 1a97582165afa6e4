//! `hyoka demo`: the whole story in under 30 seconds, against the built-in simulated agent.
//!
//! 1. An eval with a helper service, a build and a review, whose agent leaves processes
//!    behind on purpose: hyoka finds and stops them, and records turns, tool calls, files and
//!    the timeline.
//! 2. A limit stops a runaway agent at once.
//! 3. hyoka itself is SIGKILLed in the middle of a run; `hyoka clean` repairs it.
//! 4. An interactive session is cycled by the respawn controller, only when it is idle.
//!
//! Everything lands under `--reports`; no process and no workspace is left behind.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use hyoka_workspace::{EvalId, KeepPolicy};

use crate::args::{CleanArgs, DemoArgs};
use crate::cmd::run::{RunOutcome, RunPlan, RunPlanContext, default_run_id, execute};
use crate::eval::{EvalPhases, EvalSpec};
use crate::events::EventSource;
use crate::interrupt::Interrupt;
use crate::limits::LimitSet;
use crate::out::{outln, style};
use crate::report::{Report, Status};
use crate::suite::{PhaseCommand, Readiness, ServiceSpec};
use crate::{ExitStatus, Fail};

/// What the demo found and stopped, for the closing summary.
#[derive(Default)]
struct Tally {
    processes_seen: u64,
    processes_stopped: u64,
    survivors: u64,
    workspaces_removed: u64,
    ok: bool,
}

pub(crate) async fn exec(args: DemoArgs) -> Result<ExitStatus, Fail> {
    let started = Instant::now();
    let exe: OsString = std::env::current_exe()
        .map_err(|e| Fail::failure(format!("cannot find the hyoka executable: {e}")))?
        .into_os_string();
    let workspace_root = args
        .workspace_root
        .clone()
        .unwrap_or_else(std::env::temp_dir);
    crate::cmd::run::require_dir(&workspace_root, "workspace root")?;
    crate::cmd::run::check_reports_dir(&args.reports)?;
    let (h, good, bad, dim) = (style::HEAD, style::GOOD, style::BAD, style::DIM);
    crate::out::set_quiet(args.json);
    outln!("{h}hyoka demo{h:#}: contained workspaces and processes, live limits, honest records\n");
    let mut tally = Tally {
        ok: true,
        ..Tally::default()
    };
    let run_dirs = [
        step_eval(&exe, &args.reports, &workspace_root, &mut tally).await?,
        step_limit(&exe, &args.reports, &workspace_root, &mut tally).await?,
        step_crash(&exe, &args.reports, &workspace_root, &mut tally).await,
    ];
    let respawn_events = step_respawn(&exe, &args.reports, &mut tally).await?;
    let verdict = if tally.ok && tally.survivors == 0 {
        format!("{good}all good{good:#}")
    } else {
        format!("{bad}something went wrong{bad:#}")
    };
    outln!(
        "\n{h}Summary{h:#}: {verdict} in {:.1}s — {} processes seen, {} stopped by hyoka, {} survivors, {} workspaces removed",
        started.elapsed().as_secs_f64(),
        tally.processes_seen,
        tally.processes_stopped,
        tally.survivors,
        tally.workspaces_removed
    );
    outln!("reports:");
    for dir in run_dirs.iter().flatten() {
        outln!("  {dim}{}{dim:#}", dir.display());
    }
    outln!(
        "  {dim}(report.json, action_timeline.json, output.log, services/, build.log, review.log per eval){dim:#}"
    );
    if args.json {
        crate::out::json(&serde_json::json!({
            "ok": tally.ok && tally.survivors == 0,
            "seconds": started.elapsed().as_secs_f64(),
            "processes_seen": tally.processes_seen,
            "processes_stopped": tally.processes_stopped,
            "survivors": tally.survivors,
            "workspaces_removed": tally.workspaces_removed,
            "runs": run_dirs.iter().flatten().collect::<Vec<_>>(),
            "respawn_events": respawn_events,
        }));
    }
    Ok(if tally.ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// Step 4: one respawn cycle of the interactive simulated agent.
async fn step_respawn(exe: &OsString, reports: &Path, tally: &mut Tally) -> Result<PathBuf, Fail> {
    let (h, dim, note) = (style::HEAD, style::DIM, style::NOTE);
    outln!("\n{h}4. An interactive session is cycled, only when it is idle{h:#}");
    let cycle = crate::cmd::respawn::demo_cycle(exe, reports).await?;
    outln!(
        "   steps       {note}{}{note:#} ({} cycle), typed only at the idle prompt ({} keys while busy)",
        cycle.steps.join(" → "),
        cycle.cycles,
        cycle.typed_while_busy
    );
    outln!("   events      {dim}{}{dim:#}", cycle.events.display());
    tally.ok &= cycle.exit == Some(0) && cycle.cycles == 1 && cycle.typed_while_busy == 0;
    Ok(cycle.events)
}

/// Step 1: an eval with a service, a build and a review, whose agent leaves escapees.
async fn step_eval(
    exe: &OsString,
    reports: &Path,
    root: &Path,
    tally: &mut Tally,
) -> Result<Option<PathBuf>, Fail> {
    let (h, dim, note) = (style::HEAD, style::DIM, style::NOTE);
    outln!(
        "{h}1. An eval with a service, a build and a review; the agent leaves escapees behind{h:#}"
    );
    let eval = run_one(reports, root, full_eval(exe)).await?;
    let report = &eval.outcome.reports[0];
    tally.add(report);
    outln!(
        "   agent       {} turns, {} tool calls, {} files ({} bytes), exit code {}",
        report.counts.turns,
        report.counts.actions,
        report.counts.files,
        report.counts.output_bytes,
        report
            .exit_code
            .map_or_else(|| "-".to_owned(), |c| c.to_string())
    );
    if let Some(summary) = timeline_summary(
        &eval
            .run_dir
            .join(&report.eval_id)
            .join("action_timeline.json"),
    ) {
        outln!("   timeline    {summary}");
    }
    outln!(
        "   escapees    a background sleeper, a new-session child ignoring SIGTERM, a double-forked daemon"
    );
    outln!(
        "   cleanup     {note}{}{note:#} processes seen, {note}{}{note:#} stopped by hyoka, {} survivors  {dim}(layers: {}){dim:#}",
        report.cleanup.processes_seen,
        report.cleanup.processes_killed,
        report
            .cleanup
            .survivors
            .map_or_else(|| "unknown".to_owned(), |n| n.to_string()),
        report.cleanup.layers.join(", ")
    );
    let phases: Vec<String> = report
        .phases
        .iter()
        .map(|p| format!("{} {}", p.name, p.status.as_str()))
        .collect();
    outln!("   phases      {}", phases.join(" → "));
    if let Some(verdict) = &report.review {
        outln!(
            "   review      pass {}, score {}, {}",
            verdict.pass,
            verdict.score.unwrap_or_default(),
            verdict.notes.clone().unwrap_or_default()
        );
    }
    outln!("   result      {}", status_text(report));
    Ok(Some(eval.run_dir))
}

/// Step 2: a limit stops a runaway agent at once.
async fn step_limit(
    exe: &OsString,
    reports: &Path,
    root: &Path,
    tally: &mut Tally,
) -> Result<Option<PathBuf>, Fail> {
    let (h, good, bad) = (style::HEAD, style::GOOD, style::BAD);
    outln!("\n{h}2. A limit stops a runaway agent at once{h:#}");
    let limited = run_one(reports, root, limited_eval(exe)).await?;
    let report = &limited.outcome.reports[0];
    tally.add(report);
    let limit_ok = report.termination.as_str() == "max_turns" && report.status == Status::Failed;
    tally.ok &= limit_ok;
    let mark = if limit_ok { good } else { bad };
    outln!(
        "   --max-turns 3: stopped at turn {} of 200 with termination {mark}{}{mark:#}; the eval {}",
        report.counts.turns,
        report.termination.as_str(),
        if report.status == Status::Failed {
            "fails, as it should"
        } else {
            "did NOT fail"
        }
    );
    Ok(Some(limited.run_dir))
}

/// Step 3: hyoka is SIGKILLed mid-run and `hyoka clean` repairs it.
async fn step_crash(
    exe: &OsString,
    reports: &Path,
    root: &Path,
    tally: &mut Tally,
) -> Option<PathBuf> {
    let (h, good, bad, note) = (style::HEAD, style::GOOD, style::BAD, style::NOTE);
    outln!("\n{h}3. hyoka is SIGKILLed mid-run; `hyoka clean` repairs it{h:#}");
    match crash_and_clean(exe, reports, root).await {
        Ok(crash) => {
            tally.processes_seen += crash.found;
            tally.processes_stopped += crash.stopped;
            tally.workspaces_removed += crash.workspaces;
            tally.ok &= crash.clean;
            outln!(
                "   killed the owner (pid {}) with its agent and 3 escapees running",
                crash.owner
            );
            outln!(
                "   clean found {note}{}{note:#} live processes of the abandoned run, stopped {note}{}{note:#}, removed {} workspace(s), {}",
                crash.found,
                crash.stopped,
                crash.workspaces,
                if crash.clean {
                    format!("{good}nothing left{good:#}")
                } else {
                    format!("{bad}something remains{bad:#}")
                }
            );
            Some(crash.run_dir)
        }
        Err(err) => {
            tally.ok = false;
            outln!("   {bad}failed{bad:#}: {err}");
            None
        }
    }
}

impl Tally {
    fn add(&mut self, report: &Report) {
        self.processes_seen += report.cleanup.processes_seen;
        self.processes_stopped += report.cleanup.processes_killed;
        self.survivors += report.cleanup.survivors.unwrap_or(0);
        self.workspaces_removed += u64::from(report.cleanup.workspace_removed);
        self.ok &= report.cleanup.survivors == Some(0) && report.cleanup.workspace_removed;
    }
}

/// One line from `action_timeline.json`'s summary.
fn timeline_summary(path: &Path) -> Option<String> {
    let timeline: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let summary = timeline.get("summary")?;
    let tools: Vec<String> = summary
        .get("tools")?
        .as_object()?
        .iter()
        .map(|(name, n)| format!("{name} ×{n}"))
        .collect();
    Some(format!(
        "{} events: {} turns, tool calls {}, {} files created (action_timeline.json)",
        summary.get("events")?,
        summary.get("turns")?,
        if tools.is_empty() {
            "none".to_owned()
        } else {
            tools.join(", ")
        },
        summary.get("files_created")?
    ))
}

fn status_text(report: &Report) -> String {
    let (good, bad) = (style::GOOD, style::BAD);
    match report.status {
        Status::Passed => format!("{good}passed{good:#}"),
        other => format!(
            "{bad}{}{bad:#} ({})",
            other.as_str(),
            report.termination.as_str()
        ),
    }
}

struct DemoRun {
    outcome: RunOutcome,
    run_dir: PathBuf,
}

async fn run_one(reports: &Path, workspace_root: &Path, spec: EvalSpec) -> Result<DemoRun, Fail> {
    let run_id = default_run_id();
    let run_dir = reports.join(run_id.as_str());
    let plan = RunPlan {
        ctx: RunPlanContext {
            run_dir: run_dir.clone(),
            run_id,
            workspace_root: workspace_root.to_owned(),
            keep: KeepPolicy::Never,
            name_with_eval: true,
            shim_grace: Duration::from_secs(2),
        },
        evals: vec![spec],
        workers: 1,
    };
    let outcome = execute(
        &plan,
        crate::cmd::run::Progress::silent(),
        Interrupt::never(),
    )
    .await?;
    Ok(DemoRun { outcome, run_dir })
}

fn sim(exe: &OsString, args: &[&str]) -> Vec<OsString> {
    std::iter::once(exe.clone())
        .chain(["sim-agent"].iter().chain(args).map(OsString::from))
        .collect()
}

fn spec(id: &str, command: Vec<OsString>) -> EvalSpec {
    EvalSpec {
        eval_id: EvalId::new(id).expect("demo ids are valid"),
        command,
        starter: None,
        timeout: Duration::from_secs(30),
        grace: Duration::from_secs(1),
        env: Vec::new(),
        limits: LimitSet::default(),
        events: EventSource::StreamJson,
        phases: EvalPhases::default(),
    }
}

fn full_eval(exe: &OsString) -> EvalSpec {
    let mut eval = spec(
        "demo",
        sim(exe, &["--files", "5", "--turns", "3", "--escapees"]),
    );
    eval.phases = EvalPhases {
        services: vec![ServiceSpec {
            name: "helper".to_owned(),
            command: sim(exe, &["--role", "service"]),
            ready: Readiness::File(".service-ready".into()),
            timeout: Duration::from_secs(10),
            env: Vec::new(),
        }],
        build: Some(PhaseCommand {
            command: vec![
                "sh".into(),
                "-c".into(),
                "test -s src/file_000.txt && echo build ok".into(),
            ],
            timeout: Duration::from_secs(10),
        }),
        review: Some(PhaseCommand {
            command: sim(exe, &["--role", "review"]),
            timeout: Duration::from_secs(10),
        }),
        ..EvalPhases::default()
    };
    eval
}

fn limited_eval(exe: &OsString) -> EvalSpec {
    let mut eval = spec(
        "runaway",
        sim(
            exe,
            &["--turns", "200", "--files", "0", "--turn-delay", "20ms"],
        ),
    );
    eval.limits.max_turns = 3;
    eval
}

struct Crash {
    owner: u32,
    found: u64,
    stopped: u64,
    workspaces: u64,
    clean: bool,
    run_dir: PathBuf,
}

/// Starts `hyoka run` as a separate process, SIGKILLs it once its agent's escapees exist and
/// are in the ledger, then cleans up after it.
async fn crash_and_clean(
    exe: &OsString,
    reports: &Path,
    workspace_root: &Path,
) -> Result<Crash, String> {
    let run_id = default_run_id();
    let run_dir = reports.join(run_id.as_str());
    let pids = tempfile::NamedTempFile::new()
        .map_err(|e| e.to_string())?
        .into_temp_path();
    let mut child = tokio::process::Command::new(exe)
        .args([
            "run",
            "--run-id",
            run_id.as_str(),
            "--grace",
            "30s",
            "--reports",
        ])
        .arg(reports)
        .arg("--workspace-root")
        .arg(workspace_root)
        .arg("--")
        .args(sim(exe, &["--escapees", "--linger", "60s", "--pid-file"]))
        .arg(&*pids)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start hyoka run: {e}"))?;
    let owner = child.id().unwrap_or_default();
    let ledger = run_dir.join("pids.txt");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let listed: Vec<String> = std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
            .collect();
        let ledger_text = std::fs::read_to_string(&ledger).unwrap_or_default();
        if listed.len() == 3
            && listed.iter().all(|pid| {
                ledger_text
                    .lines()
                    .any(|l| l.starts_with(&format!("{pid}\t")))
            })
        {
            break;
        }
        if Instant::now() > deadline {
            return Err("the crashing run never got going".to_owned());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.start_kill().map_err(|e| e.to_string())?;
    let _ = child.wait().await;
    let args = CleanArgs {
        reports: reports.to_owned(),
        workspace_root: Some(workspace_root.to_owned()),
        dry_run: false,
        grace: Duration::from_secs(1),
        json: false,
    };
    let root = workspace_root.to_owned();
    let output = tokio::task::spawn_blocking(move || crate::cmd::clean::clean(&args, &root))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let run = output.runs.iter().find(|r| r.run_id == run_id.as_str());
    Ok(Crash {
        owner,
        found: run.map_or(0, |r| r.found.len() as u64),
        stopped: run.map_or(0, |r| r.killed as u64),
        workspaces: output
            .workspaces
            .iter()
            .filter(|w| w.action == "removed")
            .count() as u64,
        clean: !output.remaining,
        run_dir,
    })
}

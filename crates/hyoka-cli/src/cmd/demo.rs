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
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use hyoka_eval::{
    CleanupOptions, Containment, EvalSpec, NoObserver, Report, RunOutcome, RunPlan, Settings,
    Status, Stop, Suite, Timeline, WorkspaceAction, clean_abandoned,
};
use hyoka_idle_detect::{Detector, DetectorConfig, Profile};
use hyoka_proctrack::Ledger;
use hyoka_report::{HtmlOptions, timeline_text, write_html_report};
use hyoka_respawn::{
    AiCheckers, Backend, DetectorModel, Event, EventLog, Machine, Observer, RespawnConfig, Session,
    SessionEnd, SessionOptions, SpawnOptions, Supervised,
};
use serde_json::Value;

use crate::args::DemoArgs;
use crate::exit::{ExitStatus, Fail};
use crate::input::{check_reports_dir, default_run_id, require_dir};
use crate::out::{outln, style};

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
    require_dir(&workspace_root, "workspace root")?;
    check_reports_dir(&args.reports)?;
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
    let (options, now) = (HtmlOptions::default(), SystemTime::now());
    let page = (run_dirs[0].as_ref())
        .map(|dir| write_html_report(std::slice::from_ref(dir), None, &options, now))
        .transpose()
        .map_err(|e| Fail::failure(format!("the page of the demo's run: {e}")))?;
    if let Some(page) = &page {
        outln!("page (open it in a browser):\n  {}", page.display());
    }
    if args.json {
        crate::out::json(&serde_json::json!({
            "ok": tally.ok && tally.survivors == 0,
            "seconds": started.elapsed().as_secs_f64(),
            "processes_seen": tally.processes_seen,
            "processes_stopped": tally.processes_stopped,
            "survivors": tally.survivors,
            "workspaces_removed": tally.workspaces_removed,
            "runs": run_dirs.iter().flatten().collect::<Vec<_>>(),
            "page": page,
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
    let cycle = demo_cycle(exe, reports).await?;
    outln!(
        "   steps       {note}{}{note:#} ({} cycle), typed only at the idle prompt ({} keys while busy)",
        cycle.steps.join(" → "),
        cycle.cycles,
        cycle.typed_while_busy
    );
    outln!("   events      {dim}{}{dim:#}", cycle.events.display());
    tally.ok &= cycle.ok && cycle.cycles == 1 && cycle.typed_while_busy == 0;
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
    let [full, _] = <[EvalSpec; 2]>::try_from(demo_evals(exe)?)
        .map_err(|_| Fail::failure("the demo's suite has two evals"))?;
    let eval = run_one(reports, root, full).await?;
    let report = &eval.reports[0];
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
    Ok(Some(eval.run_dir.clone()))
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
    let [_, runaway] = <[EvalSpec; 2]>::try_from(demo_evals(exe)?)
        .map_err(|_| Fail::failure("the demo's suite has two evals"))?;
    let limited = run_one(reports, root, runaway).await?;
    let report = &limited.reports[0];
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
    Ok(Some(limited.run_dir.clone()))
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
    let timeline: Timeline = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let text = timeline_text(&timeline.summary);
    Some(format!("{text} (action_timeline.json)"))
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

/// Runs one eval with `hyoka-eval`, contained like `hyoka run`'s, silently.
async fn run_one(
    reports: &Path,
    workspace_root: &Path,
    spec: EvalSpec,
) -> Result<RunOutcome, Fail> {
    let plan = RunPlan::new(default_run_id(), reports, workspace_root, vec![spec]);
    let containment = Containment {
        shim: Some(crate::harness::shim()?),
        shim_grace: Some(Duration::from_secs(2)),
    };
    hyoka_eval::run_tracked(plan, containment, Stop::never(), Arc::new(NoObserver))
        .await
        .map_err(crate::harness::run_failure)
}

fn sim(exe: &OsString, args: &[&str]) -> Vec<OsString> {
    std::iter::once(exe.clone())
        .chain(["sim-agent"].iter().chain(args).map(OsString::from))
        .collect()
}

/// The demo's two evals as a suite file gives them; `SIM` stands for this executable's
/// simulated agent (`<hyoka> sim-agent`).
const SUITE: &str = r#"
defaults: { timeout: 30s, grace: 1s, events: stream-json }
evals:
  - id: demo
    command: [SIM, --files, 5, --turns, 3, --escapees]
    services:
      - { name: helper, command: [SIM, --role, service], ready: { file: .service-ready }, timeout: 10s }
    build: { command: [sh, -c, "test -s src/file_000.txt && echo build ok"], timeout: 10s }
    review: { command: [SIM, --role, review], timeout: 10s }
  - id: runaway
    command: [SIM, --turns, 200, --files, 0, --turn-delay, 20ms]
    limits: { max_turns: 3 }
"#;

/// The demo's evals (the full one, then the runaway one), with `SIM` resolved.
fn demo_evals(exe: &OsString) -> Result<Vec<EvalSpec>, Fail> {
    // A JSON string is a YAML scalar: the path is quoted whatever it holds.
    let exe = serde_json::to_string(&exe.to_string_lossy()).unwrap_or_default();
    let text = SUITE.replace("SIM", &format!("{exe}, sim-agent"));
    let suite = Suite::from_yaml(&text, Path::new("demo.yaml"))
        .map_err(|e| Fail::failure(format!("the demo's suite: {e}")))?;
    Ok(suite.specs(&Settings::default(), None))
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
        .args(["run", "--grace", "30s", "--run-id"])
        .arg(run_id.as_str())
        .arg("--reports")
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
        let tracked = Ledger::read(&ledger, 0).map(|l| l.ledger.entries);
        let tracked = tracked.unwrap_or_default();
        if listed.len() == 3
            && listed
                .iter()
                .all(|pid| tracked.iter().any(|e| *pid == e.pid.to_string()))
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
    let options = CleanupOptions {
        reports: reports.to_owned(),
        workspace_root: workspace_root.to_owned(),
        grace: Duration::from_secs(1),
        dry_run: false,
        remove_kept: None,
    };
    let output = tokio::task::spawn_blocking(move || clean_abandoned(&options))
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
            .filter(|w| w.action == WorkspaceAction::Removed)
            .count() as u64,
        clean: !output.remaining,
        run_dir,
    })
}

/// What `hyoka demo`'s respawn step saw.
#[derive(Default)]
struct DemoCycle {
    /// The `--events` file, kept under the reports directory.
    events: PathBuf,
    /// The steps completed, in order.
    steps: Vec<String>,
    /// Cycles completed.
    cycles: usize,
    /// Keys that reached the agent while it was busy or waiting for a human (must be 0).
    typed_while_busy: usize,
    /// Whether the session ended after its one cycle with nothing left running.
    ok: bool,
}

/// Logs the session's events and counts its steps and cycles.
struct DemoObserver(Arc<Mutex<(EventLog, DemoCycle)>>);

impl Observer for DemoObserver {
    fn event(&mut self, at: Instant, event: &Event) {
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        seen.0.event(at, event);
        match event {
            Event::StepCompleted { step, .. } => seen.1.steps.push(step.as_str().to_owned()),
            Event::CycleCompleted { .. } => seen.1.cycles += 1,
            _ => {}
        }
    }
}

/// `hyoka demo`'s respawn step: one full cycle of the simulated agent on a PTY, headless,
/// with short timers, supervised by `hyoka-respawn`; the events file lands next to the runs.
async fn demo_cycle(exe: &OsString, reports: &Path) -> Result<DemoCycle, Fail> {
    let fail = |what: &str, e: &dyn std::fmt::Display| Fail::failure(format!("{what}: {e}"));
    std::fs::create_dir_all(reports).map_err(|e| fail("cannot create the reports", &e))?;
    let events = reports.join(format!("respawn-{}.events.jsonl", default_run_id()));
    let scratch = tempfile::Builder::new().prefix("respawn-demo-").tempdir();
    let scratch = scratch.map_err(|e| fail("cannot create a scratch directory", &e))?;
    let record = scratch.path().join("inputs.jsonl");
    let log = EventLog::create(&events, Instant::now(), SystemTime::now())
        .map_err(|e| fail("cannot log the session", &e))?;
    let args = "sim-agent --interactive --start-working 1s --work 800ms --record";
    let mut args: Vec<OsString> = args.split(' ').map(OsString::from).collect();
    args.push(record.clone().into());
    let spawn = SpawnOptions {
        program: exe.clone(),
        args,
        env: vec![("TERM".into(), "xterm-256color".into())],
        ..SpawnOptions::default()
    };
    let run_id = format!("respawn-{}", default_run_id());
    let mut options = SessionOptions::new(
        run_id,
        spawn,
        Backend::Pty,
        reports.to_owned(),
        std::env::temp_dir(),
        SystemTime::now(),
    );
    options.grace = Duration::from_secs(2);
    let session = Session::start(options)
        .await
        .map_err(|e| fail("cannot start the session", &e))?;
    let confirm = Duration::from_millis(500);
    let mut config = RespawnConfig {
        max_cycles: Some(1),
        completion_confirm: confirm,
        inter_step_delay: Duration::from_millis(200),
        no_output_timeout: Duration::from_secs(3),
        ..RespawnConfig::default()
    };
    // No AI checker: idle is confirmed by the detector and silence alone.
    (config.idle_check.enabled, config.plan_check.enabled) = (false, false);
    let profile = Profile::builtin("claude-code").map_err(|e| fail("the profile", &e))?;
    let detector = Detector::new(
        profile,
        DetectorConfig {
            completion_confirm: confirm,
            ..DetectorConfig::default()
        },
    );
    let cycle = DemoCycle {
        events,
        ..DemoCycle::default()
    };
    let seen = Arc::new(Mutex::new((log, cycle)));
    let parts = Supervised {
        machine: Machine::new(config),
        model: DetectorModel::new(detector),
        observer: DemoObserver(Arc::clone(&seen)),
        checkers: AiCheckers::default(),
        keys: None,
        resize: None,
        detach: None,
    };
    let deadline = tokio::time::sleep(Duration::from_secs(25));
    let finished = session.run(parts, deadline, std::future::pending()).await;
    let (mut log, mut cycle) = Arc::try_unwrap(seen)
        .map_err(|_| Fail::failure("the session's observer is still shared"))?
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    if let Ok(report) = &finished.report {
        log.finished(Instant::now(), report, &finished.teardown);
        cycle.ok = report.end == SessionEnd::BudgetExhausted { cycles: 1 }
            && finished.teardown.survivors == 0;
    }
    let inputs = std::fs::read_to_string(&record).unwrap_or_default();
    cycle.typed_while_busy = (inputs.lines())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|i| i["state"] != "idle")
        .count();
    Ok(cycle)
}

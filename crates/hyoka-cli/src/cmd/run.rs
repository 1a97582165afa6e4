//! `hyoka run -- COMMAND…`: one eval in an isolated workspace, with records.

use std::ffi::OsString;
use std::fs::File;
use std::path::Path;
use std::time::{Instant, SystemTime};

use hyoka_workspace::{EvalId, RunId};

use crate::args::RunArgs;
use crate::eval::{EvalSpec, RunContext, run_eval};
use crate::records::{millis, rfc3339, write_json};
use crate::report::{Report, RunSummary, Status};
use crate::{ExitStatus, Fail};

/// Validated inputs of `hyoka run`.
#[derive(Debug)]
pub(crate) struct RunPlan {
    pub(crate) ctx: RunContext,
    pub(crate) evals: Vec<EvalSpec>,
}

pub(crate) async fn exec(args: RunArgs) -> Result<ExitStatus, Fail> {
    let plan = plan(args)?;
    let (reports, _lock) = execute(&plan).await?;
    Ok(if reports.iter().all(|r| r.status == Status::Passed) {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// Checks every input before anything is created.
pub(crate) fn plan(args: RunArgs) -> Result<RunPlan, Fail> {
    let run_id = args.run_id.unwrap_or_else(default_run_id);
    let workspace_root = args.workspace_root.unwrap_or_else(std::env::temp_dir);
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
    if args.command.first().is_none_or(|p| p.is_empty()) {
        return Err(Fail::usage("the command after `--` is empty"));
    }
    Ok(RunPlan {
        ctx: RunContext {
            run_id,
            run_dir,
            workspace_root,
            keep: args.keep_workspace,
            owner: owner_identity(),
            name_with_eval: false,
        },
        evals: vec![EvalSpec {
            eval_id: EvalId::main(),
            command: args.command,
            starter: args.starter,
            timeout: args.timeout,
            grace: args.grace,
            env: Vec::<(OsString, OsString)>::new(),
        }],
    })
}

/// Creates the run directory, takes the owner lock, runs every eval and writes `run.json`.
pub(crate) async fn execute(plan: &RunPlan) -> Result<(Vec<Report>, File), Fail> {
    let ctx = &plan.ctx;
    if let Some(parent) = ctx.run_dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            Fail::usage(format!(
                "cannot create reports directory {}: {e}",
                parent.display()
            ))
        })?;
    }
    std::fs::create_dir(&ctx.run_dir).map_err(|e| {
        Fail::usage(format!(
            "cannot create run directory {}: {e}",
            ctx.run_dir.display()
        ))
    })?;
    let lock = File::create(ctx.run_dir.join("owner.lock"))
        .and_then(|file| {
            file.try_lock()
                .map_err(std::io::Error::other)
                .map(|()| file)
        })
        .map_err(|e| Fail::failure(format!("cannot take the owner lock: {e}")))?;
    let started_at = SystemTime::now();
    let started = Instant::now();
    let mut reports = Vec::with_capacity(plan.evals.len());
    for spec in &plan.evals {
        let report = run_eval(ctx, spec)
            .await
            .map_err(|e| Fail::failure(format!("eval {}: {e}", spec.eval_id)))?;
        tracing::info!(eval = %report.eval_id, status = ?report.status, termination = ?report.termination, "eval finished");
        reports.push(report);
    }
    let summary = RunSummary::from_reports(
        ctx.run_id.as_str(),
        rfc3339(started_at),
        rfc3339(SystemTime::now()),
        millis(started.elapsed()),
        &reports,
    );
    write_json(&ctx.run_dir.join("run.json"), &summary)
        .map_err(|e| Fail::failure(format!("cannot write run.json: {e}")))?;
    Ok((reports, lock))
}

fn require_dir(path: &Path, what: &str) -> Result<(), Fail> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Fail::usage(format!(
            "{what} {} is not a directory",
            path.display()
        ))),
        Err(err) => Err(Fail::usage(format!("{what} {}: {err}", path.display()))),
    }
}

fn check_reports_dir(path: &Path) -> Result<(), Fail> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_dir() => Err(Fail::usage(format!(
            "reports path {} is not a directory",
            path.display()
        ))),
        _ => Ok(()),
    }
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

/// This process's identity, `<pid> <start_ticks> <boot_id>`, for markers and ledgers.
pub(crate) fn owner_identity() -> String {
    let pid = std::process::id();
    let start = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| {
            let rest = &stat[stat.rfind(')')? + 2..];
            rest.split(' ').nth(19).map(str::to_owned)
        })
        .unwrap_or_default();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    format!("{pid} {start} {}", boot.trim())
}

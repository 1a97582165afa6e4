//! `hyoka demo`: one eval of the simulated agent, end to end, explained.

use std::ffi::OsString;
use std::time::Duration;

use hyoka_workspace::{EvalId, KeepPolicy};

use crate::args::DemoArgs;
use crate::cmd::run::{RunPlan, RunPlanContext, default_run_id, execute};
use crate::eval::EvalSpec;
use crate::out::outln;
use crate::report::Status;
use crate::suite::{PhaseCommand, Readiness, ServiceSpec};
use crate::{ExitStatus, Fail};

pub(crate) async fn exec(args: DemoArgs) -> Result<ExitStatus, Fail> {
    let exe = std::env::current_exe()
        .map_err(|e| Fail::failure(format!("cannot find the hyoka executable: {e}")))?;
    let exe_str: OsString = exe.into_os_string();
    let run_id = default_run_id();
    let workspace_root = args.workspace_root.unwrap_or_else(std::env::temp_dir);
    let plan = RunPlan {
        ctx: RunPlanContext {
            run_dir: args.reports.join(run_id.as_str()),
            run_id,
            workspace_root,
            keep: KeepPolicy::Never,
            name_with_eval: true,
            shim_grace: Duration::from_secs(2),
        },
        evals: vec![EvalSpec {
            eval_id: EvalId::new("demo").expect("valid id"),
            command: vec![
                exe_str.clone(),
                "sim-agent".into(),
                "--files".into(),
                "5".into(),
                "--turns".into(),
                "3".into(),
                "--escapees".into(),
            ],
            starter: None,
            timeout: Duration::from_secs(30),
            grace: Duration::from_secs(2),
            env: Vec::<(OsString, OsString)>::new(),
            limits: crate::limits::LimitSet::default(),
            events: crate::events::EventSource::StreamJson,
            phases: crate::eval::EvalPhases {
                services: vec![ServiceSpec {
                    name: "helper".to_owned(),
                    command: vec![
                        exe_str.clone(),
                        "sim-agent".into(),
                        "--role".into(),
                        "service".into(),
                    ],
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
                    command: vec![
                        exe_str.clone(),
                        "sim-agent".into(),
                        "--role".into(),
                        "review".into(),
                    ],
                    timeout: Duration::from_secs(10),
                }),
                ..crate::eval::EvalPhases::default()
            },
        }],
        workers: 1,
    };
    outln!("hyoka demo: running the simulated agent in an isolated workspace\n");
    let outcome = execute(
        &plan,
        crate::cmd::run::Progress::silent(),
        crate::interrupt::Interrupt::never(),
    )
    .await?;
    let reports = outcome.reports;
    for report in &reports {
        outln!("  eval        {}", report.eval_id);
        outln!("  command     {}", report.command.join(" "));
        outln!("  workspace   {}", report.workspace);
        outln!(
            "  result      {:?}, {:?}, exit code {}",
            report.status,
            report.termination,
            report
                .exit_code
                .map_or_else(|| "-".to_owned(), |c| c.to_string())
        );
        outln!(
            "  agent did   {} turns, {} tool calls, {} files, {} bytes",
            report.counts.turns,
            report.counts.actions,
            report.counts.files,
            report.counts.output_bytes
        );
        outln!("  left behind a background sleeper, a new-session child that ignores SIGTERM,");
        outln!("              and a double-forked daemon with an empty environment");
        outln!(
            "  cleanup     {} processes seen, {} stopped by hyoka, {} survivors (layers: {})",
            report.cleanup.processes_seen,
            report.cleanup.processes_killed,
            report.cleanup.survivors,
            report.cleanup.layers.join(", ")
        );
        let phases: Vec<String> = report
            .phases
            .iter()
            .map(|p| format!("{} {}", p.name, p.status.as_str()))
            .collect();
        outln!("  phases      {}", phases.join(" → "));
        if let Some(verdict) = &report.review {
            outln!(
                "  review      pass: {}, score {}, {}",
                verdict.pass,
                verdict.score.unwrap_or_default(),
                verdict.notes.clone().unwrap_or_default()
            );
        }
        outln!(
            "              workspace {}",
            if report.cleanup.workspace_removed {
                "removed"
            } else {
                "NOT removed"
            }
        );
    }
    let run_dir = &plan.ctx.run_dir;
    outln!("\nreports in {}", run_dir.display());
    for file in [
        "run.json",
        "demo/report.json",
        "demo/action_timeline.json",
        "demo/output.log",
    ] {
        outln!("  {}", run_dir.join(file).display());
    }
    Ok(if reports.iter().all(|r| r.status == Status::Passed) {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

//! The scorers: build and review run after the agent's tree is gone, in the workspace, each
//! with its own timeout and containment; a review may print a JSON verdict.

use hyoka_proctrack::{AgentExit, Escalation, TeardownReport};

use super::output::{Capture, pump_both};
use super::{PhaseClock, PhaseContext, RunContext, skipped, stop_and_drain};
use crate::capped_log::{CappedLog, OUTPUT_CAP};
use crate::error::EvalError;
use crate::ps::LiveStatus;
use crate::report::{PhaseRecord, PhaseStatus, ReviewVerdict};
use crate::settings::{EvalPhases, PhaseCommand};
use crate::stop::{Stop, StopLevel};
use crate::tasks::trial::{TaskFiles, verify};
use crate::timeline::TimelineBuilder;

/// The most of a review's stdout kept for finding its verdict.
const VERDICT_BYTES: usize = 1024 * 1024;

/// What the scorers decided.
pub(crate) struct Scored {
    /// The review's verdict, when it printed a valid one.
    pub(crate) verdict: Option<ReviewVerdict>,
    /// Whether a stop request cut one short.
    pub(crate) interrupted: bool,
}

/// Runs build, then review, when the eval has them: only when `proceed` (the agent finished:
/// also after a limit or a timeout, since graders score partial work, but not after an
/// interruption or when it never ran), and review only after a build that passed. Each
/// phase's record goes to `records`, its teardown to `teardowns`, its start and end to the
/// timeline.
///
/// A Harbor task's review is its verifier ([`verify`]): the tests copied in only now, its
/// own view, its reward as the verdict.
///
/// # Errors
/// [`EvalError::Sandbox`] when the spawn layer cannot show a task's verifier its view.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn scorers(
    pcx: PhaseContext<'_>,
    phases: &EvalPhases,
    proceed: bool,
    stop: &Stop,
    (live, timeline): (&LiveStatus, &mut TimelineBuilder),
    records: &mut Vec<PhaseRecord>,
    teardowns: &mut Vec<TeardownReport>,
    mut task: Option<(&RunContext, &mut TaskFiles)>,
) -> Result<Scored, EvalError> {
    let clock = pcx.clock;
    let mut scored = Scored {
        verdict: None,
        interrupted: false,
    };
    for (name, command) in [("build", &phases.build), ("review", &phases.review)] {
        let Some(command) = command else { continue };
        let build_failed = records
            .iter()
            .any(|p| p.name == "build" && p.status != PhaseStatus::Passed);
        if !proceed || (name == "review" && build_failed) {
            let why = if proceed {
                "the build failed"
            } else {
                "the agent did not finish"
            };
            records.push(skipped(clock, name, why));
            continue;
        }
        live.phase(name, clock.wall());
        timeline.phase(clock.now(), format!("{name} started"));
        let run = match task.as_mut() {
            Some((ctx, files)) if name == "review" => {
                verify(ctx, files, pcx, command, stop.clone()).await?
            }
            _ => run_phase(pcx, name, command, stop.clone()).await,
        };
        timeline.phase(
            clock.now(),
            format!("{name} {}", run.record.status.as_str()),
        );
        teardowns.push(run.teardown);
        scored.interrupted |= run.interrupted;
        if name == "review" {
            scored.verdict = run.verdict;
        }
        records.push(run.record);
    }
    Ok(scored)
}

/// What a build or review phase did.
pub(crate) struct PhaseRun {
    pub(crate) record: PhaseRecord,
    pub(crate) teardown: TeardownReport,
    /// The review's verdict, when it printed a valid one.
    pub(crate) verdict: Option<ReviewVerdict>,
    /// Whether a stop request cut it short.
    pub(crate) interrupted: bool,
}

/// Runs `command` as the phase `name` (`build` or `review`) in the workspace, with its own
/// timeout and containment; output goes to `<name>.log`.
///
/// The phase's verdict: a build passes when it exits 0 and fails on another exit code (the
/// agent's work does not build). A review's printed JSON verdict decides when it exits 0 or
/// 1; without one, exit 0 passes and exit 1 fails. Anything else is the scorer's error
/// ([`PhaseStatus::Error`]): a signal, another exit code, a timeout, a command that cannot
/// start, or a printed verdict that is not valid (`{"pass": …}` of the wrong shape).
pub(crate) async fn run_phase(
    pcx: PhaseContext<'_>,
    name: &'static str,
    phase: &PhaseCommand,
    mut stop: Stop,
) -> PhaseRun {
    let PhaseContext {
        processes,
        clock: time,
        eval_id,
        workspace,
        eval_dir,
        env,
        grace,
    } = pcx;
    let clock = PhaseClock::start(time, name);
    let error = |clock: PhaseClock<'_>, detail: String| PhaseRun {
        record: clock.finish(PhaseStatus::Error, None, Some(detail)),
        teardown: TeardownReport::default(),
        verdict: None,
        interrupted: false,
    };
    // Made by the first byte the phase prints: most scorers print nothing.
    let log = CappedLog::lazy(&eval_dir.join(format!("{name}.log")), OUTPUT_CAP);
    let Some(command) = env.command(&phase.command, workspace, &[]) else {
        let _ = log.finish().await;
        return error(clock, format!("the {name} command is empty"));
    };
    let mut agent = match processes.spawn(&format!("{eval_id}.{name}"), command).await {
        Ok(agent) => agent,
        Err(err) => {
            let _ = log.finish().await;
            return error(clock, format!("cannot start the {name} command: {err}"));
        }
    };
    let capture = Capture::new(VERDICT_BYTES);
    let pumps = pump_both(agent.as_mut(), &log, Some(capture.clone()));
    let (exit, stopped, interrupted) = tokio::select! {
        exit = agent.wait() => (exit, None, false),
        () = tokio::time::sleep(phase.timeout) => (None, Some(format!("timed out after {}", humantime::format_duration(phase.timeout))), false),
        reason = stop.requested() => (None, Some(format!("stopped by {}", reason.name())), true),
    };
    let escalation = Escalation::new();
    if matches!(stop.level(), StopLevel::Force(_)) {
        escalation.escalate();
    }
    let teardown = stop_and_drain(agent.as_mut(), grace, escalation, pumps, &log).await;
    let stdout = capture.take();
    let exit_code = exit.and_then(AgentExit::code);
    let printed = (name == "review").then(|| parse_verdict(&stdout)).flatten();
    let (status, detail) = judge(name, stopped, exit, printed.as_ref());
    PhaseRun {
        record: clock.finish(status, exit_code, detail),
        teardown,
        verdict: printed.and_then(Result::ok),
        interrupted,
    }
}

/// A build or review's verdict from how it ended: `stopped` (why, when it was timed out or
/// stopped), its exit, and (a review's) printed verdict.
fn judge(
    name: &str,
    stopped: Option<String>,
    exit: Option<AgentExit>,
    printed: Option<&Result<ReviewVerdict, String>>,
) -> (PhaseStatus, Option<String>) {
    match (stopped, exit) {
        (Some(why), _) => (PhaseStatus::Error, Some(why)),
        (None, Some(AgentExit::Signal(sig))) => (
            PhaseStatus::Error,
            Some(format!("crashed: killed by signal {sig}")),
        ),
        (None, Some(AgentExit::Code(code))) if name != "review" => match code {
            0 => (PhaseStatus::Passed, None),
            code => (PhaseStatus::Failed, Some(format!("exit code {code}"))),
        },
        (None, Some(AgentExit::Code(code))) => match printed {
            Some(Err(why)) => (
                PhaseStatus::Error,
                Some(format!("printed an invalid verdict: {why}")),
            ),
            Some(Ok(v)) if code <= 1 && v.pass => (PhaseStatus::Passed, None),
            Some(Ok(_)) if code <= 1 => (
                PhaseStatus::Failed,
                Some("the review's verdict is a fail".to_owned()),
            ),
            None if code == 0 => (PhaseStatus::Passed, None),
            None if code == 1 => (PhaseStatus::Failed, Some("exit code 1".to_owned())),
            _ => (
                PhaseStatus::Error,
                Some(format!("crashed: exit code {code} (a review exits 0 or 1)")),
            ),
        },
        (None, _) => (PhaseStatus::Error, Some("unknown exit".to_owned())),
    }
}

/// Finds a verdict in a review's stdout: the whole output as one JSON object with a `pass`
/// key, or else its last line that looks like one (an object naming `pass`). `None` when
/// there is none; an error when that line is not valid JSON (`NaN`, `1e309`, text after the
/// object), is not a valid verdict, has a score that is not a finite number, or is followed
/// by more output: a verdict the scorer did not print cleanly never passes.
pub(crate) fn parse_verdict(stdout: &[u8]) -> Option<Result<ReviewVerdict, String>> {
    let text = String::from_utf8_lossy(stdout);
    let whole = text.trim();
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(whole)
        && value.as_object().is_some_and(|o| o.contains_key("pass"))
    {
        return Some(verdict(value));
    }
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let at = lines
        .iter()
        .rposition(|l| l.starts_with('{') && l.contains("\"pass\""))?;
    if lines[at + 1..].iter().any(|l| !l.is_empty()) {
        return Some(Err("output follows the verdict line".to_owned()));
    }
    Some(
        serde_json::from_str::<serde_json::Value>(lines[at])
            .map_err(|e| format!("the verdict line is not valid JSON: {e}"))
            .and_then(verdict),
    )
}

fn verdict(value: serde_json::Value) -> Result<ReviewVerdict, String> {
    let verdict = serde_json::from_value::<ReviewVerdict>(value).map_err(|e| e.to_string())?;
    if verdict.score.is_some_and(|s| !s.is_finite()) {
        return Err("the score is not a finite number".to_owned());
    }
    Ok(verdict)
}

#[cfg(test)]
mod tests;

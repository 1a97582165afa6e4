//! One concise line per state change and decision, for a person reading a headless
//! controller's log: what happened, why, and what comes next. Timer bookkeeping and the
//! machine's internal states are left to the `--events` file.

use crate::event::{AlertKind, BlockReason, Event, SendOutcome, Step};

/// The line a person should read for `event`, or `None` for bookkeeping.
#[expect(
    clippy::too_many_lines,
    reason = "one short arm per event a person reads"
)]
pub fn narrate(event: &Event) -> Option<String> {
    Some(match event {
        Event::Started => "watching the session".to_owned(),
        Event::VerdictChanged {
            state,
            blocked,
            rule,
            detail,
        } => {
            let why = if detail.is_empty() {
                rule.clone()
            } else {
                format!("{rule}: {}", clip(detail))
            };
            match blocked {
                Some(kind) => format!("session blocked ({kind}), waiting for a person [{why}]"),
                None => format!("session {state} [{why}]"),
            }
        }
        Event::IdleConfirmed { via } => format!("idle confirmed ({via})"),
        Event::IdleRejected => "idle rejected: the session still works".to_owned(),
        Event::Blocked { reason, details } => match reason {
            BlockReason::DeliveryUnconfirmed => format!("cycles paused: {details}"),
            _ => format!("no cycle now: {details}"),
        },
        Event::CycleStarted { cycle } => format!("cycle {cycle} starts"),
        Event::StepTyped {
            step,
            input,
            dry_run,
        } => {
            let verb = if *dry_run { "would type" } else { "typed" };
            format!("{verb} the {} step: {}", step_name(*step), clip(input))
        }
        Event::StepSent { step, dry_run, .. } => {
            if *dry_run {
                format!(
                    "would press Enter for the {} step; waiting as a real run would",
                    step_name(*step)
                )
            } else {
                format!(
                    "pressed Enter for the {} step; waiting for a new turn",
                    step_name(*step)
                )
            }
        }
        Event::KeysWithheld {
            step,
            keys,
            state,
            blocked,
            rule,
        } => {
            let now = match blocked {
                Some(kind) => format!("blocked ({kind})"),
                None => state.to_string(),
            };
            format!(
                "did not press {} for the {} step: the session is {now} [{rule}]",
                if *keys == "enter" { "Enter" } else { "any key" },
                step_name(*step)
            )
        }
        Event::EnterHeld { step, state, rule } => format!(
            "Enter for the {} step waits for the screen to settle: the session is {state} [{rule}]",
            step_name(*step)
        ),
        Event::StepRetried { step, attempt } => format!(
            "no new turn after the {} step: Enter again (retry {attempt})",
            step_name(*step)
        ),
        Event::DeliveryConfirmed { step, via } => {
            format!("{} delivered: a new turn started ({via})", step_name(*step))
        }
        Event::DeliveryUnconfirmed { step, .. } => format!(
            "{} not confirmed: no new turn started after Enter",
            step_name(*step)
        ),
        Event::StepCompleted { step, via } => format!("{} step done ({via})", step_name(*step)),
        Event::StepSkipped { step, reason } => {
            format!("{} step skipped: {reason}", step_name(*step))
        }
        Event::StepDeferred { step, reason } => {
            format!("{} step waits: {reason}", step_name(*step))
        }
        Event::CycleCompleted { cycle } => format!("cycle {cycle} done; watching"),
        Event::CycleAborted { cycle, reason } => format!("cycle {cycle} abandoned: {reason}"),
        Event::AutoAcceptSent { dry_run: false } => "accepted the plan menu (Enter)".to_owned(),
        Event::AutoAcceptSent { dry_run: true } => "would accept the plan menu".to_owned(),
        Event::HumanPresent { lock_ms, via } => format!(
            "a person is at the session ({via}): automation waits until {}s after they leave",
            lock_ms / 1000
        ),
        Event::HumanLockReleased => "nobody at the session: automation resumes".to_owned(),
        Event::SendRequested { id, queue } => {
            format!(
                "send #{id} received{}",
                if *queue { " (queued)" } else { "" }
            )
        }
        Event::SendRefused { id, reason } => {
            format!("send #{id} refused, nothing typed: {reason}")
        }
        Event::SendQueued { id, reason } => {
            format!("send #{id} waits until the session can take it: {reason}")
        }
        Event::SendDone { id, outcome } => match outcome {
            SendOutcome::Delivered => format!("send #{id} delivered"),
            SendOutcome::Unconfirmed => format!("send #{id} typed but not confirmed"),
            SendOutcome::Refused(_) => return None,
        },
        Event::AlertStarted { alert, blocked } => match (alert, blocked) {
            (AlertKind::Blocked, Some(kind)) => {
                format!("running the on-blocked command (blocked: {kind})")
            }
            (AlertKind::Blocked, None) => "running the on-blocked command".to_owned(),
            (AlertKind::Idle, _) => "running the on-idle command".to_owned(),
        },
        Event::AlertFinished {
            alert,
            code,
            timed_out,
            error,
        } => {
            let name = match alert {
                AlertKind::Blocked => "on-blocked",
                AlertKind::Idle => "on-idle",
            };
            match (error, timed_out, code) {
                (Some(error), _, _) => format!("the {name} command failed: {error}"),
                (None, true, _) => format!("the {name} command ran too long and was stopped"),
                (None, false, Some(code)) => format!("the {name} command exited with {code}"),
                (None, false, None) => format!("the {name} command was killed"),
            }
        }
        Event::IdleCheckStarted { reason, .. } => format!("AI idle check started ({reason})"),
        Event::IdleCheckCompleted { verdict, .. } => format!("AI idle check: {verdict:?}"),
        Event::IdleCheckFailed { message, .. } => format!("AI idle check failed: {message}"),
        Event::PlanCheckCompleted { verdict, .. } => format!("AI plan check: {verdict:?}"),
        Event::PlanCheckFailed { message, .. } => format!("AI plan check failed: {message}"),
        Event::CheckerDisabled { checker, reason } => {
            format!("{checker:?} checker disabled: {reason}")
        }
        Event::StuckWarning { state, duration_ms } => {
            format!("stuck in {state} for {}s", duration_ms / 1000)
        }
        Event::StuckRecovery { state, attempt, .. } => {
            format!("recovering from {state} (attempt {attempt})")
        }
        Event::Paused => "automation paused".to_owned(),
        Event::Resumed => "automation resumed".to_owned(),
        Event::BudgetExhausted { cycles } => {
            format!("{cycles} cycle(s) done: stopping the session")
        }
        Event::SessionExited { code } => match code {
            Some(code) => format!("the agent exited with code {code}"),
            None => "the agent's session ended".to_owned(),
        },
        Event::Detached => "detached: the session keeps running, supervised by nobody".to_owned(),
        _ => return None,
    })
}

fn step_name(step: Step) -> &'static str {
    match step {
        Step::Update => "update",
        Step::Clear => "clear",
        Step::Init => "init",
        Step::Kickstart => "kickstart",
        Step::AutoAccept => "plan-accept",
        Step::Send => "sent text",
    }
}

/// At most 80 characters of `text`, on one line.
fn clip(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

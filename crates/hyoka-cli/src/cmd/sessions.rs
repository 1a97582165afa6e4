//! `hyoka sessions`, `hyoka wait` and `hyoka send`: the supervised sessions through
//! `hyoka-respawn`'s registry, and the exit codes scripts rely on (wait: 0 reached, 124
//! timed out; send: 0 delivered, 3 refused with nothing typed, 4 typed but not confirmed;
//! an unknown name: 2).

use hyoka_idle_detect::SessionState;
use hyoka_respawn::{RespawnError, SendOutcome, SessionStatus, WaitOutcome};
use serde_json::json;

use crate::args::{SendArgs, SessionsArgs, WaitArgs, WaitState};
use crate::exit::{ExitStatus, Fail};
use crate::input::registry;
use crate::out::outln;

fn failed(err: &RespawnError) -> Fail {
    if err.is_bad_input() {
        Fail::usage(err.to_string())
    } else {
        Fail::failure(err.to_string())
    }
}

/// `STATE` as a person reads it: `blocked (permission)`, `idle`.
fn state(status: &SessionStatus) -> String {
    match status.blocked {
        Some(kind) => format!("{} ({kind})", status.state),
        None => status.state.to_string(),
    }
}

pub(crate) async fn list(args: &SessionsArgs) -> Result<ExitStatus, Fail> {
    let listed = registry()?.list().await;
    if args.json {
        let rows: Vec<_> = listed
            .iter()
            .map(|l| match &l.status {
                Ok(status) => json!(status),
                Err(err) => json!({ "name": l.name, "error": err.to_string() }),
            })
            .collect();
        crate::out::json(&rows);
        return Ok(ExitStatus::Success);
    }
    if listed.is_empty() {
        outln!("no supervised sessions");
    }
    for listing in &listed {
        let Ok(status) = &listing.status else {
            outln!("{}  not answering", listing.name);
            continue;
        };
        let person = if status.human_present {
            "  person present"
        } else {
            ""
        };
        outln!(
            "{}  {} for {}  cycles {}  {} {}{person}",
            status.name,
            state(status),
            humantime::format_duration(std::time::Duration::from_secs(status.state_for_ms / 1000)),
            status.cycles,
            status.backend,
            status.agent,
        );
        if let Some(why) = status.evidence.first() {
            outln!("    why: {}: {}", why.rule, why.detail);
        }
        if let Some(last) = &status.last_event {
            outln!("    last: {last}");
        }
    }
    Ok(ExitStatus::Success)
}

pub(crate) async fn wait(args: &WaitArgs) -> Result<ExitStatus, Fail> {
    let until = match args.until {
        WaitState::Idle => SessionState::Idle,
        WaitState::Working => SessionState::Working,
        WaitState::Blocked => SessionState::Blocked,
    };
    let outcome = registry()?
        .wait(&args.name, until, args.timeout)
        .await
        .map_err(|e| failed(&e))?;
    let (status, last) = match outcome {
        WaitOutcome::Reached(status) => (ExitStatus::Success, Some(status)),
        WaitOutcome::TimedOut(status) => (ExitStatus::Code(124), Some(status)),
        _ => {
            return Err(Fail::failure(format!(
                "session {:?} ended before it was {until}",
                args.name
            )));
        }
    };
    if args.json
        && let Some(last) = &last
    {
        crate::out::json(last);
    }
    if status != ExitStatus::Success
        && let Some(last) = last
    {
        return Err(Fail::with(
            status,
            format!("timed out: session {:?} is {}", args.name, state(&last)),
        ));
    }
    Ok(status)
}

pub(crate) async fn send(args: &SendArgs) -> Result<ExitStatus, Fail> {
    if args.text.trim().is_empty() {
        return Err(Fail::usage("the text to send is empty"));
    }
    let outcome = registry()?
        .send(&args.name, &args.text, args.queue)
        .await
        .map_err(|e| failed(&e))?;
    match outcome {
        SendOutcome::Delivered => {
            outln!("delivered to {}: a new turn started", args.name);
            Ok(ExitStatus::Success)
        }
        SendOutcome::Refused(reason) => Err(Fail::with(
            ExitStatus::Code(3),
            format!("refused, nothing typed: {reason}"),
        )),
        SendOutcome::Unconfirmed => Err(Fail::with(
            ExitStatus::Code(4),
            "typed, but no new turn started after Enter (it may sit unsubmitted in the input)",
        )),
    }
}

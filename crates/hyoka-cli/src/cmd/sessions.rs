//! `hyoka sessions`, `hyoka wait` and `hyoka send`: the supervised sessions through
//! `hyoka-respawn`'s registry (and the orphaned tmux sessions its records prove), and the exit codes scripts rely on (wait: 0 reached, 124
//! timed out; send: 0 delivered, 3 refused with nothing typed, 4 typed but not confirmed;
//! an unknown name: 2).

use std::path::Path;

use hyoka_respawn::{RespawnError, SendOutcome, WaitOutcome};
use serde_json::json;

use crate::args::{SendArgs, SessionsArgs, WaitArgs};
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

/// [`failed`], but a name no controller answers for that is an orphaned tmux session under
/// `reports` says so, with the commands that supervise or stop it (still exit 2: no session
/// can be waited for or typed into without a controller).
async fn failed_for(err: &RespawnError, name: &str, reports: &Path) -> Fail {
    if matches!(err, RespawnError::UnknownSession { .. })
        && let Some(orphan) = hyoka_respawn::orphaned_sessions(reports)
            .await
            .into_iter()
            .find(|o| o.name == name)
    {
        return Fail::usage(format!(
            "session {name:?} is orphaned: its controller (pid {}) died and nobody supervises \
             it; supervise it again with `{}`, or stop it with `{}`",
            orphan.controller_pid, orphan.supervise, orphan.stop
        ));
    }
    failed(err)
}

/// The supervised sessions (from the registry), then the tmux sessions whose controller
/// died (from the records under `--reports`), marked orphaned.
pub(crate) async fn list(args: &SessionsArgs) -> Result<ExitStatus, Fail> {
    let listed = registry()?.list().await;
    let orphans: Vec<_> = hyoka_respawn::orphaned_sessions(&args.reports)
        .await
        .into_iter()
        .filter(|o| !listed.iter().any(|l| l.name == o.name))
        .collect();
    if args.json {
        let rows: Vec<_> = listed
            .iter()
            .map(|l| match &l.status {
                Ok(status) => json!(status),
                Err(err) => json!({ "name": l.name, "error": err.to_string() }),
            })
            .chain(orphans.iter().map(|o| json!(o)))
            .collect();
        crate::out::json(&rows);
        return Ok(ExitStatus::Success);
    }
    if listed.is_empty() && orphans.is_empty() {
        outln!("no supervised sessions");
    }
    for listing in &listed {
        match &listing.status {
            Ok(status) => outln!("{}", status.render()),
            Err(err) => outln!("{}  not answering: {err}", listing.name),
        }
    }
    for orphan in &orphans {
        outln!("{}", orphan.render());
    }
    Ok(ExitStatus::Success)
}

pub(crate) async fn wait(args: &WaitArgs) -> Result<ExitStatus, Fail> {
    let until = args.until;
    let outcome = match registry()?.wait(&args.name, until, args.timeout).await {
        Ok(outcome) => outcome,
        Err(err) => return Err(failed_for(&err, &args.name, &args.reports).await),
    };
    let (reached, last) = match outcome {
        WaitOutcome::Reached(status) => (true, status),
        WaitOutcome::TimedOut(status) => (false, status),
        _ => {
            let why = format!("session {:?} ended before it was {until}", args.name);
            return Err(Fail::failure(why));
        }
    };
    if args.json {
        crate::out::json(&last);
    }
    if reached {
        return Ok(ExitStatus::Success);
    }
    let why = format!(
        "timed out: session {:?} is {}",
        args.name,
        last.state_words()
    );
    Err(Fail::with(ExitStatus::Code(124), why))
}

pub(crate) async fn send(args: &SendArgs) -> Result<ExitStatus, Fail> {
    if args.text.trim().is_empty() {
        return Err(Fail::usage("the text to send is empty"));
    }
    let outcome = match registry()?.send(&args.name, &args.text, args.queue).await {
        Ok(outcome) => outcome,
        Err(err) => return Err(failed_for(&err, &args.name, &args.reports).await),
    };
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

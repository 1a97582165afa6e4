//! `hyoka sessions`, `hyoka wait` and `hyoka send`: the supervised sessions through
//! `hyoka-respawn`'s registry (and the orphaned tmux sessions its records prove), and the exit codes scripts rely on (wait: 0 reached, 124
//! timed out; send: 0 delivered, 3 refused with nothing typed, 4 typed but not confirmed;
//! an unknown name: 2).

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
    let outcome = registry()?
        .wait(&args.name, until, args.timeout)
        .await
        .map_err(|e| failed(&e))?;
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

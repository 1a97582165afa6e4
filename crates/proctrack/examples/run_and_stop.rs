//! Runs a shell that leaves two escapees behind (one in a new session), waits for it, and
//! shows that teardown finds and stops both.
//!
//! `cargo run -p hyoka-proctrack --example run_and_stop`
#![allow(clippy::print_stdout, reason = "an example shows its result")]

use std::time::Duration;

use hyoka_proctrack::{AgentCommand, TeardownOptions, Tracker, TrackerOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reports = tempfile::tempdir()?;
    let tracker = Tracker::start(TrackerOptions::new("example-run", reports.path()))?;
    println!("layers: {:?}", tracker.layers());
    let command = AgentCommand::new(
        "sh",
        [
            "-c",
            "sleep 300 & setsid sleep 300 & sleep 0.2; echo agent done",
        ],
    );
    let mut agent = tracker.spawn("main", command).await?;
    agent.refresh()?;
    println!("agent exited: {:?}", agent.wait().await?);
    println!("tracked after exit: {}", agent.refresh()?.tracked);
    let report = agent
        .teardown(TeardownOptions::with_grace(Duration::from_secs(2)))
        .await?;
    for p in &report.processes {
        println!(
            "{:>7} {:<10} {:?} via {:?}",
            p.pid, p.comm, p.outcome, p.source
        );
    }
    println!(
        "seen {} killed {} survivors {}",
        report.processes_seen, report.processes_killed, report.survivors
    );
    tracker.close()?;
    Ok(())
}

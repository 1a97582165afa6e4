//! `hyoka ps`: the live runs (owner lock held), the runs being torn down, and the respawn
//! controllers that died while their tmux session runs on (orphaned, with the command that
//! stops it), what their evals and respawn sessions are doing, and their processes as they
//! are now.

use hyoka_eval::{LiveRun, live_runs, render_live_runs};

use crate::args::PsArgs;
use crate::exit::{ExitStatus, Fail};
use crate::out::outln;

pub(crate) async fn exec(args: &PsArgs) -> Result<ExitStatus, Fail> {
    let mut runs = live_runs(&args.reports)?;
    for orphan in hyoka_respawn::orphaned_sessions(&args.reports).await {
        runs.push(LiveRun::orphaned(orphan.run, orphan.stop));
    }
    if args.json {
        crate::out::json(&runs);
    } else {
        let text = render_live_runs(&runs, std::time::SystemTime::now());
        outln!("{}", text.trim_end());
    }
    Ok(ExitStatus::Success)
}

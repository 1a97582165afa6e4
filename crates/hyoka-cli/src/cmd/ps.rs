//! `hyoka ps`: the live runs (owner lock held) and the runs being torn down, what their evals
//! and respawn sessions are doing, and their processes as they are now.

use hyoka_eval::{live_runs, render_live_runs};

use crate::args::PsArgs;
use crate::exit::{ExitStatus, Fail};
use crate::out::outln;

pub(crate) fn exec(args: &PsArgs) -> Result<ExitStatus, Fail> {
    let runs = live_runs(&args.reports)?;
    if args.json {
        crate::out::json(&runs);
    } else {
        let text = render_live_runs(&runs, std::time::SystemTime::now());
        outln!("{}", text.trim_end());
    }
    Ok(ExitStatus::Success)
}

//! How the CLI runs `hyoka-eval`: agents start through this executable's subreaper shim, and
//! a run's error becomes the command's failure.

use hyoka_eval::EvalError;
use hyoka_proctrack::Launcher;

use crate::exit::Fail;

/// The subreaper shim every agent starts through: this executable's hidden `__shim`.
pub(crate) fn shim() -> Result<Launcher, Fail> {
    Ok(Launcher {
        program: std::env::current_exe()
            .map_err(|e| Fail::failure(format!("cannot find the hyoka executable: {e}")))?,
        args: vec!["__shim".into()],
    })
}

/// A run's error as the command's failure: bad input (a live or uncleaned run id) exits 2.
pub(crate) fn run_failure(err: EvalError) -> Fail {
    match err {
        err if err.is_bad_input() => Fail::usage(err.to_string()),
        EvalError::Tracker(err) => Fail::failure(format!("cannot start the run: {err}")),
        err => Fail::failure(err.to_string()),
    }
}

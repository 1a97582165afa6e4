//! How the CLI runs `hyoka-eval`: agents start through hyoka's subreaper shim, and a run's
//! error becomes the command's failure.

use std::path::Path;

use hyoka_eval::EvalError;
use hyoka_proctrack::{Launcher, ShimImage};

use crate::exit::Fail;

/// The subreaper shim every agent starts through: the `hyoka-shim` binary beside this
/// executable, which starts in a fraction of the time the whole CLI takes, or else this
/// executable's hidden `__shim`. A `hyoka-shim` is used only when it is a regular file of
/// this executable's owner that nobody else may write: a program planted beside hyoka (in a
/// directory others can write) is never run.
///
/// Outside a sandbox, agents start through the static build of the same shim embedded in
/// this executable (see `build.rs`), sealed in memory once per run: it starts in a tenth of
/// the CPU time.
pub(crate) fn shim() -> Result<Launcher, Fail> {
    let exe = std::env::current_exe()
        .map_err(|e| Fail::failure(format!("cannot find the hyoka executable: {e}")))?;
    let small = exe.with_file_name("hyoka-shim");
    let mut launcher = if trusted_beside(&exe, &small) {
        Launcher::new(small, Vec::new())
    } else {
        Launcher::new(exe, vec!["__shim".into()])
    };
    // Without it (not built, or a kernel that refuses an executable memfd) the file serves.
    launcher.image = embedded_shim().and_then(|program| ShimImage::new(program).ok());
    Ok(launcher)
}

/// The static shim `build.rs` embedded, if it built one.
fn embedded_shim() -> Option<&'static [u8]> {
    static IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hyoka-shim.image"));
    (!IMAGE.is_empty() && std::env::var_os("HYOKA_EMBED_SHIM").is_none_or(|v| v != "0"))
        .then_some(IMAGE)
}

/// Whether `program` is a regular, executable file with `exe`'s owner that neither its
/// group nor others may write (links are not followed).
fn trusted_beside(exe: &Path, program: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let (Ok(exe), Ok(program)) = (std::fs::metadata(exe), std::fs::symlink_metadata(program))
    else {
        return false;
    };
    program.file_type().is_file()
        && program.uid() == exe.uid()
        && program.mode() & 0o022 == 0
        && program.mode() & 0o100 != 0
}

/// A run's error as the command's failure: bad input (a live or uncleaned run id) exits 2.
pub(crate) fn run_failure(err: EvalError) -> Fail {
    match err {
        err if err.is_bad_input() => Fail::usage(err.to_string()),
        EvalError::Tracker(err) => Fail::failure(format!("cannot start the run: {err}")),
        err => Fail::failure(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    /// A `hyoka-shim` beside hyoka is run for every agent process: only one its owner put
    /// there, that nobody else may rewrite, is trusted.
    #[test]
    fn only_a_shim_nobody_else_may_write_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let (exe, shim) = (dir.path().join("hyoka"), dir.path().join("hyoka-shim"));
        std::fs::write(&exe, b"").unwrap();
        assert!(!trusted_beside(&exe, &shim), "absent");
        std::fs::write(&shim, b"").unwrap();
        for (mode, trusted) in [
            (0o755, true),
            (0o700, true),
            (0o775, false),
            (0o757, false),
            (0o644, false),
        ] {
            std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(trusted_beside(&exe, &shim), trusted, "mode {mode:o}");
        }
        // A link is not followed, even to a trusted program.
        std::fs::remove_file(&shim).unwrap();
        std::os::unix::fs::symlink("/bin/true", &shim).unwrap();
        assert!(!trusted_beside(&exe, &shim), "a link");
        // Another owner's program is not ours (as root: chown it to nobody).
        if rustix::process::geteuid().is_root() {
            std::fs::remove_file(&shim).unwrap();
            std::fs::write(&shim, b"").unwrap();
            std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::os::unix::fs::chown(&shim, Some(65534), None).unwrap();
            assert!(!trusted_beside(&exe, &shim), "another owner's");
        }
    }
}

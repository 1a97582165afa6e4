//! Everything hyoka prints on stdout goes through [`outln!`]: colour is kept only on a
//! terminal and dropped under `NO_COLOR` (through `anstream`), and a reader that went away
//! (`hyoka ps | head`) is not an error, so a broken pipe ends the process quietly with
//! success.

use std::io::Write;

/// Prints a line on stdout, like `println!`, but exits 0 if stdout is a closed pipe.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// When set, [`outln!`] prints nothing: a command that narrates as it goes (the demo) sets it
/// under `--json` and prints its JSON with [`json`].
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Silences (or restores) [`outln!`].
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
}

/// Prints `value` as pretty JSON on stdout, even when narration is silenced.
pub(crate) fn json(value: &impl serde::Serialize) {
    set_quiet(false);
    line(format_args!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    ));
}

/// Prints text a library rendered, line by line.
pub(crate) fn text(text: &str) {
    for line in text.lines() {
        outln!("{line}");
    }
}

#[doc(hidden)]
pub(crate) fn line(args: std::fmt::Arguments<'_>) {
    if QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let mut stdout = anstream::stdout().lock();
    if let Err(err) = stdout
        .write_fmt(args)
        .and_then(|()| stdout.write_all(b"\n"))
    {
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            // Records are written before anything is printed; nothing is lost.
            std::process::exit(0);
        }
        tracing::warn!(error = %err, "cannot write to stdout");
    }
}

/// Styles for human output (`anstream` strips them where colour is not wanted).
pub(crate) mod style {
    use anstyle::{AnsiColor, Style};

    /// Headings.
    pub(crate) const HEAD: Style = Style::new().bold();
    /// Success.
    pub(crate) const GOOD: Style = AnsiColor::Green.on_default().bold();
    /// Failure.
    pub(crate) const BAD: Style = AnsiColor::Red.on_default().bold();
    /// Secondary text (paths, details).
    pub(crate) const DIM: Style = Style::new().dimmed();
    /// Highlights (numbers that matter).
    pub(crate) const NOTE: Style = AnsiColor::Cyan.on_default();
}

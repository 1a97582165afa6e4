//! Everything hyoka prints on stdout goes through [`outln!`]: a reader that went away (`hyoka
//! ps | head`) is not an error, so a broken pipe ends the process quietly with success.

use std::io::Write;

/// Prints a line on stdout, like `println!`, but exits 0 if stdout is a closed pipe.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

#[doc(hidden)]
pub(crate) fn line(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
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

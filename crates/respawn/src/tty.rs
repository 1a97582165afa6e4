//! The process's own terminal: its size, and raw mode for as long as a guard lives. For a
//! program that mirrors a session to a person, or draws one.

use std::os::fd::AsFd;

use rustix::termios::{OptionalActions, Termios, isatty, tcgetattr, tcgetwinsize, tcsetattr};

use crate::terminal::Size;

/// The size of the terminal on stdout, if it is one.
pub fn terminal_size() -> Option<Size> {
    let size = tcgetwinsize(std::io::stdout().as_fd()).ok()?;
    (size.ws_row > 0 && size.ws_col > 0).then_some(Size {
        rows: size.ws_row,
        cols: size.ws_col,
    })
}

/// Puts stdin into raw mode while alive (a supervisor mirroring a session, or an agent's
/// TUI); restores the saved mode on drop, also when unwinding.
#[derive(Debug)]
pub struct RawMode(Option<Termios>);

impl RawMode {
    /// Raw mode when stdin is a terminal; otherwise a guard that does nothing.
    pub fn enter() -> Self {
        let stdin = std::io::stdin();
        if !isatty(stdin.as_fd()) {
            return Self(None);
        }
        let Ok(saved) = tcgetattr(stdin.as_fd()) else {
            return Self(None);
        };
        let mut raw = saved.clone();
        raw.make_raw();
        if tcsetattr(stdin.as_fd(), OptionalActions::Now, &raw).is_err() {
            return Self(None);
        }
        Self(Some(saved))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(saved) = &self.0 {
            let _ = tcsetattr(std::io::stdin().as_fd(), OptionalActions::Now, saved);
        }
    }
}

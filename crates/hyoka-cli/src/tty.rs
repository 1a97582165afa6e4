//! The user's terminal: raw mode, its size, and a reader of keystrokes that never blocks
//! shutdown.

use std::io::Read;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) use hyoka_respawn::terminal_size as size;
use hyoka_respawn::{RawMode, Size};
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::termios::isatty;
use tokio::sync::{mpsc, oneshot};

/// Ctrl-] detaches from a mirrored session (as in telnet): hyoka stops the session and
/// exits, since Ctrl-C belongs to the agent.
pub(crate) const DETACH_KEY: u8 = 0x1d;

/// `true` when both stdin and stdout are terminals.
pub(crate) fn interactive() -> bool {
    isatty(std::io::stdin().as_fd()) && isatty(std::io::stdout().as_fd())
}

/// A thread that forwards stdin to a channel. It polls with a short timeout so that it
/// notices [`KeyReader::stop`] at once (a blocking read would keep the process alive until
/// the next keystroke).
pub(crate) struct KeyReader {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl KeyReader {
    /// Starts the reader; keys go to the returned receiver, and the detach key completes
    /// the oneshot.
    pub(crate) fn start() -> (Self, mpsc::Receiver<Vec<u8>>, oneshot::Receiver<()>) {
        let (tx, rx) = mpsc::channel(64);
        let (detach_tx, detach_rx) = oneshot::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let stdin = std::io::stdin();
            let mut detach = Some(detach_tx);
            let mut buf = [0u8; 1024];
            let timeout = Timespec {
                tv_sec: 0,
                tv_nsec: 50_000_000,
            };
            while !flag.load(Ordering::Relaxed) {
                let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
                if poll(&mut fds, Some(&timeout)).is_err() {
                    return;
                }
                if fds[0].revents().is_empty() {
                    continue;
                }
                let n = match stdin.lock().read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let mut keys = buf[..n].to_vec();
                if let Some(at) = keys.iter().position(|&b| b == DETACH_KEY) {
                    keys.truncate(at);
                    if let Some(detach) = detach.take() {
                        let _ = detach.send(());
                    }
                }
                if !keys.is_empty() && tx.blocking_send(keys).is_err() {
                    return;
                }
            }
        });
        (
            Self {
                stop,
                thread: Some(thread),
            },
            rx,
            detach_rx,
        )
    }

    /// Stops the thread and waits for it (at most one poll period).
    pub(crate) fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The user's terminal while the session runs.
pub(crate) struct UserTerminal {
    raw: Option<RawMode>,
    keys: Option<KeyReader>,
    resize_task: Option<tokio::task::JoinHandle<()>>,
}

impl UserTerminal {
    /// Stops reading keys, restores the terminal, stops forwarding resizes.
    pub(crate) fn stop(self) {
        if let Some(keys) = self.keys {
            keys.stop();
        }
        drop(self.raw);
        if let Some(task) = self.resize_task {
            task.abort();
        }
    }
}

pub(crate) type UserInputs = (
    UserTerminal,
    Option<mpsc::Receiver<Vec<u8>>>,
    Option<oneshot::Receiver<()>>,
    Option<mpsc::Receiver<Size>>,
);

/// Raw mode, the key reader and resize forwarding, when mirroring to a terminal.
pub(crate) fn user_terminal(interactive: bool) -> UserInputs {
    if !interactive {
        let user = UserTerminal {
            raw: None,
            keys: None,
            resize_task: None,
        };
        return (user, None, None, None);
    }
    let raw = RawMode::enter();
    let (reader, keys, detach) = KeyReader::start();
    let (resize_tx, resize_rx) = mpsc::channel(4);
    let user = UserTerminal {
        raw: Some(raw),
        keys: Some(reader),
        resize_task: Some(tokio::spawn(forward_resizes(resize_tx))),
    };
    (user, Some(keys), Some(detach), Some(resize_rx))
}

async fn forward_resizes(tx: mpsc::Sender<Size>) {
    let Ok(mut winch) =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())
    else {
        return;
    };
    let mut last = size();
    while winch.recv().await.is_some() {
        let size = size();
        // Ink redraws everything on SIGWINCH: forward only real changes.
        if size != last
            && let Some(size) = size
            && tx.send(size).await.is_err()
        {
            return;
        }
        last = size;
    }
}

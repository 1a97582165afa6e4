//! The tmux backend: the agent runs in a tmux session on a private server, so it survives a
//! restart of hyoka, a human can attach to it, and hyoka can re-attach to it later.
//!
//! - One private server per session (`tmux -L <socket>`): killing it never touches the
//!   user's own tmux.
//! - Every command is an argv vector, never a shell string.
//! - Output arrives through a control-mode client (`tmux -C attach-session`) as
//!   `%output` notifications, decoded from tmux's octal escapes.
//! - Keys go through `send-keys -l` (literal text), then a separate `send-keys Enter`.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::teardown::{kill_group_now, stop_group};
use super::{Exit, Signal, Size, SpawnOptions, Terminal};
use crate::error::RespawnError;

/// Where and what to run in tmux.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmuxOptions {
    /// The private server's socket name (`tmux -L`).
    pub socket: String,
    /// The session name.
    pub session: String,
    /// What to run (ignored when attaching to an existing session).
    pub spawn: SpawnOptions,
}

impl TmuxOptions {
    /// The socket name hyoka uses for a session: `hyoka-<session>`.
    pub fn default_socket(session: &str) -> String {
        format!("hyoka-{session}")
    }
}

/// The pane runs the agent under this wrapper, which reports the agent's exit status in
/// band (tmux tells a control client only that the session ended, not how): after the
/// agent, it prints the private OSC `ESC ] hyoka-exit ; STATUS BEL`, which the terminal
/// takes out of the output, and keeps the pane open until the terminal acknowledges it on
/// the tmux channel `hyoka-exit-<pane>` (at most 5 s, for a session nobody is attached
/// to): tmux drops the last output of a pane whose program has exited. `trap : INT` keeps
/// the wrapper waiting through a Ctrl-C meant for the agent (a caught signal is reset to
/// its default in the agent at exec).
const EXIT_WRAPPER: &str = r#"trap : INT; "$@"; s=$?; printf '\033]hyoka-exit;%s\007' "$s"; timeout 5 tmux wait-for "hyoka-exit-$TMUX_PANE" 2>/dev/null; exit "$s""#;

/// The start of the wrapper's report, as decoded output.
const EXIT_MARK: &[u8] = b"\x1b]hyoka-exit;";

/// The agent's exit from the wrapper's status (`128 + N` is signal `N`, as in `sh`).
fn exit_from_status(status: &[u8]) -> Option<Exit> {
    let status: i32 = std::str::from_utf8(status).ok()?.parse().ok()?;
    Some(match status {
        129..=192 => Exit {
            code: None,
            signal: Some(status - 128),
        },
        code => Exit {
            code: Some(code),
            signal: None,
        },
    })
}

/// Takes the wrapper's exit report out of `out[from..]`, if it is there whole.
pub(crate) fn take_exit_report(out: &mut VecDeque<u8>, from: usize) -> Option<Exit> {
    let tail = &out.make_contiguous()[from..];
    let at = memchr::memmem::find(tail, EXIT_MARK)?;
    let status_at = at + EXIT_MARK.len();
    let len = memchr::memchr(0x07, &tail[status_at..])?;
    let exit = exit_from_status(&tail[status_at..status_at + len]);
    let (start, end) = (from + at, from + status_at + len + 1);
    out.drain(start..end);
    exit
}

/// An agent in a tmux session on a private server.
pub struct TmuxTerminal {
    socket: String,
    session: String,
    pane: String,
    pid: Option<u32>,
    socket_path: Option<std::path::PathBuf>,
    env: Vec<(OsString, OsString)>,
    client: Option<Child>,
    stdout: Option<ChildStdout>,
    // Kept open: a control client exits when its stdin closes.
    stdin: Option<ChildStdin>,
    scratch: Box<[u8]>,
    line: Vec<u8>,
    pending: VecDeque<u8>,
    closed: bool,
    /// The agent's exit, as the pane's wrapper reported it.
    exit: Option<Exit>,
    /// The wrapper waits for its report to be acknowledged.
    exit_unacknowledged: bool,
    stopped: bool,
}

impl std::fmt::Debug for TmuxTerminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TmuxTerminal")
            .field("socket", &self.socket)
            .field("session", &self.session)
            .field("pane", &self.pane)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

/// Whether tmux reads `name` as the session (or socket) name it is: 1 to 64 of
/// `[A-Za-z0-9_-]` (tmux takes `.` and `:` as separators).
pub fn valid_tmux_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Runs `tmux -L <socket> -f /dev/null <args>` and returns its stdout.
async fn tmux<I, S>(
    socket: &str,
    env: &[(OsString, OsString)],
    args: I,
) -> Result<String, RespawnError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let output = Command::new("tmux")
        .arg("-L")
        .arg(socket)
        .arg("-f")
        .arg("/dev/null")
        .args(&args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env_remove("TMUX")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                RespawnError::TmuxMissing
            } else {
                RespawnError::Spawn {
                    program: "tmux".to_owned(),
                    source,
                }
            }
        })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(RespawnError::Tmux {
            args: args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            code: output.status.code(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

/// Decodes one `%output` payload: tmux escapes bytes below 32 and the backslash as `\ooo`.
pub(crate) fn decode_output(data: &[u8], out: &mut VecDeque<u8>) {
    let mut i = 0;
    while i < data.len() {
        if data[i] == b'\\'
            && i + 4 <= data.len()
            && data[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b))
        {
            let value = data[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            out.push_back(u8::try_from(value & 0xff).unwrap_or(0));
            i += 4;
        } else {
            out.push_back(data[i]);
            i += 1;
        }
    }
}

impl TmuxTerminal {
    /// The installed tmux's version (`tmux -V`, for example `tmux 3.4`), or `None` when
    /// tmux is not on the `PATH`.
    pub async fn version() -> Option<String> {
        let output = Command::new("tmux")
            .arg("-V")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .await
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// `true` when `session` exists on the private server `socket`.
    ///
    /// # Errors
    /// [`RespawnError::TmuxMissing`] when tmux is not installed.
    pub async fn exists(socket: &str, session: &str) -> Result<bool, RespawnError> {
        if !valid_tmux_name(session) {
            return Err(RespawnError::SessionName {
                name: session.to_owned(),
            });
        }
        match tmux(socket, &[], ["has-session", "-t", session]).await {
            Ok(_) => Ok(true),
            Err(RespawnError::Tmux { .. }) => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Starts a new private server with one session running `options.spawn` (under
    /// `/bin/sh`, which reports its exit status), and attaches to it. A program that exits
    /// at once gives a terminal whose first read reports the end of the session, with an
    /// unknown exit.
    ///
    /// # Errors
    /// A bad session name, tmux missing, or tmux refusing the session (for example because
    /// one of that name exists).
    pub async fn start(options: &TmuxOptions) -> Result<Self, RespawnError> {
        if !valid_tmux_name(&options.session) || !valid_tmux_name(&options.socket) {
            return Err(RespawnError::SessionName {
                name: options.session.clone(),
            });
        }
        let spawn = &options.spawn;
        let mut args: Vec<OsString> = vec![
            "new-session".into(),
            "-d".into(),
            "-s".into(),
            options.session.clone().into(),
            "-x".into(),
            spawn.size.cols.to_string().into(),
            "-y".into(),
            spawn.size.rows.to_string().into(),
        ];
        if let Some(cwd) = &spawn.cwd {
            args.push("-c".into());
            args.push(cwd.clone().into_os_string());
        }
        for (key, value) in &spawn.env {
            let mut pair = key.clone();
            pair.push("=");
            pair.push(value);
            args.push("-e".into());
            args.push(pair);
        }
        args.push("--".into());
        args.extend(["/bin/sh".into(), "-c".into(), EXIT_WRAPPER.into()]);
        args.push("hyoka-agent".into());
        args.push(spawn.program.clone());
        args.extend(spawn.args.iter().cloned());
        // The server inherits this client's environment, so the run marker reaches it and
        // a leaked server is visible to the leak audit.
        tmux(&options.socket, &spawn.env, &args).await?;
        for option in [["status", "off"], ["remain-on-exit", "off"]] {
            let _ = tmux(
                &options.socket,
                &spawn.env,
                ["set-option", "-t", &options.session, option[0], option[1]],
            )
            .await;
        }
        // Seeded like a re-attached session: what the program drew before the control
        // client attached is not sent as output.
        Self::connect(&options.socket, &options.session, spawn.env.clone()).await
    }

    /// Attaches to an existing session (after a restart of hyoka); the current screen is
    /// delivered as the first output.
    ///
    /// # Errors
    /// [`RespawnError::NoSuchSession`] when it does not exist.
    pub async fn attach(socket: &str, session: &str) -> Result<Self, RespawnError> {
        if !Self::exists(socket, session).await? {
            return Err(RespawnError::NoSuchSession {
                session: session.to_owned(),
                socket: socket.to_owned(),
            });
        }
        Self::connect(socket, session, Vec::new()).await
    }

    async fn connect(
        socket: &str,
        session: &str,
        env: Vec<(OsString, OsString)>,
    ) -> Result<Self, RespawnError> {
        let mut terminal = Self {
            socket: socket.to_owned(),
            session: session.to_owned(),
            pane: String::new(),
            pid: None,
            socket_path: None,
            env,
            client: None,
            stdout: None,
            stdin: None,
            scratch: vec![0; 64 * 1024].into_boxed_slice(),
            line: Vec::new(),
            pending: VecDeque::new(),
            closed: false,
            exit: None,
            exit_unacknowledged: false,
            stopped: false,
        };
        let Ok(ids) = terminal
            .run([
                "display-message",
                "-p",
                "-t",
                session,
                "#{pane_id} #{pane_pid} #{socket_path}",
            ])
            .await
        else {
            // The program ended before we could look at it.
            terminal.closed = true;
            return Ok(terminal);
        };
        let mut ids = ids.split_whitespace();
        terminal.pane = ids.next().unwrap_or_default().to_owned();
        terminal.pid = ids.next().and_then(|p| p.parse().ok());
        terminal.socket_path = ids.next().map(std::path::PathBuf::from);
        // The current screen is the first output (a control client gets only what is drawn
        // after it attached); captured first, so later output always draws over it.
        let screen = terminal
            .run(["capture-pane", "-p", "-e", "-t", &terminal.pane.clone()])
            .await
            .unwrap_or_default();
        terminal.pending.extend(b"\x1b[H\x1b[2J");
        terminal
            .pending
            .extend(screen.trim_end_matches('\n').replace('\n', "\r\n").bytes());
        let mut client = Command::new("tmux")
            .arg("-L")
            .arg(socket)
            .args(["-C", "attach-session", "-t", session])
            .envs(terminal.env.iter().map(|(k, v)| (k, v)))
            .env_remove("TMUX")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| RespawnError::Spawn {
                program: "tmux".to_owned(),
                source,
            })?;
        terminal.stdout = client.stdout.take();
        terminal.stdin = client.stdin.take();
        terminal.client = Some(client);
        Ok(terminal)
    }

    /// The session name.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The private server's socket name.
    pub fn socket(&self) -> &str {
        &self.socket
    }

    async fn run<I, S>(&self, args: I) -> Result<String, RespawnError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        tmux(&self.socket, &self.env, args).await
    }

    fn target(&self) -> &str {
        if self.pane.is_empty() {
            &self.session
        } else {
            &self.pane
        }
    }

    /// Handles one control-mode line.
    fn line(&mut self, line: &[u8]) {
        if let Some(rest) = line.strip_prefix(b"%output ") {
            let Some(space) = rest.iter().position(|&b| b == b' ') else {
                return;
            };
            if &rest[..space] == self.pane.as_bytes() {
                let data = &rest[space + 1..];
                let from = self.pending.len();
                decode_output(data, &mut self.pending);
                if memchr::memmem::find(data, b"]hyoka-exit;").is_some()
                    && let Some(exit) = take_exit_report(&mut self.pending, from)
                {
                    self.exit = Some(exit);
                    self.exit_unacknowledged = true;
                }
            }
        } else if line.starts_with(b"%exit") {
            self.closed = true;
        }
    }

    /// Lets go of the session without stopping it: the control client goes, the agent and
    /// its tmux server stay, to be re-attached with [`TmuxTerminal::attach`].
    pub async fn detach(mut self) {
        self.stopped = true;
        self.stdin = None;
        if let Some(mut client) = self.client.take() {
            let _ = client.kill().await;
        }
    }

    async fn keys(&mut self, args: &[&str]) -> Result<(), RespawnError> {
        if self.closed {
            return Err(RespawnError::Closed);
        }
        let target = self.target().to_owned();
        let mut command = vec!["send-keys", "-t", &target];
        command.extend_from_slice(args);
        self.run(command).await.map(|_| ())
    }
}

#[async_trait]
impl Terminal for TmuxTerminal {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, RespawnError> {
        loop {
            if !self.pending.is_empty() {
                let n = buf.len().min(self.pending.len());
                for (slot, byte) in buf.iter_mut().zip(self.pending.drain(..n)) {
                    *slot = byte;
                }
                return Ok(n);
            }
            if self.closed {
                return Ok(0);
            }
            let Some(stdout) = self.stdout.as_mut() else {
                self.closed = true;
                continue;
            };
            let n = stdout
                .read(&mut self.scratch)
                .await
                .map_err(|source| RespawnError::Io { op: "read", source })?;
            if n == 0 {
                // The control client ended: the session or the whole server is gone.
                self.closed = true;
                continue;
            }
            let mut start = 0;
            let chunk = self.scratch[..n].to_vec();
            for (i, &b) in chunk.iter().enumerate() {
                if b == b'\n' {
                    let mut line = std::mem::take(&mut self.line);
                    line.extend_from_slice(&chunk[start..i]);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    self.line(&line);
                    start = i + 1;
                }
            }
            self.line.extend_from_slice(&chunk[start..]);
            if std::mem::take(&mut self.exit_unacknowledged) {
                let channel = format!("hyoka-exit-{}", self.pane);
                let _ = self.run(["wait-for", "-S", &channel]).await;
            }
        }
    }

    async fn send_text(&mut self, text: &str) -> Result<(), RespawnError> {
        if text.is_empty() {
            return Ok(());
        }
        self.keys(&["-l", "--", text]).await
    }

    async fn send_enter(&mut self) -> Result<(), RespawnError> {
        self.keys(&["Enter"]).await
    }

    async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), RespawnError> {
        // Printable text goes literally; control bytes as hex keys.
        let mut rest = bytes;
        while !rest.is_empty() {
            let control = |b: &u8| *b < 0x20 || *b == 0x7f;
            let split = rest
                .iter()
                .position(|b| control(b) != control(&rest[0]))
                .unwrap_or(rest.len());
            let (run, tail) = rest.split_at(split);
            if control(&run[0]) {
                let hex: Vec<String> = run.iter().map(|b| format!("{b:02x}")).collect();
                let mut args = vec!["-H"];
                args.extend(hex.iter().map(String::as_str));
                self.keys(&args).await?;
            } else {
                let text = String::from_utf8_lossy(run).into_owned();
                self.keys(&["-l", "--", &text]).await?;
            }
            rest = tail;
        }
        Ok(())
    }

    async fn resize(&mut self, size: Size) -> Result<(), RespawnError> {
        let session = self.session.clone();
        self.run([
            "resize-window",
            "-t",
            &session,
            "-x",
            &size.cols.to_string(),
            "-y",
            &size.rows.to_string(),
        ])
        .await
        .map(|_| ())
    }

    fn child_pid(&self) -> Option<u32> {
        self.pid
    }

    fn exit(&mut self) -> Option<Exit> {
        // Unknown (the default) when the wrapper could not report: a session started by
        // something else, or a pane killed from outside.
        self.closed.then(|| self.exit.unwrap_or_default())
    }

    async fn stop_with_signal(
        &mut self,
        signal: Signal,
        grace: Duration,
    ) -> Result<Exit, RespawnError> {
        if !self.stopped {
            if let Some(pid) = self.pid {
                stop_group(pid, signal, grace).await;
            }
            // The private server holds only this session; tmux leaves its socket file.
            let _ = self.run(["kill-server"]).await;
            if let Some(path) = &self.socket_path {
                let _ = std::fs::remove_file(path);
            }
            self.stopped = true;
        }
        self.stdin = None;
        if let Some(mut client) = self.client.take()
            && tokio::time::timeout(Duration::from_secs(2), client.wait())
                .await
                .is_err()
        {
            let _ = client.kill().await;
        }
        self.closed = true;
        Ok(self.exit.unwrap_or_default())
    }
}

impl Drop for TmuxTerminal {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        if let Some(pid) = self.pid {
            kill_group_now(pid);
        }
        // The last resort on an unclean exit: the private server must not outlive us.
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests;

//! The tmux backend: the agent runs in a tmux session on a private server, so it survives a
//! restart of hyoka, a human can attach to it, and hyoka can re-attach to it later.
//!
//! - One private server per session (`tmux -L <socket>`): killing it never touches the
//!   user's own tmux.
//! - Every command is an argv vector, never a shell string.
//! - Output arrives through a control-mode client (`tmux -C attach-session`) as
//!   `%output` notifications, decoded from tmux's octal escapes.
//! - Text goes in as a paste (`paste-buffer -p`: bracketed when the agent turned bracketed
//!   paste on), then a separate `send-keys Enter`; the user's own keys through `send-keys`.
//! - The pane's wrapper waits until the control client is attached before it starts the
//!   agent, and says in band whether the agent could start and how it exited, so a program
//!   that is missing or exits at once is reported exactly as on a PTY.
//! - The server's process is known (pid and start time), so stopping it never depends on
//!   its socket answering: it is killed by identity if `kill-server` does not end it, and
//!   its socket file is removed only once it is gone.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use hyoka_proctrack::{NativeProcTable, NativeSignaller, ProcRef, ProcTable, Signal, Signaller};

use super::seam::{Exit, ReadEvent, Size, SpawnOptions, Terminal};
use super::teardown::{kill_group_now, stop_group};
use crate::error::RespawnError;

mod resync;

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

/// The pane runs the agent under this wrapper. It waits (at most 10 s) for the controller's
/// control client to attach (tmux channel `hyoka-start-<pane>`), so no output and no exit
/// is missed; checks that the program can be started, and says so in band with the private
/// OSC `ESC ] hyoka-started BEL`, or `ESC ] hyoka-exit ; cannot-start-ERRNO BEL` when it
/// cannot (2: not found, 13: not an executable file); runs it; then reports its exit status
/// as `ESC ] hyoka-exit ; STATUS BEL` and keeps the pane open until the terminal
/// acknowledges that on the channel `hyoka-exit-<pane>` (at most 5 s, for a session nobody
/// is attached to): tmux drops the last output of a pane whose program has exited. The
/// terminal takes these sequences out of the output. `trap : INT` keeps the wrapper waiting
/// through a Ctrl-C meant for the agent (a caught signal is reset to its default in the
/// agent at exec).
const EXIT_WRAPPER: &str = r#"trap : INT
timeout 10 tmux wait-for "hyoka-start-$TMUX_PANE" 2>/dev/null
e=
case $1 in
*/*) if [ ! -e "$1" ]; then e=2; elif [ ! -f "$1" ] || [ ! -x "$1" ]; then e=13; fi ;;
*) command -v "$1" >/dev/null 2>&1 || e=2 ;;
esac
if [ -n "$e" ]; then
  printf ']hyoka-exit;cannot-start-%s' "$e"
  timeout 5 tmux wait-for "hyoka-exit-$TMUX_PANE" 2>/dev/null
  exit 127
fi
printf ']hyoka-started'
"$@"; s=$?
printf ']hyoka-exit;%s' "$s"
timeout 5 tmux wait-for "hyoka-exit-$TMUX_PANE" 2>/dev/null
exit "$s""#;

/// The start of the wrapper's exit report, as decoded output.
const EXIT_MARK: &[u8] = b"\x1b]hyoka-exit;";

/// The wrapper's word that the program starts now.
const STARTED_MARK: &[u8] = b"\x1b]hyoka-started\x07";

/// How long a fresh session may take to start its program.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// How long one tmux command may take.
const TMUX_TIMEOUT: Duration = Duration::from_secs(10);

/// What the wrapper reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Report {
    /// The agent ended so.
    Exited(Exit),
    /// The program could not be started (an errno: 2 not found, 13 not executable).
    CannotStart(i32),
}

/// The agent's exit from the wrapper's status (`128 + N` is signal `N`, as in `sh`).
fn report_from_status(status: &[u8]) -> Option<Report> {
    let text = std::str::from_utf8(status).ok()?;
    if let Some(errno) = text.strip_prefix("cannot-start-") {
        return Some(Report::CannotStart(errno.parse().ok()?));
    }
    let status: i32 = text.parse().ok()?;
    Some(Report::Exited(match status {
        129..=192 => Exit {
            code: None,
            signal: Some(status - 128),
        },
        code => Exit {
            code: Some(code),
            signal: None,
        },
    }))
}

/// Takes the wrapper's exit report out of `out[from..]`, if it is there whole.
pub(crate) fn take_exit_report(out: &mut VecDeque<u8>, from: usize) -> Option<Report> {
    let tail = &out.make_contiguous()[from..];
    let at = memchr::memmem::find(tail, EXIT_MARK)?;
    let status_at = at + EXIT_MARK.len();
    let len = memchr::memchr(0x07, &tail[status_at..])?;
    let report = report_from_status(&tail[status_at..status_at + len]);
    let (start, end) = (from + at, from + status_at + len + 1);
    out.drain(start..end);
    report
}

/// Takes the wrapper's "started" word out of `out[from..]`; `true` if it was there.
fn take_started(out: &mut VecDeque<u8>, from: usize) -> bool {
    let tail = &out.make_contiguous()[from..];
    let Some(at) = memchr::memmem::find(tail, STARTED_MARK) else {
        return false;
    };
    out.drain(from + at..from + at + STARTED_MARK.len());
    true
}

/// What the reply to an in-band command is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    /// Nothing to read in it.
    Ignore,
    /// The pane's screen and cursor ([`resync::resync_command`]).
    Resync,
}

/// A control-mode reply block being read.
#[derive(Debug)]
struct Block {
    /// `<time> <number>` of its `%begin`, which its `%end` repeats.
    id: Vec<u8>,
    reply: Reply,
    lines: Vec<Vec<u8>>,
}

/// At most this many lines of a reply block are kept (a pane is at most this tall here).
const MAX_BLOCK_LINES: usize = 1024;

/// An agent in a tmux session on a private server.
pub struct TmuxTerminal {
    socket: String,
    session: String,
    pane: String,
    pid: Option<u32>,
    /// The private server's process (pid and start time).
    server: Option<ProcRef>,
    socket_path: Option<std::path::PathBuf>,
    env: Vec<(OsString, OsString)>,
    client: Option<Child>,
    stdout: Option<ChildStdout>,
    // Kept open: a control client exits when its stdin closes.
    stdin: Option<ChildStdin>,
    scratch: Box<[u8]>,
    line: Vec<u8>,
    pending: VecDeque<u8>,
    /// Bytes of output handed out so far (positions in the output stream).
    read_pos: u64,
    /// Size changes, at the stream position from which output is drawn at that size.
    marks: VecDeque<(u64, Size)>,
    /// The pane's size as last reported (by a layout change or a resync).
    size: Option<Size>,
    /// The size the control client declares (`refresh-client -C`), so the window returns
    /// to it when other clients leave.
    client_size: Option<Size>,
    /// Commands to send through the control client (in band).
    outbox: Vec<u8>,
    /// What each of our in-band commands' replies is, in the order they were sent.
    replies: VecDeque<Reply>,
    /// The reply block being read: its `%begin` time and number, and its lines.
    block: Option<Block>,
    closed: bool,
    /// The control client is attached (tmux said `%session-changed`).
    attached: bool,
    /// The agent's exit, as the pane's wrapper reported it.
    exit: Option<Exit>,
    /// The program could not be started (the wrapper's errno).
    cannot_start: Option<i32>,
    /// The wrapper said the program starts.
    started: bool,
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
        .output();
    let output = tokio::time::timeout(TMUX_TIMEOUT, output)
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
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
            // Only a definite "no": a server that exists but does not answer is an error, or
            // a new session would start a second server over its socket (tmux unlinks a
            // socket that refuses connections) and leave the first one unreachable.
            Err(RespawnError::Tmux { stderr, .. })
                if stderr.contains("no server running")
                    || stderr.contains("can't find session")
                    || stderr.contains("No such file or directory") =>
            {
                Ok(false)
            }
            Err(err) => Err(err),
        }
    }

    /// Starts a new private server with one session running `options.spawn` (under
    /// `/bin/sh`, which reports whether it could start it and its exit status), attaches to
    /// it, and only then lets the program start. A program that exits at once gives a
    /// terminal whose reads end with the session, and its exit is known.
    ///
    /// # Errors
    /// A bad session name, tmux missing, or tmux refusing the session (for example because
    /// one of that name exists); [`RespawnError::Spawn`] when the program cannot be started
    /// (not found, not executable), as on a PTY, with nothing left behind.
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
        let mut terminal = Self::connect(
            &options.socket,
            &options.session,
            spawn.env.clone(),
            Some(spawn.size),
        )
        .await?;
        match terminal.handshake().await {
            Ok(()) => Ok(terminal),
            Err(err) => {
                let _ = terminal
                    .stop_with_signal(Signal::Kill, Duration::ZERO)
                    .await;
                Err(match err {
                    RespawnError::Closed => match terminal.cannot_start {
                        Some(errno) => RespawnError::Spawn {
                            program: spawn.program.to_string_lossy().into_owned(),
                            source: std::io::Error::from_raw_os_error(errno),
                        },
                        None => RespawnError::Closed,
                    },
                    err => err,
                })
            }
        }
    }

    /// For a fresh session: waits until the control client is attached, lets the wrapper
    /// start the program, and reads until it says whether the program started.
    async fn handshake(&mut self) -> Result<(), RespawnError> {
        let wait = async {
            while !self.attached {
                self.read_client().await?;
            }
            let channel = format!("hyoka-start-{}", self.pane);
            self.run(["wait-for", "-S", &channel]).await?;
            while !self.started && self.cannot_start.is_none() && !self.closed {
                self.read_client().await?;
            }
            Ok::<(), RespawnError>(())
        };
        tokio::time::timeout(START_TIMEOUT, wait)
            .await
            .map_err(|_| RespawnError::Io {
                op: "start",
                source: std::io::ErrorKind::TimedOut.into(),
            })??;
        if self.started {
            Ok(())
        } else {
            Err(RespawnError::Closed)
        }
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
        Self::connect(socket, session, Vec::new(), None).await
    }

    async fn connect(
        socket: &str,
        session: &str,
        env: Vec<(OsString, OsString)>,
        size: Option<Size>,
    ) -> Result<Self, RespawnError> {
        let mut terminal = Self {
            socket: socket.to_owned(),
            session: session.to_owned(),
            pane: String::new(),
            pid: None,
            server: None,
            socket_path: None,
            env,
            client: None,
            stdout: None,
            stdin: None,
            scratch: vec![0; 64 * 1024].into_boxed_slice(),
            line: Vec::new(),
            pending: VecDeque::new(),
            read_pos: 0,
            marks: VecDeque::new(),
            size: None,
            client_size: size,
            outbox: Vec::new(),
            replies: VecDeque::new(),
            block: None,
            closed: false,
            exit: None,
            cannot_start: None,
            started: false,
            attached: false,
            exit_unacknowledged: false,
            stopped: false,
        };
        let Ok(ids) = terminal
            .run([
                "display-message",
                "-p",
                "-t",
                session,
                "#{pane_id} #{pane_pid} #{pid} #{pane_width} #{pane_height} #{socket_path}",
            ])
            .await
        else {
            // The program ended before we could look at it.
            terminal.closed = true;
            return Ok(terminal);
        };
        let mut ids = ids.trim_end().splitn(6, ' ');
        ids.next()
            .unwrap_or_default()
            .clone_into(&mut terminal.pane);
        terminal.pid = ids.next().and_then(|p| p.parse().ok());
        terminal.server = ids
            .next()
            .and_then(|p| p.parse().ok())
            .and_then(|pid| NativeProcTable::new().process(pid))
            .map(|info| info.proc_ref());
        let cols = ids.next().and_then(|p| p.parse().ok());
        let rows = ids.next().and_then(|p| p.parse().ok());
        terminal.socket_path = ids.next().map(std::path::PathBuf::from);
        // Re-attaching, the pane keeps its size: the control client declares that one.
        if let (Some(cols), Some(rows)) = (cols, rows) {
            terminal.client_size.get_or_insert(Size { rows, cols });
        }
        // The control client declares its size (so the window comes back to it when other
        // clients leave), then the pane's current screen is its first output: asked for in
        // band, so that it is ordered exactly with the output around it (a control client
        // gets only what is drawn after it attached).
        if let Some(size) = terminal.client_size {
            terminal.queue_command(&format!("refresh-client -C {}x{}\n", size.cols, size.rows));
        }
        terminal.request_resync();
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

    /// Queues a command for the control client (sent before its next read).
    fn queue_command(&mut self, command: &str) {
        self.outbox.extend_from_slice(command.as_bytes());
        self.replies.push_back(Reply::Ignore);
    }

    /// Asks, in band, for the pane's screen and cursor: the reply replaces the model's
    /// screen at exactly its place in the output.
    fn request_resync(&mut self) {
        if self.pane.is_empty() {
            return;
        }
        self.outbox
            .extend_from_slice(resync::resync_command(&self.pane).as_bytes());
        self.replies.push_back(Reply::Resync);
    }

    /// The pane is now `size`, from the next byte of output on.
    fn note_size(&mut self, size: Size) {
        if self.size == Some(size) {
            return;
        }
        self.size = Some(size);
        let at = self.read_pos + self.pending.len() as u64;
        if let Some(last) = self.marks.back_mut()
            && last.0 == at
        {
            last.1 = size;
        } else {
            self.marks.push_back((at, size));
        }
    }

    /// A reply block ended: a resync's rows replace the screen.
    fn block_done(&mut self, block: &Block, ok: bool) {
        if block.reply != Reply::Resync || !ok {
            return;
        }
        let Some((last, rows)) = block.lines.split_last() else {
            return;
        };
        let Some((x, y, size)) = resync::parse_cursor(last) else {
            return;
        };
        self.note_size(size);
        let redraw = resync::redraw(rows, x, y, size);
        self.pending.extend(redraw);
    }

    /// Handles one line of a reply block; `true` if it was one.
    fn block_line(&mut self, line: &[u8]) -> bool {
        let Some(block) = self.block.as_mut() else {
            return false;
        };
        for (end, ok) in [(&b"%end "[..], true), (&b"%error "[..], false)] {
            if let Some(rest) = line.strip_prefix(end)
                && rest.starts_with(&block.id)
            {
                if let Some(block) = self.block.take() {
                    self.block_done(&block, ok);
                }
                return true;
            }
        }
        if block.lines.len() < MAX_BLOCK_LINES {
            block.lines.push(line.to_vec());
        }
        true
    }

    /// Handles one control-mode line.
    fn line(&mut self, line: &[u8]) {
        if self.block_line(line) {
            return;
        }
        if let Some(rest) = line.strip_prefix(b"%begin ") {
            // `%begin <time> <number> <flags>`: flag 1 marks a command of this client.
            let mut fields = rest.splitn(3, |&b| b == b' ');
            let (time, number, flags) = (fields.next(), fields.next(), fields.next());
            let ours = flags
                .and_then(|f| std::str::from_utf8(f).ok())
                .and_then(|f| f.trim().parse::<u32>().ok())
                .is_some_and(|f| f & 1 == 1);
            let reply = if ours {
                self.replies.pop_front().unwrap_or(Reply::Ignore)
            } else {
                Reply::Ignore
            };
            let mut id = time.unwrap_or_default().to_vec();
            id.push(b' ');
            id.extend_from_slice(number.unwrap_or_default());
            id.push(b' ');
            self.block = Some(Block {
                id,
                reply,
                lines: Vec::new(),
            });
            return;
        }
        if let Some(rest) = line.strip_prefix(b"%layout-change ") {
            // `%layout-change @window layout visible-layout flags`.
            let layout = rest.split(|&b| b == b' ').nth(1).unwrap_or_default();
            if let Some(size) = std::str::from_utf8(layout)
                .ok()
                .and_then(|l| resync::pane_size_in_layout(l, &self.pane))
                && self.size != Some(size)
            {
                self.note_size(size);
                // What tmux rewrapped or cut is what the pane shows until the agent redraws.
                self.request_resync();
            }
            return;
        }
        if let Some(rest) = line.strip_prefix(b"%output ") {
            let Some(space) = rest.iter().position(|&b| b == b' ') else {
                return;
            };
            if &rest[..space] == self.pane.as_bytes() {
                let data = &rest[space + 1..];
                // A report may straddle two notifications: look from a little before.
                let from = self.pending.len().saturating_sub(EXIT_MARK.len() + 24);
                decode_output(data, &mut self.pending);
                if memchr::memmem::find(data, b"hyoka-").is_some() {
                    let before = self.pending.len();
                    if take_started(&mut self.pending, from) {
                        self.started = true;
                    }
                    match take_exit_report(&mut self.pending, from) {
                        Some(Report::Exited(exit)) => {
                            self.exit = Some(exit);
                            self.exit_unacknowledged = true;
                        }
                        Some(Report::CannotStart(errno)) => {
                            self.cannot_start = Some(errno);
                            self.exit_unacknowledged = true;
                        }
                        None => {}
                    }
                    // A size change noted after the bytes taken out moves up with them.
                    let removed = (before - self.pending.len()) as u64;
                    let floor = self.read_pos + from as u64;
                    for mark in &mut self.marks {
                        if mark.0 > floor {
                            mark.0 = mark.0.saturating_sub(removed).max(floor);
                        }
                    }
                }
            }
        } else if line.starts_with(b"%client-detached") {
            // Another client left: our size again, should the window have kept theirs.
            if let Some(size) = self.client_size {
                self.queue_command(&format!("refresh-client -C {}x{}\n", size.cols, size.rows));
            }
        } else if line.starts_with(b"%session-changed") {
            self.attached = true;
        } else if line.starts_with(b"%exit") {
            self.closed = true;
        }
    }

    /// Reads one piece of the control client's output and handles the lines it completes.
    /// Cancel-safe: bytes read are kept until their line is whole.
    async fn read_client(&mut self) -> Result<(), RespawnError> {
        // In-band commands first. Each write either writes or does not, so a cancelled read
        // loses nothing.
        while !self.outbox.is_empty() {
            let Some(stdin) = self.stdin.as_mut() else {
                self.outbox.clear();
                break;
            };
            match stdin.write(&self.outbox).await {
                Ok(0) | Err(_) => {
                    self.outbox.clear();
                    break;
                }
                Ok(n) => {
                    self.outbox.drain(..n);
                }
            }
        }
        let Some(stdout) = self.stdout.as_mut() else {
            self.closed = true;
            return Ok(());
        };
        let n = stdout
            .read(&mut self.scratch)
            .await
            .map_err(|source| RespawnError::Io { op: "read", source })?;
        if n == 0 {
            // The control client ended: the session or the whole server is gone.
            self.closed = true;
            return Ok(());
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
        Ok(())
    }

    /// How many clients other than `ours` (the controller's own control client) are
    /// attached to `session` on the private server `socket`: people looking at, or typing
    /// into, the session.
    ///
    /// # Errors
    /// When tmux cannot be asked (the server is gone).
    pub async fn others_attached(
        socket: &str,
        session: &str,
        ours: Option<u32>,
    ) -> Result<u32, RespawnError> {
        let clients = tmux(
            socket,
            &[],
            ["list-clients", "-t", session, "-F", "#{client_pid}"],
        )
        .await?;
        let others = clients
            .lines()
            .filter_map(|l| l.trim().parse::<u32>().ok())
            .filter(|&pid| Some(pid) != ours)
            .count();
        Ok(u32::try_from(others).unwrap_or(u32::MAX))
    }

    /// The process of `session`'s (first) pane on the private server `socket`, if the
    /// session exists and tmux answers.
    pub async fn pane_pid(socket: &str, session: &str) -> Option<u32> {
        if !valid_tmux_name(session) {
            return None;
        }
        let line = tmux(
            socket,
            &[],
            ["display-message", "-p", "-t", session, "#{pane_pid}"],
        )
        .await
        .ok()?;
        line.trim().parse().ok()
    }

    /// The value of `variable` in `session`'s environment, if set.
    pub async fn session_env(socket: &str, session: &str, variable: &str) -> Option<String> {
        let line = tmux(socket, &[], ["show-environment", "-t", session, variable])
            .await
            .ok()?;
        line.trim_end()
            .strip_prefix(variable)?
            .strip_prefix('=')
            .map(str::to_owned)
    }

    /// The controller's own control client's process id.
    pub fn client_pid(&self) -> Option<u32> {
        self.client.as_ref().and_then(Child::id)
    }

    /// Kills the private server: `kill-server`, then, if its process is still there, by
    /// its verified identity; its socket file is removed only once it is gone (a server
    /// left without its socket could never be reached again).
    async fn kill_server(&self) {
        let _ = self.run(["kill-server"]).await;
        let Some(server) = self.server else {
            return;
        };
        let gone = |server: ProcRef| {
            NativeProcTable::new()
                .process(server.pid)
                .is_none_or(|p| p.proc_ref() != server || p.is_gone())
        };
        for signal in [None, Some(Signal::Term), Some(Signal::Kill)] {
            if let Some(signal) = signal {
                let _ = NativeSignaller::new().signal(server, signal);
            }
            for _ in 0..100 {
                if gone(server) {
                    if let Some(path) = &self.socket_path {
                        let _ = std::fs::remove_file(path);
                    }
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        tracing::error!(
            pid = server.pid,
            "the session's tmux server survived SIGKILL"
        );
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
            if let ReadEvent::Output(n) = self.read_event(buf).await? {
                return Ok(n);
            }
        }
    }

    async fn read_event(&mut self, buf: &mut [u8]) -> Result<ReadEvent, RespawnError> {
        loop {
            if let Some(&(at, size)) = self.marks.front()
                && at <= self.read_pos
            {
                self.marks.pop_front();
                return Ok(ReadEvent::Resized(size));
            }
            if !self.pending.is_empty() {
                // Never past the next size change: the bytes after it were drawn at the
                // new size.
                let until_mark = self.marks.front().map_or(usize::MAX, |&(at, _)| {
                    usize::try_from(at - self.read_pos).unwrap_or(usize::MAX)
                });
                let n = buf.len().min(self.pending.len()).min(until_mark);
                for (slot, byte) in buf.iter_mut().zip(self.pending.drain(..n)) {
                    *slot = byte;
                }
                self.read_pos += n as u64;
                return Ok(ReadEvent::Output(n));
            }
            if self.closed {
                return Ok(ReadEvent::Output(0));
            }
            self.read_client().await?;
        }
    }

    async fn send_text(&mut self, text: &str) -> Result<(), RespawnError> {
        if text.is_empty() {
            return Ok(());
        }
        if self.closed {
            return Err(RespawnError::Closed);
        }
        // A paste, bracketed when the agent asked for bracketed paste (`-p`); the buffer
        // goes with it (`-d`).
        let buffer = format!("hyoka-{}", self.pane.trim_start_matches('%'));
        self.run(["set-buffer", "-b", &buffer, "--", text]).await?;
        let target = self.target().to_owned();
        self.run(["paste-buffer", "-p", "-d", "-b", &buffer, "-t", &target])
            .await
            .map(|_| ())
    }

    async fn send_enter(&mut self) -> Result<(), RespawnError> {
        self.keys(&["Enter"]).await
    }

    fn answers_queries(&self) -> bool {
        true
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
        // The control client's declared size too, or the window would go back to the old
        // one when another client leaves.
        self.client_size = Some(size);
        self.queue_command(&format!("refresh-client -C {}x{}\n", size.cols, size.rows));
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
            self.kill_server().await;
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

    async fn detach(&mut self) -> Result<bool, RespawnError> {
        if self.stopped || self.closed {
            return Ok(false);
        }
        self.stopped = true;
        self.stdin = None;
        if let Some(mut client) = self.client.take() {
            let _ = client.kill().await;
        }
        Ok(true)
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
        if let Some(server) = self.server
            && NativeProcTable::new()
                .process(server.pid)
                .is_some_and(|p| p.proc_ref() == server && !p.is_gone())
        {
            let _ = NativeSignaller::new().signal(server, Signal::Kill);
        }
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests;

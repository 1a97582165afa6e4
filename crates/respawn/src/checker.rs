//! The command-backed AI checker: `hyoka-idle-detect`'s [`IdleChecker`] and [`PlanChecker`]
//! answered by a command (for example `claude -p --model haiku --output-format text`) with
//! the prompt on its standard input, never in its arguments (a 16,000-character prompt would
//! hit `E2BIG`), in its own process group ([`GroupChild`]) that is killed as a whole on
//! timeout, on cancellation (the future is dropped) and after it exits. It lives here, not in
//! `hyoka-idle-detect`, so that crate stays free of a runtime.

use std::fmt;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use hyoka_idle_detect::{
    CheckError, CheckReply, IdleAnswer, IdleChecker, PlanAnswer, PlanChecker, idle_prompt,
    parse_idle_reply, parse_plan_reply, plan_prompt,
};
use hyoka_proctrack::{GroupChild, GroupExit};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Called with the process-group id of every checker process right after it starts, so the
/// caller can track it like any other process of the run (for example in the pid ledger).
pub type SpawnHook = Arc<dyn Fn(u32) + Send + Sync>;

/// How to run a checker command.
#[derive(Clone)]
pub struct CommandCheckerOptions {
    /// The program.
    pub program: String,
    /// Its arguments (the prompt is never among them).
    pub args: Vec<String>,
    /// Variables added to the inherited environment, for example the run's
    /// `HYOKA_RUN_ID`, so a sweep by marker finds whatever the checker leaves behind.
    pub env: Vec<(String, String)>,
    /// How long one check may take (Codeman: 90 s idle, 60 s plan).
    pub timeout: Duration,
    /// Output bytes kept from stdout and from stderr (64 KiB).
    pub max_output_bytes: usize,
    /// Called with each checker process's group id when it starts.
    pub on_spawn: Option<SpawnHook>,
}

impl fmt::Debug for CommandCheckerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandCheckerOptions")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &self.env)
            .field("timeout", &self.timeout)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("on_spawn", &self.on_spawn.is_some())
            .finish()
    }
}

impl CommandCheckerOptions {
    /// `program args…` with a 90 s timeout and 64 KiB of output kept.
    pub fn new(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            timeout: Duration::from_secs(90),
            max_output_bytes: 64 * 1024,
            on_spawn: None,
        }
    }
}

/// A command-backed [`IdleChecker`] and [`PlanChecker`].
#[derive(Debug, Clone)]
pub struct CommandChecker {
    options: CommandCheckerOptions,
}

impl CommandChecker {
    /// A checker that runs `options`.
    pub fn new(options: CommandCheckerOptions) -> Self {
        Self { options }
    }

    /// The options.
    pub fn options(&self) -> &CommandCheckerOptions {
        &self.options
    }

    /// Runs the command with `prompt` on stdin and returns its stdout.
    ///
    /// # Errors
    ///
    /// [`CheckError::Spawn`], [`CheckError::Io`], [`CheckError::Timeout`] (the group is
    /// killed), or [`CheckError::Failed`] for a non-zero exit.
    pub async fn run(&self, prompt: &str) -> Result<String, CheckError> {
        let o = &self.options;
        let mut command = tokio::process::Command::new(&o.program);
        command
            .args(&o.args)
            .envs(o.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Dropping the child (a timeout, an error, a cancelled check, or the end) kills
        // whatever is left of its group.
        let mut child = GroupChild::spawn(command).map_err(|source| CheckError::Spawn {
            program: o.program.clone(),
            source,
        })?;
        if let (Some(hook), Some(pgid)) = (&o.on_spawn, child.pgid()) {
            hook(pgid);
        }
        let io_error = |source| CheckError::Io {
            program: o.program.clone(),
            source,
        };
        let mut stdin = child.take_stdin();
        let mut stdout = child.take_stdout();
        let mut stderr = child.take_stderr();
        let limit = o.max_output_bytes;
        let exchange = async {
            let write = async {
                if let Some(mut pipe) = stdin.take() {
                    // A checker that exits without reading its input is not an error.
                    let _ = pipe.write_all(prompt.as_bytes()).await;
                    let _ = pipe.shutdown().await;
                }
                Ok::<(), std::io::Error>(())
            };
            let (w, out, err) = tokio::join!(
                write,
                read_bounded(stdout.as_mut(), limit),
                read_bounded(stderr.as_mut(), limit)
            );
            w?;
            Ok::<_, std::io::Error>((out?, err?))
        };
        let (out, err) = match tokio::time::timeout(o.timeout, exchange).await {
            Ok(result) => result.map_err(io_error)?,
            Err(_) => return Err(CheckError::Timeout { after: o.timeout }),
        };
        let status = match child.wait_within(o.timeout, std::future::pending()).await {
            GroupExit::Exited(status) => status,
            GroupExit::Failed(err) => return Err(io_error(err)),
            GroupExit::TimedOut | GroupExit::Cancelled => {
                return Err(CheckError::Timeout { after: o.timeout });
            }
        };
        if !status.success() {
            return Err(CheckError::Failed {
                program: o.program.clone(),
                code: status.code(),
                stderr: String::from_utf8_lossy(&err).chars().take(500).collect(),
            });
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// Reads a pipe to its end, keeping the first `limit` bytes (the rest is drained so the child
/// never blocks on a full pipe).
async fn read_bounded<R: tokio::io::AsyncRead + Unpin>(
    pipe: Option<&mut R>,
    limit: usize,
) -> std::io::Result<Vec<u8>> {
    let Some(pipe) = pipe else {
        return Ok(Vec::new());
    };
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        let n = pipe.read(&mut buf).await?;
        if n == 0 {
            return Ok(kept);
        }
        let room = limit.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
}

#[async_trait::async_trait]
impl IdleChecker for CommandChecker {
    async fn check_idle(&self, context: &str) -> Result<CheckReply<IdleAnswer>, CheckError> {
        let out = self.run(&idle_prompt(context)).await?;
        parse_idle_reply(&out)
    }
}

#[async_trait::async_trait]
impl PlanChecker for CommandChecker {
    async fn check_plan(&self, context: &str) -> Result<CheckReply<PlanAnswer>, CheckError> {
        let out = self.run(&plan_prompt(context)).await?;
        parse_plan_reply(&out)
    }
}

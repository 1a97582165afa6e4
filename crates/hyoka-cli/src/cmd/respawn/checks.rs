//! `--ai-check-command` and `--plan-check-command`: a shell command that reads Codeman's
//! conservative prompt (with the tail of the session's output) on stdin and answers with a
//! verdict on its first line.
//!
//! The prompt goes through stdin, never argv (no E2BIG, nothing in `ps`), and no temporary
//! file is written. The command runs in its own process group, which is killed when the
//! check is cancelled (its future dropped) or the machine's time limit runs out.

use std::ffi::OsString;
use std::process::Stdio;

use async_trait::async_trait;
use hyoka_respawn::{CheckOutcome, Checks, IdleVerdict, PlanVerdict};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most output read from a checker.
const MAX_OUTPUT: u64 = 64 * 1024;

const IDLE_PROMPT: &str = "You are analyzing the terminal output of an interactive AI coding \
agent (such as Claude Code). Decide whether the agent has FINISHED and waits for the user \
(IDLE) or is STILL WORKING (WORKING).\n\nCRITICAL RULE: when in doubt, answer WORKING.\n\n\
Answer IDLE only when at least two of these hold: a completion summary (\"✻ Worked for 2m 46s\" \
or similar), the input prompt ❯ at the very end, completion language (\"All done\").\n\
Answer WORKING if any of these hold: a spinner or activity word (Thinking…, Reading…), a tool \
still running, output that stops mid-sentence or ends in \"...\", planning phrases (\"Let me…\"), \
or a menu with numbered options waiting for approval.\n\nTerminal output:\n---\n";

const PLAN_PROMPT: &str = "You are analyzing the bottom of the terminal of an interactive AI \
coding agent. Decide whether it shows a PLAN APPROVAL menu: numbered options such as \
\"1. Yes, and auto-accept edits / 2. Yes, and manually approve edits / 3. No, keep planning\", \
a ❯ or > selector, and a question like \"Would you like to proceed?\".\nIt is NOT plan mode \
when: a spinner or working word shows, a finished answer without a menu, a permission prompt \
for a tool or command, a question to the user, or a pause mid-output.\n\nTerminal output:\n---\n";

const PROMPT_END: &str = "\n---\n\nAnswer with exactly one word on the first line";

/// Checks run by shell commands.
#[derive(Debug, Clone)]
pub(crate) struct CommandChecks {
    pub(crate) idle: Option<String>,
    pub(crate) plan: Option<String>,
    pub(crate) env: Vec<(OsString, OsString)>,
}

/// Builds a prompt by plain concatenation: the output is inserted literally (Codeman's
/// `String.replace` expanded `$&` in it, §5d 116).
pub(crate) fn prompt(head: &str, context: &str, answers: &str) -> String {
    let mut prompt = String::with_capacity(head.len() + context.len() + 128);
    prompt.push_str(head);
    prompt.push_str(context);
    prompt.push_str(PROMPT_END);
    prompt.push_str(": ");
    prompt.push_str(answers);
    prompt.push_str(".\n");
    prompt
}

/// The verdict from the first line of `output` (case-insensitive), and the reasoning
/// from the rest. Anything before the verdict (stderr noise, garbage) is an error.
pub(crate) fn parse<V: Copy>(output: &str, verdicts: &[(&str, V)]) -> CheckOutcome<V> {
    let trimmed = output.trim();
    if trimmed.is_empty() {
        return CheckOutcome::Failed {
            message: "empty output from the checker".to_owned(),
        };
    }
    let (first, rest) = trimmed.split_once('\n').unwrap_or((trimmed, ""));
    let word: String = first
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic() || *c == '_')
        .collect::<String>()
        .to_ascii_uppercase();
    for (name, verdict) in verdicts {
        if word == *name {
            let reasoning = rest.trim();
            return CheckOutcome::Verdict {
                verdict: *verdict,
                reasoning: if reasoning.is_empty() {
                    format!("AI determined: {name}")
                } else {
                    reasoning.to_owned()
                },
            };
        }
    }
    let shown: String = trimmed.chars().take(100).collect();
    CheckOutcome::Failed {
        message: format!("could not parse a verdict from: {shown:?}"),
    }
}

/// Kills the checker's process group when the check is dropped before it finished.
struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(rustix::process::Pid::from_raw)
            && pid.as_raw_nonzero().get() > 1
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// Runs `command` with `prompt` on stdin; its stdout, or why it failed.
pub(crate) async fn run(
    command: &str,
    prompt: &str,
    env: &[(OsString, OsString)],
) -> Result<String, String> {
    let mut child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the checker: {e}"))?;
    let mut guard = GroupGuard(child.id().and_then(|p| i32::try_from(p).ok()));
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let write = async {
        if let Some(stdin) = stdin.as_mut() {
            // A checker that does not read its input is not an error by itself.
            let _ = stdin.write_all(prompt.as_bytes()).await;
            let _ = stdin.shutdown().await;
        }
        drop(stdin);
    };
    let read = |pipe: Option<tokio::process::ChildStdout>| async move {
        let mut text = Vec::new();
        if let Some(pipe) = pipe {
            let _ = pipe.take(MAX_OUTPUT).read_to_end(&mut text).await;
        }
        String::from_utf8_lossy(&text).into_owned()
    };
    let read_err = async move {
        let mut text = Vec::new();
        if let Some(pipe) = stderr {
            let _ = pipe.take(4096).read_to_end(&mut text).await;
        }
        String::from_utf8_lossy(&text).into_owned()
    };
    let ((), out, err, status) = tokio::join!(write, read(stdout), read_err, child.wait());
    let status = status.map_err(|e| format!("cannot wait for the checker: {e}"))?;
    // Whatever the checker left running goes with it.
    drop(GroupGuard(guard.0.take()));
    if status.success() {
        Ok(out)
    } else {
        let why = err.lines().next().unwrap_or_default().to_owned();
        Err(match status.code() {
            Some(code) => format!("the checker exited with code {code}: {why}"),
            None => format!("the checker was killed by a signal: {why}"),
        })
    }
}

#[async_trait]
impl Checks for CommandChecks {
    async fn check_idle(&self, context: String) -> CheckOutcome<IdleVerdict> {
        let Some(command) = &self.idle else {
            return CheckOutcome::Failed {
                message: "no --ai-check-command".to_owned(),
            };
        };
        match run(
            command,
            &prompt(IDLE_PROMPT, &context, "IDLE or WORKING"),
            &self.env,
        )
        .await
        {
            Ok(output) => parse(
                &output,
                &[
                    ("IDLE", IdleVerdict::Idle),
                    ("WORKING", IdleVerdict::Working),
                ],
            ),
            Err(message) => CheckOutcome::Failed { message },
        }
    }

    async fn check_plan(&self, context: String) -> CheckOutcome<PlanVerdict> {
        let Some(command) = &self.plan else {
            return CheckOutcome::Failed {
                message: "no --plan-check-command".to_owned(),
            };
        };
        let prompt = prompt(PLAN_PROMPT, &context, "PLAN_MODE or NOT_PLAN_MODE");
        match run(command, &prompt, &self.env).await {
            Ok(output) => parse(
                &output,
                &[
                    ("PLAN_MODE", PlanVerdict::PlanMode),
                    ("NOT_PLAN_MODE", PlanVerdict::NotPlanMode),
                ],
            ),
            Err(message) => CheckOutcome::Failed { message },
        }
    }
}

#[cfg(test)]
mod tests;

//! `hyoka sim-agent --interactive`: a simulated interactive agent that draws
//! Claude-Code-shaped screens on its terminal and reacts to what is typed.
//!
//! It starts idle at the `❯` prompt (or working, with `--start-working`), drawn as Claude
//! Code draws it: grey rules, a dim placeholder in an empty input box, what is typed in
//! normal intensity (so a person's draft can be told from the placeholder), and bracketed
//! paste turned on (a paste lands in the box as text; Enter submits it). A submitted
//! prompt makes it work for `--work` (a spinner line with a working verb, a token counter
//! and "esc to interrupt"), then print `✻ Worked for 0m Ns` and return to the prompt.
//! `/clear` clears the screen but for the command it ran, `/init` works like a prompt. With `--plan-on N` the Nth
//! prompt (0: the task of `--start-working`) ends in a plan-approval menu (Enter accepts it
//! and the work goes on), with `--permission-on N` in a permission prompt, which it waits on until a digit or Enter
//! answers it. `--record FILE` appends one JSON line per input (what arrived and in which
//! state) so tests can check what was typed when, and one per change of its terminal's size
//! (`"kind": "resize"`, `"input": "ROWSxCOLS"`).

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use serde_json::json;

use crate::SimError;
use crate::args::InteractiveArgs;
use hyoka_respawn::{RawMode, Size, terminal_size};

const SPINNER: [&str; 6] = ["·", "✢", "✳", "✶", "✻", "✽"];
const VERBS: [&str; 6] = [
    "Thinking",
    "Analyzing",
    "Reading",
    "Writing",
    "Editing",
    "Testing",
];
const RULE: &str =
    "\x1b[38;5;244m────────────────────────────────────────────────────────────\x1b[39m";
/// The dim placeholder of an empty input box.
const PLACEHOLDER: &str = "\x1b[2mTry \"fix lint errors\"\x1b[22m";
const PASTE_START: &str = "\x1b[200~";
const PASTE_END: &str = "\x1b[201~";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Idle,
    Working { until: Instant, then: After },
    Plan,
    Permission,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    Done,
    Plan,
    Permission,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Working { .. } => "working",
            Self::Plan => "plan",
            Self::Permission => "permission",
        }
    }
}

struct Agent {
    args: InteractiveArgs,
    mode: Mode,
    started: Instant,
    work_started: Instant,
    line: String,
    history: Vec<String>,
    prompts: u64,
    last_worked: Option<u64>,
    tokens: u64,
    frame: usize,
    record: Option<std::fs::File>,
    out: std::io::Stdout,
    interrupts: u32,
    size: Option<Size>,
    /// Inside a bracketed paste.
    pasting: bool,
    /// Bytes of an escape sequence not complete yet.
    pending: String,
}

pub(crate) fn exec(args: &InteractiveArgs) -> Result<u8, SimError> {
    let record = match &args.record {
        Some(path) => Some(open_record(path)?),
        None => None,
    };
    let _raw = RawMode::enter();
    let now = Instant::now();
    let mut agent = Agent {
        mode: Mode::Idle,
        started: now,
        work_started: now,
        line: String::new(),
        history: Vec::new(),
        prompts: 0,
        last_worked: None,
        tokens: 0,
        frame: 0,
        record,
        out: std::io::stdout(),
        interrupts: 0,
        size: terminal_size(),
        pasting: false,
        pending: String::new(),
        args: args.clone(),
    };
    agent.write("\x1b[?2004h");
    if args.start_working.is_zero() {
        agent
            .history
            .push("✻ Welcome to the hyoka simulated agent".to_owned());
    } else {
        agent.history.push("> the task you gave me".to_owned());
        let then = agent.after(0);
        agent.work(args.start_working, then);
    }
    agent.draw();
    agent.run()
}

fn open_record(path: &Path) -> Result<std::fs::File, SimError> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| SimError::usage(format!("cannot open --record {}: {e}", path.display())))
}

impl Agent {
    fn run(&mut self) -> Result<u8, SimError> {
        let stdin = std::io::stdin();
        let mut buf = [0u8; 1024];
        loop {
            let timeout = Timespec {
                tv_sec: 0,
                tv_nsec: 100_000_000,
            };
            let ready = {
                let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
                poll(&mut fds, Some(&timeout)).map_err(|e| SimError::failure(e.to_string()))?;
                !fds[0].revents().is_empty()
            };
            if ready {
                let n = stdin.lock().read(&mut buf).unwrap_or(0);
                if n == 0 {
                    return Ok(0);
                }
                if self.input(&buf[..n]) {
                    return Ok(0);
                }
            }
            self.tick();
        }
    }

    fn record(&mut self, input: &str, kind: &str) {
        let mode = self.mode.name();
        let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if let Some(file) = &mut self.record {
            let _ = writeln!(
                file,
                "{}",
                json!({"t_ms": elapsed, "kind": kind, "input": input, "state": mode})
            );
            let _ = file.flush();
        }
    }

    /// Takes the bracketed pastes out of `text`: a paste typed while idle goes into the
    /// input line as text (Enter still submits); one sent while busy is recorded.
    fn pastes(&mut self, text: &str) -> String {
        let mut text = std::mem::take(&mut self.pending) + text;
        let mut keys = String::new();
        loop {
            if self.pasting {
                let Some(end) = text.find(PASTE_END) else {
                    if text.len() < PASTE_END.len() && PASTE_END.starts_with(text.as_str()) {
                        self.pending = text;
                    } else {
                        self.paste(&text);
                    }
                    return keys;
                };
                self.paste(&text[..end]);
                self.pasting = false;
                text.drain(..end + PASTE_END.len());
            } else if let Some(start) = text.find(PASTE_START) {
                keys.push_str(&text[..start]);
                self.pasting = true;
                text.drain(..start + PASTE_START.len());
            } else {
                // A paste's start split across two reads waits for the rest (a lone Esc,
                // a key of its own, does not).
                let split = (2..PASTE_START.len()).find(|&n| text.ends_with(&PASTE_START[..n]));
                let keep = split.map_or(text.len(), |n| text.len() - n);
                keys.push_str(&text[..keep]);
                self.pending = text[keep..].to_owned();
                return keys;
            }
        }
    }

    fn paste(&mut self, text: &str) {
        if self.mode == Mode::Idle {
            self.line
                .extend(text.chars().map(|c| if c.is_control() { ' ' } else { c }));
        } else if !text.is_empty() {
            self.record(text, "paste");
        }
    }

    /// Handles keys; `true` to exit.
    fn input(&mut self, bytes: &[u8]) -> bool {
        let text = String::from_utf8_lossy(bytes).into_owned();
        let text = self.pastes(&text);
        for ch in text.chars() {
            match (self.mode, ch) {
                (_, '\u{4}') => return true,
                (_, '\u{3}') => {
                    self.record("^C", "key");
                    self.interrupts += 1;
                    if self.interrupts >= 2 {
                        return true;
                    }
                    self.line.clear();
                    self.mode = Mode::Idle;
                }
                (Mode::Idle, '\r' | '\n') => {
                    let line = std::mem::take(&mut self.line);
                    self.record(&line, "submit");
                    self.submit(line.trim());
                }
                (Mode::Idle, '\u{7f}' | '\u{8}') => {
                    self.line.pop();
                }
                (Mode::Idle, '\u{1b}') => {}
                (Mode::Idle, c) if !c.is_control() => {
                    self.interrupts = 0;
                    self.line.push(c);
                }
                (Mode::Working { .. }, c) => {
                    // Typed while busy: recorded, so tests can prove it never happens.
                    self.record(&c.to_string(), "key");
                    if c == '\u{1b}' {
                        self.history.push("⎿ Interrupted by user".to_owned());
                        self.mode = Mode::Idle;
                    }
                }
                (Mode::Plan, c) => {
                    self.record(&c.to_string(), "key");
                    match c {
                        '\r' | '1' | '2' => {
                            self.history
                                .push("⏺ User approved Claude's plan".to_owned());
                            self.work(self.args.work, After::Done);
                        }
                        '3' | '\u{1b}' => {
                            self.history
                                .push("⏺ User chose to keep planning".to_owned());
                            self.mode = Mode::Idle;
                        }
                        _ => {}
                    }
                }
                (Mode::Permission, c) => {
                    self.record(&c.to_string(), "key");
                    match c {
                        '\r' | '1' | '2' => {
                            self.history.push("⏺ Bash(rm -rf build) allowed".to_owned());
                            self.work(self.args.work, After::Done);
                        }
                        '3' | '\u{1b}' => {
                            self.history.push("⎿ User rejected the command".to_owned());
                            self.mode = Mode::Idle;
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        self.draw();
        false
    }

    fn submit(&mut self, line: &str) {
        match line {
            "" => {}
            "/clear" => {
                // Claude Code clears the conversation and shows only the command it ran.
                self.history = vec!["> /clear".to_owned(), "  ⎿  (no content)".to_owned()];
                self.last_worked = None;
                self.tokens = 0;
            }
            "/init" => {
                self.history.push("> /init".to_owned());
                self.work(self.args.work, After::Done);
            }
            prompt => {
                self.prompts += 1;
                self.history.push(format!("> {prompt}"));
                let then = self.after(self.prompts);
                self.work(self.args.work, then);
            }
        }
    }

    /// How prompt `n` ends (0 is the task given at start).
    fn after(&self, n: u64) -> After {
        if self.args.plan_on == Some(n) {
            After::Plan
        } else if self.args.permission_on == Some(n) {
            After::Permission
        } else {
            After::Done
        }
    }

    fn work(&mut self, length: Duration, then: After) {
        self.work_started = Instant::now();
        self.last_worked = None;
        self.mode = Mode::Working {
            until: self.work_started + length,
            then,
        };
    }

    fn tick(&mut self) {
        let size = terminal_size();
        if size != self.size {
            self.size = size;
            if let Some(size) = size {
                self.record(&format!("{}x{}", size.rows, size.cols), "resize");
            }
        }
        if let Mode::Working { until, then } = self.mode {
            self.frame += 1;
            self.tokens += 37;
            if Instant::now() >= until {
                match then {
                    After::Done => {
                        let secs = self.work_started.elapsed().as_secs();
                        self.history
                            .push("⏺ Done. The changes are in place.".to_owned());
                        self.last_worked = Some(secs);
                        self.mode = Mode::Idle;
                    }
                    After::Plan => self.mode = Mode::Plan,
                    After::Permission => self.mode = Mode::Permission,
                }
            }
            self.draw();
        }
    }

    fn draw(&mut self) {
        let mut screen = String::from("\x1b[H\x1b[2J");
        let push = |screen: &mut String, line: &str| {
            screen.push_str(line);
            screen.push_str("\r\n");
        };
        let start = self.history.len().saturating_sub(12);
        for line in &self.history[start..] {
            push(&mut screen, line);
        }
        push(&mut screen, "");
        match self.mode {
            Mode::Plan => {
                push(&mut screen, "╭─ Ready to code? ─────────────────────────╮");
                push(&mut screen, "│ Here is Claude's plan:                   │");
                push(&mut screen, "│  1. Update the parser  2. Add tests      │");
                push(&mut screen, "╰──────────────────────────────────────────╯");
                push(&mut screen, " Would you like to proceed?");
                push(&mut screen, "");
                push(&mut screen, " ❯ 1. Yes, and auto-accept edits");
                push(&mut screen, "   2. Yes, and manually approve edits");
                push(&mut screen, "   3. No, keep planning");
                self.write(&screen);
                return;
            }
            Mode::Permission => {
                push(&mut screen, " Bash command");
                push(&mut screen, "   rm -rf build");
                push(&mut screen, "   Remove the build directory");
                push(&mut screen, "");
                push(&mut screen, " Do you want to proceed?");
                push(&mut screen, " ❯ 1. Yes");
                push(
                    &mut screen,
                    "   2. Yes, and don't ask again for rm commands in this project",
                );
                push(
                    &mut screen,
                    "   3. No, and tell Claude what to do differently (esc)",
                );
                self.write(&screen);
                return;
            }
            Mode::Working { .. } => {
                let secs = self.work_started.elapsed().as_secs();
                let glyph = SPINNER[self.frame % SPINNER.len()];
                let verb = VERBS[(self.frame / 10) % VERBS.len()];
                push(
                    &mut screen,
                    &format!(
                        "{glyph} {verb}… ({secs}s · ↓ {} tokens · esc to interrupt)",
                        self.tokens
                    ),
                );
            }
            Mode::Idle => {
                if let Some(secs) = self.last_worked {
                    push(
                        &mut screen,
                        &format!("✻ Worked for {}m {}s", secs / 60, secs % 60),
                    );
                }
            }
        }
        push(&mut screen, "");
        push(&mut screen, RULE);
        let input = if self.line.is_empty() {
            PLACEHOLDER
        } else {
            &self.line
        };
        push(&mut screen, &format!("❯ {input}"));
        push(&mut screen, RULE);
        screen.push_str("  ? for shortcuts");
        self.write(&screen);
    }

    fn write(&mut self, screen: &str) {
        let _ = self.out.write_all(screen.as_bytes());
        let _ = self.out.flush();
    }
}

//! The real TUIs live under `hyoka respawn --backend tmux --no-cycle` (issue 24): Claude Code,
//! Codex and Gemini CLI, each in a tmux session of its own, against `hyoka model-stub serve`
//! on loopback in a network namespace of the test's own (`unshare -n`; the controller joins
//! it with `nsenter`, so nothing the agent starts can reach the network). Each is driven
//! through its start dialog, a streaming answer with thinking and a pause, a tool call that
//! waits for approval, the approved tool running, and idle; at every sample the truth is the
//! stub's state (`GET /_stub/state`, read from inside the namespace, taken before and after
//! the sample), and `hyoka sessions`, `hyoka detect` on the live pane, `hyoka wait --until
//! idle` and `hyoka send` are checked against it: nothing says idle while the stub streams
//! or a dialog is up, `send` is refused with nothing typed while the agent works or asks,
//! `wait` returns only when the stub is idle. A second tmux client of another size attaches
//! and leaves while the dialog is up: the dialog stays blocked and unanswered.
//!
//! Skips with a message without `HYOKA_AGENTS_DIR` (`.ci/run` installs the agents there),
//! tmux, or a network namespace it can enter. Every wait is bounded and polls the stub, the
//! pane or the registry; the test proves through `/proc` that nothing it started is left.

use std::io::{Read as _, Write as _};
use std::os::fd::AsFd as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::respawn::{Case, FAST, Running};
use crate::support::{hyoka_path, tmux_installed};

/// The port of the stub inside the namespace.
const PORT: u16 = 8787;

/// How long after the stub's last reply the agent's screen counts as settled.
const SETTLE: Duration = Duration::from_secs(4);

/// The longest any one phase may take before the test fails.
const PHASE: Duration = Duration::from_secs(90);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    Claude,
    Codex,
    Gemini,
}

impl Agent {
    fn bin(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
        }
    }

    fn profile(self) -> &'static str {
        match self {
            Self::Claude => "claude-code",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
        }
    }

    /// The scripted replies: a streaming answer with thinking and a pause; a shell command
    /// that needs approval and runs a few seconds once approved; a short answer.
    fn script(self) -> String {
        let tool = match self {
            Self::Claude => {
                r#"{ name: Bash, input: { command: "touch approved.txt && sleep 4", description: scripted } }"#
            }
            Self::Codex => {
                r#"{ name: exec_command, input: { cmd: "touch approved.txt && sleep 4", sandbox_permissions: require_escalated, justification: "Write approved.txt in the workspace" } }"#
            }
            Self::Gemini => {
                r#"{ name: run_shell_command, input: { command: "touch approved.txt && sleep 4" } }"#
            }
        };
        format!(
            "turns:\n  - text: \"Here is a long answer that streams slowly, word after word, then stops for a while in the middle, and then goes on again until it ends with a short summary of what was done.\"\n    thinking: \"Let me think about the repository for a moment first.\"\n    delay: 2s\n    pace: 6s\n    stall: {{ after: 4, for: 4s }}\n  - tools: [{tool}]\n  - text: \"Done.\"\n"
        )
    }

    /// The agent's argv and environment, with its settings under `dir`.
    fn command(self, bin: &Path, dir: &Path) -> (Vec<String>, Vec<(String, String)>) {
        let url = format!("http://127.0.0.1:{PORT}");
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut env = vec![("HOME".to_owned(), home.display().to_string())];
        let mut argv = vec![bin.display().to_string()];
        let mut put = |k: &str, v: String| env.push((k.to_owned(), v));
        match self {
            Self::Claude => {
                let config = dir.join("claude");
                std::fs::create_dir_all(&config).unwrap();
                std::fs::write(
                    config.join(".claude.json"),
                    r#"{"hasCompletedOnboarding":true,"theme":"dark","customApiKeyResponses":{"approved":["sk-stub"],"rejected":[]}}"#,
                )
                .unwrap();
                put("ANTHROPIC_BASE_URL", url);
                put("ANTHROPIC_API_KEY", "sk-stub".to_owned());
                put("CLAUDE_CONFIG_DIR", config.display().to_string());
                put("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned());
                put("IS_SANDBOX", "1".to_owned());
                argv.extend(["--permission-mode".to_owned(), "default".to_owned()]);
            }
            Self::Codex => {
                let codex = dir.join("codex-home");
                std::fs::create_dir_all(&codex).unwrap();
                std::fs::write(
                    codex.join("config.toml"),
                    format!(
                        "approval_policy = \"on-request\"\nmodel_provider = \"stub\"\nmodel = \"gpt-5.5\"\n[model_providers.stub]\nname = \"stub\"\nbase_url = \"{url}/v1\"\nwire_api = \"responses\"\nenv_key = \"STUB_KEY\"\n"
                    ),
                )
                .unwrap();
                put("CODEX_HOME", codex.display().to_string());
                put("STUB_KEY", "sk-stub".to_owned());
                argv.push("--no-daemon".to_owned());
            }
            Self::Gemini => {
                let gemini = dir.join("gemini");
                std::fs::create_dir_all(gemini.join(".gemini")).unwrap();
                std::fs::write(
                    gemini.join(".gemini/settings.json"),
                    r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"maxAttempts":2}}"#,
                )
                .unwrap();
                put("GOOGLE_GEMINI_BASE_URL", url);
                put("GEMINI_API_KEY", "sk-stub".to_owned());
                put("GEMINI_CLI_HOME", gemini.display().to_string());
            }
        }
        (argv, env)
    }

    /// The keys a person presses on the start dialog (trust, or Codex's model nudge).
    fn answer_start(self) -> &'static [&'static str] {
        match self {
            Self::Claude => &["Down", "Enter"],
            Self::Codex => &["2"],
            Self::Gemini => &["Enter"],
        }
    }

    /// Text of the approval dialog, the test's own marker of it (not hyoka's rules): Codex
    /// draws its dialog while the reply that called the tool is still streaming.
    fn approval_marker(self) -> &'static str {
        match self {
            Self::Claude => "Do you want to",
            Self::Codex => "Would you like to run",
            Self::Gemini => "Allow once",
        }
    }

    /// The keys that approve the shell command once.
    fn approve(self) -> &'static [&'static str] {
        match self {
            Self::Codex => &["y"],
            Self::Claude | Self::Gemini => &["Enter"],
        }
    }
}

/// Environment variables by which CI services say they are one, read by the agents'
/// terminal libraries and start-up checks.
const CI_MARKERS: [&str; 10] = [
    "CI",
    "CONTINUOUS_INTEGRATION",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "BUILDKITE",
    "CIRCLECI",
    "TRAVIS",
    "TEAMCITY_VERSION",
    "TF_BUILD",
    "JENKINS_URL",
];

/// The agent's binary, or `None` (with a message) when the test must skip.
fn installed(agent: Agent) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("HYOKA_AGENTS_DIR") else {
        eprintln!("skipped: HYOKA_AGENTS_DIR is not set (.ci/run installs the real agents there)");
        return None;
    };
    let bin = Path::new(&dir).join("node_modules/.bin").join(agent.bin());
    if !bin.exists() {
        eprintln!("skipped: {} is missing", bin.display());
        return None;
    }
    if !tmux_installed() {
        eprintln!("skipped: tmux is not installed");
        return None;
    }
    let works = |cmd: &mut Command| {
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !works(Command::new("unshare").args(["-n", "true"]))
        || !works(Command::new("nsenter").args(["--net=/proc/self/ns/net", "true"]))
    {
        eprintln!("skipped: no network namespace can be made and entered here (unshare, nsenter)");
        return None;
    }
    Some(bin)
}

/// What the stub says, or `None` if it could not be asked.
#[derive(Debug, Clone, PartialEq)]
struct Stub {
    state: String,
    requests: u64,
    /// Requests of the agent's own conversation (a message typed would be one of them).
    own_requests: u64,
    turn: u64,
}

/// One observation: the stub before, the verdicts, the stub after.
#[derive(Debug)]
struct Sample {
    sessions: String,
    detect: String,
}

/// What the test knows beyond the stub's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The agent starts: nothing is scored.
    Starting,
    /// The stub's state is the truth.
    Free,
    /// A dialog is up (the start dialog, or the approval before the command ran).
    Asking,
}

/// The truth a sample is scored against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Truth {
    Working,
    Idle,
    Blocked,
}

const STATES: [&str; 4] = ["working", "idle", "blocked", "unknown"];

/// Per truth, how often each verdict came: rows working, idle, blocked.
#[derive(Debug, Default)]
struct Matrix([[u32; 4]; 3]);

impl Matrix {
    fn add(&mut self, truth: Truth, verdict: &str) {
        let col = STATES.iter().position(|s| *s == verdict).unwrap_or(3);
        self.0[truth as usize][col] += 1;
    }

    fn render(&self) -> String {
        ["working", "idle", "blocked"]
            .iter()
            .zip(self.0)
            .map(|(t, row)| {
                format!(
                    "{t} {}",
                    row.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
                )
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

/// One live session: the stub holding the namespace, the controller inside it.
struct Live {
    agent: Agent,
    case: Case,
    name: String,
    work: PathBuf,
    stub: Option<Child>,
    ns: std::fs::File,
    controller: Running,
    sessions: Matrix,
    detect: Matrix,
    /// When the stub was last seen not idle.
    busy_at: Instant,
    /// The turn the last prompt `send` delivered starts: until the stub reaches it, the
    /// agent works on the prompt (before the first byte).
    submitted: u64,
    /// The text of that prompt.
    prompt: &'static str,
}

impl Live {
    fn start(agent: Agent, bin: &Path) -> Self {
        Self::start_with(agent, bin, &agent.script(), &["--no-cycle"])
    }

    /// A live session with `script` for the stub and `flags` for `hyoka respawn`.
    fn start_with(agent: Agent, bin: &Path, script_text: &str, flags: &[&str]) -> Self {
        let case = Case::new();
        let name = format!("live-{}-{}", agent.bin(), fastrand::u32(..));
        let dir = case.dir.path().to_owned();
        let script = dir.join("script.yaml");
        std::fs::write(&script, script_text).unwrap();
        let mut stub = Command::new("unshare")
            .args(["-n", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""])
            .arg(hyoka_path())
            .args(["model-stub", "serve", "--script"])
            .arg(&script)
            .args(["--listen", &format!("127.0.0.1:{PORT}")])
            .env("HYOKA_TEST_MARK", &case.mark)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Ready when it prints its base URL.
        let mut first = [0u8; 4];
        stub.stdout
            .as_mut()
            .unwrap()
            .read_exact(&mut first)
            .expect("the stub printed its base URL");
        let ns = std::fs::File::open(format!("/proc/{}/ns/net", stub.id())).unwrap();
        let work = dir.join("work");
        std::fs::create_dir_all(&work).unwrap();
        let (argv, env) = agent.command(bin, &dir);
        // The fast defaults, but for the no-output fallback and what `flags` sets.
        let defaults: Vec<&str> = FAST
            .chunks(2)
            .filter(|pair| pair[0] != "--no-output-timeout" && !flags.contains(&pair[0]))
            .flatten()
            .copied()
            .filter(|a| !a.is_empty())
            .collect();
        let mut cmd = Command::new("nsenter");
        // The agents draw as in a person's terminal, wherever the tests run. A CI marker
        // makes Gemini CLI 0.61 headless even on a terminal (`isHeadlessMode`,
        // packages/core/src/utils/headless.ts: `CI=true` or `GITHUB_ACTIONS=true`), and in a
        // fresh folder it then exits 55 instead of asking for trust; Claude Code draws
        // without colours (supports-color). The tmux server, and so the agent, inherits
        // this environment.
        for marker in CI_MARKERS {
            cmd.env_remove(marker);
        }
        cmd.arg(format!("--net=/proc/{}/ns/net", stub.id()))
            .arg(hyoka_path())
            .arg("respawn")
            .arg("--reports")
            .arg(dir.join("reports"))
            .arg("--events")
            .arg(case.events_path())
            .args(&defaults)
            .args(["--backend", "tmux", "--name", &name])
            .args(flags)
            .args(["--profile", agent.profile(), "--human-lock", "1s"])
            .arg("--")
            .args(&argv)
            .envs(env)
            .env("HYOKA_RUNTIME_DIR", case.runtime_dir())
            .env("HYOKA_TEST_MARK", &case.mark)
            .current_dir(&work)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let controller = Running {
            child: Some(cmd.spawn().unwrap()),
        };
        Self {
            agent,
            case,
            name,
            work,
            stub: Some(stub),
            ns,
            controller,
            sessions: Matrix::default(),
            detect: Matrix::default(),
            busy_at: Instant::now(),
            submitted: 0,
            prompt: "",
        }
    }

    /// The stub's state, asked from inside its namespace.
    fn stub(&mut self) -> Stub {
        let body = self.get("/_stub/state");
        let json: Value = serde_json::from_str(body.split("\r\n\r\n").nth(1).unwrap_or("{}"))
            .unwrap_or_else(|e| panic!("the stub's state is not JSON ({e}): {body}"));
        // The agent's own conversation is the oldest: Codex also asks in conversations of
        // its own on the side (right after it starts, and while an approval waits), which
        // the stub answers from the script too.
        let main = &json["conversations"][0];
        let stub = Stub {
            state: main["state"].as_str().unwrap_or("idle").to_owned(),
            requests: json["requests"].as_u64().unwrap_or(0),
            own_requests: main["requests"].as_u64().unwrap_or(0),
            turn: main["turn"].as_u64().unwrap_or(0),
        };
        if stub.state != "idle" {
            self.busy_at = Instant::now();
        }
        stub
    }

    /// `GET path` of the stub, from inside its namespace (a thread of our own joins it).
    fn get(&self, path: &str) -> String {
        let ns = self.ns.try_clone().unwrap();
        let request = format!("GET {path} HTTP/1.0\r\nHost: stub\r\n\r\n");
        std::thread::spawn(move || {
            rustix::thread::move_into_link_name_space(
                ns.as_fd(),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .expect("setns into the stub's namespace");
            let mut conn = std::net::TcpStream::connect(("127.0.0.1", PORT)).unwrap();
            conn.write_all(request.as_bytes()).unwrap();
            let mut answer = String::new();
            conn.read_to_string(&mut answer).unwrap();
            answer
        })
        .join()
        .unwrap()
    }

    fn hyoka(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = self.case.hyoka().args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The session's status in `hyoka sessions --json`.
    fn status(&self) -> Option<Value> {
        let (code, out, err) = self.hyoka(&["sessions", "--json"]);
        assert_eq!(code, Some(0), "{err}");
        let all: Vec<Value> = serde_json::from_str(&out).unwrap();
        all.into_iter().find(|s| s["name"] == self.name.as_str())
    }

    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &format!("hyoka-{}", self.name)]);
        cmd
    }

    /// The pane as it is now, with its attributes (`history` true: the scrollback too).
    fn pane(&self, attributes: bool, history: bool) -> String {
        let mut cmd = self.tmux();
        cmd.args(["capture-pane", "-p", "-t", &self.name]);
        if attributes {
            cmd.arg("-e");
        }
        if history {
            cmd.args(["-S", "-"]);
        }
        String::from_utf8_lossy(&cmd.output().unwrap().stdout).into_owned()
    }

    /// `hyoka detect` on the live pane: its state.
    fn detect(&self) -> String {
        let screen = self.case.dir.path().join("screen.ans");
        std::fs::write(&screen, self.pane(true, false)).unwrap();
        let (code, out, err) = self.hyoka(&[
            "detect",
            "--profile",
            self.agent.profile(),
            "--json",
            "--screen",
            screen.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        v["state"].as_str().unwrap_or("?").to_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for key in keys {
            let ok = self
                .tmux()
                .args(["send-keys", "-t", &self.name, key])
                .status()
                .unwrap()
                .success();
            assert!(ok, "tmux send-keys {key}");
        }
    }

    /// Takes one sample: the stub, `sessions` and `detect`, the stub again; scores it when
    /// the truth held throughout, and fails on an idle verdict while the agent works or asks.
    fn sample(&mut self, phase: Phase) -> (Stub, Sample) {
        let before = self.stub();
        let sample = Sample {
            sessions: self
                .status()
                .and_then(|s| s["state"].as_str().map(str::to_owned))
                .unwrap_or_else(|| "gone".to_owned()),
            detect: self.detect(),
        };
        let after = self.stub();
        let ran = self.work.join("approved.txt").exists();
        let asked = !ran
            && self
                .pane(false, false)
                .contains(self.agent.approval_marker());
        let truth = if before != after || phase == Phase::Starting {
            None
        } else if asked {
            Some(Truth::Blocked)
        } else {
            match after.state.as_str() {
                "streaming" => Some(Truth::Working),
                "idle" if after.turn < self.submitted => Some(Truth::Working),
                "waiting_for_tool" if ran => Some(Truth::Working),
                "waiting_for_tool" | "idle" if phase == Phase::Asking => Some(Truth::Blocked),
                // Settled: the stub idle for a while (the agent draws its turn end meanwhile).
                "idle" if self.busy_at.elapsed() > SETTLE => Some(Truth::Idle),
                _ => None,
            }
        };
        if let Some(truth) = truth {
            let name = |t: Truth| STATES[t as usize];
            if let Some(dump) = std::env::var_os("HYOKA_LIVE_DUMP")
                && (sample.sessions != name(truth) || sample.detect != name(truth))
            {
                // Where a verdict missed: the truth, the stub, both verdicts, the evidence, the pane.
                let status = self.status().unwrap_or_default();
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(Path::new(&dump).join(format!("{:?}.txt", self.agent)))
                    .unwrap();
                // The screen `detect` judged, with its attributes, as it read it.
                let judged =
                    std::fs::read(self.case.dir.path().join("screen.ans")).unwrap_or_default();
                let _ = writeln!(
                    file,
                    "=== truth {truth:?} stub {after:?} {sample:?}\n{}\n{}\n--- judged (capture-pane -e) ---\n{}",
                    status["evidence"],
                    self.pane(false, false),
                    String::from_utf8_lossy(&judged)
                );
            }
            // Between Enter and the submitted message in the transcript, Gemini CLI 0.61's
            // screen is its idle one: `InputPrompt` clears the buffer and calls `onSubmit`,
            // and `submitQuery` awaits `logger.logMessage` before `addItem(user)` and
            // `setIsResponding(true)` (useGeminiStream.ts, bundle/interactiveCli-*.js). A
            // screen alone cannot tell that frame from idle; the session's verdict, which has
            // the process tree and the keys it typed, must, and is held to it.
            let screen_knows = !(truth == Truth::Working
                && after.turn < self.submitted
                && !self.pane(false, false).contains(self.prompt));
            self.sessions.add(truth, &sample.sessions);
            if screen_knows {
                self.detect.add(truth, &sample.detect);
            }
            if truth != Truth::Idle {
                assert!(
                    sample.sessions != "idle" && (sample.detect != "idle" || !screen_knows),
                    "{:?}: judged idle while {truth:?} (stub {after:?}): {sample:?}\n{}\n{}",
                    self.agent,
                    self.pane(false, false),
                    self.get("/_stub/requests")
                );
            }
        }
        (after, sample)
    }

    /// Samples until `done` holds for the stub, failing after [`PHASE`].
    fn sample_until(&mut self, what: &str, phase: Phase, done: impl Fn(&Stub, &Sample) -> bool) {
        let started = Instant::now();
        loop {
            let (stub, sample) = self.sample(phase);
            if done(&stub, &sample) {
                return;
            }
            assert!(
                started.elapsed() < PHASE,
                "{:?}: no {what} within {PHASE:?} (stub {stub:?}, {sample:?}):\n{}",
                self.agent,
                self.pane(false, false)
            );
            self.controller_alive();
        }
    }

    /// Samples the settled idle session a few times.
    fn settle(&mut self) {
        let started = Instant::now();
        let mut scored = 0;
        while scored < 3 {
            assert!(started.elapsed() < PHASE, "the stub never settled");
            let (stub, _) = self.sample(Phase::Free);
            if stub.state == "idle" && self.busy_at.elapsed() > SETTLE {
                scored += 1;
            }
        }
    }

    #[track_caller]
    fn controller_alive(&mut self) {
        let child = self.controller.child.as_mut().unwrap();
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = pipe.read_to_string(&mut err);
            }
            panic!("the controller ended ({status}): {err}");
        }
    }

    /// `hyoka send` must refuse (exit 3) and type nothing.
    #[track_caller]
    fn send_refused(&mut self, why: &str) {
        // Codex asks in side conversations of its own at any time: only the agent's own
        // conversation says whether something typed was submitted.
        let before = self.stub().own_requests;
        let (code, _, err) = self.hyoka(&["send", &self.name, "zebra crossing"]);
        assert_eq!(code, Some(3), "{:?}: send {why}: {err}", self.agent);
        assert!(err.contains("nothing typed"), "{err}");
        assert!(
            !self.pane(false, true).contains("zebra"),
            "{:?}: typed while {why}:\n{}",
            self.agent,
            self.pane(false, true)
        );
        assert_eq!(
            self.stub().own_requests,
            before,
            "a request of the agent's conversation followed the refusal"
        );
    }

    /// `hyoka wait --until idle` started now; on return the stub must be idle.
    fn wait_idle_agrees(&mut self, mut wait: Child, phase: Phase) {
        let started = Instant::now();
        loop {
            if let Some(status) = wait.try_wait().unwrap() {
                let stub = self.stub();
                assert_eq!(
                    status.code(),
                    Some(0),
                    "{:?}: wait --until idle",
                    self.agent
                );
                assert_eq!(
                    stub.state, "idle",
                    "{:?}: wait --until idle returned while the stub was busy",
                    self.agent
                );
                return;
            }
            assert!(
                started.elapsed() < PHASE,
                "wait --until idle never returned"
            );
            self.sample(phase);
        }
    }

    /// `hyoka send` to a session judged idle: delivered (0), or refused with nothing typed
    /// (3) when the verdict moved on in between (Gemini CLI's tree stays busy a while after
    /// its restart); then it waits for idle again and sends again, as a person would.
    #[track_caller]
    fn send_when_idle(&mut self, text: &str) {
        for _ in 0..5 {
            let (code, _, err) = self.hyoka(&["send", &self.name, text]);
            match code {
                Some(0) => return,
                Some(3) => {
                    assert!(err.contains("nothing typed"), "{err}");
                    let mut wait = self.spawn_wait("idle", "60s");
                    assert_eq!(
                        wait.wait().unwrap().code(),
                        Some(0),
                        "{:?}: wait",
                        self.agent
                    );
                }
                _ => panic!("{:?}: send {text:?}: {err}", self.agent),
            }
        }
        panic!("{:?}: send {text:?} refused five times", self.agent);
    }

    fn spawn_wait(&self, until: &str, timeout: &str) -> Child {
        self.case
            .hyoka()
            .args(["wait", &self.name, "--until", until, "--timeout", timeout])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    fn window(&self) -> String {
        let out = self
            .tmux()
            .args(["display-message", "-p", "-t", &self.name])
            .arg("#{window_width}x#{window_height}")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// The resize case: a second client of another size attaches and leaves while the
    /// dialog is up.
    fn another_client_comes_and_goes(&mut self) {
        let mut person = Command::new("tmux")
            .args(["-L", &format!("hyoka-{}", self.name)])
            .args(["-C", "attach", "-t", &self.name])
            .env("HYOKA_TEST_MARK", &self.case.mark)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        writeln!(person.stdin.as_mut().unwrap(), "refresh-client -C 80x24").unwrap();
        let started = Instant::now();
        while self.window() != "80x24" {
            assert!(started.elapsed() < PHASE, "the window never became 80x24");
            self.sample(Phase::Asking);
        }
        // Seen by the agent at that size for a few samples, then the person leaves.
        for _ in 0..3 {
            self.sample(Phase::Asking);
        }
        drop(person.stdin.take());
        let _ = person.wait();
        let started = Instant::now();
        while self.window() != "120x40" {
            assert!(
                started.elapsed() < PHASE,
                "the window stayed {}",
                self.window()
            );
            self.sample(Phase::Asking);
        }
        for _ in 0..5 {
            self.sample(Phase::Asking);
        }
    }

    /// Stops the controller (SIGINT: it ends the session) and the stub, and proves that
    /// nothing is left.
    fn stop(mut self) {
        let done = self.case.interrupt(&mut self.controller);
        assert_eq!(done.code, Some(130), "{}", done.stderr);
        if let Some(mut stub) = self.stub.take() {
            let _ = stub.kill();
            let _ = stub.wait();
        }
        eprintln!(
            "{:?} live: sessions [{}]; detect [{}] (rows truth, columns working idle blocked unknown)",
            self.agent,
            self.sessions.render(),
            self.detect.render()
        );
        self.case.assert_nothing_left();
    }
}

impl Live {
    /// After the controller exited by itself: stops the stub and proves that nothing is left.
    fn finish_stub(mut self) {
        if let Some(mut stub) = self.stub.take() {
            let _ = stub.kill();
            let _ = stub.wait();
        }
        self.case.assert_nothing_left();
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(mut stub) = self.stub.take() {
            let _ = stub.kill();
            let _ = stub.wait();
        }
    }
}

fn drive(agent: Agent) {
    let Some(bin) = installed(agent) else {
        return;
    };
    let mut live = Live::start(agent, &bin);
    // The start dialog: blocked; `wait --until idle` times out, `send` types nothing.
    live.sample_until("start dialog", Phase::Starting, |_, s| {
        s.sessions == "blocked"
    });
    let status = live.status().unwrap();
    eprintln!("{agent:?} start dialog: {}", status["blocked"]);
    let (code, _, _) = live.hyoka(&["wait", &live.name, "--until", "idle", "--timeout", "2s"]);
    assert_eq!(code, Some(124), "wait --until idle over the start dialog");
    live.send_refused("its start dialog is up");
    for _ in 0..3 {
        live.sample(Phase::Asking);
    }
    assert_eq!(
        live.stub().requests,
        0,
        "the agent asked the model before the dialog"
    );
    live.keys(agent.answer_start());
    live.busy_at = Instant::now();
    // Idle at the empty prompt: `wait` returns, the stub is idle, `send` delivers.
    // (Gemini CLI restarts itself after the trust dialog, and its tree stays busy a while
    // behind the prompt: the start is not scored.)
    live.wait_idle_agrees(live.spawn_wait("idle", "60s"), Phase::Starting);
    live.send_when_idle("explain the repo");
    live.submitted = 1;
    live.prompt = "explain the repo";
    // Working: the answer streams with a pause; nothing says idle, `send` is refused, and
    // `wait --until idle` returns only once the stub is idle.
    live.busy_at = Instant::now();
    live.sample_until("streaming", Phase::Free, |stub, _| {
        stub.state == "streaming"
    });
    live.send_refused("the answer streams");
    let wait = live.spawn_wait("idle", "90s");
    live.wait_idle_agrees(wait, Phase::Free);
    live.sample_until("settled idle", Phase::Free, |stub, s| {
        stub.state == "idle" && s.sessions == "idle"
    });
    live.settle();
    // A shell command that asks first: blocked until the test approves it.
    live.send_when_idle("run the command");
    live.submitted = 2;
    live.prompt = "run the command";
    live.busy_at = Instant::now();
    live.sample_until("the approval dialog", Phase::Free, |stub, s| {
        stub.turn >= 2 && s.sessions == "blocked"
    });
    let turn = live.stub().turn;
    live.send_refused("the approval dialog is up");
    let (code, _, _) = live.hyoka(&["wait", &live.name, "--until", "idle", "--timeout", "3s"]);
    assert_eq!(code, Some(124), "wait --until idle over the dialog");
    live.another_client_comes_and_goes();
    let status = live.status().unwrap();
    assert_eq!(status["state"], "blocked", "{status:#}");
    live.send_refused("the dialog is up after the resize");
    assert!(
        !live.work.join("approved.txt").exists(),
        "{agent:?}: the dialog was answered by hyoka"
    );
    assert_eq!(
        live.stub().turn,
        turn,
        "{agent:?}: the turn moved on under the dialog"
    );
    // The person approves: the command runs (working), then the last answer, then idle.
    live.keys(agent.approve());
    let wait = live.spawn_wait("idle", "90s");
    live.busy_at = Instant::now();
    let ran = live.work.join("approved.txt");
    live.sample_until("the command to run", Phase::Asking, move |_, _| {
        ran.exists()
    });
    live.wait_idle_agrees(wait, Phase::Free);
    live.sample_until("settled idle at the end", Phase::Free, |stub, s| {
        stub.state == "idle" && s.sessions == "idle" && stub.turn >= 3
    });
    live.settle();
    live.stop();
}

mod cycle;

#[test]
fn claude_code_live_in_tmux() {
    drive(Agent::Claude);
}

#[test]
fn codex_live_in_tmux() {
    drive(Agent::Codex);
}

#[test]
fn gemini_cli_live_in_tmux() {
    drive(Agent::Gemini);
}

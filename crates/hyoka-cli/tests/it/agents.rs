//! The real agents (Claude Code, Codex, Gemini CLI), headless under `hyoka run --events
//! auto`, each against the scripted model server in the eval's own network namespace (only
//! loopback: no agent process can reach the network).
//!
//! The binaries come from `$HYOKA_AGENTS_DIR/node_modules/.bin` (`.ci/run` installs the
//! pinned npm packages there); without it, or without network namespaces, each test says
//! so on stderr and passes. Each test scripts the model's replies in the agent's own tool
//! names and checks what hyoka recorded: turns, actions, files, usage, and when each limit
//! stopped the agent.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Scratch, stderr};

/// The pinned agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    Claude,
    Codex,
    Gemini,
}

/// What a scripted reply does, in any agent's terms.
#[derive(Debug, Clone)]
enum Step {
    /// Writes a file with the agent's file tool.
    Write(&'static str, &'static str),
    /// Runs a shell command with the agent's shell tool.
    Shell(&'static str),
    /// Says something.
    Text(&'static str),
}

/// The port the stub listens on inside each eval's own network namespace.
const PORT: u16 = 8787;

impl Agent {
    fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
        }
    }

    /// The agent's binary, or `None` (with a message) when the test must skip.
    fn binary(self) -> Option<PathBuf> {
        let Some(dir) = std::env::var_os("HYOKA_AGENTS_DIR") else {
            eprintln!(
                "skipped: HYOKA_AGENTS_DIR is not set (.ci/run installs the real agents there)"
            );
            return None;
        };
        let bin = Path::new(&dir).join("node_modules/.bin").join(self.name());
        if !bin.exists() {
            eprintln!("skipped: {} is missing", bin.display());
            return None;
        }
        let netns = std::process::Command::new("unshare")
            .args(["-n", "true"])
            .status()
            .is_ok_and(|s| s.success());
        if !netns {
            eprintln!("skipped: no network namespace can be made here (unshare -n)");
            return None;
        }
        Some(bin)
    }

    /// One scripted tool call (YAML flow mapping) for `step`.
    fn tool(self, step: &Step) -> Option<String> {
        let json = |v: &str| serde_json::to_string(v).unwrap();
        Some(match (self, step) {
            (_, Step::Text(_)) => return None,
            (Self::Claude, Step::Write(path, content)) => format!(
                "{{ name: Write, input: {{ file_path: {}, content: {} }} }}",
                json(path),
                json(content)
            ),
            (Self::Claude, Step::Shell(cmd)) => format!(
                "{{ name: Bash, input: {{ command: {}, description: scripted }} }}",
                json(cmd)
            ),
            (Self::Codex, Step::Write(path, content)) => format!(
                "{{ name: apply_patch, input: {} }}",
                json(&format!(
                    "*** Begin Patch\n*** Add File: {path}\n+{}\n*** End Patch\n",
                    content.trim_end()
                ))
            ),
            (Self::Codex, Step::Shell(cmd)) => {
                format!("{{ name: exec_command, input: {{ cmd: {} }} }}", json(cmd))
            }
            (Self::Gemini, Step::Write(path, content)) => format!(
                "{{ name: write_file, input: {{ file_path: {}, content: {} }} }}",
                json(path),
                json(content)
            ),
            (Self::Gemini, Step::Shell(cmd)) => format!(
                "{{ name: run_shell_command, input: {{ command: {} }} }}",
                json(cmd)
            ),
        })
    }

    /// The eval's command and environment (YAML), for a scratch area at `dir`.
    ///
    /// Each agent gets a `HOME` of its own there: the shells its tools start (Codex's
    /// `bash -lc`, Claude Code's snapshot of the user's shell) then read no profile of the
    /// host's, which can hang on the host's state (a `pyenv rehash` lock a killed shell
    /// left waits 60 s) or write into the host's home.
    fn eval(self, bin: &Path, dir: &Path) -> (String, String) {
        let url = format!("http://127.0.0.1:{PORT}");
        let bin = bin.display();
        let own_home = dir.join("home");
        std::fs::create_dir_all(&own_home).unwrap();
        let own_home = own_home.display();
        match self {
            Self::Claude => {
                let config = dir.join("claude-config");
                std::fs::create_dir_all(&config).unwrap();
                (
                    format!(
                        "[{bin}, -p, \"do the task\", --output-format, stream-json, --verbose, --include-partial-messages, --dangerously-skip-permissions]"
                    ),
                    format!(
                        "{{ HOME: \"{own_home}\", ANTHROPIC_BASE_URL: \"{url}\", ANTHROPIC_API_KEY: sk-stub, IS_SANDBOX: \"1\", CLAUDE_CONFIG_DIR: \"{}\", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: \"1\", CLAUDE_CODE_MAX_RETRIES: \"1\" }}",
                        config.display()
                    ),
                )
            }
            Self::Codex => {
                let home = dir.join("codex-home");
                std::fs::create_dir_all(&home).unwrap();
                (
                    format!(
                        "[{bin}, exec, --json, --skip-git-repo-check, --dangerously-bypass-approvals-and-sandbox, -m, gpt-5.5, -c, model_provider=stub, -c, 'model_providers.stub={{name=\"stub\",base_url=\"{url}/v1\",wire_api=\"responses\",env_key=\"STUB_KEY\"}}', \"do the task\"]"
                    ),
                    format!(
                        "{{ HOME: \"{own_home}\", CODEX_HOME: \"{}\", STUB_KEY: sk-stub }}",
                        home.display()
                    ),
                )
            }
            Self::Gemini => {
                let home = dir.join("gemini-home");
                std::fs::create_dir_all(home.join(".gemini")).unwrap();
                std::fs::write(
                    home.join(".gemini/settings.json"),
                    // Two attempts per request: 0.61's default of 10 backs off for minutes.
                    r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"maxAttempts":2}}"#,
                )
                .unwrap();
                (
                    format!(
                        "[{bin}, -p, \"do the task\", --output-format, stream-json, --skip-trust, --yolo]"
                    ),
                    format!(
                        "{{ HOME: \"{}\", GEMINI_API_KEY: stub-key, GOOGLE_GEMINI_BASE_URL: \"{url}\" }}",
                        home.display()
                    ),
                )
            }
        }
    }
}

/// A scripted reply: its steps, and its usage as YAML (or none).
struct Reply {
    steps: Vec<Step>,
    usage: &'static str,
    extra: &'static str,
}

fn reply(steps: Vec<Step>, usage: &'static str) -> Reply {
    Reply {
        steps,
        usage,
        extra: "",
    }
}

/// The script of `replies` in `agent`'s tool names.
fn script(agent: Agent, replies: &[Reply]) -> String {
    let mut yaml = String::from("turns:\n");
    for reply in replies {
        yaml.push_str("  - usage: ");
        yaml.push_str(if reply.usage.is_empty() {
            "{}"
        } else {
            reply.usage
        });
        yaml.push('\n');
        let text: Vec<&str> = reply
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Text(t) => Some(*t),
                _ => None,
            })
            .collect();
        if !text.is_empty() {
            let text = serde_json::to_string(&text.join(" ")).unwrap();
            writeln!(yaml, "    text: {text}").unwrap();
        }
        let tools: Vec<String> = reply.steps.iter().filter_map(|s| agent.tool(s)).collect();
        if !tools.is_empty() {
            writeln!(yaml, "    tools: [{}]", tools.join(", ")).unwrap();
        }
        if !reply.extra.is_empty() {
            writeln!(yaml, "    {}", reply.extra).unwrap();
        }
    }
    yaml
}

/// Processes still carrying `HYOKA_RUN_ID=<run_id>`.
fn marked(run_id: &str) -> Vec<String> {
    let needle = format!("HYOKA_RUN_ID={run_id}");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Runs `agent` on `replies` with `flags` (a run id of its own per `label`); returns the
/// trial's report and timeline.
fn run(
    agent: Agent,
    label: &str,
    replies: &[Reply],
    flags: &[&str],
) -> Option<(Value, Value, Scratch)> {
    let bin = agent.binary()?;
    let scratch = Scratch::new();
    let dir = scratch.path();
    let script_path = dir.join("script.yaml");
    std::fs::write(&script_path, script(agent, replies)).unwrap();
    let (command, env) = agent.eval(&bin, dir);
    let suite = format!(
        "defaults: {{ events: auto, network: none, timeout: 90s, grace: 2s }}\nevals:\n  - id: {name}\n    command: {command}\n    env: {env}\n    services:\n      - name: model\n        command: [{hyoka}, model-stub, serve, --script, \"{script}\", --listen, \"127.0.0.1:{PORT}\", --log, \"{log}\"]\n        ready: {{ tcp: \"127.0.0.1:{PORT}\" }}\n        timeout: 30s\n",
        name = agent.name(),
        hyoka = env!("CARGO_BIN_EXE_hyoka"),
        script = script_path.display(),
        log = dir.join("requests.jsonl").display(),
    );
    let suite_path = dir.join("suite.yaml");
    std::fs::write(&suite_path, suite).unwrap();
    // The test process's pid in the run id: `marked` looks through all of /proc, where
    // another checkout's tests may be running the same agent and label.
    let run_id = format!("{}-{label}-{}", agent.name(), std::process::id());
    let out = scratch.run(
        &[
            "--run-id",
            &run_id,
            "--suite",
            suite_path.to_str().unwrap(),
            "--json",
        ]
        .iter()
        .copied()
        .chain(flags.iter().copied())
        .collect::<Vec<_>>(),
    );
    let report = scratch.report(&run_id, agent.name());
    let timeline_path = scratch
        .reports()
        .join(&run_id)
        .join(agent.name())
        .join("action_timeline.json");
    let timeline: Value = serde_json::from_slice(&std::fs::read(timeline_path).unwrap()).unwrap();
    eprintln!(
        "{} {flags:?}: exit {:?}\nreport: {report:#}\nrequests: {}",
        agent.name(),
        out.status.code(),
        std::fs::read_to_string(dir.join("requests.jsonl")).unwrap_or_default()
    );
    assert_eq!(
        marked(&run_id),
        Vec::<String>::new(),
        "processes outlived the run"
    );
    scratch.assert_no_workspaces();
    Some((report, timeline, scratch))
}

fn counts(report: &Value) -> (u64, u64, u64) {
    let c = &report["counts"];
    (
        c["turns"].as_u64().unwrap(),
        c["actions"].as_u64().unwrap(),
        c["files"].as_u64().unwrap(),
    )
}

/// The paths the timeline's file events name.
fn file_paths(timeline: &Value) -> Vec<String> {
    timeline["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"].as_str().is_some_and(|t| t.starts_with("file_")))
        .filter_map(|e| e["path"].as_str().map(str::to_owned))
        .collect()
}

/// Three replies: a tool call alone, text and a tool call, text alone.
fn three_replies() -> Vec<Reply> {
    vec![
        reply(
            vec![Step::Write("g.txt", "hello\n")],
            "{ input_tokens: 100, output_tokens: 20, cache_read_tokens: 50, cache_write_tokens: 10 }",
        ),
        reply(
            vec![Step::Text("Now a command."), Step::Shell("echo hi > b.txt")],
            "{ input_tokens: 110, output_tokens: 15, cache_read_tokens: 60, cache_write_tokens: 0 }",
        ),
        reply(
            vec![Step::Text("All done.")],
            "{ input_tokens: 120, output_tokens: 5, cache_read_tokens: 70, cache_write_tokens: 0 }",
        ),
    ]
}

fn check_counts_and_usage(agent: Agent) {
    let Some((report, timeline, _scratch)) = run(agent, "counts", &three_replies(), &[]) else {
        return;
    };
    assert_eq!(report["status"], "passed", "{report:#}");
    assert_eq!(report["exit_code"], 0);
    assert_eq!(counts(&report), (3, 2, 2), "turns, actions, files");
    let paths = file_paths(&timeline);
    assert!(
        paths.iter().any(|p| p.ends_with("g.txt")) && paths.iter().any(|p| p.ends_with("b.txt")),
        "{paths:?}"
    );
    // Claude Code writes g.txt.tmp.<pid>.<hex> and renames it: the final name is there.
    assert!(paths.iter().any(|p| p == "g.txt"), "{paths:?}");
    let usage = &report["usage"];
    match agent {
        // Per reply: 100/110/120 uncached input, 50/60/70 cache reads, 10 cache writes,
        // 20/15/5 output.
        Agent::Claude | Agent::Codex => {
            assert_eq!(usage["input_tokens"], 330, "{usage}");
            assert_eq!(usage["cache_read_tokens"], 180, "{usage}");
            assert_eq!(usage["cache_creation_tokens"], 10, "{usage}");
            assert_eq!(usage["output_tokens"], 40, "{usage}");
        }
        // Gemini has no cache writes: the stub reports the 10 as neither input nor cached.
        Agent::Gemini => {
            assert_eq!(usage["input_tokens"], 330, "{usage}");
            assert_eq!(usage["cache_read_tokens"], 180, "{usage}");
            assert_eq!(usage["output_tokens"], 40, "{usage}");
        }
    }
}

#[test]
fn claude_counts_and_usage_match_the_script() {
    check_counts_and_usage(Agent::Claude);
}

#[test]
fn codex_counts_and_usage_match_the_script() {
    check_counts_and_usage(Agent::Codex);
}

#[test]
fn gemini_counts_and_usage_match_the_script() {
    check_counts_and_usage(Agent::Gemini);
}

/// What a limit test expects of the record.
fn stopped(report: &Value, termination: &str) {
    assert_eq!(report["termination"], termination, "{report:#}");
    assert_eq!(report["status"], "failed", "{report:#}");
    assert!(
        !report["exit_code"].is_null() || !report["signal"].is_null(),
        "the agent's end is recorded: {report:#}"
    );
    assert_eq!(report["cleanup"]["survivors"], 0, "{report:#}");
}

fn check_max_turns(agent: Agent) {
    // The second reply is the turn that crosses `--max-turns 1`: its command never runs
    // (the reply streams for 3 s, so its tool call comes well after its first line).
    let mut replies = three_replies();
    replies[1].extra = "pace: 3s";
    let Some((report, _, _s)) = run(agent, "turns", &replies, &["--max-turns", "1"]) else {
        return;
    };
    stopped(&report, "max_turns");
    assert_eq!(report["counts"]["turns"], 2, "{report:#}");
    assert_eq!(
        report["counts"]["files"], 1,
        "b.txt was never written: {report:#}"
    );
    // Codex and Gemini report spending only when their session ends: none here, and the
    // record says the figure is missing. Claude Code's per-message figures are partial, but
    // kept: the first reply's 20 output tokens came with its `message_delta`.
    assert_eq!(report["events"]["usage_partial"], true, "{report:#}");
    match agent {
        Agent::Claude => {
            let usage = &report["usage"];
            assert!(usage["output_tokens"].as_u64() >= Some(20), "{usage}");
            assert!(usage["input_tokens"].as_u64() >= Some(100), "{usage}");
        }
        Agent::Codex | Agent::Gemini => assert!(report["usage"].is_null(), "{report:#}"),
    }
}

fn check_max_actions(agent: Agent) {
    // The second tool call crosses `--max-session-actions 1`; it counts when it starts, so
    // the agent is stopped before the command writes late.txt.
    let replies = vec![
        reply(vec![Step::Write("g.txt", "hello\n")], ""),
        reply(vec![Step::Shell("sleep 5; echo late > late.txt")], ""),
        reply(vec![Step::Text("All done.")], ""),
    ];
    let Some((report, timeline, _s)) =
        run(agent, "actions", &replies, &["--max-session-actions", "1"])
    else {
        return;
    };
    stopped(&report, "max_session_actions");
    assert_eq!(report["counts"]["actions"], 2, "{report:#}");
    let paths = file_paths(&timeline);
    assert!(!paths.iter().any(|p| p.contains("late")), "{paths:?}");
    // Once in a CI run at load ≈ 9, Gemini CLI's first write (g.txt) was not in the
    // workspace at the final scan although its next request, which carries the tool's
    // result, had come: not explained yet (issue 23's notes). The stop itself held.
    let files = report["counts"]["files"].as_u64();
    if agent == Agent::Gemini && files == Some(0) {
        eprintln!("gemini: g.txt missing at the final scan: {paths:?}");
    } else {
        assert_eq!(files, Some(1), "{report:#}");
    }
}

fn check_max_files(agent: Agent) {
    let Some((report, _, _s)) = run(agent, "files", &three_replies(), &["--max-files", "1"]) else {
        return;
    };
    stopped(&report, "max_files");
    assert_eq!(report["counts"]["files"], 2, "{report:#}");
}

fn check_timeout(agent: Agent) {
    // The first reply stalls for a minute before its first frame.
    let mut replies = three_replies();
    replies[0].extra = "stall: { after: 0, for: 60s }";
    let Some((report, _, _s)) = run(agent, "timeout", &replies, &["--timeout", "8s"]) else {
        return;
    };
    stopped(&report, "timeout");
    assert!(
        report["duration_ms"].as_u64().unwrap() < 30_000,
        "{report:#}"
    );
}

fn check_max_tokens(agent: Agent) {
    let Some((report, _, _s)) = run(agent, "tokens", &three_replies(), &["--max-tokens", "300"])
    else {
        return;
    };
    assert_eq!(report["termination"], "max_tokens", "{report:#}");
    let late = report["events"]["limit_late"] == true;
    match agent {
        // Claude Code reports each message's input and cache figures as it starts: the
        // first reply's 160 input tokens plus the second's 170 cross 300 while it runs.
        Agent::Claude => assert!(!late, "{report:#}"),
        // Codex and Gemini CLI report spending only at the end of the session: the limit
        // fires after the work, and the record says so.
        Agent::Codex | Agent::Gemini => {
            assert!(late, "{report:#}");
            assert_eq!(report["counts"]["turns"], 3, "{report:#}");
        }
    }
}

/// Claude Code with `--include-partial-messages`: a reply's output tokens arrive with its
/// `message_delta`, so `--max-tokens` stops the session at the end of the reply that
/// crossed it, not at the `result` after all the work.
fn check_max_tokens_by_output(agent: Agent) {
    let replies = vec![
        reply(
            vec![Step::Write("g.txt", "hello\n")],
            "{ input_tokens: 10, output_tokens: 500 }",
        ),
        Reply {
            extra: "pace: 3s",
            ..reply(
                vec![Step::Text("Now a command."), Step::Shell("echo hi > b.txt")],
                "{ input_tokens: 10, output_tokens: 5 }",
            )
        },
        reply(
            vec![Step::Text("All done.")],
            "{ input_tokens: 10, output_tokens: 5 }",
        ),
    ];
    let Some((report, _, _s)) = run(agent, "output", &replies, &["--max-tokens", "300"]) else {
        return;
    };
    stopped(&report, "max_tokens");
    assert_ne!(report["events"]["limit_late"], true, "{report:#}");
    assert_eq!(report["counts"]["turns"], 1, "{report:#}");
    assert!(
        report["usage"]["output_tokens"].as_u64() >= Some(500),
        "{report:#}"
    );
    assert!(
        report["counts"]["files"].as_u64() <= Some(1),
        "b.txt was never written: {report:#}"
    );
}

fn check_max_cost(agent: Agent) {
    let Some((report, _, _s)) = run(agent, "cost", &three_replies(), &["--max-cost", "0.0001"])
    else {
        return;
    };
    match agent {
        // Claude Code prices the usage itself and says so only in its `result` line.
        Agent::Claude => {
            assert_eq!(report["termination"], "max_cost", "{report:#}");
            assert_eq!(report["events"]["limit_late"], true, "{report:#}");
            assert!(report["usage"]["cost_usd"].as_f64().unwrap() > 0.0001);
        }
        // Codex and Gemini CLI report no cost: `--max-cost` cannot fire.
        Agent::Codex | Agent::Gemini => {
            assert_eq!(report["termination"], "exited", "{report:#}");
            assert!(report["usage"]["cost_usd"].is_null(), "{report:#}");
        }
    }
}

fn check_api_error(agent: Agent, kind: &'static str) {
    // The model API refuses for good (`kind`: overloaded, unavailable, rate_limited): the
    // agent retries, gives up, and the trial is the infrastructure's error, which
    // `--retries` reruns.
    let replies = vec![Reply {
        steps: vec![Step::Text("never")],
        usage: "",
        extra: match kind {
            "overloaded" => "error: { kind: overloaded, times: 100000 }",
            "unavailable" => "error: { kind: unavailable, times: 100000 }",
            _ => "error: { kind: rate_limited, times: 100000 }",
        },
    }];
    let flags = ["--retries", "1"];
    let Some((report, _, _s)) = run(agent, "api", &replies, &flags) else {
        return;
    };
    assert_eq!(report["status"], "error", "{report:#}");
    assert_eq!(report["error_kind"], "infra", "{report:#}");
    assert_eq!(report["attempts"], 2, "{report:#}");
    assert!(
        report["error"]
            .as_str()
            .is_some_and(|e| e.contains("model API")),
        "{report:#}"
    );
    assert_eq!(report["counts"]["turns"], 0, "{report:#}");
}

#[test]
fn claude_limits_fire_at_their_moment() {
    check_max_turns(Agent::Claude);
    check_max_actions(Agent::Claude);
    check_max_files(Agent::Claude);
    check_timeout(Agent::Claude);
    check_max_tokens(Agent::Claude);
    check_max_tokens_by_output(Agent::Claude);
    check_max_cost(Agent::Claude);
}

#[test]
fn codex_limits_fire_at_their_moment() {
    check_max_turns(Agent::Codex);
    check_max_actions(Agent::Codex);
    check_max_files(Agent::Codex);
    check_timeout(Agent::Codex);
    check_max_tokens(Agent::Codex);
    check_max_cost(Agent::Codex);
}

#[test]
fn gemini_limits_fire_at_their_moment() {
    check_max_turns(Agent::Gemini);
    check_max_actions(Agent::Gemini);
    check_max_files(Agent::Gemini);
    check_timeout(Agent::Gemini);
    check_max_tokens(Agent::Gemini);
    check_max_cost(Agent::Gemini);
}

#[test]
fn claude_rate_limited_api_is_an_infrastructure_error() {
    check_api_error(Agent::Claude, "rate_limited");
}

#[test]
fn codex_overloaded_api_is_an_infrastructure_error() {
    check_api_error(Agent::Codex, "overloaded");
}

#[test]
fn gemini_unavailable_api_is_an_infrastructure_error() {
    check_api_error(Agent::Gemini, "unavailable");
}

/// A suite's `model:` entry starts the stub in each eval's own namespace and hands every
/// agent its settings: the same suite without the entry would run against the real APIs.
#[test]
fn a_suite_model_entry_runs_every_agent_against_the_stub() {
    let agents = [Agent::Claude, Agent::Codex, Agent::Gemini];
    let Some(bins) = agents
        .iter()
        .map(|a| a.binary())
        .collect::<Option<Vec<PathBuf>>>()
    else {
        return;
    };
    let scratch = Scratch::new();
    let dir = scratch.path();
    let mut evals = String::new();
    for (agent, bin) in agents.iter().zip(&bins) {
        std::fs::write(
            dir.join(format!("{}.yaml", agent.name())),
            script(*agent, &three_replies()),
        )
        .unwrap();
        let bin = bin.display();
        let command = match agent {
            Agent::Claude => format!(
                "[{bin}, -p, \"do the task\", --output-format, stream-json, --verbose, --dangerously-skip-permissions]"
            ),
            Agent::Codex => format!(
                "[{bin}, exec, --json, --skip-git-repo-check, --dangerously-bypass-approvals-and-sandbox, -m, gpt-5.5, \"do the task\"]"
            ),
            Agent::Gemini => format!(
                "[{bin}, -p, \"do the task\", --output-format, stream-json, --skip-trust, --yolo]"
            ),
        };
        writeln!(
            evals,
            "  - id: {name}\n    command: {command}\n    model: {{ script: {name}.yaml }}",
            name = agent.name()
        )
        .unwrap();
    }
    // As root, Claude Code takes --dangerously-skip-permissions only with IS_SANDBOX=1.
    let suite = format!(
        "defaults: {{ events: auto, network: none, isolate_home: true, timeout: 90s, grace: 2s, env: {{ IS_SANDBOX: \"1\" }} }}\nevals:\n{evals}"
    );
    let suite_path = dir.join("suite.yaml");
    std::fs::write(&suite_path, suite).unwrap();
    let run_id = format!("model-entry-{}", std::process::id());
    let out = scratch.run(&[
        "--run-id",
        &run_id,
        "--suite",
        suite_path.to_str().unwrap(),
        "--workers",
        "3",
    ]);
    for agent in agents {
        let report = scratch.report(&run_id, agent.name());
        let requests = std::fs::read_to_string(
            scratch
                .reports()
                .join(&run_id)
                .join(agent.name())
                .join("model-requests.jsonl"),
        )
        .unwrap_or_default();
        assert_eq!(report["status"], "passed", "{report:#}\n{requests}");
        assert_eq!(counts(&report), (3, 2, 2), "{}", agent.name());
        assert_eq!(report["usage"]["cache_read_tokens"], 180, "{report:#}");
        assert!(requests.lines().count() >= 3, "{requests}");
    }
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(marked(&run_id), Vec::<String>::new());
    scratch.assert_no_workspaces();
}

/// A process the agent's tool starts in a session of its own and leaves behind (a daemon,
/// re-parented to init) dies with the eval: nothing carrying the run's id is left in /proc
/// (checked by `run`), and the teardown killed it.
fn check_daemon_contained(agent: Agent) {
    let replies = vec![
        reply(
            vec![Step::Shell(
                "setsid nohup sleep 300 >/dev/null 2>&1 < /dev/null & echo started > d.txt",
            )],
            "",
        ),
        reply(vec![Step::Text("All done.")], ""),
    ];
    let Some((report, _, _s)) = run(agent, "daemon", &replies, &[]) else {
        return;
    };
    assert_eq!(report["status"], "passed", "{report:#}");
    assert_eq!(report["counts"]["files"], 1, "{report:#}");
    assert_eq!(report["cleanup"]["survivors"], 0, "{report:#}");
    assert!(
        report["cleanup"]["processes_killed"].as_u64() >= Some(1),
        "the daemon outlived the agent and was killed: {report:#}"
    );
}

#[test]
fn a_daemon_an_agent_leaves_dies_with_the_eval() {
    check_daemon_contained(Agent::Claude);
    check_daemon_contained(Agent::Codex);
    check_daemon_contained(Agent::Gemini);
}

/// Issue 25, item 7: Codex inside `hyoka run --sandbox --network none`, its own sandbox off
/// (`--dangerously-bypass-approvals-and-sandbox`: its bubblewrap could not nest in hyoka's,
/// which refuses new namespaces and mounts). The model stub is a suite service; what it and
/// the agent share with the host is named: its script (`sandbox_read`, the host's `/tmp` is
/// hidden behind the eval's private one), its request log (`sandbox_write`), the agent's
/// install (`sandbox_read`, it is in the hidden home). Codex's home is the isolated home.
/// The agent writes its workspace and its private `/tmp` (where a path of the host's `/tmp`
/// lands too), and every other write fails: the host's `/etc`, the caller's real home and
/// the test's own directory are untouched afterwards, and Codex saw each write refused.
#[test]
fn codex_works_inside_the_sandbox_with_its_own_sandbox_off() {
    check_codex_in_sandbox("bypass", "--dangerously-bypass-approvals-and-sandbox");
    check_codex_in_sandbox("full-access", "--sandbox, danger-full-access");
}

/// One run of [`codex_works_inside_the_sandbox_with_its_own_sandbox_off`], Codex's own
/// sandbox turned off by `off` (its flags, as YAML list items).
fn check_codex_in_sandbox(label: &str, off: &str) {
    let Some(bin) = Agent::Codex.binary() else {
        return;
    };
    let support = hyoka_proctrack::SandboxSupport::detect();
    if support.landlock.is_err() || support.mounts.is_err() || support.harden.is_err() {
        eprintln!("skipped: this machine cannot give --sandbox ({support:?})");
        return;
    }
    let agents_dir = PathBuf::from(std::env::var_os("HYOKA_AGENTS_DIR").unwrap());
    let scratch = Scratch::new();
    let dir = scratch.path();
    let tag = format!("hyoka-codex-{label}-{}", std::process::id());
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    let outside = [
        PathBuf::from("/etc").join(&tag),
        home.join(&tag),
        Path::new(env!("CARGO_MANIFEST_DIR")).join(&tag),
    ];
    // A path of the host's `/tmp`: inside, it is the eval's private `/tmp`.
    let host_tmp = dir.join(&tag);
    let probes: Vec<String> = outside
        .iter()
        .chain([&host_tmp])
        .map(|p| p.display().to_string())
        .collect();
    let replies = vec![
        reply(vec![Step::Write("g.txt", "hello\n")], ""),
        reply(
            vec![Step::Shell(
                "echo t > /tmp/t.txt && echo hi > b.txt; for p in $PROBES; do if (echo x > \"$p\") 2>/dev/null; then echo \"wrote $p\"; else echo \"refused $p\"; fi; done",
            )],
            "",
        ),
        reply(vec![Step::Text("All done.")], ""),
    ];
    let shared = dir.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let script_path = shared.join("script.yaml");
    std::fs::write(&script_path, script(Agent::Codex, &replies)).unwrap();
    let log = dir.join("stub-log");
    std::fs::create_dir_all(&log).unwrap();
    let url = format!("http://127.0.0.1:{PORT}");
    let suite = format!(
        "defaults: {{ events: auto, network: none, sandbox: true, isolate_home: true, timeout: 90s, grace: 2s }}\n\
         evals:\n  - id: codex\n    command: [{bin}, exec, --json, --skip-git-repo-check, {off}, -m, gpt-5.5, -c, model_provider=stub, -c, 'model_providers.stub={{name=\"stub\",base_url=\"{url}/v1\",wire_api=\"responses\",env_key=\"STUB_KEY\"}}', \"do the task\"]\n    env: {{ STUB_KEY: sk-stub, PROBES: \"{probes}\" }}\n    sandbox_read: [\"{agents}\", \"{shared}\"]\n    sandbox_write: [\"{log}\"]\n    services:\n      - name: model\n        command: [{hyoka}, model-stub, serve, --script, \"{script}\", --listen, \"127.0.0.1:{PORT}\", --log, \"{log}/requests.jsonl\"]\n        ready: {{ tcp: \"127.0.0.1:{PORT}\" }}\n        timeout: 30s\n",
        bin = bin.display(),
        agents = agents_dir.display(),
        shared = shared.display(),
        log = log.display(),
        hyoka = env!("CARGO_BIN_EXE_hyoka"),
        script = script_path.display(),
        probes = probes.join(" "),
    );
    let suite_path = dir.join("suite.yaml");
    std::fs::write(&suite_path, suite).unwrap();
    let run_id = format!("codex-sandbox-{label}-{}", std::process::id());
    let out = scratch.run(&["--run-id", &run_id, "--suite", suite_path.to_str().unwrap()]);
    let report = scratch.report(&run_id, "codex");
    let requests = std::fs::read_to_string(log.join("requests.jsonl")).unwrap_or_default();
    // Codex's `--json` events carry each command's output.
    let output = std::fs::read_to_string(
        scratch
            .reports()
            .join(&run_id)
            .join("codex")
            .join("output.log"),
    )
    .unwrap_or_default();
    eprintln!(
        "exit {:?}\n{}\nreport: {report:#}\nrequests: {requests}\noutput: {output}",
        out.status.code(),
        stderr(&out)
    );
    assert_eq!(report["status"], "passed", "{report:#}");
    assert_eq!(report["sandbox"]["mount_namespace"], true, "{report:#}");
    assert_eq!(report["sandbox"]["privileges_dropped"], true, "{report:#}");
    assert_eq!(report["sandbox"]["network"], "none", "{report:#}");
    assert_eq!(counts(&report), (3, 2, 2), "turns, actions, files");
    assert_eq!(requests.lines().count(), 3, "{requests}");
    assert!(
        report["counts"]["tmp_files"].as_u64() >= Some(1),
        "/tmp/t.txt went to the private /tmp: {report:#}"
    );
    assert!(
        output.contains(&format!("wrote {}", host_tmp.display())) && !host_tmp.exists(),
        "the write to {} went to the private /tmp: {output}",
        host_tmp.display()
    );
    for path in &outside {
        assert!(!path.exists(), "{} was written", path.display());
        assert!(
            output.contains(&format!("refused {}", path.display())),
            "Codex did not see the write to {} refused: {output}",
            path.display()
        );
    }
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(marked(&run_id), Vec::<String>::new());
    scratch.assert_no_workspaces();
}

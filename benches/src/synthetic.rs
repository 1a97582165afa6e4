//! The records of a synthetic run, shaped like hyoka's (`run.json`, and per trial
//! `report.json`, `action_timeline.json`, `output.log`) with the fields of repeated trials
//! (`tasks`, `metrics`, `epoch`, `attempts`, `usage`, `error_kind`, `not_run`), varied by a
//! seeded generator so that compression meets realistic, not repeated, text.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use serde_json::{Value, json};

const WORDS: &[&str] = &[
    "parse", "config", "the", "test", "fails", "because", "missing", "import", "fixing",
    "function", "returns", "error", "when", "input", "is", "empty", "added", "check", "module",
    "refactor", "handler", "request", "timeout", "retry", "cache", "index", "query", "build",
    "passes", "now", "update", "docs", "struct", "field", "rename", "lint", "warning", "async",
];
const TOOLS: &[&str] = &["Read", "Write", "Edit", "Bash", "Grep", "Glob"];

fn words(rng: &mut fastrand::Rng, n: usize) -> String {
    (0..n)
        .map(|_| WORDS[rng.usize(..WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn at(base_ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(base_ms);
    humantime::format_rfc3339_millis(t).to_string()
}

/// Writes a run of `trials` trials (`epochs` per task) under `dir`: `run.json` and, per
/// trial, `task-NNNNN/epoch-E/{report.json,action_timeline.json,output.log}`. About one
/// trial in three fails (a limit, a timeout or a failing exit), one in fifty is an
/// infrastructure error retried once, one in a hundred never ran.
///
/// # Errors
/// If a file cannot be written.
pub fn synthetic_run(dir: &Path, trials: usize, epochs: usize, seed: u64) -> io::Result<()> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let epochs = epochs.max(1);
    let start = 1_800_000_000_000_u64;
    let mut evals = Vec::with_capacity(trials);
    let mut tasks = Vec::new();
    let mut clock = start;
    for task in 0..trials.div_ceil(epochs) {
        let id = format!("task-{task:05}");
        let (mut passed, mut counted) = (0u64, 0u64);
        for epoch in 1..=epochs {
            if task * epochs + epoch > trials {
                break;
            }
            let roll = rng.u32(..100);
            let (status, termination) = match roll {
                0 => ("not_run", "interrupted"),
                1..=2 => ("error", "spawn_failed"),
                3..=12 => ("failed", "max_turns"),
                13..=20 => ("failed", "timeout"),
                21..=34 => ("failed", "exited"),
                _ => ("passed", "exited"),
            };
            if status == "passed" || status == "failed" {
                counted += 1;
                passed += u64::from(status == "passed");
            }
            let rel = format!("{id}/epoch-{epoch}");
            let trial_dir = dir.join(&rel);
            std::fs::create_dir_all(&trial_dir)?;
            let duration = rng.u64(20_000..600_000);
            let (report, timeline, log) =
                trial(&mut rng, &id, epoch, status, termination, clock, duration);
            write_json(&trial_dir.join("report.json"), &report)?;
            write_json(&trial_dir.join("action_timeline.json"), &timeline)?;
            std::fs::write(trial_dir.join("output.log"), log)?;
            evals.push(json!({
                "eval_id": id, "epoch": epoch, "status": status, "termination": termination,
                "exit_code": if status == "passed" { json!(0) } else { json!(1) },
                "duration_ms": duration, "report": format!("{rel}/report.json"),
                "counts": report["counts"].clone(),
            }));
            clock += duration / 4;
        }
        #[expect(clippy::cast_precision_loss, reason = "counts of trials")]
        let rate = if counted == 0 {
            0.0
        } else {
            passed as f64 / counted as f64
        };
        let (any, all) = (
            f64::from(u8::from(passed > 0)),
            f64::from(u8::from(passed == counted && counted > 0)),
        );
        tasks.push(json!({"eval_id": id, "trials": counted, "passed": passed,
                          "pass_at_k": {"1": rate, counted.to_string(): any},
                          "pass_hat_k": {"1": rate, counted.to_string(): all}}));
    }
    let summary = json!({
        "run_id": "synthetic", "started_at": at(start), "ended_at": at(clock),
        "duration_ms": clock - start, "status": "failed", "evals": evals, "tasks": tasks,
    });
    write_json(&dir.join("run.json"), &summary)
}

fn write_json(path: &Path, value: &Value) -> io::Result<()> {
    std::fs::write(
        path,
        serde_json::to_vec_pretty(value).map_err(io::Error::other)?,
    )
}

fn trial(
    rng: &mut fastrand::Rng,
    id: &str,
    epoch: usize,
    status: &str,
    termination: &str,
    start: u64,
    duration: u64,
) -> (Value, Value, String) {
    let setup = rng.u64(50..400);
    let agent = duration * 7 / 10;
    let build = duration / 10;
    let review = duration - setup - agent - build - 100;
    let turns = rng.u64(3..30);
    let mut events = Vec::new();
    let mut log = String::new();
    let mut t = setup;
    for turn in 0..turns {
        t += agent / (turns + 1);
        events.push(json!({"sequence": events.len(), "t_ms": t, "type": "turn"}));
        let text = words(rng, 12);
        let _ = writeln!(
            log,
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"msg_{id}_{turn}\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}}}"
        );
        for _ in 0..rng.usize(0..3) {
            let tool = TOOLS[rng.usize(..TOOLS.len())];
            let path = format!(
                "src/{}_{}.rs",
                WORDS[rng.usize(..WORDS.len())],
                rng.u32(..50)
            );
            let input = format!(
                "{{\"file_path\":\"{path}\",\"content\":\"{}\"}}",
                words(rng, 8)
            );
            events.push(
                json!({"sequence": events.len(), "t_ms": t + 5, "type": "tool_call",
                               "tool": tool, "path": path, "input": input}),
            );
            if tool == "Write" || tool == "Edit" {
                events.push(json!({"sequence": events.len(), "t_ms": t + 9, "type": "file_changed", "path": path}));
            }
            let _ = writeln!(
                log,
                "{{\"type\":\"user\",\"tool_result\":\"{}\"}}",
                words(rng, 10)
            );
        }
    }
    if termination == "max_turns" {
        events.push(json!({"sequence": events.len(), "t_ms": setup + agent, "type": "limit_reached",
                           "detail": format!("max_turns crossed: turns {turns}, actions 9, files 3, bytes 900")}));
    }
    events.push(json!({"sequence": events.len(), "t_ms": setup + agent, "type": "exit", "detail": "exit code 0"}));
    let input = rng.u64(5_000..80_000);
    let output = rng.u64(500..9_000);
    #[expect(clippy::cast_precision_loss, reason = "token counts")]
    let cost = (input as f64 * 3.0 + output as f64 * 15.0) / 1e6;
    let phase = |name: &str, from: u64, ms: u64, ok: bool| {
        json!({"name": name, "started_at": at(start + from), "duration_ms": ms,
               "status": if ok { "passed" } else { "failed" }, "exit_code": if ok { json!(0) } else { json!(1) }})
    };
    let ok = status == "passed";
    let report = json!({
        "run_id": "synthetic", "eval_id": id, "epoch": epoch,
        "command": ["claude", "-p", format!("fix {id}"), "--output-format", "stream-json"],
        "workspace": format!("/tmp/hyoka-synthetic-{id}-{epoch}"),
        "started_at": at(start), "ended_at": at(start + duration), "duration_ms": duration,
        "status": status, "termination": termination,
        "error_kind": if status == "error" { json!("infra") } else { Value::Null },
        "attempts": if status == "error" { 2 } else { 1 },
        "exit_code": if ok { json!(0) } else { json!(1) }, "signal": null,
        "limits": {"max_turns": 25, "max_files": 50, "max_output_size": 1_048_576,
                   "max_session_actions": 50, "timeout_ms": 600_000, "grace_ms": 5000},
        "counts": {"turns": turns, "actions": events.len(), "files": 3, "output_bytes": 900},
        "cleanup": {"processes_seen": rng.u64(1..12), "processes_killed": rng.u64(0..3), "survivors": 0,
                    "workspace_removed": true, "workspace_kept_at": null,
                    "layers": ["cgroup", "shim", "session", "marker"]},
        "usage": {"input_tokens": input, "output_tokens": output, "cache_read_tokens": input / 2,
                  "cache_creation_tokens": input / 10, "cost_usd": cost},
        "phases": [
            phase("setup", 0, setup, true),
            phase("agent", setup, agent, ok || termination == "exited"),
            phase("build", setup + agent, build, true),
            phase("review", setup + agent + build, review, ok),
            phase("cleanup", duration - 100, 100, true),
        ],
        "review": {"pass": ok, "score": if ok { 1.0 } else { 0.25 }, "notes": words(rng, 20)},
    });
    let timeline = json!({"run_id": "synthetic", "eval_id": id, "events": events,
                          "summary": {"turns": turns, "events": events.len()}});
    (report, timeline, log)
}

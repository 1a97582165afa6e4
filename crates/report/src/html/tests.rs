//! Unit tests of the page generator: the figures, the comparison, reading hostile records,
//! and the page's safety (escaping, no external reference, scripts allowed by hash only).

use std::fmt::Write as _;
use std::io::Read;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use base64::Engine;
use serde_json::{Value, json};

use super::load::{Root, RunRecords, auto_tail};
use super::{HtmlOptions, default_page_path, render_page, write_html_report};
use crate::ReportError;

/// A scratch directory holding runs.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        Self {
            dir: tempfile::Builder::new()
                .prefix("html-test-")
                .tempdir()
                .unwrap(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn json(&self, rel: &str, value: &Value) -> PathBuf {
        self.write(rel, serde_json::to_vec_pretty(value).unwrap())
    }

    /// A run `run` whose trials are `(eval id, status, termination)`, each with a report,
    /// a timeline of one turn and one tool call, and an output log.
    fn run(&self, run: &str, trials: &[(&str, &str, &str)]) -> PathBuf {
        let evals: Vec<Value> = trials
            .iter()
            .map(|(id, status, termination)| {
                self.json(&format!("{run}/{id}/report.json"), &report(id, status, termination));
                self.json(
                    &format!("{run}/{id}/action_timeline.json"),
                    &json!({"events": [
                        {"sequence": 0, "t_ms": 100, "type": "turn"},
                        {"sequence": 1, "t_ms": 150, "type": "tool_call", "tool": "Write", "path": "a.txt", "input": "{}"}
                    ], "summary": {"events": 2, "tools": {"Write": 1}}}),
                );
                self.write(&format!("{run}/{id}/output.log"), format!("log of {id}\n"));
                json!({"eval_id": id, "status": status, "termination": termination,
                       "duration_ms": 1000, "report": format!("{id}/report.json")})
            })
            .collect();
        self.json(
            &format!("{run}/run.json"),
            &json!({"run_id": run, "started_at": "2027-01-15T08:00:00.000Z",
                    "ended_at": "2027-01-15T08:00:02.000Z", "duration_ms": 2000,
                    "status": "failed", "evals": evals}),
        )
        .parent()
        .unwrap()
        .to_owned()
    }
}

fn report(id: &str, status: &str, termination: &str) -> Value {
    json!({
        "run_id": "r", "eval_id": id, "command": ["agent", "--do it"], "workspace": "/tmp/ws",
        "started_at": "2027-01-15T08:00:00.000Z", "ended_at": "2027-01-15T08:00:01.000Z",
        "duration_ms": 1000, "status": status, "termination": termination,
        "exit_code": 0, "signal": null,
        "limits": {"max_turns": 25}, "counts": {"turns": 1, "actions": 1, "files": 1, "output_bytes": 3},
        "cleanup": {"processes_seen": 2, "processes_killed": 1, "survivors": 0,
                    "workspace_removed": true, "workspace_kept_at": null,
                    "layers": ["cgroup", "shim", "session", "marker"]},
        "phases": [
            {"name": "setup", "started_at": "2027-01-15T08:00:00.000Z", "duration_ms": 10, "status": "passed", "exit_code": null},
            {"name": "agent", "started_at": "2027-01-15T08:00:00.010Z", "duration_ms": 900, "status": status, "exit_code": 0},
            {"name": "cleanup", "started_at": "2027-01-15T08:00:00.950Z", "duration_ms": 50, "status": "passed", "exit_code": null}
        ]
    })
}

fn load(input: &Path) -> RunRecords {
    RunRecords::load(input, &HtmlOptions::default()).unwrap()
}

/// A rendered page and the data inside it, inflated as the browser would.
struct Page {
    html: String,
    index: Value,
    details: Vec<Value>,
}

fn page(runs: &[&RunRecords]) -> Page {
    let html = render_page(runs, SystemTime::UNIX_EPOCH).unwrap();
    let index = inflate(&html, "hyoka-index");
    let mut details = Vec::new();
    for n in 0.. {
        if !html.contains(&format!("id=\"hyoka-c{n}\"")) {
            break;
        }
        match inflate(&html, &format!("hyoka-c{n}")) {
            Value::Array(list) => details.extend(list),
            other => panic!("a chunk is not a list: {other}"),
        }
    }
    Page {
        html,
        index,
        details,
    }
}

fn inflate(html: &str, id: &str) -> Value {
    let open = format!("<script type=\"application/octet-stream\" id=\"{id}\">");
    let start = html.find(&open).unwrap_or_else(|| panic!("no block {id}")) + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&html[start..end])
        .unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Asserts that one task of the page's first run has these figures.
#[track_caller]
fn check(page: &Page, task: usize, expected: &Value) {
    let row = &page.index["runs"][0]["tasks"][task];
    for (key, want) in expected.as_object().unwrap() {
        assert_eq!(&row[key], want, "task {task} field {key}: {row}");
    }
}

#[test]
fn pass_at_k_is_the_unbiased_estimator_and_pass_hat_k_the_chance_all_pass() {
    use hyoka_eval::{pass_at_k, pass_hat_k};
    let close = |a: Option<f64>, b: f64| {
        let a = a.expect("defined");
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    };
    close(pass_at_k(3, 1, 1), 1.0 / 3.0);
    close(pass_at_k(3, 1, 3), 1.0);
    close(pass_hat_k(3, 1, 3), 0.0);
    close(pass_at_k(5, 2, 2), 0.7);
    close(pass_hat_k(5, 2, 2), 0.1);
    close(pass_at_k(4, 0, 4), 0.0);
    close(pass_hat_k(4, 4, 4), 1.0);
    close(pass_at_k(1000, 1, 1), 0.001);
    assert_eq!(
        pass_at_k(3, 1, 4),
        None,
        "k beyond the trials is not defined"
    );
}

#[test]
fn a_run_of_today_gives_one_task_per_eval_with_figures_the_page_computes() {
    let s = Scratch::new();
    let dir = s.run(
        "r1",
        &[("ok", "passed", "exited"), ("bad", "failed", "max_turns")],
    );
    let run = load(&dir);
    let p = page(&[&run]);
    assert_eq!(p.index["kind"], "run");
    check(
        &p,
        0,
        &json!({"id": "ok", "status": "passed", "trials": 1, "counted": 1, "passed": 1,
                "pass_at_k": {"1": 1.0}, "from_run": false, "terminations": ["exited"],
                "time_ms": 1000, "tokens": null}),
    );
    check(
        &p,
        1,
        &json!({"id": "bad", "status": "failed", "pass_at_k": {"1": 0.0}, "pass_hat_k": {"1": 0.0},
                "terminations": ["max_turns"]}),
    );
    let trial = &p.details[1];
    assert_eq!(trial["task"], "bad");
    assert_eq!(trial["termination"], "max_turns");
    assert_eq!(trial["command"], "agent '--do it'");
    assert_eq!(trial["phases"][1]["name"], "agent");
    assert_eq!(trial["phases"][1]["start_ms"], 10);
    assert_eq!(trial["phases"][2]["start_ms"], 950);
    assert_eq!(
        trial["events"],
        json!([[100, "t"], [50, "c", "Write", "a.txt", "{}"]])
    );
    assert_eq!(p.index["input_cap"], 240);
    assert_eq!(trial["output"]["text"], "log of bad\n");
    assert_eq!(trial["cleanup"]["processes_killed"], 1);
    assert!(
        p.html.contains("cgroup, shim, session, marker"),
        "layers in the header"
    );
    assert!(p.html.contains("2 in 2 tasks: 1 passed, 1 failed"));
}

#[test]
fn the_fields_of_trials_and_usage_show_when_a_run_has_them() {
    let s = Scratch::new();
    let mut evals = Vec::new();
    for (epoch, status) in [
        (1, "passed"),
        (2, "failed"),
        (3, "failed"),
        (4, "error"),
        (5, "not_run"),
    ] {
        let rel = format!("t/epoch-{epoch}/report.json");
        let mut r = report("t", status, "exited");
        r["epoch"] = json!(epoch);
        r["attempts"] = json!(if status == "error" { 2 } else { 1 });
        r["usage"] = json!({"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 5, "cost_usd": 0.25});
        r["review"] = json!({"pass": status == "passed", "score": 0.5, "notes": "fine"});
        if status == "error" {
            r["error_kind"] = json!("infra");
        }
        r["events"] = if epoch == 2 {
            json!({"requested": "auto", "format": "codex-json", "seen": 0, "unknown_lines": 3,
                   "malformed_lines": 1, "none_seen": true})
        } else {
            json!({"requested": "stream-json", "format": "stream-json", "seen": 12,
                   "unknown_lines": 0, "malformed_lines": 0})
        };
        s.json(&format!("run/{rel}"), &r);
        evals.push(json!({"eval_id": "t", "epoch": epoch, "status": status, "report": rel}));
    }
    s.json(
        "run/run.json",
        &json!({"run_id": "epochs", "status": "failed", "evals": evals,
                "suite": {"path": "suites/s.yaml"}, "shard": {"index": 2, "count": 3},
                "hyoka_version": "0.2.0",
                "tasks": [{"eval_id": "t", "trials": 3, "passed": 1,
                           "pass_at_k": {"1": 0.333, "3": 1.0}, "pass_hat_k": {"1": 0.333, "3": 0.0},
                           "mean_score": 0.5}],
                "metrics": {"pass_at_k": {"1": 0.333, "3": 1.0}, "pass_hat_k": {"1": 0.333, "3": 0.0}}}),
    );
    let run = load(&s.path("run"));
    let p = page(&[&run]);
    check(
        &p,
        0,
        &json!({"status": "partial", "trials": 5, "counted": 3, "passed": 1, "errors": 1, "not_run": 1,
                "pass_at_k": {"1": 0.333, "3": 1.0}, "pass_hat_k": {"1": 0.333, "3": 0.0},
                "mean_score": 0.5, "tokens": 625, "cost_usd": 1.25, "from_run": true}),
    );
    let rows = &p.index["runs"][0]["tasks"][0]["rows"];
    assert_eq!(rows[3]["label"], "4");
    assert_eq!(rows[3]["error_kind"], "infra");
    assert_eq!(rows[3]["attempts"], 2);
    assert_eq!(p.details[3]["usage"]["cache_read_tokens"], 5);
    let events = |i: usize| {
        p.details[i]["counts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|pair| pair[0] == "events")
            .map(|pair| pair[1].clone())
    };
    assert_eq!(
        events(1),
        Some(json!(
            "none seen (codex-json reader: 3 unknown, 1 malformed line(s))"
        ))
    );
    assert_eq!(
        events(0),
        Some(json!("12 seen (stream-json), 0 unknown, 0 malformed"))
    );
    assert!(p.html.contains("suites/s.yaml"), "the suite");
    assert!(p.html.contains("<dd>2/3</dd>"), "the shard");
    assert!(p.html.contains("<dd>0.2.0</dd>"), "the version");
    assert!(
        p.html
            .contains("pass@1 0.333, pass@3 1.000, pass^1 0.333, pass^3 0.000")
    );
    assert!(
        p.html
            .contains("5 in 1 task: 1 passed, 2 failed, 1 error, 1 not run")
    );
    assert!(
        // Every token counted, cache reads too, as `run.json` and `--max-tokens` count them.
        p.html.contains("<dd>625</dd>") && p.html.contains("<dd>$1.2500</dd>"),
        "usage totals"
    );
}

#[test]
fn a_comparison_names_the_tasks_that_flipped_and_those_only_one_run_ran() {
    let s = Scratch::new();
    let a = load(&s.run(
        "a",
        &[
            ("same", "passed", "exited"),
            ("fixed", "failed", "timeout"),
            ("broke", "passed", "exited"),
            ("gone", "passed", "exited"),
        ],
    ));
    let b = load(&s.run(
        "b",
        &[
            ("same", "passed", "exited"),
            ("fixed", "passed", "exited"),
            ("broke", "failed", "max_files"),
            ("new", "failed", "exited"),
        ],
    ));
    let p = page(&[&a, &b]);
    assert_eq!(p.index["kind"], "compare");
    let rows = p.index["compare"].as_array().unwrap();
    let by_id = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(by_id("same")["flip"], Value::Null);
    assert_eq!(by_id("fixed")["flip"], "fixed");
    assert_eq!(by_id("fixed")["delta"], 1.0);
    assert_eq!(by_id("broke")["flip"], "broken");
    assert_eq!(by_id("gone")["b"], Value::Null);
    assert_eq!(by_id("new")["a"], Value::Null);
    assert_eq!(rows.len(), 5);
    assert!(
        p.html.contains("2 of 5 tasks flipped"),
        "{}",
        &p.html[..2000]
    );
    // Trials of both runs are numbered across the page.
    assert_eq!(p.details.len(), 8);
    assert_eq!(p.details[4]["run"], "B");
    assert_eq!(default_page_path(&[&a, &b]), s.path("a/compare.html"));
}

#[test]
fn hostile_text_is_escaped_or_only_ever_data() {
    let s = Scratch::new();
    let evil = "</script><script>alert(1)</script><img src=x onerror=alert(2)>";
    let dir = s.run("r", &[(evil, "failed", "exited")]);
    s.write(
        &format!("r/{evil}/output.log"),
        "\x1b[31m</pre><script>alert(3)</script>\x1b[0m\n",
    );
    let mut run: Value =
        serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    run["run_id"] = json!(evil);
    run["suite"] = json!("<b onmouseover=alert(4)>suite</b>");
    s.json("r/run.json", &run);
    let p = page(&[&load(&dir)]);
    for markup in ["<script>alert", "<img", "<b onmouseover"] {
        assert!(
            !p.html.contains(markup),
            "hostile markup reached the page: {markup}"
        );
    }
    assert!(
        p.html
            .contains("&lt;b onmouseover=alert(4)&gt;suite&lt;/b&gt;"),
        "the suite shows, escaped"
    );
    assert!(
        p.html.contains("&lt;/script&gt;&lt;script&gt;alert"),
        "the run id shows, escaped"
    );
    assert_eq!(
        p.index["runs"][0]["tasks"][0]["id"], evil,
        "the id is data, intact"
    );
    assert_eq!(
        p.details[0]["output"]["text"], "</pre><script>alert(3)</script>\n",
        "escapes stripped"
    );
}

#[test]
fn the_page_references_nothing_outside_itself_and_runs_only_its_own_scripts() {
    let s = Scratch::new();
    let p = page(&[&load(&s.run("r", &[("a", "passed", "exited")]))]);
    for needle in [
        "http://",
        "https://",
        "//cdn",
        "@import",
        "src=",
        "<link rel=\"stylesheet",
    ] {
        assert!(!p.html.contains(needle), "the page contains {needle}");
    }
    for (i, _) in p.html.match_indices("url(") {
        assert!(p.html[i..].starts_with("url(#"), "an external url( at {i}");
    }
    assert_eq!(
        p.html.matches("href=").count(),
        2,
        "the icon (data:) and the skip link only"
    );
    // Every executable script is allowed by its hash, and the policy allows nothing else.
    let csp_at = p.html.find("Content-Security-Policy\" content=\"").unwrap();
    let csp = &p.html[csp_at..p.html[csp_at..].find("\">").unwrap() + csp_at];
    assert!(csp.contains("default-src &#39;none&#39;"), "{csp}");
    let mut scripts = 0;
    for (i, _) in p.html.match_indices("<script>") {
        let body = &p.html[i + 8..i + 8 + p.html[i + 8..].find("</script>").unwrap()];
        let digest = base64::engine::general_purpose::STANDARD
            .encode(<sha2::Sha256 as sha2::Digest>::digest(body));
        assert!(csp.contains(&digest), "a script outside the policy");
        scripts += 1;
    }
    assert_eq!(scripts, 2);
}

#[test]
fn records_outside_the_run_directory_are_refused_however_they_are_named() {
    let s = Scratch::new();
    s.json("secret/report.json", &report("secret", "passed", "exited"));
    s.write("secret/output.log", "SECRET\n");
    s.json(
        "r/linked-dir-target/report.json",
        &report("x", "passed", "exited"),
    );
    symlink(s.path("secret"), s.path("r/escape")).unwrap();
    std::fs::create_dir_all(s.path("r/inside")).unwrap();
    s.json(
        "r/inside/report.json",
        &report("inside", "passed", "exited"),
    );
    symlink(s.path("secret/output.log"), s.path("r/inside/output.log")).unwrap();
    let absolute = s.path("secret/report.json").display().to_string();
    s.json(
        "r/run.json",
        &json!({"run_id": "r", "evals": [
            {"eval_id": "dotdot", "report": "../secret/report.json"},
            {"eval_id": "absolute", "report": absolute},
            {"eval_id": "link", "report": "escape/report.json"},
            {"eval_id": "inside", "report": "inside/report.json"},
            {"eval_id": "none", "report": ""},
            {"eval_id": "missing", "report": "missing/report.json"}
        ]}),
    );
    let run = load(&s.path("r"));
    let problems: Vec<String> = run.trials.iter().map(|t| t.problems.join("; ")).collect();
    let outside = "report.json: refused: it leads outside the run directory";
    assert_eq!(problems[0], outside);
    assert_eq!(problems[1], outside);
    assert_eq!(problems[2], outside);
    assert_eq!(
        problems[3],
        "action_timeline.json: not found; output.log: refused: it leads outside the run directory"
    );
    assert_eq!(problems[4], "run.json names no report.json");
    assert_eq!(problems[5], "report.json: not found");
    assert!(
        run.trials
            .iter()
            .all(|t| t.report.is_none() || t.line.eval_id == "inside")
    );
    let p = page(&[&run]);
    assert!(
        !serde_json::to_string(&p.details)
            .unwrap()
            .contains("SECRET")
    );
    assert_eq!(p.index["runs"][0]["tasks"][0]["rows"][0]["problems"], true);
}

#[test]
fn a_merged_run_json_may_name_records_by_absolute_paths_inside_its_directory() {
    let s = Scratch::new();
    s.run("reports/shard-1/r", &[("a", "passed", "exited")]);
    s.run("reports/shard-2/r", &[("b", "failed", "exited")]);
    let abs = |shard: &str, id: &str| {
        s.path(&format!("reports/{shard}/r/{id}/report.json"))
            .display()
            .to_string()
    };
    let merged = s.json(
        "reports/merged.json",
        &json!({"run_id": "r", "evals": [
            {"eval_id": "a", "status": "passed", "report": abs("shard-1", "a")},
            {"eval_id": "b", "status": "failed", "report": "shard-2/r/b/report.json"}
        ]}),
    );
    let run = load(&merged);
    assert!(
        run.trials
            .iter()
            .all(|t| t.problems.is_empty() && t.report.is_some())
    );
    assert_eq!(run.default_page(), s.path("reports/merged.html"));
    assert_eq!(
        load(&s.path("reports/shard-1/r/run.json")).default_page(),
        s.path("reports/shard-1/r/report.html")
    );
    assert_eq!(
        load(&s.path("reports/shard-1/r")).default_page(),
        s.path("reports/shard-1/r/report.html")
    );
}

#[test]
fn fifos_oversized_and_invalid_records_are_reported_not_waited_on_or_read() {
    let s = Scratch::new();
    let dir = s.run("r", &[("a", "passed", "exited"), ("b", "passed", "exited")]);
    std::fs::remove_file(dir.join("a/output.log")).unwrap();
    let fifo = std::ffi::CString::new(dir.join("a/output.log").display().to_string()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    std::fs::File::create(dir.join("a/report.json"))
        .unwrap()
        .set_len(super::load::REPORT_CAP + 1)
        .unwrap();
    s.write("r/b/action_timeline.json", "{not json");
    let run = load(&dir);
    assert_eq!(
        run.trials[0].problems,
        [
            format!(
                "report.json: refused: larger than {} bytes",
                super::load::REPORT_CAP
            ),
            "output.log: refused: not a regular file".to_owned()
        ]
    );
    assert!(run.trials[1].problems[0].starts_with("action_timeline.json: not valid: "));
    // The trial still shows, from its line in run.json.
    let p = page(&[&run]);
    check(&p, 0, &json!({"id": "a", "status": "passed"}));
}

#[test]
fn a_log_tail_starts_at_a_line_and_carries_no_terminal_escapes() {
    let s = Scratch::new();
    let long = (0..100).fold(String::new(), |mut text, i| {
        let _ = writeln!(text, "\x1b[1mline {i}\x1b[0m");
        text
    });
    let path = s.write("r/output.log", &long);
    let root = Root::open(&s.path("r")).unwrap();
    let tail = root.tail(&path, 40).unwrap();
    assert_eq!(tail.text, "line 98\nline 99\n");
    assert!(tail.cut);
    assert_eq!(tail.size, long.len() as u64);
    let whole = root.tail(&path, 1 << 20).unwrap();
    assert!(!whole.cut);
    assert!(whole.text.starts_with("line 0\n"));
    assert_eq!(auto_tail(1), 16 << 10);
    assert_eq!(auto_tail(10_000), 512);
    assert_eq!(auto_tail(1000), 4194);
}

#[test]
fn bad_inputs_are_errors_that_name_them() {
    let s = Scratch::new();
    let dir = s.run("r", &[("a", "passed", "exited")]);
    let options = HtmlOptions::default();
    let write = |inputs: &[PathBuf], out: Option<&Path>| {
        write_html_report(inputs, out, &options, SystemTime::UNIX_EPOCH)
    };
    let err = write(&[], None).unwrap_err();
    assert!(matches!(err, ReportError::Inputs { count: 0 }) && err.is_bad_input());
    let three = [dir.clone(), dir.clone(), dir.clone()];
    assert!(matches!(
        write(&three, None),
        Err(ReportError::Inputs { count: 3 })
    ));
    let err = write(&[s.path("nothing")], None).unwrap_err();
    assert!(
        matches!(err, ReportError::NotARun { .. }) && err.is_bad_input(),
        "{err}"
    );
    assert!(err.to_string().contains("nothing"), "{err}");
    s.write("bad/run.json", "[1, 2");
    let err = write(&[s.path("bad")], None).unwrap_err();
    assert!(matches!(err, ReportError::Parse { .. }), "{err}");
    let err = write(
        std::slice::from_ref(&dir),
        Some(&s.path("no/such/dir/p.html")),
    )
    .unwrap_err();
    assert!(
        matches!(err, ReportError::Output { .. }) && err.is_bad_input(),
        "{err}"
    );
    let err = write(std::slice::from_ref(&dir), Some(&dir)).unwrap_err();
    assert!(matches!(err, ReportError::Output { .. }), "{err}");
    assert!(
        !dir.join("report.html").exists(),
        "nothing written on bad input"
    );
    let written = write(std::slice::from_ref(&dir), None).unwrap();
    assert_eq!(written, dir.join("report.html"));
    assert!(
        std::fs::read_to_string(&written)
            .unwrap()
            .starts_with("<!doctype html>")
    );
}

#[test]
fn a_hostile_report_cannot_bloat_the_page() {
    let s = Scratch::new();
    let dir = s.run("r", &[("a", "passed", "exited")]);
    let mut r = report("a", "passed", "exited");
    let phase = r["phases"][0].clone();
    r["phases"] = Value::Array(vec![phase; 5000]);
    r["counts"] = (0..5000).map(|i| (format!("k{i}"), json!(i))).collect();
    r["review"] = json!({"pass": true, "notes": "x".repeat(1 << 20)});
    s.json("r/a/report.json", &r);
    let p = page(&[&load(&dir)]);
    let trial = &p.details[0];
    assert_eq!(trial["phases"].as_array().unwrap().len(), 64);
    assert_eq!(trial["counts"].as_array().unwrap().len(), 64);
    assert!(trial["review"]["notes"].as_str().unwrap().len() <= 2048 + 3);
    assert!(
        p.html.len() < 200 << 10,
        "the page stays small: {}",
        p.html.len()
    );
}

//! `hyoka report html`: the page of a real suite run of the simulated agent (and of two runs
//! compared) is one file with no external reference, and it works in a real browser.
//!
//! The browser part drives headless Chromium through its command line
//! (`hyoka_benches::Chromium`): the page's `#selftest` mode sorts and filters the task
//! table, opens a task and a trial's timeline (and, compared, the flipped tasks) as a
//! person would, and writes what it saw, with every error, CSP violation and
//! `console.error` it met, into the document; `--dump-dom` with a virtual time budget
//! returns that document. This needs no protocol client, driver binary or port, and the
//! helper kills Chromium's process group and every process carrying its marker, proving
//! through `/proc` that none survived. Screenshots of both pages land under
//! `target/artifacts/report-html/` for CI to keep. Without Chromium the browser part skips
//! with a message; `.ci/run` installs it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyoka_benches::{Chromium, file_url};
use serde_json::Value;

use crate::support::{Scratch, hyoka, hyoka_path, stderr};

/// A suite of the simulated agent: a reviewed pass, a limit crossed, and `flip`, which
/// fails in run A and passes in run B.
fn suite(s: &Scratch, name: &str, flip_exit: u8) -> String {
    let yaml = format!(
        r#"
defaults: {{ timeout: 30s, grace: 1s, events: stream-json }}
evals:
  - id: reviewed
    command: [{hyoka}, sim-agent, --files, "2", --turns, "3"]
    build: {{ command: [sh, -c, "echo building; ls src"], timeout: 10s }}
    review: {{ command: [{hyoka}, sim-agent, --role, review], timeout: 10s }}
  - id: limited
    command: [{hyoka}, sim-agent, --turns, "50", --files, "0", --turn-delay, 10ms]
    limits: {{ max_turns: 3 }}
  - id: flip
    command: [sh, -c, "echo 'working on <flip> & friends'; exit {flip_exit}"]
"#,
        hyoka = hyoka_path()
    );
    let path = s.path().join(name);
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

fn run_suite(s: &Scratch, run_id: &str, flip_exit: u8) -> PathBuf {
    let file = suite(s, &format!("{run_id}.yaml"), flip_exit);
    let out = s
        .hyoka("run")
        .args(["--run-id", run_id, "--suite", &file])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    s.reports().join(run_id)
}

/// Writes a page with `hyoka report html ARGS`, checks what it printed, returns the page.
fn report_html(args: &[&Path], expected: &Path) -> String {
    let out = hyoka()
        .args(["report", "html"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        expected.display().to_string()
    );
    let html = std::fs::read_to_string(expected).unwrap();
    for reference in [
        "http://",
        "https://",
        "src=",
        "@import",
        "<link rel=\"stylesheet",
    ] {
        assert!(
            !html.contains(reference),
            "{expected:?} refers outside: {reference}"
        );
    }
    html
}

/// The artifacts directory under `target/` (from this test binary's own path).
fn artifacts() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().to_owned();
    let dir = target.join("artifacts/report-html");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What the page's self-check wrote, from the DOM Chromium dumped.
fn selftest(dom: &str) -> Value {
    let open = dom
        .find("<pre id=\"hyoka-selftest\"")
        .expect("the self-check's block");
    let start = open + dom[open..].find('>').unwrap() + 1;
    let end = start + dom[start..].find("</pre>").unwrap();
    let text = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("self-check {text:?}: {e}"))
}

#[track_caller]
fn check(result: &Value, expected: &Value) {
    assert_eq!(
        result["errors"],
        Value::Array(Vec::new()),
        "errors: {result}"
    );
    for (key, want) in expected.as_object().unwrap() {
        assert_eq!(&result["checks"][key], want, "check {key}: {result}");
    }
}

#[test]
fn the_page_of_a_suite_run_and_of_a_comparison_render_in_a_browser() {
    let s = Scratch::new();
    let a = run_suite(&s, "a", 1);
    let b = run_suite(&s, "b", 0);
    let run_page = a.join("report.html");
    let html = report_html(&[&a], &run_page);
    assert!(html.contains("hyoka: run <span class=\"mono\">a</span>"));
    assert!(
        html.contains("3 in 3 tasks: 1 passed, 2 failed"),
        "the header"
    );
    let compare_page = s.path().join("compare.html");
    let out = hyoka()
        .args(["report", "html", "-o"])
        .arg(&compare_page)
        .arg(&a)
        .arg(b.join("run.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let compared = std::fs::read_to_string(&compare_page).unwrap();
    assert!(
        compared.contains("1 of 3 tasks flipped"),
        "the flipped tasks"
    );
    s.assert_no_workspaces();

    let Some(chromium) = Chromium::find() else {
        eprintln!(
            "skipped: the browser part needs headless Chromium (apt-get install chromium, or set HYOKA_CHROMIUM)"
        );
        return;
    };
    let budget = Duration::from_secs(15);
    let dom = chromium
        .dump_dom(&file_url(&run_page, "#selftest"), budget)
        .unwrap();
    check(
        &selftest(&dom.stdout),
        &serde_json::json!({
            "kind": "run", "task_rows": 3, "columns": 11, "sorted_ascending": true,
            "sorted_descending": true, "filter_status": "failed", "filtered_rows": 2,
            "detail_open": true, "trial_rows": 1, "timeline": true, "log": true, "cleanup": true,
        }),
    );
    let result = selftest(&dom.stdout);
    assert!(
        result["checks"]["phase_bars"].as_u64().unwrap() >= 3,
        "{result}"
    );
    assert!(result["checks"]["marks"].as_u64().unwrap() >= 1, "{result}");
    // The DOM itself: the table's rows name the evals, a timeline is drawn.
    for id in ["reviewed", "limited", "flip"] {
        assert!(
            dom.stdout.contains(&format!(
                "data-i=\"{}\">{id}</button>",
                match id {
                    "reviewed" => 0,
                    "limited" => 1,
                    _ => 2,
                }
            )),
            "the table names {id}"
        );
    }
    assert!(dom.stdout.contains("<svg class=\"timeline\""), "a timeline");
    assert!(dom.stdout.contains("data-interactive-ms=\""), "interactive");

    let dom = chromium
        .dump_dom(&file_url(&compare_page, "#selftest"), budget)
        .unwrap();
    check(
        &selftest(&dom.stdout),
        &serde_json::json!({
            "kind": "compare", "task_rows": 3, "compare_rows": 3, "flipped": 1,
            "flipped_rows": 1, "both_sides": 2, "timeline": true,
        }),
    );
    assert!(
        dom.stdout.contains("▲ fixed"),
        "the flip is named in words, not colour"
    );

    let shots = artifacts();
    for (page, name) in [(&run_page, "run.png"), (&compare_page, "compare.png")] {
        let shot = shots.join(name);
        chromium
            .screenshot(&file_url(page, "#selftest"), &shot, (1280, 2000), budget)
            .unwrap();
        assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
        eprintln!("screenshot: {}", shot.display());
    }
}

#[test]
fn bad_inputs_of_report_html_exit_2_with_one_error_line() {
    let s = Scratch::new();
    for args in [vec![s.path().join("absent")], vec![s.path().to_owned()]] {
        let out = hyoka()
            .args(["report", "html"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with("error: ") && err.lines().count() == 1,
            "{err}"
        );
    }
    std::fs::write(s.path().join("run.json"), "{\"evals\": 7}").unwrap();
    let out = hyoka()
        .args(["report", "html"])
        .arg(s.path().join("run.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is not a run.json"),
        "{}",
        stderr(&out)
    );
    let out = hyoka()
        .args(["report", "html", "a", "b", "c"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "three runs are refused");
    assert!(!s.path().join("report.html").exists());
}

/// See: issue 27, item 5. The page shows what people open it for: per trial the transcript
/// from the events (turns, tool calls with their inputs, results, token use), the files the
/// agent changed with their diffs from the starter (`changes.json`, recorded by the eval),
/// and the service logs; Chromium renders them.
#[test]
fn a_trial_shows_its_transcript_its_diffs_and_its_service_logs() {
    let s = Scratch::new();
    let starter = s.path().join("starter");
    std::fs::create_dir_all(starter.join("src")).unwrap();
    std::fs::write(starter.join("src/lib.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(starter.join("gone.txt"), "bye\n").unwrap();
    let agent = s.path().join("agent.sh");
    std::fs::write(
        &agent,
        r#"#!/bin/sh
e() { echo "$1" >> "$HYOKA_EVENTS"; }
e '{"type":"turn"}'
e '{"type":"tool_call","name":"edit","path":"src/lib.txt","input":{"old":"two","new":"2"}}'
printf 'one\n2\nthree\n' > src/lib.txt
e '{"type":"tool_result","output":"edited src/lib.txt"}'
e '{"type":"usage","input_tokens":100,"output_tokens":20}'
e '{"type":"turn"}'
e '{"type":"tool_call","name":"bash","input":{"command":"rm gone.txt"}}'
rm gone.txt
echo hi > new.txt
e '{"type":"tool_result","output":"rm: it is gone","error":true}'
"#,
    )
    .unwrap();
    let suite = s.path().join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            r#"
defaults: {{ timeout: 30s, grace: 1s, events: jsonl }}
evals:
  - id: edit
    starter: starter
    command: [sh, {agent}]
    services:
      - name: api
        command: [sh, -c, 'echo service says hello; touch up; exec sleep 300']
        ready: {{ file: up }}
        timeout: 10s
"#,
            agent = agent.display()
        ),
    )
    .unwrap();
    let out = s
        .hyoka("run")
        .args(["--run-id", "t", "--suite"])
        .arg(&suite)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_dir = s.reports().join("t");
    let run: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("run.json")).unwrap()).unwrap();
    let report = run_dir.join(run["evals"][0]["report"].as_str().unwrap());
    let changes: Value = serde_json::from_slice(
        &std::fs::read(report.parent().unwrap().join("changes.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(changes["total"], 3, "{changes}");
    let diff_of = |path: &str| {
        changes["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("{path}: {changes}"))["diff"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        diff_of("src/lib.txt"),
        "--- a/src/lib.txt\n+++ b/src/lib.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
    );
    assert!(diff_of("new.txt").ends_with("+hi\n"));
    assert!(diff_of("gone.txt").ends_with("-bye\n"));
    let page = run_dir.join("report.html");
    report_html(&[&run_dir], &page);
    s.assert_no_workspaces();

    let Some(chromium) = Chromium::find() else {
        eprintln!(
            "skipped: the browser part needs headless Chromium (apt-get install chromium, or set HYOKA_CHROMIUM)"
        );
        return;
    };
    let dom = chromium
        .dump_dom(&file_url(&page, "#task=0"), Duration::from_secs(15))
        .unwrap()
        .stdout;
    let section = |id: &str| {
        let start = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("no #{id} in the page"));
        let end = start + dom[start..].find("</details>").unwrap();
        dom[start..end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
    };
    let transcript = section("transcript");
    for shown in [
        "Transcript: 2 turns",
        "Turn 1",
        "Turn 2",
        "<strong>edit</strong>",
        "<code>src/lib.txt</code>",
        r#"{"old":"two","new":"2"}"#,
        "edited src/lib.txt",
        "tokens +100 in, 20 out",
        "<strong>bash</strong>",
        "result (error)",
        "rm: it is gone",
    ] {
        assert!(transcript.contains(shown), "{shown:?} in {transcript}");
    }
    let changed = section("changes");
    for shown in [
        "Changed files: 3",
        "<code>src/lib.txt</code>",
        "<span class=\"del\">-two\n</span>",
        "<span class=\"add\">+2\n</span>",
        "<code>new.txt</code>",
        "<code>gone.txt</code>",
    ] {
        assert!(changed.contains(shown), "{shown:?} in {changed}");
    }
    assert!(
        dom.contains("service api (services/api.log") && dom.contains("service says hello"),
        "the service's log"
    );
}

/// Issue 27, item 5: the transcript shows the tool results Codex and Gemini CLI report (their
/// real lines, captured from Codex 0.169.0 and Gemini CLI 0.61.0 against the model stub,
/// replayed by a stand-in), and a trial's phase logs (build, review) are on its page;
/// Chromium renders them.
#[test]
fn the_page_shows_codex_and_gemini_results_and_the_phase_logs() {
    let s = Scratch::new();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/tests/fixtures/events");
    let suite = s.path().join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            r#"
defaults: {{ timeout: 30s, grace: 1s }}
evals:
  - id: codex
    command: [cat, "{codex}"]
    events: codex-json
    build: {{ command: [sh, -c, "echo the build says ok"], timeout: 10s }}
    review: {{ command: [sh, -c, "echo the review looked; echo '{{\"pass\": true}}'"], timeout: 10s }}
  - id: gemini
    command: [cat, "{gemini}"]
    events: gemini-stream-json
"#,
            codex = fixtures.join("codex-0.169-tool-results.jsonl").display(),
            gemini = fixtures.join("gemini-0.61-tool-results.jsonl").display(),
        ),
    )
    .unwrap();
    let out = s
        .hyoka("run")
        .args(["--run-id", "t", "--suite"])
        .arg(&suite)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_dir = s.reports().join("t");
    let page = run_dir.join("report.html");
    report_html(&[&run_dir], &page);
    s.assert_no_workspaces();

    let Some(chromium) = Chromium::find() else {
        eprintln!(
            "skipped: the browser part needs headless Chromium (apt-get install chromium, or set HYOKA_CHROMIUM)"
        );
        return;
    };
    let dom_of = |task: usize| {
        chromium
            .dump_dom(
                &file_url(&page, &format!("#task={task}")),
                Duration::from_secs(15),
            )
            .unwrap()
            .stdout
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    };
    let section = |dom: &str, id: &str| {
        let start = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("no #{id} in the page"));
        let end = start + dom[start..].find("</details>").unwrap();
        dom[start..end].to_owned()
    };
    let codex = dom_of(0);
    let transcript = section(&codex, "transcript");
    for shown in [
        "Transcript: 4 turns",
        "<strong>command_execution</strong>",
        "one\ntwo\n",
        "<strong>file_change</strong>",
        "add /home/dev/project/hello.txt",
        "result (error)",
        "cat: missing.txt: No such file or directory",
    ] {
        assert!(transcript.contains(shown), "{shown:?} in {transcript}");
    }
    for shown in [
        "build.log (",
        "the build says ok",
        "review.log (",
        "the review looked",
    ] {
        assert!(codex.contains(shown), "{shown:?} in the codex trial's page");
    }
    let gemini = dom_of(1);
    let transcript = section(&gemini, "transcript");
    for shown in [
        "Transcript: 4 turns",
        "<strong>run_shell_command</strong>",
        "one\ntwo",
        "<strong>write_file</strong>",
        "<strong>read_file</strong>",
        "result (error)",
        "File not found: /home/dev/project/missing.txt",
    ] {
        assert!(transcript.contains(shown), "{shown:?} in {transcript}");
    }
}

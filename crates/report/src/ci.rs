//! A run for CI systems: JUnit XML for their test views (`hyoka report junit`) and a Markdown
//! summary for their step summaries (`hyoka report markdown`, GitHub's
//! `$GITHUB_STEP_SUMMARY`).
//!
//! **JUnit.** One `<testsuites>` holding one `<testsuite>` named by the run id, with one
//! `<testcase>` per trial: its name is the trial's id, its `classname` `hyoka.<eval>` (with
//! the agent, `hyoka.<eval>.<agent>`), its `time` the trial's seconds. A failed trial carries
//! a `<failure>` (its `type` the termination, its message why), an errored one an `<error>`
//! (its `type` `infra` or `scorer`), a trial that never ran `<skipped>`. The suite's counts
//! (`tests`, `failures`, `errors`, `skipped`) are the run's totals, and its `<properties>`
//! carry the run's figures (pass rate over scored trials, tokens, cost). Elements and
//! attributes are those of the JUnit schema Jenkins, GitLab and the GitHub reporters read
//! (`junit-10.xsd`); text that XML cannot carry (control characters) becomes U+FFFD.
//!
//! **Markdown.** The headline (status, pass rate with its denominator, counts, time, tokens
//! and cost), a partial merge's missing shards, the tasks' table (pass@1 and pass@N, tokens,
//! cost, and the mean over the tasks that have it) and the trials that did not pass with why,
//! each table bounded and saying how many rows it left out. Every figure is the one the
//! summary, `run.json`, `report compare` and the page show.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use hyoka_eval::{EvalSummary, RunSummary, Status, TaskSummary, TokenUsage};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use crate::error::ReportError;
use crate::render::{
    left_out_text, mean_over_text, missing_shards_text, pass_rate_text, tasks_with_pass_at,
};

/// The most rows each Markdown table shows (GitHub caps a step summary at 1 MiB).
pub const MARKDOWN_ROWS: usize = 100;

/// Seconds with millisecond precision, as JUnit's `time` is written: `12.345`.
fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// Text XML 1.0 can carry: control characters other than tab, newline and carriage return
/// (and the noncharacters U+FFFE, U+FFFF) become U+FFFD.
fn xml_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' => '\u{fffd}',
            c => c,
        })
        .collect()
}

/// `2027-01-15T08:00:00` from an RFC 3339 time: the schema's timestamp has no zone or
/// fraction. `None` when the time is not of that shape.
fn junit_timestamp(rfc3339: &str) -> Option<String> {
    let head = rfc3339.get(..19)?;
    let shape = head.bytes().enumerate().all(|(i, b)| match i {
        4 | 7 => b == b'-',
        10 => b == b'T',
        13 | 16 => b == b':',
        _ => b.is_ascii_digit(),
    });
    shape.then(|| head.to_owned())
}

/// The trial's id as its records name it.
fn trial_name(eval: &EvalSummary) -> &str {
    if eval.trial.is_empty() {
        &eval.eval_id
    } else {
        &eval.trial
    }
}

/// Why a trial did not pass, in one line: `max_turns: the agent took 4 turns (limit 3)`.
fn why(eval: &EvalSummary) -> String {
    let termination = eval.termination.as_str();
    match &eval.reason {
        Some(reason) if !reason.is_empty() => format!("{termination}: {reason}"),
        _ => termination.to_owned(),
    }
}

/// The run as JUnit XML (one testcase per trial; failure, error or skipped by status).
///
/// # Errors
/// [`ReportError::Encode`] when the document cannot be written (it is written to memory, so
/// only on a bug).
pub fn render_junit(summary: &RunSummary) -> Result<String, ReportError> {
    let encode = |source: std::io::Error| ReportError::Encode { source };
    let t = &summary.totals;
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    writer
        .write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
        .map_err(encode)?;
    let (tests, failures, errors, skipped) = (
        t.evals.to_string(),
        t.failed.to_string(),
        t.errors.to_string(),
        t.not_run.to_string(),
    );
    let time = seconds(summary.duration_ms);
    let name = xml_text(&format!("hyoka run {}", summary.run_id));
    let run_id = xml_text(&summary.run_id);
    writer
        .create_element("testsuites")
        .with_attributes([
            ("name", name.as_str()),
            ("tests", tests.as_str()),
            ("failures", failures.as_str()),
            ("errors", errors.as_str()),
            ("time", time.as_str()),
        ])
        .write_inner_content(|w| {
            let mut suite = w.create_element("testsuite").with_attributes([
                ("name", run_id.as_str()),
                ("tests", tests.as_str()),
                ("failures", failures.as_str()),
                ("errors", errors.as_str()),
                ("skipped", skipped.as_str()),
                ("time", time.as_str()),
            ]);
            if let Some(stamp) = junit_timestamp(&summary.started_at) {
                suite = suite.with_attribute(("timestamp", stamp.as_str()));
            }
            suite.write_inner_content(|w| {
                properties(w, summary)?;
                for eval in &summary.evals {
                    testcase(w, eval)?;
                }
                Ok(())
            })?;
            Ok(())
        })
        .map_err(encode)?;
    let mut xml = String::from_utf8(writer.into_inner())
        .map_err(|e| encode(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    xml.push('\n');
    Ok(xml)
}

/// The run's figures as `<property>`s.
fn properties(w: &mut Writer<Vec<u8>>, summary: &RunSummary) -> std::io::Result<()> {
    let t = &summary.totals;
    let mut props: Vec<(&str, String)> = vec![
        ("hyoka.status", summary.status.as_str().to_owned()),
        (
            "hyoka.pass_rate",
            pass_rate_text(t.passed, t.failed, t.evals),
        ),
    ];
    if let Some(suite) = &summary.suite {
        props.push(("hyoka.suite", suite.clone()));
    }
    if !summary.missing_shards.is_empty() {
        props.push(("hyoka.partial", missing_shards_text(summary)));
    }
    if let Some(usage) = &summary.usage {
        if let Some(tokens) = usage.reported_tokens() {
            props.push(("hyoka.tokens", tokens.to_string()));
        }
        if let Some(cost) = usage.cost_usd.filter(|c| c.is_finite()) {
            props.push(("hyoka.cost_usd", format!("{cost:.4}")));
        }
    }
    w.create_element("properties").write_inner_content(|w| {
        for (name, value) in &props {
            let value = xml_text(value);
            w.create_element("property")
                .with_attributes([("name", *name), ("value", value.as_str())])
                .write_empty()?;
        }
        Ok(())
    })?;
    Ok(())
}

/// One trial's `<testcase>`.
fn testcase(w: &mut Writer<Vec<u8>>, eval: &EvalSummary) -> std::io::Result<()> {
    let name = xml_text(trial_name(eval));
    let classname = xml_text(&match &eval.agent {
        Some(agent) => format!("hyoka.{}.{agent}", eval.eval_id),
        None => format!("hyoka.{}", eval.eval_id),
    });
    let time = seconds(eval.duration_ms);
    let case = w.create_element("testcase").with_attributes([
        ("name", name.as_str()),
        ("classname", classname.as_str()),
        ("time", time.as_str()),
    ]);
    let message = xml_text(&why(eval));
    let details = xml_text(&format!(
        "{}\nstatus {}, termination {}, exit code {}, {} attempt(s), turns {}, actions {}, files {}\nrecords: {}",
        why(eval),
        eval.status.as_str(),
        eval.termination.as_str(),
        eval.exit_code
            .map_or_else(|| "none".to_owned(), |c| c.to_string()),
        eval.attempts,
        eval.counts.turns,
        eval.counts.actions,
        eval.counts.files,
        eval.report
    ));
    match eval.status {
        Status::Passed => {
            case.write_empty()?;
        }
        Status::Failed => {
            let kind = xml_text(eval.termination.as_str());
            case.write_inner_content(|w| {
                w.create_element("failure")
                    .with_attributes([("message", message.as_str()), ("type", kind.as_str())])
                    .write_text_content(BytesText::new(&details))?;
                Ok(())
            })?;
        }
        Status::Error => {
            let kind = eval.error_kind.map_or("error", |k| k.as_str());
            case.write_inner_content(|w| {
                w.create_element("error")
                    .with_attributes([("message", message.as_str()), ("type", kind)])
                    .write_text_content(BytesText::new(&details))?;
                Ok(())
            })?;
        }
        Status::NotRun => {
            let skipped = xml_text(&format!("not run: {}", why(eval)));
            case.write_inner_content(|w| {
                w.create_element("skipped")
                    .with_attribute(("message", skipped.as_str()))
                    .write_empty()?;
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// Text for a Markdown table cell or line: one line, with Markdown's and HTML's special
/// characters escaped so that a trial's reason cannot make a link, an image or a tag.
fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '!' | '~' | '(' | ')' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

fn figure(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"))
}

fn tokens_and_cost(usage: Option<&TokenUsage>) -> (String, String) {
    (
        usage
            .and_then(TokenUsage::reported_tokens)
            .map_or_else(|| "-".to_owned(), |t| t.to_string()),
        usage
            .and_then(|u| u.cost_usd)
            .filter(|c| c.is_finite())
            .map_or_else(|| "-".to_owned(), |c| format!("${c:.4}")),
    )
}

/// The tokens and cost a task's trials reported, summed ([`TokenUsage::total`]): what the
/// page's task rows show.
pub fn task_usage(summary: &RunSummary, task: &TaskSummary) -> Option<TokenUsage> {
    TokenUsage::total(
        summary
            .evals
            .iter()
            .filter(|e| e.eval_id == task.eval_id && e.agent == task.agent)
            .filter_map(|e| e.usage.as_deref()),
    )
}

/// The run as a Markdown summary for CI step summaries: the headline, the tasks' table and
/// the trials that did not pass, each table bounded.
pub fn render_markdown(summary: &RunSummary) -> String {
    let mut out = String::new();
    let t = &summary.totals;
    let mark = match summary.status {
        Status::Passed => "✅",
        Status::Failed => "❌",
        Status::Error => "⚠️",
        Status::NotRun => "⏭️",
    };
    let _ = writeln!(
        out,
        "## {mark} hyoka run `{}`: {}\n",
        summary.run_id.replace('`', "'"),
        summary.status.as_str().replace('_', " ")
    );
    let mut line = format!(
        "**Pass rate {}** · {} passed, {} failed, {} error{}, {} not run · {}",
        pass_rate_text(t.passed, t.failed, t.evals),
        t.passed,
        t.failed,
        t.errors,
        if t.errors == 1 { "" } else { "s" },
        t.not_run,
        humantime::format_duration(Duration::from_millis(summary.duration_ms))
    );
    let (tokens, cost) = tokens_and_cost(summary.usage.as_ref());
    if tokens != "-" {
        let _ = write!(line, " · {tokens} tokens");
    }
    if cost != "-" {
        let _ = write!(line, " · {cost}");
    }
    let _ = writeln!(out, "{line}\n");
    if !summary.missing_shards.is_empty() {
        let _ = writeln!(out, "> **{}**\n", md(&missing_shards_text(summary)));
    }
    if !summary.tasks.is_empty() {
        let _ = writeln!(
            out,
            "| Task | Trials | Passed | Failed | Errors | Not run | pass@1 | pass@N | Tokens | Cost |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        let shown = summary.tasks.len().min(MARKDOWN_ROWS);
        for task in &summary.tasks[..shown] {
            let n = task.trials.to_string();
            let (tokens, cost) = tokens_and_cost(task_usage(summary, task).as_ref());
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {tokens} | {cost} |",
                md(&task.name()),
                task.trials,
                task.passed,
                task.failed,
                task.errors,
                task.not_run,
                figure(task.pass_at_k.get("1")),
                figure(task.pass_at_k.get(&n)),
            );
        }
        let _ = writeln!(
            out,
            "| **all tasks** ({}) | | | | | | {} | | | |",
            mean_over_text(tasks_with_pass_at(&summary.tasks, "1"), summary.tasks.len()),
            figure(summary.metrics.pass_at_k.get("1"))
        );
        if let Some(left) = left_out_text(shown, summary.tasks.len(), "run.json") {
            let _ = writeln!(out, "\n{}", md(&left));
        }
        out.push('\n');
    }
    not_passed_table(&mut out, summary);
    out
}

/// The Markdown table of the trials that did not pass, with why, bounded.
fn not_passed_table(out: &mut String, summary: &RunSummary) {
    let not_passed: Vec<&EvalSummary> = (summary.evals.iter())
        .filter(|e| e.status != Status::Passed)
        .collect();
    if !not_passed.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>{} of {} trials did not pass</summary>\n",
            not_passed.len(),
            summary.evals.len()
        );
        let _ = writeln!(out, "| Trial | Status | Why | Time |");
        let _ = writeln!(out, "|---|---|---|---:|");
        let shown = not_passed.len().min(MARKDOWN_ROWS);
        for eval in &not_passed[..shown] {
            let status = match (eval.status, eval.error_kind) {
                (Status::Error, Some(kind)) => format!("error ({})", kind.as_str()),
                (status, _) => status.as_str().replace('_', " "),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                md(trial_name(eval)),
                status,
                md(&why(eval)),
                humantime::format_duration(Duration::from_millis(eval.duration_ms))
            );
        }
        if let Some(left) = left_out_text(shown, not_passed.len(), "run.json") {
            let _ = writeln!(out, "\n{}", md(&left));
        }
        out.push_str("\n</details>\n");
    }
}

/// Writes `text` (a JUnit document, a Markdown summary) to `path` atomically.
///
/// # Errors
/// [`ReportError::Output`] (bad input) when `path` is a directory or its directory does not
/// exist; [`ReportError::Write`] when it cannot be written.
pub fn write_text(path: &Path, text: &str) -> Result<(), ReportError> {
    crate::html::check_output(path)?;
    hyoka_proctrack::write_atomic(path, text.as_bytes()).map_err(|source| ReportError::Write {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests;

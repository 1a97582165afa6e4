//! Tests of the CI formats: the JUnit XML and the Markdown summary.

use std::collections::BTreeMap;

use hyoka_eval::{Counts, ErrorKind, RunInfo, Termination};
use quick_xml::events::Event;
use quick_xml::reader::Reader;

use super::*;

#[test]
fn text_xml_cannot_carry_is_replaced_and_markdown_is_inert() {
    assert_eq!(xml_text("a\u{1b}[31mb\u{0}\n"), "a\u{fffd}[31mb\u{fffd}\n");
    assert_eq!(
        md("![x](http://e) <b>|`a`\n"),
        "\\!\\[x\\]\\(http://e\\) &lt;b&gt;\\|\\`a\\` "
    );
    assert_eq!(
        junit_timestamp("2027-01-15T08:00:00.123Z").as_deref(),
        Some("2027-01-15T08:00:00")
    );
    assert_eq!(junit_timestamp("yesterday"), None);
    assert_eq!(seconds(12_345), "12.345");
    assert_eq!(seconds(7), "0.007");
}

fn trial(id: &str, epoch: u32, status: Status, termination: Termination) -> EvalSummary {
    EvalSummary {
        eval_id: id.to_owned(),
        trial: format!("{id}.{epoch}"),
        epoch,
        agent: None,
        status,
        error_kind: match status {
            Status::Error => Some(ErrorKind::Scorer),
            Status::NotRun => Some(ErrorKind::Infra),
            _ => None,
        },
        termination,
        exit_code: Some(0),
        duration_ms: 1500 + u64::from(epoch),
        counts: Counts::default(),
        usage: Some(Box::new(TokenUsage {
            input_tokens: Some(100),
            output_tokens: Some(20),
            cache_read_tokens: Some(30),
            cache_creation_tokens: Some(0),
            cost_usd: Some(0.01),
        })),
        events: None,
        score: None,
        attempts: 1,
        reason: (status != Status::Passed).then(|| "the <agent> & \"friends\"\u{7}".to_owned()),
        report: format!("{id}.{epoch}/report.json"),
    }
}

/// A run with every outcome: passes, a failure, a scorer error (its task error-only) and a
/// trial not run.
fn summary() -> RunSummary {
    let evals = vec![
        trial("good", 1, Status::Passed, Termination::Exited),
        trial("good", 2, Status::Passed, Termination::Exited),
        trial("half", 1, Status::Passed, Termination::Exited),
        trial("half", 2, Status::Failed, Termination::MaxTurns),
        trial("judged", 1, Status::Error, Termination::Exited),
        trial("late", 1, Status::NotRun, Termination::Interrupted),
    ];
    RunSummary::from_evals(
        RunInfo {
            run_id: "ci".to_owned(),
            started_at: "2027-01-15T08:00:00.000Z".to_owned(),
            ended_at: "2027-01-15T08:00:09.000Z".to_owned(),
            duration_ms: 9000,
            suite: None,
            shard: None,
        },
        evals,
    )
}

/// An element of a parsed document.
#[derive(Debug, Default)]
struct Node {
    name: String,
    attrs: BTreeMap<String, String>,
    children: Vec<Node>,
    text: String,
}

fn parse(xml: &str) -> Node {
    let mut reader = Reader::from_str(xml);
    let mut stack = vec![Node::default()];
    loop {
        let event = reader.read_event().unwrap();
        let open = |e: &quick_xml::events::BytesStart<'_>| Node {
            name: e.name().as_ref().to_owned(),
            attrs: e
                .attributes()
                .map(|a| {
                    let a = a.unwrap();
                    (
                        a.key.as_ref().to_owned(),
                        a.normalized_value(quick_xml::XmlVersion::Explicit1_0)
                            .unwrap()
                            .into_owned(),
                    )
                })
                .collect(),
            ..Node::default()
        };
        match event {
            Event::Start(e) => stack.push(open(&e)),
            Event::Empty(e) => stack.last_mut().unwrap().children.push(open(&e)),
            Event::End(_) => {
                let node = stack.pop().unwrap();
                stack.last_mut().unwrap().children.push(node);
            }
            Event::Text(t) => stack.last_mut().unwrap().text.push_str(&t.xml10_content()),
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(stack.len(), 1, "unbalanced document");
    let mut doc = stack.pop().unwrap();
    assert_eq!(doc.children.len(), 1, "one root element");
    doc.children.pop().unwrap()
}

/// Checks `node` against the JUnit schema the common consumers read (Jenkins' junit-10.xsd,
/// which GitLab and the GitHub reporters follow): the attributes allowed, the required ones,
/// the children allowed, numbers and times of the right shape.
fn check(node: &Node, allowed: &[&str], required: &[&str], children: &[&str]) {
    for key in node.attrs.keys() {
        assert!(allowed.contains(&key.as_str()), "<{}> has {key}", node.name);
    }
    for key in required {
        assert!(node.attrs.contains_key(*key), "<{}> lacks {key}", node.name);
    }
    for child in &node.children {
        assert!(
            children.contains(&child.name.as_str()),
            "<{}> holds <{}>",
            node.name,
            child.name
        );
    }
    for key in ["tests", "failures", "errors", "skipped", "disabled"] {
        if let Some(v) = node.attrs.get(key) {
            assert!(v.parse::<u64>().is_ok(), "<{}> {key}={v}", node.name);
        }
    }
    if let Some(t) = node.attrs.get("time") {
        let (whole, frac) = t.split_once('.').unwrap_or((t, "0"));
        assert!(
            whole.parse::<u64>().is_ok() && frac.bytes().all(|b| b.is_ascii_digit()),
            "<{}> time={t}",
            node.name
        );
    }
}

fn count(suite: &Node, child: &str) -> usize {
    (suite.children.iter())
        .filter(|c| c.name == "testcase")
        .filter(|c| c.children.iter().any(|k| k.name == child))
        .count()
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one document checked element by element"
)]
fn the_junit_document_has_the_schemas_shape_and_the_runs_counts() {
    let summary = summary();
    let xml = render_junit(&summary).unwrap();
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"),
        "{xml}"
    );
    let root = parse(&xml);
    assert_eq!(root.name, "testsuites");
    check(
        &root,
        &["name", "time", "tests", "failures", "disabled", "errors"],
        &[],
        &["testsuite"],
    );
    let suite = &root.children[0];
    check(
        suite,
        &[
            "name",
            "tests",
            "failures",
            "errors",
            "disabled",
            "skipped",
            "time",
            "timestamp",
            "hostname",
            "id",
            "package",
        ],
        &["name", "tests"],
        &["properties", "testcase", "system-out", "system-err"],
    );
    assert_eq!(suite.attrs["timestamp"], "2027-01-15T08:00:00");
    let cases: Vec<&Node> = suite
        .children
        .iter()
        .filter(|c| c.name == "testcase")
        .collect();
    assert_eq!(cases.len(), 6, "one testcase per trial");
    let attr = |n: &Node, k: &str| n.attrs[k].parse::<usize>().unwrap();
    assert_eq!(attr(suite, "tests"), 6);
    assert_eq!((attr(suite, "failures"), count(suite, "failure")), (1, 1));
    assert_eq!((attr(suite, "errors"), count(suite, "error")), (1, 1));
    assert_eq!((attr(suite, "skipped"), count(suite, "skipped")), (1, 1));
    assert_eq!(attr(&root, "tests"), 6);
    for case in &cases {
        check(
            case,
            &[
                "name",
                "classname",
                "assertions",
                "time",
                "status",
                "file",
                "line",
            ],
            &["name", "classname", "time"],
            &["skipped", "error", "failure", "system-out", "system-err"],
        );
        let verdicts = (case.children.iter())
            .filter(|c| ["skipped", "error", "failure"].contains(&c.name.as_str()))
            .count();
        assert!(verdicts <= 1, "{case:?}");
        for child in &case.children {
            let allowed: &[&str] = if child.name == "skipped" {
                &["message"]
            } else {
                &["message", "type"]
            };
            check(child, allowed, &[], &[]);
        }
    }
    let half = cases.iter().find(|c| c.attrs["name"] == "half.2").unwrap();
    assert_eq!(half.attrs["classname"], "hyoka.half");
    assert_eq!(half.attrs["time"], "1.502");
    let failure = &half.children[0];
    assert_eq!(failure.attrs["type"], "max_turns");
    assert_eq!(
        failure.attrs["message"],
        "max_turns: the <agent> & \"friends\"\u{fffd}"
    );
    assert!(
        failure.text.contains("records: half.2/report.json"),
        "{failure:?}"
    );
    let judged = cases
        .iter()
        .find(|c| c.attrs["name"] == "judged.1")
        .unwrap();
    assert_eq!(judged.children[0].attrs["type"], "scorer");
    let props = &suite.children[0];
    assert_eq!(props.name, "properties");
    let prop = |name: &str| {
        (props.children.iter())
            .find(|p| p.attrs["name"] == name)
            .map(|p| p.attrs["value"].clone())
    };
    assert_eq!(
        prop("hyoka.pass_rate").as_deref(),
        Some("75.0% of 4 scored trials (2 of 6 errored or not run)")
    );
    assert_eq!(prop("hyoka.tokens").as_deref(), Some("900"));
    assert_eq!(prop("hyoka.cost_usd").as_deref(), Some("0.0600"));
}

#[test]
fn the_markdown_summary_names_denominators_and_shows_no_figure_for_an_error_only_task() {
    let mut summary = summary();
    summary.missing_shards = vec![2];
    let text = render_markdown(&summary);
    assert!(text.starts_with("## ❌ hyoka run `ci`: failed\n"), "{text}");
    assert!(
        text.contains("**Pass rate 75.0% of 4 scored trials (2 of 6 errored or not run)** · 3 passed, 1 failed, 1 error, 1 not run · 9s · 900 tokens · $0.0600"),
        "{text}"
    );
    assert!(text.contains("partial: shard 2 missing"), "{text}");
    assert!(
        text.contains("| judged | 1 | 0 | 0 | 1 | 0 | - | - | 150 | $0.0100 |"),
        "an error-only task has no pass@1: {text}"
    );
    assert!(
        text.contains("| half | 2 | 1 | 1 | 0 | 0 | 0.500 | 1.000 | 300 | $0.0200 |"),
        "{text}"
    );
    assert!(
        text.contains("| **all tasks** (mean over 2 of 4 tasks) | | | | | | 0.750 |"),
        "{text}"
    );
    assert!(text.contains("3 of 6 trials did not pass"), "{text}");
    assert!(
        text.contains("| half.2 | failed | max\\_turns: the &lt;agent&gt; &amp; \"friends\"\u{fffd} | 1s 502ms |"),
        "{text}"
    );
}

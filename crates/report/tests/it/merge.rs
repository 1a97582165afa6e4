//! Merging a suite's shards: the summaries of one suite's shards make one run, anything else
//! is refused as bad input naming the inputs; a shard's `run.json` is read as evidence.

use hyoka_eval::{FakeProgram, RunSummary, Status};
use hyoka_report::{MergeOptions, merge_summaries, read_summary};

use crate::support::{Case, eval};

/// The summary of a run of one eval of `program` as shard `shard` of a suite `suite`.
async fn shard(program: FakeProgram, id: &str, suite: &str, shard: &str) -> RunSummary {
    let case = Case::new();
    case.program("p", program);
    let mut plan = case.plan(vec![eval(id, "p")]);
    plan.suite = Some(suite.to_owned());
    plan.shard = Some(shard.parse().unwrap());
    case.run_plan(&plan).await.summary
}

#[track_caller]
fn check_refused(inputs: &[(&str, &RunSummary)], allow_partial: bool, expected: &str) {
    let inputs: Vec<_> = inputs
        .iter()
        .map(|(d, s)| ((*d).into(), (*s).clone()))
        .collect();
    let options = MergeOptions {
        allow_partial,
        ..MergeOptions::default()
    };
    let err = merge_summaries(&inputs, &options).unwrap_err();
    assert!(err.is_bad_input(), "{err}");
    assert_eq!(err.to_string(), expected);
}

#[tokio::test(start_paused = true)]
async fn shards_of_one_suite_merge_and_anything_else_is_refused() {
    let first = shard(FakeProgram::new().exits(0), "a", "S", "1/2").await;
    let second = shard(FakeProgram::new().exits(1), "b", "S", "2/2").await;
    assert_eq!(
        (first.suite.as_deref(), first.shard.as_deref()),
        (Some("S"), Some("1/2"))
    );
    let both = [("s1".into(), first.clone()), ("s2".into(), second.clone())];
    let merged = merge_summaries(&both, &MergeOptions::default()).unwrap();
    assert_eq!(
        (merged.run_id.as_str(), merged.suite.as_deref()),
        ("case", Some("S"))
    );
    assert_eq!((merged.totals.evals, merged.status), (2, Status::Failed));
    assert_eq!(merged.evals[1].report, "s2/b/report.json");
    assert!(merged.shard.is_none() && merged.missing_shards.is_empty());

    check_refused(
        &[("s1", &first), ("s3", &first)],
        false,
        "shard 1/2 appears twice: s1 and s3",
    );
    check_refused(
        &[("s1", &first)],
        false,
        "shard 2 of 2 missing (give --allow-partial to merge without it)",
    );
    let partial = merge_summaries(
        &[("s1".into(), first.clone())],
        &MergeOptions {
            allow_partial: true,
            ..MergeOptions::default()
        },
    )
    .unwrap();
    assert_eq!(partial.missing_shards, [2]);
    let other_suite = shard(FakeProgram::new().exits(0), "b", "T", "2/2").await;
    check_refused(
        &[("s1", &first), ("s2", &other_suite)],
        false,
        "s1 and s2 are runs of different suites; merge the shards of one suite",
    );
    let mut other_run = second.clone();
    other_run.run_id = "other".into();
    check_refused(
        &[("s1", &first), ("s2", &other_run)],
        false,
        "s1 and s2 are runs of different ids (case and other); merge the shards of one run",
    );
    let mut hostile = second.clone();
    hostile.run_id = "../../etc".into();
    check_refused(
        &[("s2", &hostile)],
        true,
        "s2: run id \"../../etc\" breaks the id grammar",
    );
    let mut hostile = second.clone();
    hostile.evals[0].report = "../../../etc/passwd".into();
    check_refused(
        &[("s2", &hostile)],
        true,
        "s2: eval b: report path \"../../../etc/passwd\" leaves the run directory",
    );
    let mut backwards = second.clone();
    backwards.ended_at = "2000-01-01T00:00:00.000Z".into();
    check_refused(
        &[("s2", &backwards)],
        true,
        "s2: its times run backwards (ended 2000-01-01T00:00:00.000Z before it started \
         2027-01-15T08:00:00.000Z)",
    );
    let mut empty = second.clone();
    empty.evals.clear();
    check_refused(&[("s2", &empty)], true, "s2: the run holds no evals");
    let mut old = second;
    old.suite = None;
    check_refused(
        &[("s2", &old)],
        true,
        "s2: the run records no suite identity (written by an older hyoka); rerun it",
    );
}

/// A shard's `run.json` is read as evidence: a run directory or the file itself is read; a
/// link to it, or a file others may write, is refused as bad input and nothing of it is read.
#[tokio::test(start_paused = true)]
async fn a_shards_summary_is_read_as_evidence() {
    use std::os::unix::fs::PermissionsExt as _;

    let case = Case::new();
    case.program("ok", FakeProgram::new().exits(0));
    let summary = case.run(vec![eval("a", "ok")]).await.summary;
    let run_dir = case.reports.path().join("case");
    let (dir, read) = read_summary(&run_dir).unwrap();
    assert_eq!((dir, read.evals.len()), (run_dir.clone(), 1));
    assert_eq!(read.run_id, summary.run_id);
    let (dir, _) = read_summary(&run_dir.join("run.json")).unwrap();
    assert_eq!(dir, run_dir);

    let elsewhere = tempfile::tempdir().unwrap();
    let link = elsewhere.path().join("run.json");
    std::os::unix::fs::symlink(run_dir.join("run.json"), &link).unwrap();
    let err = read_summary(&link).unwrap_err();
    assert!(err.is_bad_input());
    assert!(err.to_string().contains("symbolic link"), "{err}");

    let loose = elsewhere.path().join("loose.json");
    std::fs::copy(run_dir.join("run.json"), &loose).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o666)).unwrap();
    let err = read_summary(&loose).unwrap_err();
    assert!(err.is_bad_input());
    assert!(err.to_string().contains("writable by others"), "{err}");
    case.assert_nothing_left();
}

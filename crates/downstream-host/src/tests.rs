//! An eval run through the recording seams on the harness's fake host: the host sees the
//! agent spawned and the workspace created, and the eval's result is the fake host's own.

use std::sync::Arc;
use std::time::SystemTime;

use hyoka_eval::{
    EvalId, EvalSpec, FakeHost, FakeProgram, NoObserver, RunId, RunPlan, Status, Stop, run,
};

use super::Recording;

#[test]
fn an_eval_goes_through_the_hosts_seams() {
    let reports = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let host = FakeHost::new(SystemTime::UNIX_EPOCH);
        host.program("agent", FakeProgram::new().writes("out.txt", "hi").exits(0));
        let recording = Arc::new(Recording::new(host.harness()));
        let spec = EvalSpec::new(EvalId::new("hello").unwrap(), vec!["agent".into()]);
        let plan = RunPlan::new(
            RunId::new("host").unwrap(),
            reports.path(),
            "/mem",
            vec![spec],
        );
        let outcome = run(
            plan,
            &recording.harness(),
            Stop::never(),
            Arc::new(NoObserver),
        )
        .await
        .unwrap();
        assert_eq!(outcome.reports[0].status, Status::Passed);
        assert_eq!(outcome.reports[0].counts.files, 1);
        assert_eq!(recording.spawned(), vec!["hello".to_owned()]);
        assert_eq!(recording.workspaces().len(), 1);
        assert!(host.alive().is_empty());
    });
}

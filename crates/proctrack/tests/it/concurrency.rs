//! Many runs at once: each stops exactly its own tree.

use std::time::Duration;

use hyoka_proctrack::TeardownOptions;

use crate::roles::scenario_names;
use crate::runner::Test;
use crate::support::{
    Config, Sandbox, agent_command, assert_nothing_left, cgroup_available, runtime, tracker,
    wait_ready,
};

pub(crate) const TESTS: &[Test] = &[(
    "concurrency::sixteen_concurrent_runs",
    sixteen_concurrent_runs,
)];

fn sixteen_concurrent_runs() {
    let _pool = crate::support::orphan_pool_all();
    let sandbox = Sandbox::new();
    let runs: Vec<(String, std::path::PathBuf, Config)> = (0..16)
        .map(|i| {
            let config = Config {
                cgroup: cgroup_available() && i % 2 == 0,
                shim: i % 4 < 2,
            };
            (
                sandbox.run_id(&format!("r{i}")),
                sandbox.subdir(&format!("r{i}")),
                config,
            )
        })
        .collect();
    let rt = runtime();
    let results = rt.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for (run_id, dir, config) in runs.clone() {
            let reports = sandbox.reports();
            tasks.spawn(async move {
                let tracker = tracker(&reports, &run_id, config);
                let mut agent = tracker
                    .spawn("main", agent_command(&dir, "stay", "tree+session", 0))
                    .await
                    .expect("spawn");
                let mut names = scenario_names("tree+session");
                names.push("agent");
                let refs = tokio::task::spawn_blocking(move || wait_ready(&dir, &names))
                    .await
                    .unwrap();
                agent.refresh().expect("refresh");
                let report = agent
                    .teardown(TeardownOptions::with_grace(Duration::from_secs(2)))
                    .await
                    .expect("teardown");
                tracker.close().expect("close");
                (run_id, refs, report)
            });
        }
        tasks.join_all().await
    });
    assert_eq!(results.len(), 16);
    for (run_id, refs, report) in results {
        assert_eq!(report.survivors, 0, "{run_id}: {report:#?}");
        // Each run saw its own five processes and nobody else's.
        assert_eq!(report.processes_seen, 5, "{run_id}: {report:#?}");
        for (_, r) in &refs {
            assert!(report.processes.iter().any(|p| p.pid == r.pid), "{run_id}");
        }
        assert_nothing_left(&run_id, &refs, &run_id);
    }
}

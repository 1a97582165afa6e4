//! `clean` and `ps`: after the owner is SIGKILLed, during a live run, against strangers and
//! hostile ledgers, in dry runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, SystemTime};

use hyoka_proctrack::{
    CleanOptions, LockState, SkipReason, TeardownOptions, clean_run, list_runs, live_runs,
};

use crate::roles::{role, scenario_names};
use crate::runner::Test;
use crate::support::{
    Config, Sandbox, agent_command, alive, assert_nothing_left, cgroup_available, runtime, tracker,
    wait_file, wait_gone, wait_ready,
};

pub(crate) const TESTS: &[Test] = &[
    (
        "clean::owner_sigkilled_then_clean",
        owner_sigkilled_then_clean,
    ),
    ("clean::live_run_is_untouched", live_run_is_untouched),
    (
        "clean::stranger_with_wrong_start_time_is_untouched",
        stranger_with_wrong_start_time_is_untouched,
    ),
    (
        "clean::hostile_ledgers_are_reported_not_acted_on",
        hostile_ledgers_are_reported_not_acted_on,
    ),
    ("clean::dry_run_changes_nothing", dry_run_changes_nothing),
    (
        "clean::a_leaf_recorded_but_never_made_is_cleaned",
        a_leaf_recorded_but_never_made_is_cleaned,
    ),
    (
        "clean::only_the_v1_leaves_the_ledger_names_are_removed",
        only_the_v1_leaves_the_ledger_names_are_removed,
    ),
    ("clean::ps_lists_live_runs", ps_lists_live_runs),
    (
        "clean::an_uncleaned_run_id_is_not_reused",
        an_uncleaned_run_id_is_not_reused,
    ),
    (
        "clean::dropped_agent_is_still_stopped",
        dropped_agent_is_still_stopped,
    ),
];

fn options() -> CleanOptions {
    CleanOptions {
        grace: Duration::from_millis(500),
        kill_timeout: Duration::from_secs(10),
        dry_run: false,
    }
}

/// Starts the `owner` role in a subprocess and waits until its agent's tree is up.
fn start_owner(
    sandbox: &Sandbox,
    run_id: &str,
    dir: &Path,
    config: Config,
    scenario: &str,
) -> (Child, Vec<(String, hyoka_proctrack::ProcRef)>) {
    let owner = role(
        "owner",
        &sandbox.reports(),
        &[
            run_id,
            dir.to_str().unwrap(),
            if config.shim { "1" } else { "0" },
            if config.cgroup { "1" } else { "0" },
            scenario,
        ],
    )
    .spawn()
    .expect("spawn owner");
    let ready = wait_file(&dir.join("owner"), Duration::from_mins(1));
    let mut names = scenario_names(scenario);
    names.push("agent");
    let mut refs = wait_ready(dir, &names);
    refs.push(("owner".to_owned(), ready));
    (owner, refs)
}

fn kill_owner(mut owner: Child) {
    owner.kill().expect("SIGKILL owner");
    owner.wait().expect("reap owner");
}

/// SIGKILL of hyoka, then `clean`: with the shim, its parent-death signal already tore the
/// tree down; without it, `clean` finds the tree through the ledger, the leaf and the marker.
fn owner_sigkilled_then_clean() {
    // A SIGKILLed owner's children come to this process (a subreaper): orphans of ours that
    // agents without a shim in other tests must not claim before `clean` gets to them.
    let _pool = crate::support::orphan_pool_all();
    let mut configs = vec![
        (
            Config {
                cgroup: false,
                shim: true,
            },
            "all",
        ),
        (
            Config {
                cgroup: false,
                shim: false,
            },
            "tree+session+stubborn+timeout",
        ),
    ];
    if cgroup_available() {
        configs.push((
            Config {
                cgroup: true,
                shim: false,
            },
            "all",
        ));
        configs.push((
            Config {
                cgroup: true,
                shim: true,
            },
            "all",
        ));
    }
    for (config, scenario) in configs {
        let sandbox = Sandbox::new();
        let dir = sandbox.subdir("owner");
        let run_id = sandbox.run_id("o");
        let run_dir = sandbox.reports().join(&run_id);
        let (owner, refs) = start_owner(&sandbox, &run_id, &dir, config, scenario);
        let tree: Vec<_> = refs.iter().filter(|(n, _)| n != "owner").cloned().collect();
        kill_owner(owner);
        if config.shim {
            let left = wait_gone(&tree, Duration::from_secs(20));
            assert!(left.is_empty(), "under {config}: the shim left {left:?}");
        } else {
            assert!(
                tree.iter().any(|(_, r)| alive(*r)),
                "under {config}: the tree should outlive its owner"
            );
        }
        let report = clean_run(&run_dir, &options()).expect("clean");
        assert_eq!(report.state, LockState::Abandoned, "under {config}");
        assert_eq!(report.survivors, 0, "under {config}: {report:#?}");
        assert!(
            report.problems.is_empty(),
            "under {config}: {:?}",
            report.problems
        );
        assert!(
            report.marked_cleaned && report.is_clean(),
            "under {config}: {report:#?}"
        );
        assert_eq!(report.workspaces.len(), 1);
        assert_eq!(report.workspaces[0].path, dir.join("workspace"));
        if !config.shim {
            assert!(
                report.killed >= tree.len() - 1,
                "under {config}: {report:#?}"
            );
        }
        if config.cgroup {
            assert!(
                report.cgroups.iter().all(|c| c.removed),
                "under {config}: {report:#?}"
            );
        }
        assert_nothing_left(&run_id, &tree, &format!("clean under {config}"));
        let again = clean_run(&run_dir, &options()).expect("clean again");
        assert!(again.already_cleaned && again.found.is_empty() && again.is_clean());
    }
}

fn live_run_is_untouched() {
    let sandbox = Sandbox::new();
    let dir = sandbox.subdir("live");
    let run_id = sandbox.run_id("v");
    runtime().block_on(async {
        let config = Config {
            cgroup: cgroup_available(),
            shim: true,
        };
        let tracker = tracker(&sandbox.reports(), &run_id, config);
        let mut agent = tracker
            .spawn("main", agent_command(&dir, "stay", "tree", 0))
            .await
            .unwrap();
        let refs = wait_ready(&dir, &["t", "t.c", "t.c.c", "agent"]);
        agent.refresh().unwrap();
        let ledger = tracker.ledger_path().to_owned();
        let before = std::fs::read(&ledger).unwrap();
        for dry_run in [false, true] {
            let report = clean_run(
                tracker.run_dir(),
                &CleanOptions {
                    dry_run,
                    ..options()
                },
            )
            .unwrap();
            assert_eq!(report.state, LockState::Live);
            assert!(report.found.is_empty() && report.killed == 0 && !report.marked_cleaned);
            assert!(report.is_clean());
        }
        assert_eq!(std::fs::read(&ledger).unwrap(), before);
        assert!(
            refs.iter().all(|(_, r)| alive(*r)),
            "clean touched a live run"
        );
        agent.teardown(TeardownOptions::default()).await.unwrap();
        tracker.close().unwrap();
        assert_nothing_left(&run_id, &refs, "live run");
    });
}

/// Writes an abandoned run directory by hand: a free lock and `ledger` as given.
fn fake_run(reports: &Path, run_id: &str, ledger: &[u8]) -> PathBuf {
    let run_dir = reports.join(run_id);
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(run_dir.join("owner.lock"), b"").unwrap();
    std::fs::write(run_dir.join("pids.txt"), ledger).unwrap();
    run_dir
}

fn stranger(sandbox: &Sandbox) -> (Child, hyoka_proctrack::ProcRef, i32) {
    let dir = sandbox.subdir("stranger");
    let child = role("sleeper", &dir, &["stranger"]).spawn().unwrap();
    let r = wait_file(&dir.join("stranger"), Duration::from_secs(30));
    let pgid = hyoka_proctrack::NativeProcTable::new();
    let pgid = hyoka_proctrack::ProcTable::process(&pgid, r.pid)
        .unwrap()
        .pgid;
    (child, r, pgid)
}

fn stranger_with_wrong_start_time_is_untouched() {
    let sandbox = Sandbox::new();
    let (mut child, r, pgid) = stranger(&sandbox);
    let run_id = sandbox.run_id("x");
    let owner = hyoka_proctrack::Identity::current().unwrap();
    let ledger = format!(
        "# hyoka-pids v1\n# run {run_id}\n# owner {owner}\n{}\t{}\t{pgid}\tmain\tsleeper\n",
        r.pid,
        r.start_ticks + 1
    );
    let run_dir = fake_run(&sandbox.reports(), &run_id, ledger.as_bytes());
    let report = clean_run(&run_dir, &options()).unwrap();
    assert_eq!(report.skipped.len(), 1, "{report:#?}");
    assert_eq!(report.skipped[0].reason, SkipReason::IdentityMismatch);
    assert!(report.found.is_empty() && report.killed == 0, "{report:#?}");
    assert!(alive(r), "clean killed a stranger");
    assert!(report.is_clean());
    child.kill().unwrap();
    child.wait().unwrap();
}

fn hostile_ledgers_are_reported_not_acted_on() {
    let sandbox = Sandbox::new();
    let (mut child, r, pgid) = stranger(&sandbox);
    let me = std::process::id();
    let (pid, ticks) = (r.pid, r.start_ticks);
    let cases: Vec<(&str, String, usize)> = vec![
        ("garbage", "\u{7f}ELF\u{0}\u{1}garbage\n".to_owned(), 1),
        (
            "low-pids",
            "# hyoka-pids v1\n# run R\n0\t1\t5\tmain\tx\n1\t1\t5\tmain\tx\n-1\t1\t5\tmain\tx\n"
                .to_owned(),
            3,
        ),
        (
            "own-pid",
            format!("# hyoka-pids v1\n# run R\n{me}\t1\t{me}\tmain\tx\n"),
            1,
        ),
        (
            "hostile-pgid",
            format!("# hyoka-pids v1\n# run R\n{pid}\t{ticks}\t1\tmain\tx\n"),
            1,
        ),
        (
            "torn",
            format!("# hyoka-pids v1\n# run R\n{pid}\t{ticks}\t{pgid}\tma"),
            1,
        ),
        ("no-header", format!("{pid}\t{ticks}\t{pgid}\tmain\tx\n"), 1),
    ];
    for (label, text, problems) in cases {
        let run_id = sandbox.run_id(label);
        let text = text.replace("# run R", &format!("# run {run_id}"));
        let run_dir = fake_run(&sandbox.reports(), &run_id, text.as_bytes());
        let report = clean_run(&run_dir, &options()).unwrap();
        assert_eq!(
            report.problems.len(),
            problems,
            "{label}: {:#?}",
            report.problems
        );
        assert!(
            report.found.is_empty() && report.killed == 0,
            "{label}: {report:#?}"
        );
        assert!(alive(r), "{label}: clean acted on a hostile line");
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Every file under `dir` with its bytes and modification time.
fn tree_state(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            out.extend(tree_state(&path));
        } else {
            out.insert(
                path.clone(),
                (std::fs::read(&path).unwrap(), meta.modified().unwrap()),
            );
        }
    }
    out
}

fn dry_run_changes_nothing() {
    let _pool = crate::support::orphan_pool_all();
    let sandbox = Sandbox::new();
    let dir = sandbox.subdir("dry");
    let run_id = sandbox.run_id("d");
    let config = Config {
        cgroup: cgroup_available(),
        shim: false,
    };
    let (owner, refs) = start_owner(&sandbox, &run_id, &dir, config, "tree+session");
    kill_owner(owner);
    // The agent itself got its parent-death signal with the owner; its descendants did not.
    let tree: Vec<_> = refs
        .iter()
        .filter(|(n, _)| n != "owner" && n != "agent")
        .cloned()
        .collect();
    let run_dir = sandbox.reports().join(&run_id);
    let before = tree_state(&sandbox.reports());
    let report = clean_run(
        &run_dir,
        &CleanOptions {
            dry_run: true,
            ..options()
        },
    )
    .unwrap();
    assert!(report.dry_run && !report.marked_cleaned && report.killed == 0);
    assert!(report.found.len() >= tree.len(), "{report:#?}");
    assert!(report.found.iter().all(|p| p.outcome.is_none()));
    assert!(
        !report.is_clean(),
        "a dry run with processes to kill is not clean"
    );
    assert_eq!(
        tree_state(&sandbox.reports()),
        before,
        "dry run changed files"
    );
    assert!(
        tree.iter().all(|(_, r)| alive(*r)),
        "dry run signalled something"
    );
    if config.cgroup {
        assert!(report.cgroups.iter().all(|c| c.found && !c.removed));
    }
    // A run directory without a lock file is not given one, even by a dry run.
    let bare = sandbox.reports().join("no-lock");
    std::fs::create_dir_all(&bare).unwrap();
    let report = clean_run(
        &bare,
        &CleanOptions {
            dry_run: true,
            ..options()
        },
    )
    .unwrap();
    assert_eq!(report.state, LockState::Missing);
    assert!(!bare.join("owner.lock").exists());
    // The real clean finishes the job.
    let report = clean_run(&run_dir, &options()).unwrap();
    assert!(report.is_clean(), "{report:#?}");
    assert_nothing_left(&run_id, &tree, "after dry run");
}

fn ps_lists_live_runs() {
    let sandbox = Sandbox::new();
    let dir = sandbox.subdir("ps");
    let run_id = sandbox.run_id("p");
    runtime().block_on(async {
        let tracker = tracker(
            &sandbox.reports(),
            &run_id,
            Config {
                cgroup: false,
                shim: true,
            },
        );
        tracker.record_workspace("main", &dir.join("ws")).unwrap();
        let mut agent = tracker
            .spawn("main", agent_command(&dir, "stay", "tree", 0))
            .await
            .unwrap();
        let refs = wait_ready(&dir, &["t", "t.c", "t.c.c", "agent"]);
        agent.refresh().unwrap();
        let live = live_runs(&sandbox.reports()).unwrap();
        assert_eq!(live.len(), 1);
        let run = &live[0];
        assert_eq!(
            (run.run_id.as_str(), run.state),
            (run_id.as_str(), LockState::Live)
        );
        assert_eq!(run.evals, ["main"]);
        assert_eq!(run.ledger.workspaces[0].path, dir.join("ws"));
        assert_eq!(run.ledger.owner.as_ref(), Some(tracker.owner()));
        for (name, r) in &refs {
            assert!(
                run.processes
                    .iter()
                    .any(|p| p.entry.proc_ref() == *r && p.alive && p.comm_now.is_some()),
                "{name} not listed: {:#?}",
                run.processes
            );
        }
        agent.teardown(TeardownOptions::default()).await.unwrap();
        tracker.close().unwrap();
        assert!(live_runs(&sandbox.reports()).unwrap().is_empty());
        let all = list_runs(&sandbox.reports()).unwrap();
        assert_eq!(all[0].state, LockState::Abandoned);
        // A finished run's ledger is marked cleaned: nothing of it is listed (issue 11,
        // finding 7: a ledger marked cleaned is not read any further).
        assert!(all[0].cleaned);
        assert!(all[0].ledger.run_id.is_empty() && all[0].processes.is_empty());
    });
}

fn an_uncleaned_run_id_is_not_reused() {
    let sandbox = Sandbox::new();
    let (mut child, r, pgid) = stranger(&sandbox);
    let run_id = sandbox.run_id("u");
    let owner = hyoka_proctrack::Identity::current().unwrap();
    let ledger = format!(
        "# hyoka-pids v1\n# run {run_id}\n# owner {owner}\n{}\t{}\t{pgid}\tmain\tsleeper\n",
        r.pid, r.start_ticks
    );
    let run_dir = fake_run(&sandbox.reports(), &run_id, ledger.as_bytes());
    let config = Config {
        cgroup: false,
        shim: false,
    };
    let mut start = hyoka_proctrack::TrackerOptions::new(&run_id, sandbox.reports());
    start.cgroup = hyoka_proctrack::CgroupMode::Off;
    let err = hyoka_proctrack::Tracker::start(start).unwrap_err();
    assert!(
        matches!(err, hyoka_proctrack::ProcTrackError::UncleanRun { .. }),
        "{err}"
    );
    // Once cleaned (which stops the recorded process), the id can be used again.
    let report = clean_run(&run_dir, &options()).unwrap();
    assert!(report.is_clean() && report.killed == 1, "{report:#?}");
    let _ = child.wait();
    drop(tracker(&sandbox.reports(), &run_id, config));
    let _ = child.kill();
}

/// Closing a run before tearing an agent down withholds the `# cleaned` mark, and dropping
/// the agent still stops its tree (the last-resort SIGKILL).
fn dropped_agent_is_still_stopped() {
    let sandbox = Sandbox::new();
    let dir = sandbox.subdir("drop");
    let run_id = sandbox.run_id("z");
    let refs = runtime().block_on(async {
        let tracker = tracker(
            &sandbox.reports(),
            &run_id,
            Config {
                cgroup: cgroup_available(),
                shim: true,
            },
        );
        let agent = tracker
            .spawn("main", agent_command(&dir, "stay", "tree+stubborn", 0))
            .await
            .unwrap();
        let refs = wait_ready(&dir, &["t", "t.c", "t.c.c", "st", "agent"]);
        let ledger = tracker.ledger_path().to_owned();
        tracker.close().unwrap();
        assert!(
            !std::fs::read_to_string(&ledger)
                .unwrap()
                .contains("# cleaned")
        );
        drop(agent);
        refs
    });
    assert_nothing_left(&run_id, &refs, "dropped agent");
}

/// An owner killed between recording its eval's cgroup leaf and creating it (the leaf is
/// recorded first) leaves the run's `hyoka-<run_id>-<instance>` cgroup directory empty: `clean`
/// removes it, and the run counts as cleaned.
fn a_leaf_recorded_but_never_made_is_cleaned() {
    let Some(root) = hyoka_proctrack::Capabilities::detect().cgroup else {
        eprintln!("skipped: no writable cgroup v2 here");
        return;
    };
    let sandbox = Sandbox::new();
    let run_id = sandbox.run_id("w");
    let instance = hyoka_proctrack::Instance::generate().unwrap();
    let leaf = root.leaf_path(&run_id, &instance, "main");
    let run_cgroup = leaf.parent().unwrap().to_owned();
    std::fs::create_dir(&run_cgroup).unwrap();
    let owner = hyoka_proctrack::Identity::current().unwrap();
    let ledger = format!(
        "# hyoka-pids v1\n# run {run_id}\n# owner {owner}\n# instance {instance}\n# cgroup main {}\n",
        leaf.display()
    );
    let run_dir = fake_run(&sandbox.reports(), &run_id, ledger.as_bytes());
    let report = clean_run(&run_dir, &options()).unwrap();
    let exists = run_cgroup.exists();
    let _ = std::fs::remove_dir(&run_cgroup);
    assert!(!exists, "{} left behind: {report:#?}", run_cgroup.display());
    assert!(report.marked_cleaned, "{report:#?}");
}

/// Regression test for issue 25: `clean` removes a crashed run's cgroup v1 leaves (those of
/// its resource limits) only when its ledger names them and they are the run's: a leaf of the
/// run the ledger does not name, and another run's leaf a forged ledger names, stay.
fn only_the_v1_leaves_the_ledger_names_are_removed() {
    let mounts = hyoka_proctrack::CgroupMounts::detect();
    let Some(pids) = mounts.v1.iter().find(|m| m.ends_with("pids")).cloned() else {
        eprintln!("skipped: no cgroup v1 pids hierarchy here");
        return;
    };
    let sandbox = Sandbox::new();
    let run_id = sandbox.run_id("v1");
    let instance = hyoka_proctrack::Instance::generate().unwrap();
    let other = hyoka_proctrack::Instance::generate().unwrap();
    let ours = pids.join(format!("hyoka-{run_id}-{instance}"));
    let theirs = pids.join(format!("hyoka-{run_id}-{other}"));
    let (named, unnamed, foreign) = (ours.join("main"), ours.join("spare"), theirs.join("main"));
    for leaf in [&named, &unnamed, &foreign] {
        if let Err(err) = std::fs::create_dir_all(leaf) {
            eprintln!("skipped: cannot make a cgroup v1 leaf here: {err}");
            for dir in [&named, &unnamed, &foreign, &ours, &theirs] {
                let _ = std::fs::remove_dir(dir);
            }
            return;
        }
    }
    let owner = hyoka_proctrack::Identity::current().unwrap();
    let ledger = format!(
        "# hyoka-pids v1\n# run {run_id}\n# owner {owner}\n# instance {instance}\n# cgroup-v1 main {}\n# cgroup-v1 main {}\n",
        named.display(),
        foreign.display()
    );
    let run_dir = fake_run(&sandbox.reports(), &run_id, ledger.as_bytes());
    let report = clean_run(&run_dir, &options()).unwrap();
    let left = [&named, &unnamed, &foreign].map(|p| p.exists());
    for dir in [&named, &unnamed, &foreign, &ours, &theirs] {
        let _ = std::fs::remove_dir(dir);
    }
    assert_eq!(left, [false, true, true], "{report:#?}");
    let foreign_record = report.cgroups.iter().find(|c| c.leaf.path == foreign);
    assert!(foreign_record.is_some_and(|c| !c.removed), "{report:#?}");
}

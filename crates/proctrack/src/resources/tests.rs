//! Unit tests of finding the controllers: the v1 hierarchy of a hybrid host, and a v2 tree
//! that does or does not delegate one.

use std::path::PathBuf;

use super::{v1_base, v2_delegates};

const MOUNTINFO: &str = "\
30 25 0:26 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
31 25 0:27 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
32 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
33 25 0:29 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
";

const OWN: &str = "\
8:pids:/
4:memory:/session/abc
2:cpu,cpuacct:/x
0::/
";

#[track_caller]
fn check(name: &str, expected: Option<&str>) {
    assert_eq!(v1_base(name, MOUNTINFO, OWN), expected.map(PathBuf::from));
}

#[test]
fn a_hybrid_host_has_the_controllers_in_v1() {
    check("memory", Some("/sys/fs/cgroup/memory/session/abc"));
    check("pids", Some("/sys/fs/cgroup/pids"));
    check("cpu", Some("/sys/fs/cgroup/cpu,cpuacct/x"));
    check("hugetlb", None);
}

#[test]
fn a_hostile_cgroup_path_is_not_followed() {
    assert_eq!(v1_base("pids", MOUNTINFO, "8:pids:/../../etc\n"), None);
}

#[test]
fn a_v2_tree_delegates_what_its_subtree_control_enables() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cgroup.controllers"), "cpu memory pids\n").unwrap();
    std::fs::write(dir.path().join("cgroup.subtree_control"), "memory pids\n").unwrap();
    assert_eq!(v2_delegates(dir.path(), "memory"), Ok(()));
    std::fs::write(dir.path().join("cgroup.controllers"), "hugetlb\n").unwrap();
    std::fs::write(dir.path().join("cgroup.subtree_control"), "hugetlb\n").unwrap();
    let why = v2_delegates(dir.path(), "memory").unwrap_err();
    assert!(why.contains("does not offer memory"), "{why}");
}

/// See: the CLI test `tasks::tasks_check_lists_the_tasks_that_do_not_behave`, whose CPU-limited
/// review could not be started ("cannot create cgroup …/cpu/hyoka-check-…/lenient.oracle.review")
/// when a sibling trial's teardown removed the run's v1 directory between the making of that
/// directory and of the leaf in it. Leaves made and removed at once, as workers do, are all
/// made. (A plain directory stands for the hierarchy: the race is between `mkdir` and `rmdir`.)
#[test]
fn sibling_v1_leaves_made_and_removed_at_once_are_all_made() {
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("hyoka-run-x");
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for worker in 0..4 {
            let (run, failures) = (&run, &failures);
            scope.spawn(move || {
                for round in 0..300 {
                    let leaf = run.join(format!("e{worker}-{round}"));
                    match crate::cgroup::make_leaf_dir(run, &leaf) {
                        Ok(()) => {
                            std::fs::remove_dir(&leaf).unwrap();
                            let _ = std::fs::remove_dir(run);
                        }
                        Err(e) => failures.lock().unwrap().push(e.to_string()),
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "leaves that could not be made: {failures:?}"
    );
}

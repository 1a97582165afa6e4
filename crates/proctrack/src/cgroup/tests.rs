//! Tests of cgroup2 mount and path discovery.
#![allow(clippy::print_stderr, reason = "tests say on stderr why they skip")]

use super::*;

#[track_caller]
fn check(mountinfo: &str, expected: Option<&str>) {
    assert_eq!(cgroup2_mount(mountinfo), expected.map(PathBuf::from));
}

#[test]
fn finds_the_unified_mount_on_hybrid_hosts() {
    check(
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
         32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
         41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
        Some("/sys/fs/cgroup/unified"),
    );
}

#[test]
fn finds_the_pure_v2_mount_and_unescapes() {
    check(
        "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
        Some("/sys/fs/cgroup"),
    );
    check(
        "30 23 0:26 / /mnt/my\\040cg rw - cgroup2 none rw\n",
        Some("/mnt/my cg"),
    );
}

#[test]
fn no_cgroup2_means_none() {
    check(
        "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
        None,
    );
    check("", None);
    check("garbage without separator cgroup2\n", None);
}

#[test]
fn own_cgroup_is_relative_and_clean() {
    assert_eq!(own_cgroup("0::/\n"), Some(PathBuf::new()));
    assert_eq!(
        own_cgroup("4:memory:/x\n0::/user.slice/a.scope\n"),
        Some(PathBuf::from("user.slice/a.scope"))
    );
    assert_eq!(own_cgroup("0::/a/../b\n"), None);
    assert_eq!(own_cgroup("4:memory:/x\n"), None);
}

#[test]
fn recorded_leaves_must_look_like_ours() {
    let mount = Path::new("/sys/fs/cgroup/unified");
    for bad in [
        "relative/hyoka-r1/main",
        "/sys/fs/cgroup/unified/hyoka-r1/../../etc",
        "/sys/fs/cgroup/unified/other/main",
        "/tmp/hyoka-r1/main",
    ] {
        assert!(
            CgroupLeaf::open_recorded(Path::new(bad), "r1", None, mount, None).is_none(),
            "{bad}"
        );
    }
}

/// See: issue 27, "Two `--shard` processes at once on one machine lost the cgroup layer on 6
/// of 1,050 trials with nothing in `layers_lost`". Evals of one run make and remove their
/// leaves at once (the workers of a run): each removal also removes the run's directory when
/// it was the last leaf, which may fall between another eval making that directory and its
/// leaf in it. Every leaf must still be made. (Skips where no cgroup v2 is writable.)
#[test]
fn sibling_leaves_made_and_removed_at_once_are_all_made() {
    let Ok(root) = CgroupRoot::detect() else {
        eprintln!("skipping: no writable cgroup v2 here");
        return;
    };
    let instance = Instance::generate().unwrap();
    let run = format!("leafrace{}", std::process::id());
    let failures = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for worker in 0..4 {
            let (root, instance, run, failures) = (&root, &instance, &run, &failures);
            scope.spawn(move || {
                for round in 0..300 {
                    match root.create_leaf(run, instance, &format!("e{worker}-{round}")) {
                        Ok(leaf) => assert!(leaf.remove(Duration::ZERO, &crate::SystemClock)),
                        Err(e) => {
                            eprintln!("{e}");
                            failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let _ = std::fs::remove_dir(root.base.join(run_dir_name(&run, Some(&instance))));
    assert_eq!(failures.into_inner(), 0, "leaves that could not be made");
}

//! Tests of cgroup2 mount and path discovery.

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

//! Unit tests of the mount plan: what `prepare` accepts, refuses and creates.

use std::path::{Path, PathBuf};

use super::{Mount, MountPlan, RootEntry, Step};

#[track_caller]
fn check(plan: &MountPlan, expected: Result<&[&str], &str>) {
    match (plan.prepare(), expected) {
        (Ok(prepared), Ok(steps)) => {
            let got: Vec<String> = prepared
                .steps
                .iter()
                .map(|step| match step {
                    Step::Tmpfs(p, _) => format!("tmpfs {}", p.to_string_lossy()),
                    Step::Mkdir(p) => format!("mkdir {}", p.to_string_lossy()),
                    Step::Touch(p) => format!("touch {}", p.to_string_lossy()),
                    Step::Attach(slot, p) => format!("attach {slot} {}", p.to_string_lossy()),
                    Step::ReadOnly(p) => format!("ro {}", p.to_string_lossy()),
                    Step::Symlink(_, p) => format!("link {}", p.to_string_lossy()),
                    Step::Devpts(p) => format!("devpts {}", p.to_string_lossy()),
                    Step::Grant(p, _) => format!("grant {}", p.to_string_lossy()),
                })
                .collect();
            assert_eq!(got, steps);
        }
        (Err(e), Err(wanted)) => assert!(e.to_string().contains(wanted), "{e}"),
        (got, wanted) => panic!("got {got:?}, wanted {wanted:?}"),
    }
}

fn bind(source: &Path, target: &str, writable: bool) -> Mount {
    Mount::Bind {
        source: source.to_owned(),
        target: PathBuf::from(target),
        writable,
    }
}

#[test]
fn a_bind_inside_a_tmpfs_gets_its_mount_points() {
    let dir = tempfile::tempdir().unwrap();
    let plan = MountPlan {
        mounts: vec![
            Mount::Tmpfs {
                target: "/run".into(),
                writable: false,
            },
            bind(dir.path(), "/run/a/b", true),
        ],
        cwd: None,
    };
    check(
        &plan,
        Ok(&[
            "tmpfs /run",
            "mkdir /run/a",
            "mkdir /run/a/b",
            "attach 0 /run/a/b",
            "ro /run",
        ]),
    );
}

#[test]
fn a_file_bind_gets_a_file_mount_point() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("events");
    std::fs::write(&file, "").unwrap();
    let plan = MountPlan {
        mounts: vec![
            Mount::Tmpfs {
                target: "/home".into(),
                writable: true,
            },
            bind(&file, "/home/u/events", true),
        ],
        cwd: None,
    };
    check(
        &plan,
        Ok(&[
            "tmpfs /home",
            "grant /home",
            "mkdir /home/u",
            "touch /home/u/events",
            "attach 0 /home/u/events",
        ]),
    );
}

#[test]
fn a_target_missing_inside_a_host_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plan = MountPlan {
        mounts: vec![bind(dir.path(), "/usr/hyoka-no-such-dir/app", true)],
        cwd: None,
    };
    check(&plan, Err("cannot be made (the host is read-only)"));
}

#[test]
fn a_top_level_target_the_host_lacks_is_made_in_a_new_root() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("reward");
    std::fs::write(&file, "").unwrap();
    let plan = MountPlan {
        mounts: vec![
            bind(dir.path(), "/hyoka-no-such-dir/app", true),
            bind(&file, "/hyoka-no-such-file", false),
            bind(dir.path(), "/usr", false),
        ],
        cwd: Some("/hyoka-no-such-dir/app".into()),
    };
    // The mount points are made in the new root before anything is read-only, so the steps
    // only attach.
    check(
        &plan,
        Ok(&[
            "attach 0 /hyoka-no-such-dir/app",
            "attach 1 /hyoka-no-such-file",
            "attach 2 /usr",
        ]),
    );
    let prepared = plan.prepare().unwrap();
    let root = prepared.new_root.as_ref().expect("a new root");
    let points: Vec<String> = root
        .points
        .iter()
        .map(|step| match step {
            Step::Mkdir(p) => format!("mkdir {}", p.to_string_lossy()),
            Step::Touch(p) => format!("touch {}", p.to_string_lossy()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        points,
        vec![
            "mkdir /tmp/hyoka-no-such-dir",
            "mkdir /tmp/hyoka-no-such-dir/app",
            "touch /tmp/hyoka-no-such-file",
        ]
    );
    // Every top-level entry of the host is in it: /usr bound, /tmp left empty.
    let names: Vec<String> = root
        .entries
        .iter()
        .map(|e| match e {
            RootEntry::Bind { to, .. } | RootEntry::Link(_, to) | RootEntry::Empty(to) => {
                to.to_string_lossy().into_owned()
            }
        })
        .collect();
    assert!(names.contains(&"/tmp/usr".to_owned()), "{names:?}");
    assert!(
        root.entries
            .iter()
            .any(|e| matches!(e, RootEntry::Empty(to) if to.as_bytes() == b"/tmp/tmp")),
        "{names:?}"
    );
    assert_eq!(prepared.cwd.as_deref(), Some(c"/hyoka-no-such-dir/app"));
}

#[test]
fn a_plan_on_the_host_needs_no_new_root() {
    let dir = tempfile::tempdir().unwrap();
    let plan = MountPlan {
        mounts: vec![bind(dir.path(), "/tmp", true)],
        cwd: Some("relative".into()),
    };
    check(&plan, Err("is not an absolute path"));
    let plan = MountPlan { cwd: None, ..plan };
    assert!(plan.prepare().unwrap().new_root.is_none());
}

#[test]
fn a_mount_point_inside_a_read_only_bind_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let plan = MountPlan {
        mounts: vec![
            bind(dir.path(), "/tmp", false),
            bind(other.path(), "/tmp/x/y", true),
        ],
        cwd: None,
    };
    check(&plan, Err("the bind around it is read-only"));
}

#[test]
fn relative_paths_and_missing_sources_are_refused() {
    let plan = MountPlan {
        mounts: vec![Mount::Tmpfs {
            target: "run".into(),
            writable: false,
        }],
        cwd: None,
    };
    check(&plan, Err("not an absolute path"));
    let plan = MountPlan {
        mounts: vec![bind(Path::new("/hyoka-no-such-source"), "/tmp", true)],
        cwd: None,
    };
    check(&plan, Err("cannot bind /hyoka-no-such-source"));
}

#[test]
fn hides_follows_the_last_entry_that_covers_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let plan = MountPlan {
        mounts: vec![
            Mount::Tmpfs {
                target: "/root".into(),
                writable: false,
            },
            bind(Path::new("/root/tools"), "/root/tools", false),
            // The private `/tmp`: the eval's own directory, not the host's `/tmp`.
            bind(dir.path(), "/tmp", true),
        ],
        cwd: None,
    };
    assert!(plan.hides(Path::new("/root/.ssh/id_ed25519")));
    assert!(!plan.hides(Path::new("/root/tools/bin/agent")));
    assert!(!plan.hides(Path::new("/usr/bin/sh")));
    assert!(plan.hides(Path::new("/tmp/unpacked/hyoka")));
}

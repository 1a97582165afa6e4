//! Escape attempts that kill a containment layer: an agent that SIGKILLs its subreaper shim
//! (issue 11, finding 3) must still leave nothing behind, and the report must say the layer
//! was lost.

use std::path::Path;
use std::process::Command;

use crate::support::{Scratch, as_nobody, need_root, pid_alive, read_pid, stderr};

/// The agent of finding 3: it waits 0.7 s (between two 500 ms refreshes, so the escapee is
/// born unseen), double-forks an escapee that clears its environment, leaves the session
/// (and, as root, moves itself to the root cgroup), then SIGKILLs the shim (its parent, and
/// the escapee's subreaper) and lingers. The escapee lets go of the agent's output pipes, so
/// the run does not wait for it to close them (that is finding 4, not this one).
fn shim_killer(pid_file: &Path) -> String {
    let p = pid_file.display();
    format!(
        "sleep 0.7; \
         ( setsid env -i /bin/sh -c 'for c in /sys/fs/cgroup/unified /sys/fs/cgroup; do echo $$ > $c/cgroup.procs 2>/dev/null && break; done; \
           echo $$ > {p}.tmp && /bin/mv {p}.tmp {p}; exec /bin/sleep 600' </dev/null >/dev/null 2>&1 & ); \
         while [ ! -s {p} ]; do sleep 0.01; done; \
         kill -9 $PPID; exec sleep 600"
    )
}

/// Runs the shim killer as `run_id` and checks that no process survives, that the report
/// records the lost shim, and that survivors are counted (0), not assumed.
fn shim_killed_by_its_agent(s: &Scratch, pid_dir: &Path, nobody: bool) {
    let pid_file = pid_dir.join("escapee.pid");
    let mut cmd = s.hyoka("run");
    cmd.args(["--run-id", "shimkill", "--grace", "1s", "--timeout", "60s"])
        .args(["--", "sh", "-c", &shim_killer(&pid_file)]);
    if nobody {
        as_nobody(&mut cmd);
    }
    let out = cmd.output().unwrap();
    let escapee = read_pid(&pid_file);
    let survived = pid_alive(escapee);
    if survived {
        kill(escapee);
    }
    assert!(
        !survived,
        "the escapee {escapee} survived its run: {}",
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = s.report("shimkill", "main");
    let cleanup = &report["cleanup"];
    let lost = cleanup["layers_lost"].as_array().unwrap();
    assert!(lost.iter().any(|l| l == "shim"), "{report}");
    // With a cgroup (root), the escapee also left the leaf, and that is reported too.
    let had_cgroup = cleanup["layers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l == "cgroup");
    assert_eq!(lost.iter().any(|l| l == "cgroup"), had_cgroup, "{report}");
    assert_eq!(cleanup["survivors"], 0, "{report}");
    assert!(cleanup["processes_killed"].as_u64() >= Some(2), "{report}");
    s.assert_no_workspaces();
}

/// Regression test for issue 11, finding 3 (as root, where the escapee also leaves the
/// cgroup).
#[test]
fn an_agent_that_kills_its_shim_leaves_no_survivor_as_root() {
    if !need_root("an_agent_that_kills_its_shim_leaves_no_survivor_as_root") {
        return;
    }
    let s = Scratch::new();
    shim_killed_by_its_agent(&s, s.path(), false);
}

/// Regression test for issue 11, finding 3, as `nobody` (no cgroup layer at all).
#[test]
fn an_agent_that_kills_its_shim_leaves_no_survivor_as_nobody() {
    if !need_root("an_agent_that_kills_its_shim_leaves_no_survivor_as_nobody") {
        return;
    }
    let s = Scratch::for_nobody();
    shim_killed_by_its_agent(&s, &s.files(), true);
}

/// Kills `pid` (a test's own leftover) so a failing assertion leaks nothing.
fn kill(pid: u32) {
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
}

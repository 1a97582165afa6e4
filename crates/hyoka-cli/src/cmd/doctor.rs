//! `hyoka doctor`: which containment layers this machine gives, what falls back to what, and
//! what to do about it.

use hyoka_proctrack::{Capabilities, NetIsolation, SandboxSupport};
use serde::Serialize;

use crate::args::DoctorArgs;
use crate::exit::{ExitStatus, Fail};
use crate::out::outln;

/// One capability the machine has or lacks.
#[derive(Debug, Serialize)]
struct Check {
    /// A short name.
    name: &'static str,
    /// Whether hyoka can use it.
    available: bool,
    /// What was found.
    found: String,
    /// What it buys, or what replaces it when it is missing.
    effect: String,
    /// What to do to get it, when it is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    advice: Option<String>,
}

pub(crate) async fn exec(args: &DoctorArgs) -> Result<ExitStatus, Fail> {
    let (caps, sandbox) =
        tokio::task::spawn_blocking(|| (Capabilities::detect(), SandboxSupport::detect()))
            .await
            .map_err(|e| Fail::failure(format!("cannot probe the machine: {e}")))?;
    let tmux = hyoka_respawn::TmuxTerminal::version().await;
    let mut checks = checks(&caps, tmux.as_deref());
    checks.extend(sandbox_checks(&sandbox));
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&checks).unwrap_or_default()
        );
    } else {
        outln!("hyoka doctor: what this machine gives hyoka\n");
        for check in &checks {
            outln!(
                "  {} {:<11} {}",
                if check.available { "✓" } else { "✗" },
                check.name,
                check.found
            );
            outln!("                {}", check.effect);
            if let Some(advice) = &check.advice {
                outln!("                fix: {advice}");
            }
        }
        let cgroup = checks.iter().any(|c| c.name == "cgroup v2" && c.available);
        let shim = checks.iter().any(|c| c.name == "subreaper" && c.available);
        outln!(
            "\ncontainment in force: {}",
            match (cgroup, shim) {
                (true, true) =>
                    "cgroup leaf + subreaper shim + session + marker (everything is caught)",
                (false, true) =>
                    "subreaper shim + session + marker (everything is caught unless the shim itself is SIGKILLed)",
                (true, false) => "cgroup leaf + session + marker (everything is caught)",
                (false, false) =>
                    "session + marker only (double-forked daemons that clear their environment escape)",
            }
        );
    }
    Ok(ExitStatus::Success)
}

fn checks(caps: &Capabilities, tmux: Option<&str>) -> Vec<Check> {
    let mut checks = Vec::new();
    checks.push(match &caps.cgroup {
        Some(root) => Check {
            name: "cgroup v2",
            available: true,
            found: format!(
                "writable at {} ({})",
                root.base.display(),
                if root.has_kill { "cgroup.kill" } else { "freeze and kill, Linux < 5.14" }
            ),
            effect: "a leaf per eval: every descendant is contained and killed at once, however it detaches".to_owned(),
            advice: None,
        },
        None => Check {
            name: "cgroup v2",
            available: false,
            found: caps.cgroup_unavailable.clone().unwrap_or_else(|| "not available".to_owned()),
            effect: "falls back to the subreaper shim, sessions and the HYOKA_RUN_ID marker".to_owned(),
            advice: Some(
                "run as root, or delegate a cgroup subtree (systemd-run --user --scope -p Delegate=yes hyoka …)".to_owned(),
            ),
        },
    });
    checks.push(Check {
        name: "subreaper",
        available: caps.subreaper,
        found: if caps.subreaper { "PR_SET_CHILD_SUBREAPER works".to_owned() } else { "not supported".to_owned() },
        effect: if caps.subreaper {
            "the shim keeps double-forked and setsid descendants in view and stops them if hyoka dies".to_owned()
        } else {
            "re-parented descendants are found only by the marker scan".to_owned()
        },
        advice: (!caps.subreaper).then(|| "use Linux 3.4 or newer".to_owned()),
    });
    checks.push(Check {
        name: "pidfd",
        available: caps.pidfd,
        found: if caps.pidfd {
            "pidfd_open works".to_owned()
        } else {
            "not supported".to_owned()
        },
        effect: if caps.pidfd {
            "every signal goes through a pidfd opened before the identity check: no pid-reuse race"
                .to_owned()
        } else {
            "signals are identity-checked but a pid could in theory be reused in between".to_owned()
        },
        advice: (!caps.pidfd).then(|| "use Linux 5.3 or newer".to_owned()),
    });
    checks.push(Check {
        name: "tmux",
        available: tmux.is_some(),
        found: tmux.map_or_else(|| "not found on PATH".to_owned(), str::to_owned),
        effect: if tmux.is_some() {
            "`hyoka respawn --backend tmux` keeps sessions alive across a restart of hyoka"
                .to_owned()
        } else {
            "`hyoka respawn` uses its built-in PTY backend".to_owned()
        },
        advice: tmux
            .is_none()
            .then(|| "install tmux (apt-get install tmux) for re-attachable sessions".to_owned()),
    });
    let (watches, instances) = hyoka_eval::inotify_limits();
    let enough = watches.is_some_and(|w| w >= 65_536) && instances.is_some_and(|i| i >= 64);
    checks.push(Check {
        name: "inotify",
        available: watches.is_some(),
        found: format!(
            "max_user_watches {}, max_user_instances {}",
            watches.map_or_else(|| "?".to_owned(), |w| w.to_string()),
            instances.map_or_else(|| "?".to_owned(), |i| i.to_string())
        ),
        effect: "file and size limits are watched as files change; without watches, the workspace is polled twice a second".to_owned(),
        advice: (!enough).then(|| {
            "raise the limits for big workspaces and many workers: sysctl fs.inotify.max_user_watches=524288 fs.inotify.max_user_instances=512".to_owned()
        }),
    });
    checks
}

fn sandbox_checks(support: &SandboxSupport) -> [Check; 2] {
    let landlock = Check {
        name: "landlock",
        available: support.landlock.is_ok(),
        found: match &support.landlock {
            Ok(abi) => format!(
                "ABI {abi} (sandboxes run at ABI {})",
                support.landlock_in_force().unwrap_or(*abi)
            ),
            Err(why) => why.clone(),
        },
        effect: if support.landlock.is_ok() {
            "`--sandbox`: the agent's whole tree writes only to its workspace, home and temp directory"
                .to_owned()
        } else {
            "`--sandbox` refuses to run; `--sandbox=best-effort` runs without it".to_owned()
        },
        advice: support
            .landlock
            .is_err()
            .then(|| "use Linux 6.2 or newer with landlock in the lsm= boot parameter".to_owned()),
    };
    let (available, found) = match &support.network {
        NetIsolation::Direct => (true, "made directly (CAP_SYS_ADMIN)".to_owned()),
        NetIsolation::UserNamespace => (true, "made through a user namespace".to_owned()),
        NetIsolation::Unavailable(why) => (false, why.clone()),
    };
    let network = Check {
        name: "netns",
        available,
        found,
        effect: if available {
            "`--network none`: the tree gets a network namespace with only loopback".to_owned()
        } else {
            "`--network none` refuses to run".to_owned()
        },
        advice: (!available).then(|| {
            "run as root, or allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)".to_owned()
        }),
    };
    [landlock, network]
}

//! Chaos: many runs of a hostile agent, their owners killed at random moments (SIGKILL,
//! SIGTERM, SIGINT, SIGINT twice), then `hyoka clean`. Nothing may survive: no process, no
//! workspace, no cgroup leaf, and every ledger is marked cleaned. And a suite whose shims are
//! SIGKILLed at random moments, over a hundred times: hyoka, a subreaper too, takes their
//! orphans and leaves none behind, with no `clean` at all.
//!
//! `HYOKA_SOAK_ROUNDS=N` repeats the whole scenario N times (a soak for local use); the seed
//! is printed so a failure can be replayed with `HYOKA_CHAOS_SEED`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Scratch, escapee_pids, hyoka_path, pid_alive, send, stderr};

/// How many evals of the shim chaos suite (one shim kill each, at most).
const SHIM_KILLS: usize = 110;

const RUNS: usize = 12;

#[derive(Debug, Clone, Copy)]
enum Kill {
    Sigkill,
    Sigterm,
    Sigint,
    SigintTwice,
}

/// Processes whose environment carries `HYOKA_RUN_ID=<prefix>…`.
fn marked_processes(prefix: &str) -> Vec<u32> {
    let needle = format!("HYOKA_RUN_ID={prefix}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|var| var.starts_with(needle.as_bytes()))
            }) && pid_alive(*pid)
        })
        .collect()
}

/// The rounds and the seed, from `HYOKA_SOAK_ROUNDS` and `HYOKA_CHAOS_SEED`.
fn rounds_and_seed() -> (u32, u64) {
    let rounds: u32 = std::env::var("HYOKA_SOAK_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let seed: u64 = std::env::var("HYOKA_CHAOS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    (rounds, seed)
}

#[test]
fn owners_killed_at_random_moments_are_repaired_by_clean() {
    let (rounds, seed) = rounds_and_seed();
    eprintln!("chaos: seed {seed}, {rounds} round(s) of {RUNS} runs");
    let mut rng = fastrand::Rng::with_seed(seed);
    for round in 0..rounds {
        chaos_round(&mut rng, round);
    }
}

/// Issue 11, finding 3, at scale: a suite of hostile agents (escapees that leave the session,
/// ignore SIGTERM, double-fork and clear their environment) whose shims are SIGKILLed at
/// random moments, from before the agent starts to well after its escapees exist. Every
/// report says 0 survivors, and `/proc` agrees, without any `clean`.
#[test]
fn shims_killed_at_random_moments_leave_no_survivor() {
    let (rounds, seed) = rounds_and_seed();
    eprintln!("shim chaos: seed {seed}, {rounds} round(s) of {SHIM_KILLS} evals");
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x5348_494d);
    for round in 0..rounds {
        shim_round(&mut rng, round);
    }
}

/// The shims among `parent`'s children (`hyoka-shim …` or `hyoka __shim …`), with their
/// start ticks.
fn shims_of(parent: u32) -> Vec<hyoka_proctrack::ProcRef> {
    use hyoka_proctrack::ProcTable as _;
    let table = hyoka_proctrack::NativeProcTable::new();
    table
        .snapshot()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| i64::from(p.ppid) == i64::from(parent) && !p.is_gone())
        .filter(|p| {
            std::fs::read(format!("/proc/{}/cmdline", p.pid))
                .is_ok_and(|c| is_shim_command_line(&c))
        })
        .map(|p| p.proc_ref())
        .collect()
}

/// Whether a `/proc/<pid>/cmdline` is a shim's: the small `hyoka-shim` binary or `hyoka __shim`.
fn is_shim_command_line(cmdline: &[u8]) -> bool {
    let mut args = cmdline.split(|&b| b == 0);
    let program = args.next().unwrap_or_default();
    program.rsplit(|&b| b == b'/').next() == Some(b"hyoka-shim".as_slice())
        || args.any(|arg| arg == b"__shim")
}

fn shim_round(rng: &mut fastrand::Rng, round: u32) {
    use hyoka_proctrack::Signaller as _;
    // As `nobody` when we are root: no cgroup layer, so only the subreaper keeps the orphans
    // of a killed shim (a cgroup leaf would hold these escapees on its own).
    let nobody = crate::support::is_root();
    let s = if nobody {
        Scratch::for_nobody()
    } else {
        Scratch::new()
    };
    let run_id = format!("shimchaos{round}-{}", rng.u32(..));
    let pids = s.files().join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    if nobody {
        crate::support::give_to_nobody(&pids);
    }
    let evals: String = (0..SHIM_KILLS)
        .map(|i| {
            format!(
                "  - id: e{i}\n    command: [{hyoka}, sim-agent, --escapees, --linger, 20s, --pid-file, {pids}/{i}]\n",
                hyoka = hyoka_path(),
                pids = pids.display()
            )
        })
        .collect();
    let suite = s.path().join("suite.yaml");
    std::fs::write(
        &suite,
        format!("defaults:\n  timeout: 40s\n  grace: 1s\nevals:\n{evals}"),
    )
    .unwrap();
    let mut command = s.hyoka("run");
    command
        .args(["--run-id", &run_id, "--workers", "12", "--suite"])
        .arg(&suite)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if nobody {
        crate::support::as_nobody(&mut command);
    }
    let mut hyoka = command.spawn().unwrap();
    let signaller = hyoka_proctrack::NativeSignaller::new();
    let mut doomed: Vec<(hyoka_proctrack::ProcRef, Instant)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut kills = 0usize;
    while hyoka.try_wait().unwrap().is_none() {
        for shim in shims_of(hyoka.id()) {
            if seen.insert(shim) {
                // From at once to well after the escapees exist.
                doomed.push((
                    shim,
                    Instant::now() + Duration::from_millis(rng.u64(0..1200)),
                ));
            }
        }
        let now = Instant::now();
        doomed.retain(|&(shim, at)| {
            if at > now {
                return true;
            }
            if signaller.signal(shim, hyoka_proctrack::Signal::Kill)
                == hyoka_proctrack::Delivery::Sent
            {
                kills += 1;
            }
            false
        });
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = hyoka.wait_with_output().unwrap();
    assert_ne!(out.status.code(), Some(2), "{}", stderr(&out));
    let mut survivors = Vec::new();
    for i in 0..SHIM_KILLS {
        survivors.extend(
            escapee_pids(&pids.join(i.to_string()))
                .into_iter()
                .filter(|&p| pid_alive(p)),
        );
    }
    survivors.extend(marked_processes(&run_id));
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
    let mut lost = 0;
    for i in 0..SHIM_KILLS {
        let report = s.report(&run_id, &format!("e{i}"));
        let cleanup = &report["cleanup"];
        assert_eq!(cleanup["survivors"], 0, "e{i}: {report}");
        lost += usize::from(
            cleanup["layers_lost"]
                .as_array()
                .is_some_and(|l| l.iter().any(|x| x == "shim")),
        );
    }
    s.assert_no_workspaces();
    let ledger = std::fs::read_to_string(s.reports().join(&run_id).join("pids.txt")).unwrap();
    assert!(ledger.contains("# cleaned "), "{ledger}");
    assert!(kills >= 100, "only {kills} shims were killed");
    eprintln!(
        "shim chaos round {round}: {kills} shims SIGKILLed, {lost} reported lost; survivors 0"
    );
}

fn chaos_round(rng: &mut fastrand::Rng, round: u32) {
    let s = Scratch::new();
    let prefix = format!("chaos{round}-{}", rng.u32(..));
    let mut runs = Vec::new();
    for i in 0..RUNS {
        let pids = s.path().join(format!("{i}.pids"));
        let child = s
            .hyoka("run")
            .args(["--run-id", &format!("{prefix}-{i}"), "--grace", "1s"])
            .args([
                "--events",
                "stream-json",
                "--",
                hyoka_path(),
                "sim-agent",
                "--escapees",
                "--turns",
                "50",
            ])
            .args([
                "--turn-delay",
                "20ms",
                "--files",
                "20",
                "--linger",
                "30s",
                "--pid-file",
            ])
            .arg(&pids)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let kill = match rng.u8(0..4) {
            0 => Kill::Sigkill,
            1 => Kill::Sigterm,
            2 => Kill::Sigint,
            _ => Kill::SigintTwice,
        };
        // The moment: anywhere from right after start (workspace or ledger not yet written)
        // to well after the escapees exist.
        let at = Duration::from_millis(rng.u64(0..1500));
        runs.push((child, kill, Instant::now() + at, pids));
    }
    let mut killed = [0usize; 4];
    for (child, kill, at, _) in &mut runs {
        if let Some(wait) = at.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        match kill {
            Kill::Sigkill => {
                send(child, rustix::process::Signal::KILL);
                killed[0] += 1;
            }
            Kill::Sigterm => {
                send(child, rustix::process::Signal::TERM);
                killed[1] += 1;
            }
            Kill::Sigint => {
                send(child, rustix::process::Signal::INT);
                killed[2] += 1;
            }
            Kill::SigintTwice => {
                send(child, rustix::process::Signal::INT);
                send(child, rustix::process::Signal::INT);
                killed[3] += 1;
            }
        }
    }
    for (child, kill, _, _) in &mut runs {
        let status = child.wait().unwrap();
        match kill {
            Kill::Sigkill => {}
            // A graceful stop exits 130/143; a run that was killed before its handlers were
            // installed dies of the signal itself. Either way it must not report success.
            Kill::Sigterm => assert!(matches!(status.code(), Some(143) | None), "{status:?}"),
            Kill::Sigint | Kill::SigintTwice => {
                assert!(matches!(status.code(), Some(130) | None), "{status:?}");
            }
        }
    }
    let out = s.hyoka("clean").args(["--grace", "1s"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "clean left something: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    // Orphans killed by clean may linger as zombies until init reaps them; zombies count as
    // gone, and a live process is what this test looks for.
    let mut survivors = Vec::new();
    for (_, _, _, pids) in &runs {
        survivors.extend(escapee_pids(pids).into_iter().filter(|&p| pid_alive(p)));
    }
    survivors.extend(marked_processes(&prefix));
    assert!(survivors.is_empty(), "survivors after clean: {survivors:?}");
    s.assert_no_workspaces();
    if let Ok(entries) = std::fs::read_dir(s.reports()) {
        for run in entries.flatten() {
            let ledger = run.path().join("pids.txt");
            if let Ok(text) = std::fs::read_to_string(&ledger) {
                assert!(
                    text.lines().any(|l| l.starts_with("# cleaned ")),
                    "{} not marked cleaned:\n{text}",
                    ledger.display()
                );
            }
        }
    }
    let leaves: Vec<_> = std::fs::read_dir("/sys/fs/cgroup/unified")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("hyoka-{prefix}"))
        })
        .map(|e| e.path())
        .collect();
    assert!(leaves.is_empty(), "cgroups left: {leaves:?}");
    eprintln!(
        "chaos round {round}: {RUNS} runs; SIGKILL {}, SIGTERM {}, SIGINT {}, SIGINT twice {}; survivors 0",
        killed[0], killed[1], killed[2], killed[3]
    );
}

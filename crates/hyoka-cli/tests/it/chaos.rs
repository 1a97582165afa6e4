//! Chaos: many runs of a hostile agent, their owners killed at random moments (SIGKILL,
//! SIGTERM, SIGINT, SIGINT twice), then `hyoka clean`. Nothing may survive: no process, no
//! workspace, no cgroup leaf, and every ledger is marked cleaned.
//!
//! `HYOKA_SOAK_ROUNDS=N` repeats the whole scenario N times (a soak for local use); the seed
//! is printed so a failure can be replayed with `HYOKA_CHAOS_SEED`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Scratch, escapee_pids, hyoka_path, pid_alive, send, stderr};

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

#[test]
fn owners_killed_at_random_moments_are_repaired_by_clean() {
    let rounds: u32 = std::env::var("HYOKA_SOAK_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let seed: u64 = std::env::var("HYOKA_CHAOS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("chaos: seed {seed}, {rounds} round(s) of {RUNS} runs");
    let mut rng = fastrand::Rng::with_seed(seed);
    for round in 0..rounds {
        chaos_round(&mut rng, round);
    }
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

//! Tests of limit resolution and enforcement.

use super::*;

#[track_caller]
fn check(limits: LimitSet, script: &str, expected: Option<(Termination, Counts)>) {
    let mut monitor = Monitor::new(limits);
    for step in script.split_whitespace() {
        match step {
            "t" => {
                let _ = monitor.turn();
            }
            "a" => {
                let _ = monitor.action();
            }
            usage => {
                let (files, bytes) = usage.split_once('/').unwrap();
                let _ = monitor.usage(files.parse().unwrap(), bytes.parse().unwrap());
            }
        }
    }
    assert_eq!(monitor.stopped(), expected, "{script}");
}

fn limits(turns: u64, files: u64, bytes: u64, actions: u64) -> LimitSet {
    LimitSet {
        max_turns: turns,
        max_files: files,
        max_output_size: bytes,
        max_session_actions: actions,
        ..LimitSet::default()
    }
}

fn counts(turns: u64, actions: u64, files: u64, output_bytes: u64) -> Counts {
    Counts {
        turns,
        actions,
        files,
        output_bytes,
        ..Counts::default()
    }
}

#[test]
fn a_limit_is_crossed_when_the_count_exceeds_it() {
    check(limits(2, 0, 0, 0), "t t", None);
    check(
        limits(2, 0, 0, 0),
        "t t t",
        Some((Termination::MaxTurns, counts(3, 0, 0, 0))),
    );
    check(
        limits(0, 0, 0, 1),
        "a t a",
        Some((Termination::MaxSessionActions, counts(1, 2, 0, 0))),
    );
    check(
        limits(0, 3, 0, 0),
        "1/10 3/10 4/10",
        Some((Termination::MaxFiles, counts(0, 0, 4, 10))),
    );
    check(
        limits(0, 0, 100, 0),
        "1/100 1/101",
        Some((Termination::MaxOutputSize, counts(0, 0, 1, 101))),
    );
}

#[test]
fn zero_disables_and_the_first_crossing_wins() {
    check(limits(0, 0, 0, 0), "t t t a a a 99/999999", None);
    // Files and bytes crossed by the same update: files is checked first.
    check(
        limits(0, 1, 1, 0),
        "2/2",
        Some((Termination::MaxFiles, counts(0, 0, 2, 2))),
    );
    // Later crossings do not overwrite the first, and counts freeze at the first.
    check(
        limits(1, 1, 0, 0),
        "t t 5/5 t",
        Some((Termination::MaxTurns, counts(2, 0, 0, 0))),
    );
}

#[test]
fn precedence_is_cli_then_eval_then_defaults_then_builtin() {
    let cli = PartialLimits {
        max_turns: Some(3),
        ..PartialLimits::default()
    };
    let eval = PartialLimits {
        max_turns: Some(10),
        max_files: Some(7),
        ..PartialLimits::default()
    };
    let defaults = PartialLimits {
        max_files: Some(99),
        max_output_size: Some(0),
        ..PartialLimits::default()
    };
    assert_eq!(
        cli.or(eval).or(defaults).resolve(),
        limits(3, 7, 0, DEFAULT_MAX_SESSION_ACTIONS)
    );
    assert_eq!(PartialLimits::default().resolve(), LimitSet::default());
}

/// Regression test for issue 25: the disk limit counts the bytes it is given and keeps the
/// peak; the memory limit stops only when one is set.
#[test]
fn disk_and_memory_limits() {
    let mut monitor = Monitor::new(LimitSet {
        max_disk: 100,
        ..LimitSet::default()
    });
    assert_eq!(monitor.disk(60), None);
    assert_eq!(monitor.disk(140), Some(Termination::MaxDisk));
    assert_eq!(monitor.disk(10), None);
    assert_eq!(monitor.disk_peak(), 140);
    assert_eq!(monitor.out_of_memory(), None, "a limit already stopped it");
    let mut unlimited = Monitor::new(LimitSet::default());
    assert_eq!(unlimited.out_of_memory(), None);
    let mut limited = Monitor::new(LimitSet {
        max_memory: 1 << 20,
        ..LimitSet::default()
    });
    assert_eq!(limited.out_of_memory(), Some(Termination::MaxMemory));
}

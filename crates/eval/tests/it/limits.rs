//! Limits while the agent runs: the first one crossed stops it at once, with the counts of
//! that moment; the final scan is authoritative for files; zero disables a limit.

use hyoka_eval::{EventType, FakeProgram, LimitSet, PhaseCommand, Status, Termination};

use crate::support::{Case, eval, ms, phase, phases, tool_call, turn};

/// An agent that prints `turns` turns 100 ms apart, then runs until stopped.
fn chatty(turns: u32) -> FakeProgram {
    (1..=turns).fold(FakeProgram::new(), |p, n| p.sleeps(ms(100)).prints(turn(n)))
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

#[tokio::test(start_paused = true)]
async fn the_first_limit_crossed_stops_the_agent_at_once() {
    let case = Case::new();
    case.program("agent", chatty(10).hangs());
    let mut spec = eval("e", "agent");
    spec.limits = limits(3, 0, 0, 0);
    let outcome = case.run(vec![spec]).await;
    let report = &outcome.reports[0];
    assert_eq!(
        (report.status, report.termination),
        (Status::Failed, Termination::MaxTurns)
    );
    // Stopped by the fourth turn, at 400 ms, with the counts of that moment.
    assert_eq!(report.counts.turns, 4);
    assert_eq!(phase(report, "agent").duration_ms, 400);
    assert_eq!(report.signal, Some(15));
    let timeline = case.timeline("e");
    let limit = timeline
        .events
        .iter()
        .find(|e| e.kind == EventType::LimitReached)
        .unwrap();
    assert_eq!(limit.t_ms, 400);
    assert_eq!(
        limit.detail.as_deref(),
        Some("max_turns crossed: turns 4, actions 0, files 0, bytes 0")
    );
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn files_and_bytes_are_limited_as_they_are_written() {
    let case = Case::new();
    let writer = (0..6).fold(FakeProgram::new(), |p, n| {
        p.sleeps(ms(50))
            .writes(format!("out/{n}.txt"), vec![b'x'; 100])
    });
    case.program("writer", writer.hangs());
    let mut files = eval("files", "writer");
    files.limits = limits(0, 2, 0, 0);
    let mut bytes = eval("bytes", "writer");
    bytes.limits = limits(0, 0, 450, 0);
    let outcome = case.run(vec![files, bytes]).await;
    let [files, bytes] = &outcome.reports[..] else {
        panic!("two reports")
    };
    assert_eq!(files.termination, Termination::MaxFiles);
    assert_eq!(
        (files.counts.files, phase(files, "agent").duration_ms),
        (3, 150)
    );
    assert_eq!(bytes.termination, Termination::MaxOutputSize);
    assert_eq!((bytes.counts.output_bytes, bytes.counts.files), (500, 5));
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn tool_calls_are_limited_and_zero_disables_a_limit() {
    let case = Case::new();
    let tools = (1..=5).fold(FakeProgram::new(), |p, n| p.prints(tool_call(n, "Bash")));
    case.program("tools", tools.exits(0))
        .program("chatty", chatty(40).exits(0));
    let mut actions = eval("actions", "tools");
    actions.limits = limits(0, 0, 0, 4);
    let mut unlimited = eval("unlimited", "chatty");
    unlimited.limits = limits(0, 0, 0, 0);
    let outcome = case.run(vec![actions, unlimited]).await;
    let [actions, unlimited] = &outcome.reports[..] else {
        panic!("two reports")
    };
    // Crossed by output that arrived just before the exit: the limit was exceeded all the
    // same, whichever the loop saw first.
    assert_eq!(
        (actions.status, actions.termination),
        (Status::Failed, Termination::MaxSessionActions)
    );
    assert_eq!(actions.counts.actions, 5);
    assert_eq!(
        (unlimited.status, unlimited.counts.turns),
        (Status::Passed, 40)
    );
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn the_build_still_grades_the_work_of_a_limited_agent() {
    let case = Case::new();
    case.program("agent", chatty(5).hangs())
        .program("build", FakeProgram::new().exits(0));
    let mut spec = eval("e", "agent");
    spec.limits = limits(1, 0, 0, 0);
    spec.phases.build = Some(PhaseCommand {
        command: vec!["build".into()],
        timeout: ms(10_000),
    });
    let report = &case.run(vec![spec]).await.reports[0];
    assert_eq!(
        phases(report),
        [
            "setup passed",
            "agent failed",
            "build passed",
            "cleanup passed"
        ]
    );
    assert_eq!(
        (report.status, report.termination),
        (Status::Failed, Termination::MaxTurns)
    );
    assert_eq!(phase(report, "agent").detail.as_deref(), Some("max_turns"));
    case.assert_nothing_left();
}

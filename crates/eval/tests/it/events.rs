//! Agent event formats end to end in process: any chunking of a transcript gives the same
//! events as its lines, and an eval of a Codex or Gemini agent (chosen by `auto` from the
//! program name) counts turns, actions, files and spending, stops at a limit, and says when
//! its reader saw no event at all.

use std::path::PathBuf;

use hyoka_eval::{
    AgentEvent, EventSource, EventType, FakeProgram, LineCounts, LineSplitter, Termination,
};
use proptest::prelude::*;

use crate::support::{Case, eval, ms};

fn fixture(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../events/tests/fixtures/events");
    std::fs::read_to_string(dir.join(name)).unwrap()
}

const TRANSCRIPTS: [(&str, EventSource); 4] = [
    ("codex-exec-write-file.jsonl", EventSource::CodexJson),
    ("codex-exec-tools.jsonl", EventSource::CodexJson),
    (
        "gemini-stream-write-file.jsonl",
        EventSource::GeminiStreamJson,
    ),
    (
        "gemini-stream-older-stats.jsonl",
        EventSource::GeminiStreamJson,
    ),
];

/// The events and counts of `bytes` fed in chunks ending at `cuts`.
fn read_chunked(
    source: EventSource,
    bytes: &[u8],
    cuts: &[usize],
) -> (Vec<AgentEvent>, LineCounts) {
    let mut reader = source.reader().unwrap();
    let mut splitter = LineSplitter::default();
    let mut events = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain([&bytes.len()]) {
        let cut = cut.clamp(start, bytes.len());
        splitter.feed(&bytes[start..cut], |line, oversized| {
            assert!(!oversized);
            reader.read_line(line, &mut events);
        });
        start = cut;
    }
    splitter.finish(|line, _| reader.read_line(line, &mut events));
    (events, reader.counts())
}

proptest! {
    #[test]
    fn any_chunking_gives_the_events_of_the_lines(
        which in 0..TRANSCRIPTS.len(),
        mut cuts in proptest::collection::vec(0usize..8192, 0..40),
    ) {
        let (name, source) = TRANSCRIPTS[which];
        let text = fixture(name);
        cuts.sort_unstable();
        let whole = read_chunked(source, text.as_bytes(), &[]);
        let chunked = read_chunked(source, text.as_bytes(), &cuts);
        prop_assert_eq!(&chunked, &whole);
        prop_assert!(whole.1.seen > 0);
    }
}

#[test]
fn every_byte_boundary_of_each_transcript_gives_the_same_events() {
    for (name, source) in TRANSCRIPTS {
        let text = fixture(name);
        let whole = read_chunked(source, text.as_bytes(), &[]);
        for cut in 0..=text.len() {
            assert_eq!(
                read_chunked(source, text.as_bytes(), &[cut]),
                whole,
                "{name} cut at {cut}"
            );
        }
    }
}

/// A fake agent printing `transcript` a line every 10 ms, writing `hello.txt` first.
fn emitter(transcript: &str) -> FakeProgram {
    transcript.lines().fold(
        FakeProgram::new().writes("hello.txt", "hello\n"),
        |p, line| p.sleeps(ms(10)).prints(line),
    )
}

#[tokio::test(start_paused = true)]
async fn auto_reads_codex_and_gemini_agents_by_program_name() {
    for (program, transcript, format, input, output) in [
        (
            "codex",
            "codex-exec-write-file.jsonl",
            EventSource::CodexJson,
            571,
            1043,
        ),
        (
            "gemini",
            "gemini-stream-write-file.jsonl",
            EventSource::GeminiStreamJson,
            3850,
            663,
        ),
    ] {
        let case = Case::new();
        case.program(program, emitter(&fixture(transcript)));
        let mut spec = eval("e", program);
        spec.events = EventSource::Auto;
        let outcome = case.run(vec![spec]).await;
        let report = &outcome.reports[0];
        assert_eq!(report.termination, Termination::Exited, "{program}");
        assert_eq!(
            (
                report.counts.turns,
                report.counts.actions,
                report.counts.files
            ),
            // Each transcript's second reply is a tool call alone: a turn.
            (3, 2, 1),
            "{program}"
        );
        let usage = report.usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.output_tokens, usage.cost_usd),
            (Some(input), Some(output), None),
            "{program}"
        );
        let events = report.events.clone().unwrap();
        assert_eq!(
            (events.requested, events.format, events.none_seen),
            (EventSource::Auto, format, false)
        );
        let timeline = case.timeline("e");
        assert!(
            timeline.events.iter().any(|e| e.kind == EventType::ToolCall
                && e.path.as_deref() == Some("/home/dev/project/hello.txt")),
            "{program}: {:?}",
            timeline.events
        );
        assert!(
            outcome
                .summary
                .evals
                .iter()
                .all(|e| e.events.as_ref().is_some_and(|e| !e.none_seen)),
            "{program}"
        );
        case.assert_nothing_left();
    }
}

#[tokio::test(start_paused = true)]
async fn the_second_action_crosses_max_session_actions_1() {
    for (program, transcript) in [
        ("codex", "codex-exec-write-file.jsonl"),
        ("gemini", "gemini-stream-write-file.jsonl"),
    ] {
        let case = Case::new();
        case.program(program, emitter(&fixture(transcript)).hangs());
        let mut spec = eval("e", program);
        spec.events = EventSource::Auto;
        spec.limits.max_session_actions = 1;
        let outcome = case.run(vec![spec]).await;
        let report = &outcome.reports[0];
        assert_eq!(
            report.termination,
            Termination::MaxSessionActions,
            "{program}"
        );
        assert_eq!(report.counts.actions, 2, "{program}");
        case.assert_nothing_left();
    }
}

#[tokio::test(start_paused = true)]
async fn a_reader_that_saw_no_event_says_so() {
    let case = Case::new();
    // `codex exec` without `--json` prints text, not events.
    case.program(
        "codex",
        FakeProgram::new()
            .prints("Reading files...")
            .prints("{\"not\":\"an event\"}"),
    );
    let mut spec = eval("e", "codex");
    spec.events = EventSource::Auto;
    let outcome = case.run(vec![spec]).await;
    let events = outcome.reports[0].events.clone().unwrap();
    assert_eq!(
        (
            events.format,
            events.seen,
            events.unknown_lines,
            events.malformed_lines,
            events.none_seen
        ),
        (EventSource::CodexJson, 0, 1, 1, true)
    );
    let record = serde_json::to_value(&outcome.reports[0]).unwrap();
    assert_eq!(record["events"]["none_seen"], true);
    assert_eq!(record["events"]["format"], "codex-json");
    assert_eq!(record["events"]["requested"], "auto");
    // The summary's wording of it is `hyoka-report`'s, tested there.
    assert_eq!(outcome.summary.evals[0].events.as_deref(), Some(&events));
    // With events off there is no record at all.
    let case = Case::new();
    case.program("codex", FakeProgram::new().prints("hi"));
    let mut spec = eval("e", "codex");
    spec.events = EventSource::None;
    let outcome = case.run(vec![spec]).await;
    assert_eq!(outcome.reports[0].events, None);
    case.assert_nothing_left();
}

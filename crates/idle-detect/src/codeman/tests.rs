//! Unit tests for `codeman`: Codeman's detection scenarios (PD-001 … PD-008), its completion
//! regex, the working window, the substantial-output rule and the buffer trim (BM-001), as
//! `docs/detection.md` section 5 lists them.

use super::{
    CodemanClassifier, CodemanState, Utf16Text, completion_match, simple_stripped_trimmed_units,
    trim_buffer,
};
use crate::signals::ChunkSignals;

/// Feeds `chunks` and returns the signals of each.
#[track_caller]
fn check(chunks: &[&str], expected: &[ChunkSignals]) -> CodemanClassifier {
    let mut c = CodemanClassifier::new();
    let got: Vec<ChunkSignals> = chunks.iter().map(|x| c.feed(x.as_bytes())).collect();
    assert_eq!(got, expected, "{chunks:?}");
    c
}

const NONE: ChunkSignals = ChunkSignals {
    completion: false,
    working: false,
    prompt: false,
    substantial: false,
    tokens: None,
};
const DONE: ChunkSignals = ChunkSignals {
    completion: true,
    ..NONE
};
const WORK: ChunkSignals = ChunkSignals {
    working: true,
    ..NONE
};
const PROMPT: ChunkSignals = ChunkSignals {
    prompt: true,
    ..NONE
};

#[test]
fn completion_regex_matches_what_codeman_matches() {
    for s in [
        "Worked for 2m 46s",
        "Worked for 46s",
        "Worked for 1h 2m 3s",
        "Worked for 5m",
        "worked for 10s",
        "WORKED FOR 10s",
        "…prefix Worked for 5m 30s and more",
        "✻ Worked for 2m 46s",
        "(Worked for 5s)",
        "Worked for 0s",
        "Worked  for\n3m",
        "Worked for 30ms",
        "Worked for 5S",
    ] {
        assert!(completion_match(s.as_bytes()), "{s:?}");
    }
    for s in [
        "wait for 5s",
        "run for 2m",
        "for 3s the system",
        "2m 46s",
        "",
        "Worked on the task",
        "Worked for a long time",
        "Worked for 5 seconds",
        "Worked for 1.5s",
        "_Worked for 5s",
        "\x1b[32mWorked for 3m 15s",
        "Wor\x1b[32mked for 2m 46s",
        "Crunched for 3s",
    ] {
        assert!(!completion_match(s.as_bytes()), "{s:?}");
    }
}

#[test]
fn pd_001_waiting_for_is_not_a_completion() {
    check(&["Waiting for 5s before retry"], &[NONE]);
}

#[test]
fn pd_002_a_working_word_in_prose_counts_as_working() {
    check(&["The 'Thinking' file was created"], &[WORK]);
}

#[test]
fn pd_003_prompts_are_u276f_and_u23f5_only() {
    check(
        &["❯ ", "\u{276f} ", "⏵ ", "> ", "＞ "],
        &[PROMPT, PROMPT, PROMPT, NONE, NONE],
    );
}

#[test]
fn pd_004_sgr_inside_the_word_hides_the_completion() {
    check(&["Wor\x1b[32mked\x1b[0m for 2m 46s"], &[NONE]);
}

#[test]
fn pd_005_token_changes_are_recorded() {
    let c = check(
        &["999.9k tokens", "1.0M tokens"],
        &[
            ChunkSignals {
                tokens: Some(999_900),
                ..NONE
            },
            ChunkSignals {
                tokens: Some(1_000_000),
                ..NONE
            },
        ],
    );
    assert_eq!(c.counters().token_changes, 2);
    assert_eq!(c.counters().last_token_count, 1_000_000);
}

#[test]
fn pd_006_malformed_token_counts_are_ignored() {
    check(&["tokens", " tokens", ".k tokens"], &[NONE, NONE, NONE]);
}

#[test]
fn pd_007_two_completions_in_one_chunk_confirm_once() {
    let c = check(&["Worked for 1s... Worked for 2m 30s"], &[DONE]);
    assert_eq!(
        (c.counters().completions, c.counters().to_confirming),
        (1, 1)
    );
    assert_eq!(c.state(), CodemanState::ConfirmingIdle);
}

#[test]
fn pd_008_a_spinner_sequence_in_prose_counts_as_working() {
    check(&["The sequence is: ⠋ ⠙ ⠹"], &[WORK]);
}

#[test]
fn the_window_catches_split_words_and_misses_early_ones() {
    check(&["Thin", "king"], &[NONE, WORK]);
    let big = format!("Thinking{}", "x".repeat(400));
    check(&[&big], &[NONE]);
    // Working is sticky until 300 units of new text push the word out.
    let filler = "y".repeat(250);
    let more = "z".repeat(100);
    check(&["Thinking", &filler, &more], &[WORK, WORK, NONE]);
}

#[test]
fn confirmation_is_cancelled_by_work_or_substantial_output() {
    let c = check(&["✻ Worked for 5s", "⠋"], &[DONE, WORK]);
    assert_eq!(c.counters().cancelled_by_working, 1);
    let c = check(
        &["✻ Worked for 5s", "ab", "abc"],
        &[
            DONE,
            NONE,
            ChunkSignals {
                substantial: true,
                ..NONE
            },
        ],
    );
    assert_eq!(
        (c.counters().cancelled_by_substantial, c.state()),
        (1, CodemanState::Watching)
    );
    // A prompt box redrawn after the completion line cancels it (Codeman's substantial-output rule).
    check(
        &["✻ Worked for 5s", "╭────╮"],
        &[
            DONE,
            ChunkSignals {
                substantial: true,
                ..NONE
            },
        ],
    );
}

#[test]
fn the_substantial_rule_counts_utf16_units_after_a_simple_strip() {
    let units = |s: &str| simple_stripped_trimmed_units(s.as_bytes());
    assert_eq!(units("✻✻"), 2);
    assert_eq!(units("🚀"), 2);
    assert_eq!(units("\x1b[?25l"), 6);
    assert_eq!(units("\x1b[1m \x1b[0m"), 0);
    assert_eq!(units("\u{feff} a \u{3000}"), 1);
}

#[test]
fn bm_001_the_buffer_trims_past_one_mebi_unit() {
    let mut b = Utf16Text::default();
    b.push("a".repeat(1_048_576).as_bytes());
    assert_eq!(b.units, 1_048_576);
    b.push(b"\nb");
    trim_buffer(&mut b);
    assert_eq!(b.units, 524_288);
    // The last 524,288 units start 99 units before a newline, which is dropped through.
    let mut b = Utf16Text::default();
    b.push("a".repeat(1_000_000 - 524_288 + 99).as_bytes());
    b.push(b"\n");
    b.push("z".repeat(524_288 - 100).as_bytes());
    trim_buffer(&mut b);
    assert_eq!(b.units, 524_188);
    assert!(
        b.bytes.iter().all(|&x| x == b'z'),
        "only the text after the newline is kept"
    );
}

#[test]
fn hostile_chunks_do_not_panic() {
    let mut c = CodemanClassifier::new();
    for chunk in [
        &b"\x00\x01\x02"[..],
        b"\xff\xfe",
        &[0xe2],
        &[0x9d, 0xaf],
        b"",
        "\u{fffd}".as_bytes(),
    ] {
        c.feed(chunk);
    }
    c.feed(&vec![b'x'; 500 * 1024]);
    assert_eq!(c.counters().window_length, 300);
}

//! Unit tests for `stream`: per-chunk signals and the stripped context.

use super::{StreamScanner, strip_for_context, title_of};
use crate::signals::ChunkSignals;

#[track_caller]
fn check(chunks: &[&str], expected: &[ChunkSignals]) {
    let mut s = StreamScanner::new();
    let got: Vec<ChunkSignals> = chunks.iter().map(|c| s.feed(c.as_bytes())).collect();
    assert_eq!(got, expected);
}

const QUIET: ChunkSignals = ChunkSignals {
    completion: false,
    working: false,
    prompt: false,
    substantial: false,
    tokens: None,
};

#[test]
fn a_completion_hidden_by_sgr_is_seen() {
    check(
        &[
            "\r\n\x1b[2m✻ Worked for 5s\x1b[22m\r\n",
            "\r\n\x1b[2mWorked for 1m 2s\x1b[22m\r\n",
        ],
        &[
            ChunkSignals {
                completion: true,
                substantial: true,
                ..QUIET
            },
            ChunkSignals {
                completion: true,
                substantial: true,
                ..QUIET
            },
        ],
    );
}

#[test]
fn a_line_split_across_chunks_reports_once_at_its_end() {
    let text = ChunkSignals {
        substantial: true,
        ..QUIET
    };
    check(
        &["✻ Worked ", "for 1m", " 2s\r\n"],
        &[
            text,
            text,
            ChunkSignals {
                completion: true,
                ..QUIET
            },
        ],
    );
    // Text after the duration undoes it: nothing is reported early.
    check(&["✻ Worked for 5s", " before retrying\r\n"], &[text, text]);
    // Working only grows with the line, so it is reported as soon as it shows.
    check(
        &["✽ Tempering…", " (3s)\r\n"],
        &[
            ChunkSignals {
                working: true,
                ..text
            },
            text,
        ],
    );
}

#[test]
fn spinner_frames_are_working_each_time() {
    let frame = |g: &str| {
        format!(
            "\r\x1b[2K\x1b[38;5;174m{g}\x1b[39m Thinking… \x1b[2m(3s · ↑ 1.2k tokens · esc to interrupt)\x1b[22m"
        )
    };
    let working = ChunkSignals {
        working: true,
        substantial: true,
        tokens: Some(1200),
        ..QUIET
    };
    check(&[&frame("⠋"), &frame("⠙")], &[working, working]);
}

#[test]
fn a_prompt_with_no_work_in_the_chunk() {
    // A redrawn prompt box is not new content.
    check(
        &["╭───╮\r\n│ ❯  │\r\n╰───╯\r\n"],
        &[ChunkSignals {
            prompt: true,
            ..QUIET
        }],
    );
    check(
        &["│ ❯  │\r\n"],
        &[ChunkSignals {
            prompt: true,
            ..QUIET
        }],
    );
    check(
        &["✽ Tempering…\r\n│ ❯  │\r\n"],
        &[ChunkSignals {
            working: true,
            substantial: true,
            ..QUIET
        }],
    );
}

#[test]
fn substantial_means_more_than_two_visible_characters() {
    check(
        &["ab", "\x1b[?25l", "  ✻✻  ", "abc"],
        &[
            QUIET,
            QUIET,
            QUIET,
            ChunkSignals {
                substantial: true,
                ..QUIET
            },
        ],
    );
}

#[test]
fn a_spinner_in_the_title_is_working() {
    let mut s = StreamScanner::new();
    let sig = s.feed("\x1b]0;⠙ Claude Code\x07".as_bytes());
    assert!(sig.working);
    assert!(s.title_working());
    assert_eq!(
        title_of("\x1b]2;✳ Claude Code\x1b\\".as_bytes()),
        "✳ Claude Code"
    );
}

#[test]
fn context_collapses_carriage_return_redraws() {
    let raw = "start\r\n⠋ Thinking\r\x1b[2K⠙ Thinking\r\x1b[2K> \n\x1b[1mbold\x1b[0m\r\nend";
    assert_eq!(
        strip_for_context(raw.as_bytes(), 1000),
        "start\n> \nbold\nend"
    );
    assert_eq!(strip_for_context(raw.as_bytes(), 3), "end");
}

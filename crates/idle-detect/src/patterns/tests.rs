//! Unit tests for `patterns`: what one stripped line announces.

use super::{LineFacts, count_visible, scan_line, token_value};

#[track_caller]
fn check(line: &str, expected: LineFacts) {
    assert_eq!(scan_line(line.as_bytes()), expected, "{line:?}");
}

const NONE: LineFacts = LineFacts {
    completion: false,
    working: false,
    prompt: false,
    tokens: None,
};

#[test]
fn completion_lines_with_every_verb() {
    let done = LineFacts {
        completion: true,
        ..NONE
    };
    for line in [
        "✻ Worked for 1m 2s",
        "✻ Crunched for 3s",
        "✻ Baked for 7m 48s",
        "✻ Cogitated for 1h 2m 3s",
        "✻ Sautéed for 1s",
        "* Cooked for 1m 42s",
        "Worked for 5s",
        "─ Worked for 1m 22s ─────────────",
        "✻ Brewed for 60s",
    ] {
        check(line, done);
    }
}

#[test]
fn lines_that_are_not_completions() {
    for line in [
        "Waiting for 5s before retry",
        "I worked for 5s on it",
        "✻ Worked for a long time",
        "Worked for 30ms",
        "2m 46s",
    ] {
        check(line, NONE);
    }
    check("✻ Worked for 5s before retrying", NONE);
}

#[test]
fn working_status_lines() {
    let working = LineFacts {
        working: true,
        ..NONE
    };
    check("✽ Tempering…", working);
    check("· Swirling…", working);
    check("✳ Simplifying recompute_tangents…", working);
    check("✻ Waiting for 2 background agents to finish", working);
    check("⠋ Waiting for LLM", working);
    check("Press ESC to interrupt", working);
    check("ctrl+c to interrupt", working);
    check(
        "✽ Add workflow… (50s · ↓ 794 tokens)",
        LineFacts {
            working: true,
            tokens: Some(794),
            ..NONE
        },
    );
    check(
        "✢ Misting… (33s · ↑ 332 tokens · esc to interrupt)",
        LineFacts {
            working: true,
            tokens: Some(332),
            ..NONE
        },
    );
}

#[test]
fn status_shaped_lines_that_are_not_work() {
    for line in [
        "* Remember to restart the service after deploying…",
        "· latest: v2.1.50 available, run /upgrade to update…",
        "✽ Some random text",
        "✻ Waiting for 0 background agents to finish",
        "The 'Thinking' file was created",
        "* Waiting for review",
    ] {
        check(line, NONE);
    }
}

#[test]
fn prompts() {
    let prompt = LineFacts {
        prompt: true,
        ..NONE
    };
    check("❯ ", prompt);
    check("│ ❯                     │", prompt);
    check("  ⏵⏵ bypass permissions on (shift+tab to cycle)", prompt);
    check("› Use /skills to list available skills", prompt);
    check("❯ 1. Yes", NONE);
    check("> plain", NONE);
}

#[track_caller]
fn check_tokens(text: &str, expected: Option<u64>) {
    assert_eq!(token_value(text.as_bytes()), expected, "{text:?}");
}

#[test]
fn token_values_follow_codeman_exactly() {
    // `respawn-reference.md` §3.6.
    check_tokens("500 tokens", Some(500));
    check_tokens("123.4 tokens", Some(123));
    check_tokens("123.4k tokens", Some(123_400));
    check_tokens("123.4 k tokens", Some(123_400));
    check_tokens("50K tokens", Some(50_000));
    check_tokens("1.5m tokens", Some(1_500_000));
    check_tokens("2M tokens", Some(2_000_000));
    check_tokens("1.23456k tokens", Some(1235));
    check_tokens("999.9k tokens", Some(999_900));
    check_tokens("1.0M tokens", Some(1_000_000));
    check_tokens("12,345 tokens", Some(345));
    check_tokens("many tokens", None);
    check_tokens("tokens", None);
    check_tokens(".k tokens", None);
    check_tokens("1 token", None);
    check_tokens("1.2.5 tokens", Some(3));
    check_tokens("x tokens then 7 tokens", Some(7));
    check_tokens("5\u{a0}tokens", Some(5));
    check_tokens("5\u{3000}k tokens", Some(5000));
}

#[test]
fn visible_characters_skip_spaces_and_box_drawing() {
    assert_eq!(count_visible("   ".as_bytes(), 3), 0);
    assert_eq!(count_visible("╭────╮".as_bytes(), 3), 0);
    assert_eq!(count_visible("ab".as_bytes(), 3), 2);
    assert_eq!(count_visible("a ✻ b c".as_bytes(), 3), 3);
    assert_eq!(count_visible("\u{a0}\u{a0}x".as_bytes(), 3), 1);
}

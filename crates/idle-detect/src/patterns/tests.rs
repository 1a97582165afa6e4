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
        // See: issue 24 (Codex 0.169 ends a turn under a second with `Worked for <1s`).
        "─ Worked for <1s ─────────────",
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
        "Worked for <",
        "Worked for <<1s",
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
    // Codeman's `TOKEN_PATTERN` values (`docs/detection.md` section 5).
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

#[test]
fn every_glyph_the_facts_look_at_passes_the_lead_prefilter() {
    for c in ('\u{80}'..=char::MAX)
        .filter(|&c| super::is_prompt_glyph(c) || super::is_status_glyph(c) || c == '│' || c == '─')
    {
        let mut buf = [0; 4];
        let bytes = c.encode_utf8(&mut buf).as_bytes();
        assert!(super::may_lead_a_signal(bytes), "{c:?}");
    }
    for lead in b'A'..=b'Z' {
        assert!(super::may_lead_a_signal(&[lead]));
    }
    assert!(super::may_lead_a_signal(b"*"));
    assert!(!super::may_lead_a_signal("╭──".as_bytes()));
    assert!(!super::may_lead_a_signal("⎿  Read".as_bytes()));
    assert!(!super::may_lead_a_signal(b"lower case"));
}

#[test]
fn the_fast_decimal_path_rounds_as_str_parse_does() {
    let mut cases: Vec<String> = [
        "0",
        "7",
        "28.2",
        "1.5",
        "0.1",
        "0.3",
        "9007199254740991",
        "9007199254740993",
        "9999999999999999",
        "1234567.891",
        "3.14159265358979",
        "0.000000000000001",
        "127.8",
        "99999999999999999",
        "1.2345678901234567",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let mut x: u64 = 1;
    for _ in 0..20_000 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let digits = (x >> 60) as usize + 1;
        let mut s: String = (0..digits)
            .map(|k| char::from(b'0' + u8::try_from((x >> (k * 3)) % 10).unwrap_or(0)))
            .collect();
        let dot = (x >> 20) as usize % (digits + 1);
        if dot > 0 && dot < digits {
            s.insert(dot, '.');
        }
        cases.push(s);
    }
    for s in cases {
        let want: f64 = s.parse().expect("a decimal");
        if let Some(got) = super::fast_decimal(s.as_bytes()) {
            assert_eq!(got.to_bits(), want.to_bits(), "{s}");
        }
        let before = format!("x {s}");
        assert_eq!(
            super::parse_number_before(before.as_bytes()).map(f64::to_bits),
            Some(want.to_bits()),
            "{s}"
        );
    }
}

#[test]
fn ellipses_are_three_dots_or_the_ellipsis_character() {
    for (text, want) in [
        ("Thinking…", true),
        ("Thinking...", true),
        ("Thinking..", false),
        ("a . . .", false),
        ("…", true),
        ("\u{2026}x", true),
        // Other characters ending in A6, and a lone A6 byte.
        ("\u{00a6}\u{02a6}", false),
        ("", false),
    ] {
        assert_eq!(super::has_ellipsis(text.as_bytes()), want, "{text:?}");
    }
    assert!(!super::has_ellipsis(&[0xa6, b'.', b'.']));
}

//! Unit tests for `profile`: regions, matchers, overrides and errors.

use super::Profile;
use super::region::{Region, normalize};
use crate::error::DetectError;
use crate::screen::Screen;
use crate::signals::{BlockedKind, SessionState};

#[track_caller]
fn check(profile: &str, screen: &str, state: SessionState, rule: Option<&str>) {
    let p = Profile::builtin(profile).expect("built-in profile");
    let v = p.classify(&Screen::from_bytes(screen.as_bytes()));
    assert_eq!(
        (v.state, v.rule.as_deref()),
        (state, rule),
        "{screen:?} → {v:?}"
    );
}

#[test]
fn every_builtin_profile_compiles() {
    let names: Vec<&str> = Profile::builtin_names().collect();
    assert_eq!(
        names,
        [
            "claude-code",
            "codex",
            "gemini",
            "copilot",
            "aider",
            "generic"
        ]
    );
    for n in names {
        let p = Profile::builtin(n).expect("compiles");
        assert_eq!(p.name(), n);
        assert!(!p.rules().is_empty());
        assert!(
            p.rules()
                .windows(2)
                .all(|w| w[0].priority() >= w[1].priority())
        );
    }
    assert_eq!(
        Profile::builtin("claude").expect("alias").name(),
        "claude-code"
    );
    assert!(matches!(
        Profile::builtin("nope"),
        Err(DetectError::UnknownProfile { .. })
    ));
}

#[test]
fn claude_code_screens() {
    use SessionState::{Blocked, Idle, Unknown, Working};
    check(
        "claude-code",
        "⏺ Done.\n\n✻ Worked for 2s\n\n───────\n❯ \n───────\n  ? for shortcuts",
        Idle,
        Some("claude-code/prompt-box"),
    );
    check(
        "claude-code",
        "✻ Cultivating… (12s · ↓ 1.2k tokens)\n───────\n❯ \n───────",
        Working,
        Some("claude-code/spinner-status"),
    );
    check(
        "claude-code",
        "⏺ Bash(rm -rf build)\n───────\n Bash command\n\n   rm -rf build\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n\n Esc to cancel",
        Blocked,
        Some("claude-code/permission-prompt"),
    );
    check("claude-code", "", Unknown, None);
    // A stale spinner above a later response is not work.
    check(
        "claude-code",
        "✢ Cultivating…\n⏺ Old response\n───────\n❯ \n───────",
        Idle,
        Some("claude-code/prompt-box"),
    );
}

#[test]
fn blocked_kinds_are_reported() {
    let p = Profile::builtin("claude-code").expect("profile");
    let plan = "Would you like to proceed?\n\n❯ 1. Yes, and auto-accept edits\n  2. Yes, and manually approve edits\n  3. No, keep planning";
    let v = p.classify(&Screen::from_bytes(plan.as_bytes()));
    assert_eq!(
        (v.state, v.blocked),
        (SessionState::Blocked, Some(BlockedKind::Plan))
    );
    let trust = " Do you trust the files in this folder?\n\n ❯ 1. Yes, proceed\n   2. No, exit\n\n Enter to confirm · Esc to cancel";
    let v = p.classify(&Screen::from_bytes(trust.as_bytes()));
    assert_eq!(v.blocked, Some(BlockedKind::Trust));
}

#[test]
fn contains_is_wrap_tolerant() {
    assert_eq!(normalize("Esc to\n   cancel │ X"), "esc to cancel x");
    // The footer wrapped in a narrow terminal still blocks.
    check(
        "claude-code",
        "Do you want to proceed?\n❯ 1. Yes\n  2. No\nEsc to\ncancel",
        SessionState::Blocked,
        Some("claude-code/permission-prompt"),
    );
}

#[test]
fn regions_parse() {
    assert_eq!(Region::parse("bottom 5"), Some(Region::Bottom(5)));
    assert_eq!(Region::parse("bottom"), Some(Region::Bottom(12)));
    assert_eq!(Region::parse("status"), Some(Region::Status));
    assert_eq!(Region::parse("status 3"), None);
    assert_eq!(Region::parse("bottom 0"), None);
    assert_eq!(Region::parse("sideways"), None);
}

#[test]
fn a_user_file_overrides_a_builtin() {
    let text = r#"
extends = "claude-code"
disable = ["history-search"]

[[rule]]
id = "prompt-box"
state = "unknown"
priority = 500
region = "prompt"

[[rule]]
id = "custom-banner"
state = "idle"
priority = 999
region = "bottom 1"
contains = "all systems nominal"
"#;
    let p = Profile::from_toml(text).expect("valid override");
    assert_eq!(p.name(), "claude-code");
    assert!(p.rules().iter().all(|r| r.id() != "history-search"));
    assert_eq!(p.rules()[0].id(), "custom-banner");
    let v = p.classify(&Screen::from_bytes(b"x\nALL SYSTEMS   NOMINAL"));
    assert_eq!(v.rule.as_deref(), Some("claude-code/custom-banner"));
    let v = p.classify(&Screen::from_bytes("───────\n❯ \n───────".as_bytes()));
    assert_eq!(v.state, SessionState::Unknown);
}

#[test]
fn bad_profiles_are_rejected_with_context() {
    let err = |t: &str| Profile::from_toml(t).expect_err("invalid").to_string();
    assert!(
        err("name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"blocked\"\n").contains("needs `blocked")
    );
    assert!(
        err("[[rule]]\nid = \"a\"\nstate = \"idle\"\nregion = \"left 3\"\n")
            .contains("unknown region")
    );
    assert!(err("[[rule]]\nid = \"a\"\nstate = \"idle\"\nregex = \"(\"\n").contains("bad regex"));
    assert!(
        err("[[rule]]\nid = \"a\"\nstate = \"idle\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\n")
            .contains("duplicate")
    );
    assert!(
        err("[[rule]]\nid = \"a\"\nstate = \"idle\"\nblocked = \"plan\"\n")
            .contains("only a blocked rule")
    );
    assert!(err("bogus = 1\n").contains("not valid"));
    assert!(err("extends = \"nope\"\n").contains("unknown profile"));
}

#[test]
fn a_status_line_wrapped_by_a_narrow_pane_still_reads_as_work() {
    // Ink word-wraps the status line and indents the rest under its text.
    let ink = "✻ Processing skill… (esc to\n  interrupt · 3m 1s · ↓ 1.2k\n  tokens)\n  ⎿  ◼ Process one\n\n────────\n❯ \n────────";
    check(
        "claude-code",
        ink,
        SessionState::Working,
        Some("claude-code/spinner-status"),
    );
    // A terminal hard-wraps it; the rows it wrapped are joined back, and a wide rule that
    // wrapped into several rows is not mistaken for the status line.
    let wide = format!(
        "✻ Cultivating… (12s · ↓ 1.2k tokens · esc to interrupt)\n{}\n❯ \n{}",
        "─".repeat(90),
        "─".repeat(90)
    );
    let p = Profile::builtin("claude-code").expect("profile");
    let v = p.classify(&Screen::render(wide.as_bytes(), 30, 40));
    assert_eq!(v.state, SessionState::Working, "{v:?}");
    let hard = wide
        .lines()
        .flat_map(|l| {
            let c: Vec<char> = l.chars().collect();
            c.chunks(40)
                .map(|x| x.iter().collect::<String>())
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>();
    let v = p.classify(&Screen::from_lines(hard));
    assert_ne!(v.state, SessionState::Unknown, "{v:?}");
}

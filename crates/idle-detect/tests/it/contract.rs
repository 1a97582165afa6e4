//! The contract with `hyoka-respawn` and `hyoka-cli`: shapes that must not change.

use hyoka_idle_detect::{
    BlockedKind, ChunkSignals, HookEvent, Profile, SessionState, Verdict, classify_screen,
};

#[test]
fn chunk_signals_are_constructible_with_defaults() {
    let s = ChunkSignals {
        completion: true,
        ..Default::default()
    };
    assert!(s.completion && !s.working && !s.prompt && !s.substantial && s.tokens.is_none());
}

#[test]
fn the_verdict_json_has_the_design_shape() {
    let v = Verdict {
        state: SessionState::Blocked,
        blocked: Some(BlockedKind::Plan),
        evidence: vec![],
    };
    assert_eq!(
        serde_json::to_string(&v).expect("json"),
        r#"{"state":"blocked","blocked":"plan","evidence":[]}"#
    );
    let p = Profile::builtin("codex").expect("profile");
    let json = serde_json::to_value(classify_screen(&p, "› \n  ? for shortcuts".as_bytes()))
        .expect("json");
    let mut keys: Vec<&str> = json["evidence"][0]
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    // A screen rule names where it comes from.
    assert_eq!(
        keys,
        ["age_ms", "detail", "points_to", "rule", "signal", "source"]
    );
    assert_eq!(json["state"], "idle");
    let draft = Verdict {
        state: SessionState::Blocked,
        blocked: Some(BlockedKind::Draft),
        evidence: vec![],
    };
    assert_eq!(
        serde_json::to_string(&draft).expect("json"),
        r#"{"state":"blocked","blocked":"draft","evidence":[]}"#
    );
}

#[test]
fn hook_names_parse_as_hyoka_hook_receives_them() {
    assert_eq!(HookEvent::parse("Stop"), Some(HookEvent::Stop));
    assert_eq!(
        HookEvent::parse("Notification:idle_prompt"),
        Some(HookEvent::IdlePrompt)
    );
    assert_eq!(
        HookEvent::parse("permission-prompt"),
        Some(HookEvent::PermissionPrompt)
    );
    assert_eq!(
        HookEvent::parse("elicitation_dialog"),
        Some(HookEvent::ElicitationDialog)
    );
    assert_eq!(HookEvent::parse("PreToolUse"), None);
}

#[test]
fn only_idle_allows_input() {
    for (state, allows) in [
        (SessionState::Idle, true),
        (SessionState::Working, false),
        (SessionState::Blocked, false),
        (SessionState::Unknown, false),
    ] {
        let v = Verdict {
            state,
            blocked: None,
            evidence: vec![],
        };
        assert_eq!(v.allows_input(), allows);
    }
}

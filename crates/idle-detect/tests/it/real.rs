//! hyoka's own regression set of real screens (`tests/real`): Claude Code 2.1.328, Codex
//! 0.169.0 and Gemini CLI 0.61.0 driven in tmux at 80, 120 and 200 columns against the
//! scripted model server, in a network namespace of their own, each screen captured with its
//! attributes (`tmux capture-pane -e`) at a step whose truth is the stub's state (streaming or
//! waiting for the tool result) and the step (a dialog up, a draft typed, the turn over). See
//! `tests/real/README.md`. Every screen must get its truth: state and blocked kind.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hyoka_idle_detect::{Profile, SessionState, classify_screen};

const STATES: [SessionState; 4] = [
    SessionState::Working,
    SessionState::Idle,
    SessionState::Blocked,
    SessionState::Unknown,
];

fn state(s: &str) -> SessionState {
    match s {
        "working" => SessionState::Working,
        "idle" => SessionState::Idle,
        "blocked" => SessionState::Blocked,
        other => panic!("INDEX.tsv: unknown truth `{other}`"),
    }
}

#[test]
fn real_screens_get_their_truth_at_every_width() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real");
    let index = std::fs::read_to_string(root.join("INDEX.tsv")).expect("tests/real/INDEX.tsv");
    // agent -> (truth, got) pairs
    let mut by_agent: BTreeMap<String, Vec<(SessionState, SessionState)>> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut report = String::new();
    for line in index.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [file, profile, agent, width, truth, ..] = cols[..] else {
            panic!("INDEX.tsv: short row {line:?}");
        };
        let (truth_state, truth_kind) = match truth.split_once(':') {
            Some((s, k)) => (state(s), Some(k)),
            None => (state(truth), None),
        };
        let profile = Profile::builtin(profile).expect("built-in profile");
        let bytes = std::fs::read(root.join(file)).expect("capture");
        let verdict = classify_screen(&profile, &bytes);
        let kind = verdict.blocked.map(hyoka_idle_detect::BlockedKind::as_str);
        by_agent
            .entry(agent.to_owned())
            .or_default()
            .push((truth_state, verdict.state));
        if verdict.state != truth_state || kind != truth_kind {
            let e = &verdict.evidence[0];
            misses.push(format!(
                "{file} ({width} cols): truth {truth}, got {}{} by {} ({})",
                verdict.state,
                kind.map(|k| format!(":{k}")).unwrap_or_default(),
                e.rule,
                e.detail
            ));
        }
    }
    for (agent, outcomes) in &by_agent {
        let ok = outcomes.iter().filter(|(t, g)| t == g).count();
        let _ = writeln!(report, "\n{agent}: {ok}/{}", outcomes.len());
        let _ = writeln!(
            report,
            "  truth \\ got   working     idle  blocked  unknown"
        );
        for truth in &STATES[..3] {
            let _ = write!(report, "  {:<12}", truth.as_str());
            for got in STATES {
                let c = outcomes
                    .iter()
                    .filter(|(t, g)| t == truth && *g == got)
                    .count();
                let _ = write!(report, " {c:>8}");
            }
            report.push('\n');
        }
    }
    #[expect(
        clippy::print_stdout,
        reason = "the confusion matrix is this test's report"
    )]
    {
        println!("{report}");
    }
    assert_eq!(by_agent.len(), 3, "captures of all three agents");
    assert!(misses.is_empty(), "{misses:#?}");
}

/// See: issue 24, the frame Gemini CLI 0.61 may draw between adding the submitted message
/// and `setIsResponding(true)` (`useGeminiStream.ts`): the real before-first-byte captures
/// with their loading indicator blanked out, leaving the message, blank rows and the
/// composer's idle rows. The turn has started: working, at every width. The same frame with
/// a slash command echoed instead (which may end with nothing under it) is not held to be
/// work, and neither is a submitted message with the reply under it.
#[test]
fn gemini_turn_started_before_its_loading_indicator_is_working() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real/gemini");
    let profile = Profile::builtin("gemini").expect("built-in profile");
    let spinner = regex::bytes::Regex::new(
        r"\x1b\[38;5;\d+m[\x{2801}-\x{28FF}]\x1b\[39m \x1b\[3m\x1b\[38;5;\d+mThinking\.\.\.\x1b\[0m\x1b\[39m\x1b\[49m \x1b\[38;5;\d+m\(esc to cancel, \d+s\)\x1b\[39m",
    )
    .unwrap();
    for width in [80, 120, 200] {
        let bytes = std::fs::read(root.join(format!("{width}-before-first-byte.ans"))).unwrap();
        assert!(
            spinner.is_match(&bytes),
            "{width}: the capture's loading indicator"
        );
        let blank = spinner.replace(&bytes, &b" ".repeat(34)[..]).into_owned();
        let verdict = classify_screen(&profile, &blank);
        assert_eq!(verdict.state, SessionState::Working, "{width}: {verdict:?}");
        assert_eq!(verdict.evidence[0].rule, "gemini/turn-started", "{width}");
        let text = String::from_utf8_lossy(&blank);
        assert!(
            text.contains("explain the repo"),
            "{width}: the submitted message"
        );
        let command = text.replace("explain the repo", "/theme");
        let verdict = classify_screen(&profile, command.as_bytes());
        assert_ne!(
            verdict.evidence[0].rule, "gemini/turn-started",
            "{width}: a slash command"
        );
        let ended = std::fs::read(root.join(format!("{width}-turn-ended.ans"))).unwrap();
        assert_eq!(
            classify_screen(&profile, &ended).state,
            SessionState::Idle,
            "{width}"
        );
    }
}

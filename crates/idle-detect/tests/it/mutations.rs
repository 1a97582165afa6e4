//! The labelled screens of `../shared/fixtures`, changed in ways that do not change what the
//! agent is doing: split by a capture at a narrower width, more footer lines under the box, a
//! custom spinner verb, an older turn (with an answered dialog, a stale spinner and prose that
//! quotes a dialog) in the scrollback above. Each keeps its verdict.

use hyoka_idle_detect::{Profile, Screen};

use crate::support::shared_dir;

/// Lines longer than `width` characters split into rows, as `tmux capture-pane` without `-J`.
fn hard_wrap(text: &str, width: usize) -> String {
    let mut out = Vec::new();
    for line in text.split('\n') {
        let chars: Vec<char> = line.chars().collect();
        if chars.is_empty() {
            out.push(String::new());
        }
        for row in chars.chunks(width) {
            out.push(row.iter().collect());
        }
    }
    out.join("\n")
}

/// An older turn for the scrollback, in the agent's own style.
fn history(agent: &str) -> &'static str {
    match agent {
        "claude" => {
            "❯ run the tests\n\n⏺ Bash(cargo test)\n  ⎿  Running…\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n\n Esc to cancel\n\n✻ Cultivating… (12s · esc to interrupt)\n\n⏺ The tests pass. In that dialog press Enter to select and Esc to cancel.\n\n"
        }
        "codex" => {
            "› run the tests\n\n• Working (3s • esc to interrupt)\n\n  Would you like to run the following command?\n› 1. Yes, proceed (y)\n  2. No, and tell Codex what to do differently (esc)\n  Press enter to confirm or esc to cancel\n\n• Ran cargo test\n  └ ok\n\n"
        }
        "gemini" => "✦ I ran the tests. Allow execution of [Shell]? was answered.\n\n",
        "copilot" => {
            "● Run the test suite\n  $ npm test\n  └ 12 passed; Esc to cancel stopped nothing\n\n"
        }
        _ => "",
    }
}

/// Screens a mutation may change, with the reason.
const EXPECTED: &[(&str, &str)] = &[
    (
        "history",
        // A lone indented token-stats line (ccmanager's synthetic screen) under a response reads
        // as the response's text: Claude Code draws the counter on the spinner's row.
        "claude/working/ccmanager-should-detect-busy-for-token-stats-line-with-varied-spac.txt",
    ),
    (
        "history",
        // No prompt on screen, so the tail reads up to the transcript's bullet, tool output
        // included: its "Esc to cancel" reads as work (the safe side).
        "copilot/idle/ccmanager-returns-idle-when-no-patterns-match.txt",
    ),
];

#[test]
fn fixture_screens_keep_their_verdicts_under_harmless_changes() {
    let Some(shared) = shared_dir("fixture mutations") else {
        return;
    };
    let root = shared.join("fixtures/screens");
    let index = std::fs::read_to_string(root.join("INDEX.tsv")).expect("INDEX.tsv");
    let profiles: Vec<(&str, Profile)> = ["claude", "codex", "gemini", "copilot", "aider"]
        .into_iter()
        .map(|a| {
            let name = if a == "claude" { "claude-code" } else { a };
            (a, Profile::builtin(name).expect("built-in profile"))
        })
        .collect();
    let mut changed = Vec::new();
    let mut checked = 0;
    for line in index.lines().skip(1) {
        let mut cols = line.split('\t');
        let (Some(file), Some(agent)) = (cols.next(), cols.next()) else {
            continue;
        };
        let bytes = std::fs::read(root.join(file)).expect("fixture");
        if bytes.contains(&0x1b) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let profile = &profiles.iter().find(|(a, _)| *a == agent).expect("agent").1;
        let judge = |t: &str| profile.classify(&Screen::from_bytes(t.as_bytes())).state;
        let before = judge(&text);
        let mut mutants: Vec<(&str, String)> = vec![
            ("wrap 70", hard_wrap(&text, 70)),
            ("wrap 100", hard_wrap(&text, 100)),
            ("history", format!("{}{text}", history(agent))),
        ];
        if agent == "claude" {
            mutants.push((
                "footer",
                format!(
                    "{}\n  ⏵⏵ accept edits on (shift+tab to cycle) · 3 files +12 -4\n  Model: Opus | Ctx 40%\n",
                    text.trim_end()
                ),
            ));
            mutants.push((
                "verb",
                text.replace("Cultivating…", "Doing the thing…")
                    .replace("Tempering…", "Vibing…"),
            ));
        }
        if agent == "codex" {
            mutants.push((
                "footer",
                format!(
                    "{}\n\n  gpt-5.5 high · 42% left · ~/repo\n",
                    text.trim_end()
                ),
            ));
        }
        for (name, mutant) in mutants {
            checked += 1;
            let after = judge(&mutant);
            if after != before && !EXPECTED.contains(&(name, file)) {
                changed.push(format!("{name}: {file}: {before} -> {after}"));
            }
        }
    }
    assert!(checked > 800, "only {checked} mutants");
    assert!(changed.is_empty(), "{changed:#?}");
}

//! Generated screens (see `screens.rs`): every agent's states at widths from 60 to 220
//! columns, in three colour themes, wrapped three ways, over scrollback that holds old dialogs,
//! stale spinners and prose quoting them. A sweep covers every combination at a few widths;
//! a property test draws the rest at random. Each screen must get its label.

use hyoka_idle_detect::{Profile, Screen, SessionState};
use proptest::prelude::*;

use crate::screens::{Agent, Live, Spec, Theme, Wrap, describe};

const THEMES: [Theme; 3] = [Theme::Plain, Theme::Ansi256, Theme::TrueColor];
const WRAPS: [Wrap; 3] = [Wrap::Terminal, Wrap::Word, Wrap::Hard];

/// The built-in profiles, compiled once for all the tests of this module.
fn profile(agent: Agent) -> &'static Profile {
    static PROFILES: std::sync::OnceLock<Vec<(Agent, Profile)>> = std::sync::OnceLock::new();
    let all = PROFILES.get_or_init(|| {
        Agent::ALL
            .iter()
            .map(|&a| (a, Profile::builtin(a.profile()).expect("built-in profile")))
            .collect()
    });
    &all.iter()
        .find(|(a, _)| *a == agent)
        .expect("every agent")
        .1
}

/// Classifies a spec's screen and returns what went wrong, if anything.
fn judge(spec: &Spec) -> Option<String> {
    let profile = profile(spec.agent);
    let (bytes, rows) = spec.render();
    let screen = if spec.theme == Theme::Plain {
        Screen::from_bytes(&bytes)
    } else {
        Screen::render(&bytes, rows, spec.width)
    };
    let v = profile.classify(&screen);
    let want = spec.label();
    let ok =
        v.state == want.state && (want.state != SessionState::Blocked || v.blocked == want.blocked);
    (!ok).then(|| {
        format!(
            "want {:?} {:?}, got {:?} {:?} by {:?} ({})\n{}\n--- screen ---\n{}",
            want.state,
            want.blocked,
            v.state,
            v.blocked,
            v.rule,
            v.detail,
            describe(spec),
            screen.text()
        )
    })
}

#[test]
fn every_generated_state_gets_its_label() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for agent in Agent::ALL {
        for live in Live::ALL {
            let forms = if live == Live::Working { 7 } else { 3 };
            for form in 0..forms {
                for theme in THEMES {
                    for wrap in WRAPS {
                        for width in [60, 97, 141, 220] {
                            for seed in [1, 2] {
                                let spec = Spec {
                                    agent,
                                    live,
                                    form,
                                    width,
                                    theme,
                                    wrap,
                                    seed,
                                };
                                if !spec.drawable() {
                                    continue;
                                }
                                checked += 1;
                                if let Some(f) = judge(&spec) {
                                    failures.push(f);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 2000, "only {checked} screens generated");
    assert!(
        failures.is_empty(),
        "{} of {checked} generated screens misjudged; first:\n{}",
        failures.len(),
        failures[0]
    );
}

fn spec_strategy() -> impl Strategy<Value = Spec> {
    (
        0..Agent::ALL.len(),
        0..Live::ALL.len(),
        0usize..64,
        60u16..=220,
        0..THEMES.len(),
        0..WRAPS.len(),
        any::<u64>(),
    )
        .prop_map(|(a, l, form, width, t, w, seed)| Spec {
            agent: Agent::ALL[a],
            live: Live::ALL[l],
            form,
            width,
            theme: THEMES[t],
            wrap: WRAPS[w],
            seed,
        })
        .prop_filter("the agent draws this state", Spec::drawable)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_generated_screens_get_their_labels(spec in spec_strategy()) {
        if let Some(f) = judge(&spec) {
            prop_assert!(false, "{}", f);
        }
    }
}

//! Unit tests for `checker`: prompts, verdict parsing and the state machine (Codeman's AI checker contract, `docs/detection.md` section 5).

use std::time::{Duration, Instant};

use super::{
    CheckReply, CheckerConfig, CheckerMachine, CheckerStatus, Finish, IdleAnswer, PlanAnswer,
    Refusal, idle_prompt, parse_idle_reply, parse_plan_reply, plan_prompt, tail_chars,
};
use crate::error::CheckError;

#[track_caller]
fn check(output: &str, expected: Result<(IdleAnswer, &str), &str>) {
    match (parse_idle_reply(output), expected) {
        (Ok(r), Ok((v, reasoning))) => {
            assert_eq!((r.verdict, r.reasoning.as_str()), (v, reasoning));
        }
        (Err(e), Err(msg)) => assert!(e.to_string().contains(msg), "{e}"),
        (got, want) => panic!("{output:?}: got {got:?}, want {want:?}"),
    }
}

#[test]
fn idle_replies_parse_like_codeman() {
    check(
        "IDLE\nAll done.\nThe prompt is back.",
        Ok((IdleAnswer::Idle, "All done.\nThe prompt is back.")),
    );
    check("idle\nDone.", Ok((IdleAnswer::Idle, "Done.")));
    check(
        "  WORKING",
        Ok((IdleAnswer::Working, "AI determined: WORKING")),
    );
    check("garbage here", Err("could not parse verdict"));
    check("   \n ", Err("empty output"));
    check("warning: x\nIDLE", Err("could not parse"));
    check("IDLENESS", Err("could not parse"));
}

#[test]
fn plan_replies_parse() {
    assert_eq!(
        parse_plan_reply("PLAN_MODE\nmenu").map(|r| r.verdict).ok(),
        Some(PlanAnswer::PlanMode)
    );
    assert_eq!(
        parse_plan_reply("not_plan_mode").map(|r| r.verdict).ok(),
        Some(PlanAnswer::NotPlanMode)
    );
    assert!(parse_plan_reply("PLAN").is_err());
}

#[test]
fn prompts_insert_the_context_literally_and_bounded() {
    let p = idle_prompt("cost $& and $' stay");
    assert!(p.contains("cost $& and $' stay"));
    assert!(p.starts_with("You are analyzing"));
    assert!(p.contains("When in doubt, ALWAYS answer WORKING"));
    let long = "é".repeat(20_000);
    let p = idle_prompt(&long);
    assert_eq!(p.matches('é').count(), 16_000);
    assert_eq!(plan_prompt(&long).matches('é').count(), 8_000);
    assert_eq!(tail_chars("abcdef", 2), "ef");
    assert_eq!(tail_chars("ab", 5), "ab");
}

struct Clock(Instant);

impl Clock {
    fn new() -> Self {
        #[expect(
            clippy::disallowed_methods,
            reason = "tests need one base instant; all times derive from it"
        )]
        Self(Instant::now())
    }
    fn at(&self, s: u64) -> Instant {
        self.0 + Duration::from_secs(s)
    }
}

#[expect(
    clippy::unnecessary_wraps,
    reason = "the machine takes a check's result"
)]
fn reply(v: IdleAnswer) -> Result<CheckReply<IdleAnswer>, CheckError> {
    Ok(CheckReply {
        verdict: v,
        reasoning: String::new(),
    })
}

#[test]
fn working_starts_the_cooldown_and_idle_does_not() {
    let c = Clock::new();
    let mut m = CheckerMachine::<IdleAnswer>::new(CheckerConfig::idle());
    let t = m.try_start(c.at(0)).expect("ready");
    assert_eq!(m.try_start(c.at(1)), Err(Refusal::AlreadyChecking));
    assert!(matches!(
        m.finish(c.at(5), t, reply(IdleAnswer::Working)),
        Finish::Verdict(_)
    ));
    assert_eq!(
        m.try_start(c.at(6)),
        Err(Refusal::OnCooldown {
            remaining: Duration::from_secs(179)
        })
    );
    assert_eq!(m.next_deadline(), Some(c.at(185)));
    let t = m.try_start(c.at(185)).expect("cooldown over");
    assert!(matches!(
        m.finish(c.at(186), t, reply(IdleAnswer::Idle)),
        Finish::Verdict(_)
    ));
    assert_eq!(m.status(c.at(186)), &CheckerStatus::Ready);
}

#[test]
fn errors_back_off_then_disable_and_a_success_resets_them() {
    let c = Clock::new();
    let mut m = CheckerMachine::<IdleAnswer>::new(CheckerConfig::idle());
    let t = m.try_start(c.at(0)).expect("ready");
    let f = m.finish(c.at(1), t, Err(CheckError::EmptyOutput));
    assert_eq!(
        f,
        Finish::Failed {
            error: "empty output from AI check".to_owned(),
            consecutive: 1
        }
    );
    assert_eq!(
        m.try_start(c.at(2)),
        Err(Refusal::OnCooldown {
            remaining: Duration::from_secs(59)
        })
    );
    let t = m.try_start(c.at(61)).expect("after 60 s");
    m.finish(
        c.at(61),
        t,
        Err(CheckError::Unparsable {
            first: "x".to_owned(),
        }),
    );
    assert_eq!(
        m.try_start(c.at(62)),
        Err(Refusal::OnCooldown {
            remaining: Duration::from_secs(119)
        })
    );
    // A success in between resets the count.
    let t = m.try_start(c.at(181)).expect("after 120 s");
    m.finish(c.at(181), t, reply(IdleAnswer::Idle));
    assert_eq!(m.consecutive_errors(), 0);
    for k in 0..3 {
        let now = c.at(1000 + k * 1000);
        let t = m.try_start(now).expect("ready");
        m.finish(now, t, Err(CheckError::EmptyOutput));
    }
    match m.try_start(c.at(10_000)) {
        Err(Refusal::Disabled(reason)) => {
            assert!(reason.contains("3 consecutive errors"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    m.reset();
    assert!(
        matches!(m.try_start(c.at(10_001)), Err(Refusal::Disabled(_))),
        "reset keeps a disabled checker disabled"
    );
    m.enable();
    assert!(m.try_start(c.at(10_002)).is_ok());
}

#[test]
fn the_back_off_is_capped_at_five_minutes() {
    let c = Clock::new();
    let config = CheckerConfig {
        max_consecutive_errors: 10,
        ..CheckerConfig::idle()
    };
    let mut m = CheckerMachine::<IdleAnswer>::new(config);
    let mut now = 0;
    for _ in 0..4 {
        let t = m.try_start(c.at(now)).expect("ready");
        m.finish(c.at(now), t, Err(CheckError::EmptyOutput));
        now += 1000;
    }
    assert_eq!(m.next_deadline(), Some(c.at(3000 + 300)));
}

#[test]
fn cancel_resolves_exactly_once_and_late_results_are_stale() {
    let c = Clock::new();
    let mut m = CheckerMachine::<IdleAnswer>::new(CheckerConfig::idle());
    let t = m.try_start(c.at(0)).expect("ready");
    assert_eq!(m.cancel(), Some(t.id()));
    assert_eq!(m.cancel(), None);
    assert_eq!(m.finish(c.at(3), t, reply(IdleAnswer::Idle)), Finish::Stale);
    assert_eq!(m.consecutive_errors(), 0);
    // A result for an older check is stale even while a newer one runs.
    let t2 = m.try_start(c.at(4)).expect("ready again, no cooldown");
    assert_eq!(m.finish(c.at(5), t, reply(IdleAnswer::Idle)), Finish::Stale);
    assert!(matches!(
        m.finish(c.at(6), t2, reply(IdleAnswer::Idle)),
        Finish::Verdict(_)
    ));
    // A cancellation reported by the checker itself is not an error.
    let t3 = m.try_start(c.at(7)).expect("ready");
    assert_eq!(
        m.finish(c.at(8), t3, Err(CheckError::Cancelled)),
        Finish::Stale
    );
    assert_eq!(m.consecutive_errors(), 0);
}

#[test]
fn a_check_past_its_timeout_counts_as_an_error() {
    let c = Clock::new();
    let mut m = CheckerMachine::<PlanAnswer>::new(CheckerConfig::plan());
    let t = m.try_start(c.at(0)).expect("ready");
    assert_eq!(m.next_deadline(), Some(c.at(60)));
    m.poll(c.at(60));
    assert_eq!(m.consecutive_errors(), 1);
    assert_eq!(
        m.finish(
            c.at(61),
            t,
            Ok(CheckReply {
                verdict: PlanAnswer::PlanMode,
                reasoning: String::new()
            })
        ),
        Finish::Stale
    );
    assert_eq!(
        m.try_start(c.at(61)),
        Err(Refusal::OnCooldown {
            remaining: Duration::from_secs(29)
        })
    );
    let events = m.drain_events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, super::CheckerEvent::TimedOut { .. })),
        "{events:?}"
    );
}

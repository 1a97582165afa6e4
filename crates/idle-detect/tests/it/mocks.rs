//! The `mock` feature's `mockall` mocks stand in for real checkers, as `hyoka-respawn` uses them.

use std::time::Duration;

use hyoka_idle_detect::{
    CheckReply, CheckerConfig, CheckerMachine, Finish, IdleAnswer, IdleChecker, MockIdleChecker,
    MockPlanChecker, PlanAnswer, PlanChecker,
};

use crate::support::base_instant;

#[tokio::test]
async fn a_mock_idle_checker_drives_the_machine() {
    let mut mock = MockIdleChecker::new();
    mock.expect_check_idle()
        .withf(|context| context.contains("Worked for"))
        .times(1)
        .returning(|_| {
            Ok(CheckReply {
                verdict: IdleAnswer::Working,
                reasoning: "spinner".to_owned(),
            })
        });
    let t0 = base_instant();
    let mut machine = CheckerMachine::<IdleAnswer>::new(CheckerConfig::idle());
    let ticket = machine.try_start(t0).expect("ready");
    let result = mock.check_idle("✻ Worked for 5s").await;
    let finish = machine.finish(t0 + Duration::from_secs(2), ticket, result);
    assert!(matches!(
        finish,
        Finish::Verdict(CheckReply {
            verdict: IdleAnswer::Working,
            ..
        })
    ));
    assert!(
        machine.try_start(t0 + Duration::from_secs(3)).is_err(),
        "WORKING starts the cooldown"
    );
}

#[tokio::test]
async fn a_mock_plan_checker_answers() {
    let mut mock = MockPlanChecker::new();
    mock.expect_check_plan().returning(|_| {
        Ok(CheckReply {
            verdict: PlanAnswer::PlanMode,
            reasoning: String::new(),
        })
    });
    assert_eq!(
        mock.check_plan("❯ 1. Yes").await.map(|r| r.verdict).ok(),
        Some(PlanAnswer::PlanMode)
    );
}

//! Tests of settings precedence: an explicit flag > the eval > defaults > built-in, field by
//! field.

use std::time::Duration;

use super::*;

fn level(timeout: Option<u64>, max_turns: Option<u64>, env: &[(&str, &str)]) -> Settings {
    Settings {
        timeout: timeout.map(Duration::from_secs),
        limits: PartialLimits {
            max_turns,
            ..PartialLimits::default()
        },
        env: env
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect(),
        ..Settings::default()
    }
}

#[track_caller]
fn check(levels: &[&Settings], timeout: u64, max_turns: u64, env: &[(&str, &str)]) {
    let spec = EvalSpec::resolve(EvalId::main(), vec!["true".into()], None, levels);
    assert_eq!(spec.timeout, Duration::from_secs(timeout));
    assert_eq!(spec.limits.max_turns, max_turns);
    // Later entries override earlier ones when the agent's environment is built.
    let mut resolved = std::collections::BTreeMap::new();
    for (key, value) in &spec.env {
        resolved.insert(
            key.to_string_lossy().into_owned(),
            value.to_string_lossy().into_owned(),
        );
    }
    let expected: std::collections::BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    assert_eq!(resolved, expected);
}

#[test]
fn the_strongest_level_that_sets_a_field_wins() {
    let cli = level(Some(1), None, &[]);
    let eval = level(Some(2), Some(7), &[("MODE", "eval"), ("ONLY_EVAL", "1")]);
    let defaults = level(
        Some(3),
        Some(9),
        &[("MODE", "default"), ("ONLY_DEFAULT", "1")],
    );
    check(
        &[&cli, &eval, &defaults],
        1,
        7,
        &[("MODE", "eval"), ("ONLY_EVAL", "1"), ("ONLY_DEFAULT", "1")],
    );
    check(
        &[&eval, &defaults],
        2,
        7,
        &[("MODE", "eval"), ("ONLY_EVAL", "1"), ("ONLY_DEFAULT", "1")],
    );
    check(
        &[&defaults],
        3,
        9,
        &[("MODE", "default"), ("ONLY_DEFAULT", "1")],
    );
    check(&[], 600, crate::limits::DEFAULT_MAX_TURNS, &[]);
}

#[test]
fn phase_fields_fall_through_one_by_one() {
    let build = PhaseCommand::shell("make", None);
    let review = PhaseCommand::shell("./review", Some(Duration::from_secs(7)));
    let eval = Settings {
        phases: PhaseSettings {
            build: Some(build.clone()),
            ..PhaseSettings::default()
        },
        ..Settings::default()
    };
    let defaults = Settings {
        phases: PhaseSettings {
            build: Some(PhaseCommand::shell("never used", None)),
            review: Some(review.clone()),
            isolate_home: Some(true),
            ..PhaseSettings::default()
        },
        ..Settings::default()
    };
    let spec = EvalSpec::resolve(
        EvalId::main(),
        vec!["true".into()],
        None,
        &[&eval, &defaults],
    );
    assert_eq!(spec.phases.build, Some(build));
    assert_eq!(spec.phases.review, Some(review));
    assert!(spec.phases.isolate_home);
    assert_eq!(spec.events, EventSource::None);
    assert_eq!(spec.grace, DEFAULT_GRACE);
}

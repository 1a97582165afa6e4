//! Tests of identities: equal settings give equal digests; what decides a result changes
//! them, what does not leaves them.

use std::time::Duration;

use hyoka_workspace::EvalId;

use super::*;

fn spec() -> EvalSpec {
    EvalSpec::new(EvalId::new("a").unwrap(), vec!["agent".into(), "go".into()])
}

#[track_caller]
fn check(change: impl Fn(&mut EvalSpec), same: bool) {
    let base = spec().identity().unwrap();
    let mut changed = spec();
    change(&mut changed);
    assert_eq!(changed.identity().unwrap() == base, same);
}

#[test]
fn what_decides_a_result_is_in_the_identity_and_nothing_else() {
    check(|_| {}, true);
    check(|s| s.command.push("more".into()), false);
    check(|s| s.limits.max_turns += 1, false);
    check(|s| s.limits.max_cost = 0.5, false);
    check(|s| s.timeout = Duration::from_secs(1), false);
    check(|s| s.env.push(("K".into(), "V".into())), false);
    check(|s| s.agent = Some("claude".into()), false);
    check(|s| s.grace = Duration::from_secs(99), true);
    check(|s| s.retries = 3, true);
    check(|s| s.epochs = 3, true);
    assert_ne!(trial_identity("x", 1), trial_identity("x", 2));
}

#[test]
fn the_starters_contents_are_in_the_identity() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/a.txt"), "one").unwrap();
    let with_starter = || {
        let mut s = spec();
        s.starter = Some(dir.path().to_owned());
        s.identity().unwrap()
    };
    let first = with_starter();
    assert_eq!(with_starter(), first);
    std::fs::write(dir.path().join("src/a.txt"), "two").unwrap();
    let second = with_starter();
    assert_ne!(second, first);
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).unwrap();
    assert_ne!(with_starter(), second);
    // An injected file (not a directory) is hashed too.
    let file = dir.path().join("src/a.txt");
    let mut injected = spec();
    injected.phases.files = vec![crate::settings::injection(file.clone(), None).unwrap()];
    let before = injected.identity().unwrap();
    std::fs::write(&file, "three").unwrap();
    assert_ne!(injected.identity().unwrap(), before);
    let mut missing = spec();
    missing.starter = Some(dir.path().join("nope"));
    assert!(missing.identity().is_err());
}

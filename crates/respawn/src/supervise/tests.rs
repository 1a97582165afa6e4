//! Unit tests of the supervised session's decisions.

use hyoka_proctrack::TeardownReport;

use super::stopping::nothing_left;

#[test]
fn a_ledger_goes_only_when_teardown_proved_nothing_is_left() {
    let clean = TeardownReport::default();
    assert!(nothing_left(&clean));

    let survivor = TeardownReport {
        survivors: 1,
        ..TeardownReport::default()
    };
    assert!(!nothing_left(&survivor));

    // Zero by count, but the count is no proof: orphans may have gone to init.
    let unknown = TeardownReport {
        survivors_unknown: Some("no shim and this process is not a subreaper".to_owned()),
        ..TeardownReport::default()
    };
    assert!(!nothing_left(&unknown));
}

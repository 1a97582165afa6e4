//! One id grammar: run and eval ids are built with `hyoka-workspace`'s `RunId`/`EvalId`, and
//! `hyoka-proctrack` (a leaf that cannot depend on it) re-checks the ids it writes to and
//! reads from ledgers. Both must accept exactly the same strings.

use std::path::Path;

use hyoka_proctrack::{Identity, Ledger};
use hyoka_workspace::{EvalId, RunId};
use proptest::prelude::*;

#[track_caller]
fn check(id: &str) {
    let owner = Identity::current().unwrap();
    let run_proctrack = Ledger::new(id, owner.clone()).is_ok();
    assert_eq!(RunId::new(id).is_ok(), run_proctrack, "run id {id:?}");
    let mut ledger = Ledger::new("run", owner).unwrap();
    let eval_proctrack = ledger.set_workspace(id, Path::new("/ws")).is_ok();
    assert_eq!(EvalId::new(id).is_ok(), eval_proctrack, "eval id {id:?}");
}

#[test]
fn the_edges_of_the_grammar_agree() {
    for id in [
        "",
        "a",
        "A9",
        "9a",
        ".a",
        "-a",
        "_a",
        "a.b-c_d",
        "a/b",
        "a b",
        "a\tb",
        "..",
        "é",
        "a\n",
        &"x".repeat(64),
        &"x".repeat(65),
    ] {
        check(id);
    }
}

proptest! {
    #[test]
    fn any_string_gets_the_same_answer_from_both(id in "[A-Za-z0-9._/ -]{0,70}") {
        check(&id);
    }
}

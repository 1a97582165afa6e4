//! The JSON Schemas of the records a run writes (`schema` feature).

use crate::changes::ChangesRecord;
use crate::report::{Report, RunSummary};
use crate::timeline::Timeline;

/// The JSON Schemas of the records a run writes, by file stem: `report` (`report.json`),
/// `run` (`run.json`), `action-timeline` (`action_timeline.json`) and `changes`
/// (`changes.json`).
pub fn schemas() -> Vec<(&'static str, schemars::Schema)> {
    vec![
        ("report", schemars::schema_for!(Report)),
        ("run", schemars::schema_for!(RunSummary)),
        ("action-timeline", schemars::schema_for!(Timeline)),
        ("changes", schemars::schema_for!(ChangesRecord)),
    ]
}

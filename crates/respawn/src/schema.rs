//! The JSON Schema of one line of `hyoka respawn --events FILE`: a controller [`Event`]
//! with its time, or one of the two lines a supervised session ends with.

use crate::event::Event;

/// The JSON Schema of one `--events` line.
pub fn event_line_schema() -> schemars::Schema {
    schemars::schema_for!(RespawnEventLine)
}

/// One line of `hyoka respawn --events FILE`.
#[derive(schemars::JsonSchema)]
#[expect(dead_code, reason = "describes the lines for the JSON Schema only")]
struct RespawnEventLine {
    /// Milliseconds since the controller started.
    t_ms: u64,
    /// RFC 3339 wall-clock time.
    time: String,
    /// The event.
    #[serde(flatten)]
    body: RespawnEventBody,
}

/// A controller event, or one of the two lines the command adds at the end.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[expect(dead_code, reason = "describes the lines for the JSON Schema only")]
enum RespawnEventBody {
    /// An event of the respawn state machine or its driver.
    Controller(Event),
    /// How the session ended.
    Finished {
        /// Always `finished`.
        event: FinishedTag,
        /// `budget_exhausted`, `session_ended`, `interrupted`, `session_lost`, …
        outcome: String,
        /// Cycles completed.
        cycles: u64,
        /// The agent's exit code, when it exited.
        exit_code: Option<i32>,
        /// The signal that ended the agent, when one did.
        exit_signal: Option<i32>,
    },
    /// What the final teardown stopped.
    Teardown {
        /// Always `teardown`.
        event: TeardownTag,
        /// Processes of the session seen.
        processes_seen: u64,
        /// Processes stopped by hyoka.
        processes_killed: u64,
        /// Processes still running (should be 0).
        survivors: u64,
    },
}

#[derive(schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(dead_code, reason = "describes the lines for the JSON Schema only")]
enum FinishedTag {
    /// The `finished` line.
    Finished,
}

#[derive(schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(dead_code, reason = "describes the lines for the JSON Schema only")]
enum TeardownTag {
    /// The `teardown` line.
    Teardown,
}

//! One module per subcommand.

pub(crate) mod cleanup;
pub(crate) mod demo;
pub(crate) mod detect;
pub(crate) mod doctor;
pub(crate) mod hook;
pub(crate) mod model_stub;
pub(crate) mod ps;
pub(crate) mod report;
pub(crate) mod respawn;
pub(crate) mod run;
pub(crate) mod sessions;
pub(crate) mod tasks;

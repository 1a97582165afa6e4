//! One module per subcommand.

pub(crate) mod clean;
pub(crate) mod demo;
pub(crate) mod detect;
pub(crate) mod doctor;
pub(crate) mod ps;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod sim_agent;

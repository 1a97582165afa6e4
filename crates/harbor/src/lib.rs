//! The files of a Harbor task (the format of Terminal-Bench 2 and the datasets built on it)
//! that hyoka reads without running anything: the environment's `Dockerfile` and the
//! verifier's reward.
//!
//! # Overview
//!
//! [`Dockerfile::parse`] reads `environment/Dockerfile` without building it: the final
//! stage's `WORKDIR`, `ENV` and the [`Copy`](struct@Copy)s of the build context are kept, and everything
//! a host environment cannot give is a [`Step`] with its line ([`StepKind`]); a malformed
//! file is a [`DockerfileError`]. [`read_reward`] reads `reward.txt` or `reward.json` from
//! the verifier's logs (any `hyoka-workspace` [`Workspace`](hyoka_workspace::Workspace)) as
//! untrusted files and turns it into a [`Reward`] under [`RewardRules`], or a
//! [`RewardError`]. `hyoka-eval` loads task folders and runs them as evals on top of this,
//! and re-exports it all.
//!
//! # Example
//!
//! ```
//! use hyoka_harbor::{Dockerfile, StepKind};
//!
//! let dockerfile = Dockerfile::parse(
//!     "FROM ubuntu:24.04\nWORKDIR /app\nENV MODE=test\nCOPY src/ ./src/\nRUN make\n",
//! )
//! .expect("a Dockerfile hyoka can read");
//! assert_eq!(dockerfile.workdir.as_deref(), Some("/app"));
//! assert_eq!(dockerfile.copies[0].dest, "/app/src");
//! assert!(dockerfile.steps.iter().any(|s| matches!(s.kind, StepKind::Run)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod dockerfile;
mod reward;

pub use crate::dockerfile::{
    Copy, CopySource, Dockerfile, DockerfileError, MAX_DOCKERFILE_BYTES, Step, StepKind, join_abs,
};
pub use crate::reward::{
    MAX_REWARD_BYTES, Reward, RewardError, RewardFile, RewardRules, read_reward,
};

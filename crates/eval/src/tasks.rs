//! Public benchmarks as they are: Harbor task folders (the format of Terminal-Bench 2 and the
//! datasets built on it) run as hyoka evals.
//!
//! A task folder (`task.toml`, `instruction.md`, `environment/`, `tests/test.sh`,
//! `solution/solve.sh`) becomes one eval whose id is the folder's name ([`load_tasks`],
//! [`Task`]); [`task_specs`] turns tasks into [`EvalSpec`](crate::EvalSpec)s for an agent
//! ([`TaskAgent`]: the oracle, the nop agent, or a command given the instruction), honouring
//! `task.toml` ([`TaskConfig`]). On the host ([`TaskEnvironment::Host`]) a trial sees its
//! workspace at the Dockerfile's `WORKDIR` ([`Dockerfile`], [`host_view`]), `/logs` as Harbor
//! provides it, the oracle's `/solution`, and, once the agent has finished, `/tests`; the
//! verifier (`tests/test.sh`) runs as the review phase and its reward
//! ([`read_reward`], [`Reward`]) is the trial's `review.score`. A task this machine cannot
//! give its environment is a `not_run` trial that says why.

mod check;
mod config;
mod environment;
mod folder;
mod plan;
pub(crate) mod trial;

pub use self::trial::TaskRecord;

pub use self::check::{CheckRow, TaskCheck, check_agents, check_tasks, render_check};
pub use self::config::{
    DEFAULT_CPUS, DEFAULT_MEMORY_MB, DEFAULT_STORAGE_MB, DEFAULT_VERIFIER_TIMEOUT, EnvValue,
    EnvironmentConfig, TaskConfig, TaskNetwork,
};
pub use self::environment::{HostView, TaskEnvironment, TaskOptions, host_view};
pub use self::folder::{
    MAX_INSTRUCTION_BYTES, MAX_TASK_TOML_BYTES, MAX_TASKS, Task, hidden_dirs, load_tasks,
};
pub use self::plan::{
    HOST_NETWORK_ENV, LOGS_DIR, PROMPT_ENV, SOLUTION_DIR, TESTS_DIR, TaskAgent, TaskRunOptions,
    TaskTrial, task_specs,
};
pub use hyoka_harbor::{
    Copy, CopySource, Dockerfile, DockerfileError, MAX_DOCKERFILE_BYTES, Step, StepKind,
};
pub use hyoka_harbor::{
    MAX_REWARD_BYTES, Reward, RewardError, RewardFile, RewardRules, read_reward,
};

//! What identifies a trial and a suite: SHA-256 digests of resolved settings, so that a
//! resumed run keeps a finished trial only when nothing that decides its result changed, and
//! `report merge` joins only shards of one suite.
//!
//! An eval's identity covers its command, the contents of its starter and injected files
//! (paths, kinds, bytes and link targets, read without following links), its environment,
//! limits, timeout, event source, phases (services, build, review, isolated home) and agent.
//! It leaves out what does not decide a result: the grace period, retries, workers, where
//! workspaces and reports go, the run id. A trial's identity adds its epoch; a suite's is
//! the digest of every eval's identity and epoch count, in suite order.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::EvalError;
use crate::settings::{EvalSpec, Readiness};

impl EvalSpec {
    /// The eval's identity: a lowercase hex SHA-256 of its command, the contents of its
    /// starter and injected files (paths, kinds, bytes and link targets, read without
    /// following links), its environment, limits, timeout, event source, phases and agent.
    /// The grace period, retries, epochs, workers and paths are left out: they do not decide
    /// a result. A trial's identity adds its epoch.
    ///
    /// # Errors
    /// [`EvalError::Io`] when the starter or an injected file cannot be read.
    pub fn identity(&self) -> Result<String, EvalError> {
        let mut hasher = Sha256::new();
        let mut field = |name: &str, value: &dyn std::fmt::Debug| {
            // Debug renderings of owned, plain data: stable for equal values.
            hasher.update(format!("{name}={value:?}\n").as_bytes());
        };
        field("command", &self.command);
        field("env", &self.env);
        field("timeout", &self.timeout);
        field("events", &self.events);
        let limits = &self.limits;
        field(
            "limits",
            &(
                limits.max_turns,
                limits.max_files,
                limits.max_output_size,
                limits.max_session_actions,
                limits.max_tokens,
                limits.max_cost.to_bits(),
            ),
        );
        field("agent", &self.agent);
        let phases = &self.phases;
        field("build", &phases.build);
        field("review", &phases.review);
        field("isolate_home", &phases.isolate_home);
        field("pass_env", &phases.pass_env);
        for service in &phases.services {
            let ready = match &service.ready {
                Readiness::Started => "started".to_owned(),
                other => format!("{other:?}"),
            };
            field(
                "service",
                &(
                    &service.name,
                    &service.command,
                    ready,
                    service.timeout,
                    &service.env,
                ),
            );
        }
        if let Some(starter) = &self.starter {
            hasher.update(b"starter\n");
            hash_tree(&mut hasher, starter, Path::new(""))?;
        }
        for file in &phases.files {
            hasher.update(b"file ");
            hasher.update(file.target.as_os_str().as_encoded_bytes());
            hasher.update(b"\0");
            hash_tree(&mut hasher, &file.source, Path::new(""))?;
        }
        if let Some(task) = &self.task {
            // What decides a task's result: the folder's contents (whatever its path), where
            // it runs and how, who works on it, and how the reward is judged.
            let mut field = |name: &str, value: &dyn std::fmt::Debug| {
                hasher.update(format!("{name}={value:?}\n").as_bytes());
            };
            field("task.environment", &task.environment);
            field("task.agent", &task.agent);
            field(
                "task.rules",
                &(task.rules.threshold.to_bits(), &task.rules.key),
            );
            field("task.unavailable", &task.unavailable);
            field("task.verifier_env", &task.verifier_env);
            if let Some(view) = &task.view {
                let targets = |files: &[hyoka_workspace::Injection]| {
                    files.iter().map(|f| f.target.clone()).collect::<Vec<_>>()
                };
                field(
                    "task.view",
                    &(
                        &view.workdir,
                        &view.env,
                        &view.skipped,
                        targets(&view.workspace_files),
                        targets(&view.root_files),
                    ),
                );
            }
            hasher.update(b"task\n");
            hash_tree(&mut hasher, &task.task_dir, Path::new(""))?;
        }
        Ok(hex(&hasher.finalize()))
    }
}

/// A trial's identity: its eval's identity and its epoch.
pub(crate) fn trial_identity(eval: &str, epoch: u32) -> String {
    hex(&Sha256::digest(
        format!("{eval}\nepoch={epoch}\n").as_bytes(),
    ))
}

/// The identity of a suite resolved into `specs` (every eval, whatever the shard): a
/// lowercase hex SHA-256 of each eval's id, identity and epoch count, in order.
///
/// # Errors
/// As [`EvalSpec::identity`].
pub fn suite_identity(specs: &[EvalSpec]) -> Result<String, EvalError> {
    let mut hasher = Sha256::new();
    for spec in specs {
        let line = format!("{} {} {}\n", spec.eval_id, spec.identity()?, spec.epochs);
        hasher.update(line.as_bytes());
    }
    Ok(hex(&hasher.finalize()))
}

/// Feeds a file or a directory tree into `hasher`: each entry's relative path and kind, a
/// file's length and bytes, a link's target (never followed), in name order.
fn hash_tree(hasher: &mut Sha256, root: &Path, rel: &Path) -> Result<(), EvalError> {
    // `root.join("")` would add a trailing slash, which a file's path must not have.
    let path = if rel.as_os_str().is_empty() {
        root.to_owned()
    } else {
        root.join(rel)
    };
    let read = |e| EvalError::io("read", &path, e);
    let meta = std::fs::symlink_metadata(&path).map_err(read)?;
    let name = rel.as_os_str().as_encoded_bytes();
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&path).map_err(read)?;
        hasher.update(b"L ");
        hasher.update(name);
        hasher.update(b"\0");
        hasher.update(target.as_os_str().as_encoded_bytes());
        hasher.update(b"\0");
    } else if meta.is_dir() {
        hasher.update(b"D ");
        hasher.update(name);
        hasher.update(b"\0");
        let mut entries = std::fs::read_dir(&path)
            .map_err(read)?
            .map(|entry| entry.map(|e| e.file_name()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(read)?;
        entries.sort();
        for entry in entries {
            hash_tree(hasher, root, &rel.join(entry))?;
        }
    } else if meta.is_file() {
        hasher.update(b"F ");
        hasher.update(name);
        hasher.update(format!("\0{}\0", meta.len()).as_bytes());
        let mut file = std::fs::File::open(&path).map_err(read)?;
        std::io::copy(&mut file, hasher).map_err(read)?;
    } else {
        // A FIFO, socket or device: its kind is all that is hashed (it is never read).
        hasher.update(format!("S {:?}\0", meta.file_type()).as_bytes());
        hasher.update(name);
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests;

//! Reading task folders and datasets: a folder with a `task.toml` is a task; a folder of
//! such folders is a dataset.
//!
//! A task folder holds `task.toml`, `instruction.md` (the prompt), `environment/` (a
//! `Dockerfile` and its build context, or a `docker-compose.yaml`), `tests/test.sh` (the
//! verifier) and, optionally, `solution/solve.sh` (the oracle). Everything is read before
//! anything runs, in bounded memory, and nothing in the folder is ever written: a trial works
//! on copies.

use std::path::{Path, PathBuf};

use hyoka_workspace::EvalId;

use crate::error::EvalError;
use crate::tasks::config::TaskConfig;
use hyoka_harbor::{Dockerfile, MAX_DOCKERFILE_BYTES};

/// The most bytes of a `task.toml` read.
pub const MAX_TASK_TOML_BYTES: u64 = 1024 * 1024;
/// The most bytes of an `instruction.md` read (it becomes an environment variable and an
/// argument, both of which the kernel caps far below this).
pub const MAX_INSTRUCTION_BYTES: u64 = 1024 * 1024;
/// The most task folders one dataset may hold.
pub const MAX_TASKS: usize = 100_000;

/// One task folder, read and checked.
#[derive(Debug, Clone)]
pub struct Task {
    /// The eval id: the folder's name.
    pub id: EvalId,
    /// The folder, absolute.
    pub dir: PathBuf,
    /// Its `task.toml`.
    pub config: TaskConfig,
    /// Its `instruction.md`, as is.
    pub instruction: String,
    /// Its `environment/Dockerfile`, when it has one.
    pub dockerfile: Option<Dockerfile>,
    /// Whether `environment/` holds a `docker-compose.yaml` (or `.yml`, `compose.yaml`).
    pub compose: bool,
    /// Whether `environment/` holds a `.dockerignore`.
    pub dockerignore: bool,
    /// Whether it has `solution/solve.sh`.
    pub has_solution: bool,
}

impl Task {
    /// `environment/`, the build context.
    pub fn environment_dir(&self) -> PathBuf {
        self.dir.join("environment")
    }

    /// `tests/`.
    pub fn tests_dir(&self) -> PathBuf {
        self.dir.join("tests")
    }

    /// `solution/`.
    pub fn solution_dir(&self) -> PathBuf {
        self.dir.join("solution")
    }

    /// Reads the task folder `dir`.
    ///
    /// # Errors
    /// [`EvalError::HarborTask`] naming the folder and what is wrong: a name that is not an
    /// eval id, a missing or invalid `task.toml`, no `instruction.md`, no `tests/test.sh`, a
    /// Dockerfile that cannot be read.
    pub fn load(dir: &Path) -> Result<Self, EvalError> {
        // The real path (links resolved): what a trial's view hides must be where the
        // files are.
        let dir = std::fs::canonicalize(dir).map_err(|e| EvalError::HarborTask {
            path: dir.to_owned(),
            message: format!("cannot be read: {e}"),
        })?;
        let bad = |message: String| EvalError::HarborTask {
            path: dir.clone(),
            message,
        };
        let name = dir
            .file_name()
            .ok_or_else(|| bad("has no folder name".to_owned()))?
            .to_str()
            .ok_or_else(|| bad("its name is not UTF-8".to_owned()))?;
        let id = EvalId::new(name).map_err(|e| {
            bad(format!(
                "its name cannot be an eval id ({e}); rename the folder"
            ))
        })?;
        let toml = read_text(&dir.join("task.toml"), MAX_TASK_TOML_BYTES)
            .map_err(|why| bad(format!("task.toml {why}")))?;
        let config = TaskConfig::parse(&toml).map_err(|why| bad(format!("task.toml: {why}")))?;
        let instruction = read_text(&dir.join("instruction.md"), MAX_INSTRUCTION_BYTES)
            .map_err(|why| bad(format!("instruction.md {why}")))?;
        if instruction.contains('\0') {
            return Err(bad("instruction.md holds a NUL byte".to_owned()));
        }
        if !config.multi_step && !is_file(&dir.join("tests/test.sh")) {
            return Err(bad(
                "has no tests/test.sh (the verifier Harbor runs)".to_owned()
            ));
        }
        let env_dir = dir.join("environment");
        let dockerfile = if is_file(&env_dir.join("Dockerfile")) {
            let text = read_text(&env_dir.join("Dockerfile"), MAX_DOCKERFILE_BYTES)
                .map_err(|why| bad(format!("environment/Dockerfile {why}")))?;
            Some(Dockerfile::parse(&text).map_err(|e| bad(format!("environment/Dockerfile {e}")))?)
        } else {
            None
        };
        let compose = [
            "docker-compose.yaml",
            "docker-compose.yml",
            "compose.yaml",
            "compose.yml",
        ]
        .iter()
        .any(|name| is_file(&env_dir.join(name)));
        Ok(Self {
            id,
            config,
            instruction,
            dockerfile,
            compose,
            dockerignore: is_file(&env_dir.join(".dockerignore")),
            has_solution: is_file(&dir.join("solution/solve.sh")),
            dir,
        })
    }
}

/// Reads the tasks at `dir`: the task itself when `dir` holds a `task.toml`, else every
/// folder directly inside it that holds one, in name order (hidden folders and other entries
/// are left out).
///
/// # Errors
/// [`EvalError::HarborTask`] when `dir` is not a directory, holds no task, holds more than
/// [`MAX_TASKS`], or a task cannot be read (see [`Task::load`]).
pub fn load_tasks(dir: &Path) -> Result<Vec<Task>, EvalError> {
    let bad = |message: &str| EvalError::HarborTask {
        path: dir.to_owned(),
        message: message.to_owned(),
    };
    if !dir.is_dir() {
        return Err(bad("is not a directory of Harbor tasks"));
    }
    if dir.join("task.toml").exists() {
        return Ok(vec![Task::load(dir)?]);
    }
    let mut folders = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| EvalError::io("read", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| EvalError::io("read", dir, e))?;
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        let path = entry.path();
        if !hidden && path.is_dir() && path.join("task.toml").is_file() {
            folders.push(path);
            if folders.len() > MAX_TASKS {
                return Err(bad(&format!("holds more than {MAX_TASKS} tasks")));
            }
        }
    }
    if folders.is_empty() {
        return Err(bad(
            "holds no task (a task folder has a task.toml; a dataset is a folder of them)",
        ));
    }
    folders.sort();
    folders.iter().map(|f| Task::load(f)).collect()
}

/// The directories no trial of the tasks at `dir` may see: `dir` itself, and, when `dir` is
/// one task folder inside a dataset (its parent holds other task folders), the dataset too,
/// so an agent on one task cannot read another's tests or solution.
pub fn hidden_dirs(dir: &Path) -> Vec<PathBuf> {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    let mut hidden = vec![dir.clone()];
    if dir.join("task.toml").is_file()
        && let Some(parent) = dir.parent()
        && parent.parent().is_some()
        && std::fs::read_dir(parent).is_ok_and(|entries| {
            entries.filter_map(Result::ok).any(|e| {
                let path = e.path();
                path != dir && path.join("task.toml").is_file()
            })
        })
    {
        hidden.insert(0, parent.to_owned());
    }
    hidden
}

fn is_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// A small text file of the task folder, read without following a link at its own name,
/// as a regular file of at most `max` bytes.
fn read_text(path: &Path, max: u64) -> Result<String, String> {
    use std::io::Read as _;
    let meta = std::fs::symlink_metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "is missing".to_owned(),
        _ => format!("cannot be read: {e}"),
    })?;
    if !meta.is_file() {
        return Err("is not a regular file".to_owned());
    }
    if meta.len() > max {
        return Err(format!("is larger than {max} bytes"));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot be read: {e}"))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!("grew past {max} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_owned())
}

#[cfg(test)]
mod tests;

//! The environment a task runs in, and whether this machine can give it.
//!
//! `host` gives a task the host's own system in place of its image (see the module docs of
//! [`dockerfile`](crate::tasks::Dockerfile)): the workspace is seen at the Dockerfile's
//! `WORKDIR` (or `[environment] workdir`), the build context's files are placed where its
//! `COPY`/`ADD` lines put them, its `ENV` is set. [`host_view`] works that out, or says in one
//! line why the host cannot give what the task needs: a compose file's services, a prebuilt
//! image without a Dockerfile, GPUs, MCP servers, an allowlisted network, or build steps the
//! host does not perform (which [`TaskOptions::skip_build_steps`] runs past, recording them).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use hyoka_workspace::Injection;

use crate::tasks::config::TaskNetwork;
use crate::tasks::folder::Task;
use hyoka_harbor::{CopySource, join_abs};

/// Where a task's processes run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TaskEnvironment {
    /// On the host, in the eval's own mount namespace.
    #[default]
    Host,
    /// In a container built by podman.
    Podman,
    /// In a container built by a Docker engine.
    Docker,
}

impl TaskEnvironment {
    /// The name as written in flags and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Podman => "podman",
            Self::Docker => "docker",
        }
    }
}

impl std::str::FromStr for TaskEnvironment {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "host" => Ok(Self::Host),
            "podman" => Ok(Self::Podman),
            "docker" => Ok(Self::Docker),
            _ => Err(format!(
                "invalid environment {text:?}: expected host, podman or docker"
            )),
        }
    }
}

/// What the host gives one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostView {
    /// Where the workspace is seen (absolute).
    pub workdir: PathBuf,
    /// Build-context files placed in the workspace (targets relative to the `WORKDIR`).
    pub workspace_files: Vec<Injection>,
    /// Build-context files placed elsewhere (targets relative to `/`).
    pub root_files: Vec<Injection>,
    /// The Dockerfile's `ENV`, then the task's `[environment] env`.
    pub env: Vec<(OsString, OsString)>,
    /// Build steps the host did not perform (with `--skip-build-steps`), as
    /// `Dockerfile line N: RUN …`.
    pub skipped: Vec<String>,
}

/// What a caller decides about how tasks run.
#[derive(Debug, Clone, Default)]
pub struct TaskOptions {
    /// Run tasks whose Dockerfile has build steps the host does not perform (`RUN`, `COPY
    /// --from`, `USER`, `ENTRYPOINT`, …) anyway, as if the host already had what they
    /// install; the steps are recorded in the trial's report.
    pub skip_build_steps: bool,
    /// The host's environment, for `${NAME}` values and the caller's home.
    pub host_env: Vec<(OsString, OsString)>,
}

impl TaskOptions {
    fn host_var(&self, name: &str) -> Option<String> {
        self.host_env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    }
}

/// What the host gives `task`, or why it cannot.
///
/// # Errors
/// One line saying what the task needs that the host cannot give.
pub fn host_view(task: &Task, options: &TaskOptions) -> Result<HostView, String> {
    let config = &task.config;
    let env_config = &config.environment;
    if config.multi_step {
        return Err("is a multi-step task ([[steps]]), which hyoka does not run".to_owned());
    }
    if task.compose {
        return Err(
            "needs the services of its environment's docker-compose file, which the host does not start"
                .to_owned(),
        );
    }
    if env_config.gpus > 0 {
        return Err(format!("needs {} GPU(s)", env_config.gpus));
    }
    if env_config.mcp_servers > 0 {
        return Err(format!(
            "needs {} MCP server(s), which the host does not start",
            env_config.mcp_servers
        ));
    }
    if let TaskNetwork::Allowlist(hosts) = &env_config.network {
        return Err(format!(
            "allows only some hosts ({}), which hyoka cannot enforce",
            if hosts.is_empty() {
                "none listed".to_owned()
            } else {
                hosts.join(", ")
            }
        ));
    }
    let mut skipped = Vec::new();
    let mut unprovided = |what: String| -> Result<(), String> {
        if options.skip_build_steps {
            skipped.push(what);
            Ok(())
        } else {
            Err(format!(
                "needs an image the host cannot provide: {what} (--skip-build-steps runs it on the host anyway)"
            ))
        }
    };
    if env_config.healthcheck {
        unprovided("[environment] healthcheck".to_owned())?;
    }
    for (what, user) in [
        ("[agent] user", &config.agent_user),
        ("[verifier] user", &config.verifier_user),
    ] {
        if let Some(user) = user {
            unprovided(format!("{what} {user}"))?;
        }
    }
    let Some(dockerfile) = &task.dockerfile else {
        return Err(match &env_config.docker_image {
            Some(image) => format!("needs the image {image} (it has no environment/Dockerfile)"),
            None => "has no environment/Dockerfile".to_owned(),
        });
    };
    for step in &dockerfile.steps {
        unprovided(format!("Dockerfile line {}: {}", step.line, step.text))?;
    }
    if task.dockerignore {
        unprovided("environment/.dockerignore (not applied)".to_owned())?;
    }
    let workdir = env_config
        .workdir
        .as_deref()
        .map(|w| join_abs("/", w))
        .or_else(|| dockerfile.workdir.clone())
        .unwrap_or_else(|| "/".to_owned());
    if workdir == "/" {
        return Err(
            "has no WORKDIR (the agent would work in /); set one in its Dockerfile".to_owned(),
        );
    }
    let home = options.host_var("HOME").map(PathBuf::from);
    placeable(Path::new(&workdir), home.as_deref())
        .map_err(|why| format!("cannot place its WORKDIR {workdir}: {why}"))?;
    let (workspace_files, root_files) =
        placements(task, dockerfile, &workdir, home.as_deref(), &mut unprovided)?;
    let mut env: Vec<(OsString, OsString)> = dockerfile
        .env
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    for (name, value) in &env_config.env {
        let value = value.resolve(&|n| options.host_var(n)).map_err(|missing| {
            format!("needs the host variable {missing} ([environment.env] {name})")
        })?;
        env.retain(|(k, _)| k != name.as_str());
        env.push((name.into(), value.into()));
    }
    Ok(HostView {
        workdir: PathBuf::from(workdir),
        workspace_files,
        root_files,
        env,
        skipped,
    })
}

/// Where the build context's files go: into the workspace (targets relative to the
/// `WORKDIR`) or elsewhere in the view (targets relative to `/`).
fn placements(
    task: &Task,
    dockerfile: &hyoka_harbor::Dockerfile,
    workdir: &str,
    home: Option<&Path>,
    unprovided: &mut dyn FnMut(String) -> Result<(), String>,
) -> Result<(Vec<Injection>, Vec<Injection>), String> {
    let context = task.environment_dir();
    let mut workspace_files = Vec::new();
    let mut root_files = Vec::new();
    for copy in &dockerfile.copies {
        for source in &copy.sources {
            let CopySource::Context(rel) = source else {
                // Heredoc text has no file to copy; it is rare in task images.
                unprovided(format!(
                    "Dockerfile line {}: COPY of heredoc text",
                    copy.line
                ))?;
                continue;
            };
            let placements = place(&context, rel, &copy.dest, copy.dest_is_dir)
                .map_err(|why| format!("Dockerfile line {}: {why}", copy.line))?;
            for (source, dest) in placements {
                let dest = PathBuf::from(dest);
                if let Ok(rel) = dest.strip_prefix(workdir) {
                    if rel.as_os_str().is_empty() {
                        // A directory copied onto the WORKDIR itself: its entries go in.
                        for entry in list_dir(&source)? {
                            workspace_files.push(Injection {
                                target: PathBuf::from(entry.file_name().unwrap_or_default()),
                                source: entry,
                            });
                        }
                    } else {
                        workspace_files.push(Injection {
                            source,
                            target: rel.to_owned(),
                        });
                    }
                } else {
                    placeable(&dest, home).map_err(|why| {
                        format!(
                            "Dockerfile line {}: cannot place {}: {why}",
                            copy.line,
                            dest.display()
                        )
                    })?;
                    let rel = dest.strip_prefix("/").unwrap_or(&dest).to_owned();
                    root_files.push(Injection {
                        source,
                        target: rel,
                    });
                }
            }
        }
    }
    Ok((workspace_files, root_files))
}

/// Whether something can be seen at `target` in a task's view: the host is read-only, so a
/// path is placeable when it exists (a bind covers it), when its top-level directory is not
/// on the host (the view's new root holds it), or when it lies in the private `/tmp` or the
/// caller's home (an empty tmpfs in the view, in which it is made).
fn placeable(target: &Path, home: Option<&Path>) -> Result<(), String> {
    if target.exists() || target.starts_with("/tmp") {
        return Ok(());
    }
    let mut top = PathBuf::from("/");
    if let Some(first) = target.components().nth(1) {
        top.push(first);
    }
    if !top.exists() {
        return Ok(());
    }
    if let Some(home) = home
        && home.parent().is_some()
        && target.starts_with(home)
    {
        return Ok(());
    }
    Err(format!(
        "{} is on the read-only host and does not hold it",
        top.display()
    ))
}

/// The files one `COPY` source places: (host source, absolute destination). A directory's
/// contents land in the destination; a file lands at it, or inside it when it names a
/// directory; a wildcard in the last component matches the context's names.
fn place(
    context: &Path,
    rel: &str,
    dest: &str,
    dest_is_dir: bool,
) -> Result<Vec<(PathBuf, String)>, String> {
    let clean = join_abs("/", rel);
    let (parent, last) = match clean.rsplit_once('/') {
        Some((parent, last)) => (parent.to_owned(), last.to_owned()),
        None => (String::new(), clean.clone()),
    };
    let sources: Vec<PathBuf> = if last.contains(['*', '?', '[']) {
        let dir = context.join(parent.trim_start_matches('/'));
        let mut matched: Vec<PathBuf> = list_dir(&dir)?
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| wildcard(&last, &n.to_string_lossy()))
            })
            .collect();
        matched.sort();
        if matched.is_empty() {
            return Err(format!("COPY {rel}: nothing in the build context matches"));
        }
        matched
    } else {
        let path = context.join(clean.trim_start_matches('/'));
        if std::fs::symlink_metadata(&path).is_err() {
            return Err(format!("COPY {rel}: not in the build context"));
        }
        vec![path]
    };
    Ok(sources
        .into_iter()
        .map(|source| {
            let to = if source.is_dir() {
                dest.to_owned()
            } else if dest_is_dir {
                join_abs(
                    dest,
                    &source.file_name().unwrap_or_default().to_string_lossy(),
                )
            } else {
                dest.to_owned()
            };
            (source, to)
        })
        .collect())
}

/// A directory's entries, in name order.
fn list_dir(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    Ok(entries)
}

/// Glob matching of one path component: `*`, `?` and `[…]` classes (`[!…]` negated).
fn wildcard(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some(('?', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some(('[', rest)) => {
                let Some(end) = rest.iter().position(|c| *c == ']') else {
                    return n.first() == Some(&'[') && go(rest, &n[1..]);
                };
                let (class, after) = (&rest[..end], &rest[end + 1..]);
                let (negated, class) = match class.split_first() {
                    Some(('!' | '^', class)) => (true, class),
                    _ => (false, class),
                };
                let Some(c) = n.first() else { return false };
                let mut hit = false;
                let mut i = 0;
                while i < class.len() {
                    if i + 2 < class.len() && class[i + 1] == '-' {
                        hit |= (class[i]..=class[i + 2]).contains(c);
                        i += 3;
                    } else {
                        hit |= class[i] == *c;
                        i += 1;
                    }
                }
                hit != negated && go(after, &n[1..])
            }
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

#[cfg(test)]
mod tests;

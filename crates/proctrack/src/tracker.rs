//! The tracker: one per run. It holds the owner lock and the ledger, knows the containment
//! layers the run has, and marks the run cleaned when it ends. Spawning and adopting agents is
//! in `spawn`, the agents themselves in `agent`.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::ProcTrackError;
use crate::caps::{Capabilities, Layers};
use crate::cgroup::{CgroupLeaf, CgroupRoot};
use crate::clock::{SystemClock, unix_now};
use crate::env_vars::marker_env;
use crate::identity::{Identity, validate_id};
use crate::instance::Instance;
use crate::ledger::{LEDGER_FILE, Ledger, LedgerLog};
use crate::lock::{LOCK_FILE, OwnerLock};
use crate::shim_image::ShimImage;

/// Whether to use the cgroup v2 layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CgroupMode {
    /// Use it when this machine offers a writable cgroup2 tree, else degrade (the default).
    #[default]
    Auto,
    /// Never use it.
    Off,
    /// Fail [`Tracker::start`] when it is unavailable.
    Required,
}

/// How to start the subreaper shim: a program and its leading arguments, to which the
/// tracker appends the shim protocol ([`shim_args`](crate::shim_args)).
///
/// For hyoka this is the `hyoka-shim` beside it (or the current executable and
/// `["__shim"]`), and the static build of the shim it embeds as its `image`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// The program (absolute, or found on `PATH`).
    pub program: PathBuf,
    /// Arguments before the shim protocol, such as the hidden subcommand.
    pub args: Vec<OsString>,
    /// The same shim sealed in memory, cheaper to start, which is executed (without `args`,
    /// named `hyoka-shim` beside `program`) instead of `program` wherever the child stays in
    /// this process's namespaces: every spawn outside a sandbox. A sandbox's child executes
    /// `program`.
    pub image: Option<ShimImage>,
}

impl Launcher {
    /// A launcher of `program` with `args` and no image.
    pub fn new(program: impl Into<PathBuf>, args: Vec<OsString>) -> Self {
        Self {
            program: program.into(),
            args,
            image: None,
        }
    }
}

/// What [`Tracker::start`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackerOptions {
    /// The run id (`[A-Za-z0-9][A-Za-z0-9._-]{0,63}`).
    pub run_id: String,
    /// The reports directory; the run's directory is `<reports_dir>/<run_id>`.
    pub reports_dir: PathBuf,
    /// Whether to use the cgroup layer.
    pub cgroup: CgroupMode,
    /// The shim launcher; `None` runs agents without the shim layer.
    pub shim: Option<Launcher>,
    /// The grace period the shim uses when it tears its tree down on its own (when hyoka dies).
    pub shim_grace: Duration,
    /// Make this process a subreaper (`PR_SET_CHILD_SUBREAPER`), so orphans of the trees it
    /// tracks come to it instead of init when their shim is lost (or when there is no shim),
    /// and it keeps tracking them. On by default; see [`Tracker::start`].
    pub subreaper: bool,
}

impl TrackerOptions {
    /// Options with the defaults: cgroup `Auto`, no shim, a 5 s shim grace period, this
    /// process a subreaper.
    pub fn new(run_id: impl Into<String>, reports_dir: impl Into<PathBuf>) -> Self {
        Self {
            run_id: run_id.into(),
            reports_dir: reports_dir.into(),
            cgroup: CgroupMode::Auto,
            shim: None,
            shim_grace: Duration::from_secs(5),
            subreaper: true,
        }
    }
}

pub(crate) struct Shared {
    pub(crate) run_id: String,
    pub(crate) instance: Instance,
    pub(crate) subreaper: bool,
    pub(crate) run_dir: PathBuf,
    pub(crate) ledger_path: PathBuf,
    pub(crate) owner: Identity,
    pub(crate) lock: Mutex<Option<OwnerLock>>,
    pub(crate) ledger: Mutex<Ledger>,
    /// The ledger file (locked after `ledger`, never before).
    pub(crate) log: Mutex<LedgerLog>,
    pub(crate) cgroup: Option<CgroupRoot>,
    pub(crate) cgroup_unavailable: Option<String>,
    pub(crate) mode: CgroupMode,
    pub(crate) shim: Option<Launcher>,
    pub(crate) shim_grace: Duration,
    pub(crate) evals: Mutex<BTreeSet<String>>,
    pub(crate) survivors: Mutex<usize>,
    pub(crate) resources: std::sync::OnceLock<crate::ResourceSupport>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    /// Where the resource controllers are, detected on first use.
    pub(crate) fn resource_support(&self) -> &crate::ResourceSupport {
        self.resources.get_or_init(crate::ResourceSupport::detect)
    }

    /// Makes the ledger file say `ledger` (called with its lock held): the change is
    /// appended, and synced only when it gained a line that must survive a crash of the
    /// machine (a workspace, a kept workspace, the cleaned mark); see [`LedgerLog`].
    pub(crate) fn write_ledger(&self, ledger: &Ledger) -> Result<(), ProcTrackError> {
        lock(&self.log).write(ledger)
    }

    pub(crate) fn update(&self, f: impl FnOnce(&mut Ledger)) -> Result<(), ProcTrackError> {
        let mut ledger = lock(&self.ledger);
        f(&mut ledger);
        self.write_ledger(&ledger)
    }

    /// Creates eval `eval_id`'s cgroup leaf, when the run has the layer. The leaf is in the
    /// ledger before it exists, so an owner killed in between leaves nothing `clean` does
    /// not know of; a leaf that could not be made is forgotten again.
    pub(crate) fn create_leaf(&self, eval_id: &str) -> Option<Result<CgroupLeaf, ProcTrackError>> {
        let root = self.cgroup.as_ref()?;
        let path = root.leaf_path(&self.run_id, &self.instance, eval_id);
        if let Err(e) = self.update(|l| {
            let _ = l.set_cgroup(eval_id, &path);
        }) {
            return Some(Err(e));
        }
        let created = root.create_leaf(&self.run_id, &self.instance, eval_id);
        if created.is_err() {
            let _ = self.update(|l| l.cgroups.retain(|c| c.eval_id != eval_id));
        }
        Some(created)
    }

    /// Removes a leaf no agent joined, and its ledger record.
    pub(crate) fn forget_leaf(&self, leaf: &CgroupLeaf, eval_id: &str) {
        if leaf.remove(Duration::ZERO, &SystemClock) {
            let _ = self.update(|l| l.cgroups.retain(|c| c.eval_id != eval_id));
        }
    }
}

/// One run's process tracking: the owner lock, the ledger, and the evals' agents.
///
/// Cheap to clone (an `Arc` inside); clones share the run.
#[derive(Clone)]
pub struct Tracker {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker")
            .field("run_id", &self.shared.run_id)
            .field("run_dir", &self.shared.run_dir)
            .finish_non_exhaustive()
    }
}

impl Tracker {
    /// Starts tracking a run: creates `<reports_dir>/<run_id>/` (mode 0755 whatever the
    /// umask: `clean` refuses a run directory others may write), takes the owner lock, draws
    /// the run's [`Instance`], detects the cgroup layer, makes this process a subreaper (with
    /// [`TrackerOptions::subreaper`]) and writes the ledger's headers.
    ///
    /// The subreaper mark is for the whole process and stays after the run: later orphans of
    /// any tree started from this process come to it rather than to init. Agents' trees are
    /// watched for them (see [`Scope::orphans`](crate::Scope::orphans)); anything else
    /// re-parented here is neither signalled nor waited for, only left as a zombie until
    /// this process exits.
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`], [`ProcTrackError::RunLive`] (another process owns this
    /// run id), [`ProcTrackError::UncleanRun`] (an earlier run with this id crashed and was
    /// not cleaned), [`ProcTrackError::CgroupUnavailable`] with [`CgroupMode::Required`], or
    /// [`ProcTrackError::Io`].
    pub fn start(options: TrackerOptions) -> Result<Self, ProcTrackError> {
        validate_id("run", &options.run_id)?;
        let run_dir = options.reports_dir.join(&options.run_id);
        create_run_dir(&options.reports_dir, &run_dir)?;
        let owner_lock = OwnerLock::acquire(&run_dir.join(LOCK_FILE))?;
        let ledger_path = run_dir.join(LEDGER_FILE);
        if let Ok(previous) = Ledger::read(&ledger_path, std::process::id().try_into().unwrap_or(0))
        {
            let previous = previous.ledger;
            if previous.cleaned.is_none()
                && !(previous.entries.is_empty() && previous.cgroups.is_empty())
            {
                return Err(ProcTrackError::UncleanRun { path: ledger_path });
            }
        }
        let owner = Identity::current()?;
        let (cgroup, cgroup_unavailable) = match options.cgroup {
            CgroupMode::Off => (None, Some("disabled".to_owned())),
            CgroupMode::Auto | CgroupMode::Required => {
                let caps = Capabilities::detect();
                if options.cgroup == CgroupMode::Required && caps.cgroup.is_none() {
                    return Err(ProcTrackError::CgroupUnavailable {
                        reason: caps.cgroup_unavailable.unwrap_or_default(),
                    });
                }
                (caps.cgroup, caps.cgroup_unavailable)
            }
        };
        let instance = Instance::generate()?;
        let subreaper = if options.subreaper {
            crate::orphans::become_subreaper()
        } else {
            crate::orphans::is_subreaper()
        };
        let mut ledger = Ledger::new(&options.run_id, owner.clone())?;
        ledger.instance = Some(instance.clone());
        let log = LedgerLog::create(&ledger_path, &ledger)?;
        Ok(Self {
            shared: Arc::new(Shared {
                run_id: options.run_id,
                instance,
                subreaper,
                run_dir,
                ledger_path,
                owner,
                lock: Mutex::new(Some(owner_lock)),
                ledger: Mutex::new(ledger),
                log: Mutex::new(log),
                cgroup,
                cgroup_unavailable,
                mode: options.cgroup,
                shim: options.shim,
                shim_grace: options.shim_grace,
                evals: Mutex::new(BTreeSet::new()),
                survivors: Mutex::new(0),
                resources: std::sync::OnceLock::new(),
            }),
        })
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.shared.run_id
    }

    /// `<reports_dir>/<run_id>`.
    pub fn run_dir(&self) -> &Path {
        &self.shared.run_dir
    }

    /// The ledger file.
    pub fn ledger_path(&self) -> &Path {
        &self.shared.ledger_path
    }

    /// The owner's identity (this process), as written in the ledger and workspace markers.
    pub fn owner(&self) -> &Identity {
        &self.shared.owner
    }

    /// This run's instance token (ledger `# instance`, workspace markers, cgroup leaves, the
    /// `HYOKA_RUN_INSTANCE` marker).
    pub fn instance(&self) -> &Instance {
        &self.shared.instance
    }

    /// The marker variables a process of eval `eval_id` carries: `HYOKA_RUN_ID`,
    /// `HYOKA_EVAL_ID` and `HYOKA_RUN_INSTANCE` ([`marker_env`]). [`Tracker::spawn`] sets
    /// them itself; a process started by other means and then [adopted](Tracker::adopt)
    /// needs them in its environment from the start, for `clean` to find its escapees by
    /// the marker.
    pub fn marker_env(&self, eval_id: &str) -> Vec<(OsString, OsString)> {
        marker_env(&self.shared.run_id, eval_id, Some(&self.shared.instance))
    }

    /// Whether this process was a subreaper when the run started (see
    /// [`TrackerOptions::subreaper`]; the mark is the process's, so an earlier tracker may have
    /// set it).
    pub fn is_subreaper(&self) -> bool {
        self.shared.subreaper
    }

    /// The layers agents of this run get (the cgroup layer may still degrade per eval if a
    /// leaf cannot be created).
    pub fn layers(&self) -> Layers {
        Layers {
            cgroup: self.shared.cgroup.is_some(),
            shim: self.shared.shim.is_some(),
            session: true,
            marker: true,
        }
    }

    /// Where this run's processes can be given memory, pids and CPU limits (detected once).
    pub fn resource_support(&self) -> &crate::ResourceSupport {
        self.shared.resource_support()
    }

    /// Why the cgroup layer is not used, when it is not.
    pub fn cgroup_unavailable(&self) -> Option<&str> {
        self.shared.cgroup_unavailable.as_deref()
    }

    /// Records an eval's workspace in the ledger (`# workspace`), so `clean` can remove it
    /// after a crash. Call it before the workspace is created (as the tracker does for cgroup
    /// leaves: `hyoka-workspace`'s `TempWorkspace::create_recorded` calls back with the path
    /// it is about to create), so an owner that dies in between leaves nothing `clean` does
    /// not know of; a path that was never created costs `clean` nothing.
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`], [`ProcTrackError::InvalidPath`] or
    /// [`ProcTrackError::Io`].
    pub fn record_workspace(&self, eval_id: &str, path: &Path) -> Result<(), ProcTrackError> {
        let mut ledger = lock(&self.shared.ledger);
        ledger.set_workspace(eval_id, path)?;
        self.shared.write_ledger(&ledger)
    }

    /// Records that eval `eval_id`'s workspace at `path` is kept for the user (`# kept`):
    /// `clean` then leaves it alone (unless asked to remove kept workspaces) whatever the
    /// directory's marker says. Call it when the keep is decided (before the workspace
    /// exists for a policy that always keeps, when the run ends otherwise).
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`], [`ProcTrackError::InvalidPath`] or
    /// [`ProcTrackError::Io`].
    pub fn record_kept(&self, eval_id: &str, path: &Path) -> Result<(), ProcTrackError> {
        let mut ledger = lock(&self.shared.ledger);
        ledger.set_kept(eval_id, path)?;
        self.shared.write_ledger(&ledger)
    }

    /// Drops eval `eval_id`'s `# workspace` record (a workspace that could not be created,
    /// or that was removed).
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] when the ledger cannot be written.
    pub fn forget_workspace(&self, eval_id: &str) -> Result<(), ProcTrackError> {
        self.shared
            .update(|l| l.workspaces.retain(|w| w.eval_id != eval_id))
    }

    /// Drops the `# workspace` record of the workspace at `path`, once it is removed: the
    /// ledger (and the tracker's memory) then holds only what a crash could still leave,
    /// however many evals the run has. A record of another path, or a `# kept` one, stays.
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] when the ledger cannot be written.
    pub fn forget_workspace_at(&self, path: &Path) -> Result<(), ProcTrackError> {
        self.shared
            .update(|l| l.workspaces.retain(|w| w.path != path))
    }

    /// Ends the run: marks the ledger cleaned when every agent was torn down without
    /// survivors (an agent still running keeps its entries, so the mark is withheld), and
    /// releases the owner lock. Call it after every agent was torn down.
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] when the ledger cannot be written (the lock is released anyway).
    pub fn close(self) -> Result<(), ProcTrackError> {
        let survivors = *lock(&self.shared.survivors);
        let result = self.shared.update(|l| {
            if survivors == 0 && l.entries.is_empty() {
                l.cleaned = Some(unix_now());
            }
        });
        lock(&self.shared.lock).take();
        result
    }
}

/// Creates `<reports_dir>/<run_id>` with mode 0755 (the umask cannot make it group- or
/// world-writable), or accepts it when it is already a directory.
fn create_run_dir(reports_dir: &Path, run_dir: &Path) -> Result<(), ProcTrackError> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::create_dir_all(reports_dir)
        .map_err(|e| ProcTrackError::io("create", reports_dir, e))?;
    match std::fs::DirBuilder::new().mode(0o755).create(run_dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && run_dir.is_dir() => {}
        Err(e) => return Err(ProcTrackError::io("create", run_dir, e)),
    }
    Ok(())
}

//! Helpers: a scratch area per test, the `hyoka` binary, and `/proc` checks.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch area with `reports/` and `ws/` (the workspace root), removed at the end.
pub(crate) struct Scratch {
    pub(crate) dir: tempfile::TempDir,
}

impl Scratch {
    pub(crate) fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("cli-test-")
            .tempdir()
            .unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        Self { dir }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn reports(&self) -> PathBuf {
        self.dir.path().join("reports")
    }

    pub(crate) fn ws_root(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// `hyoka <subcommand> --reports … --workspace-root …`, for more arguments.
    pub(crate) fn hyoka(&self, subcommand: &str) -> Command {
        let mut cmd = hyoka();
        cmd.arg(subcommand)
            .arg("--reports")
            .arg(self.reports())
            .arg("--workspace-root")
            .arg(self.ws_root());
        cmd
    }

    /// `hyoka run --reports … --workspace-root … <args>`.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.hyoka("run").args(args).output().unwrap()
    }

    pub(crate) fn report(&self, run_id: &str, eval_id: &str) -> serde_json::Value {
        let path = self
            .reports()
            .join(run_id)
            .join(eval_id)
            .join("report.json");
        serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{path:?}: {e}")))
            .unwrap()
    }

    /// Asserts that the workspace root is empty: every workspace was removed.
    #[track_caller]
    pub(crate) fn assert_no_workspaces(&self) {
        let left: Vec<_> = std::fs::read_dir(self.ws_root()).unwrap().collect();
        assert!(left.is_empty(), "workspaces left behind: {left:?}");
    }
}

pub(crate) fn hyoka() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hyoka"))
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `true` while `pid` exists and is not a zombie.
pub(crate) fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 2..].chars().next();
            state != Some('Z') && state != Some('X')
        }
        Err(_) => false,
    }
}

/// Reads a pid an agent wrote into `path`, waiting (bounded) until the file holds a whole one:
/// a shell creates the file before it writes the number.
pub(crate) fn read_pid(path: &Path) -> u32 {
    let mut pid = None;
    wait_until(&format!("a pid in {}", path.display()), || {
        pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok());
        pid.is_some()
    });
    pid.expect("checked by the wait")
}

/// The `hyoka` binary's path, for commands that run it as the agent.
pub(crate) fn hyoka_path() -> &'static str {
    env!("CARGO_BIN_EXE_hyoka")
}

/// `../shared` (overridable with `HYOKA_SHARED_DIR`), if present.
pub(crate) fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("HYOKA_SHARED_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    );
    dir.is_dir().then_some(dir)
}

/// Polls `ok` until it holds, failing the test after 20 s (a bound, not a sleep: it returns as
/// soon as the condition is met).
#[track_caller]
pub(crate) fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Sends `sig` to a child process.
pub(crate) fn send(child: &std::process::Child, sig: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// The pids in a `--pid-file` of the simulated agent (`<role> <pid>` lines).
pub(crate) fn escapee_pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect()
}

/// The unprivileged user the privilege-dropping tests run as.
pub(crate) const NOBODY: u32 = 65534;

/// Whether the tests run as root (CI and this machine do); tests that need it skip otherwise.
pub(crate) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Skips a test that needs root, saying why on stderr. Returns whether to go on.
pub(crate) fn need_root(test: &str) -> bool {
    if !is_root() {
        eprintln!("skipping {test}: it needs root (to play another user and to be the victim)");
    }
    is_root()
}

/// Drops `cmd`'s privileges to `nobody` (uid and gid 65534, no supplementary groups: std
/// calls `setgroups(0)` when a uid is set as root) before it runs.
pub(crate) fn as_nobody(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt as _;
    cmd.uid(NOBODY).gid(NOBODY)
}

/// Makes `path` (a directory, created if missing) belong to `nobody`.
pub(crate) fn give_to_nobody(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
}

impl Scratch {
    /// A scratch area `nobody` can use: the scratch directory is searchable by everyone, and
    /// `reports/`, `ws/` and `files/` (for pid files) belong to `nobody`.
    pub(crate) fn for_nobody() -> Self {
        use std::os::unix::fs::PermissionsExt as _;
        let s = Self::new();
        std::fs::set_permissions(s.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        for dir in [s.reports(), s.ws_root(), s.files()] {
            give_to_nobody(&dir);
        }
        s
    }

    /// `files/`: where agents of `for_nobody` scratch areas write their pid files (and
    /// where any test may keep files of its own).
    pub(crate) fn files(&self) -> PathBuf {
        self.dir.path().join("files")
    }
}

/// Field 22 of `/proc/<pid>/stat`: the process's start time in clock ticks.
pub(crate) fn start_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat[stat.rfind(')').unwrap() + 2..]
        .split(' ')
        .nth(19)
        .unwrap()
        .parse()
        .unwrap()
}

/// Waits until the ledger at `ledger` lists every one of `pids`.
#[track_caller]
pub(crate) fn wait_for_ledger(ledger: &Path, pids: &[u32]) {
    wait_until("the ledger to list the processes", || {
        std::fs::read_to_string(ledger).is_ok_and(|l| {
            pids.iter()
                .all(|pid| l.lines().any(|line| line.starts_with(&format!("{pid}\t"))))
        })
    });
}

/// Kills and reaps a child the test started itself when the test ends, however it ends.
pub(crate) struct ReapOnDrop(pub(crate) std::process::Child);

impl Drop for ReapOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether tmux is installed (tests of the tmux backend skip without it).
pub(crate) fn tmux_installed() -> bool {
    Command::new("tmux")
        .arg("-V")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Scratch {
    /// `hyoka run --reports … --workspace-root … <args> -- sh -c <script>` in the background,
    /// its output discarded.
    pub(crate) fn spawn_run(&self, args: &[&str], script: &str) -> std::process::Child {
        self.hyoka("run")
            .args(args)
            .args(["--", "sh", "-c", script])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    }
}

/// A JSON file, parsed.
#[track_caller]
pub(crate) fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{path:?}: {e}")))
        .unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// A data block of an HTML report page (base64 of gzipped JSON), inflated as the browser
/// does.
#[track_caller]
pub(crate) fn inflate(html: &str, id: &str) -> serde_json::Value {
    use base64::Engine as _;
    use std::io::Read as _;
    let open = format!("<script type=\"application/octet-stream\" id=\"{id}\">");
    let start = html.find(&open).unwrap_or_else(|| panic!("no block {id}")) + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&html[start..end])
        .unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

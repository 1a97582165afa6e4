//! Headless Chromium for the HTML report's browser test and benchmark, driven through its
//! command line (`--dump-dom`, `--screenshot`) and never left running.
//!
//! Why the command line and not the DevTools protocol or WebDriver: the page checks itself
//! (its `#selftest` mode drives the table, a timeline and the comparison as a person would
//! and writes what it saw, with every error, CSP violation and `console.error` it met, into
//! the document), so the test needs only the DOM after the page settled, which
//! `--dump-dom` with a virtual time budget gives without a protocol client, a driver binary
//! or a port.
//!
//! Containment: Chromium runs in its own process group with a private profile, home and
//! cache in a temporary directory; its crash handlers leave the group (they start their own
//! sessions) but carry an environment marker. After every run the group is killed and every
//! process with the marker is found in `/proc` and killed through a pidfd, until none is
//! left.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that marks every process of one Chromium run.
pub const MARKER: &str = "HYOKA_BROWSER_RUN";

/// A headless Chromium found on this machine.
#[derive(Debug, Clone)]
pub struct Chromium {
    program: PathBuf,
}

/// What one Chromium run printed.
#[derive(Debug)]
pub struct BrowserOutput {
    /// Its stdout (the DOM for `--dump-dom`).
    pub stdout: String,
    /// Its stderr (Chromium's own log lines).
    pub stderr: String,
    /// How long the run took, start to exit.
    pub elapsed: Duration,
}

impl Chromium {
    /// `$HYOKA_CHROMIUM`, else the first of `chromium`, `chromium-browser`, `google-chrome`
    /// on `PATH`.
    pub fn find() -> Option<Self> {
        if let Some(program) = std::env::var_os("HYOKA_CHROMIUM") {
            return Some(Self {
                program: program.into(),
            });
        }
        let path = std::env::var_os("PATH")?;
        ["chromium", "chromium-browser", "google-chrome"]
            .iter()
            .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
            .find(|candidate| candidate.is_file())
            .map(|program| Self { program })
    }

    /// The program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The DOM of `url` once the page has settled within `budget` of virtual time.
    ///
    /// # Errors
    /// Chromium could not start, failed, took longer than a minute, or left a process behind.
    pub fn dump_dom(&self, url: &str, budget: Duration) -> io::Result<BrowserOutput> {
        self.run(&[
            format!("--virtual-time-budget={}", budget.as_millis()).into(),
            "--dump-dom".into(),
            url.into(),
        ])
    }

    /// A PNG screenshot of `url` at `width` × `height` once the page has settled.
    ///
    /// # Errors
    /// As [`Chromium::dump_dom`], or when no screenshot was written.
    pub fn screenshot(
        &self,
        url: &str,
        out: &Path,
        (width, height): (u32, u32),
        budget: Duration,
    ) -> io::Result<BrowserOutput> {
        let _ = std::fs::remove_file(out);
        let mut shot = OsString::from("--screenshot=");
        shot.push(out);
        let output = self.run(&[
            format!("--virtual-time-budget={}", budget.as_millis()).into(),
            format!("--window-size={width},{height}").into(),
            shot,
            url.into(),
        ])?;
        if out.is_file() {
            Ok(output)
        } else {
            Err(io::Error::other(format!(
                "no screenshot was written: {}",
                output.stderr
            )))
        }
    }

    fn run(&self, args: &[OsString]) -> io::Result<BrowserOutput> {
        let scratch = tempfile::Builder::new()
            .prefix("browser-scratch-")
            .tempdir()?;
        let token = format!("{}-{}", std::process::id(), fastrand::u64(..));
        let mut command = Command::new(&self.program);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
            ])
            .arg(format!(
                "--user-data-dir={}",
                scratch.path().join("profile").display()
            ))
            .args(args)
            .env(MARKER, &token)
            .env("HOME", scratch.path())
            .env("XDG_CONFIG_HOME", scratch.path().join("config"))
            .env("XDG_CACHE_HOME", scratch.path().join("cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let started = Instant::now();
        let mut child = command.spawn()?;
        let group = child.id();
        let mut stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let out = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        let err = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let deadline = started + Duration::from_mins(1);
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let elapsed = started.elapsed();
        kill_group(group);
        let _ = child.wait();
        let survivors = sweep(&token);
        let output = BrowserOutput {
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
            elapsed,
        };
        if !survivors.is_empty() {
            return Err(io::Error::other(format!(
                "Chromium processes survived every kill: {survivors:?}"
            )));
        }
        match status {
            None => Err(io::Error::other("Chromium ran for more than a minute")),
            Some(status) if !status.success() => Err(io::Error::other(format!(
                "Chromium failed ({status}): {}",
                output.stderr
            ))),
            Some(_) => Ok(output),
        }
    }
}

/// A `file://` URL of `path` (absolute), with `fragment` (`#selftest`) appended.
pub fn file_url(path: &Path, fragment: &str) -> String {
    let mut url = String::from("file://");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                url.push(char::from(*byte));
            }
            other => {
                let _ = write!(url, "%{other:02X}");
            }
        }
    }
    url.push_str(fragment);
    url
}

/// The pids of processes that carry `token` as the marker.
pub fn marked(token: &str) -> Vec<i32> {
    let wanted = format!("{MARKER}={token}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| has_marker(*pid, &wanted))
        .collect()
}

fn has_marker(pid: i32, wanted: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
}

fn kill_group(group: u32) {
    if let Some(pgid) = i32::try_from(group)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        // The group may be gone already; that is the point.
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }
}

/// Kills every process carrying the marker, each through a pidfd opened before its
/// environment is checked again, until none is left (at most ten seconds); returns those
/// that survived.
fn sweep(token: &str) -> Vec<i32> {
    let wanted = format!("{MARKER}={token}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = marked(token);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        for pid in left {
            let Some(raw) = rustix::process::Pid::from_raw(pid) else {
                continue;
            };
            if let Ok(fd) = rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::empty())
                && has_marker(pid, &wanted)
            {
                let _ = rustix::process::pidfd_send_signal(&fd, rustix::process::Signal::KILL);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

//! The helper roles this binary plays when started as `it --hyoka-role <role> <dir> …`.
//!
//! Every process of a scenario writes `<dir>/<name>` ("<pid> <start_ticks>") once it is set
//! up, so tests wait on markers, never on fixed sleeps.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use hyoka_proctrack::{NativeProcTable, ProcTable};

/// The names of the ready files a scenario's processes write (the agent's is `agent`).
pub(crate) fn scenario_names(scenario: &str) -> Vec<&'static str> {
    parts(scenario)
        .into_iter()
        .flat_map(|part| match part {
            "tree" => vec!["t", "t.c", "t.c.c"],
            "session" => vec!["s"],
            "daemon" => vec!["d"],
            "stubborn" => vec!["st"],
            "timeout" => vec!["tm"],
            "restarter" => vec!["restarter", "r0"],
            "storm" => vec!["storm"],
            "burn" => vec!["b"],
            _ => vec![],
        })
        .collect()
}

/// A scenario is one part or several joined by `+`; `all` is every detaching kind at once.
fn parts(scenario: &str) -> Vec<&str> {
    if scenario == "all" {
        vec!["tree", "session", "daemon", "stubborn", "timeout"]
    } else {
        scenario.split('+').collect()
    }
}

#[expect(
    clippy::zombie_processes,
    reason = "roles orphan their children on purpose: detaching is what they test"
)]
pub(crate) fn run(args: &[OsString]) -> ExitCode {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let dir = PathBuf::from(arg(1));
    match arg(0).as_str() {
        "sleeper" => {
            ready(&dir, &arg(2));
            forever()
        }
        "tree" => {
            let depth: u32 = arg(2).parse().unwrap_or(1);
            if depth > 1 {
                role(
                    "tree",
                    &dir,
                    &[&(depth - 1).to_string(), &format!("{}.c", arg(3))],
                )
                .spawn()
                .expect("spawn tree child");
            }
            ready(&dir, &arg(3));
            forever()
        }
        "daemon-mid" => {
            let mut daemon = role("sleeper", &dir, &["d"]);
            daemon.env_clear().current_dir("/");
            // SAFETY: `setsid` is async-signal-safe.
            unsafe {
                daemon.pre_exec(|| rustix::process::setsid().map(drop).map_err(Into::into));
            }
            daemon.spawn().expect("spawn daemon");
            ExitCode::SUCCESS
        }
        "stubborn" => {
            ignore_term_and_hup();
            ready(&dir, &arg(2));
            forever()
        }
        "restarter" => {
            ignore_term_and_hup();
            for generation in 0.. {
                let mut child = role("sleeper", &dir, &[&format!("r{generation}")]);
                // SAFETY: `signal` is async-signal-safe; the child gets default dispositions
                // back, as it would from a supervisor using handlers instead of SIG_IGN.
                unsafe {
                    child.pre_exec(|| {
                        libc::signal(libc::SIGTERM, libc::SIG_DFL);
                        libc::signal(libc::SIGHUP, libc::SIG_DFL);
                        Ok(())
                    });
                }
                let mut child = child.spawn().expect("spawn restarted child");
                if generation == 0 {
                    ready(&dir, "restarter");
                }
                let _ = child.wait();
            }
            ExitCode::SUCCESS
        }
        "storm" => {
            let n: u32 = arg(2).parse().unwrap_or(1);
            for _ in 0..n {
                // SAFETY: this role process is single-threaded, and the child only calls the
                // async-signal-safe `pause` until it is killed.
                if unsafe { libc::fork() } == 0 {
                    loop {
                        // SAFETY: `pause` has no preconditions.
                        unsafe { libc::pause() };
                    }
                }
            }
            ready(&dir, "storm");
            forever()
        }
        "burner" => {
            ready(&dir, &arg(2));
            // A build or a test run: on the CPU until killed.
            let mut x = 0u64;
            loop {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        "agent" => agent(&dir, &arg(2), &arg(3), &arg(4)),
        "echo" => {
            use std::io::{BufRead as _, Write as _};
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "out:{line}");
            let _ = out.flush();
            let _ = std::io::stderr().write_all(b"err:hello\n");
            ExitCode::from(arg(2).parse::<u8>().unwrap_or(0))
        }
        "suicide" => {
            // SAFETY: raising a signal at ourselves has no preconditions.
            unsafe { libc::raise(libc::SIGKILL) };
            ExitCode::FAILURE
        }
        "owner" => crate::support::owner_role(&args[1..]),
        other => {
            eprintln!("unknown role {other:?}");
            ExitCode::from(2)
        }
    }
}

/// The agent of a scenario: starts it, writes `agent`, then stays or exits.
fn agent(dir: &Path, mode: &str, scenario: &str, n: &str) -> ExitCode {
    for part in parts(scenario) {
        match part {
            "tree" => drop(role("tree", dir, &["3", "t"]).spawn().expect("spawn tree")),
            "session" => {
                let mut c = role("sleeper", dir, &["s"]);
                // SAFETY: `setsid` is async-signal-safe.
                unsafe {
                    c.pre_exec(|| rustix::process::setsid().map(drop).map_err(Into::into));
                }
                drop(c.spawn().expect("spawn session child"));
            }
            "daemon" => {
                let _ = role("daemon-mid", dir, &[]).status();
            }
            "stubborn" => drop(
                role("stubborn", dir, &["st"])
                    .spawn()
                    .expect("spawn stubborn"),
            ),
            "timeout" => {
                let mut c = Command::new("timeout");
                c.arg("1000")
                    .arg(std::env::current_exe().unwrap())
                    .args(["--hyoka-role", "sleeper"])
                    .arg(dir)
                    .arg("tm");
                drop(c.spawn().expect("spawn timeout"));
            }
            "restarter" => drop(
                role("restarter", dir, &[])
                    .spawn()
                    .expect("spawn restarter"),
            ),
            "storm" => drop(role("storm", dir, &[n]).spawn().expect("spawn storm")),
            "burn" => drop(role("burner", dir, &["b"]).spawn().expect("spawn burner")),
            _ => {}
        }
    }
    // The agent announces itself only when its whole scenario is up.
    for name in scenario_names(scenario) {
        crate::support::wait_file(&dir.join(name), Duration::from_mins(1));
    }
    ready(dir, "agent");
    if mode == "exit" {
        ExitCode::SUCCESS
    } else {
        forever()
    }
}

/// The roles of the sandbox tests (`--hyoka-role <role> <dir> …`); `None` for any other role.
pub(crate) fn sandbox(args: &[OsString]) -> Option<ExitCode> {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let (name, dir) = (args.first()?.clone(), PathBuf::from(args.get(1)?));
    sandbox_role(&name, &dir, &args)
}

/// The roles of the sandbox tests; `None` for any other role.
#[expect(
    clippy::zombie_processes,
    reason = "the daemon is orphaned on purpose: detaching is what it tests"
)]
fn sandbox_role(name: &str, dir: &Path, args: &[String]) -> Option<ExitCode> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let dir = dir.to_path_buf();
    Some(match name {
        "try-write" => {
            try_write(&dir, &arg(2), &args[3..]);
            if arg(2) == "daemon" {
                ready(&dir, "daemon");
                return Some(forever());
            }
            ExitCode::SUCCESS
        }
        "sandboxed" => {
            // The agent tries its writes, then starts a daemon that detaches (a middle process
            // that exits, a new session, a cleared environment) and tries them again.
            try_write(&dir, "agent", &args[2..]);
            let mut mid = role("daemon-writer", &dir, &[]);
            mid.args(&args[2..]);
            let _ = mid.status();
            crate::support::wait_file(&dir.join("daemon"), Duration::from_mins(1));
            ExitCode::SUCCESS
        }
        "daemon-writer" => {
            let mut daemon = role("try-write", &dir, &["daemon"]);
            daemon.args(&args[1..]).env_clear().current_dir("/");
            // SAFETY: `setsid` is async-signal-safe.
            unsafe {
                daemon.pre_exec(|| rustix::process::setsid().map(drop).map_err(Into::into));
            }
            daemon.spawn().expect("spawn daemon");
            ExitCode::SUCCESS
        }
        "listen" => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
            let port = listener.local_addr().expect("address").port();
            let tmp = dir.join(".listen.port");
            std::fs::write(&tmp, port.to_string()).expect("write port");
            std::fs::rename(&tmp, dir.join("listen.port")).expect("publish port");
            for stream in listener.incoming() {
                drop(stream);
            }
            ExitCode::SUCCESS
        }
        "connect" => {
            let result =
                match std::net::TcpStream::connect(("127.0.0.1", arg(2).parse().unwrap_or(0))) {
                    Ok(_) => "ok".to_owned(),
                    Err(e) => e.raw_os_error().unwrap_or(-1).to_string(),
                };
            std::fs::write(dir.join("connect.result"), result).expect("write result");
            ExitCode::SUCCESS
        }
        _ => return None,
    })
}

/// Tries to create each of `paths`, and writes `<dir>/<label>.result`: one line per path,
/// `ok` or the errno.
fn try_write(dir: &Path, label: &str, paths: &[String]) {
    let mut lines = String::new();
    for path in paths {
        let outcome = match std::fs::write(path, label) {
            Ok(()) => "ok".to_owned(),
            Err(e) => e.raw_os_error().unwrap_or(-1).to_string(),
        };
        let _ = writeln!(lines, "{path} {outcome}");
    }
    std::fs::write(dir.join(format!("{label}.result")), lines).expect("write result");
}

/// A command that runs this binary in `role` with `dir` and `args`.
pub(crate) fn role(role: &str, dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("current exe"));
    c.arg("--hyoka-role").arg(role).arg(dir).args(args);
    c
}

fn ignore_term_and_hup() {
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler code.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
}

/// Writes `<dir>/<name>` = "<pid> <start_ticks>" atomically.
pub(crate) fn ready(dir: &Path, name: &str) {
    let table = NativeProcTable::new();
    let pid = table.self_pid();
    let ticks = table.process(pid).map_or(0, |p| p.start_ticks);
    let tmp = dir.join(format!(".{name}.{pid}"));
    std::fs::write(&tmp, format!("{pid} {ticks}\n")).expect("write ready file");
    std::fs::rename(&tmp, dir.join(name)).expect("publish ready file");
}

fn forever() -> ExitCode {
    loop {
        std::thread::sleep(Duration::from_hours(1));
    }
}

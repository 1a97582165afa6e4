//! A minimal libtest-compatible runner: filters, `--exact`, `--list`, `--test-threads`.

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One test: its name and body. A panicking body fails.
pub(crate) type Test = (&'static str, fn());

pub(crate) fn run(args: &[OsString], tests: &[Test]) -> ExitCode {
    let mut filters = Vec::new();
    let (mut exact, mut list, mut threads) = (false, false, 2usize);
    let mut args = args.iter().filter_map(|a| a.to_str());
    while let Some(arg) = args.next() {
        match arg {
            "--exact" => exact = true,
            "--list" => list = true,
            "--test-threads" => threads = args.next().and_then(|n| n.parse().ok()).unwrap_or(2),
            "--ignored" => return ExitCode::SUCCESS,
            "--format" | "--color" | "--logfile" | "--skip" => {
                args.next();
            }
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter.to_owned()),
        }
    }
    let selected: Vec<&Test> = tests
        .iter()
        .filter(|(name, _)| {
            filters.is_empty()
                || filters.iter().any(|f| {
                    if exact {
                        name == f
                    } else {
                        name.contains(f.as_str())
                    }
                })
        })
        .collect();
    if list {
        for (name, _) in &selected {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    println!("\nrunning {} tests", selected.len());
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((name, body)) = selected.get(i) else {
                        break;
                    };
                    let ok = std::panic::catch_unwind(body).is_ok();
                    println!("test {name} ... {}", if ok { "ok" } else { "FAILED" });
                    if !ok {
                        failed.lock().unwrap().push(*name);
                    }
                }
            });
        }
    });
    let failed = failed.into_inner().unwrap();
    let passed = selected.len() - failed.len();
    if failed.is_empty() {
        println!("\ntest result: ok. {passed} passed; 0 failed\n");
        ExitCode::SUCCESS
    } else {
        println!("\nfailures:");
        for name in &failed {
            println!("    {name}");
        }
        println!(
            "\ntest result: FAILED. {passed} passed; {} failed\n",
            failed.len()
        );
        ExitCode::FAILURE
    }
}

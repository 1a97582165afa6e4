//! `hyoka detect`: the fixture screens through the binary, casts, streams and bad input.

use std::collections::BTreeMap;

use crate::support::{Scratch, hyoka, shared_dir, stderr};

#[test]
fn every_fixture_screen_gets_its_label_through_the_cli() {
    let Some(shared) = shared_dir() else {
        // Straight to stderr, past the test harness's capture, so the skip shows in the output.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"skipped: ../shared is absent (a fresh clone); CI has it\n",
        );
        return;
    };
    let index = std::fs::read_to_string(shared.join("fixtures/screens/INDEX.tsv")).unwrap();
    let mut header = index.lines().next().unwrap().split('\t');
    let disputed_col = header.clone().position(|h| h == "disputed");
    header.next();
    let disputed: Vec<String> = disputed_col.map_or_else(Vec::new, |col| {
        index
            .lines()
            .skip(1)
            .filter(|l| {
                l.split('\t')
                    .nth(col)
                    .is_some_and(|v| !v.is_empty() && v != "0" && v != "false" && v != "no")
            })
            .filter_map(|l| l.split('\t').next().map(str::to_owned))
            .collect()
    });
    // hyoka's own truth where it differs from the index's label (issue 24: a picker or a
    // menu is never idle), the same file the detector's accuracy test reads.
    let truth_file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../idle-detect/tests/fixture-truth.tsv");
    let truths: BTreeMap<String, String> = std::fs::read_to_string(truth_file)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut cols = l.split('\t');
            Some((cols.next()?.to_owned(), cols.next()?.to_owned()))
        })
        .collect();
    let root = shared.join("fixtures/screens");
    // agent → (label → (verdict → count))
    let mut matrix: BTreeMap<String, BTreeMap<String, BTreeMap<String, u32>>> = BTreeMap::new();
    let (mut total, mut right) = (0u32, 0u32);
    let (mut claude_total, mut claude_right) = (0u32, 0u32);
    for agent in std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
    {
        let agent_name = agent.file_name().to_string_lossy().into_owned();
        let profile = if agent_name == "claude" {
            "claude-code".to_owned()
        } else {
            agent_name.clone()
        };
        for label in std::fs::read_dir(agent.path())
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
        {
            let dir_label = label.file_name().to_string_lossy().into_owned();
            for screen in std::fs::read_dir(label.path()).unwrap().flatten() {
                let name = screen.file_name().to_string_lossy().into_owned();
                let file = format!("{agent_name}/{dir_label}/{name}");
                let label_name = truths
                    .get(&file)
                    .cloned()
                    .unwrap_or_else(|| dir_label.clone());
                let out = hyoka()
                    .args(["detect", "--json", "--profile", &profile, "--screen"])
                    .arg(screen.path())
                    .output()
                    .unwrap();
                assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
                let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                let state = verdict["state"].as_str().unwrap().to_owned();
                let is_disputed = disputed.contains(&file);
                if (label_name == "blocked" || label_name == "working")
                    && state == "idle"
                    && !is_disputed
                {
                    panic!("{file} is a {label_name} screen classified idle");
                }
                *matrix
                    .entry(agent_name.clone())
                    .or_default()
                    .entry(label_name.clone())
                    .or_default()
                    .entry(state.clone())
                    .or_default() += 1;
                total += 1;
                right += u32::from(state == label_name);
                if agent_name == "claude" {
                    claude_total += 1;
                    claude_right += u32::from(state == label_name);
                }
            }
        }
    }
    eprintln!("confusion matrix (rows: label, columns: verdict):");
    for (agent, rows) in &matrix {
        eprintln!("  {agent}");
        for (label, verdicts) in rows {
            eprintln!("    {label:<8} {verdicts:?}");
        }
    }
    eprintln!("claude-code {claude_right}/{claude_total}, overall {right}/{total}");
    assert_eq!(total, 288);
    assert!(
        f64::from(claude_right) / f64::from(claude_total) >= 0.95,
        "claude-code {claude_right}/{claude_total}"
    );
    assert!(
        f64::from(right) / f64::from(total) >= 0.97,
        "overall {right}/{total}"
    );
}

#[test]
fn a_cast_replays_in_virtual_time_and_a_stream_reports_counts() {
    let s = Scratch::new();
    let cast = s.path().join("session.cast");
    std::fs::write(
        &cast,
        concat!(
            "{\"version\": 2, \"width\": 120, \"height\": 40}\n",
            "[0.5, \"o\", \"\\u001b[2K⠋ Thinking… (esc to interrupt)\\r\\n\"]\n",
            "[4.0, \"o\", \"\\u001b[2K✻ Worked for 3s\\r\\n\\r\\n╭────────╮\\r\\n│ ❯      │\\r\\n╰────────╯\\r\\n\"]\n",
        ),
    )
    .unwrap();
    let out = hyoka()
        .args(["detect", "--json", "--cast"])
        .arg(&cast)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let changes: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        changes.iter().any(|c| c["state"] == "working"),
        "{changes:?}"
    );
    assert_eq!(changes.last().unwrap()["state"], "idle", "{changes:?}");
    let working_at = changes.iter().find(|c| c["state"] == "working").unwrap()["at_ms"]
        .as_u64()
        .unwrap();
    assert_eq!(working_at, 500, "virtual time, not wall time");

    let stream = s.path().join("stream.bin");
    std::fs::write(
        &stream,
        "⠙ Thinking… (12 tokens)\r\n✻ Worked for 1s\r\n".repeat(1000),
    )
    .unwrap();
    let out = hyoka()
        .args(["detect", "--stream"])
        .arg(&stream)
        .args(["--json", "--chunk-bytes", "256"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["report"]["chunk_bytes"], 256);
    assert!(report["report"]["counts"]["completions"].as_u64().unwrap() > 0);
    assert!(report["mb_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_detect_input_exits_2() {
    let s = Scratch::new();
    let cases: [&[&str]; 4] = [
        &["detect", "--screen", "/no/such/screen"],
        &["detect", "--profile", "nonesuch", "--screen", "/dev/null"],
        &["detect"],
        &["detect", "--screen", "/dev/null", "--stream", "/dev/null"],
    ];
    for args in cases {
        let out = hyoka().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out)
                .lines()
                .filter(|l| l.starts_with("error:"))
                .count(),
            1,
            "{}",
            stderr(&out)
        );
    }
    let bad_profile = s.path().join("p.toml");
    std::fs::write(&bad_profile, "this is not = [toml").unwrap();
    let out = hyoka()
        .args(["detect", "--screen", "/dev/null", "--profile-file"])
        .arg(&bad_profile)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let bad_cast = s.path().join("bad.cast");
    std::fs::write(&bad_cast, "not a cast").unwrap();
    let out = hyoka()
        .args(["detect", "--cast"])
        .arg(&bad_cast)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// Issue 11, finding 7: `detect --screen` on a 2 GB sparse file reached 8.4 GB of memory. A
/// screen larger than the cap is refused by its size, before anything is read; the child runs
/// under a 1 GiB address-space limit, so reading it would fail with a different message.
#[test]
fn a_huge_screen_is_refused_in_bounded_memory() {
    let s = Scratch::new();
    let sparse = s.path().join("sparse.screen");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    for screen in [sparse.as_path(), std::path::Path::new("/dev/zero")] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 1048576 && exec \"$0\" detect --screen \"$1\"")
            .arg(crate::support::hyoka_path())
            .arg(screen)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with("error: screen snapshot") && err.contains("larger than"),
            "{err}"
        );
    }
}

/// Issue 25, item 6: `detect --cast` sizes are bounded. A recording whose header and resize
/// events name a 65535x65535 terminal replays under a 1 GiB address-space limit: the screen
/// model is clamped to `MAX_CAST_SIZE` instead of allocating four billion cells.
#[test]
fn a_cast_naming_a_huge_terminal_replays_in_bounded_memory() {
    let s = Scratch::new();
    let cast = s.path().join("huge.cast");
    std::fs::write(
        &cast,
        concat!(
            "{\"version\": 2, \"width\": 65535, \"height\": 65535}\n",
            "[0.5, \"o\", \"hello\"]\n",
            "[1.0, \"r\", \"65535x65535\"]\n",
            "[1.5, \"o\", \"\\u001b[65535;65535Hthere\"]\n",
        ),
    )
    .unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" detect --json --cast \"$1\"")
        .arg(crate::support::hyoka_path())
        .arg(&cast)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!out.stdout.is_empty(), "{}", stderr(&out));
}

/// Issue 11: inputs that block on open (a FIFO with no writer) or are not files are refused.
#[test]
fn a_fifo_or_a_directory_is_refused_without_blocking() {
    let s = Scratch::new();
    let fifo = s.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for args in [
        vec!["detect", "--screen"],
        vec!["detect", "--cast"],
        vec!["detect", "--stream"],
    ] {
        for input in [fifo.as_path(), s.path()] {
            let out = hyoka().args(&args).arg(input).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?} {}", stderr(&out));
            assert!(stderr(&out).contains("give a file"), "{}", stderr(&out));
        }
    }
}

/// A stream is read in blocks; its counts do not depend on how the blocks fall against the
/// slice size, and `--explain` names each rule's source.
#[test]
fn a_stream_is_read_in_blocks_and_explain_names_sources() {
    let s = Scratch::new();
    let stream = s.path().join("stream.bin");
    // 700 KiB: blocks of 256 KiB fall in the middle of 4000-byte slices.
    let unit = "\x1b[2K⠙ Thinking… (12s · ↓ 1.2k tokens · esc to interrupt)\r\n✻ Worked for 1s\r\n";
    std::fs::write(&stream, unit.repeat(700 * 1024 / unit.len())).unwrap();
    let counts = |chunk: &str| -> serde_json::Value {
        let out = hyoka()
            .args(["detect", "--json", "--chunk-bytes", chunk, "--stream"])
            .arg(&stream)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["report"]["counts"].clone()
    };
    let c = counts("4000");
    let len = std::fs::metadata(&stream).unwrap().len();
    assert_eq!(c["bytes"].as_u64(), Some(len));
    assert_eq!(c["chunks"].as_u64(), Some(len.div_ceil(4000)));
    // Every slice completes a `Worked for` line, across the block boundaries too.
    assert_eq!(c["completions"], c["chunks"], "{c}");

    let screen = s.path().join("screen.txt");
    std::fs::write(
        &screen,
        "⏺ Done.\n\n✻ Worked for 2s\n\n────────\n❯ \n────────\n  ? for shortcuts\n",
    )
    .unwrap();
    let out = hyoka()
        .args(["detect", "--explain", "--screen"])
        .arg(&screen)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("state: idle"), "{text}");
    for rule in ["claude-code/prompt-box", "claude-code/completion-line"] {
        assert!(text.contains(rule), "{text}");
    }
    assert!(text.contains("source: Claude Code"), "{text}");
}

//! `hyoka detect`: judge a recorded session with the idle detector.

use std::path::Path;
use std::time::Instant;

use hyoka_idle_detect::{
    DetectorConfig, Profile, SessionState, Verdict, classify_screen, render_explain, replay_cast,
    run_stream,
};

use crate::args::DetectArgs;
use crate::exit::{ExitStatus, Fail};
use crate::out::{outln, style};

pub(crate) fn exec(args: &DetectArgs) -> Result<ExitStatus, Fail> {
    let profile = match &args.profile_file {
        Some(path) => Profile::from_toml(&read_text(path)?)
            .map_err(|e| Fail::usage(format!("{}: {e}", path.display())))?,
        None => Profile::builtin(&args.profile).map_err(|e| {
            let names: Vec<&str> = Profile::builtin_names().collect();
            Fail::usage(format!("{e} (profiles: {})", names.join(", ")))
        })?,
    };
    let config = DetectorConfig::default();
    if let Some(path) = &args.screen {
        let verdict = classify_screen(&profile, &read_bytes(path)?);
        print_verdict(&verdict, args.json, args.explain);
    } else if let Some(path) = &args.cast {
        let changes = replay_cast(&profile, &config, &read_text(path)?, Instant::now())
            .map_err(|e| Fail::usage(format!("{}: {e}", path.display())))?;
        for change in &changes {
            if args.json {
                outln!("{}", serde_json::to_string(change).unwrap_or_default());
            } else {
                outln!(
                    "{:>10.3}s  {}",
                    std::time::Duration::from_millis(change.at_ms).as_secs_f64(),
                    state_text(&change.verdict)
                );
                if args.explain {
                    for line in render_explain(&change.verdict).lines().skip(1) {
                        outln!("             {line}");
                    }
                }
            }
        }
    } else if let Some(path) = &args.stream {
        let bytes = read_bytes(path)?;
        let started = Instant::now();
        let report = run_stream(
            &profile,
            &config,
            &bytes,
            args.chunk_bytes as usize,
            started,
        );
        let seconds = started.elapsed().as_secs_f64();
        #[expect(clippy::cast_precision_loss, reason = "a throughput figure")]
        let mb_per_s = bytes.len() as f64 / 1e6 / seconds.max(f64::EPSILON);
        if args.json {
            let value =
                serde_json::json!({ "report": report, "seconds": seconds, "mb_per_s": mb_per_s });
            outln!(
                "{}",
                serde_json::to_string_pretty(&value).unwrap_or_default()
            );
        } else {
            let c = &report.counts;
            outln!(
                "{} bytes in {} chunks of {} bytes: {:.3}s, {:.0} MB/s",
                c.bytes,
                c.chunks,
                report.chunk_bytes,
                seconds,
                mb_per_s
            );
            outln!(
                "completions {}, working chunks {}, prompt chunks {}, substantial chunks {}, token changes {} (last {})",
                c.completions,
                c.working_chunks,
                c.prompt_chunks,
                c.substantial_chunks,
                c.token_changes,
                c.last_tokens
                    .map_or_else(|| "-".to_owned(), |t| t.to_string())
            );
            outln!(
                "detector state: {} bytes bounded + {} bytes of screen grid",
                report.state.bounded_bytes,
                report.state.screen_bytes
            );
            outln!("final verdict: {}", state_text(&report.verdict));
        }
    }
    Ok(ExitStatus::Success)
}

fn print_verdict(verdict: &Verdict, json: bool, explain: bool) {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(verdict).unwrap_or_default()
        );
    } else if explain {
        outln!("{}", render_explain(verdict).trim_end());
    } else {
        outln!("{}", state_text(verdict));
    }
}

fn state_text(verdict: &Verdict) -> String {
    let (good, bad, note) = (style::GOOD, style::BAD, style::NOTE);
    match (verdict.state, verdict.blocked) {
        (SessionState::Blocked, Some(kind)) => {
            format!(
                "{bad}blocked{bad:#} ({})",
                serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            )
        }
        (SessionState::Idle, _) => format!("{good}idle{good:#}"),
        (SessionState::Working, _) => format!("{note}working{note:#}"),
        (state, _) => serde_json::to_value(state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
    }
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, Fail> {
    std::fs::read(path).map_err(|e| Fail::usage(format!("cannot read {}: {e}", path.display())))
}

fn read_text(path: &Path) -> Result<String, Fail> {
    String::from_utf8(read_bytes(path)?)
        .map_err(|_| Fail::usage(format!("{} is not UTF-8 text", path.display())))
}

//! `hyoka detect`: judge a recorded session with the idle detector.
//!
//! Every input is read in bounded memory: a screen and a profile file are capped (a bigger
//! file is refused before it is read), a cast is replayed a line at a time (each line capped),
//! and a stream is read in blocks and fed piece by piece. FIFOs and sockets are refused, since
//! opening them may block forever.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::time::Instant;

use hyoka_idle_detect::{
    CastReplay, DetectorConfig, Profile, SessionState, StreamRun, Verdict, VerdictChange,
    classify_screen, render_explain,
};

use crate::args::DetectArgs;
use crate::exit::{ExitStatus, Fail};
use crate::out::{outln, style};

/// The largest screen snapshot read: a terminal of 400 × 512 cells with an escape sequence on
/// every cell stays well under it.
const MAX_SCREEN_BYTES: u64 = 8 << 20;
/// The largest profile file read.
const MAX_PROFILE_BYTES: u64 = 1 << 20;
/// The longest line of an asciicast recording (one event's output).
const MAX_CAST_LINE_BYTES: u64 = 16 << 20;
/// The block size `--stream` reads with: a multiple of every power-of-two slice up to it, and
/// small enough to stay in the CPU's cache while the detector reads it.
const STREAM_BLOCK_BYTES: usize = 256 << 10;
/// Blocks in flight between the reader thread and the detector.
const STREAM_BLOCKS: usize = 4;

pub(crate) fn exec(args: &DetectArgs) -> Result<ExitStatus, Fail> {
    let config = DetectorConfig::default();
    if let Some(path) = &args.stream {
        // The stream does not need the profile until its last screen is judged: compile a
        // built-in one on another core meanwhile (a bad name is refused first).
        let profile = if args.profile_file.is_some() {
            ProfileJob::Ready(Box::new(load_profile(args)?))
        } else {
            Profile::builtin_source(&args.profile).ok_or_else(|| bad_profile_name(args))?;
            let name = args.profile.clone();
            ProfileJob::Compiling(std::thread::spawn(move || {
                let profile = Profile::builtin(&name)?;
                // Off the stream's path: the last screen's judgement finds them compiled.
                profile.precompile();
                Ok(profile)
            }))
        };
        return stream(path, profile, &config, args).map(|()| ExitStatus::Success);
    }
    let profile = load_profile(args)?;
    if let Some(path) = &args.screen {
        let bytes = read_capped(path, MAX_SCREEN_BYTES, "screen snapshot")?;
        print_verdict(&classify_screen(&profile, &bytes), args.json, args.explain);
    } else if let Some(path) = &args.cast {
        replay(path, &profile, &config, args)?;
    }
    Ok(ExitStatus::Success)
}

/// A profile, or one being compiled on another thread.
enum ProfileJob {
    Ready(Box<Profile>),
    Compiling(std::thread::JoinHandle<Result<Profile, hyoka_idle_detect::DetectError>>),
}

impl ProfileJob {
    fn wait(self, args: &DetectArgs) -> Result<Profile, Fail> {
        match self {
            Self::Ready(p) => Ok(*p),
            Self::Compiling(job) => job
                .join()
                .map_err(|_| Fail::failure("the profile compiler thread panicked"))?
                .map_err(|_| bad_profile_name(args)),
        }
    }
}

fn load_profile(args: &DetectArgs) -> Result<Profile, Fail> {
    match &args.profile_file {
        Some(path) => {
            let text = read_capped(path, MAX_PROFILE_BYTES, "profile file")?;
            let text = String::from_utf8(text)
                .map_err(|_| Fail::usage(format!("{} is not UTF-8 text", path.display())))?;
            Profile::from_toml(&text).map_err(|e| Fail::usage(format!("{}: {e}", path.display())))
        }
        None => Profile::builtin(&args.profile).map_err(|_| bad_profile_name(args)),
    }
}

fn bad_profile_name(args: &DetectArgs) -> Fail {
    let names: Vec<&str> = Profile::builtin_names().collect();
    Fail::usage(format!(
        "unknown profile `{}` (profiles: {})",
        args.profile,
        names.join(", ")
    ))
}

/// Replays a cast a line at a time, printing each verdict change as it is found.
fn replay(
    path: &Path,
    profile: &Profile,
    config: &DetectorConfig,
    args: &DetectArgs,
) -> Result<(), Fail> {
    let mut reader = BufReader::new(open(path)?);
    let mut replay = CastReplay::new(profile, config, Instant::now());
    let mut line = Vec::new();
    let mut number = 0usize;
    let bad = |e: hyoka_idle_detect::DetectError| Fail::usage(format!("{}: {e}", path.display()));
    loop {
        line.clear();
        number += 1;
        let n = (&mut reader)
            .take(MAX_CAST_LINE_BYTES + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| Fail::usage(format!("cannot read {}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        if line.len() as u64 > MAX_CAST_LINE_BYTES {
            return Err(Fail::usage(format!(
                "{}: line {number} is longer than {} MiB",
                path.display(),
                MAX_CAST_LINE_BYTES >> 20
            )));
        }
        let text = std::str::from_utf8(&line)
            .map_err(|_| Fail::usage(format!("{}: line {number} is not UTF-8", path.display())))?;
        replay
            .feed_line(text.trim_end_matches(['\n', '\r']))
            .map_err(bad)?;
        print_changes(&replay.take_changes(), args);
    }
    print_changes(&replay.finish().map_err(bad)?, args);
    Ok(())
}

fn print_changes(changes: &[VerdictChange], args: &DetectArgs) {
    for change in changes {
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
}

/// Feeds a raw stream through the detector in blocks, timing the whole pass. A reader thread
/// fills the blocks (a few, reused) while the detector works on the previous one.
fn stream(
    path: &Path,
    profile: ProfileJob,
    config: &DetectorConfig,
    args: &DetectArgs,
) -> Result<(), Fail> {
    let started = Instant::now();
    let file = open(path)?;
    let mut run = StreamRun::new(config, args.chunk_bytes as usize, started);
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(2);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    for _ in 0..STREAM_BLOCKS {
        let _ = empty_tx.send(vec![0u8; STREAM_BLOCK_BYTES]);
    }
    let reader = std::thread::spawn(move || read_blocks(file, &empty_rx, &full_tx));
    let mut total = 0u64;
    let mut failed = None;
    for block in full_rx {
        match block {
            Ok(block) => {
                run.feed(&block);
                total += block.len() as u64;
                let mut block = block;
                block.resize(STREAM_BLOCK_BYTES, 0);
                let _ = empty_tx.send(block);
            }
            Err(e) => failed = Some(e),
        }
    }
    drop(empty_tx);
    let _ = reader.join();
    if let Some(e) = failed {
        return Err(Fail::usage(format!("cannot read {}: {e}", path.display())));
    }
    let report = run.finish(&profile.wait(args)?);
    let seconds = started.elapsed().as_secs_f64();
    #[expect(clippy::cast_precision_loss, reason = "a throughput figure")]
    let mb_per_s = total as f64 / 1e6 / seconds.max(f64::EPSILON);
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
    Ok(())
}

/// Fills the blocks `empty` hands back with the file's bytes and sends them on `full`, in
/// order, until the end of the file or an error (sent too). A block is sent full unless it is
/// the last.
fn read_blocks(
    mut file: File,
    empty: &std::sync::mpsc::Receiver<Vec<u8>>,
    full: &std::sync::mpsc::SyncSender<std::io::Result<Vec<u8>>>,
) {
    while let Ok(mut block) = empty.recv() {
        let mut filled = 0;
        while filled < block.len() {
            match file.read(&mut block[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = full.send(Err(e));
                    return;
                }
            }
        }
        block.truncate(filled);
        let end = filled == 0;
        if !end && full.send(Ok(block)).is_err() {
            return;
        }
        if end || filled < STREAM_BLOCK_BYTES {
            return;
        }
    }
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
        (SessionState::Blocked, Some(kind)) => format!("{bad}blocked{bad:#} ({kind})"),
        (SessionState::Idle, _) => format!("{good}idle{good:#}"),
        (SessionState::Working, _) => format!("{note}working{note:#}"),
        (state, _) => state.to_string(),
    }
}

/// Opens an input file, refusing what could block the open or the reads forever.
fn open(path: &Path) -> Result<File, Fail> {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = std::fs::metadata(path)
        .map_err(|e| Fail::usage(format!("cannot read {}: {e}", path.display())))?
        .file_type();
    if kind.is_fifo() || kind.is_socket() || kind.is_dir() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else {
            "a socket"
        };
        return Err(Fail::usage(format!(
            "{} is {what}; give a file",
            path.display()
        )));
    }
    File::open(path).map_err(|e| Fail::usage(format!("cannot read {}: {e}", path.display())))
}

/// Reads a whole file of at most `cap` bytes; a larger one is refused (by its size when it
/// has one, otherwise after reading one byte more than the cap).
fn read_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>, Fail> {
    let file = open(path)?;
    let too_big = || {
        Fail::usage(format!(
            "{what} {} is larger than {} KiB",
            path.display(),
            cap >> 10
        ))
    };
    if file.metadata().is_ok_and(|m| m.is_file() && m.len() > cap) {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Fail::usage(format!("cannot read {}: {e}", path.display())))?;
    if bytes.len() as u64 > cap {
        return Err(too_big());
    }
    Ok(bytes)
}

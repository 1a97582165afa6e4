//! Event benchmarks, each against its named baseline measured in the same run:
//!
//! - `stream_json`: our stream-json reader on a ~100 MB stream built by repeating the real
//!   captures' lines (`../shared/fixtures/stream-json`, or built-in lines of the same shape
//!   when that directory is absent) vs `serde_json::from_slice::<serde_json::Value>` on the
//!   same lines;
//! - `codex_json` and `gemini_stream_json`: the Codex (`codex exec --json`) and Gemini CLI
//!   (`--output-format stream-json`) readers on a ~32 MB stream built by repeating the valid
//!   lines of `hyoka-eval`'s written transcripts (`crates/eval/tests/fixtures/events`), item
//!   and tool ids made unique per repetition, vs `serde_json::Value` on the same lines;
//! - `limits`: the limit bookkeeping per event (`Monitor`).

#![allow(
    clippy::print_stderr,
    reason = "benchmarks say which input they measured"
)]

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hyoka_eval::{AgentEvent, EventSource, LimitSet, Monitor, StreamJsonParser};

const TARGET_BYTES: usize = 100 * 1024 * 1024;

fn fixture_lines() -> Vec<Vec<u8>> {
    let dir = std::env::var_os("HYOKA_SHARED_DIR")
        .map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
            PathBuf::from,
        )
        .join("fixtures/stream-json");
    let mut lines = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
        {
            let text = std::fs::read(file).expect("fixture");
            lines.extend(
                text.split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        }
    }
    if lines.is_empty() {
        eprintln!(
            "note: {} is absent; using built-in lines of the same shape",
            dir.display()
        );
        lines.push(br#"{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Writing the file now."}],"usage":{"input_tokens":10,"output_tokens":5}},"session_id":"s"}"#.to_vec());
        lines.push(br#"{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"/w/index.html","content":"<html>hello</html>"}}]},"session_id":"s"}"#.to_vec());
        lines.push(br#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"File created successfully"}]},"session_id":"s"}"#.to_vec());
    }
    lines
}

/// The fixture lines repeated to about 100 MB, with message ids made unique per repetition
/// so turns keep being counted.
fn stream() -> (Vec<Vec<u8>>, usize) {
    let base = fixture_lines();
    let mut lines = Vec::new();
    let mut bytes = 0;
    let mut round = 0u64;
    while bytes < TARGET_BYTES {
        for line in &base {
            let text = String::from_utf8_lossy(line)
                .replace("\"id\":\"msg_", &format!("\"id\":\"msg_{round}_"));
            bytes += text.len() + 1;
            lines.push(text.into_bytes());
        }
        round += 1;
    }
    (lines, bytes)
}

/// The baseline of every reader: `serde_json::Value` on the same lines.
fn baseline(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    lines: &[Vec<u8>],
) {
    group.bench_function("baseline/serde_json_Value", |b| {
        b.iter(|| {
            for line in lines {
                let value: serde_json::Value = serde_json::from_slice(line).expect("valid");
                black_box(value);
            }
        });
    });
}

fn stream_json(c: &mut Criterion) {
    let (lines, bytes) = stream();
    let mut group = c.benchmark_group("stream_json");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes as u64));
    baseline(&mut group, &lines);
    group.bench_function("hyoka/StreamJsonParser", |b| {
        let mut events = Vec::new();
        b.iter(|| {
            let mut parser = StreamJsonParser::default();
            for line in &lines {
                parser.feed_line(line, &mut events);
                events.clear();
            }
            black_box(parser.malformed);
        });
    });
    group.finish();
    eprintln!(
        "stream_json: {} lines, {} bytes per iteration",
        lines.len(),
        bytes
    );
}

/// The valid lines of the written transcripts of `prefix`, repeated to about 32 MB with ids
/// unique per repetition.
fn transcript_stream(prefix: &str) -> (Vec<Vec<u8>>, usize) {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/eval/tests/fixtures/events");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the transcripts")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "jsonl")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    files.sort();
    let base: Vec<String> = files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .expect("transcript")
                .lines()
                .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let (mut lines, mut bytes, mut round) = (Vec::new(), 0, 0u64);
    while bytes < TARGET_BYTES / 3 {
        for line in &base {
            let text = line
                .replace("\"id\":\"item_", &format!("\"id\":\"item_{round}_"))
                .replace("\"tool_id\":\"", &format!("\"tool_id\":\"{round}-"));
            bytes += text.len() + 1;
            lines.push(text.into_bytes());
        }
        round += 1;
    }
    (lines, bytes)
}

fn reader_vs_value(c: &mut Criterion, group_name: &str, prefix: &str, source: EventSource) {
    let (lines, bytes) = transcript_stream(prefix);
    let mut group = c.benchmark_group(group_name);
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes as u64));
    baseline(&mut group, &lines);
    group.bench_function(format!("hyoka/{source}"), |b| {
        let mut events = Vec::new();
        b.iter(|| {
            let mut reader = source.reader().expect("a reader");
            for line in &lines {
                reader.read_line(line, &mut events);
                events.clear();
            }
            black_box(reader.counts());
        });
    });
    group.finish();
    eprintln!(
        "{group_name}: {} lines, {bytes} bytes per iteration",
        lines.len()
    );
}

fn codex_json(c: &mut Criterion) {
    reader_vs_value(c, "codex_json", "codex-", EventSource::CodexJson);
}

fn gemini_stream_json(c: &mut Criterion) {
    reader_vs_value(
        c,
        "gemini_stream_json",
        "gemini-",
        EventSource::GeminiStreamJson,
    );
}

fn limits(c: &mut Criterion) {
    let events: Vec<AgentEvent> = (0..1000)
        .map(|i| {
            if i % 4 == 0 {
                AgentEvent::Turn { message_id: None }
            } else {
                AgentEvent::ToolCall {
                    name: "Write".into(),
                    path: None,
                    input: None,
                }
            }
        })
        .collect();
    let mut group = c.benchmark_group("limits");
    group.throughput(Throughput::Elements(events.len() as u64 * 2));
    group.bench_function("hyoka/Monitor_per_event", |b| {
        b.iter(|| {
            let mut monitor = Monitor::new(LimitSet {
                max_turns: 0,
                max_files: 1_000_000,
                max_output_size: 0,
                max_session_actions: 0,
                ..LimitSet::default()
            });
            for (i, event) in events.iter().enumerate() {
                black_box(monitor.event(event));
                black_box(monitor.usage(i as u64, i as u64 * 100));
            }
        });
    });
    group.finish();
}

criterion_group!(benches, stream_json, codex_json, gemini_stream_json, limits);
criterion_main!(benches);

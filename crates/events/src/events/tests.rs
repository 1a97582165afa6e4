//! Tests of the event parsers, including the real captures in `../shared/fixtures`.

use std::path::PathBuf;

use super::*;
use crate::usage::{TokenUsage, UsageMeter};

fn parse_all(text: &str) -> (Vec<AgentEvent>, StreamJsonParser) {
    let mut parser = StreamJsonParser::default();
    let mut events = Vec::new();
    for line in text.lines() {
        parser.feed_line(line.as_bytes(), &mut events);
    }
    (events, parser)
}

fn counts(events: &[AgentEvent]) -> (usize, usize) {
    let count = |f: fn(&AgentEvent) -> bool| events.iter().filter(|e| f(e)).count();
    (
        count(|e| matches!(e, AgentEvent::Turn { .. })),
        count(|e| matches!(e, AgentEvent::ToolCall { .. })),
    )
}

/// What a meter makes of the usage events.
fn spending(events: &[AgentEvent]) -> Option<TokenUsage> {
    let mut meter = UsageMeter::default();
    for event in events {
        if let AgentEvent::Usage(usage) = event {
            meter.apply(usage);
        }
    }
    meter.usage()
}

#[track_caller]
fn check(text: &str, turns: usize, actions: usize, malformed: u64, unknown: u64) {
    let (events, parser) = parse_all(text);
    assert_eq!(counts(&events), (turns, actions), "{text}");
    assert_eq!(
        (parser.malformed, parser.unknown),
        (malformed, unknown),
        "{text}"
    );
}

#[expect(
    clippy::disallowed_methods,
    reason = "a test reads where the shared fixtures are"
)]
fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("HYOKA_SHARED_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    );
    dir.is_dir().then_some(dir)
}

#[test]
fn the_real_captures_give_the_indexed_counts() {
    let Some(shared) = shared_dir() else {
        // Straight to stderr, past the test harness's capture, so the skip shows in the output.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"skipped: ../shared is absent (a fresh clone); CI has it\n",
        );
        return;
    };
    let dir = shared.join("fixtures/stream-json");
    let index = std::fs::read_to_string(dir.join("INDEX.tsv")).unwrap();
    let mut header = index.lines().next().unwrap().split('\t');
    let col = |name: &str| header.clone().position(|h| h == name).unwrap();
    let (file_col, turns_col, tools_col) = (
        col("file"),
        col("assistant_messages_distinct_id"),
        col("tool_use_blocks"),
    );
    header.next();
    let mut checked = 0;
    for row in index.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = row.split('\t').collect();
        let text = std::fs::read_to_string(dir.join(fields[file_col])).unwrap();
        let (events, parser) = parse_all(&text);
        let want: (usize, usize) = (
            fields[turns_col].parse().unwrap(),
            fields[tools_col].parse().unwrap(),
        );
        assert_eq!(counts(&events), want, "{}", fields[file_col]);
        assert_eq!(parser.malformed, 0, "{}", fields[file_col]);
        checked += 1;
    }
    assert_eq!(checked, 4);
    // The result line's totals are authoritative: what the messages said on the way is
    // replaced by them. The normalized capture's placeholders are not numbers: no usage.
    let usage = |file: &str| {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        spending(&parse_all(&text).0)
    };
    assert_eq!(
        usage("sheenapps-write-file.jsonl"),
        Some(TokenUsage {
            input_tokens: Some(11),
            output_tokens: Some(235),
            cache_read_tokens: Some(29482),
            cache_creation_tokens: Some(489),
            cost_usd: Some(0.090_077_749_999_999_98),
        })
    );
    assert_eq!(
        usage("gleam-basic-query.jsonl").and_then(|u| u.cost_usd),
        Some(0.135_487_5)
    );
    assert_eq!(usage("claudeless-v2.1.12-normalized.jsonl"), None);
}

#[test]
fn usage_of_one_message_counts_once_and_the_result_replaces_it() {
    let lines = [
        r#"{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":4,"output_tokens":7},"content":[]}}"#,
        r#"{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":4,"output_tokens":210},"content":[]}}"#,
        r#"{"type":"assistant","message":{"id":"m2","usage":{"input_tokens":7,"output_tokens":9,"cache_read_input_tokens":100},"content":[]}}"#,
    ];
    let (events, _) = parse_all(&lines.join("\n"));
    // The second line of m1 adds only what grew: 4 + 7 input, 210 + 9 output.
    assert_eq!(
        spending(&events),
        Some(TokenUsage {
            input_tokens: Some(11),
            output_tokens: Some(219),
            cache_read_tokens: Some(100),
            ..TokenUsage::default()
        })
    );
    let result = r#"{"type":"result","total_cost_usd":0.42,"usage":{"input_tokens":20,"output_tokens":300}}"#;
    let (events, _) = parse_all(&[lines.join("\n"), result.to_owned()].join("\n"));
    assert_eq!(
        spending(&events),
        Some(TokenUsage {
            input_tokens: Some(20),
            output_tokens: Some(300),
            cache_read_tokens: Some(100),
            cache_creation_tokens: None,
            cost_usd: Some(0.42),
        })
    );
    // Older versions say cost_usd; a placeholder or a negative cost is no cost.
    for (line, cost) in [
        (r#"{"type":"result","cost_usd":0.5}"#, Some(0.5)),
        (
            r#"{"type":"result","cost_usd":"<COST>","usage":"<USAGE>"}"#,
            None,
        ),
        (r#"{"type":"result","total_cost_usd":-1}"#, None),
    ] {
        assert_eq!(
            spending(&parse_all(line).0).and_then(|u| u.cost_usd),
            cost,
            "{line}"
        );
    }
}

/// With `--include-partial-messages`: the turn counts at `message_start`, and the real
/// output tokens come with `message_delta`, long before the `result` line.
#[test]
fn partial_messages_count_the_turn_early_and_the_output_tokens_at_the_messages_end() {
    let usage = |out| {
        format!(
            r#"{{"input_tokens":100,"cache_read_input_tokens":50,"cache_creation_input_tokens":10,"output_tokens":{out}}}"#
        )
    };
    let start = |id: &str, parent: &str| {
        format!(
            r#"{{"type":"stream_event","parent_tool_use_id":{parent},"event":{{"type":"message_start","message":{{"id":"{id}","usage":{}}}}}}}"#,
            usage(1)
        )
    };
    let delta = |out, parent: &str| {
        format!(
            r#"{{"type":"stream_event","parent_tool_use_id":{parent},"event":{{"type":"message_delta","delta":{{"stop_reason":"tool_use"}},"usage":{}}}}}"#,
            usage(out)
        )
    };
    let assistant = |id: &str| {
        format!(
            r#"{{"type":"assistant","message":{{"id":"{id}","usage":{},"content":[{{"type":"tool_use","name":"Bash","input":{{"command":"ls"}}}}]}}}}"#,
            usage(1)
        )
    };
    // The turn is the first event of the message: before its blocks are complete.
    let (events, parser) = parse_all(&start("m1", "null"));
    assert!(matches!(&events[0], AgentEvent::Turn { message_id: Some(id) } if id == "m1"));
    assert_eq!(parser.seen, 1);
    assert_eq!(parser.unknown, 0);
    let lines = [
        start("m1", "null"),
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}}"#.to_owned(),
        assistant("m1"),
        // A sub-agent's message interleaves; its delta is its own.
        start("s1", r#""toolu_1""#),
        delta(7, r#""toolu_1""#),
        delta(20, "null"),
        r#"{"type":"stream_event","event":{"type":"message_stop"}}"#.to_owned(),
        // A late repeat of the message's first figures takes nothing back.
        assistant("m1"),
    ];
    let (events, parser) = parse_all(&lines.join("\n"));
    assert_eq!(counts(&events), (2, 2), "m1 and s1, a tool call each");
    assert_eq!((parser.malformed, parser.unknown), (0, 0));
    assert_eq!(
        spending(&events),
        Some(TokenUsage {
            input_tokens: Some(200),
            output_tokens: Some(27),
            cache_read_tokens: Some(100),
            cache_creation_tokens: Some(20),
            cost_usd: None,
        })
    );
    // The output tokens arrive as an increment with the delta, before any `result`.
    let (events, _) = parse_all(&[start("m1", "null"), delta(20, "null")].join("\n"));
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Usage(UsageEvent::Increment(u))) if u.output_tokens == Some(19)
    ));
    // A delta with no message open, or of shapes it does not know, counts nothing.
    for line in [
        delta(20, "null"),
        r#"{"type":"stream_event","event":"<EVENT>"}"#.to_owned(),
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"usage":{}}}}"#
            .to_owned(),
    ] {
        let (events, parser) = parse_all(&line);
        assert_eq!(events, Vec::new(), "{line}");
        assert_eq!(parser.malformed, 0, "{line}");
    }
}

#[test]
fn lines_of_one_message_are_one_turn() {
    let lines = [
        r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"hi"}]}}"#,
        r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"a.rs","content":"x"}}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1"}]}}"#,
        r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","name":"Bash","input":{"command":"ls"}},{"type":"tool_use","name":"Read","input":{"path":"b.rs"}}]}}"#,
    ];
    check(&lines.join("\n"), 2, 3, 0, 0);
    let (events, _) = parse_all(&lines.join("\n"));
    assert_eq!(
        events[1],
        AgentEvent::ToolCall {
            name: "Write".into(),
            path: Some("a.rs".into()),
            input: Some(r#"{"file_path":"a.rs","content":"x"}"#.into())
        }
    );
    // The tool's result (with no text) comes back between the two messages.
    assert_eq!(
        events[2],
        AgentEvent::ToolResult {
            output: None,
            error: false
        }
    );
    assert!(matches!(&events[5], AgentEvent::ToolCall { path: Some(p), .. } if p == "b.rs"));
}

#[test]
fn odd_content_and_garbage_are_counted_not_fatal() {
    check(
        r#"{"type":"assistant","message":{"id":"x","content":"<CONTENT>"}}"#,
        1,
        0,
        0,
        0,
    );
    check(
        r#"{"type":"assistant","message":{"id":"x","content":[1,"s",null,{"type":"tool_use","name":"T"}]}}"#,
        1,
        1,
        0,
        0,
    );
    check(
        r#"{"type":"assistant","message":{"content":{"weird":true}}}"#,
        1,
        0,
        0,
        0,
    );
    check(r#"{"type":"assistant"}"#, 0, 0, 0, 0);
    check("not json\n{\"type\":\n[1,2]\n\"str\"\n\n   ", 0, 0, 4, 0);
    // A partial message's event of no known shape is seen, and counts nothing.
    check(r#"{"type":"stream_event","event":{}}"#, 0, 0, 0, 0);
    check(r#"{"type":"rate_limit_event"}"#, 0, 0, 0, 1);
    check(r#"{"no_type":1}"#, 0, 0, 0, 1);
    check(
        "{\"type\":\"assistant\",\"message\":{\"id\":\"\u{e9}\\u00e9\",\"content\":[]}}",
        1,
        0,
        0,
        0,
    );
}

#[test]
fn interleaved_sub_agent_messages_do_not_split_a_turn() {
    let lines = [
        r#"{"type":"assistant","message":{"id":"parent","content":[{"type":"text","text":"a"}]}}"#,
        r#"{"type":"assistant","parent_tool_use_id":"t","message":{"id":"child","content":[{"type":"text","text":"b"}]}}"#,
        r#"{"type":"assistant","message":{"id":"parent","content":[{"type":"tool_use","name":"Task"}]}}"#,
    ];
    check(&lines.join("\n"), 2, 1, 0, 0);
}

#[test]
fn jsonl_events() {
    assert_eq!(
        parse_jsonl_event(br#"{"type":"turn"}"#),
        Some(AgentEvent::Turn { message_id: None })
    );
    assert_eq!(
        parse_jsonl_event(
            br#"{"type":"tool_call","name":"bash","path":"x.sh","input":{"cmd":"ls"}}"#
        ),
        Some(AgentEvent::ToolCall {
            name: "bash".into(),
            path: Some("x.sh".into()),
            input: Some(r#"{"cmd":"ls"}"#.into())
        })
    );
    assert_eq!(
        parse_jsonl_event(br#"{"type":"usage","input_tokens":5,"cost_usd":0.25}"#),
        Some(AgentEvent::Usage(UsageEvent::Increment(TokenUsage {
            input_tokens: Some(5),
            cost_usd: Some(0.25),
            ..TokenUsage::default()
        })))
    );
    assert_eq!(
        parse_jsonl_event(br#"{"type":"usage","output_tokens":9,"total":true}"#),
        Some(AgentEvent::Usage(UsageEvent::Total(TokenUsage {
            output_tokens: Some(9),
            ..TokenUsage::default()
        })))
    );
    assert_eq!(parse_jsonl_event(b"garbage"), None);
    assert_eq!(parse_jsonl_event(br#"{"type":"other"}"#), None);
}

#[test]
fn truncation_respects_character_boundaries() {
    assert_eq!(truncate_chars("abc", 5), "abc");
    assert_eq!(truncate_chars("abcdef", 3), "abc…");
    // 'é' is two bytes: a cut inside it moves back to the boundary.
    assert_eq!(truncate_chars("aé", 2), "a…");
    assert_eq!(truncate_chars("✻✻", 4), "✻…");
}

#[test]
fn the_splitter_survives_any_chunking_and_bounds_lines() {
    let text = b"one\ntwo\n\nthree";
    for split in 0..text.len() {
        let mut splitter = LineSplitter::default();
        let mut got = Vec::new();
        splitter.feed(&text[..split], |l, o| got.push((l.to_vec(), o)));
        splitter.feed(&text[split..], |l, o| got.push((l.to_vec(), o)));
        splitter.finish(|l, o| got.push((l.to_vec(), o)));
        let want: Vec<(Vec<u8>, bool)> = vec![
            (b"one".to_vec(), false),
            (b"two".to_vec(), false),
            (vec![], false),
            (b"three".to_vec(), false),
        ];
        assert_eq!(got, want, "split at {split}");
    }
    let mut splitter = LineSplitter::default();
    let mut got = Vec::new();
    let big = vec![b'x'; MAX_LINE + 10];
    splitter.feed(&big, |_, o| got.push(o));
    splitter.feed(b"\nok\n", |l, o| got.push(o && l.len() == MAX_LINE));
    assert_eq!(got, [true, false]);
}

/// Every event of `text` read line by line by a fresh reader of `source`, and its counts.
fn read_all(source: EventSource, text: &str) -> (Vec<AgentEvent>, LineCounts) {
    let mut reader = source.reader().unwrap();
    let mut events = Vec::new();
    for line in text.split('\n') {
        reader.read_line(line.as_bytes(), &mut events);
    }
    (events, reader.counts())
}

fn fixture(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/events");
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn the_written_transcripts_give_their_indexed_counts() {
    let index = fixture("INDEX.tsv");
    let mut rows = index.lines().map(|l| l.split('\t').collect::<Vec<_>>());
    let header = rows.next().unwrap();
    let mut checked = 0;
    for row in rows.filter(|r| r.len() == header.len()) {
        let field = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
        let number = |name: &str| field(name).parse::<u64>().ok();
        let (events, lines) = read_all(field("format").parse().unwrap(), &fixture(field("file")));
        let (turns, actions) = counts(&events);
        let file = field("file");
        assert_eq!(
            (turns as u64, actions as u64),
            (number("turns").unwrap(), number("actions").unwrap()),
            "{file}"
        );
        assert_eq!(
            lines,
            LineCounts {
                seen: number("seen").unwrap(),
                unknown: number("unknown").unwrap(),
                malformed: number("malformed").unwrap(),
            },
            "{file}"
        );
        assert_eq!(
            spending(&events),
            Some(TokenUsage {
                input_tokens: number("input_tokens"),
                output_tokens: number("output_tokens"),
                cache_read_tokens: number("cache_read_tokens"),
                ..TokenUsage::default()
            }),
            "{file}"
        );
        checked += 1;
    }
    assert_eq!(checked, 4);
}

fn tool_calls(events: &[AgentEvent]) -> Vec<(&str, Option<&str>, Option<&str>)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { name, path, input } => {
                Some((name.as_str(), path.as_deref(), input.as_deref()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn codex_actions_count_once_when_they_start_and_a_tool_only_reply_is_a_turn() {
    let (events, _) = read_all(
        EventSource::CodexJson,
        &fixture("codex-exec-write-file.jsonl"),
    );
    assert_eq!(
        tool_calls(&events),
        [
            (
                "command_execution",
                None,
                Some(r#"{"command":"bash -lc ls"}"#)
            ),
            (
                "file_change",
                Some("/home/dev/project/hello.txt"),
                Some(r#"{"changes":[{"path":"/home/dev/project/hello.txt","kind":"add"}]}"#)
            ),
        ]
    );
    // The first reply begins with its reasoning; the file change alone is the second reply.
    let turns: Vec<Option<&str>> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Turn { message_id } => Some(message_id.as_deref()),
            _ => None,
        })
        .collect();
    assert_eq!(turns, [Some("item_0"), Some("item_3"), Some("item_4")]);
    // A command counts when it starts (so a limit stops it before it runs), once however
    // many updates and completions follow; the next item after its completion is a new
    // reply, an item of the same reply before it is not.
    let item = |kind: &str, id: &str, t: &str| {
        format!(r#"{{"type":"item.{kind}","item":{{"id":"{id}","type":"{t}","command":"ls"}}}}"#)
    };
    let started = item("started", "i", "command_execution");
    assert_eq!(
        counts(&read_all(EventSource::CodexJson, &started).0),
        (1, 1)
    );
    let done = item("completed", "i", "command_execution");
    let twice = [
        started.clone(),
        item("updated", "i", "command_execution"),
        done.clone(),
        done.clone(),
    ]
    .join("\n");
    assert_eq!(counts(&read_all(EventSource::CodexJson, &twice).0), (1, 1));
    let parallel = [
        item("started", "a", "command_execution"),
        item("started", "b", "command_execution"),
        item("completed", "a", "command_execution"),
        item("completed", "b", "command_execution"),
        item("completed", "m", "agent_message"),
    ]
    .join("\n");
    assert_eq!(
        counts(&read_all(EventSource::CodexJson, &parallel).0),
        (2, 2)
    );
}

#[test]
fn codex_api_errors_and_cache_writes_are_read() {
    let lines = [
        r#"{"type":"error","message":"Reconnecting... 1/5 (exceeded retry limit, last status: 429 Too Many Requests)"}"#,
        r#"{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 503 Service Unavailable"}}"#,
        r#"{"type":"error","message":"stream disconnected before completion"}"#,
        r#"{"type":"turn.completed","usage":{"input_tokens":520,"cached_input_tokens":180,"cache_write_input_tokens":10,"output_tokens":40,"reasoning_output_tokens":0}}"#,
    ]
    .join("\n");
    let (events, counts) = read_all(EventSource::CodexJson, &lines);
    let statuses: Vec<Option<u16>> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApiError { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(statuses, [Some(429), Some(503)]);
    assert_eq!(counts.unknown, 0);
    let usage = spending(&events).unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.cache_creation_tokens,
            usage.output_tokens
        ),
        (Some(330), Some(180), Some(10), Some(40))
    );
}

#[test]
fn gemini_a_tool_only_reply_is_a_turn_and_init_names_the_model() {
    let lines = [
        r#"{"type":"init","session_id":"s","model":"gemini-2.5-pro"}"#,
        r#"{"type":"message","role":"user","content":"go"}"#,
        r#"{"type":"tool_use","tool_name":"write_file","tool_id":"a","parameters":{"file_path":"g.txt"}}"#,
        r#"{"type":"tool_use","tool_name":"run_shell_command","tool_id":"b","parameters":{"command":"ls"}}"#,
        r#"{"type":"tool_result","tool_id":"a","status":"success"}"#,
        r#"{"type":"tool_result","tool_id":"b","status":"success"}"#,
        r#"{"type":"tool_use","tool_name":"run_shell_command","tool_id":"c","parameters":{"command":"ls"}}"#,
        r#"{"type":"tool_result","tool_id":"c","status":"success"}"#,
        r#"{"type":"message","role":"assistant","content":"Done.","delta":true}"#,
        r#"{"type":"result","status":"error","error":{"type":"Error","message":"[API Error: got status: 503 UNAVAILABLE. The model is overloaded.]"}}"#,
    ]
    .join("\n");
    let (events, _) = read_all(EventSource::GeminiStreamJson, &lines);
    assert_eq!(counts(&events), (3, 3));
    assert_eq!(
        events[0],
        AgentEvent::Announced {
            model: Some("gemini-2.5-pro".into()),
            version: None
        }
    );
    assert!(
        events.iter().any(|e| matches!(
            e,
            AgentEvent::ApiError {
                status: Some(503),
                ..
            }
        )),
        "{events:?}"
    );
}

#[test]
fn claude_init_and_api_errors_are_read_and_an_error_message_is_no_turn() {
    let lines = [
        r#"{"type":"system","subtype":"init","model":"claude-opus-5-5","claude_code_version":"2.1.328"}"#,
        r#"{"type":"assistant","message":{"id":"1dcd","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: 529 Overloaded"}],"usage":{"input_tokens":0,"output_tokens":0}},"error":"server_error","is_api_error_message":true,"api_error_status":529,"api_error_type":"overloaded_error"}"#,
        r#"{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":null,"usage":{"input_tokens":0,"output_tokens":0}}"#,
        r#"{"type":"assistant","message":{"id":"m2","content":[],"usage":{"input_tokens":1}},"is_api_error_message":true,"api_error_status":400}"#,
    ]
    .join("\n");
    let (events, _) = read_all(EventSource::StreamJson, &lines);
    assert_eq!(counts(&events), (0, 0), "{events:?}");
    assert_eq!(
        events[0],
        AgentEvent::Announced {
            model: Some("claude-opus-5-5".into()),
            version: Some("2.1.328".into())
        }
    );
    let errors: Vec<Option<u16>> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApiError { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(
        errors,
        [Some(529)],
        "a 400 is the request's fault, not the service's"
    );
}

#[test]
fn statuses_are_found_in_agents_messages() {
    for (text, want) in [
        (
            "exceeded retry limit, last status: 429 Too Many Requests",
            Some(429),
        ),
        ("Attempt 1 failed with status 503. Retrying", Some(503)),
        (r#"{"error":{"code":503,"message":"x"}}"#, Some(503)),
        ("The model is overloaded", Some(529)),
        (
            "Selected model is at capacity. Please try a different model.",
            Some(503),
        ),
        ("Rate limit reached for requests", Some(429)),
        ("status: 200 fine, then status 7", None),
        ("nothing here", None),
    ] {
        assert_eq!(status_in(text), want, "{text}");
    }
}

#[test]
fn codex_tool_items_keep_their_detail_and_drop_diffs() {
    let (events, _) = read_all(EventSource::CodexJson, &fixture("codex-exec-tools.jsonl"));
    let calls = tool_calls(&events);
    let names: Vec<&str> = calls.iter().map(|c| c.0).collect();
    assert_eq!(
        names,
        [
            "web_search",
            "mcp_tool_call",
            "file_change",
            "command_execution"
        ]
    );
    // The web search item repeats `id`: the item's own comes first and wins.
    assert_eq!(calls[0].2, Some(r#"{"query":"reqwest timeout builder"}"#));
    assert_eq!(
        calls[1].2,
        Some(
            r#"{"server":"docs","tool":"fetch_page","arguments":{"url":"https://docs.rs/reqwest"}}"#
        )
    );
    assert_eq!(calls[2].1, Some("/home/dev/project/src/client.rs"));
    assert!(
        calls[2]
            .2
            .is_some_and(|i| i.contains("src/lib.rs") && !i.contains("diff")),
        "{calls:?}"
    );
}

#[test]
fn codex_usage_is_the_threads_total_without_double_counted_cache() {
    let turn = |input: u64, cached: u64, output: u64| {
        format!(
            r#"{{"type":"turn.completed","usage":{{"input_tokens":{input},"cached_input_tokens":{cached},"output_tokens":{output}}}}}"#
        )
    };
    let lines = [turn(1000, 600, 50), turn(2500, 1800, 120)].join("\n");
    let usage = spending(&read_all(EventSource::CodexJson, &lines).0).unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.output_tokens
        ),
        (Some(700), Some(1800), Some(120))
    );
    assert_eq!(usage.cost_usd, None);
    // All zero is Codex saying it has no count; a negative or odd figure is no figure.
    for line in [
        turn(0, 0, 0),
        r#"{"type":"turn.completed","usage":{"input_tokens":-5}}"#.to_owned(),
        r#"{"type":"turn.completed","usage":"n/a"}"#.to_owned(),
    ] {
        assert_eq!(
            spending(&read_all(EventSource::CodexJson, &line).0),
            None,
            "{line}"
        );
    }
}

#[test]
fn gemini_deltas_of_one_reply_are_one_turn() {
    let (events, _) = read_all(
        EventSource::GeminiStreamJson,
        &fixture("gemini-stream-write-file.jsonl"),
    );
    let calls = tool_calls(&events);
    assert_eq!(calls[0].0, "run_shell_command");
    assert_eq!(
        calls[1],
        (
            "write_file",
            Some("/home/dev/project/hello.txt"),
            Some(r#"{"file_path":"/home/dev/project/hello.txt","content":"hello\n"}"#)
        )
    );
    let msg =
        |delta: &str| format!(r#"{{"type":"message","role":"assistant","content":"x"{delta}}}"#);
    let check_turns = |lines: &[String], turns: usize| {
        let text = lines.join("\n");
        assert_eq!(
            counts(&read_all(EventSource::GeminiStreamJson, &text).0).0,
            turns,
            "{text}"
        );
    };
    let delta = msg(r#","delta":true"#);
    let whole = msg("");
    let user = r#"{"type":"message","role":"user","content":"go"}"#.to_owned();
    check_turns(&[delta.clone(), delta.clone(), delta.clone()], 1);
    check_turns(&[whole.clone(), whole.clone()], 2);
    check_turns(&[delta.clone(), whole.clone(), delta.clone()], 3);
    check_turns(&[delta.clone(), user, delta.clone()], 2);
    check_turns(&[delta.clone(), "garbage".to_owned(), delta.clone()], 1);
    check_turns(&[msg(r#","delta":"true""#), msg(r#","delta":"true""#)], 2);
}

#[test]
fn auto_picks_the_reader_by_program_name() {
    #[track_caller]
    fn check(command: &[&str], want: EventSource) {
        let argv: Vec<std::ffi::OsString> = command.iter().map(Into::into).collect();
        assert_eq!(EventSource::for_command(&argv), want, "{command:?}");
        assert_eq!(EventSource::Auto.resolve(&argv), want, "{command:?}");
    }
    check(
        &["claude", "-p", "hi", "--output-format", "stream-json"],
        EventSource::StreamJson,
    );
    check(
        &["/usr/local/bin/codex", "exec", "--json", "hi"],
        EventSource::CodexJson,
    );
    check(
        &["gemini", "--output-format", "stream-json"],
        EventSource::GeminiStreamJson,
    );
    check(
        &["env", "-i", "HOME=/h", "codex", "exec"],
        EventSource::CodexJson,
    );
    check(
        &["sh", "-c", "exec gemini -p hi"],
        EventSource::GeminiStreamJson,
    );
    check(
        &["bash", "-lc", "FOO=1 /opt/bin/claude -p x"],
        EventSource::StreamJson,
    );
    check(&["sh", "-c", "exec '/a b/codex' exec"], EventSource::Jsonl);
    check(
        &["sh", "-c", "exec \"/bin/codex\" exec"],
        EventSource::CodexJson,
    );
    check(&["sh", "script.sh"], EventSource::Jsonl);
    check(&["sh", "-c", ""], EventSource::Jsonl);
    check(&["copilot", "-p", "hi"], EventSource::Jsonl);
    check(&["aider", "--message", "hi"], EventSource::Jsonl);
    check(&["codex-wrapper"], EventSource::Jsonl);
    check(&["env"], EventSource::Jsonl);
    check(&[], EventSource::Jsonl);
    // Every other source stays itself, whatever the program.
    let codex = vec![std::ffi::OsString::from("codex")];
    assert_eq!(EventSource::Jsonl.resolve(&codex), EventSource::Jsonl);
    assert_eq!(EventSource::None.resolve(&codex), EventSource::None);
}

#[test]
fn every_source_parses_from_its_name() {
    for source in [
        EventSource::None,
        EventSource::StreamJson,
        EventSource::Jsonl,
        EventSource::CodexJson,
        EventSource::GeminiStreamJson,
        EventSource::Auto,
    ] {
        assert_eq!(source.as_str().parse::<EventSource>().unwrap(), source);
        assert_eq!(
            serde_json::to_string(&source).unwrap(),
            format!("\"{source}\"")
        );
        assert_eq!(
            source.reader().is_some(),
            !matches!(source, EventSource::None | EventSource::Auto)
        );
    }
    let err = "codex".parse::<EventSource>().unwrap_err().to_string();
    assert!(
        err.contains("\"codex\"") && err.contains("codex-json"),
        "{err}"
    );
}

/// A usage field of an odd shape costs only that field: the line still counts, and the other
/// fields are read (they are parsed in the line's one pass, not a second one).
#[test]
fn an_odd_usage_field_costs_only_that_field() {
    let text = concat!(
        r#"{"type":"assistant","message":{"id":"m1","content":[],"usage":{"input_tokens":"x","output_tokens":5,"cache_creation":{"ephemeral_5m_input_tokens":3},"service_tier":"standard"}}}"#,
        "\n",
        r#"{"type":"assistant","message":{"id":"m2","content":[],"usage":[1,2]}}"#,
        "\n",
    );
    let (events, parser) = parse_all(text);
    assert_eq!(parser.malformed, 0);
    assert_eq!(counts(&events), (2, 0));
    let spent = spending(&events).expect("the output tokens");
    assert_eq!((spent.input_tokens, spent.output_tokens), (None, Some(5)));
}

/// Tool results become transcript events, from Claude Code's `user` lines and from
/// `$HYOKA_EVENTS`; what is not text is no text, and a result counts as no turn or action.
#[test]
fn tool_results_are_read_from_both_formats() {
    let lines = [
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok\n3 files"}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}],"is_error":true}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","content":7,"is_error":"yes"}]}}"#,
        r#"{"type":"user","message":{"content":"plain prompt"}}"#,
    ];
    let (events, _) = parse_all(&lines.join("\n"));
    assert_eq!(counts(&events), (0, 0));
    let results: Vec<(Option<&str>, bool)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { output, error } => Some((output.as_deref(), *error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            (Some("ok\n3 files"), false),
            (Some("a\nb"), true),
            (None, false)
        ]
    );
    let long = "x".repeat(INPUT_PREVIEW_BYTES + 10);
    let line = format!(r#"{{"type":"tool_result","output":"{long}","error":true}}"#);
    match parse_jsonl_event(line.as_bytes()) {
        Some(AgentEvent::ToolResult {
            output: Some(text),
            error: true,
        }) => assert!(text.ends_with('…') && text.len() <= INPUT_PREVIEW_BYTES + 3),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        parse_jsonl_event(br#"{"type":"tool_result"}"#),
        Some(AgentEvent::ToolResult {
            output: None,
            error: false
        })
    ));
}

/// The results among `events`, as (text, error).
fn results(events: &[AgentEvent]) -> Vec<(Option<&str>, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { output, error } => Some((output.as_deref(), *error)),
            _ => None,
        })
        .collect()
}

/// Each result comes right after its call's events and before the next call.
fn calls_and_results(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { .. } => Some('c'),
            AgentEvent::ToolResult { .. } => Some('r'),
            _ => None,
        })
        .collect()
}

#[test]
fn codex_tool_results_are_read_from_a_real_capture() {
    // Codex 0.169.0 `exec --json` against `hyoka model-stub serve`: a command, a patch, a
    // command that fails.
    let (events, lines) = read_all(
        EventSource::CodexJson,
        &fixture("codex-0.169-tool-results.jsonl"),
    );
    assert_eq!((lines.unknown, lines.malformed), (0, 0));
    assert_eq!(counts(&events), (4, 3));
    assert_eq!(calls_and_results(&events), "crcrcr");
    assert_eq!(
        results(&events),
        [
            (Some("one\ntwo\n"), false),
            (Some("add /home/dev/project/hello.txt"), false),
            (Some("cat: missing.txt: No such file or directory\n"), true),
        ]
    );
}

#[test]
fn codex_tool_results_of_every_item_kind_come_once_per_item() {
    // A web search (no text), an MCP call's text content, a patch completed twice (one
    // result), a failed command.
    let (events, _) = read_all(EventSource::CodexJson, &fixture("codex-exec-tools.jsonl"));
    assert_eq!(
        results(&events),
        [
            (None, false),
            (Some("ClientBuilder::timeout"), false),
            (
                Some("update /home/dev/project/src/client.rs\nupdate /home/dev/project/src/lib.rs"),
                false
            ),
            (
                Some("   Compiling client v0.1.0\ntest result: FAILED\n"),
                true
            ),
        ]
    );
    // An MCP call's error, a declined command and a failed patch are errors; an update or a
    // start is no result.
    let lines = [
        r#"{"type":"item.started","item":{"id":"m","type":"mcp_tool_call","server":"s","tool":"t","arguments":{},"result":null,"error":null,"status":"in_progress"}}"#,
        r#"{"type":"item.completed","item":{"id":"m","type":"mcp_tool_call","server":"s","tool":"t","arguments":{},"result":null,"error":{"message":"server went away"},"status":"failed"}}"#,
        r#"{"type":"item.updated","item":{"id":"c","type":"command_execution","command":"rm -rf /","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
        r#"{"type":"item.completed","item":{"id":"c","type":"command_execution","command":"rm -rf /","aggregated_output":"","exit_code":null,"status":"declined"}}"#,
        r#"{"type":"item.completed","item":{"id":"p","type":"file_change","changes":[{"path":"a.rs","kind":"delete"}],"status":"failed"}}"#,
    ];
    let (events, _) = read_all(EventSource::CodexJson, &lines.join("\n"));
    assert_eq!(
        results(&events),
        [
            (Some("server went away"), true),
            (None, true),
            (Some("delete a.rs"), true)
        ]
    );
}

#[test]
fn gemini_tool_results_are_read_from_a_real_capture() {
    // Gemini CLI 0.61.0 `--output-format stream-json` against `hyoka model-stub serve`: a
    // command, a write (its result is shown as a diff: no text), a read of a missing file.
    let (events, lines) = read_all(
        EventSource::GeminiStreamJson,
        &fixture("gemini-0.61-tool-results.jsonl"),
    );
    assert_eq!((lines.unknown, lines.malformed), (0, 0));
    assert_eq!(counts(&events), (4, 3));
    assert_eq!(calls_and_results(&events), "crcrcr");
    assert_eq!(
        results(&events),
        [
            (Some("one\ntwo"), false),
            (None, false),
            (Some("File not found: /home/dev/project/missing.txt"), true),
        ]
    );
}

#[test]
fn codex_and_gemini_tool_results_are_bounded_like_claudes() {
    let long = "é".repeat(INPUT_PREVIEW_BYTES);
    let codex = format!(
        r#"{{"type":"item.completed","item":{{"id":"c","type":"command_execution","command":"cat big","aggregated_output":"{long}","exit_code":0,"status":"completed"}}}}"#
    );
    let gemini = format!(
        r#"{{"type":"tool_result","timestamp":"t","tool_id":"x","status":"success","output":"{long}"}}"#
    );
    for (source, line) in [
        (EventSource::CodexJson, codex),
        (EventSource::GeminiStreamJson, gemini),
    ] {
        let (events, _) = read_all(source, &line);
        let [(Some(text), false)] = results(&events)[..] else {
            panic!("{source:?}: {events:?}");
        };
        assert!(text.ends_with('…'), "{source:?}");
        assert!(
            text.len() <= INPUT_PREVIEW_BYTES + '…'.len_utf8(),
            "{source:?}"
        );
    }
}

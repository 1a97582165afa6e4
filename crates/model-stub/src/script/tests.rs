//! Script parsing: shapes accepted, defaults, and bad input named.

use std::time::Duration;

use super::*;

#[track_caller]
fn check(yaml: &str) -> Script {
    match Script::from_yaml(yaml) {
        Ok(script) => script,
        Err(err) => panic!("{yaml:?} was refused: {err}"),
    }
}

#[track_caller]
fn refused(yaml: &str, expected: &str) {
    match Script::from_yaml(yaml) {
        Ok(script) => panic!("{yaml:?} was accepted: {script:?}"),
        Err(err) => {
            let message = err.to_string();
            assert!(message.contains(expected), "{message:?} lacks {expected:?}");
        }
    }
}

#[test]
fn a_full_turn_reads_every_field() {
    let script = check(
        "model: m\nturns:\n  - thinking: hmm\n    text: hi\n    tools:\n      - name: Write\n        input: { file_path: a.txt, content: x }\n      - name: apply_patch\n        input: \"*** Begin Patch\"\n    usage: { input_tokens: 1, output_tokens: 2, cache_read_tokens: 3, cache_write_tokens: 4 }\n    pace: 2s\n    delay: 10ms\n    stall: { after: 3, for: 1s }\n    error: { kind: overloaded, times: 2 }\n    chunk: 4\n",
    );
    assert_eq!(script.model.as_deref(), Some("m"));
    let turn = &script.turns[0];
    assert_eq!(turn.thinking.as_deref(), Some("hmm"));
    assert_eq!(turn.text.as_deref(), Some("hi"));
    assert_eq!(turn.tools.len(), 2);
    assert!(matches!(&turn.tools[0].input, ToolInput::Json(map) if map["file_path"] == "a.txt"));
    assert_eq!(
        turn.tools[1].input,
        ToolInput::Text("*** Begin Patch".to_owned())
    );
    assert_eq!(turn.usage.all_input(), 8);
    assert_eq!(turn.pace, Duration::from_secs(2));
    assert_eq!(turn.delay, Duration::from_millis(10));
    assert_eq!(
        turn.stall,
        Some(Stall {
            after: 3,
            duration: Duration::from_secs(1)
        })
    );
    assert_eq!(
        turn.error,
        Some(ScriptedError {
            kind: ErrorKind::Overloaded,
            times: 2
        })
    );
    assert_eq!(turn.chunk, 4);
}

#[test]
fn short_forms_and_defaults() {
    let script = check("turns:\n  - { error: 429 }\n  - { error: unavailable, stall: 5s }\n");
    assert_eq!(
        script.turns[0].error,
        Some(ScriptedError {
            kind: ErrorKind::RateLimited,
            times: 1
        })
    );
    assert_eq!(
        script.turns[1].error.map(|e| e.kind),
        Some(ErrorKind::Unavailable)
    );
    assert_eq!(script.turns[1].stall.map(|s| s.after), Some(1));
    assert_eq!(script.turns[0].chunk, DEFAULT_CHUNK);
    // Past the turns, and for side requests, the script says "Done.".
    assert_eq!(script.turn(5).text.as_deref(), Some("Done."));
    assert_eq!(script.side.text.as_deref(), Some("Done."));
    assert_eq!(check("").turns.len(), 0);
}

#[test]
fn bad_scripts_are_refused_naming_what_is_wrong() {
    refused("turns:\n  - { txt: hi }\n", "txt");
    refused("turns:\n  - { pace: soon }\n", "pace");
    refused("turns:\n  - { pace: 2h }\n", "longer than an hour");
    refused("turns:\n  - { error: 418 }\n", "418");
    refused("turns:\n  - { chunk: 0 }\n", "chunk");
    refused(
        "turns:\n  - tools: [{ name: x, input: 3 }]\n",
        "tools[0].input",
    );
    refused("turns:\n  - tools: [{ name: \" \" }]\n", "needs a name");
    refused("turns: [[[\n", "invalid script");
}

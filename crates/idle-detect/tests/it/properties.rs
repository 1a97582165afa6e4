//! Chunk-boundary properties: however a stream is cut, each fact is reported in the chunk that
//! holds the byte deciding it, and the screen and verdict at the end are the same.

use std::time::Duration;

use hyoka_idle_detect::{ChunkSignals, Detector, DetectorConfig, Profile};
use proptest::prelude::*;

use crate::support::{FRAGMENTS, base_instant};

/// Facts that are decided at one byte (substantial output is a per-chunk measure, and the
/// prompt flag is combined per chunk with working, so the raw facts are compared).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Facts {
    completion: bool,
    working: bool,
    tokens: Option<u64>,
}

fn facts(s: ChunkSignals) -> Facts {
    Facts {
        completion: s.completion,
        working: s.working,
        tokens: s.tokens,
    }
}

fn detector() -> Detector {
    Detector::new(
        Profile::builtin("claude-code").expect("profile"),
        DetectorConfig::default(),
    )
}

/// Feeds `stream` cut at `cuts` and returns, per chunk, its facts and its end offset.
fn run(stream: &[u8], cuts: &[usize], t0: std::time::Instant) -> (Vec<(usize, Facts)>, Detector) {
    let mut d = detector();
    let mut out = Vec::new();
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&stream.len())) {
        let end = end.clamp(start, stream.len());
        if end > start {
            out.push((end, facts(d.output(t0, &stream[start..end]))));
        }
        start = end;
    }
    (out, d)
}

/// Merges byte-level facts into the chunks `[prev_end, end)` of another cut.
fn merge(bytes: &[(usize, Facts)], ends: &[(usize, Facts)]) -> Vec<Facts> {
    let mut merged = Vec::new();
    let mut i = 0;
    for &(end, _) in ends {
        let mut f = Facts::default();
        while i < bytes.len() && bytes[i].0 <= end {
            let b = bytes[i].1;
            f.completion |= b.completion;
            f.working |= b.working;
            if b.tokens.is_some() {
                f.tokens = b.tokens;
            }
            i += 1;
        }
        merged.push(f);
    }
    merged
}

fn stream_from(picks: &[usize]) -> Vec<u8> {
    picks
        .iter()
        .flat_map(|&i| FRAGMENTS[i % FRAGMENTS.len()].as_bytes().to_vec())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn any_split_reports_the_same_facts_screen_and_verdict(
        picks in proptest::collection::vec(0usize..64, 1..40),
        mut cuts in proptest::collection::vec(0usize..4000, 0..30),
    ) {
        let stream = stream_from(&picks);
        cuts.sort_unstable();
        let one_byte: Vec<usize> = (1..stream.len()).collect();
        let t0 = base_instant();
        let (bytes, mut by_byte) = run(&stream, &one_byte, t0);
        let (chunks, mut by_chunk) = run(&stream, &cuts, t0);
        let expected = merge(&bytes, &chunks);
        let got: Vec<Facts> = chunks.iter().map(|c| c.1).collect();
        prop_assert_eq!(got, expected);
        prop_assert_eq!(by_byte.screen().lines().to_vec(), by_chunk.screen().lines().to_vec());
        let later = t0 + Duration::from_secs(30);
        prop_assert_eq!(by_byte.verdict(later).clone(), by_chunk.verdict(later).clone());
        prop_assert_eq!(by_byte.counts().last_tokens, by_chunk.counts().last_tokens);
    }
}

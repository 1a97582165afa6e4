//! Tests of the usage arithmetic: increments add, totals replace field by field, nothing is
//! guessed.

#![allow(
    clippy::float_cmp,
    clippy::many_single_char_names,
    reason = "exact figures; n, c and k are the estimators' names"
)]

use super::*;

fn tokens(input: u64, output: u64) -> TokenUsage {
    TokenUsage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        ..TokenUsage::default()
    }
}

fn cost(usd: f64) -> TokenUsage {
    TokenUsage {
        cost_usd: Some(usd),
        ..TokenUsage::default()
    }
}

#[track_caller]
fn check(events: &[UsageEvent], expected: Option<TokenUsage>) {
    let mut meter = UsageMeter::default();
    for event in events {
        meter.apply(event);
    }
    assert_eq!(meter.usage(), expected, "{events:?}");
}

#[test]
fn increments_add_and_totals_replace_what_they_know() {
    use UsageEvent::{Increment, Total};
    check(&[], None);
    check(&[Increment(TokenUsage::default())], None);
    check(
        &[Increment(tokens(1, 2)), Increment(tokens(10, 20))],
        Some(tokens(11, 22)),
    );
    // A total replaces the tokens but, giving no cost, keeps the cost counted so far.
    let mut both = tokens(100, 200);
    both.cost_usd = Some(0.5);
    check(
        &[
            Increment(tokens(1, 2)),
            Increment(cost(0.5)),
            Total(tokens(100, 200)),
        ],
        Some(both),
    );
    // Increments after a total add to it.
    check(
        &[Total(tokens(100, 200)), Increment(tokens(1, 1))],
        Some(tokens(101, 201)),
    );
    check(&[Total(cost(0.42))], Some(cost(0.42)));
}

#[test]
fn tokens_count_every_kind_and_differences_saturate() {
    let usage = TokenUsage {
        input_tokens: Some(1),
        output_tokens: Some(2),
        cache_read_tokens: Some(30),
        cache_creation_tokens: Some(400),
        cost_usd: None,
    };
    assert_eq!(usage.tokens(), 433);
    assert_eq!(TokenUsage::default().tokens(), 0);
    assert_eq!(tokens(5, 210).since(&tokens(5, 7)), tokens(0, 203));
    assert_eq!(tokens(1, 1).since(&tokens(5, 7)), tokens(0, 0));
    assert_eq!(
        TokenUsage::total([&tokens(1, 2), &cost(0.25), &tokens(3, 4)]),
        Some(TokenUsage {
            cost_usd: Some(0.25),
            ..tokens(4, 6)
        })
    );
    assert_eq!(TokenUsage::total([]), None);
}

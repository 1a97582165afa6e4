//! Tests of shard parsing and partitioning.

use super::*;

#[track_caller]
fn check(text: &str, expected: Option<(usize, usize)>) {
    assert_eq!(
        text.parse::<Shard>().ok().map(|s| (s.index, s.count)),
        expected,
        "{text:?}"
    );
}

#[test]
fn shards_parse() {
    check("1/1", Some((1, 1)));
    check("2/4", Some((2, 4)));
    check("10000/10000", Some((10_000, 10_000)));
    for bad in [
        "0/4",
        "5/4",
        "1/0",
        "x/2",
        "1",
        "1/2/3",
        "-1/2",
        "",
        "1/10001",
        "1/1000000000000",
        "1/99999999999999999999999",
    ] {
        check(bad, None);
    }
}

#[test]
fn shards_partition_any_suite_exactly() {
    for count in 1..=7 {
        for evals in 0..30 {
            let mut owners = vec![0; evals];
            for index in 1..=count {
                let shard = Shard { index, count };
                for (position, owner) in owners.iter_mut().enumerate() {
                    if shard.includes(position) {
                        *owner += 1;
                    }
                }
            }
            assert!(
                owners.iter().all(|&n| n == 1),
                "{count} shards, {evals} evals: {owners:?}"
            );
        }
    }
}

//! Tests of the unit parsers.

use std::time::Duration;

use super::*;

#[track_caller]
fn check_size(text: &str, expected: Option<u64>) {
    assert_eq!(parse_size(text).ok(), expected, "{text:?}");
}

#[track_caller]
fn check_duration(text: &str, expected: Option<Duration>) {
    assert_eq!(parse_duration(text).ok(), expected, "{text:?}");
}

#[test]
fn sizes() {
    check_size("1048576", Some(1_048_576));
    check_size("512KiB", Some(512 * 1024));
    check_size("1MiB", Some(1 << 20));
    check_size("1MB", Some(1_000_000));
    check_size("1 mib", Some(1 << 20));
    check_size("1.5MiB", Some(3 << 19));
    check_size("0", Some(0));
    check_size("10B", Some(10));
    for bad in [
        "",
        "-1",
        "1XB",
        "MiB",
        "1.5",
        "1..5MiB",
        "99999999999999999999",
        "20000000TiB",
    ] {
        check_size(bad, None);
    }
    assert!(
        parse_size("-5MiB")
            .unwrap_err()
            .to_string()
            .contains("negative")
    );
}

#[test]
fn durations() {
    check_duration("30s", Some(Duration::from_secs(30)));
    check_duration("10m", Some(Duration::from_mins(10)));
    check_duration("1h 30m", Some(Duration::from_mins(90)));
    check_duration("250ms", Some(Duration::from_millis(250)));
    check_duration("0", Some(Duration::ZERO));
    check_duration("3650d", Some(MAX_DURATION));
    for bad in [
        "",
        "ten",
        "-5s",
        "5 parsecs",
        "10",
        "3651d",
        "9223372036854775807s",
        "18446744073709551615s",
        "99999999999999999999999s",
    ] {
        check_duration(bad, None);
    }
    assert!(
        parse_duration("9223372036854775807s")
            .unwrap_err()
            .to_string()
            .contains("at most 10 years")
    );
    assert!(
        parse_duration("soon")
            .unwrap_err()
            .to_string()
            .contains("\"soon\"")
    );
}

#[test]
fn costs() {
    for (text, expected) in [("0.1", Some(0.1)), ("$2.50", Some(2.5)), ("0", Some(0.0))] {
        assert_eq!(parse_cost(text).ok(), expected, "{text:?}");
    }
    for bad in ["", "-1", "$", "lots", "inf", "NaN", "1e999"] {
        assert!(parse_cost(bad).is_err(), "{bad:?}");
    }
}

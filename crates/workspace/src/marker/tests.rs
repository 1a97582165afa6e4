//! Unit tests for the marker payload.

use super::{Marker, MarkerOwner, read_marker, write};

fn marker(eval: &str) -> Marker {
    Marker {
        run_id: "20261129-211241-dq3fi3".to_owned(),
        eval_id: eval.to_owned(),
        instance: Some("0123456789abcdef".to_owned()),
        owner: Some(MarkerOwner::pid(4_194_303)),
        created_unix: 0,
        kept: false,
    }
}

#[test]
fn the_payload_round_trips_and_stays_in_the_inode() {
    let m = marker("main");
    let payload = m.encode().unwrap();
    // ext4 keeps an attribute of this name in the inode up to 56 bytes of value: true for a
    // default run id, eval `main`, an instance token and the largest pid.
    assert!(payload.len() <= 56, "{} bytes: {payload:?}", payload.len());
    assert_eq!(Marker::decode(payload.as_bytes()), Some(m));
}

#[test]
fn the_kept_mark_round_trips_and_nothing_else_follows_it() {
    let m = Marker {
        kept: true,
        ..marker("main")
    };
    let payload = m.encode().unwrap();
    assert!(payload.ends_with(" kept"), "{payload}");
    assert_eq!(Marker::decode(payload.as_bytes()), Some(m));
    for bad in [&b"h3 r e i 5 kept x"[..], b"h3 r e i 5 keep"] {
        assert_eq!(
            Marker::decode(bad),
            None,
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn a_marker_without_instance_or_owner_round_trips() {
    let m = Marker {
        instance: None,
        owner: None,
        ..marker("e1")
    };
    assert_eq!(Marker::decode(m.encode().unwrap().as_bytes()), Some(m));
    let spaced = Marker {
        instance: Some("a b".to_owned()),
        ..marker("e1")
    };
    assert!(spaced.encode().is_err());
}

#[test]
fn the_earlier_formats_are_still_read() {
    let v1 = "hyoka-workspace v1\nrun r1\neval e1\nowner 12 2 boot\ncreated 1700000001\n";
    assert_eq!(
        Marker::decode(v1.as_bytes()),
        Some(Marker {
            run_id: "r1".to_owned(),
            eval_id: "e1".to_owned(),
            instance: None,
            owner: Some(MarkerOwner {
                pid: 12,
                start_ticks: Some(2),
                boot_id: Some("boot".to_owned()),
            }),
            created_unix: 1_700_000_001,
            kept: false,
        })
    );
    let v2 = "hyoka2 r1 main 1234567 123456789";
    let m = Marker::decode(v2.as_bytes()).unwrap();
    assert_eq!(
        m.owner,
        Some(MarkerOwner {
            pid: 1_234_567,
            start_ticks: Some(123_456_789),
            boot_id: None
        })
    );
    assert_eq!((m.run_id.as_str(), m.instance), ("r1", None));
}

#[test]
fn foreign_or_broken_payloads_are_not_markers() {
    for bad in [
        &b""[..],
        b"hyoka2",
        b"hyoka2 ",
        b"hyoka2  e o",
        b"hyoka3 r e o",
        b"h3 r e i",
        b"h3 r e i x",
        b"h3 r e i 5 6",
        b"hyoka2r e o",
        b"\xff\xfe",
        b"hyoka-workspace v1\neval e\n",
        b"hyoka-workspace v1\nrun r\ncreated soon\n",
    ] {
        assert_eq!(
            Marker::decode(bad),
            None,
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn read_marker_takes_the_creation_time_from_the_directory() {
    let dir = tempfile::tempdir().expect("scratch");
    let fd = std::fs::File::open(dir.path()).expect("open");
    write(&fd, dir.path(), &marker("main")).expect("mark");
    let read = read_marker(dir.path()).expect("readable").expect("marked");
    assert_eq!(read.run_id, "20261129-211241-dq3fi3");
    assert!(read.created_unix > 1_700_000_000, "{}", read.created_unix);
}

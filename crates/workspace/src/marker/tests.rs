//! Unit tests for the marker payload.

use super::{Marker, read_marker, write};

fn marker(eval: &str) -> Marker {
    Marker {
        run_id: "20261129-211241-dq3fi3".to_owned(),
        eval_id: eval.to_owned(),
        owner: "1234567 123456789".to_owned(),
        created_unix: 0,
    }
}

#[test]
fn the_payload_round_trips_and_stays_in_the_inode() {
    let m = marker("main");
    let payload = m.encode();
    // ext4 keeps an attribute of this name in the inode up to 56 bytes of value.
    assert!(payload.len() <= 56, "{} bytes: {payload:?}", payload.len());
    assert_eq!(Marker::decode(payload.as_bytes()), Some(m));
}

#[test]
fn an_owner_with_spaces_and_newlines_survives() {
    let mut m = marker("e1");
    m.owner = "12 34 boot-id\nmore".to_owned();
    let back = Marker::decode(m.encode().as_bytes()).expect("decodes");
    assert_eq!(back.owner, "12 34 boot-id more");
    assert_eq!(back.run_id, m.run_id);
    assert_eq!(back.eval_id, "e1");
}

#[test]
fn the_first_format_is_still_read() {
    let v1 = "hyoka-workspace v1\nrun r1\neval e1\nowner 1 2 boot\ncreated 1700000001\n";
    assert_eq!(
        Marker::decode(v1.as_bytes()),
        Some(Marker {
            run_id: "r1".to_owned(),
            eval_id: "e1".to_owned(),
            owner: "1 2 boot".to_owned(),
            created_unix: 1_700_000_001,
        })
    );
}

#[test]
fn foreign_or_broken_payloads_are_not_markers() {
    for bad in [
        &b""[..],
        b"hyoka2",
        b"hyoka2 ",
        b"hyoka2  e o",
        b"hyoka3 r e o",
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

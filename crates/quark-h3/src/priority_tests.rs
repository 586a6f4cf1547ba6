use super::*;

fn p(urgency: u8, incremental: bool) -> Priority {
    Priority {
        urgency,
        incremental,
    }
}

#[test]
fn urgency_and_incremental() {
    assert_eq!(parse(b"u=0"), p(0, false));
    assert_eq!(parse(b"u=7, i"), p(7, true));
    assert_eq!(parse(b"i, u=5"), p(5, true));
    assert_eq!(parse(b"i=?0,u=1"), p(1, false));
    assert_eq!(parse(b"i=?1"), p(3, true));
    assert_eq!(parse(b""), p(3, false));
    assert_eq!(parse(b"  u=2  "), p(2, false));
    // The last of a repeated key counts.
    assert_eq!(parse(b"u=1, u=6"), p(6, false));
}

#[test]
fn unknown_keys_and_parameters_are_ignored() {
    assert_eq!(
        parse(b"u=1, foo=\"bar\", x=:AAA=:, y=(1 2 a);q=1"),
        p(1, false)
    );
    assert_eq!(parse(b"u=2;a=1;b, i;c=?0"), p(2, true));
    assert_eq!(parse(b"v=2.5, u=4, z=tok/en*"), p(4, false));
}

#[test]
fn bad_values_fall_back_to_defaults() {
    // Out of range or of the wrong type: that parameter is ignored.
    assert_eq!(parse(b"u=8, i"), p(3, true));
    assert_eq!(parse(b"u=-1"), p(3, false));
    assert_eq!(parse(b"u=1.5"), p(3, false));
    assert_eq!(parse(b"u=\"1\""), p(3, false));
    assert_eq!(parse(b"u=0, i=1"), p(0, false));
    assert_eq!(parse(b"u=0, i=yes"), p(0, false));
    assert_eq!(parse(b"u=1, i=?1, u=9"), p(3, true));
}

#[test]
fn a_malformed_dictionary_is_ignored_whole() {
    for bad in [
        &b"u=1,"[..],
        b"U=1",
        b"u=1;",
        b"u=1 i",
        b"u==1",
        b",u=1",
        b"u=1234567890123456",
        b"u=\"open",
        b"u=?2",
        b"u=(1 2",
        b"\xff",
    ] {
        assert!(!is_valid(bad), "{:?}", String::from_utf8_lossy(bad));
        assert_eq!(parse(bad), Priority::default());
    }
}

#[test]
fn format_round_trips() {
    for u in 0..8 {
        for i in [false, true] {
            assert_eq!(parse(format(p(u, i)).as_bytes()), p(u, i));
        }
    }
    assert_eq!(format(p(0, true)), "u=0, i");
}

#[test]
fn update_frame_round_trips() {
    let mut out = Vec::new();
    put_update(&mut out, 8, p(1, true));
    let (h, n) = crate::frame::parse_header(&out).unwrap();
    assert_eq!(h.ty, PRIORITY_UPDATE_REQUEST);
    assert_eq!(h.len as usize, out.len() - n);
    let (id, value) = parse_update(&out[n..]).unwrap();
    assert_eq!((id, value), (8, &b"u=1, i"[..]));
    assert_eq!(parse_update(&[]), None);
    assert_eq!(parse_update(&[0x40]), None);
}

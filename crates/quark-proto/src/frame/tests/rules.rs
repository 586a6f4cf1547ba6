//! Decoding rules: type encoding, truncation, per-frame limits, and RFC 9000
//! Table 3.

use super::*;

#[test]
fn frame_type_encoding() {
    // Non-minimal types are a PROTOCOL_VIOLATION carrying the type.
    assert_err(&[0x40, 0x01], PV, 0x01);
    assert_err(&[0x40, 0x00], PV, 0x00);
    assert_err(&[0x80, 0x00, 0x00, 0xaf, 0, 0, 0, 0], PV, 0xaf);
    // Unknown types, short and long.
    assert_err(&[0x21], FEE, 0x21);
    assert_err(&[0x2f], FEE, 0x2f);
    assert_err(&[0x41, 0x00], FEE, 0x100);
    assert_err(&[0x40, 0xac], FEE, 0xac);
    // A truncated type: the type is not known yet.
    assert_err(&[0x40], FEE, 0);
}

#[test]
fn truncation_carries_the_frame_type() {
    assert_err(&[0x10, 0x80, 0x00], FEE, 0x10);
    assert_err(&[0x1a, 1, 2, 3], FEE, 0x1a);
    assert_err(&[0x0e, 0x00, 0x05, b'x'], FEE, 0x0e);
    assert_err(&[0x18, 0x01, 0x00, 0x04, 1, 2, 3, 4, 0, 0], FEE, 0x18);
    assert_err(&[0x03, 0x05, 0x00, 0x00, 0x00, 0x01, 0x02], FEE, 0x03);
}

#[test]
fn iteration_stops_after_the_first_error() {
    let mut it = Iter::new(&[0x01, 0x21, 0x01], OneRtt);
    assert_eq!(it.next(), Some(Ok(Frame::Ping)));
    assert!(matches!(it.next(), Some(Err(_))));
    assert_eq!(it.next(), None);
}

#[test]
fn stream_and_crypto_end_limit() {
    let max = crate::VarInt::MAX.into_inner();
    let mut bytes = vec![0x0e, 0x00];
    put_varint(&mut bytes, max);
    let mut ok = bytes.clone();
    ok.push(0x00);
    assert!(matches!(decode_one(&ok), Frame::Stream(s) if s.offset == max));
    bytes.extend_from_slice(&[0x01, b'x']);
    assert_err(&bytes, FEE, 0x0e);
    // Without LEN.
    let mut bytes = vec![0x0c, 0x00];
    put_varint(&mut bytes, max);
    bytes.push(b'x');
    assert_err(&bytes, FEE, 0x0c);

    let mut bytes = vec![0x06];
    put_varint(&mut bytes, max - 1);
    bytes.extend_from_slice(&[0x02, b'x', b'y']);
    assert_err(&bytes, FEE, 0x06);
}

#[test]
fn stream_count_limit() {
    for ty in [0x12u8, 0x13, 0x16, 0x17] {
        let mut ok = vec![ty];
        put_varint(&mut ok, 1 << 60);
        decode_one(&ok);
        let mut bad = vec![ty];
        put_varint(&mut bad, (1 << 60) + 1);
        assert_err(&bad, FEE, u64::from(ty));
    }
}

#[test]
fn new_connection_id_rules() {
    let frame = |seq: u8, rpt: u8, len: u8| {
        let mut b = vec![0x18, seq, rpt, len];
        b.extend(std::iter::repeat_n(0xab, usize::from(len)));
        b.extend_from_slice(&[0; 16]);
        b
    };
    decode_one(&frame(1, 1, 1));
    decode_one(&frame(1, 0, 20));
    assert_err(&frame(1, 0, 0), FEE, 0x18);
    assert_err(&frame(1, 0, 21), FEE, 0x18);
    assert_err(&frame(1, 2, 8), FEE, 0x18);
}

#[test]
fn new_token_must_not_be_empty() {
    assert_err(&[0x07, 0x00], FEE, 0x07);
    assert_eq!(
        decode_one(&[0x07, 0x01, 0x09]),
        Frame::NewToken { token: &[9] }
    );
}

/// One valid frame of each known type.
fn samples() -> Vec<(u64, Vec<u8>)> {
    let mut out: Vec<(u64, Vec<u8>)> = vec![
        (0x00, vec![0x00]),
        (0x01, vec![0x01]),
        (0x02, vec![0x02, 0x00, 0x00, 0x00, 0x00]),
        (0x03, vec![0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]),
        (0x04, vec![0x04, 0x00, 0x00, 0x00]),
        (0x05, vec![0x05, 0x00, 0x00]),
        (0x06, vec![0x06, 0x00, 0x01, 0xff]),
        (0x07, vec![0x07, 0x01, 0xff]),
    ];
    for ty in 0x08..=0x0f {
        let mut b = vec![ty as u8, 0x00];
        if ty & 0x04 != 0 {
            b.push(0x01);
        }
        if ty & 0x02 != 0 {
            b.push(0x01);
        }
        b.push(0xee);
        out.push((ty, b));
    }
    for ty in 0x10..=0x17u8 {
        let mut b = vec![ty, 0x01];
        if matches!(ty, 0x11 | 0x15) {
            b.push(0x02);
        }
        out.push((u64::from(ty), b));
    }
    let mut ncid = vec![0x18, 0x01, 0x00, 0x01, 0x07];
    ncid.extend_from_slice(&[0; 16]);
    out.extend([
        (0x18, ncid),
        (0x19, vec![0x19, 0x00]),
        (0x1a, vec![0x1a, 0, 0, 0, 0, 0, 0, 0, 0]),
        (0x1b, vec![0x1b, 0, 0, 0, 0, 0, 0, 0, 0]),
        (0x1c, vec![0x1c, 0x00, 0x00, 0x00]),
        (0x1d, vec![0x1d, 0x00, 0x00]),
        (0x1e, vec![0x1e]),
        (0x1f, vec![0x1f]),
        (0x30, vec![0x30, 0x01]),
        (0x31, vec![0x31, 0x01, 0x01]),
        (0xaf, vec![0x40, 0xaf, 0x00, 0x00, 0x00, 0x00]),
    ]);
    out
}

#[test]
fn permission_table() {
    // RFC 9000 Table 3 (plus §12.5 for 0-RTT, RFC 9221 for DATAGRAM, and the
    // ACK-frequency draft), as "I H 0 1" letters.
    let allowed = |ty: u64| -> &'static str {
        match ty {
            0x00 | 0x01 => "IH01",
            0x02 | 0x03 | 0x06 => "IH_1",
            0x1c => "IH01",
            0x07 | 0x19 | 0x1b | 0x1e | 0x1f | 0xaf => "___1",
            _ => "__01",
        }
    };
    let samples = samples();
    assert_eq!(samples.len(), 0x20 + 3, "one sample per known type");
    for (ty, bytes) in samples {
        for (kind, letter) in KINDS.into_iter().zip(allowed(ty).chars()) {
            let result: Vec<_> = Iter::new(&bytes, kind).collect();
            if letter == '_' {
                let e = decode_err(&bytes, kind);
                assert_eq!((e.code, e.frame_type), (PV, ty), "{ty:#x} in {kind:?}");
            } else {
                assert_eq!(result.len(), 1, "{ty:#x} in {kind:?}");
                let frame = result[0]
                    .as_ref()
                    .unwrap_or_else(|e| panic!("{ty:#x} in {kind:?}: {e}"));
                // `ty()` reports the type, except where encode picks another form.
                if !matches!(ty, 0x08..=0x0f | 0x30) {
                    assert_eq!(frame.ty().0, ty);
                }
            }
        }
    }
}

#[test]
fn ack_eliciting() {
    assert!(Frame::Ping.is_ack_eliciting());
    assert!(Frame::ImmediateAck.is_ack_eliciting());
    assert!(Frame::Datagram { data: b"" }.is_ack_eliciting());
    assert!(!Frame::Padding { len: 1 }.is_ack_eliciting());
    let ack = decode_one(&[0x02, 0x00, 0x00, 0x00, 0x00]);
    assert!(!ack.is_ack_eliciting());
    assert!(!decode_one(&[0x1d, 0x00, 0x00]).is_ack_eliciting());
}

#[test]
fn frame_error_converts_to_transport_error() {
    let e: TransportError = decode_err(&[0x21], OneRtt).into();
    assert_eq!(e.code, FEE);
    assert_eq!(e.frame_type, Some(0x21));
}

/// `decode::frame` decodes STREAM frames in 0-RTT and 1-RTT packets without
/// the type checks of `decode::checked` (issue #30): for every STREAM type,
/// each truncation of a frame and a frame with trailing bytes, `Iter` yields
/// what `decode::checked` yields, and leaves the same bytes; in Initial and
/// Handshake packets the type is still refused.
#[test]
fn stream_fast_path_matches_full_decode() {
    for ty in 0x08u8..=0x0f {
        let mut whole = vec![ty, 0x41, 0x02];
        if ty & 0x04 != 0 {
            put_varint(&mut whole, (1 << 62) - 3);
        }
        if ty & 0x02 != 0 {
            whole.push(0x02);
        }
        whole.extend_from_slice(b"ab");
        let mut trailing = whole.clone();
        trailing.push(0x01);
        let inputs = (1..=whole.len()).map(|n| &whole[..n]);
        for bytes in inputs.chain([&trailing[..]]) {
            for kind in KINDS {
                let mut r = crate::coding::Reader::new(bytes);
                let full = decode::checked(&mut r, kind);
                let left = &bytes[if full.is_ok() {
                    r.position()
                } else {
                    bytes.len()
                }..];
                let mut it = Iter::new(bytes, kind);
                assert_eq!(it.next(), Some(full), "{bytes:02x?} in {kind:?}");
                assert_eq!(it.rest, left, "{bytes:02x?} in {kind:?}");
            }
        }
        assert_eq!(decode_err(&whole, Initial).code, PV);
        assert_eq!(decode_err(&whole, Handshake).code, PV);
    }
}

//! DATAGRAM frames (RFC 9221 §4): both types, sizes around the length
//! field's varint boundaries, malformed and misplaced frames.

use super::*;

#[test]
fn round_trips_at_length_boundaries() {
    for len in [0, 1, 63, 64, 1200, 16383, 16384, 65_000] {
        let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        let frame = Frame::Datagram { data: &data };
        let bytes = encode(&frame);
        // 0x31: type, length varint, payload.
        assert_eq!(bytes[0], 0x31);
        assert_eq!(
            bytes.len(),
            1 + crate::varint::varint_size(len as u64) + len
        );
        assert_eq!(decode_one(&bytes), frame, "len {len}");
    }
}

#[test]
fn without_length_extends_to_packet_end() {
    // 0x30 then a PING byte: the PING is payload, not a frame.
    assert_eq!(
        decode_one(&[0x30, 0x01, 0x02]),
        Frame::Datagram {
            data: &[0x01, 0x02]
        }
    );
    assert_eq!(decode_one(&[0x30]), Frame::Datagram { data: &[] });
    // With a length, what follows is the next frame.
    let frames: Vec<_> = Iter::new(&[0x31, 0x01, 0xaa, 0x01], OneRtt)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(frames, [Frame::Datagram { data: &[0xaa] }, Frame::Ping]);
}

#[test]
fn malformed() {
    let fee = TransportErrorCode::FRAME_ENCODING_ERROR;
    // Length beyond the packet, missing length, truncated length varint.
    assert_err(&[0x31, 0x05, 1, 2], fee, 0x31);
    assert_err(&[0x31], fee, 0x31);
    assert_err(&[0x31, 0x40], fee, 0x31);
    // Type 0x30 in a two-byte varint is not minimal.
    assert_err(
        &[0x40, 0x30, 1],
        TransportErrorCode::PROTOCOL_VIOLATION,
        0x30,
    );
}

#[test]
fn only_in_0rtt_and_1rtt() {
    for ty in [0x30u8, 0x31] {
        let bytes = [ty, 0x00];
        for kind in [Initial, Handshake] {
            let e = decode_err(&bytes, kind);
            assert_eq!(
                (e.code, e.frame_type),
                (TransportErrorCode::PROTOCOL_VIOLATION, u64::from(ty)),
                "{ty:#x} in {kind:?}"
            );
        }
        for kind in [ZeroRtt, OneRtt] {
            assert!(
                Iter::new(&bytes, kind).all(|f| f.is_ok()),
                "{ty:#x} in {kind:?}"
            );
        }
    }
}

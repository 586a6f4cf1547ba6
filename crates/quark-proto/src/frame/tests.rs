//! Byte-exact vectors (worked out by hand from the RFC 9000 §19 layouts), the
//! decoding rules, and the permission table.

use super::*;
use crate::types::PacketKind::{Handshake, Initial, OneRtt, ZeroRtt};
use crate::varint::put_varint;

const KINDS: [PacketKind; 4] = [Initial, Handshake, ZeroRtt, OneRtt];

fn encode(frame: &Frame<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    frame.encode(&mut out);
    assert_eq!(out.len(), frame.encoded_len(), "{frame:?}");
    out
}

fn decode_one(bytes: &[u8]) -> Frame<'_> {
    let mut it = Iter::new(bytes, OneRtt);
    let frame = it.next().expect("one frame").expect("valid frame");
    assert!(it.next().is_none(), "trailing data after {frame:?}");
    frame
}

/// Encodes to `bytes`, and `bytes` decodes back to the frame.
fn vector(frame: Frame<'_>, bytes: &[u8]) {
    assert_eq!(encode(&frame), bytes, "{frame:?}");
    assert_eq!(decode_one(bytes), frame);
}

fn decode_err(bytes: &[u8], kind: PacketKind) -> FrameError {
    Iter::new(bytes, kind)
        .find_map(Result::err)
        .unwrap_or_else(|| panic!("{bytes:02x?} decoded without error"))
}

fn assert_err(bytes: &[u8], code: TransportErrorCode, frame_type: u64) {
    let e = decode_err(bytes, OneRtt);
    assert_eq!(
        (e.code, e.frame_type),
        (code, frame_type),
        "{bytes:02x?}: {e}"
    );
}

const FEE: TransportErrorCode = TransportErrorCode::FRAME_ENCODING_ERROR;
const PV: TransportErrorCode = TransportErrorCode::PROTOCOL_VIOLATION;

#[test]
fn simple_vectors() {
    vector(Frame::Ping, &[0x01]);
    vector(Frame::HandshakeDone, &[0x1e]);
    vector(Frame::ImmediateAck, &[0x1f]);
    // 1_000_000 = 0x0f4240 needs the 4-byte form (prefix 0b10).
    vector(Frame::MaxData(1_000_000), &[0x10, 0x80, 0x0f, 0x42, 0x40]);
    vector(
        Frame::MaxStreams {
            dir: Dir::Uni,
            max: 100,
        },
        &[0x13, 0x40, 0x64],
    );
    vector(
        Frame::ResetStream(ResetStream {
            id: StreamId(3),
            error_code: 7,
            final_size: 16384,
        }),
        &[0x04, 0x03, 0x07, 0x80, 0x00, 0x40, 0x00],
    );
    vector(
        Frame::PathChallenge([1, 2, 3, 4, 5, 6, 7, 8]),
        &[0x1a, 1, 2, 3, 4, 5, 6, 7, 8],
    );
    vector(Frame::Datagram { data: b"hi" }, &[0x31, 0x02, b'h', b'i']);
    vector(Frame::Padding { len: 3 }, &[0, 0, 0]);
}

#[test]
fn stream_vectors() {
    // OFF|LEN|FIN = 0x0f; offset 1000 = 0x3e8 in the 2-byte form.
    vector(
        Frame::Stream(Stream {
            id: StreamId(4),
            offset: 1000,
            fin: true,
            data: b"abc",
        }),
        &[0x0f, 0x04, 0x43, 0xe8, 0x03, b'a', b'b', b'c'],
    );
    // Offset 0: no OFF bit.
    vector(
        Frame::Stream(Stream {
            id: StreamId(0),
            offset: 0,
            fin: false,
            data: b"",
        }),
        &[0x0a, 0x00, 0x00],
    );
    // Without LEN the data runs to the end of the packet.
    assert_eq!(
        decode_one(&[0x0d, 0x01, 0x05, b'x', b'y']),
        Frame::Stream(Stream {
            id: StreamId(1),
            offset: 5,
            fin: true,
            data: b"xy",
        })
    );
    assert_eq!(
        decode_one(&[0x30, 1, 2, 3]),
        Frame::Datagram { data: &[1, 2, 3] }
    );
}

#[test]
fn stream_and_crypto_headers() {
    let mut out = Vec::new();
    encode_stream_header(&mut out, StreamId(4), 1000, 3, true, true);
    assert_eq!(out, [0x0f, 0x04, 0x43, 0xe8, 0x03]);
    assert_eq!(stream_header_len(StreamId(4), 1000, 3, true), out.len());

    let mut out = Vec::new();
    encode_stream_header(&mut out, StreamId(8), 0, 70, false, false);
    assert_eq!(out, [0x08, 0x08]);
    assert_eq!(stream_header_len(StreamId(8), 0, 70, false), 2);
    out.extend_from_slice(&[9; 70]);
    let Frame::Stream(s) = decode_one(&out) else {
        panic!()
    };
    assert_eq!(
        (s.id, s.offset, s.fin, s.data.len()),
        (StreamId(8), 0, false, 70)
    );

    // 300 = 0x12c in the 2-byte form.
    let mut out = Vec::new();
    encode_crypto_header(&mut out, 0, 300);
    assert_eq!(out, [0x06, 0x00, 0x41, 0x2c]);
    assert_eq!(crypto_header_len(0, 300), 4);
    assert_eq!(crypto_header_len(1 << 30, 1), 10);
}

#[test]
fn ack_vectors() {
    // Largest 100 (2-byte form), delay 10, one more range, first range 2 (98..=100);
    // then gap 3, length 4: largest = 98 - 3 - 2 = 93, smallest = 89.
    let bytes = [0x02, 0x40, 0x64, 0x0a, 0x01, 0x02, 0x03, 0x04];
    let ack = Ack {
        largest: 100,
        delay: 10,
        first_range: 2,
        ranges: &[0x03, 0x04],
        range_count: 1,
        ecn: None,
    };
    vector(Frame::Ack(ack.clone()), &bytes);
    assert_eq!(ack.iter().collect::<Vec<_>>(), [98..=100, 89..=93]);
    assert_eq!(ack.smallest(), 89);

    let mut out = Vec::new();
    let n = encode_ack(&mut out, [98..101, 89..94].into_iter(), 10, None, 8, 100);
    assert_eq!((n, &out[..]), (bytes.len(), &bytes[..]));

    let ecn = EcnCounts {
        ect0: 1,
        ect1: 0,
        ce: 5,
    };
    let mut with_ecn = bytes.to_vec();
    with_ecn[0] = 0x03;
    with_ecn.extend_from_slice(&[0x01, 0x00, 0x05]);
    vector(
        Frame::Ack(Ack {
            ecn: Some(ecn),
            ..ack
        }),
        &with_ecn,
    );
    let mut out = Vec::new();
    encode_ack(
        &mut out,
        [98..101, 89..94].into_iter(),
        10,
        Some(&ecn),
        8,
        100,
    );
    assert_eq!(out, with_ecn);
}

#[test]
fn close_vectors() {
    vector(
        Frame::Close(Close {
            error_code: 0x0a,
            frame_type: Some(0x08),
            reason: b"bad",
        }),
        &[0x1c, 0x0a, 0x08, 0x03, b'b', b'a', b'd'],
    );
    // 0x1234 in the 2-byte form is 0x5234.
    vector(
        Frame::Close(Close {
            error_code: 0x1234,
            frame_type: None,
            reason: b"",
        }),
        &[0x1d, 0x52, 0x34, 0x00],
    );
}

#[test]
fn new_connection_id_vector() {
    let mut bytes = vec![0x18, 0x02, 0x01, 0x04, 0xaa, 0xbb, 0xcc, 0xdd];
    bytes.extend_from_slice(&[0x11; 16]);
    vector(
        Frame::NewConnectionId(NewConnectionId {
            seq: 2,
            retire_prior_to: 1,
            cid: ConnectionId::new(&[0xaa, 0xbb, 0xcc, 0xdd]).unwrap(),
            reset_token: [0x11; 16],
        }),
        &bytes,
    );
}

#[test]
fn ack_frequency_vector() {
    // Type 0xaf needs the 2-byte form 0x40af; 25000 µs needs the 4-byte form.
    vector(
        Frame::AckFrequency(AckFrequency {
            seq: 1,
            ack_eliciting_threshold: 9,
            request_max_ack_delay: 25_000,
            reordering_threshold: 3,
        }),
        &[0x40, 0xaf, 0x01, 0x09, 0x80, 0x00, 0x61, 0xa8, 0x03],
    );
    // 2^14 ms is an invalid max_ack_delay.
    assert_err(
        &[0x40, 0xaf, 0x01, 0x09, 0x80, 0xfa, 0x00, 0x00, 0x03],
        PV,
        0xaf,
    );
    let just_below = 16_383_999u64;
    let mut ok = vec![0x40, 0xaf, 0x01, 0x09];
    put_varint(&mut ok, just_below);
    ok.push(0x00);
    assert!(
        matches!(decode_one(&ok), Frame::AckFrequency(f) if f.request_max_ack_delay == just_below)
    );
}

#[test]
fn padding_runs_collapse() {
    let bytes = [0, 0, 0, 0x01, 0, 0];
    let frames: Vec<_> = Iter::new(&bytes, Initial).map(Result::unwrap).collect();
    assert_eq!(
        frames,
        [
            Frame::Padding { len: 3 },
            Frame::Ping,
            Frame::Padding { len: 2 }
        ]
    );
    assert!(Iter::new(&[], OneRtt).next().is_none());
}

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

#[test]
fn ack_underflow_is_rejected() {
    // First range larger than largest.
    assert_err(&[0x02, 0x05, 0x00, 0x00, 0x06], FEE, 0x02);
    decode_one(&[0x02, 0x05, 0x00, 0x00, 0x05]);
    // Gap below zero: 5 - 4 - 2 < 0.
    assert_err(&[0x02, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00], FEE, 0x02);
    // Gap reaching exactly 0, then a length below zero.
    decode_one(&[0x02, 0x05, 0x00, 0x01, 0x00, 0x03, 0x00]);
    assert_err(&[0x02, 0x05, 0x00, 0x01, 0x00, 0x03, 0x01], FEE, 0x02);
}

#[test]
fn ack_range_count_is_bounded_by_the_packet() {
    // A range count of 2^62-1 with four bytes left: rejected without looping.
    let mut bytes = vec![0x02, 0x40, 0x64, 0x00];
    put_varint(&mut bytes, crate::VarInt::MAX.into_inner());
    bytes.extend_from_slice(&[0x00, 0x00, 0x00, 0x00, 0x00]);
    assert_err(&bytes, FEE, 0x02);
    // Two pairs promised, one present.
    assert_err(&[0x02, 0x40, 0x64, 0x00, 0x02, 0x00, 0x00, 0x00], FEE, 0x02);
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

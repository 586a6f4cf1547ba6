//! Frame codec tests: byte-exact vectors (worked out by hand from the RFC 9000
//! §19 layouts) here; decoding rules and the permission table in `rules`; ACK
//! ranges in `ack`; property tests in `props`.

mod ack;
mod datagram;
mod props;
mod rules;

use super::*;
use proptest::prelude::*;

use crate::types::PacketKind::{Handshake, Initial, OneRtt, ZeroRtt};
use crate::varint::{VarInt, put_varint};

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

const MAX: u64 = VarInt::MAX.into_inner();

/// Varints of every encoded size.
fn varint() -> impl Strategy<Value = u64> {
    prop_oneof![
        0..64u64,
        64..16384u64,
        16384..(1u64 << 30),
        (1u64 << 30)..=MAX
    ]
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

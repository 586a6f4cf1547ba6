//! Property tests: every frame variant round-trips, ACK encoding honours its
//! limits, and arbitrary or mutated input never panics.

use proptest::collection::vec;
use proptest::prelude::*;

use super::*;
use crate::varint::{VarInt, put_varint};

const MAX: u64 = VarInt::MAX.into_inner();
const KINDS: [PacketKind; 4] = [
    PacketKind::Initial,
    PacketKind::Handshake,
    PacketKind::ZeroRtt,
    PacketKind::OneRtt,
];
const VARIANTS: u8 = 23;

/// Owned material a [`Frame`] of variant `variant` is built from.
#[derive(Clone, Debug)]
struct Spec {
    variant: u8,
    v: [u64; 4],
    flag: bool,
    bytes: Vec<u8>,
    fixed: [u8; 20],
    /// Encoded (Gap, Length) pairs, their count, and the span they cover.
    ack_ranges: Vec<u8>,
    ack_count: u64,
    ack_span: u64,
}

/// Varints of every encoded size.
fn varint() -> impl Strategy<Value = u64> {
    prop_oneof![
        0..64u64,
        64..16384u64,
        16384..(1u64 << 30),
        (1u64 << 30)..=MAX
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0..VARIANTS,
        proptest::array::uniform4(varint()),
        any::<bool>(),
        vec(any::<u8>(), 0..48),
        any::<[u8; 20]>(),
        vec((0..1u64 << 20, 0..1u64 << 20), 0..12),
    )
        .prop_map(|(variant, v, flag, bytes, fixed, pairs)| {
            let mut ack_ranges = Vec::new();
            let mut ack_span = 0;
            for &(gap, len) in &pairs {
                put_varint(&mut ack_ranges, gap);
                put_varint(&mut ack_ranges, len);
                ack_span += gap + 2 + len;
            }
            Spec {
                variant,
                v,
                flag,
                bytes,
                fixed,
                ack_ranges,
                ack_count: pairs.len() as u64,
                ack_span,
            }
        })
}

/// A valid frame of the spec's variant.
fn build(s: &Spec) -> Frame<'_> {
    let [a, b, c, d] = s.v;
    let dir = if s.flag { Dir::Bi } else { Dir::Uni };
    // An offset such that offset + data length stays within 2^62-1.
    let offset = |len: usize| {
        if c % 4 == 0 {
            0
        } else {
            a % (MAX - len as u64 + 1)
        }
    };
    match s.variant {
        0 => Frame::Padding {
            len: 1 + (a % 1400) as usize,
        },
        1 => Frame::Ping,
        2 => {
            let first_range = b % (1 << 20);
            let needed = s.ack_span + first_range;
            Frame::Ack(Ack {
                largest: needed + a % (MAX - needed + 1),
                delay: c,
                first_range,
                ranges: &s.ack_ranges,
                range_count: s.ack_count,
                ecn: s.flag.then_some(EcnCounts {
                    ect0: b,
                    ect1: c,
                    ce: d,
                }),
            })
        }
        3 => Frame::ResetStream(ResetStream {
            id: StreamId(a),
            error_code: b,
            final_size: c,
        }),
        4 => Frame::StopSending(StopSending {
            id: StreamId(a),
            error_code: b,
        }),
        5 => Frame::Crypto(Crypto {
            offset: offset(s.bytes.len()),
            data: &s.bytes,
        }),
        6 => Frame::NewToken {
            token: if s.bytes.is_empty() {
                &s.fixed
            } else {
                &s.bytes
            },
        },
        7 => Frame::Stream(Stream {
            id: StreamId(b),
            offset: offset(s.bytes.len()),
            fin: s.flag,
            data: &s.bytes,
        }),
        8 => Frame::MaxData(a),
        9 => Frame::MaxStreamData {
            id: StreamId(a),
            max: b,
        },
        10 => Frame::MaxStreams {
            dir,
            max: a % ((1 << 60) + 1),
        },
        11 => Frame::DataBlocked { limit: a },
        12 => Frame::StreamDataBlocked {
            id: StreamId(a),
            limit: b,
        },
        13 => Frame::StreamsBlocked {
            dir,
            limit: a % ((1 << 60) + 1),
        },
        14 => Frame::NewConnectionId(NewConnectionId {
            seq: a,
            retire_prior_to: b % (a + 1),
            cid: ConnectionId::new(&s.fixed[..1 + (c % 20) as usize]).unwrap(),
            reset_token: s.fixed[4..].try_into().unwrap(),
        }),
        15 => Frame::RetireConnectionId { seq: a },
        16 => Frame::PathChallenge(s.fixed[..8].try_into().unwrap()),
        17 => Frame::PathResponse(s.fixed[8..16].try_into().unwrap()),
        18 => Frame::Close(Close {
            error_code: a,
            frame_type: s.flag.then_some(b),
            reason: &s.bytes,
        }),
        19 => Frame::HandshakeDone,
        20 => Frame::Datagram { data: &s.bytes },
        21 => Frame::AckFrequency(AckFrequency {
            seq: a,
            ack_eliciting_threshold: b,
            request_max_ack_delay: c % ((1 << 14) * 1000),
            reordering_threshold: d,
        }),
        _ => Frame::ImmediateAck,
    }
}

/// Re-encoding a decoded frame gives bytes that decode to the same frame.
fn assert_reencodes(frame: &Frame<'_>) -> Result<(), TestCaseError> {
    let mut out = Vec::new();
    frame.encode(&mut out);
    prop_assert_eq!(out.len(), frame.encoded_len());
    let mut it = Iter::new(&out, PacketKind::OneRtt);
    prop_assert_eq!(it.next(), Some(Ok(frame.clone())));
    prop_assert_eq!(it.next(), None);
    Ok(())
}

/// Decodes `bytes` as each packet kind; checks every decoded frame re-encodes
/// and that errors carry the codes this codec uses.
fn decode_everywhere(bytes: &[u8]) -> Result<(), TestCaseError> {
    for kind in KINDS {
        let mut consumed_err = false;
        for item in Iter::new(bytes, kind) {
            prop_assert!(!consumed_err, "frames after an error");
            match item {
                Ok(frame) => assert_reencodes(&frame)?,
                Err(e) => {
                    prop_assert!(
                        e.code == TransportErrorCode::FRAME_ENCODING_ERROR
                            || e.code == TransportErrorCode::PROTOCOL_VIOLATION
                    );
                    consumed_err = true;
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn every_variant_round_trips(spec in spec()) {
        let frame = build(&spec);
        let mut out = Vec::new();
        frame.encode(&mut out);
        prop_assert_eq!(out.len(), frame.encoded_len());
        let decoded: Vec<_> = Iter::new(&out, PacketKind::OneRtt).collect();
        prop_assert_eq!(decoded, vec![Ok(frame.clone())]);
        // `ty()` is what went on the wire.
        let mut ty = Vec::new();
        put_varint(&mut ty, frame.ty().0);
        if !matches!(frame, Frame::Padding { .. }) {
            prop_assert!(out.starts_with(&ty));
        }
    }

    #[test]
    fn packets_of_frames_round_trip(specs in vec(spec(), 1..8)) {
        let frames: Vec<_> = specs.iter().map(build).collect();
        let mut out = Vec::new();
        for f in &frames {
            f.encode(&mut out);
        }
        prop_assert_eq!(out.len(), frames.iter().map(Frame::encoded_len).sum::<usize>());
        // Adjacent PADDING frames merge, so compare with runs merged.
        let mut expected: Vec<Frame<'_>> = Vec::new();
        for f in frames {
            match (expected.last_mut(), &f) {
                (Some(Frame::Padding { len }), Frame::Padding { len: more }) => *len += more,
                _ => expected.push(f),
            }
        }
        let decoded: Result<Vec<_>, _> = Iter::new(&out, PacketKind::OneRtt).collect();
        prop_assert_eq!(decoded, Ok(expected));
    }

    #[test]
    fn truncated_frames_are_encoding_errors(spec in spec(), cut in any::<prop::sample::Index>()) {
        let frame = build(&spec);
        prop_assume!(!matches!(frame, Frame::Padding { .. }));
        let mut out = Vec::new();
        frame.encode(&mut out);
        prop_assume!(out.len() > 1);
        // Every prefix that is not the whole frame is incomplete.
        let cut = cut.index(out.len() - 1) + 1;
        let e = Iter::new(&out[..cut], PacketKind::OneRtt).find_map(Result::err);
        let e = e.expect("a truncated frame decoded");
        prop_assert_eq!(e.code, TransportErrorCode::FRAME_ENCODING_ERROR);
    }

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..256)) {
        decode_everywhere(&bytes)?;
    }

    #[test]
    fn mutated_frames_never_panic(
        specs in vec(spec(), 1..6),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut out = Vec::new();
        for s in &specs {
            build(s).encode(&mut out);
        }
        prop_assume!(!out.is_empty());
        for (at, byte) in flips {
            let i = at.index(out.len());
            out[i] = byte;
        }
        decode_everywhere(&out)?;
        decode_everywhere(&out[..cut.index(out.len())])?;
    }

    #[test]
    fn encode_ack_honours_limits(
        // Descending, disjoint ranges from (gap, length) steps below a largest.
        top in 0..MAX,
        steps in vec((0..300u64, 0..300u64), 1..200),
        delay in varint(),
        max_ranges in 0usize..250,
        max_len in 0usize..600,
        ecn in any::<bool>(),
    ) {
        let mut ranges = Vec::new();
        let mut end = top + 1;
        for (i, (gap, len)) in steps.into_iter().enumerate() {
            // Packets between ranges: at least one, except before the first.
            let skip = if i == 0 { 0 } else { gap + 1 };
            let Some(hi) = end.checked_sub(skip) else { break };
            let Some(lo) = hi.checked_sub(len + 1) else { break };
            ranges.push(lo..hi);
            end = lo;
            if lo == 0 {
                break;
            }
        }
        prop_assume!(!ranges.is_empty());
        let counts = EcnCounts { ect0: 1, ect1: 2, ce: 3 };
        let ecn = ecn.then_some(&counts);
        let mut out = Vec::new();
        let n = encode_ack(&mut out, ranges.iter().cloned(), delay, ecn, max_ranges, max_len);
        prop_assert_eq!(n, out.len());
        prop_assert!(n <= max_len);
        if n == 0 {
            // Nothing fits: either no ranges allowed or the one-range frame is too long.
            let mut one = Vec::new();
            let full = encode_ack(&mut one, ranges.iter().take(1).cloned(), delay, ecn, 1, usize::MAX);
            prop_assert!(max_ranges == 0 || full > max_len);
            return Ok(());
        }
        let frame = {
            let mut it = Iter::new(&out, PacketKind::OneRtt);
            let f = it.next();
            prop_assert!(it.next().is_none());
            f
        };
        let Some(Ok(Frame::Ack(ack))) = frame else {
            return Err(TestCaseError::fail(format!("not an ACK: {frame:?}")));
        };
        prop_assert_eq!(ack.ecn, ecn.copied());
        prop_assert_eq!(ack.delay, delay);
        let got: Vec<_> = ack.iter().map(|r| *r.start()..*r.end() + 1).collect();
        let written = got.len();
        prop_assert!(written >= 1 && written <= max_ranges);
        prop_assert_eq!(&got[..], &ranges[..written]);
        prop_assert_eq!(ack.smallest(), ranges[written - 1].start);
        if written < ranges.len() && written < max_ranges {
            // The next range did not fit in max_len.
            let mut more = Vec::new();
            let bigger = encode_ack(&mut more, ranges.iter().cloned(), delay, ecn, written + 1, usize::MAX);
            prop_assert!(bigger > max_len);
        }
    }
}

#[test]
fn encode_ack_many_ranges() {
    // 600 single-packet ranges with one-packet gaps, from 10_000 down.
    let ranges: Vec<_> = (0..600u64)
        .map(|i| 10_000 - 2 * i..10_001 - 2 * i)
        .collect();
    let mut out = Vec::new();
    let n = encode_ack(
        &mut out,
        ranges.iter().cloned(),
        0,
        None,
        usize::MAX,
        usize::MAX,
    );
    assert_eq!(n, out.len());
    let Some(Ok(Frame::Ack(ack))) = Iter::new(&out, PacketKind::OneRtt).next() else {
        panic!("not an ACK")
    };
    assert_eq!(ack.range_count, 599);
    let got: Vec<_> = ack.iter().map(|r| *r.start()..*r.end() + 1).collect();
    assert_eq!(got, ranges);

    // max_ranges keeps the highest ones.
    let mut out = Vec::new();
    encode_ack(&mut out, ranges.iter().cloned(), 0, None, 10, usize::MAX);
    let Some(Ok(Frame::Ack(ack))) = Iter::new(&out, PacketKind::OneRtt).next() else {
        panic!("not an ACK")
    };
    assert_eq!(ack.iter().count(), 10);
    assert_eq!(ack.smallest(), ranges[9].start);

    // The 2 KiB staging area caps the range fields.
    let ranges: Vec<_> = (0..2000u64)
        .map(|i| 100_000 - 2 * i..100_001 - 2 * i)
        .collect();
    let mut out = Vec::new();
    let n = encode_ack(
        &mut out,
        ranges.iter().cloned(),
        0,
        None,
        usize::MAX,
        usize::MAX,
    );
    assert!(n < 2048 + 32, "{n}");
    let Some(Ok(Frame::Ack(ack))) = Iter::new(&out, PacketKind::OneRtt).next() else {
        panic!("not an ACK")
    };
    assert_eq!(ack.range_count, 1024);
}

#[test]
fn encode_ack_nothing_fits() {
    let mut out = Vec::new();
    // Largest 100_000 takes 4 bytes: type + 4 + delay + count + first = 8 bytes.
    assert_eq!(
        encode_ack(&mut out, std::iter::once(99_990..100_001), 0, None, 4, 7),
        0
    );
    assert!(out.is_empty());
    assert_eq!(
        encode_ack(&mut out, std::iter::once(99_990..100_001), 0, None, 4, 8),
        8
    );
    out.clear();
    assert_eq!(encode_ack(&mut out, std::iter::empty(), 0, None, 4, 100), 0);
    assert_eq!(
        encode_ack(&mut out, std::iter::once(1..2), 0, None, 0, 100),
        0
    );
    assert!(out.is_empty());
    // The highest possible packet number.
    let n = encode_ack(&mut out, std::iter::once(MAX..MAX + 1), 0, None, 1, 100);
    assert_eq!(n, out.len());
    let Some(Ok(Frame::Ack(ack))) = Iter::new(&out, PacketKind::OneRtt).next() else {
        panic!("not an ACK")
    };
    assert_eq!(ack.iter().collect::<Vec<_>>(), [MAX..=MAX]);
}

#[test]
fn hand_built_inconsistent_ack_iterates_safely() {
    let ack = Ack {
        largest: 3,
        delay: 0,
        first_range: 9,
        ranges: &[0x40],
        range_count: 5,
        ecn: None,
    };
    assert_eq!(ack.iter().count(), 0);
    let ack = Ack {
        first_range: 0,
        ..ack
    };
    assert_eq!(ack.iter().collect::<Vec<_>>(), [3..=3]);
    assert_eq!(ack.smallest(), 3);
}

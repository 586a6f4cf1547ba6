//! Property tests: every frame variant round-trips, and arbitrary or mutated
//! input never panics.

use proptest::collection::vec;
use proptest::prelude::*;

use super::*;

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

}

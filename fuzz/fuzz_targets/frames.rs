//! Decode arbitrary bytes as the payload of each packet kind. Every frame that
//! decodes must re-encode to exactly `encoded_len` bytes that decode to the same
//! frame; ACK ranges must descend and re-encode through `encode_ack`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use quark_proto::frame::{Ack, Frame, Iter, encode_ack};
use quark_proto::{PacketKind, TransportErrorCode};

const KINDS: [PacketKind; 4] = [
    PacketKind::Initial,
    PacketKind::Handshake,
    PacketKind::ZeroRtt,
    PacketKind::OneRtt,
];

fuzz_target!(|data: &[u8]| {
    for kind in KINDS {
        let mut failed = false;
        for item in Iter::new(data, kind) {
            assert!(!failed, "a frame after an error");
            match item {
                Ok(frame) => check_frame(&frame),
                Err(e) => {
                    assert!(
                        e.code == TransportErrorCode::FRAME_ENCODING_ERROR
                            || e.code == TransportErrorCode::PROTOCOL_VIOLATION,
                        "{e:?}"
                    );
                    failed = true;
                }
            }
        }
    }
});

fn check_frame(frame: &Frame<'_>) {
    let mut buf = Vec::with_capacity(frame.encoded_len());
    frame.encode(&mut buf);
    assert_eq!(buf.len(), frame.encoded_len(), "{frame:?}");
    let mut it = Iter::new(&buf, PacketKind::OneRtt);
    assert_eq!(it.next(), Some(Ok(frame.clone())));
    assert!(it.next().is_none());
    if let Frame::Ack(ack) = frame {
        check_ack(ack);
    }
}

fn check_ack(ack: &Ack<'_>) {
    let ranges: Vec<_> = ack.iter().map(|r| *r.start()..*r.end() + 1).collect();
    assert_eq!(ranges.len() as u64, ack.range_count + 1);
    assert_eq!(ranges[0].end - 1, ack.largest);
    for pair in ranges.windows(2) {
        // Descending, with at least one packet missing in between.
        assert!(pair[1].end < pair[0].start, "{pair:?}");
    }
    assert_eq!(ack.smallest(), ranges.last().unwrap().start);

    let mut buf = Vec::new();
    let n = encode_ack(
        &mut buf,
        ranges.iter().cloned(),
        ack.delay,
        ack.ecn.as_ref(),
        usize::MAX,
        usize::MAX,
    );
    assert_eq!(n, buf.len());
    let Some(Ok(Frame::Ack(again))) = Iter::new(&buf, PacketKind::OneRtt).next() else {
        panic!("encode_ack output is not an ACK");
    };
    // encode_ack may stop early (it stages at most 2 KiB of ranges).
    let again: Vec<_> = again.iter().map(|r| *r.start()..*r.end() + 1).collect();
    assert!(!again.is_empty() && ranges.starts_with(&again));
}

//! ACK frames: vectors, range validation, and `encode_ack`'s limits.

use proptest::collection::vec;
use proptest::prelude::*;

use super::*;

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

proptest! {
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
